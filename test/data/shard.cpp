// SPDX-License-Identifier: BSL-1.0
// Shards cover every sample exactly once; seeded shuffles are deterministic.
#include <dml/data/shard.hpp>
#include <dml/random.hpp>

#include "support/catch.hpp"

#include <algorithm>
#include <numeric>
#include <type_traits>
#include <vector>

// The data API's generator is the library's one (dml/random.hpp).
static_assert(std::is_same_v<dml::data::splitmix64, dml::splitmix64>);

TEST_CASE("shards cover every sample exactly once across members") {
  for (auto layout : {dml::data::shard_layout::strided, dml::data::shard_layout::contiguous}) {
    for (std::size_t n : {0u, 1u, 7u, 64u, 1000u}) {
      for (std::size_t members : {1u, 2u, 3u, 8u, 13u}) {
        std::vector<int> seen(n, 0);
        std::size_t smallest = n, largest = 0;
        for (std::size_t m = 0; m < members; ++m) {
          const dml::data::shard s{m, members, layout};
          const auto idx = s.indices(n);
          REQUIRE(idx.size() == s.size(n));
          smallest = std::min(smallest, idx.size());
          largest = std::max(largest, idx.size());
          for (auto i : idx) {
            REQUIRE(s.contains(i, n));
            ++seen[i];
          }
        }
        REQUIRE(std::all_of(seen.begin(), seen.end(), [](int k) { return k == 1; }));
        REQUIRE(largest - std::min(smallest, largest) <= 1);  // balanced
      }
    }
  }
}

TEST_CASE("a shard of a member that does not exist is a config_error") {
  REQUIRE_THROWS_AS((dml::data::shard{3, 3}.indices(10)), dml::config_error);
  REQUIRE_THROWS_AS((dml::data::shard{0, 0}.indices(10)), dml::config_error);
}

TEST_CASE("a seeded shuffle is a deterministic permutation") {
  const auto a = dml::data::permutation(1000, 42), b = dml::data::permutation(1000, 42);
  const auto c = dml::data::permutation(1000, 43);
  REQUIRE(a == b);
  REQUIRE(a != c);
  auto sorted = a;
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::size_t> identity(1000);
  std::iota(identity.begin(), identity.end(), std::size_t{0});
  REQUIRE(sorted == identity);
  REQUIRE(a != identity);
  // Fixed values: the shuffle must not depend on the standard library.
  REQUIRE(dml::data::permutation(8, 1) == std::vector<std::size_t>{4, 3, 2, 7, 5, 6, 0, 1});
  REQUIRE(dml::data::permutation(0, 1).empty());
  REQUIRE(dml::data::permutation(1, 1) == std::vector<std::size_t>{0});
}

TEST_CASE("shards among the survivors of a view cover every sample once") {
  const std::size_t n = 103;
  const std::vector<std::size_t> survivors{0, 1, 3, 4, 6};  // members 2 and 5 failed
  for (auto layout : {dml::data::shard_layout::strided, dml::data::shard_layout::contiguous}) {
    std::vector<int> uses(n, 0);
    for (std::size_t m : survivors) {
      const auto s = dml::data::shard::among(survivors, m, layout);
      CHECK(s.members == survivors.size());
      for (std::size_t i : s.indices(n)) ++uses[i];
    }
    for (std::size_t i = 0; i < n; ++i) REQUIRE(uses[i] == 1);
  }
  // Positions, not ids: member 3 is the third survivor.
  CHECK(dml::data::shard::among(survivors, 3).member == 2);
}

TEST_CASE("a shard among members that do not include the caller is a config_error") {
  const std::vector<std::size_t> live{0, 2, 3};
  CHECK_THROWS_AS(dml::data::shard::among(live, 1), dml::config_error);
  CHECK_THROWS_AS(dml::data::shard::among(std::vector<std::size_t>{}, 0), dml::config_error);
  CHECK_THROWS_AS(dml::data::shard::among(std::vector<std::size_t>{0, 3, 2}, 0), dml::config_error);
}

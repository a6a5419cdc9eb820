// SPDX-License-Identifier: BSL-1.0
// The table's internal row index (detail::flat_index) against
// std::unordered_map: random inserts, lookups and erases over keys chosen to
// collide (sequential rows, rows a power of two apart, a few hot keys), the
// backward-shift erase, clear() with and without giving the array back, and
// for_each visiting each entry once.
#include <dml/random.hpp>
#include <dml/table/detail/flat_index.hpp>

#include "support/catch.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <unordered_map>

namespace flat_index_test {

using dml::detail::flat_index;

// Every entry of `want` is found with its value, the sizes agree, and
// for_each visits exactly the entries of `want`, each once.
void same(const flat_index& got, const std::unordered_map<std::uint64_t, std::uint32_t>& want) {
  REQUIRE(got.size() == want.size());
  REQUIRE(got.empty() == want.empty());
  for (const auto& kv : want) {
    const std::uint32_t* at = got.find(kv.first);
    REQUIRE(at != nullptr);
    REQUIRE(*at == kv.second);
  }
  std::map<std::uint64_t, std::uint32_t> seen;
  got.for_each([&](std::uint64_t k, std::uint32_t v) { REQUIRE(seen.emplace(k, v).second); });
  REQUIRE(seen.size() == want.size());
  for (const auto& kv : seen) REQUIRE(want.at(kv.first) == kv.second);
}

std::uint64_t pick(dml::splitmix64& g, int shape) {
  switch (shape) {
    case 0:
      return g() % 512;  // dense, sequential rows
    case 1:
      return (g() % 64) << (g() % 20);  // powers of two apart
    case 2:
      return g() % 8;  // a few hot keys
    default:
      return g() % 0xffff'fff0u;  // anywhere a row can be
  }
}

}  // namespace flat_index_test

TEST_CASE("flat_index: random inserts, lookups and erases agree with std::unordered_map",
          "[table][flat_index]") {
  using namespace flat_index_test;
  for (int shape = 0; shape < 4; ++shape) {
    dml::splitmix64 g(static_cast<std::uint64_t>(shape) + 1);
    flat_index got;
    std::unordered_map<std::uint64_t, std::uint32_t> want;
    for (int op = 0; op < 20000; ++op) {
      const std::uint64_t key = pick(g, shape);
      switch (g() % 4) {
        case 0:
        case 1: {
          const auto value = static_cast<std::uint32_t>(g());
          const auto [stored, fresh] = got.try_emplace(key, value);
          const auto [it, fresh_want] = want.try_emplace(key, value);
          REQUIRE(fresh == fresh_want);
          REQUIRE(stored == it->second);
          break;
        }
        case 2:
          REQUIRE(got.erase(key) == (want.erase(key) == 1));
          break;
        default: {
          const std::uint32_t* at = got.find(key);
          const auto it = want.find(key);
          REQUIRE((at != nullptr) == (it != want.end()));
          if (at) REQUIRE(*at == it->second);
        }
      }
      if (op % 997 == 0) same(got, want);
    }
    same(got, want);
    // Erase everything in a random order: every erase keeps the rest findable.
    while (!want.empty()) {
      const std::uint64_t key = want.begin()->first;
      REQUIRE(got.erase(key));
      want.erase(key);
      if (want.size() % 61 == 0) same(got, want);
    }
    REQUIRE_FALSE(got.erase(pick(g, shape)));
    REQUIRE(got.find(pick(g, shape)) == nullptr);
  }
}

TEST_CASE("flat_index: clear() empties, and a map grown large starts small again", "[table][flat_index]") {
  using namespace flat_index_test;
  flat_index f;
  REQUIRE(f.find(7) == nullptr);
  REQUIRE_FALSE(f.erase(7));
  for (std::uint32_t i = 0; i < 10000; ++i) REQUIRE(f.try_emplace(i * 3, i).second);
  REQUIRE(f.size() == 10000);
  REQUIRE_FALSE(f.try_emplace(3, 99).second);
  REQUIRE(*f.find(3) == 1);
  f.clear();  // held many: the array is kept
  REQUIRE(f.empty());
  for (std::uint32_t i = 0; i < 10000; i += 7) REQUIRE(f.find(i * 3) == nullptr);
  REQUIRE(f.try_emplace(5, 1).second);
  f.clear();  // held one in a large array: given back
  REQUIRE(f.empty());
  REQUIRE(f.find(5) == nullptr);
  std::unordered_map<std::uint64_t, std::uint32_t> want;
  for (std::uint32_t i = 0; i < 100; ++i) {
    f.try_emplace(i << 12, i);
    want.emplace(std::uint64_t{i} << 12, i);
  }
  same(f, want);
  REQUIRE_THROWS_AS(f.try_emplace(flat_index::no_key, 0), std::logic_error);
}

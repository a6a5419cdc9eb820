// SPDX-License-Identifier: BSL-1.0
// Every built-in generator at every test size: the graph is well formed,
// strongly connected (except the one-way chain), has the promised degrees,
// and is the same every time it is built.
#include "check.hpp"
#include "support/catch.hpp"

#include <dml/topology.hpp>

#include <cmath>
#include <cstddef>
#include <functional>
#include <numeric>
#include <vector>

namespace topo = dml::topology;
using dml_test::ceil_log2;
using dml_test::check_generator;
using dml_test::degree_fn;
using dml_test::ids;
using dml_test::sizes;

namespace {

std::size_t floor_sqrt(std::size_t n) {
  auto r = static_cast<std::size_t>(std::sqrt(static_cast<double>(n)));
  while (r * r > n) --r;
  while ((r + 1) * (r + 1) <= n) ++r;
  return r;
}

}  // namespace

TEST_CASE("all: complete graph at every size", "[topology]") {
  const degree_fn d = [](std::size_t, std::size_t n) { return n - 1; };
  check_generator(topo::all{}, d, d);
  const auto g = topo::build(topo::all{}, 7);
  CHECK(ids(g.out(3)) == std::vector<dml::member_id>{0, 1, 2, 4, 5, 6});
  CHECK(topo::is_regular(g));
  CHECK(g.edge_count() == 42);
}

TEST_CASE("halton: ceil(log2 n) out- and in-neighbours at every size", "[topology]") {
  const degree_fn d = [](std::size_t, std::size_t n) { return ceil_log2(n); };
  check_generator(topo::halton{}, d, d);
  for (const std::size_t n : sizes) CHECK(topo::is_regular(topo::build(topo::halton{}, n)));
}

TEST_CASE("halton: explicit fan-out k at every size above k", "[topology]") {
  for (const std::size_t k : {1u, 2u, 3u, 5u}) {
    const topo::halton gen{k};
    for (const std::size_t n : sizes) {
      if (n <= k) continue;
      INFO("k = " << k << ", n = " << n);
      const auto g = topo::build(gen, n);
      dml_test::check_well_formed(g);
      CHECK(topo::is_strongly_connected(g));
      CHECK(topo::is_regular(g));
      CHECK(g.out(0).size() == k);
    }
  }
}

TEST_CASE("halton: offsets follow the base-2 van der Corput sequence", "[topology]") {
  // n = 25: 25/2, 25/4, 75/4, 25/8, 125/8 floored = 12, 6, 18, 3, 15 (gcd 1, no repair).
  CHECK(topo::halton{}.offsets(25) == std::vector<std::size_t>{12, 6, 18, 3, 15});
  CHECK(ids(topo::build(topo::halton{}, 25).out(0)) == std::vector<dml::member_id>{3, 6, 12, 15, 18});
  CHECK(ids(topo::build(topo::halton{}, 25).out(20)) == std::vector<dml::member_id>{1, 7, 10, 13, 23});
  // n = 5: 5/2 -> 2, 5/4 -> 1, 15/4 -> 3.
  CHECK(topo::halton{}.offsets(5) == std::vector<std::size_t>{2, 1, 3});
  // n = 6, k = 5: 3, 1, 4, then 6/8 -> 0 is skipped, 30/8 -> 3 repeats, 18/8 -> 2, 42/8 -> 5.
  CHECK(topo::halton{5}.offsets(6) == std::vector<std::size_t>{3, 1, 4, 2, 5});
  // n = 100: 50, 25, 75, 12, 62, 37, 87.
  CHECK(topo::halton{}.offsets(100) == std::vector<std::size_t>{50, 25, 75, 12, 62, 37, 87});
}

TEST_CASE("halton: the naive sequence is disconnected at powers of two, the repair connects it",
          "[topology]") {
  // For n = 2^m >= 8 the first m fractions have denominators <= 2m < n, so
  // every offset n j / 2^r is even and member 0 reaches only even members.
  for (std::size_t n = 8; n <= 256; n *= 2) {
    INFO("n = " << n);
    const auto naive = topo::halton{}.naive_offsets(n);
    const auto repaired = topo::halton{}.offsets(n);
    REQUIRE(naive.size() == ceil_log2(n));
    std::size_t g = n;
    for (const auto o : naive) g = std::gcd(g, o);
    CHECK(g > 1);
    for (const auto o : naive) CHECK(o % 2 == 0);
    const auto naive_graph = dml_test::circulant_graph(n, naive);
    CHECK_FALSE(topo::is_strongly_connected(naive_graph));
    CHECK(topo::find_unreachable_pair(naive_graph) == std::pair<dml::member_id, dml::member_id>{0, 1});
    CHECK(topo::diameter(naive_graph) == -1);
    // The rule: the last offset becomes 1, the others stay.
    REQUIRE(repaired.size() == naive.size());
    CHECK(std::equal(naive.begin(), naive.end() - 1, repaired.begin()));
    CHECK(repaired.back() == 1);
    CHECK(topo::is_strongly_connected(topo::build(topo::halton{}, n)));
  }
  CHECK(topo::halton{}.naive_offsets(8) == std::vector<std::size_t>{4, 2, 6});
  CHECK(topo::halton{}.offsets(8) == std::vector<std::size_t>{4, 2, 1});
  // Not only powers of two: n = 24 gives 12, 6, 18, 3, 15, all multiples of 3.
  CHECK(topo::halton{}.naive_offsets(24) == std::vector<std::size_t>{12, 6, 18, 3, 15});
  CHECK_FALSE(topo::is_strongly_connected(dml_test::circulant_graph(24, topo::halton{}.naive_offsets(24))));
  CHECK(topo::halton{}.offsets(24) == std::vector<std::size_t>{12, 6, 18, 3, 1});
  // Where the naive offsets are fine (n = 4: 2, 1) nothing changes.
  CHECK(topo::halton{}.offsets(4) == topo::halton{}.naive_offsets(4));
  CHECK(topo::halton{}.offsets(100) == topo::halton{}.naive_offsets(100));
  // k = 1 at even n: n/2 alone is a perfect matching, so it becomes a ring.
  CHECK(topo::halton{1}.naive_offsets(10) == std::vector<std::size_t>{5});
  CHECK(topo::halton{1}.offsets(10) == std::vector<std::size_t>{1});
}

TEST_CASE("halton: strongly connected for every n up to 300 and every small k", "[topology]") {
  for (std::size_t n = 1; n <= 300; ++n) {
    INFO("n = " << n);
    const auto g = topo::build(topo::halton{}, n);
    REQUIRE(topo::is_strongly_connected(g));
    REQUIRE(g.out(0).size() == ceil_log2(n));
  }
  for (std::size_t n = 2; n <= 70; ++n) {
    for (std::size_t k = 1; k < n && k <= 9; ++k) {
      INFO("n = " << n << ", k = " << k);
      const auto g = topo::build(topo::halton{k}, n);
      REQUIRE(topo::is_strongly_connected(g));
      REQUIRE(topo::is_regular(g));
      REQUIRE(g.out(0).size() == k);
    }
  }
}

TEST_CASE("root_expander: i -> i+1 and i -> i+floor(sqrt n)", "[topology]") {
  const degree_fn d = [](std::size_t, std::size_t n) -> std::size_t {
    if (n == 1) return 0;
    return floor_sqrt(n) == 1 ? 1 : 2;  // n = 2, 3: both offsets are 1
  };
  check_generator(topo::root_expander{}, d, d);
  for (const std::size_t n : sizes) {
    const auto g = topo::build(topo::root_expander{}, n);
    CHECK(topo::is_regular(g));
    CHECK(g.out(0).size() <= 2);
    for (std::size_t i = 0; i < n && n > 1; ++i) {
      INFO("n = " << n << ", member " << i);
      CHECK(g.has_edge(i, (i + 1) % n));
      CHECK(g.has_edge(i, (i + floor_sqrt(n)) % n));
    }
  }
  CHECK(ids(topo::build(topo::root_expander{}, 25).out(22)) == std::vector<dml::member_id>{2, 23});
  CHECK(ids(topo::build(topo::root_expander{}, 7).out(6)) == std::vector<dml::member_id>{0, 1});
  CHECK(ids(topo::build(topo::root_expander{}, 256).out(0)) == std::vector<dml::member_id>{1, 16});
}

TEST_CASE("ring: one-way by default, both ways on request", "[topology]") {
  const degree_fn one = [](std::size_t, std::size_t n) -> std::size_t { return n == 1 ? 0 : 1; };
  check_generator(topo::ring{}, one, one);
  const degree_fn two = [](std::size_t, std::size_t n) -> std::size_t { return n == 1 ? 0 : n == 2 ? 1 : 2; };
  check_generator(topo::ring{topo::ring::bidirectional}, two, two);
  CHECK(topo::ring{}.name() == "ring");
  CHECK(topo::ring{topo::ring::bidirectional}.name() == "bidirectional_ring");
  for (const std::size_t n : sizes) {
    const auto g = topo::build(topo::ring{}, n);
    for (std::size_t i = 0; i < n && n > 1; ++i)
      CHECK(ids(g.out(i)) == std::vector<dml::member_id>{(i + 1) % n});
  }
  CHECK(ids(topo::build(topo::ring{topo::ring::bidirectional}, 7).out(0)) ==
        std::vector<dml::member_id>{1, 6});
}

TEST_CASE("chain: bidirectional path by default; the one-way path is not strongly connected", "[topology]") {
  const degree_fn d = [](std::size_t i, std::size_t n) -> std::size_t {
    if (n == 1) return 0;
    return (i == 0 || i == n - 1) ? 1 : 2;
  };
  check_generator(topo::chain{}, d, d);
  CHECK(topo::chain{}.way() == topo::chain::bidirectional);
  const auto g = topo::build(topo::chain{}, 7);
  CHECK(ids(g.out(0)) == std::vector<dml::member_id>{1});
  CHECK(ids(g.out(3)) == std::vector<dml::member_id>{2, 4});
  CHECK(ids(g.out(6)) == std::vector<dml::member_id>{5});
  CHECK_FALSE(topo::is_regular(g));
  CHECK(topo::is_regular(topo::build(topo::chain{}, 2)));

  const degree_fn out1 = [](std::size_t i, std::size_t n) -> std::size_t { return i + 1 < n ? 1 : 0; };
  const degree_fn in1 = [](std::size_t i, std::size_t) -> std::size_t { return i > 0 ? 1 : 0; };
  check_generator(topo::chain{topo::chain::one_way}, out1, in1, /*connected=*/false);
}

TEST_CASE("star: member 0 exchanges with everyone", "[topology]") {
  const degree_fn d = [](std::size_t i, std::size_t n) -> std::size_t { return i == 0 ? n - 1 : 1; };
  check_generator(topo::star{}, d, d);
  const auto g = topo::build(topo::star{}, 5);
  CHECK(ids(g.out(0)) == std::vector<dml::member_id>{1, 2, 3, 4});
  CHECK(ids(g.in(0)) == std::vector<dml::member_id>{1, 2, 3, 4});
  CHECK(ids(g.out(3)) == std::vector<dml::member_id>{0});
  CHECK_FALSE(topo::is_regular(g));
  CHECK(topo::is_regular(topo::build(topo::star{}, 2)));
}

TEST_CASE("star: a chosen hub", "[topology]") {
  const auto g = topo::build(topo::star{2}, 5);
  CHECK(ids(g.out(2)) == std::vector<dml::member_id>{0, 1, 3, 4});
  CHECK(ids(g.in(2)) == std::vector<dml::member_id>{0, 1, 3, 4});
  CHECK(ids(g.out(0)) == std::vector<dml::member_id>{2});
  CHECK(ids(g.out(4)) == std::vector<dml::member_id>{2});
  CHECK(topo::build(topo::star{4}, 5) != topo::build(topo::star{}, 5));
  CHECK_THROWS_WITH(topo::build(topo::star{5}, 5),
                    dml_test::contains("hub 5 is not a member of a group of 5 members"));
  // Over survivors the hub stays while it survives, else the smallest takes over.
  const std::vector<dml::member_id> with_hub{1, 3, 4, 6}, without_hub{1, 4, 6};
  CHECK(ids(topo::build(topo::star{3}, with_hub).out(3)) == std::vector<dml::member_id>{1, 4, 6});
  CHECK(ids(topo::build(topo::star{3}, with_hub).out(6)) == std::vector<dml::member_id>{3});
  CHECK(ids(topo::build(topo::star{3}, without_hub).out(1)) == std::vector<dml::member_id>{4, 6});
  CHECK(ids(topo::build(topo::star{}, without_hub).out(1)) == std::vector<dml::member_id>{4, 6});
}

TEST_CASE("exponential: i -> i + 2^k for every 2^k < n", "[topology]") {
  const degree_fn d = [](std::size_t, std::size_t n) { return ceil_log2(n); };
  check_generator(topo::exponential{}, d, d);
  CHECK(ids(topo::build(topo::exponential{}, 25).out(0)) == std::vector<dml::member_id>{1, 2, 4, 8, 16});
  CHECK(ids(topo::build(topo::exponential{}, 25).out(20)) == std::vector<dml::member_id>{3, 11, 21, 22, 24});
  CHECK(ids(topo::build(topo::exponential{}, 8).out(7)) == std::vector<dml::member_id>{0, 1, 3});
  for (const std::size_t n : sizes) CHECK(topo::is_regular(topo::build(topo::exponential{}, n)));
}

TEST_CASE("edges: builds exactly the user's graph", "[topology]") {
  const topo::edges gen{4, {{0, 1}, {1, 2}, {2, 3}, {3, 0}, {0, 2}}};
  const auto g = topo::build(gen, 4);
  dml_test::check_well_formed(g);
  CHECK(g.edge_count() == 5);
  CHECK(ids(g.out(0)) == std::vector<dml::member_id>{1, 2});
  CHECK(ids(g.in(2)) == std::vector<dml::member_id>{0, 1});
  CHECK(topo::is_strongly_connected(g));
  CHECK_FALSE(topo::is_regular(g));
  CHECK(gen.member_count() == 4);
  CHECK(gen.list().size() == 5);
  const auto one = topo::build(topo::edges{1, {}}, 1);
  CHECK(one.size() == 1);
  CHECK(one.edge_count() == 0);
}

TEST_CASE("every generator: one member means no edges", "[topology]") {
  auto check = [](const auto& gen) {
    INFO(gen.name());
    const auto g = topo::build(gen, 1);
    CHECK(g.size() == 1);
    CHECK(g.edge_count() == 0);
    CHECK(g.out(0).empty());
    CHECK(g.in(0).empty());
    CHECK(topo::is_strongly_connected(g));
    CHECK(topo::is_regular(g));
    CHECK(topo::diameter(g) == 0);
  };
  check(topo::all{});
  check(topo::halton{});
  check(topo::root_expander{});
  check(topo::ring{});
  check(topo::ring{topo::ring::bidirectional});
  check(topo::chain{});
  check(topo::star{});
  check(topo::exponential{});
}

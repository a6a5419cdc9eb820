// SPDX-License-Identifier: BSL-1.0
// one_peer_exponential: every round's graph is one-peer with row-stochastic
// weights, powers of two follow i -> i + 2^(t mod log2 n), and mixing R(n)
// rounds from any start gives every member the mean, for n = 1..40 and
// beyond.
#include "check.hpp"
#include "support/catch.hpp"

#include <dml/topology.hpp>
#include <dml/topology/one_peer_exponential.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace topo = dml::topology;
using dml_test::check_generator;
using dml_test::config_error_message;
using dml_test::contains;
using dml_test::degree_fn;
using dml_test::ids;

namespace {

std::size_t floor_log2(std::size_t n) {
  std::size_t p = 0;
  while ((std::size_t{2} << p) <= n) ++p;
  return p;
}

// One round of x <- W x with the round's weighted graph.
std::vector<double> mix(const topo::graph& g, const std::vector<double>& x) {
  std::vector<double> y(x.size());
  for (const auto i : g.members()) {
    double v = g.self_weight(i) * x[i];
    const auto in = g.in(i);
    const auto w = g.in_weights(i);
    for (std::size_t e = 0; e < in.size(); ++e) v += w[e] * x[in[e]];
    y[i] = v;
  }
  return y;
}

// Starting values with no pattern: a linear congruential sequence in [-50, 50).
std::vector<double> start(std::size_t n, std::uint64_t seed) {
  std::vector<double> x(n);
  for (auto& v : x) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    v = static_cast<double>(seed >> 11) / 9007199254740992.0 * 100.0 - 50.0;
  }
  return x;
}

}  // namespace

TEST_CASE("one_peer_exponential: R(n) is log2 n for powers of two, floor(log2 n) + 2 otherwise",
          "[topology]") {
  const topo::one_peer_exponential g;
  CHECK(g.exact_after_rounds(1) == 0);
  CHECK(g.exact_after_rounds(2) == 1);
  CHECK(g.exact_after_rounds(3) == 3);
  CHECK(g.exact_after_rounds(4) == 2);
  CHECK(g.exact_after_rounds(5) == 4);
  CHECK(g.exact_after_rounds(7) == 4);
  CHECK(g.exact_after_rounds(8) == 3);
  CHECK(g.exact_after_rounds(25) == 6);
  CHECK(g.exact_after_rounds(40) == 7);
  CHECK(g.exact_after_rounds(1024) == 10);
  CHECK(g.period(1) == 1);
  CHECK(g.period(25) == 6);
  CHECK(contains(config_error_message([&] { (void)g.exact_after_rounds(0); }), "needs at least one member"));
  CHECK(contains(config_error_message([&] { (void)topo::build(g, 0); }), "needs at least one member"));
}

TEST_CASE("one_peer_exponential: every round sends to at most one peer, with row-stochastic weights",
          "[topology]") {
  const topo::one_peer_exponential gen;
  for (std::size_t n = 1; n <= 40; ++n) {
    for (std::uint64_t t = 0; t < 2 * gen.period(n); ++t) {
      INFO("n = " << n << ", round " << t);
      const auto g = topo::build_round(gen, n, t);
      dml_test::check_well_formed(g);
      REQUIRE(g.has_weights());
      for (const auto i : g.members()) {
        CHECK(g.out(i).size() <= 1);
        CHECK(g.in(i).size() <= 1);
        double total = g.self_weight(i);
        for (const double w : g.in_weights(i)) total += w;
        CHECK(std::abs(total - 1.0) < 1e-15);
        // Every edge of the round is an edge of the union graph.
        for (const auto j : g.out(i)) CHECK(topo::build(gen, n).has_edge(i, j));
      }
      // The schedule repeats with the period.
      CHECK(topo::build_round(gen, n, t + gen.period(n)) == g);
    }
  }
}

TEST_CASE("one_peer_exponential: powers of two send i -> i + 2^(t mod log2 n), weights 1/2", "[topology]") {
  const topo::one_peer_exponential gen;
  for (std::size_t n = 2; n <= 64; n *= 2) {
    const std::size_t p = floor_log2(n);
    for (std::uint64_t t = 0; t < 2 * p; ++t) {
      INFO("n = " << n << ", round " << t);
      const auto g = topo::build_round(gen, n, t);
      const std::size_t step = std::size_t{1} << (t % p);
      for (std::size_t i = 0; i < n; ++i) {
        CHECK(ids(g.out(i)) == std::vector<dml::member_id>{(i + step) % n});
        CHECK(g.self_weight(i) == 0.5);
        CHECK(g.weight((i + n - step) % n, i) == 0.5);
      }
    }
    // The union over a period is the exponential graph.
    CHECK(topo::build(gen, n) == topo::build(topo::exponential{}, n));
  }
}

TEST_CASE("one_peer_exponential: n = 3 and n = 5 by hand", "[topology]") {
  const topo::one_peer_exponential gen;
  // n = 3: core {0, 1}, extra 2 pairs with 0. Fold 2 -> 0 (1/2, 1/2); then
  // 1 -> 0 and 0 -> 1 where 0 stands for 2 members and 1 for one: 0 keeps
  // 2/3 of its value, 1 takes 2/3 of 0's; unfold 0 -> 2, which copies.
  auto g = topo::build_round(gen, 3, 0);
  CHECK(ids(g.out(2)) == std::vector<dml::member_id>{0});
  CHECK(g.self_weight(0) == 0.5);
  CHECK(g.weight(2, 0) == 0.5);
  CHECK(g.in(1).empty());
  g = topo::build_round(gen, 3, 1);
  CHECK(std::abs(g.self_weight(0) - 2.0 / 3) < 1e-16);
  CHECK(std::abs(g.weight(1, 0) - 1.0 / 3) < 1e-16);
  CHECK(std::abs(g.self_weight(1) - 1.0 / 3) < 1e-16);
  CHECK(std::abs(g.weight(0, 1) - 2.0 / 3) < 1e-16);
  g = topo::build_round(gen, 3, 2);
  CHECK(g.self_weight(2) == 0.0);
  CHECK(g.weight(0, 2) == 1.0);
  // n = 5: core 0..3, extra 4 pairs with 0. Core round 2 (step 2): member 2
  // holds the window {1, 2} standing for 2 members, its sender 0 the window
  // {3, 0} standing for 1 + 2 = 3: weights 2/5 and 3/5.
  g = topo::build_round(gen, 5, 2);
  CHECK(ids(g.in(2)) == std::vector<dml::member_id>{0});
  CHECK(std::abs(g.self_weight(2) - 0.4) < 1e-16);
  CHECK(std::abs(g.weight(0, 2) - 0.6) < 1e-16);
}

TEST_CASE("one_peer_exponential: the generator laws over the union graph", "[topology]") {
  // Out-degree of the union: p (the core's exponential offsets) plus one for
  // a core member paired with an extra; an extra has one.
  const degree_fn d = [](std::size_t i, std::size_t n) -> std::size_t {
    const std::size_t p = floor_log2(n);
    const std::size_t core = std::size_t{1} << p;
    if (i >= core) return 1;
    return p + (i < n - core ? 1 : 0);
  };
  check_generator(topo::one_peer_exponential{}, d, d);
  // Regular exactly at the powers of two.
  for (const std::size_t n : dml_test::sizes)
    CHECK(topo::is_regular(topo::build(topo::one_peer_exponential{}, n)) == ((n & (n - 1)) == 0));
}

TEST_CASE("one_peer_exponential: R(n) rounds of weighted mixing give every member the mean", "[topology]") {
  const topo::one_peer_exponential gen;
  for (std::size_t n = 1; n <= 40; ++n) {
    for (const std::uint64_t seed : {1ULL, 2ULL, 3ULL}) {
      INFO("n = " << n << ", seed " << seed);
      auto x = start(n, seed);
      double mean = 0;
      for (const double v : x) mean += v;
      mean /= static_cast<double>(n);
      const std::size_t rounds = gen.exact_after_rounds(n);
      for (std::uint64_t t = 0; t < rounds; ++t) {
        if (n > 1 && t + 1 == rounds) {
          // One round short, somebody still differs: the count is not padded.
          bool all = true;
          for (const double v : x) all = all && std::abs(v - mean) <= 1e-12;
          CHECK_FALSE(all);
        }
        x = mix(topo::build_round(gen, n, t), x);
      }
      for (std::size_t i = 0; i < n; ++i) {
        INFO("member " << i);
        CHECK(std::abs(x[i] - mean) <= 1e-12);
      }
      // More rounds keep the mean: every round's matrix fixes the constant vector.
      for (std::uint64_t t = rounds; t < 3 * rounds; ++t) x = mix(topo::build_round(gen, n, t), x);
      for (const double v : x) CHECK(std::abs(v - mean) <= 1e-12);
    }
  }
  // Larger groups, one seed each.
  for (const std::size_t n : {63u, 64u, 65u, 100u, 127u, 255u, 257u, 1000u}) {
    INFO("n = " << n);
    auto x = start(n, 7);
    double mean = 0;
    for (const double v : x) mean += v;
    mean /= static_cast<double>(n);
    for (std::uint64_t t = 0; t < gen.exact_after_rounds(n); ++t) x = mix(topo::build_round(gen, n, t), x);
    for (const double v : x) CHECK(std::abs(v - mean) <= 1e-12);
  }
}

// SPDX-License-Identifier: BSL-1.0
// Mixing weights on edges: the graph keeps and checks them, generators
// attach them (over survivors too), the spectral gap uses the weighted
// matrix, and gather::average applies it: exactly for a weighted doubly
// stochastic matrix, and bit for bit as before without weights.
#include "check.hpp"
#include "support/catch.hpp"

#include <dml/dml.hpp>
#include <dml/topology/spectral.hpp>
#include <dml/vector/group.hpp>

#include <array>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

namespace topo = dml::topology;
using Catch::Matchers::WithinAbs;
using dml_test::config_error_message;
using dml_test::contains;
using list = std::vector<dml::member_id>;

namespace {

// The circulant W = [[1/2, 3/8, 1/8], [1/8, 1/2, 3/8], [3/8, 1/8, 1/2]] over
// three members: row i is what member i combines, W[i][j] its weight for
// member j. Rows and columns sum to 1 (doubly stochastic), every weight is
// dyadic, so double arithmetic applies it without rounding.
topo::edges three_mixer() {
  // Edge (from, to) carries W[to][from].
  return topo::edges{3,
                     {{1, 0}, {2, 0}, {2, 1}, {0, 1}, {0, 2}, {1, 2}},
                     {3.0 / 8, 1.0 / 8, 3.0 / 8, 1.0 / 8, 3.0 / 8, 1.0 / 8},
                     {0.5, 0.5, 0.5}};
}

constexpr std::array<std::array<double, 3>, 3> W3{
    {{0.5, 0.375, 0.125}, {0.125, 0.5, 0.375}, {0.375, 0.125, 0.5}}};

}  // namespace

TEST_CASE("weights: a graph keeps its mixing rows", "[topology]") {
  const auto g = topo::build(three_mixer(), 3);
  REQUIRE(g.has_weights());
  for (dml::member_id i = 0; i < 3; ++i) {
    CHECK(g.self_weight(i) == 0.5);
    const auto in = g.in(i);
    const auto w = g.in_weights(i);
    REQUIRE(w.size() == in.size());
    for (std::size_t e = 0; e < in.size(); ++e) CHECK(w[e] == W3[i][in[e]]);
    for (dml::member_id j = 0; j < 3; ++j)
      if (j != i) CHECK(g.weight(j, i) == W3[i][j]);
  }
  // Without weights: none stored, every weight reads 1, no edge reads 0.
  const auto plain = topo::build(topo::ring{}, 3);
  CHECK_FALSE(plain.has_weights());
  CHECK(plain.in_weights(0).empty());
  CHECK(plain.self_weight(0) == 1.0);
  CHECK(plain.weight(0, 1) == 1.0);
  CHECK(plain.weight(1, 0) == 0.0);
  // Weights are part of the value.
  CHECK_FALSE(g == topo::build(topo::all{}, 3));
  CHECK(g == topo::build(three_mixer(), 3));
  CHECK(g.with_weights({}) == topo::build(topo::all{}, 3));
}

TEST_CASE("weights: bad mixing rows are config errors naming the edge", "[topology]") {
  const auto ring = topo::build(topo::ring{}, 3);  // 0 -> 1 -> 2 -> 0
  using row = topo::mixing_row;
  CHECK(contains(config_error_message([&] {
                   (void)ring.with_weights({row{}, row{}});
                 }),
                 "2 mixing rows for 3 members"));
  CHECK(contains(config_error_message([&] {
                   (void)ring.with_weights({row{1, {{2, 1}}}, row{1, {{2, 1}}}, row{1, {{1, 1}}}});
                 }),
                 "member 1's mixing row gives a weight to 2, which does not send to it"));
  CHECK(contains(config_error_message([&] {
                   (void)ring.with_weights({row{1, {{2, 1}, {2, 1}}}, row{1, {{0, 1}}}, row{1, {{1, 1}}}});
                 }),
                 "weighs edge 2 -> 0 twice"));
  CHECK(contains(config_error_message([&] {
                   (void)ring.with_weights({row{1, {{2, 1}}}, row{1, {}}, row{1, {{1, 1}}}});
                 }),
                 "member 1's mixing row has no weight for edge 0 -> 1"));
  CHECK(contains(config_error_message([&] {
                   (void)ring.with_weights({row{1, {{2, -0.5}}}, row{1, {{0, 1}}}, row{1, {{1, 1}}}});
                 }),
                 "the weight of edge 2 -> 0 is -0.5; an edge weight must be finite and > 0"));
  CHECK(contains(config_error_message([&] {
                   (void)ring.with_weights({row{-1, {{2, 1}}}, row{1, {{0, 1}}}, row{1, {{1, 1}}}});
                 }),
                 "member 0's self weight is -1"));
  CHECK(contains(config_error_message([&] {
                   (void)ring.with_weights({row{NAN, {{2, 1}}}, row{1, {{0, 1}}}, row{1, {{1, 1}}}});
                 }),
                 "must be finite"));
  const topo::graph lonely(std::vector<std::vector<dml::member_id>>{{}});
  CHECK(contains(config_error_message([&] {
                   (void)lonely.with_weights({row{0, {}}});
                 }),
                 "self weight 0 and no in-neighbours"));
  // The same checks when a weighted user graph is made.
  CHECK(contains(config_error_message([] {
                   topo::edges(2, {{0, 1}, {1, 0}}, {1.0}, {1, 1});
                 }),
                 "1 weights for 2 edges"));
  CHECK(contains(config_error_message([] {
                   topo::edges(2, {{0, 1}, {1, 0}}, {1, 1}, {1});
                 }),
                 "1 self weights for 2 members"));
  CHECK(contains(config_error_message([] {
                   topo::edges(2, {{0, 1}, {1, 0}}, {1, 0}, {1, 1});
                 }),
                 "edge (1, 0) has weight 0"));
  CHECK(contains(config_error_message([] {
                   topo::edges(2, {{0, 1}}, {1}, {0, 1});
                 }),
                 "member 0 has self weight 0 and no in-edges"));
}

TEST_CASE("weights: survivors keep the weights of the edges that survive", "[topology]") {
  // Weighted 4-cycle both ways: self 1/2, each neighbour 1/4.
  const topo::edges cycle{4,
                          {{0, 1}, {1, 0}, {1, 2}, {2, 1}, {2, 3}, {3, 2}, {3, 0}, {0, 3}},
                          std::vector<double>(8, 0.25),
                          {0.5, 0.5, 0.5, 0.5}};
  const auto g = topo::build(cycle, list{0, 1, 2});  // 3 failed: 0 <-> 1 <-> 2 is left
  REQUIRE(g.has_weights());
  CHECK(g.weight(1, 0) == 0.25);
  CHECK(g.weight(3, 0) == 0.0);
  CHECK(g.in_weights(0).size() == 1);
  CHECK(g.self_weight(2) == 0.5);
  // Through topology::any, the same graph.
  CHECK(topo::build(topo::any(cycle), list{0, 1, 2}) == g);
  CHECK(topo::build(topo::any(cycle), 4) == topo::build(cycle, 4));
}

// Weighted spectral gap: P = D^-1 W with D the row sums of W.
TEST_CASE("weights: spectral gap of weighted graphs by hand", "[topology]") {
  // Two members, W = [[3/4, 1/4], [1/4, 3/4]]: eigenvalues 1 and 1/2, gap
  // 1/2 (the unweighted 2-cycle averages in one step: gap 1).
  const topo::edges lazy_pair{2, {{0, 1}, {1, 0}}, {0.25, 0.25}, {0.75, 0.75}};
  CHECK_THAT(topo::spectral_gap(topo::build(lazy_pair, 2)), WithinAbs(0.5, 1e-12));
  // Two-way 4-ring with self 1/2 and 1/4 per neighbour: P = (2I + S + S^T)/4,
  // eigenvalues (2 + 2 cos(pi k / 2)) / 4 = 1, 1/2, 0, 1/2: gap 1/2 (2/3
  // without weights).
  const topo::edges lazy_ring{4,
                              {{0, 1}, {1, 0}, {1, 2}, {2, 1}, {2, 3}, {3, 2}, {3, 0}, {0, 3}},
                              std::vector<double>(8, 0.25),
                              {0.5, 0.5, 0.5, 0.5}};
  CHECK_THAT(topo::spectral_gap(topo::build(lazy_ring, 4)), WithinAbs(0.5, 1e-12));
  // One-way 3-ring, self 2, sender 1 (rows sum to 3, so P = (2I + S)/3): P is
  // circulant with eigenvalue moduli |2 + w^k| / 3, w = e^(2 pi i / 3); for
  // k = 1, |2 - 1/2 + i sqrt(3)/2| = sqrt(3), so gap = 1 - 1/sqrt(3).
  const topo::edges heavy_self{3, {{0, 1}, {1, 2}, {2, 0}}, {1, 1, 1}, {2, 2, 2}};
  CHECK_THAT(topo::spectral_gap(topo::build(heavy_self, 3)), WithinAbs(1.0 - 1.0 / std::sqrt(3.0), 1e-12));
  // The doubly stochastic W3 is circulant: eigenvalues 1/2 + 3/8 w + 1/8 w^2
  // for w = e^(2 pi i k / 3); for k = 1, with w = -1/2 + i sqrt(3)/2, that is
  // 1/2 - 3/16 - 1/16 + i (3/8 - 1/8) sqrt(3)/2 = 1/4 + i sqrt(3)/8, of
  // modulus sqrt(1/16 + 3/64) = sqrt(7)/8 (k = 2: the conjugate).
  CHECK_THAT(topo::spectral_gap(topo::build(three_mixer(), 3)), WithinAbs(1.0 - std::sqrt(7.0) / 8.0, 1e-12));
  // Weights all 1 give the unweighted gap.
  const topo::edges ones{3, {{0, 1}, {1, 2}, {2, 0}}, {1, 1, 1}, {1, 1, 1}};
  CHECK_THAT(topo::spectral_gap(topo::build(ones, 3)),
             WithinAbs(topo::spectral_gap(topo::build(topo::ring{}, 3)), 1e-15));
}

TEST_CASE("weights: gather::average applies the weights; without them it is unchanged to the bit",
          "[topology]") {
  using input = dml::gather::input<double>;
  std::vector<double> a{1.0 / 3, 2.5, -7.25}, b{0.1, 0.2, 0.3}, c{5.0, -1.0 / 7, 9.0};
  std::vector<input> in(2);
  in[0].sender = 1;
  in[0].values = b;
  in[1].sender = 2;
  in[1].values = c;
  auto plain = a, unweighted = a;
  dml::gather::average{}(std::span<double>(plain), std::span<const input>(in));
  dml::gather::average{}(std::span<double>(unweighted), std::span<const input>(in), dml::gather::mixing{});
  CHECK(plain == unweighted);  // bit for bit
  // Weighted: self 1/2, 3/8 and 1/8 (dyadic, exact).
  in[0].weight = 0.375;
  in[1].weight = 0.125;
  std::vector<double> x{8, 16, 0}, y{0, 8, 64}, z{64, 0, 8};
  in[0].values = y;
  in[1].values = z;
  dml::gather::average{}(std::span<double>(x), std::span<const input>(in), dml::gather::mixing{0.5, true});
  CHECK(x == std::vector<double>{4 + 0 + 8, 8 + 3 + 0, 0 + 24 + 1});
  // Rows that do not sum to 1 are divided by their sum: self 4, weights 3, 1.
  in[0].weight = 3;
  in[1].weight = 1;
  std::vector<double> x2{8, 16, 0};
  dml::gather::average{}(std::span<double>(x2), std::span<const input>(in), dml::gather::mixing{4, true});
  CHECK(x2 == std::vector<double>{12, 11, 25});
}

TEST_CASE("weights: bsp + gather::average mixes with a weighted doubly stochastic matrix, exactly",
          "[topology]") {
  // Starting values 8, 64, 512 (the mean 584/3 is kept: W3 is doubly
  // stochastic). Every value after every round is computed here from W3.
  constexpr int rounds = 6;
  std::array<std::array<double, 3>, rounds + 1> expected{};
  expected[0] = {8, 64, 512};
  for (int r = 0; r < rounds; ++r)
    for (std::size_t i = 0; i < 3; ++i) {
      double v = 0;
      for (std::size_t j = 0; j < 3; ++j) v += W3[i][j] * expected[static_cast<std::size_t>(r)][j];
      expected[static_cast<std::size_t>(r) + 1][i] = v;
    }
  std::array<std::array<double, 3>, rounds + 1> got{};
  std::array<std::string, 3> problems;
  dml::comm::inproc::run(3, [&](dml::comm::inproc::context& c) {
    try {
      auto v = dml::make_vector<double>(c, 2, three_mixer(), dml::consistency::bsp{}, dml::gather::average{});
      v.span()[0] = expected[0][c.rank()];
      v.span()[1] = -expected[0][c.rank()];
      for (int r = 1; r <= rounds; ++r) {
        v.scatter();
        v.gather();
        got[static_cast<std::size_t>(r)][c.rank()] = v.span()[0];
        if (v.span()[1] != -v.span()[0]) problems[c.rank()] = "the two elements differ";
      }
    } catch (const std::exception& e) {
      problems[c.rank()] = e.what();
    }
  });
  for (const auto& p : problems) CHECK(p.empty());
  for (int r = 1; r <= rounds; ++r) {
    INFO("round " << r);
    for (std::size_t i = 0; i < 3; ++i) {
      // Dyadic weights on values below 2^10 stay exact for these rounds.
      CHECK(got[static_cast<std::size_t>(r)][i] == expected[static_cast<std::size_t>(r)][i]);
    }
    CHECK_THAT(got[static_cast<std::size_t>(r)][0] + got[static_cast<std::size_t>(r)][1] +
                   got[static_cast<std::size_t>(r)][2],
               WithinAbs(584.0, 1e-12));
  }
}

TEST_CASE("weights: a fused vector group mixes each part with the weights", "[topology]") {
  std::array<std::array<double, 3>, 3> got{};  // [member][element]
  std::array<std::string, 3> problems;
  dml::comm::inproc::run(3, [&](dml::comm::inproc::context& c) {
    try {
      auto g = dml::make_vector_group<double>(c, {1, 2}, three_mixer(), dml::consistency::bsp{},
                                              dml::gather::average{});
      const double x = c.rank() == 0 ? 8 : c.rank() == 1 ? 64 : 512;
      g.part(0)[0] = x;
      g.part(1)[0] = 2 * x;
      g.part(1)[1] = -x;
      g.scatter();
      g.gather();
      got[c.rank()] = {g.part(0)[0], g.part(1)[0], g.part(1)[1]};
    } catch (const std::exception& e) {
      problems[c.rank()] = e.what();
    }
  });
  for (const auto& p : problems) CHECK(p.empty());
  const std::array<double, 3> x{8, 64, 512};
  for (std::size_t i = 0; i < 3; ++i) {
    const double wx = W3[i][0] * x[0] + W3[i][1] * x[1] + W3[i][2] * x[2];
    CHECK(got[i][0] == wx);
    CHECK(got[i][1] == 2 * wx);
    CHECK(got[i][2] == -wx);
  }
}

TEST_CASE("weights: members that disagree on the weights get a config error", "[topology]") {
  std::array<std::string, 2> errors;
  dml::comm::inproc::run(2, [&](dml::comm::inproc::context& c) {
    const double self = c.rank() == 0 ? 0.5 : 0.75;
    try {
      auto v = dml::make_vector<double>(c, 1, topo::edges{2, {{0, 1}, {1, 0}}, {0.5, 0.5}, {self, self}});
    } catch (const dml::config_error& e) {
      errors[c.rank()] = e.what();
    }
  });
  for (const auto& e : errors) CHECK(contains(e, "disagree"));
}

// SPDX-License-Identifier: BSL-1.0
// Connectivity, regularity, diameter, message count and spectral gap against
// values worked out by hand.
#include "check.hpp"
#include "support/catch.hpp"

#include <dml/topology.hpp>
#include <dml/topology/spectral.hpp>

#include <cmath>
#include <cstddef>
#include <numbers>
#include <string>
#include <utility>
#include <vector>

namespace topo = dml::topology;
using Catch::Matchers::WithinAbs;
using dml_test::config_error_message;
using dml_test::contains;

TEST_CASE("analysis: strong connectivity and the unreachable pair", "[topology]") {
  // One-way path 0 -> 1 -> 2: 0 reaches everyone, nobody reaches 0.
  const auto path = topo::build(topo::chain{topo::chain::one_way}, 3);
  CHECK_FALSE(topo::is_strongly_connected(path));
  const auto pair = topo::find_unreachable_pair(path);
  REQUIRE(pair.has_value());
  CHECK(pair->first == 1);
  CHECK(pair->second == 0);
  // 0 -> 1 <- 2: 0 cannot reach 2.
  const auto vee = topo::build(topo::edges{3, {{0, 1}, {2, 1}}}, 3);
  CHECK(topo::find_unreachable_pair(vee) == std::pair<dml::member_id, dml::member_id>{0, 2});
  // Connected graphs have no such pair.
  CHECK_FALSE(topo::find_unreachable_pair(topo::build(topo::ring{}, 5)).has_value());
  CHECK(topo::is_strongly_connected(topo::build(topo::ring{}, 5)));
  // Pairs are reported in original ids.
  const topo::graph survivors(std::vector<dml::member_id>{3, 8, 11}, {{8}, {11}, {}});
  CHECK(topo::find_unreachable_pair(survivors) == std::pair<dml::member_id, dml::member_id>{8, 3});
}

TEST_CASE("analysis: require_strongly_connected names a pair", "[topology]") {
  // 0 -> 1 -> 2 -> 3 plus 1 -> 0 and 2 -> 1: member 3 is a sink, so it
  // cannot reach member 0 (which reaches everyone).
  const auto g = topo::build(topo::edges{4, {{0, 1}, {1, 2}, {2, 3}, {1, 0}, {2, 1}}}, 4);
  REQUIRE_THROWS_AS(topo::require_strongly_connected(g, "edges"), dml::config_error);
  CHECK(config_error_message([&] { topo::require_strongly_connected(g, "edges"); }) ==
        "topology 'edges' over 4 members is not strongly connected: member 3 cannot reach member 0");
  CHECK_NOTHROW(topo::require_strongly_connected(topo::build(topo::halton{}, 16), "halton"));
  CHECK_NOTHROW(topo::require_strongly_connected(topo::build(topo::all{}, 1), "all"));
}

TEST_CASE("analysis: regularity means equal in-degrees and equal out-degrees", "[topology]") {
  CHECK(topo::is_regular(topo::build(topo::ring{}, 5)));
  CHECK_FALSE(topo::is_regular(topo::build(topo::star{}, 5)));
  // Every out-degree is 1 but in-degrees are 2, 1, 0: not regular.
  CHECK_FALSE(topo::is_regular(topo::build(topo::edges{3, {{0, 1}, {1, 0}, {2, 0}}}, 3)));
  // Every in-degree is 1 but out-degrees are 2, 1, 0.
  CHECK_FALSE(topo::is_regular(topo::build(topo::edges{3, {{0, 1}, {0, 2}, {1, 0}}}, 3)));
  // Regular without being circulant: two disjoint 2-cycles.
  CHECK(topo::is_regular(topo::build(topo::edges{4, {{0, 1}, {1, 0}, {2, 3}, {3, 2}}}, 4)));
}

TEST_CASE("analysis: diameter by hand", "[topology]") {
  for (const std::size_t n : {2u, 3u, 4u, 7u, 8u, 25u}) {
    INFO("n = " << n);
    // One-way ring: member 0 needs n - 1 hops to reach member n - 1.
    CHECK(topo::diameter(topo::build(topo::ring{}, n)) == static_cast<int>(n - 1));
    // Two-way ring: the far side is floor(n/2) hops away either way.
    CHECK(topo::diameter(topo::build(topo::ring{topo::ring::bidirectional}, n)) == static_cast<int>(n / 2));
    // Chain: end to end.
    CHECK(topo::diameter(topo::build(topo::chain{}, n)) == static_cast<int>(n - 1));
    // Star: leaf -> hub -> leaf, except n = 2 where the leaf is next to the hub.
    CHECK(topo::diameter(topo::build(topo::star{}, n)) == (n == 2 ? 1 : 2));
    CHECK(topo::diameter(topo::build(topo::all{}, n)) == 1);
  }
  // Offsets 1, 2, 4 over 8 members: 7 = 4 + 2 + 1 needs three hops, and
  // every distance is a sum of at most three distinct offsets.
  CHECK(topo::diameter(topo::build(topo::exponential{}, 8)) == 3);
  CHECK(topo::diameter(topo::build(topo::halton{}, 8)) == 3);  // repaired offsets 4, 2, 1
  CHECK(topo::diameter(topo::build(topo::all{}, 1)) == 0);
  CHECK(topo::diameter(topo::build(topo::chain{topo::chain::one_way}, 4)) == -1);
}

TEST_CASE("analysis: messages per round is the edge count", "[topology]") {
  CHECK(topo::messages_per_round(topo::build(topo::all{}, 6)) == 30);  // n (n - 1)
  CHECK(topo::messages_per_round(topo::build(topo::ring{}, 6)) == 6);
  CHECK(topo::messages_per_round(topo::build(topo::ring{topo::ring::bidirectional}, 6)) == 12);
  CHECK(topo::messages_per_round(topo::build(topo::star{}, 6)) == 10);   // 2 (n - 1)
  CHECK(topo::messages_per_round(topo::build(topo::chain{}, 6)) == 10);  // 2 (n - 1)
  CHECK(topo::messages_per_round(topo::build(topo::halton{}, 25)) == 125);
  CHECK(topo::messages_per_round(topo::build(topo::all{}, 1)) == 0);
}

// Spectral gap: A has A[i][j] = 1 when j sends to i plus A[i][i] = 1,
// P = diag(in-degree + 1)^-1 A, gap = 1 - sigma_2(P).
TEST_CASE("spectral gap: complete graphs and the 2-cycle have gap 1", "[topology]") {
  // Complete graph: A is all ones, P = J/n has rank one, so sigma_2 = 0.
  // n = 2 is also the 2-cycle (ring of two).
  for (std::size_t n = 2; n <= 9; ++n) {
    INFO("n = " << n);
    CHECK_THAT(topo::spectral_gap(topo::build(topo::all{}, n)), WithinAbs(1.0, 1e-12));
  }
  CHECK_THAT(topo::spectral_gap(topo::build(topo::ring{}, 2)), WithinAbs(1.0, 1e-12));
  // Two-way 3-ring is the complete graph on three.
  CHECK_THAT(topo::spectral_gap(topo::build(topo::ring{topo::ring::bidirectional}, 3)),
             WithinAbs(1.0, 1e-12));
  // One member: defined as 1.
  CHECK(topo::spectral_gap(topo::build(topo::all{}, 1)) == 1.0);
}

TEST_CASE("spectral gap: one-way rings, 1 - cos(pi/n)", "[topology]") {
  // One-way n-ring: member i receives from i - 1, so P = (I + S)/2 with S the
  // cyclic shift. P is circulant, hence normal, so its singular values are the
  // moduli of its eigenvalues |1 + w^k|/2 = |cos(pi k/n)|, w = e^{2 pi i/n}.
  // The largest is 1 (k = 0), the next cos(pi/n) (k = 1).
  // n = 3: |1 + w|/2 = 1/2, gap 0.5.
  CHECK_THAT(topo::spectral_gap(topo::build(topo::ring{}, 3)), WithinAbs(0.5, 1e-12));
  // n = 4: |1 + i|/2 = sqrt(2)/2, gap 1 - sqrt(2)/2 = 0.2928932...
  CHECK_THAT(topo::spectral_gap(topo::build(topo::ring{}, 4)), WithinAbs(1.0 - std::sqrt(2.0) / 2.0, 1e-12));
  for (std::size_t n = 2; n <= 16; ++n) {
    INFO("n = " << n);
    CHECK_THAT(topo::spectral_gap(topo::build(topo::ring{}, n)),
               WithinAbs(1.0 - std::cos(std::numbers::pi / static_cast<double>(n)), 1e-10));
  }
}

TEST_CASE("spectral gap: two-way 4-ring is 2/3", "[topology]") {
  // Two-way 4-ring: P = (I + S + S^T)/3, symmetric circulant with eigenvalues
  // (1 + 2 cos(2 pi k/4))/3 = 1, 1/3, -1/3, 1/3; singular values 1, 1/3, 1/3,
  // 1/3, so gap = 2/3.
  CHECK_THAT(topo::spectral_gap(topo::build(topo::ring{topo::ring::bidirectional}, 4)),
             WithinAbs(2.0 / 3.0, 1e-12));
}

TEST_CASE("spectral gap: star of three is 1/2", "[topology]") {
  // Hub 0 hears 1 and 2, leaves hear the hub: rows of P are
  // (1/3, 1/3, 1/3), (1/2, 1/2, 0), (1/2, 0, 1/2). P P^T has the eigenvector
  // (0, 1, -1) with eigenvalue 1/2 - 1/4 = 1/4; on span{(1,0,0), (0,1,1)} it
  // acts as [[1/3, 2/3], [1/3, 3/4]], eigenvalues (13 +- sqrt(153))/24 =
  // 1.0570 and 0.0263. So the singular values are 1.0281, 1/2, 0.1621 (P is
  // not doubly stochastic, so sigma_1 > 1) and the gap is 1 - 1/2.
  CHECK_THAT(topo::spectral_gap(topo::build(topo::star{}, 3)), WithinAbs(0.5, 1e-12));
}

TEST_CASE("spectral gap: which way an edge points matters", "[topology]") {
  // Rows of P belong to receivers. Members 1 and 2 both send to 0:
  // P = [[1/3, 1/3, 1/3], [0, 1, 0], [0, 0, 1]]. P P^T has eigenvector
  // (0, 1, -1) with eigenvalue 1, and on span{(1,0,0), (0,1,1)} acts as
  // [[1/3, 2/3], [1/3, 1]] with eigenvalues (2 +- sqrt 3)/3 = 1.244, 0.089.
  // Singular values 1.115, 1, 0.299: sigma_2 = 1, gap 0.
  const auto into_0 = topo::build(topo::edges{3, {{1, 0}, {2, 0}}}, 3);
  CHECK_THAT(topo::spectral_gap(into_0), WithinAbs(0.0, 1e-12));
  // Reversed, 0 sends to 1 and 2: P = [[1, 0, 0], [1/2, 1/2, 0], [1/2, 0, 1/2]].
  // P P^T: eigenvalue 1/4 on (0, 1, -1), and [[1, 1], [1/2, 3/4]] with
  // eigenvalues (7 +- sqrt 33)/8 = 1.593, 0.157 on the rest: sigma_2 = 1/2.
  const auto from_0 = topo::build(topo::edges{3, {{0, 1}, {0, 2}}}, 3);
  CHECK_THAT(topo::spectral_gap(from_0), WithinAbs(0.5, 1e-12));
}

TEST_CASE("spectral gap: a disconnected graph has gap 0", "[topology]") {
  // Two separate 2-cycles: P is block diagonal with two blocks J/2, singular
  // values 1, 1, 0, 0, so sigma_2 = 1.
  const auto g = topo::build(topo::edges{4, {{0, 1}, {1, 0}, {2, 3}, {3, 2}}}, 4);
  CHECK_THAT(topo::spectral_gap(g), WithinAbs(0.0, 1e-12));
}

TEST_CASE("spectral gap: survivor graphs are measured like fresh ones", "[topology]") {
  const std::vector<dml::member_id> survivors{1, 4, 6, 7};
  CHECK_THAT(topo::spectral_gap(topo::build(topo::ring{}, survivors)),
             WithinAbs(topo::spectral_gap(topo::build(topo::ring{}, 4)), 1e-12));
}

TEST_CASE("spectral gap: sparse expanders beat the ring at equal degree", "[topology]") {
  // Not a hand value but an ordering the ASAP paper relies on: at n = 64 the
  // root expander's long edge mixes far better than a two-way ring.
  const double expander = topo::spectral_gap(topo::build(topo::root_expander{}, 64));
  const double ring2 = topo::spectral_gap(topo::build(topo::ring{topo::ring::bidirectional}, 64));
  CHECK(expander > 2 * ring2);
}

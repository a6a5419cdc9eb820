// SPDX-License-Identifier: BSL-1.0
// hierarchical: complete groups linked by an outer graph between leaders or
// between all members; connected for every size, regular where it claims to
// be, and errors that name the groups.
#include "check.hpp"
#include "support/catch.hpp"

#include <dml/topology.hpp>
#include <dml/topology/spectral.hpp>

#include <cstddef>
#include <vector>

namespace topo = dml::topology;
using Catch::Matchers::WithinAbs;
using dml_test::check_generator;
using dml_test::config_error_message;
using dml_test::contains;
using dml_test::degree_fn;
using dml_test::ids;
using between = topo::between_groups;
using list = std::vector<dml::member_id>;

namespace {

std::size_t ceil_log2(std::size_t n) {
  std::size_t e = 0;
  while ((std::size_t{1} << e) < n) ++e;
  return e;
}

// Members in member i's group, i included, for groups of s over n.
std::size_t group_of_size(std::size_t i, std::size_t n, std::size_t s) {
  const std::size_t first = i / s * s;
  return std::min(n, first + s) - first;
}

template <class Outer>
void check_connected_and_claims(const Outer& outer, const char* what) {
  for (std::size_t n = 1; n <= 40; ++n) {
    for (std::size_t s = 1; s <= 9; ++s) {
      for (const between b : {between::leaders, between::all}) {
        INFO(what << ", n = " << n << ", group " << s << (b == between::all ? ", all" : ", leaders"));
        const topo::hierarchical gen{s, b, outer};
        const auto g = topo::build(gen, n);
        dml_test::check_well_formed(g);
        REQUIRE(topo::is_strongly_connected(g));
        if (gen.claims_regular(n)) CHECK(topo::is_regular(g));
        // Leaders with more than one group of more than one member carry
        // the outer edges alone: never regular.
        if (b == between::leaders && s > 1 && gen.groups(n) > 1 &&
            topo::build(outer, gen.groups(n)).edge_count())
          CHECK_FALSE(topo::is_regular(g));
      }
    }
  }
}

}  // namespace

TEST_CASE("hierarchical: the generator laws, leaders and all", "[topology]") {
  // Groups of 4, exponential between them: inside, the other members of
  // the group; between leaders, the leader also has ceil(log2 G) edges out
  // and in.
  const degree_fn leaders = [](std::size_t i, std::size_t n) {
    const std::size_t groups = (n + 3) / 4;
    return group_of_size(i, n, 4) - 1 + (i % 4 == 0 ? ceil_log2(groups) : 0);
  };
  check_generator(topo::hierarchical{4}, leaders, leaders);
  // Between all with groups of 5 over multiples of 5: every member has the
  // outer degree too.
  const degree_fn all = [](std::size_t, std::size_t n) { return std::size_t{4} + ceil_log2(n / 5); };
  check_generator(topo::hierarchical{5, between::all}, all, all, true, {5, 10, 25, 100});
  for (const std::size_t n : {5u, 10u, 25u, 100u}) {
    const topo::hierarchical gen{5, between::all};
    CHECK(gen.claims_regular(n));
    CHECK(topo::is_regular(topo::build(gen, n)));
  }
}

TEST_CASE("hierarchical: the edges by hand", "[topology]") {
  // 8 members in groups of 4; between the 2 groups the exponential graph is
  // the 2-cycle.
  const auto lead = topo::build(topo::hierarchical{4}, 8);
  CHECK(ids(lead.out(0)) == list{1, 2, 3, 4});
  CHECK(ids(lead.out(1)) == list{0, 2, 3});
  CHECK(ids(lead.out(4)) == list{0, 5, 6, 7});
  CHECK(ids(lead.in(4)) == list{0, 5, 6, 7});
  CHECK_FALSE(topo::is_regular(lead));
  CHECK(topo::diameter(lead) == 3);  // 1 -> 0 -> 4 -> 5
  const auto all = topo::build(topo::hierarchical{4, between::all}, 8);
  CHECK(ids(all.out(1)) == list{0, 2, 3, 5});
  CHECK(ids(all.out(7)) == list{3, 4, 5, 6});
  CHECK(topo::is_regular(all));
  CHECK(topo::diameter(all) == 2);
  // An uneven last group: 10 members in groups of 4, ring between groups
  // 0 -> 1 -> 2 -> 0. Between all, positions 2 and 3 have nobody in group 2.
  const auto uneven = topo::build(topo::hierarchical{4, between::all, topo::ring{}}, 10);
  CHECK(ids(uneven.out(5)) == list{4, 6, 7, 9});
  CHECK(ids(uneven.out(6)) == list{4, 5, 7});
  CHECK(ids(uneven.out(9)) == list{1, 8});
  CHECK_FALSE(topo::hierarchical{4, between::all, topo::ring{}}.claims_regular(10));
  // One group is the complete graph, whatever the outer generator.
  CHECK(topo::build(topo::hierarchical{8}, 6) == topo::build(topo::all{}, 6));
  // Groups of one are the outer graph itself.
  CHECK(topo::build(topo::hierarchical{1, between::leaders, topo::ring{}}, 7) ==
        topo::build(topo::ring{}, 7));
  CHECK(topo::hierarchical{1, between::leaders, topo::ring{}}.claims_regular(7));
  CHECK(topo::hierarchical{4}.describe() == "hierarchical(group=4, between=leaders, outer=exponential)");
  CHECK(topo::hierarchical{3, between::all, topo::circulant{{1, 2}}}.describe() ==
        "hierarchical(group=3, between=all, outer=circulant(offsets=1,2))");
}

TEST_CASE("hierarchical: strongly connected at every size, regular where claimed", "[topology]") {
  check_connected_and_claims(topo::exponential{}, "exponential");
  check_connected_and_claims(topo::ring{}, "ring");
  check_connected_and_claims(topo::all{}, "all");
  check_connected_and_claims(topo::star{}, "star");
}

TEST_CASE("hierarchical: over survivors the groups are re-formed", "[topology]") {
  // 7 survivors of 12 in groups of 3: {0, 2, 3}, {5, 8, 9}, {11}.
  const list alive{0, 2, 3, 5, 8, 9, 11};
  const auto g = topo::build(topo::hierarchical{3}, alive);
  CHECK(ids(g.out(2)) == list{0, 3});
  CHECK(ids(g.out(5)) == list{0, 8, 9, 11});  // leader of group 1: exponential over 3 groups, 1 -> 2, 1 -> 0
  CHECK(topo::is_strongly_connected(g));
}

TEST_CASE("hierarchical: spectral gap between the dense and the sparse", "[topology]") {
  // One group: the complete graph, gap 1.
  CHECK_THAT(topo::spectral_gap(topo::build(topo::hierarchical{16}, 16)), WithinAbs(1.0, 1e-12));
  // Between all members it mixes better than between leaders (leaders funnel
  // everything through one member per group).
  const double leaders = topo::spectral_gap(topo::build(topo::hierarchical{4}, 32));
  const double all = topo::spectral_gap(topo::build(topo::hierarchical{4, between::all}, 32));
  CHECK(all > leaders);
  CHECK(leaders > 0);
}

TEST_CASE("hierarchical: errors name the cause", "[topology]") {
  CHECK(contains(config_error_message([] { (void)topo::hierarchical{0}; }),
                 "group size must be at least 1, got 0"));
  CHECK(contains(config_error_message([] { (void)topo::build(topo::hierarchical{4}, 0); }),
                 "topology 'hierarchical' needs at least one member"));
  // 6 members in 3 groups of 2, halton{3} between them needs more than 3.
  const auto fan = config_error_message([] {
    (void)topo::build(topo::hierarchical{2, between::leaders, topo::halton{3}}, 6);
  });
  CHECK(contains(fan, "topology 'hierarchical' over 6 members in 3 groups of 2: between the groups, "));
  CHECK(contains(fan, "'halton' with fan-out 3 needs more than 3 members"));
  // A one-way chain between groups is not strongly connected.
  const auto cut = config_error_message([] {
    (void)topo::build(topo::hierarchical{2, between::all, topo::chain{topo::chain::one_way}}, 6);
  });
  CHECK(contains(
      cut, "between the groups, 'one_way_chain' is not strongly connected: group 1 cannot reach group 0"));
}

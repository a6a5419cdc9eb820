// SPDX-License-Identifier: BSL-1.0
// hierarchical: complete groups linked by an outer graph between leaders or
// between all members; connected for every size, regular where it claims to
// be, and errors that name the groups.
#include "check.hpp"
#include "support/catch.hpp"

#include <dml/topology.hpp>
#include <dml/topology/spectral.hpp>

#include <algorithm>
#include <cstddef>
#include <vector>

namespace topo = dml::topology;
using Catch::Matchers::WithinAbs;
using dml_test::ceil_log2;
using dml_test::check_generator;
using dml_test::config_error_message;
using dml_test::contains;
using dml_test::degree_fn;
using dml_test::ids;
using between = topo::between_groups;
using list = std::vector<dml::member_id>;

namespace {

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

namespace {

using labels = std::vector<std::size_t>;

// Every member's group by label: the other members with its label.
list same_label(const labels& l, std::size_t i) {
  list out;
  for (std::size_t j = 0; j < l.size(); ++j)
    if (j != i && l[j] == l[i]) out.push_back(j);
  return out;
}

}  // namespace

TEST_CASE("hierarchical by label: the edges by hand", "[topology]") {
  // Groups not contiguous in id order and of sizes 3, 2, 1: label 7 holds
  // {0, 3, 5}, label 2 holds {1, 4}, label 9 holds {2}. Numbered by their
  // smallest member: group 0 = {0, 3, 5}, group 1 = {1, 4}, group 2 = {2};
  // ring between groups 0 -> 1 -> 2 -> 0.
  const labels l{7, 2, 9, 7, 2, 7};
  const topo::hierarchical lead{l, between::leaders, topo::ring{}};
  CHECK(lead.groups(6) == 3);
  const auto g = topo::build(lead, 6);
  CHECK(ids(g.out(0)) == list{1, 3, 5});  // leader of group 0 -> leader of group 1
  CHECK(ids(g.out(1)) == list{2, 4});
  CHECK(ids(g.out(2)) == list{0});  // a group of one: only its outer edge
  CHECK(ids(g.out(3)) == list{0, 5});
  CHECK(ids(g.in(0)) == list{2, 3, 5});
  CHECK_FALSE(lead.claims_regular(6));
  CHECK_FALSE(topo::is_regular(g));
  // Between all, position l of one group sends to position l of the next
  // where it has one: 3 -> 4 (position 1), 5 has nobody in group 1.
  const auto all = topo::build(topo::hierarchical{l, between::all, topo::ring{}}, 6);
  CHECK(ids(all.out(3)) == list{0, 4, 5});
  CHECK(ids(all.out(5)) == list{0, 3});
  CHECK(ids(all.out(4)) == list{1});  // group 2 has no position 1
  CHECK(topo::is_strongly_connected(all));
  // Labels i / s are the grouping by size s.
  labels by4(10);
  for (std::size_t i = 0; i < 10; ++i) by4[i] = i / 4;
  for (const between b : {between::leaders, between::all}) {
    CHECK(topo::build(topo::hierarchical{by4, b, topo::ring{}}, 10) ==
          topo::build(topo::hierarchical{4, b, topo::ring{}}, 10));
  }
  CHECK(topo::hierarchical{labels{0, 0, 1, 2}}.describe() ==
        "hierarchical(labels=0,0,1,2, between=leaders, outer=exponential)");
  CHECK(topo::hierarchical{labels{0, 0, 1, 2}}.group_size() == 0);
  CHECK(topo::hierarchical{labels{5, 5}}.labels() == labels{5, 5});
}

TEST_CASE("hierarchical by label: connected, complete inside groups, regular exactly where claimed",
          "[topology]") {
  // Uneven groups, groups of one, labels scattered in id order, and equal
  // groups interleaved (member i in group i % k), over several outer graphs.
  std::vector<labels> cases{{0},
                            {3, 3, 3},
                            {0, 1, 2, 3, 4},
                            {1, 0, 1, 0, 1, 0},
                            {4, 4, 4, 9, 9, 2},
                            {8, 1, 8, 5, 1, 8, 8, 3, 5, 5},
                            {2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1}};
  labels scattered(40);
  for (std::size_t i = 0; i < scattered.size(); ++i) scattered[i] = (i * 7 + 3) % 11 % 6;
  cases.push_back(scattered);
  labels mod5(40);
  for (std::size_t i = 0; i < mod5.size(); ++i) mod5[i] = 100 + i % 5;
  cases.push_back(mod5);
  const auto check = [&](const auto& outer, const char* what) {
    for (const auto& l : cases) {
      for (const between b : {between::leaders, between::all}) {
        INFO(what << ", " << l.size() << " members" << (b == between::all ? ", all" : ", leaders"));
        const topo::hierarchical gen{l, b, outer};
        const auto g = topo::build(gen, l.size());
        dml_test::check_well_formed(g);
        REQUIRE(topo::is_strongly_connected(g));
        for (std::size_t i = 0; i < l.size(); ++i) {
          const auto out = ids(g.out(i));
          for (const auto j : same_label(l, i)) CHECK(std::binary_search(out.begin(), out.end(), j));
        }
        // Claimed exactly when the groups are equal and either of size 1
        // or linked between all (the outer graphs here are regular).
        labels sizes;
        for (const auto label : l) {
          const auto count = static_cast<std::size_t>(std::count(l.begin(), l.end(), label));
          sizes.push_back(count);
        }
        const bool equal =
            std::all_of(sizes.begin(), sizes.end(), [&](std::size_t c) { return c == sizes[0]; });
        const bool one_group = sizes[0] == l.size();
        CHECK(gen.claims_regular(l.size()) == (one_group || (equal && (sizes[0] == 1 || b == between::all))));
        CHECK(topo::is_regular(g) == gen.claims_regular(l.size()));
      }
    }
  };
  check(topo::exponential{}, "exponential");
  check(topo::ring{}, "ring");
  check(topo::all{}, "all");
  // A star between groups is not regular; the claim follows the outer graph.
  const topo::hierarchical star{labels{0, 1, 2, 0, 1, 2}, between::all, topo::star{}};
  CHECK(topo::is_strongly_connected(topo::build(star, 6)));
  CHECK_FALSE(star.claims_regular(6));
  CHECK_FALSE(topo::is_regular(topo::build(star, 6)));
}

TEST_CASE("hierarchical by label: over survivors the groups keep their labels", "[topology]") {
  // 9 members: label 0 = {0, 1, 2}, label 1 = {3, 4, 5}, label 2 = {6, 7, 8}.
  const labels l{0, 0, 0, 1, 1, 1, 2, 2, 2};
  const topo::hierarchical gen{l, between::leaders, topo::ring{}};
  // Member 3 (leader of label 1) and all of label 2 die: 4 leads label 1,
  // and the ring is over 2 groups.
  const list alive{0, 1, 2, 4, 5};
  const auto g = topo::build(gen, alive);
  CHECK(ids(g.out(0)) == list{1, 2, 4});
  CHECK(ids(g.out(4)) == list{0, 5});
  CHECK(ids(g.out(5)) == list{4});
  CHECK(topo::is_strongly_connected(g));
  // Unlike the grouping by size, which re-forms groups of 3 by position:
  // survivors {0, 4, 5, 6, 7} are {0}, {4, 5}, {6, 7} by label but
  // {0, 4, 5}, {6, 7} by size.
  const list few{0, 4, 5, 6, 7};
  CHECK(ids(topo::build(gen, few).out(0)) == list{4});
  CHECK(ids(topo::build(topo::hierarchical{3, between::leaders, topo::ring{}}, few).out(0)) == list{4, 5, 6});
  const list scattered{1, 5, 7, 8};  // one of label 0, one of label 1, two of label 2
  const auto h = topo::build(topo::hierarchical{l, between::all, topo::ring{}}, scattered);
  CHECK(ids(h.out(1)) == list{5});  // groups {1}, {5}, {7, 8}: ring 0 -> 1 -> 2 -> 0
  CHECK(ids(h.out(5)) == list{7});
  CHECK(ids(h.out(7)) == list{1, 8});
  CHECK(ids(h.out(8)) == list{7});
  CHECK(topo::is_strongly_connected(h));
  // One survivor: a graph of one member.
  CHECK(topo::build(gen, list{6}).out(6).empty());
  // A survivor without a label.
  CHECK(contains(config_error_message([&] {
                   (void)topo::build(gen, list{0, 9});
                 }),
                 "survivor 9 has no group label (labels were given for 9 members)"));
}

TEST_CASE("hierarchical by label: errors name the cause", "[topology]") {
  CHECK(contains(config_error_message([] { (void)topo::hierarchical{labels{}}; }),
                 "the group labels are empty; give one label per member"));
  const auto wrong = config_error_message([] { (void)topo::build(topo::hierarchical{labels{0, 0, 1}}, 4); });
  CHECK(contains(wrong, "was given group labels for 3 members but asked for a graph over 4 members"));
  CHECK(contains(config_error_message([] {
                   (void)topo::hierarchical{labels{0, 1}}.claims_regular(3);
                 }),
                 "group labels for 2 members"));
  const auto cut = config_error_message([] {
    (void)topo::build(topo::hierarchical{labels{0, 1, 1, 2}, between::all, topo::chain{topo::chain::one_way}},
                      4);
  });
  CHECK(contains(cut,
                 "over 4 members in 3 groups by label: between the groups, 'one_way_chain' is not "
                 "strongly connected: group 1 cannot reach group 0"));
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

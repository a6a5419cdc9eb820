// SPDX-License-Identifier: BSL-1.0
// Rebuilding over the survivors of a failure: the generator's graph over
// m = |survivors| members, relabelled to the original ids.
#include "check.hpp"
#include "support/catch.hpp"

#include <dml/topology.hpp>

#include <algorithm>
#include <cstddef>
#include <vector>

namespace topo = dml::topology;
using dml_test::config_error_message;
using dml_test::contains;
using dml_test::ids;
using list = std::vector<dml::member_id>;

namespace {

// build(gen, survivors) must be build(gen, m) with dense index k renamed to
// the k-th smallest survivor.
template <class G>
void check_relabelled(const G& gen, const list& survivors) {
  INFO(gen.name() << " over " << survivors.size() << " survivors");
  list sorted = survivors;
  std::sort(sorted.begin(), sorted.end());
  const auto g = topo::build(gen, survivors);
  const auto dense = topo::build(gen, survivors.size());
  REQUIRE(ids(g.members()) == sorted);
  dml_test::check_well_formed(g);
  CHECK(g.edge_count() == dense.edge_count());
  for (std::size_t k = 0; k < sorted.size(); ++k) {
    list expected;
    for (const auto j : dense.out(k)) expected.push_back(sorted[j]);
    std::sort(expected.begin(), expected.end());
    CHECK(ids(g.out(sorted[k])) == expected);
  }
  CHECK(topo::is_strongly_connected(g));
}

}  // namespace

TEST_CASE("survivors: ring over {0, 2, 3, 5, 6} of 8 keeps the original ids", "[topology]") {
  const list survivors{0, 2, 3, 5, 6};
  const auto g = topo::build(topo::ring{}, survivors);
  CHECK(ids(g.members()) == survivors);
  CHECK(ids(g.out(0)) == list{2});
  CHECK(ids(g.out(2)) == list{3});
  CHECK(ids(g.out(3)) == list{5});
  CHECK(ids(g.out(5)) == list{6});
  CHECK(ids(g.out(6)) == list{0});
  CHECK(ids(g.in(0)) == list{6});
  CHECK(topo::is_strongly_connected(g));
  CHECK(topo::diameter(g) == 4);
}

TEST_CASE("survivors: halton over {0, 2, 3, 5, 6} of 8 is connected and avoids the dead", "[topology]") {
  const list survivors{0, 2, 3, 5, 6};
  const auto g = topo::build(topo::halton{}, survivors);
  CHECK(ids(g.members()) == survivors);
  dml_test::check_well_formed(g);
  CHECK(topo::is_strongly_connected(g));
  for (const dml::member_id dead : {1u, 4u, 7u}) {
    CHECK_FALSE(g.contains(dead));
    for (const auto i : g.members()) {
      CHECK_FALSE(g.has_edge(i, dead));
      CHECK_FALSE(g.has_edge(dead, i));
      const auto out = g.out(i);
      const auto in = g.in(i);
      CHECK(std::find(out.begin(), out.end(), dead) == out.end());
      CHECK(std::find(in.begin(), in.end(), dead) == in.end());
    }
  }
  // Over five members halton has offsets 2, 1, 3 (5/2, 5/4, 15/4 floored):
  // dense 0 -> 1, 2, 3, which are survivors 2, 3, 5.
  CHECK(ids(g.out(0)) == list{2, 3, 5});
  CHECK(ids(g.out(6)) == list{0, 2, 3});  // dense 4 -> 0, 1, 2
}

TEST_CASE("survivors: every generator rebuilds as its relabelled dense graph", "[topology]") {
  const list survivors{6, 0, 3, 5, 2, 11, 40};  // any order, gaps, large ids
  check_relabelled(topo::all{}, survivors);
  check_relabelled(topo::halton{}, survivors);
  check_relabelled(topo::halton{2}, survivors);
  check_relabelled(topo::root_expander{}, survivors);
  check_relabelled(topo::ring{}, survivors);
  check_relabelled(topo::ring{topo::ring::bidirectional}, survivors);
  check_relabelled(topo::chain{}, survivors);
  check_relabelled(topo::star{}, survivors);
  check_relabelled(topo::exponential{}, survivors);
  // The star's hub is the smallest survivor.
  CHECK(topo::build(topo::star{}, survivors).out(0).size() == 6);
}

TEST_CASE("survivors: all members surviving gives the original graph", "[topology]") {
  const list everyone{0, 1, 2, 3, 4, 5, 6, 7};
  CHECK(topo::build(topo::halton{}, everyone) == topo::build(topo::halton{}, 8));
  CHECK(topo::build(topo::root_expander{}, everyone) == topo::build(topo::root_expander{}, 8));
}

TEST_CASE("survivors: a lone survivor has no edges", "[topology]") {
  const list last{5};
  const auto g = topo::build(topo::halton{}, last);
  CHECK(ids(g.members()) == list{5});
  CHECK(g.edge_count() == 0);
  CHECK(topo::is_strongly_connected(g));
  CHECK(topo::diameter(g) == 0);
}

TEST_CASE("survivors: edges gives the induced subgraph", "[topology]") {
  // 0 -> 1 -> 2 -> 3 -> 0 with a chord 0 -> 2.
  const topo::edges gen{4, {{0, 1}, {1, 2}, {2, 3}, {3, 0}, {0, 2}}};
  const list without_1{0, 2, 3};
  const auto g = topo::build(gen, without_1);
  CHECK(ids(g.members()) == without_1);
  CHECK(g.edge_count() == 3);
  CHECK(ids(g.out(0)) == list{2});
  CHECK(ids(g.out(2)) == list{3});
  CHECK(ids(g.out(3)) == list{0});
  CHECK(topo::is_strongly_connected(g));
  // Without 2 the cycle is cut: 0 -> 1 and 3 -> 0 remain, nothing reaches 3.
  const list without_2{0, 1, 3};
  const auto cut = topo::build(gen, without_2);
  CHECK(ids(cut.out(0)) == list{1});
  CHECK(cut.out(1).empty());
  CHECK(ids(cut.out(3)) == list{0});
  CHECK_FALSE(topo::is_strongly_connected(cut));
  CHECK(
      contains(config_error_message([&] { topo::require_strongly_connected(cut, gen.name()); }),
               "topology 'edges' over 3 members is not strongly connected: member 0 cannot reach member 3"));
}

// SPDX-License-Identifier: BSL-1.0
// The graph class on its own: construction, lookups by original id, and the
// generator concept.
#include "check.hpp"
#include "support/catch.hpp"

#include <dml/topology.hpp>

#include <cstddef>
#include <string_view>
#include <vector>

namespace topo = dml::topology;
using dml_test::config_error_message;
using dml_test::contains;
using dml_test::ids;
using list = std::vector<dml::member_id>;

// ---- the generator concept (compile-time checks) ----
namespace {
struct no_tag {  // right members, but never opted in
  std::vector<std::vector<dml::member_id>> out_lists(std::size_t n) const { return std::vector<list>(n); }
  std::string_view name() const { return "no_tag"; }
};
struct wrong_tag : no_tag {
  using policy_slot = dml::slot::gather;
};
struct wrong_result {
  using policy_slot = dml::slot::topology;
  std::vector<int> out_lists(std::size_t) const { return {}; }
  std::string_view name() const { return "wrong_result"; }
};
struct no_name {
  using policy_slot = dml::slot::topology;
  std::vector<std::vector<dml::member_id>> out_lists(std::size_t n) const { return std::vector<list>(n); }
};
struct user_topology : no_tag {  // a user's own generator: opting in is enough
  using policy_slot = dml::slot::topology;
};
}  // namespace

static_assert(topo::is_topology_generator_v<topo::all>);
static_assert(topo::is_topology_generator_v<topo::halton>);
static_assert(topo::is_topology_generator_v<topo::root_expander>);
static_assert(topo::is_topology_generator_v<topo::ring>);
static_assert(topo::is_topology_generator_v<topo::chain>);
static_assert(topo::is_topology_generator_v<topo::star>);
static_assert(topo::is_topology_generator_v<topo::exponential>);
static_assert(topo::is_topology_generator_v<topo::edges>);
static_assert(topo::is_topology_generator_v<const topo::halton&>);
static_assert(topo::is_topology_generator<topo::ring>::value);
static_assert(topo::topology_generator<user_topology>);
static_assert(!topo::is_topology_generator_v<int>);
static_assert(!topo::is_topology_generator_v<no_tag>);
static_assert(!topo::is_topology_generator_v<wrong_tag>);
static_assert(!topo::is_topology_generator_v<wrong_result>);
static_assert(!topo::is_topology_generator_v<no_name>);
static_assert(!topo::is_topology_generator_v<topo::graph>);
static_assert(topo::has_survivor_lists<topo::edges>);
static_assert(!topo::has_survivor_lists<topo::halton>);
static_assert(std::is_nothrow_default_constructible_v<topo::halton>);

TEST_CASE("graph: a user generator builds like a built-in one", "[topology]") {
  const auto g = topo::build(user_topology{}, 3);
  CHECK(g.size() == 3);
  CHECK(g.edge_count() == 0);
  CHECK_FALSE(topo::is_strongly_connected(g));
}

TEST_CASE("graph: built from out-lists, in any order", "[topology]") {
  const topo::graph g({{2, 1}, {2}, {0}});
  CHECK(g.size() == 3);
  CHECK(ids(g.members()) == list{0, 1, 2});
  CHECK(ids(g.out(0)) == list{1, 2});
  CHECK(ids(g.in(2)) == list{0, 1});
  CHECK(ids(g.in(0)) == list{2});
  CHECK(ids(g.in(1)) == list{0});
  CHECK(g.edge_count() == 4);
  CHECK(g.has_edge(0, 2));
  CHECK_FALSE(g.has_edge(2, 1));
  CHECK_FALSE(g.has_edge(7, 0));  // non-members have no edges
  CHECK_FALSE(g.has_edge(0, 7));
  CHECK(g.contains(2));
  CHECK_FALSE(g.contains(3));
  CHECK(g.index_of(2) == 2);
  dml_test::check_well_formed(g);
}

TEST_CASE("graph: explicit member ids (a survivor graph)", "[topology]") {
  const topo::graph g(std::vector<dml::member_id>{2, 5, 9}, {{9}, {2}, {2, 5}});
  CHECK(ids(g.members()) == list{2, 5, 9});
  CHECK(ids(g.out(9)) == list{2, 5});
  CHECK(ids(g.in(2)) == list{5, 9});
  CHECK(ids(g.in(5)) == list{9});
  CHECK(g.index_of(5) == 1);
  CHECK(g.contains(9));
  CHECK_FALSE(g.contains(0));
  CHECK_FALSE(g.contains(3));
  CHECK(g.has_edge(5, 2));
  CHECK_FALSE(g.has_edge(2, 5));
  dml_test::check_well_formed(g);
  CHECK(topo::is_strongly_connected(g));
  // Same members and edges, given in another order, compare equal.
  CHECK(g == topo::graph(list{2, 5, 9}, {{9}, {2}, {5, 2}}));
  CHECK_FALSE(g == topo::graph(list{2, 5, 9}, {{9}, {2}, {5}}));
}

TEST_CASE("graph: lookups of non-members are errors that name the id", "[topology]") {
  const topo::graph dense({{1}, {0}});
  REQUIRE_THROWS_AS(dense.out(2), dml::config_error);
  auto msg = config_error_message([&] { (void)dense.out(2); });
  CHECK(contains(msg, "2 is not a member"));
  CHECK(contains(msg, "0..1"));
  msg = config_error_message([&] { (void)dense.in(5); });
  CHECK(contains(msg, "5 is not a member"));

  const topo::graph sparse(std::vector<dml::member_id>{2, 5, 9}, {{5}, {9}, {2}});
  REQUIRE_THROWS_AS(sparse.in(3), dml::config_error);
  msg = config_error_message([&] { (void)sparse.in(3); });
  CHECK(contains(msg, "3 is not a member (members are 2 5 9)"));
  msg = config_error_message([&] { (void)sparse.index_of(0); });
  CHECK(contains(msg, "0 is not a member"));
}

TEST_CASE("graph: malformed out-lists are rejected with the offending edge", "[topology]") {
  REQUIRE_THROWS_AS(topo::graph({{1}, {1}}), dml::config_error);
  CHECK(contains(config_error_message([] { topo::graph({{1}, {1}}); }), "self-edge 1 -> 1"));
  REQUIRE_THROWS_AS(topo::graph({{1}, {3}}), dml::config_error);
  CHECK(contains(config_error_message([] {
                   topo::graph({{1}, {3}});
                 }),
                 "edge 1 -> 3 names 3, which is not a member"));
  REQUIRE_THROWS_AS(topo::graph({{1, 2, 1}, {}, {}}), dml::config_error);
  CHECK(contains(config_error_message([] {
                   topo::graph({{1, 2, 1}, {}, {}});
                 }),
                 "edge 0 -> 1 is listed twice"));
  REQUIRE_THROWS_AS(topo::graph(std::vector<list>{}), dml::config_error);
  CHECK(contains(config_error_message([] { topo::graph(std::vector<list>{}); }), "at least one member"));
  // Survivor form: ids in original numbering, strictly ascending.
  CHECK(contains(config_error_message([] { topo::graph(list{2, 5}, {{5}, {4}}); }), "edge 5 -> 4 names 4"));
  CHECK(contains(config_error_message([] {
                   topo::graph(list{5, 2}, {{2}, {5}});
                 }),
                 "strictly ascending, but 2 follows 5"));
  CHECK(contains(config_error_message([] {
                   topo::graph(list{2, 2}, {{}, {}});
                 }),
                 "strictly ascending, but 2 follows 2"));
  CHECK(contains(config_error_message([] { topo::graph(list{2, 5}, {{5}}); }), "2 members but 1 out-lists"));
}

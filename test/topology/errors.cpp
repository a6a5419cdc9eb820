// SPDX-License-Identifier: BSL-1.0
// Every bad input is a dml::config_error whose message says what is wrong.
#include "check.hpp"
#include "support/catch.hpp"

#include <dml/topology.hpp>

#include <cstddef>
#include <span>
#include <vector>

namespace topo = dml::topology;
using dml_test::config_error_message;
using dml_test::contains;
using list = std::vector<dml::member_id>;

TEST_CASE("errors: n = 0 for every generator", "[topology]") {
  auto check = [](const auto& gen) {
    INFO(gen.name());
    REQUIRE_THROWS_AS(topo::build(gen, 0), dml::config_error);
    const auto msg = config_error_message([&] { (void)topo::build(gen, 0); });
    CHECK(contains(msg, "topology '" + std::string(gen.name()) + "' needs at least one member"));
    CHECK(contains(msg, "0 members"));
    // The generator checks too, for callers that skip build().
    REQUIRE_THROWS_AS(gen.out_lists(0), dml::config_error);
  };
  check(topo::all{});
  check(topo::halton{});
  check(topo::halton{3});
  check(topo::root_expander{});
  check(topo::ring{});
  check(topo::ring{topo::ring::bidirectional});
  check(topo::chain{});
  check(topo::star{});
  check(topo::exponential{});
  REQUIRE_THROWS_AS(topo::edges(0, {}), dml::config_error);
  CHECK(contains(config_error_message([] { topo::edges(0, {}); }), "'edges' needs at least one member"));
}

TEST_CASE("errors: halton fan-out of n or more, or zero", "[topology]") {
  REQUIRE_THROWS_AS(topo::build(topo::halton{5}, 3), dml::config_error);
  CHECK(
      config_error_message([] { (void)topo::build(topo::halton{5}, 3); }) ==
      "topology 'halton' with fan-out 5 needs more than 5 members, but was asked for a graph over 3 members "
      "(each member has only 2 peers)");
  // k = n is one too many as well; k = n - 1 is the complete graph.
  REQUIRE_THROWS_AS(topo::build(topo::halton{4}, 4), dml::config_error);
  CHECK(contains(config_error_message([] { (void)topo::build(topo::halton{4}, 4); }), "over 4 members"));
  CHECK(topo::build(topo::halton{3}, 4) == topo::build(topo::all{}, 4));
  REQUIRE_THROWS_AS(topo::build(topo::halton{1}, 1), dml::config_error);
  REQUIRE_THROWS_AS(topo::halton{0}, dml::config_error);
  CHECK(contains(config_error_message([] { (void)topo::halton{0}; }), "fan-out must be at least 1, got 0"));
  REQUIRE_THROWS_AS(topo::halton{5}.offsets(3), dml::config_error);
}

TEST_CASE("errors: edges with a self-edge, an out-of-range id or a duplicate name the pair", "[topology]") {
  REQUIRE_THROWS_AS(topo::edges(4, {{0, 1}, {2, 2}}), dml::config_error);
  CHECK(config_error_message([] {
          topo::edges(4, {{0, 1}, {2, 2}});
        }) == "topology 'edges': edge (2, 2) is a self-edge: a member cannot send to itself");

  REQUIRE_THROWS_AS(topo::edges(4, {{0, 1}, {1, 7}}), dml::config_error);
  CHECK(config_error_message([] {
          topo::edges(4, {{0, 1}, {1, 7}});
        }) == "topology 'edges': edge (1, 7) names member 7, but the graph has only 4 members (ids 0..3)");
  CHECK(contains(config_error_message([] { topo::edges(4, {{4, 0}}); }), "edge (4, 0) names member 4"));

  REQUIRE_THROWS_AS(topo::edges(4, {{0, 1}, {1, 2}, {0, 1}}), dml::config_error);
  CHECK(config_error_message([] {
          topo::edges(4, {{0, 1}, {1, 2}, {0, 1}});
        }) == "topology 'edges': edge (0, 1) is listed twice");
  // Opposite directions are different edges.
  CHECK_NOTHROW(topo::edges(2, {{0, 1}, {1, 0}}));
}

TEST_CASE("errors: edges asked for another member count", "[topology]") {
  const topo::edges gen{4, {{0, 1}, {1, 2}, {2, 3}, {3, 0}}};
  REQUIRE_THROWS_AS(topo::build(gen, 5), dml::config_error);
  CHECK(contains(config_error_message([&] { (void)topo::build(gen, 5); }),
                 "topology 'edges' was given a graph over 4 members but asked for one over 5 members"));
  REQUIRE_THROWS_AS(gen.out_lists(3), dml::config_error);
  // A survivor id the user's graph never had.
  const list survivors{0, 1, 9};
  REQUIRE_THROWS_AS(topo::build(gen, survivors), dml::config_error);
  CHECK(contains(config_error_message([&] { (void)topo::build(gen, survivors); }),
                 "survivor 9 is not a member of the graph over 4 members"));
}

TEST_CASE("errors: empty or duplicate survivors", "[topology]") {
  const list none;
  REQUIRE_THROWS_AS(topo::build(topo::halton{}, none), dml::config_error);
  CHECK(config_error_message([&] { (void)topo::build(topo::halton{}, none); }) ==
        "topology 'halton': the survivor list is empty; a graph needs at least one member");
  const list twice{0, 3, 5, 3};
  REQUIRE_THROWS_AS(topo::build(topo::ring{}, twice), dml::config_error);
  CHECK(config_error_message([&] { (void)topo::build(topo::ring{}, twice); }) ==
        "topology 'ring': member 3 appears twice in the survivor list");
  REQUIRE_THROWS_AS(topo::build(topo::edges{4, {}}, twice), dml::config_error);
  // A fan-out that no longer fits the survivors is reported like any other.
  const list two{4, 9};
  CHECK(contains(config_error_message([&] { (void)topo::build(topo::halton{2}, two); }), "over 2 members"));
}

namespace {
// User generators with bugs; build() must catch them.
struct short_by_one {
  using policy_slot = dml::slot::topology;
  std::vector<std::vector<dml::member_id>> out_lists(std::size_t n) const {
    return std::vector<std::vector<dml::member_id>>(n - 1);
  }
  std::string_view name() const { return "short_by_one"; }
};
struct self_loop {
  using policy_slot = dml::slot::topology;
  std::vector<std::vector<dml::member_id>> out_lists(std::size_t n) const {
    return std::vector<std::vector<dml::member_id>>(n, std::vector<dml::member_id>{0});
  }
  std::string_view name() const { return "self_loop"; }
};
}  // namespace

TEST_CASE("errors: a buggy user generator is caught by build", "[topology]") {
  REQUIRE_THROWS_AS(topo::build(short_by_one{}, 3), dml::config_error);
  CHECK(config_error_message([] { (void)topo::build(short_by_one{}, 3); }) ==
        "topology 'short_by_one' returned 2 out-lists for 3 members");
  const list survivors{1, 2, 3};
  CHECK(contains(config_error_message([&] { (void)topo::build(short_by_one{}, survivors); }),
                 "returned 2 out-lists for 3 members"));
  // Reported in original ids.
  const list ids{4, 7};
  CHECK(contains(config_error_message([&] { (void)topo::build(self_loop{}, ids); }), "self-edge 4 -> 4"));
}

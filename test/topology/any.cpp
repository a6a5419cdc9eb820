// SPDX-License-Identifier: BSL-1.0
// topology::any: a generator chosen at run time builds exactly the graphs of
// the generator it holds, over fresh groups and over survivors, and vectors
// built with it agree with vectors built with the generator itself.
#include "check.hpp"
#include "support/catch.hpp"

#include <dml/dml.hpp>

#include <atomic>
#include <cstddef>
#include <string>
#include <vector>

namespace topo = dml::topology;
using dml_test::ids;
using list = std::vector<dml::member_id>;

namespace {

void same_graph(const topo::graph& a, const topo::graph& b) {
  REQUIRE(ids(a.members()) == ids(b.members()));
  for (const auto m : a.members()) {
    CHECK(ids(a.out(m)) == ids(b.out(m)));
    CHECK(ids(a.in(m)) == ids(b.in(m)));
  }
}

template <class G>
void check_like(const G& gen) {
  const topo::any held = gen;
  REQUIRE(held.name() == gen.name());
  for (std::size_t n : {1u, 2u, 3u, 7u, 16u, 25u}) {
    INFO(gen.name() << ", n = " << n);
    same_graph(topo::build(held, n), topo::build(gen, n));
  }
  const list survivors{0, 2, 3, 5, 8, 9, 12};
  INFO(gen.name() << " over survivors");
  same_graph(topo::build(held, survivors), topo::build(gen, survivors));
}

}  // namespace

TEST_CASE("topology::any builds the graphs of the generator it holds") {
  check_like(topo::all{});
  check_like(topo::halton{});
  check_like(topo::root_expander{});
  check_like(topo::ring{});
  check_like(topo::ring{topo::ring::bidirectional});
  check_like(topo::chain{});
  check_like(topo::star{});
  check_like(topo::exponential{});
  check_like(topo::best_circulant{});
  check_like(topo::hierarchical{3});
  check_like(topo::hierarchical{2, topo::between_groups::all, topo::ring{}});
  // edges builds its survivor graph itself (the induced subgraph).
  const topo::edges user(13,
                         {{0, 2}, {2, 3}, {3, 0}, {3, 5}, {5, 8}, {8, 9}, {9, 12}, {12, 0}, {1, 0}, {0, 1}});
  const topo::any held = user;
  same_graph(topo::build(held, list{0, 2, 3}), topo::build(user, list{0, 2, 3}));
}

TEST_CASE("topology::any: copies share the generator; the default holds all") {
  const topo::any a;
  CHECK(a.name() == "all");
  const topo::any b = topo::ring{};
  const topo::any c = b;
  CHECK(c.name() == "ring");
  same_graph(topo::build(c, 5), topo::build(topo::ring{}, 5));
}

TEST_CASE("a vector over topology::any agrees with one over the generator itself") {
  // Members disagreeing on the policy type but not on the graph build the
  // same vector: the description members compare is the generator's.
  std::atomic<int> agreed{0};
  dml::comm::inproc::run(5, [&](dml::comm::inproc::context& c) {
    const bool through_any = c.rank() % 2 == 0;
    double mean = 0;
    auto run = [&](auto topology) {
      auto v = dml::make_vector<double>(c, 3, topology, dml::consistency::bsp{});
      for (auto& x : v.span()) x = static_cast<double>(c.rank());
      for (int r = 0; r < 60; ++r) {
        v.scatter();
        v.gather();
      }
      mean = v.span()[0];
    };
    if (through_any)
      run(topo::any(topo::halton{}));
    else
      run(topo::halton{});
    if (std::abs(mean - 2.0) < 1e-9) ++agreed;  // averaging over a connected graph: the mean 2
  });
  REQUIRE(agreed.load() == 5);
}

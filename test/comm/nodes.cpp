// SPDX-License-Identifier: BSL-1.0
// dml::comm::node_groups: the in-process transport reports one node unless
// its options give one per member, comm::any forwards the labels, a bad
// list is a config_error, and a vector over members grouped by node
// averages over its in-neighbours.
#include <dml/comm/any.hpp>
#include <dml/comm/inproc.hpp>
#include <dml/comm/nodes.hpp>
#include <dml/consistency/bsp.hpp>
#include <dml/topology/hierarchical.hpp>
#include <dml/topology/ring.hpp>
#include <dml/vector/make_vector.hpp>

#include "support/catch.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace inproc = dml::comm::inproc;
using labels = std::vector<std::size_t>;

TEST_CASE("node_groups: one node unless the options say, the same through comm::any") {
  constexpr std::size_t n = 4;
  std::vector<labels> direct(n), wrapped(n);
  inproc::run(n, [&](inproc::context& c) {
    direct[c.rank()] = dml::comm::node_groups(c);
    const dml::comm::any a(c);
    wrapped[c.rank()] = dml::comm::node_groups(a);
  });
  for (std::size_t m = 0; m < n; ++m) {
    CHECK(direct[m] == labels(n, 0));
    CHECK(wrapped[m] == labels(n, 0));
  }
  inproc::options o;
  o.nodes = {7, 3, 7, 3};
  inproc::run(
      n,
      [&](inproc::context& c) {
        direct[c.rank()] = dml::comm::node_groups(c);
        const dml::comm::any a(c);
        wrapped[c.rank()] = dml::comm::node_groups(a);
      },
      o);
  for (std::size_t m = 0; m < n; ++m) {
    CHECK(direct[m] == labels{7, 3, 7, 3});
    CHECK(wrapped[m] == labels{7, 3, 7, 3});
  }
}

TEST_CASE("node_groups: a list of the wrong length is a config_error naming both counts") {
  inproc::options o;
  o.nodes = {0, 0, 1};
  std::string message;
  try {
    inproc::run(
        4, [](inproc::context&) {}, o);
  } catch (const dml::config_error& e) {
    message = e.what();
  }
  CHECK(message.find("options::nodes gives 3 node labels for 4 members") != std::string::npos);
}

TEST_CASE("node_groups: a vector over hierarchical by node averages over its in-neighbours") {
  // Nodes of 3, 2 and 1 members, scattered in id order; a ring between the
  // nodes' leaders.
  constexpr std::size_t n = 6;
  inproc::options o;
  o.nodes = {40, 10, 40, 10, 40, 20};
  std::vector<double> got(n), want(n);
  std::vector<std::size_t> in_count(n);
  inproc::run(
      n,
      [&](inproc::context& c) {
        const dml::topology::hierarchical by_node{
            dml::comm::node_groups(c), dml::topology::between_groups::leaders, dml::topology::ring{}};
        auto v = dml::make_vector<double>(c, 2, by_node, dml::consistency::bsp{});
        for (int round = 1; round <= 3; ++round) {
          for (auto& x : v.span()) x = static_cast<double>(c.rank() * 10 + round);
          v.scatter();
          v.gather();
          const auto in = v.in_neighbours();
          double w = static_cast<double>(c.rank() * 10 + round);
          for (const auto j : in) w += static_cast<double>(j * 10 + round);
          want[c.rank()] = w / static_cast<double>(in.size() + 1);
          got[c.rank()] = v.span()[1];
          in_count[c.rank()] = in.size();
        }
      },
      o);
  // Member 0 leads node 40 ({0, 2, 4}), 1 leads node 10 ({1, 3}), 5 is
  // node 20; the ring runs 0 -> 1 -> 5 -> 0.
  CHECK(in_count == std::vector<std::size_t>{3, 2, 2, 1, 2, 1});
  for (std::size_t m = 0; m < n; ++m) {
    INFO("member " << m);
    CHECK_THAT(got[m], Catch::Matchers::WithinAbs(want[m], 1e-12));
  }
}

// SPDX-License-Identifier: BSL-1.0
// Helpers shared by the topology tests.
#pragma once

#include "support/catch.hpp"

#include <dml/error.hpp>
#include <dml/topology/graph.hpp>

#include <algorithm>
#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dml_test {

// The what() of the dml::config_error that f() throws. Fails the test when
// f() returns normally; any other exception escapes and fails it too. Catch2
// v2 and v3 spell their string matchers differently, so messages are checked
// with plain find() instead.
template <class F>
std::string config_error_message(F&& f) {
  try {
    f();
  } catch (const dml::config_error& e) {
    return e.what();
  }
  FAIL("expected a dml::config_error, but nothing was thrown");
  return {};
}

inline bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

inline std::vector<dml::member_id> ids(std::span<const dml::member_id> s) { return {s.begin(), s.end()}; }

// Sizes every generator is checked at: tiny, odd, prime, powers of two and
// squares.
inline const std::vector<std::size_t> sizes{1, 2, 3, 4, 7, 8, 16, 25, 64, 100, 256};

// ceil(log2 n), the tests' own, by counting (the generators' degrees).
inline std::size_t ceil_log2(std::size_t n) {
  std::size_t e = 0;
  while ((std::size_t{1} << e) < n) ++e;
  return e;
}

// Graph of i -> i + o (mod n): the tests' own circulant, independent of the
// library's.
inline dml::topology::graph circulant_graph(std::size_t n, const std::vector<std::size_t>& offsets) {
  std::vector<std::vector<dml::member_id>> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    for (const std::size_t o : offsets) out[i].push_back((i + o) % n);
  }
  return dml::topology::graph(std::move(out));
}

// The structural promises every graph makes: neighbour lists sorted, unique,
// members only, no self-edges, and in/out lists describing the same edges.
inline void check_well_formed(const dml::topology::graph& g) {
  std::size_t out_total = 0;
  std::size_t in_total = 0;
  for (const auto i : g.members()) {
    INFO("member " << i);
    const auto out = g.out(i);
    const auto in = g.in(i);
    CHECK(std::adjacent_find(out.begin(), out.end(), std::greater_equal<>{}) ==
          out.end());  // strictly ascending
    CHECK(std::adjacent_find(in.begin(), in.end(), std::greater_equal<>{}) == in.end());
    for (const auto j : out) {
      CHECK(j != i);
      REQUIRE(g.contains(j));
      CHECK(g.has_edge(i, j));
      const auto back = g.in(j);
      CHECK(std::binary_search(back.begin(), back.end(), i));  // j in out(i) => i in in(j)
    }
    for (const auto j : in) {
      CHECK(j != i);
      REQUIRE(g.contains(j));
      CHECK(g.has_edge(j, i));  // j in in(i) => i in out(j)
    }
    out_total += out.size();
    in_total += in.size();
  }
  CHECK(out_total == g.edge_count());
  CHECK(in_total == g.edge_count());
}

using degree_fn = std::function<std::size_t(std::size_t member, std::size_t n)>;

// The law suite every generator passes: built over each size in `over`
// (the test sizes by default), the graph is well formed, has members
// 0..n-1, is strongly connected unless `connected` is false (one member
// always is), gives each member the degrees expected_out and expected_in
// say, is the same every time it is built, and counts one message per edge.
template <class G>
void check_generator(const G& gen, const degree_fn& expected_out, const degree_fn& expected_in,
                     bool connected = true, const std::vector<std::size_t>& over = sizes) {
  for (const std::size_t n : over) {
    INFO(gen.name() << " over n = " << n);
    const auto g = dml::topology::build(gen, n);
    REQUIRE(g.size() == n);
    for (std::size_t i = 0; i < n; ++i) REQUIRE(g.members()[i] == i);
    check_well_formed(g);
    CHECK(dml::topology::is_strongly_connected(g) == (connected || n == 1));
    for (std::size_t i = 0; i < n; ++i) {
      INFO("member " << i);
      CHECK(g.out(i).size() == expected_out(i, n));
      CHECK(g.in(i).size() == expected_in(i, n));
    }
    CHECK(dml::topology::build(gen, n) == g);  // deterministic
    CHECK(gen.out_lists(n).size() == n);       // the raw lists, too
    CHECK(dml::topology::messages_per_round(g) == g.edge_count());
  }
}

}  // namespace dml_test

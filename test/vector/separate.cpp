// SPDX-License-Identifier: BSL-1.0
// Separate compilation (DML_SEPARATE_COMPILATION, <dml/src.hpp>): this
// executable is built in that mode (test/vector/CMakeLists.txt), so its
// vectors run on the core, protocol, recovery and transport code compiled
// once in separate_src.cpp. What it checks is what the header-only tests
// check: exact averages under every built-in policy for each element type
// and representation compiled there, and recovery from a dead member.
#include <dml/dml.hpp>

#include "support/catch.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <type_traits>
#include <vector>

#if !defined(DML_SEPARATE_COMPILATION)
#error "test/vector/separate.cpp is built with DML_SEPARATE_COMPILATION"
#endif

namespace inproc = dml::comm::inproc;
using dml::member_id;

namespace separate_test {

// Member m's element i in round r: distinct and exactly representable.
template <class T>
T fill(member_id m, int r, std::size_t i) {
  return static_cast<T>(1 + m + 8 * r) + static_cast<T>(i % 4) / 4;
}

// Rounds of scatter + gather over `topo`; every element must be the
// average of the member's own value and its in-neighbours'.
template <class T, class Repr, class Consistency, class Topology>
void check_average(std::size_t n, Repr repr) {
  constexpr std::size_t length = 19;
  std::vector<int> wrong(n, 0);
  inproc::run(n, [&](inproc::context& c) {
    auto v = dml::make_vector<T>(c, length, repr, Consistency{}, Topology{}, dml::gather::average{});
    const auto in = v.in_neighbours();
    for (int r = 1; r <= 4; ++r) {
      for (std::size_t i = 0; i < length; ++i) v.span()[i] = fill<T>(c.rank(), r, i);
      v.scatter();
      if constexpr (!std::is_same_v<Consistency, dml::consistency::bsp> &&
                    !std::is_same_v<Consistency, dml::consistency::notify_ack>)
        v.barrier();  // asp and ssp: the law holds once every neighbour wrote
      v.gather();
      for (std::size_t i = 0; i < length; ++i) {
        double want = fill<T>(c.rank(), r, i);
        for (const member_id m : in) want += fill<T>(m, r, i);
        want /= static_cast<double>(in.size() + 1);
        if (std::abs(static_cast<double>(v.span()[i]) - want) > 1e-6 * want) ++wrong[c.rank()];
      }
      if constexpr (!std::is_same_v<Consistency, dml::consistency::bsp> &&
                    !std::is_same_v<Consistency, dml::consistency::notify_ack>)
        v.barrier();
    }
  });
  for (std::size_t m = 0; m < n; ++m) {
    INFO("member " << m);
    CHECK(wrong[m] == 0);
  }
}

template <class T, class Repr>
void every_policy(Repr repr) {
  check_average<T, Repr, dml::consistency::bsp, dml::topology::halton>(5, repr);
  check_average<T, Repr, dml::consistency::notify_ack, dml::topology::root_expander>(6, repr);
  check_average<T, Repr, dml::consistency::asp, dml::topology::ring>(4, repr);
  check_average<T, Repr, dml::consistency::ssp<1>, dml::topology::all>(3, repr);
}

}  // namespace separate_test

TEST_CASE("separate compilation: float and double, dense and sparse, under every built-in policy") {
  separate_test::every_policy<float>(dml::dense{});
  separate_test::every_policy<double>(dml::dense{});
  separate_test::every_policy<float>(dml::sparse{19});
  separate_test::every_policy<double>(dml::sparse{19});
}

TEST_CASE("separate compilation: the survivors of a dead member agree on one view and average on") {
  constexpr std::size_t n = 6;
  constexpr member_id victim = 3;
  std::mutex mutex;
  std::vector<std::vector<float>> finals;
  std::vector<std::vector<member_id>> views;
  inproc::run(n, [&](inproc::context& c) {
    auto v = dml::make_vector<float>(c, 8, dml::consistency::notify_ack{}, dml::topology::halton{});
    std::fill(v.span().begin(), v.span().end(), static_cast<float>(c.rank()));
    while (v.clock() < 60) {
      if (v.clock() == 10 && c.rank() == victim) c.stop();
      v.scatter();
      v.gather();
    }
    v.barrier();
    std::lock_guard lock(mutex);
    finals.emplace_back(v.span().begin(), v.span().end());
    views.push_back(c.view().live);
  });
  REQUIRE(finals.size() == n - 1);
  for (const auto& live : views) REQUIRE(live == std::vector<member_id>{0, 1, 2, 4, 5});
  float lo = finals[0][0], hi = finals[0][0];
  for (const auto& f : finals)
    for (const float x : f) {
      lo = std::min(lo, x);
      hi = std::max(hi, x);
    }
  // The survivors started 0..5 apart and averaged 50 rounds after the death.
  CHECK(hi - lo < 1e-3f);
}

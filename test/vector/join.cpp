// SPDX-License-Identifier: BSL-1.0
// dist_vector::join(): members with uneven shares of the data leave the
// exchange without anyone hanging, under every built-in policy.
#include <dml/dml.hpp>

#include "support/catch.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace {

// Member m has 5 + 3m steps of its own data; each step adds 1 to its value.
std::uint64_t own_steps(std::size_t m) { return 5 + 3 * static_cast<std::uint64_t>(m); }

struct result {
  std::uint64_t returned = 0, clock = 0, steps = 0;
  std::vector<float> value;
};

template <class Topology, class Consistency>
std::vector<result> run_uneven(std::size_t n, Topology topo, Consistency cons) {
  std::vector<result> out(n);
  dml::comm::inproc::run(n, [&](dml::comm::inproc::context& c) {
    auto v = dml::make_vector<float>(c, 3, topo, cons);
    auto& r = out[c.rank()];
    for (std::uint64_t s = 0; s < own_steps(c.rank()); ++s) {
      for (auto& x : v.span()) x += 1.0f;
      v.scatter();
      v.gather();
      ++r.steps;
    }
    r.returned = v.join();
    r.clock = v.clock();
    r.value.assign(v.span().begin(), v.span().end());
  });
  return out;
}

}  // namespace

TEMPLATE_TEST_CASE("join: uneven shares under exact and bounded policies end on one clock", "[vector][join]",
                   dml::consistency::bsp, dml::consistency::notify_ack, dml::consistency::ssp<2>) {
  for (const std::size_t n : {2u, 4u, 5u}) {
    for (const bool ring : {false, true}) {
      INFO("n = " << n << (ring ? ", ring" : ", all"));
      const auto out = ring ? run_uneven(n, dml::topology::ring{}, TestType{})
                            : run_uneven(n, dml::topology::all{}, TestType{});
      for (std::size_t m = 0; m < n; ++m) {
        CHECK(out[m].steps == own_steps(m));         // every sample of its own was used
        CHECK(out[m].returned == own_steps(n - 1));  // the last to join had the most steps
        CHECK(out[m].clock == out[0].clock);         // everyone ended on the same clock
        CHECK(out[m].clock > own_steps(n - 1));      // and after the last join
      }
      if (!ring && !std::is_same_v<TestType, dml::consistency::ssp<2>>)
        for (std::size_t m = 1; m < n; ++m) CHECK(out[m].value == out[0].value);  // exact averages
    }
  }
}

TEST_CASE("join: uneven shares under asp and consistency::any", "[vector][join]") {
  for (const std::size_t n : {2u, 5u}) {
    const auto out = run_uneven(n, dml::topology::all{}, dml::consistency::asp{});
    for (std::size_t m = 0; m < n; ++m) {
      INFO("n = " << n << ", member " << m);
      CHECK(out[m].returned == own_steps(n - 1));
      CHECK(out[m].clock == own_steps(m));  // under asp a joined member only waits
    }
  }
  for (const auto& cons : {dml::consistency::any(dml::consistency::bsp{}), dml::consistency::any::ssp(1),
                           dml::consistency::any(dml::consistency::asp{})}) {
    INFO(cons.name());
    const auto out = run_uneven(4, dml::topology::ring{}, cons);
    for (std::size_t m = 0; m < 4; ++m) CHECK(out[m].returned == own_steps(3));
  }
}

TEST_CASE("join: uneven shares under ssp_bounded and asp_fresh take asp's path", "[vector][join]") {
  // Members may drift apart without bound under both, so a joined member
  // stops exchanging; under ssp_bounded the others stall at most 5 ms per
  // gather for it, then leave it out.
  using namespace std::chrono_literals;
  for (const auto& cons : {dml::consistency::any(dml::consistency::ssp_bounded<1>{5ms}),
                           dml::consistency::any(dml::consistency::asp_fresh<1>{})}) {
    INFO(cons.name());
    const auto out = run_uneven(4, dml::topology::ring{}, cons);
    for (std::size_t m = 0; m < 4; ++m) {
      CHECK(out[m].returned == own_steps(3));
      CHECK(out[m].clock == own_steps(m));
    }
  }
  const auto out = run_uneven(3, dml::topology::all{}, dml::consistency::ssp_bounded<2>{5ms});
  for (std::size_t m = 0; m < 3; ++m) CHECK(out[m].clock == own_steps(m));
}

TEST_CASE("join: a member that returns without joining is named", "[vector][join]") {
  std::string error;
  dml::comm::inproc::run(2, [&](dml::comm::inproc::context& c) {
    auto v = dml::make_vector<float>(c, 3, dml::consistency::asp{});
    v.scatter();
    v.gather();
    if (c.rank() == 0) {
      try {
        (void)v.join();
      } catch (const dml::config_error& e) {
        error = e.what();
      }
    }
  });
  CHECK(error == "dml::dist_vector::join: member 1 returned from its function without calling join()");
}

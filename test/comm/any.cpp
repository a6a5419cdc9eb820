// SPDX-License-Identifier: BSL-1.0
// dml::comm::any: what it forwards beyond the transport laws (test/comm/laws.cpp
// runs those through it): stopping a member, the finished/poll steps of the
// wait loops, the wrapped context, and a vector over any surviving a member
// killed mid-run exactly as one over the context itself does.
#include <dml/comm/any.hpp>
#include <dml/comm/inproc.hpp>
#include <dml/consistency/bsp.hpp>
#include <dml/fault/membership.hpp>
#include <dml/topology/ring.hpp>
#include <dml/vector/make_vector.hpp>

#include "support/catch.hpp"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace inproc = dml::comm::inproc;
using namespace std::chrono_literals;

TEST_CASE("any forwards identity, target and stop to the wrapped context") {
  constexpr std::size_t n = 3;
  struct seen {
    std::size_t rank = 99, size = 0;
    bool target_ok = false, can_stop = false, rma_null = false;
  };
  std::vector<seen> got(n);
  std::atomic<int> after_stop{0};
  inproc::run(n, [&](inproc::context& c) {
    dml::comm::any a(c);
    auto& g = got[c.rank()];
    g.rank = a.rank();
    g.size = a.size();
    g.target_ok = a.target<inproc::context>() == &c;
    g.can_stop = a.can_stop();
    struct other {};
    g.rma_null = a.target<other>() == nullptr;
    a.barrier();
    if (c.rank() == 2) {
      a.stop();  // never returns
      ++after_stop;
    }
  });
  CHECK(after_stop == 0);
  for (std::size_t m = 0; m < n; ++m) {
    CHECK(got[m].rank == m);
    CHECK(got[m].size == n);
    CHECK(got[m].target_ok);
    CHECK(got[m].can_stop);
    CHECK(got[m].rma_null);
  }
}

TEST_CASE("any forwards put_exclusive to the wrapped segment: the same bytes, zero padded") {
  inproc::run(2, [](inproc::context& c) {
    dml::comm::any a(c);
    auto seg = a.create_segment(4, 1);
    const std::uint64_t stale[4] = {~0ull, ~0ull, ~0ull, ~0ull};
    seg.put(1 - a.rank(), 0, std::as_bytes(std::span(stale)));
    a.barrier();
    const char five[5] = {'a', 'b', 'c', 'd', 'e'};
    seg.put_exclusive(1 - a.rank(), 1, std::as_bytes(std::span(five)));
    a.barrier();  // orders the plain stores before the reads
    char back[8];
    seg.read(1, std::as_writable_bytes(std::span(back)));
    CHECK(std::string(back, 5) == "abcde");
    CHECK(back[5] == 0);  // the partial word's rest is zero
    CHECK(seg.load(0) == ~0ull);
    CHECK(seg.load(2) == ~0ull);
    a.barrier();
  });
}

TEST_CASE("a vector over any names a member that returned without sending, as over the context") {
  // finished() is forwarded: the waiting member learns that member 1 left
  // instead of waiting out the limit.
  std::vector<std::string> errors(2);
  inproc::options o;
  o.wait_limit = 30s;
  inproc::run(
      2,
      [&](inproc::context& c) {
        dml::comm::any a(c);
        auto v = dml::make_vector<float>(a, 4, dml::consistency::bsp{}, dml::topology::ring{});
        if (c.rank() == 1) return;  // leaves without scattering
        try {
          v.scatter();
          v.gather();
        } catch (const dml::config_error& e) {
          errors[c.rank()] = e.what();
        }
      },
      o);
  INFO(errors[0]);
  CHECK(errors[0].find("returned from its function") != std::string::npos);  // not the wait limit's timeout
}

TEST_CASE("vectors over any survive a member killed mid-run and agree with the survivors' view") {
  constexpr std::size_t n = 5;
  constexpr std::uint64_t rounds = 30;
  struct result {
    bool done = false;
    std::vector<double> value;
    std::size_t live = 0, changes = 0;
  };
  std::vector<result> got(n);
  inproc::options o;
  o.wait_limit = 20s;
  o.max_random_delay = 20us;
  inproc::run(
      n,
      [&](inproc::context& c) {
        dml::comm::any a(c);
        auto v = dml::make_vector<double>(a, 3, dml::consistency::bsp{}, dml::topology::ring{});
        for (auto& x : v.span()) x = static_cast<double>(c.rank());
        for (int r = 0; v.clock() < rounds; ++r) {
          if (r == 7 && c.rank() == 3) a.stop();
          v.scatter();
          v.gather();
        }
        v.barrier();
        auto& g = got[c.rank()];
        g.value.assign(v.span().begin(), v.span().end());
        g.live = a.view().live.size();
        g.changes = dml::fault::view_changes(c).size();  // the context's own history
        g.done = true;
      },
      o);
  CHECK_FALSE(got[3].done);
  for (std::size_t m = 0; m < n; ++m) {
    if (m == 3) continue;
    INFO("member " << m);
    REQUIRE(got[m].done);
    CHECK(got[m].live == n - 1);
    CHECK(got[m].changes == 1);
    // Averaging over a ring of survivors converges towards one value; after
    // 30 rounds every survivor's elements are equal and inside the range of
    // the starting values.
    for (double x : got[m].value) {
      CHECK(x >= 0.0);
      CHECK(x <= 4.0);
      CHECK(x == got[m].value[0]);
    }
  }
}

// SPDX-License-Identifier: BSL-1.0
// make_vector's policy sorting and defaults, collective agreement checks,
// bad input, views of the local buffer and sparse updates.
#include <dml/dml.hpp>
#include <dml/vector/eigen.hpp>
#include <dml/vector/xtensor.hpp>

#include "support/catch.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>

namespace inproc = dml::comm::inproc;
using ctx = inproc::context;
namespace topo = dml::topology;
namespace cons = dml::consistency;

template <class... P>
using made = decltype(dml::make_vector<float>(std::declval<ctx&>(), 1, std::declval<P>()...));

// Any order gives the same type; missing slots get the defaults of fwd.hpp.
static_assert(std::is_same_v<made<>, dml::dist_vector<float, ctx>>);
static_assert(std::is_same_v<
              made<>, dml::dist_vector<float, ctx, dml::dense, topo::all, cons::bsp, dml::gather::average>>);
static_assert(std::is_same_v<made<topo::halton, cons::ssp<2>>, made<cons::ssp<2>, topo::halton>>);
static_assert(
    std::is_same_v<made<dml::gather::sum, dml::sparse, topo::ring, cons::asp>,
                   dml::dist_vector<float, ctx, dml::sparse, topo::ring, cons::asp, dml::gather::sum>>);
static_assert(std::is_same_v<made<dml::gather::max, topo::star>, made<topo::star, dml::gather::max>>);

namespace {

// Runs fn on n members, each expected to throw config_error; returns how
// many did and one message.
template <class Fn>
std::pair<int, std::string> all_reject(std::size_t n, Fn fn) {
  std::atomic<int> rejected{0};
  std::string message;
  std::mutex m;
  inproc::run(n, [&](ctx& c) {
    try {
      fn(c);
    } catch (const dml::config_error& e) {
      ++rejected;
      std::lock_guard lock(m);
      message = e.what();
    }
  });
  return {rejected.load(), message};
}

}  // namespace

TEST_CASE("an untagged callable fills the gather slot") {
  inproc::run(3, [](ctx& c) {
    auto halve_sum = [](std::span<float> own, std::span<const dml::gather::input<float>> in) {
      for (const auto& x : in) x.for_each([&](std::size_t i, float v) { own[i] += v; });
      for (auto& o : own) o /= 2;
    };
    auto v = dml::make_vector<float>(c, 3, halve_sum, topo::ring{});
    for (auto& x : v.span()) x = float(c.rank());
    v.scatter();
    v.gather();
    const float from = float((c.rank() + 2) % 3);
    REQUIRE(v.span()[1] == (float(c.rank()) + from) / 2);
  });
}

TEST_CASE("members that disagree on the length all get config_error") {
  const auto [n, msg] =
      all_reject(4, [](ctx& c) { auto v = dml::make_vector<float>(c, c.rank() == 2 ? 9 : 8); });
  REQUIRE(n == 4);
  REQUIRE(msg.find("disagree") != std::string::npos);
  REQUIRE(msg.find("length=9") != std::string::npos);
}

TEST_CASE("members that disagree on a policy or element type all get config_error") {
  auto [n1, m1] = all_reject(3, [](ctx& c) {
    if (c.rank() == 1)
      auto v = dml::make_vector<float>(c, 8, topo::ring{});
    else
      auto v = dml::make_vector<float>(c, 8, topo::halton{});
  });
  REQUIRE(n1 == 3);
  REQUIRE(m1.find("topology=") != std::string::npos);
  auto [n2, m2] = all_reject(3, [](ctx& c) {
    if (c.rank() == 0)
      auto v = dml::make_vector<double>(c, 8);
    else
      auto v = dml::make_vector<float>(c, 8);
  });
  REQUIRE(n2 == 3);
  REQUIRE(m2.find("element=double") != std::string::npos);
  auto [n3, m3] = all_reject(2, [](ctx& c) {
    if (c.rank() == 0)
      auto v = dml::make_vector<float>(c, 8, cons::ssp<1>{});
    else
      auto v = dml::make_vector<float>(c, 8, cons::ssp<2>{});
  });
  REQUIRE(n3 == 2);
  REQUIRE(m3.find("ssp<1>") != std::string::npos);
}

TEST_CASE("bad sizes are config_error on every member") {
  auto [n0, m0] = all_reject(3, [](ctx& c) { auto v = dml::make_vector<float>(c, 0); });
  REQUIRE(n0 == 3);
  REQUIRE(m0.find("length 0") != std::string::npos);
  // Only one member asks for something impossible: the others learn it too.
  auto [n1, m1] = all_reject(
      3, [](ctx& c) { auto v = dml::make_vector<float>(c, 8, dml::sparse{c.rank() == 1 ? 0u : 4u}); });
  REQUIRE(n1 == 3);
  REQUIRE(m1.find("member 1 rejected") != std::string::npos);
  REQUIRE(m1.find("capacity 0") != std::string::npos);
  auto [n2, m2] = all_reject(2, [](ctx& c) { auto v = dml::make_vector<float>(c, 8, dml::sparse{9}); });
  REQUIRE(n2 == 2);
  REQUIRE(m2.find("exceeds the length") != std::string::npos);
}

TEST_CASE("a topology that is not strongly connected is rejected naming an unreachable pair") {
  auto [n, m] = all_reject(4, [](ctx& c) {
    auto v = dml::make_vector<float>(c, 8, topo::edges(4, {{0, 1}, {1, 0}, {2, 3}, {3, 2}}));
  });
  REQUIRE(n == 4);
  REQUIRE(m.find("not strongly connected") != std::string::npos);
  REQUIRE(m.find("cannot reach") != std::string::npos);
}

TEST_CASE("span, eigen and xtensor views alias the same local buffer") {
  inproc::run(1, [](ctx& c) {
    auto v = dml::make_vector<double>(c, 5);
    v.eigen().setConstant(2.5);
    REQUIRE(v.span()[4] == 2.5);
    v.span()[1] = -1;
    REQUIRE(v.eigen()(1) == -1);
    auto x = v.xtensor();
    REQUIRE(x.size() == 5);
    x(3) = 7;
    REQUIRE(v.span()[3] == 7);
    REQUIRE(v.eigen().data() == v.span().data());
  });
}

TEST_CASE("sparse: only nonzeros travel; missing elements count as zero for average, absent for replace") {
  inproc::run(2, [](ctx& c) {
    auto avg = dml::make_vector<double>(c, 6, dml::sparse{2});
    auto rep = dml::make_vector<double>(c, 6, dml::sparse{2}, dml::gather::replace{}, cons::asp{});
    // member 0 holds {1: 4.0}, member 1 holds {2: 6.0, 5: 2.0}
    auto set = [&](auto& v) {
      std::fill(v.span().begin(), v.span().end(), 0.0);
      if (c.rank() == 0)
        v.span()[1] = 4.0;
      else {
        v.span()[2] = 6.0;
        v.span()[5] = 2.0;
      }
    };
    set(avg);
    set(rep);
    avg.scatter();
    avg.gather();
    rep.scatter();
    c.barrier();
    rep.gather();
    const std::vector<double> want_avg{0, 2.0, 3.0, 0, 0, 1.0};
    for (std::size_t i = 0; i < 6; ++i) REQUIRE(avg.span()[i] == want_avg[i]);
    // replace writes only the elements the neighbour sent and keeps the rest
    const std::vector<double> want_rep{0, 4.0, 6.0, 0, 0, 2.0};
    for (std::size_t i = 0; i < 6; ++i) REQUIRE(rep.span()[i] == want_rep[i]);
    // sparse bytes: header + footer + 12 bytes per nonzero of the sender
    const std::uint64_t own_nnz = c.rank() == 0 ? 1 : 2;
    REQUIRE(avg.stats().bytes_sent == 40 + 12 * own_nnz);
    REQUIRE(avg.stats().payload_bytes_sent == 12 * own_nnz);  // the pairs alone
  });
}

TEST_CASE("sparse: a scatter with more nonzeros than the capacity throws and sends nothing") {
  inproc::run(2, [](ctx& c) {
    auto v = dml::make_vector<float>(c, 8, dml::sparse{2}, cons::asp{});
    for (auto& x : v.span()) x = 1;
    REQUIRE_THROWS_WITH(v.scatter(), dml_test::contains("exceeds the capacity 2"));
    REQUIRE(v.clock() == 0);
    REQUIRE(v.stats().bytes_sent == 0);
    c.barrier();
  });
}

TEST_CASE("statistics: wait time is spent in barriers, clocks count scatters") {
  inproc::run(2, [](ctx& c) {
    auto v = dml::make_vector<float>(c, 4);
    if (c.rank() == 1) std::this_thread::sleep_for(std::chrono::milliseconds(30));
    v.scatter();
    v.gather();
    REQUIRE(v.clock() == 1);
    if (c.rank() == 0) REQUIRE(v.stats().wait_seconds > 0.0);
  });
}

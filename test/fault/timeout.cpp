// SPDX-License-Identifier: BSL-1.0
// The adaptive timeout (dml/fault/timeout.hpp): the estimator's bounds
// whatever it is fed, bad settings, and, with the in-process transport, a
// straggler that a fixed timeout at the floor would end but the adaptive
// one follows, a hung member found at about the floor, and a recovery that
// keeps the adapted timeout.
#include <dml/dml.hpp>
#include <dml/fault/timeout.hpp>

#include "support/catch.hpp"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <vector>

// This file's helpers and tests, apart from the other sources of its
// executable (tests are compiled several files at a time).
namespace fault_timeout_test {

namespace inproc = dml::comm::inproc;
using dml::member_id;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

// Which contexts the adaptive timeout can drive: those with attributes and
// a settable wait limit.
static_assert(dml::fault::adaptable_transport<inproc::context>);
static_assert(dml::fault::adaptable_transport<dml::comm::any>);
namespace {
struct fixed_limit_only {
  dml::comm::attributes& attributes();
  std::chrono::steady_clock::duration wait_limit() const;
};
}  // namespace
static_assert(!dml::fault::adaptable_transport<fixed_limit_only>);
static_assert(!dml::fault::adaptable_transport<int>);

namespace {

double seconds(clock_type::duration d) { return std::chrono::duration<double>(d).count(); }

// The timeout after each of `samples`, checked against the bounds on the way.
std::vector<double> feed(dml::fault::timeout_estimator& e, const std::vector<double>& samples) {
  const auto& s = e.settings();
  std::vector<double> out;
  for (double x : samples) {
    e.observe(x);
    const auto t = e.timeout();
    INFO("after a round of " << x << " s the timeout is " << seconds(t) << " s");
    REQUIRE(t >= s.floor);
    REQUIRE(t <= s.ceiling);
    out.push_back(seconds(t));
  }
  return out;
}

}  // namespace

TEST_CASE("adaptive timeout: the timeout stays in [floor, ceiling] whatever is measured", "[timeout]") {
  dml::fault::adaptive_timeout s;
  s.factor = 4;
  s.floor = 100ms;
  s.ceiling = 10s;
  s.window = 4;
  dml::fault::timeout_estimator e(s);
  // Nothing measured yet: the ceiling.
  REQUIRE(e.samples() == 0);
  REQUIRE(e.timeout() == clock_type::duration(s.ceiling));

  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // Zero, negative, NaN and tiny rounds: the floor.
  const auto low = feed(e, {0.0, -5.0, nan, 1e-300, 0.0});
  REQUIRE(low.back() == seconds(s.floor));
  // Infinite and huge rounds: the ceiling.
  REQUIRE(feed(e, {inf}).back() == seconds(s.ceiling));
  dml::fault::timeout_estimator huge(s);
  REQUIRE(feed(huge, {1e300, std::numeric_limits<double>::max()}).back() == seconds(s.ceiling));

  // A sudden jump is followed at once; the timeout comes back down only
  // after `window` faster rounds.
  dml::fault::timeout_estimator jump(s);
  const auto fast = feed(jump, {0.001, 0.001, 0.001, 0.001});
  REQUIRE(fast.back() == seconds(s.floor));
  const auto slow = feed(jump, {0.5});
  REQUIRE(slow.back() == Approx(2.0).epsilon(1e-6));  // 4 x 0.5 s, inside the bounds
  REQUIRE(std::abs(jump.estimate() - 0.5) < 1e-9);
  const auto after = feed(jump, {0.001, 0.001, 0.001});
  REQUIRE(after.back() == Approx(2.0).epsilon(1e-6));  // 0.5 s is still in the window
  REQUIRE(feed(jump, {0.001}).back() == seconds(s.floor));

  // Alternating extremes never escape either.
  dml::fault::timeout_estimator mixed(s);
  (void)feed(mixed, {inf, 0.0, nan, 1e9, -inf, 3.0, 0.01, 1e-9, 2.4, 0.0, 0.0, 0.0, 0.0});
  REQUIRE(mixed.timeout() == clock_type::duration(s.floor));
}

TEST_CASE("adaptive timeout: bad settings are refused with the setting named", "[timeout]") {
  auto refused = [](dml::fault::adaptive_timeout s, const char* word) {
    try {
      dml::fault::timeout_estimator e(s);
    } catch (const dml::config_error& err) {
      return std::string(err.what()).find(word) != std::string::npos;
    }
    return false;
  };
  dml::fault::adaptive_timeout s;
  s.factor = 0.5;
  CHECK(refused(s, "factor"));
  s.factor = std::numeric_limits<double>::quiet_NaN();
  CHECK(refused(s, "factor"));
  s = {};
  s.floor = 0ms;
  CHECK(refused(s, "floor"));
  s = {};
  s.ceiling = 500ms;  // below the default floor of 1 s
  CHECK(refused(s, "ceiling"));
  s = {};
  s.window = 0;
  CHECK(refused(s, "window"));

  // The environment variable: a bad value names it.
  ::setenv("DML_ADAPTIVE_TIMEOUT", "fast", 1);
  std::string message;
  try {
    inproc::run(1, [](auto& c) { (void)dml::fault::timeouts(c); });
  } catch (const dml::config_error& e) {
    message = e.what();
  }
  ::setenv("DML_ADAPTIVE_TIMEOUT", "200:5000:3", 1);
  dml::fault::timeout_report from_env;
  std::optional<dml::fault::adaptive_timeout> settings;
  inproc::run(1, [&](auto& c) {
    from_env = dml::fault::timeouts(c);
    settings = dml::fault::adaptive_timeout_of(c);
  });
  ::unsetenv("DML_ADAPTIVE_TIMEOUT");
  CHECK(message.find("DML_ADAPTIVE_TIMEOUT") != std::string::npos);
  REQUIRE(from_env.adaptive);
  REQUIRE(settings);
  CHECK(settings->floor == 200ms);
  CHECK(settings->ceiling == 5000ms);
  CHECK(settings->factor == 3);
  CHECK(from_env.wait_limit == clock_type::duration(5000ms));  // the ceiling until a round is measured
}

namespace {

struct run_result {
  std::string error;       // what the member caught, empty when none
  bool timed_out = false;  // it was a dml::timeout
  dml::fault::timeout_report timeouts;
  double seconds_to_error = 0;
};

// n members exchange `rounds` rounds under notify_ack; member `slow` works
// `work` before each scatter. With `adaptive`, every member turns the
// adaptive timeout on first.
std::vector<run_result> straggler_run(std::size_t n, member_id slow, std::chrono::milliseconds work,
                                      int rounds, std::optional<dml::fault::adaptive_timeout> adaptive) {
  std::vector<run_result> results(n);
  inproc::options o;
  o.wait_limit = 50ms;
  inproc::run(
      n,
      [&](inproc::context& c) {
        auto& r = results[c.rank()];
        try {
          if (adaptive) dml::fault::set_adaptive_timeout(c, *adaptive);
          auto v = dml::make_vector<float>(c, 16, dml::consistency::notify_ack{});
          for (int i = 0; i < rounds; ++i) {
            if (c.rank() == slow) c.delay(work);
            v.scatter();
            v.gather();
          }
          v.barrier();
        } catch (const dml::timeout& e) {
          r.error = e.what();
          r.timed_out = true;
        } catch (const std::exception& e) {
          r.error = e.what();
        }
        r.timeouts = dml::fault::timeouts(c);
      },
      o);
  return results;
}

}  // namespace

TEST_CASE("adaptive timeout: a slow member is followed where a fixed timeout at the floor ends the run",
          "[timeout]") {
  // Member 2 takes 150 ms per round, three times the 50 ms floor.
  const auto fixed = straggler_run(3, 2, 150ms, 6, std::nullopt);
  bool timed_out = false;
  for (const auto& r : fixed) timed_out = timed_out || r.timed_out;
  REQUIRE(timed_out);

  dml::fault::adaptive_timeout s;
  s.factor = 4;
  s.floor = 50ms;
  s.ceiling = 5s;
  s.window = 8;
  const auto adaptive = straggler_run(3, 2, 150ms, 6, s);
  for (const auto& r : adaptive) {
    INFO(r.error);
    REQUIRE(r.error.empty());
    REQUIRE(r.timeouts.adaptive);
    REQUIRE(r.timeouts.samples >= 4);
    // It followed the straggler: above the floor, about 4 x 150 ms.
    REQUIRE(r.timeouts.estimate_seconds > 0.1);
    REQUIRE(r.timeouts.wait_limit > clock_type::duration(3 * s.floor));
    REQUIRE(r.timeouts.wait_limit < clock_type::duration(s.ceiling));
    REQUIRE(r.timeouts.heartbeat_timeout == clock_type::duration::zero());  // no heartbeats in-process
  }
}

TEST_CASE("adaptive timeout: a hung member is found at about the floor when rounds are fast", "[timeout]") {
  dml::fault::adaptive_timeout s;
  s.factor = 4;
  s.floor = 100ms;
  s.ceiling = 20s;
  constexpr member_id hung = 2;
  std::vector<run_result> results(3);
  std::vector<clock_type::duration> before_hang(3);
  inproc::run(3, [&](inproc::context& c) {
    auto& r = results[c.rank()];
    clock_type::time_point start{};
    try {
      dml::fault::set_adaptive_timeout(c, s);
      auto v = dml::make_vector<float>(c, 16, dml::consistency::notify_ack{});
      for (int i = 0; i < 20; ++i) {
        v.scatter();
        v.gather();
      }
      before_hang[c.rank()] = c.wait_limit();
      start = clock_type::now();
      if (c.rank() == hung) c.delay(2500ms);  // alive, but stuck far longer than its rounds
      v.scatter();
      v.gather();
    } catch (const dml::timeout& e) {
      r.error = e.what();
      r.timed_out = true;
      r.seconds_to_error = seconds(clock_type::now() - start);
    } catch (const std::exception& e) {
      r.error = e.what();
      r.seconds_to_error = seconds(clock_type::now() - start);
    }
  });
  for (member_id m = 0; m < 3; ++m) {
    INFO("member " << m << ": " << results[m].error);
    // Fast rounds (a few ms, more on a loaded machine) bring it near the floor.
    REQUIRE(before_hang[m] >= clock_type::duration(s.floor));
    REQUIRE(before_hang[m] <= clock_type::duration(1s));
    if (m == hung) continue;
    REQUIRE(results[m].timed_out);
    REQUIRE(results[m].error.find("from member 2") != std::string::npos);
    // Found at about the adapted timeout, before the hang ends and far
    // below the ceiling of 20 s.
    REQUIRE(results[m].seconds_to_error < seconds(before_hang[m]) + 0.5);
    REQUIRE(results[m].seconds_to_error < 2.0);
  }
}

TEST_CASE("adaptive timeout: a recovery runs under the ceiling and keeps the adapted timeout", "[timeout]") {
  dml::fault::adaptive_timeout s;
  s.factor = 4;
  s.floor = 100ms;
  s.ceiling = 20s;
  constexpr member_id victim = 1;
  std::vector<run_result> results(4);
  std::vector<std::vector<dml::fault::view_change>> changes(4);
  inproc::run(4, [&](inproc::context& c) {
    auto& r = results[c.rank()];
    try {
      dml::comm::any a(c);  // through the type-erased transport: it forwards the timeouts
      dml::fault::set_adaptive_timeout(a, s);
      auto v = dml::make_vector<float>(a, 16, dml::consistency::notify_ack{}, dml::topology::ring{});
      for (int i = 0; i < 30; ++i) {
        if (c.rank() == victim && i == 15) c.stop();
        v.scatter();
        v.gather();
      }
      v.barrier();
      r.timeouts = dml::fault::timeouts(a);
      changes[c.rank()] = dml::fault::view_changes(a);
    } catch (const inproc::stopped&) {
      throw;  // the victim's end
    } catch (const std::exception& e) {
      r.error = e.what();
    }
  });
  for (member_id m = 0; m < 4; ++m) {
    if (m == victim) continue;
    INFO("member " << m << ": " << results[m].error);
    REQUIRE(results[m].error.empty());
    REQUIRE(changes[m].size() == 1);
    REQUIRE(changes[m][0].removed == std::vector<member_id>{victim});
    // The trace holds the adapted wait limit at the failure, within the bounds.
    REQUIRE(changes[m][0].wait_limit_seconds >= seconds(s.floor));
    REQUIRE(changes[m][0].wait_limit_seconds < seconds(s.ceiling));
    // After the recovery the wait limit is the adapted one again, not the
    // ceiling the recovery ran under.
    REQUIRE(results[m].timeouts.wait_limit < clock_type::duration(s.ceiling));
  }
}

}  // namespace fault_timeout_test

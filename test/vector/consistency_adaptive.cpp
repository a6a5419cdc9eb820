// SPDX-License-Identifier: BSL-1.0
// consistency::adaptive: every member switches mode at the same clock (under
// random delays, with proposals made at different times by different
// members), the gathers of a bsp window are exact, the name excludes the
// current settings, and the controller's rule on synthetic observations.
#include <dml/dml.hpp>

#include "support/catch.hpp"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace inproc = dml::comm::inproc;
namespace c = dml::consistency;
using namespace std::chrono_literals;

namespace {

c::adaptive_settings make(c::adaptive_mode m, std::uint64_t slack = 0, std::uint64_t period = 1) {
  c::adaptive_settings s;
  s.mode = m;
  s.slack = slack;
  s.period = period;
  return s;
}

// One member's run: `rounds` rounds of scatter + gather; every member
// proposes a random mode at random rounds. Returns what it saw.
struct seen {
  std::vector<c::adaptive::change> changes;
  std::vector<c::adaptive::traced_gather> trace;
  int bsp_wrong = 0;  // elements of bsp-window gathers that differ from the exact mean
  std::uint64_t gathers = 0;
  std::string error;
};

template <class Policy>
void switching_member(inproc::context& ctx, const Policy& policy, int rounds, seen& out) {
  auto v = dml::make_vector<double>(ctx, 8, policy);
  const c::adaptive& a = [&]() -> const c::adaptive& {
    if constexpr (std::is_same_v<Policy, c::any>)
      return *v.consistency().held_adaptive();
    else
      return v.consistency();
  }();
  a.set_trace(true);
  std::mt19937_64 rng(1234 + ctx.rank());
  const double n = static_cast<double>(ctx.size());
  for (int r = 1; r <= rounds; ++r) {
    if (rng() % 3 == 0) {
      const auto m = static_cast<c::adaptive_mode>(rng() % 3);
      auto s = make(m, 1 + rng() % 3, 1 + rng() % 4);
      s.balanced = rng() % 2 == 0;  // each member's period() differs then; the settings do not
      a.propose(s);
    }
    for (auto& x : v.span()) x = static_cast<double>(ctx.rank()) + r;
    v.scatter();
    v.gather();
    if (a.trace().back().settings.mode == c::adaptive_mode::bsp) {
      const double want = (n - 1) / 2 + r;  // the mean of rank + r
      for (double x : v.span()) out.bsp_wrong += std::abs(x - want) > 1e-12 ? 1 : 0;
    }
  }
  out.changes = a.changes();
  out.trace = a.trace();
  out.gathers = v.stats().gathers;
}

template <class Policy>
void check_same_clock(std::size_t n, const Policy& policy, int rounds) {
  inproc::options o;
  o.max_random_delay = 200us;
  o.seed = 7 + n;
  std::vector<seen> outs(n);
  inproc::run(
      n, [&](inproc::context& ctx) { switching_member(ctx, policy, rounds, outs[ctx.rank()]); }, o);
  for (std::size_t m = 0; m < n; ++m) {
    INFO("member " << m);
    CHECK(outs[m].gathers == static_cast<std::uint64_t>(rounds));
    CHECK(outs[m].changes == outs[0].changes);  // the same switches at the same clocks
    CHECK(outs[m].trace == outs[0].trace);      // every gather under the same rule as the others'
    CHECK(outs[m].bsp_wrong == 0);
  }
  // The proposals did switch the mode (more than once, through more than one mode).
  CHECK(outs[0].changes.size() >= 2);
  bool non_bsp = false;
  for (const auto& ch : outs[0].changes) {
    CHECK((ch.clock - 1) % 3 == 0);  // only at agreement clocks
    non_bsp = non_bsp || ch.settings.mode != c::adaptive_mode::bsp;
  }
  CHECK(non_bsp);
}

c::adaptive every3() {
  c::adaptive_options o;
  o.every = 3;
  return c::adaptive(o);
}

}  // namespace

TEST_CASE("adaptive: every member switches at the same clock under random delays") {
  check_same_clock(5, every3(), 40);
}

TEST_CASE("adaptive through consistency::any switches at the same clock") {
  check_same_clock(3, c::any(every3()), 25);
}

TEST_CASE("adaptive: the name excludes the current settings, and members that differ are refused") {
  c::adaptive a = every3();
  const std::string before = a.name();
  a.propose(make(c::adaptive_mode::asp));
  CHECK(a.name() == before);
  CHECK(before.find("every 3") != std::string::npos);
  CHECK(c::any(a).name() == before);
  // copies own their state
  c::adaptive b = a;
  b.report_loss(1.0);
  CHECK(b.current() == a.current());

  std::vector<std::string> errors(3);
  inproc::run(3, [&](inproc::context& ctx) {
    c::adaptive_options o;
    o.every = ctx.rank() == 1 ? 4 : 3;
    try {
      auto v = dml::make_vector<double>(ctx, 4, c::adaptive(o));
    } catch (const dml::config_error& e) {
      errors[ctx.rank()] = e.what();
    }
  });
  for (const auto& e : errors) CHECK(e.find("disagree") != std::string::npos);

  c::adaptive_options bad;
  bad.every = 0;
  CHECK_THROWS_AS(c::adaptive(bad), dml::config_error);
}

TEST_CASE("adaptive: a member that fails during the agreement is a peer_failure under abort, not a hang") {
  std::vector<std::string> errors(3);
  inproc::run(3, [&](inproc::context& ctx) {
    dml::fault::set_policy(ctx, dml::fault::policy::abort);
    c::adaptive_options o;
    o.every = 2;
    auto v = dml::make_vector<double>(ctx, 4, c::adaptive(o));
    try {
      for (int r = 1; r <= 6; ++r) {
        if (ctx.rank() == 2 && r == 3) ctx.stop();  // dies before clock 3's agreement
        v.scatter();
        v.gather();
      }
    } catch (const dml::peer_failure& e) {
      errors[ctx.rank()] = e.what();
    }
  });
  CHECK(errors[0].find("abort") != std::string::npos);
  CHECK(errors[1].find("abort") != std::string::npos);
}

TEST_CASE("adaptive: survivors go on under the tolerate policy after a member fails in the agreement") {
  std::vector<int> done(4, 0);
  std::vector<std::size_t> changes(4, 0);
  inproc::run(4, [&](inproc::context& ctx) {
    c::adaptive_options o;
    o.every = 2;
    o.rule_name = "keep";  // only the proposal changes the settings
    o.rule = [](std::span<const c::window_observation>, const c::adaptive_settings& now) { return now; };
    auto v = dml::make_vector<double>(ctx, 4, c::adaptive(o));
    for (int r = 1; r <= 9; ++r) {
      if (ctx.rank() == 3 && r == 5) ctx.stop();  // dies before clock 5's agreement
      if (r == 4 && ctx.rank() == 0) v.consistency().propose(make(c::adaptive_mode::ssp, 2));
      v.scatter();
      v.gather();
    }
    done[ctx.rank()] = 1;
    changes[ctx.rank()] = v.consistency().changes().size();
  });
  CHECK(done[0] + done[1] + done[2] == 3);
  CHECK(changes[0] == 1);  // the proposal survived the failed agreement and was adopted
  CHECK(changes[1] == changes[0]);
  CHECK(changes[2] == changes[0]);
}

// ---- the controller's rule on synthetic observations ------------------------

namespace {
c::window_observation obs(double compute, double exchange, double wait, std::uint64_t clocks,
                          double loss = std::nan("")) {
  c::window_observation o;
  o.compute_seconds = compute;
  o.exchange_seconds = exchange;
  o.wait_seconds = wait;
  o.clocks = clocks;
  o.loss = loss;
  return o;
}
// A controller past its warm-up window (whose decision is always "keep").
c::controller warm(c::controller_options o = {}) {
  c::controller ctl(o);
  std::vector<c::window_observation> first(2, obs(1.0, 0.1, 0.0, 4));
  (void)ctl.decide(first, c::adaptive_settings{});
  return ctl;
}
}  // namespace

TEST_CASE("controller: the first window is warm-up") {
  c::controller ctl;
  std::vector<c::window_observation> w(8, obs(1.0, 0.3, 0.25, 16));
  w[5] = obs(4.0, 0.1, 0.0, 16);
  CHECK(ctl.decide(w, make(c::adaptive_mode::bsp)) == make(c::adaptive_mode::bsp));
  CHECK(ctl.decide(w, make(c::adaptive_mode::bsp)).mode == c::adaptive_mode::ssp);
}

TEST_CASE("controller: a straggler widens the slack, a balanced group narrows it") {
  std::vector<c::window_observation> w(8, obs(1.0, 0.3, 0.25, 16));
  w[5] = obs(4.0, 0.1, 0.0, 16);  // one member 4x slower
  CHECK(c::controller::imbalance(w) == Approx(4.0));
  const auto wide = warm().decide(w, make(c::adaptive_mode::bsp));
  CHECK(wide.mode == c::adaptive_mode::ssp);
  CHECK(wide.slack == 8);  // ceil(16 x 3/4) = 12, capped at max_slack 8
  CHECK(wide.period == 1);

  c::controller ctl = warm();
  std::vector<c::window_observation> even(8, obs(1.0, 0.2, 0.02, 16));  // balanced, nobody waits
  auto s = make(c::adaptive_mode::ssp, 4);
  s = ctl.decide(even, s);
  CHECK(s == make(c::adaptive_mode::ssp, 2));
  s = ctl.decide(even, s);
  CHECK(s == make(c::adaptive_mode::ssp, 1));
  s = ctl.decide(even, s);
  CHECK(s == make(c::adaptive_mode::bsp));

  // between the two ratios nothing changes
  std::vector<c::window_observation> mild(8, obs(1.0, 0.2, 0.15, 16));
  mild[0] = obs(1.3, 0.2, 0.15, 16);
  CHECK(warm().decide(mild, make(c::adaptive_mode::ssp, 3)) == make(c::adaptive_mode::ssp, 3));

  // asp only when allowed and the slack would exceed max_slack
  c::controller_options o;
  o.allow_asp = true;
  o.max_slack = 4;
  CHECK(warm(o).decide(w, make(c::adaptive_mode::bsp)).mode == c::adaptive_mode::asp);
  // a small straggler within max_slack stays ssp
  std::vector<c::window_observation> small(4, obs(1.0, 0.1, 0.05, 4));
  small[2] = obs(2.0, 0.1, 0.0, 4);
  CHECK(warm(o).decide(small, make(c::adaptive_mode::bsp)) == make(c::adaptive_mode::ssp, 2));
}

TEST_CASE(
    "controller: waiting widens the slack, and a relaxed mode that does not pay is reverted and held off") {
  std::vector<c::window_observation> waiting(8,
                                             obs(1.0, 0.8, 0.7, 16));  // wait share 0.39, time/clock 0.1125
  CHECK(c::controller::imbalance(waiting) == Approx(1.0));
  CHECK(c::controller::time_per_clock(waiting) == Approx(1.8 / 16));
  c::controller ctl = warm();
  const auto tried = ctl.decide(waiting, make(c::adaptive_mode::bsp));
  CHECK(tried == make(c::adaptive_mode::ssp, 7));  // ceil(16 x 0.39)
  // the trial's window: no faster per clock -> back to bsp
  CHECK(ctl.decide(waiting, tried) == make(c::adaptive_mode::bsp));
  // held off: still bsp for hold_windows (4) windows despite the waiting
  for (int k = 0; k < 4; ++k)
    CHECK(ctl.decide(waiting, make(c::adaptive_mode::bsp)) == make(c::adaptive_mode::bsp));
  // then tried again, and kept when the time per clock dropped
  CHECK(ctl.decide(waiting, make(c::adaptive_mode::bsp)) == tried);
  std::vector<c::window_observation> faster(8, obs(1.0, 0.3, 0.1, 16));  // time/clock 0.081, wait 0.077
  CHECK(ctl.decide(faster, tried) == tried);
  // some waiting, but below wait_high and above wait_low: the slack stays
  std::vector<c::window_observation> some(8, obs(1.0, 0.3, 0.15, 16));
  CHECK(ctl.decide(some, make(c::adaptive_mode::ssp, 3)) == make(c::adaptive_mode::ssp, 3));
}

TEST_CASE("controller: the exchange share sets the period, and a rising loss tightens") {
  c::controller ctl = warm();
  std::vector<c::window_observation> chatty(4, obs(1.0, 2.0, 0.1, 16));  // (2 - 0.1) / 3 > 0.5
  CHECK(ctl.decide(chatty, make(c::adaptive_mode::bsp, 0, 2)).period == 4);
  CHECK(ctl.decide(chatty, make(c::adaptive_mode::bsp, 0, 8)).period == 8);  // max_period
  // exchanging dominates, waits included: one relaxation at a time, the period first
  std::vector<c::window_observation> waiting(4, obs(1.0, 2.0, 1.9, 16));
  CHECK(c::controller::exchange_share(waiting) == Approx(2.0 / 3));
  CHECK(warm().decide(waiting, make(c::adaptive_mode::bsp, 0, 2)) == make(c::adaptive_mode::bsp, 0, 4));
  // at the longest period the slack widens instead (waiting 63%: ceil(16 x 0.63), capped at 8)
  CHECK(warm().decide(waiting, make(c::adaptive_mode::bsp, 0, 8)) == make(c::adaptive_mode::ssp, 8, 8));
  // a longer period that does not lower the time per local step is reverted
  c::controller p = warm();
  std::vector<c::window_observation> slow_steps(4, obs(2.0, 4.0, 0.1, 16));  // per step: 6/16/4 = 0.094
  CHECK(p.decide(chatty, make(c::adaptive_mode::bsp, 0, 2)).period == 4);    // per step: 3/16/2 = 0.094
  CHECK(p.decide(slow_steps, make(c::adaptive_mode::bsp, 0, 4)).period == 2);
  // hardly any exchanging: the period halves
  std::vector<c::window_observation> quiet(4, obs(1.0, 0.05, 0.01, 16));
  CHECK(warm().decide(quiet, make(c::adaptive_mode::bsp, 0, 4)) == make(c::adaptive_mode::bsp, 0, 2));

  c::controller fresh = warm();
  std::vector<c::window_observation> a(4, obs(1.0, 0.3, 0.1, 16, 1.00));
  std::vector<c::window_observation> b(4, obs(1.0, 0.3, 0.1, 16, 1.25));
  a[1] = obs(4.0, 0.3, 0.1, 16, 1.00);  // a straggler, and
  b[1] = obs(4.0, 0.3, 0.1, 16, 1.25);  // the loss rises 25% in the next window
  const auto first = fresh.decide(a, make(c::adaptive_mode::bsp, 0, 4));
  CHECK(first.mode == c::adaptive_mode::ssp);
  const auto second = fresh.decide(b, first);
  CHECK(second.slack < first.slack);  // divergence wins over the straggler
  CHECK(second.period == 2);
  // no observations: nothing changes
  std::vector<c::window_observation> none(3, obs(0, 0, 0, 0));
  CHECK(fresh.decide(none, first) == first);
}

// ---- balanced periods and short first windows --------------------------------

namespace {
c::adaptive_settings balanced(c::adaptive_mode m = c::adaptive_mode::bsp, std::uint64_t period = 1) {
  c::adaptive_settings s = make(m, 0, period);
  s.balanced = true;
  return s;
}
c::window_observation with_steps(c::window_observation o, std::uint64_t steps) {
  o.steps = steps;
  return o;
}
}  // namespace

TEST_CASE("controller: shares give each member steps in proportion to its speed") {
  std::vector<c::window_observation> w(8, obs(1.0, 0.3, 0.25, 16));
  w[5] = obs(4.0, 0.1, 0.0, 16);  // 4x slower per step
  std::vector<std::uint64_t> want(8, 4);
  want[5] = 1;
  CHECK(c::controller::shares(w, 1, 8) == want);
  // capped at max_share
  w[5] = obs(20.0, 0.1, 0.0, 16);
  std::vector<std::uint64_t> capped(8, 8);
  capped[5] = 1;
  CHECK(c::controller::shares(w, 1, 8) == capped);
  // per local step, not per clock: a member that took 4 steps per clock in
  // 4x the compute time is as fast as one that took 1 in 1x
  std::vector<c::window_observation> even{with_steps(obs(4.0, 0.1, 0.0, 16), 64), obs(1.0, 0.1, 0.0, 16),
                                          with_steps(obs(2.0, 0.1, 0.0, 16), 16)};
  CHECK(c::controller::shares(even, 1, 8) == std::vector<std::uint64_t>{2, 2, 1});
  CHECK(c::controller::imbalance(even) == Approx(2.0));
  CHECK(c::controller::clock_imbalance(even) == Approx(2.0));  // 4 over the lower median 2
  // a member that measured nothing gets 1; observations without steps take the period
  std::vector<c::window_observation> idle{obs(0, 0, 0, 0), obs(1.0, 0.1, 0.0, 4), obs(3.0, 0.1, 0.0, 4)};
  CHECK(c::controller::shares(idle, 2, 8) == std::vector<std::uint64_t>{1, 3, 1});
}

TEST_CASE("controller: with balance allowed a persistent straggler balances the periods first") {
  std::vector<c::window_observation> w(8, obs(1.0, 3.0, 2.9, 16));  // the others wait 72% of their time
  w[5] = obs(4.0, 0.1, 0.0, 16);
  // without balance the waiting lengthens the period (exchanging dominates)
  CHECK(warm().decide(w, make(c::adaptive_mode::bsp)) == make(c::adaptive_mode::bsp, 0, 2));
  c::controller_options o;
  o.balance = true;
  c::controller ctl = warm(o);
  const auto b = ctl.decide(w, make(c::adaptive_mode::bsp));
  CHECK(b == balanced());
  CHECK(b.text() == "bsp/balanced");
  // the trial's window: the fast members took 4 steps per clock in about the
  // straggler's time, waiting little -> per step 4x faster: kept
  std::vector<c::window_observation> after(8, with_steps(obs(4.0, 0.3, 0.1, 16), 64));
  after[5] = with_steps(obs(4.0, 0.3, 0.1, 16), 16);
  CHECK(c::controller::clock_imbalance(after) == Approx(1.0));
  CHECK(ctl.decide(after, b) == b);
  // still a straggler per step, but balanced per clock and nobody waits:
  // neither a slack nor the end of the balance
  CHECK(ctl.decide(after, b) == b);
  // the straggler recovered: no member is slower per step, nobody waits -> back
  std::vector<c::window_observation> recovered(8, with_steps(obs(1.0, 0.3, 0.01, 16), 16));
  CHECK(ctl.decide(recovered, b) == make(c::adaptive_mode::bsp));

  // a balance that did not pay is reverted and held off
  c::controller no_gain = warm(o);
  CHECK(no_gain.decide(w, make(c::adaptive_mode::bsp)) == balanced());
  std::vector<c::window_observation> same(8, with_steps(obs(4.0, 12.0, 11.5, 16), 64));  // per step no faster
  same[5] = with_steps(obs(16.0, 0.1, 0.0, 16), 16);
  CHECK(no_gain.decide(same, balanced()) == make(c::adaptive_mode::bsp));
  CHECK(no_gain.decide(w, make(c::adaptive_mode::bsp)) == make(c::adaptive_mode::bsp));  // held

  // a rising loss ends the balance with the rest of the relaxations
  c::controller rising = warm(o);
  std::vector<c::window_observation> l1(8, with_steps(obs(4.0, 0.3, 0.1, 16, 1.0), 64));
  std::vector<c::window_observation> l2(8, with_steps(obs(4.0, 0.3, 0.1, 16, 1.5), 64));
  (void)rising.decide(l1, balanced(c::adaptive_mode::bsp, 2));
  CHECK(rising.decide(l2, balanced(c::adaptive_mode::bsp, 2)) == make(c::adaptive_mode::bsp));
  // the options name the balance
  CHECK(o.text().find("balance<=8") != std::string::npos);
  CHECK(c::controller_options{}.text().find("balance<=") == std::string::npos);
}

TEST_CASE("adaptive: short first windows double up to `every`") {
  auto agreements = [](std::uint64_t first, std::uint64_t every) {
    c::adaptive_options o;
    o.every = every;
    o.first_window = first;
    const c::adaptive a(o);
    std::vector<std::uint64_t> at;
    for (std::uint64_t t = 0; t <= 40; ++t)
      if (a.agrees_at(t)) at.push_back(t);
    return at;
  };
  CHECK(agreements(1, 8) == std::vector<std::uint64_t>{2, 3, 5, 9, 17, 25, 33});
  CHECK(agreements(3, 8) == std::vector<std::uint64_t>{4, 7, 13, 21, 29, 37});
  CHECK(agreements(2, 3) == std::vector<std::uint64_t>{3, 5, 8, 11, 14, 17, 20, 23, 26, 29, 32, 35, 38});
  CHECK(agreements(0, 8) == std::vector<std::uint64_t>{9, 17, 25, 33});
  CHECK(agreements(8, 8) == agreements(0, 8));
  CHECK(agreements(20, 8) == agreements(0, 8));  // no longer than every
  CHECK(agreements(1, 1) == agreements(0, 1));
  {  // a huge window: the doubling does not overflow into a loop without end
    c::adaptive_options huge;
    huge.every = ~std::uint64_t{0};
    huge.first_window = 1;
    const c::adaptive a(huge);
    CHECK(a.agrees_at(2));
    CHECK(a.agrees_at(3));
    CHECK(!a.agrees_at(4));
    CHECK(!a.agrees_at(~std::uint64_t{0}));
  }
  c::adaptive_options o;
  o.every = 8;
  o.first_window = 1;
  CHECK(c::adaptive(o).name().find("every 8 from 1") != std::string::npos);
  o.start.balanced = true;
  CHECK_THROWS_AS(c::adaptive(o), dml::config_error);
}

TEST_CASE(
    "adaptive: under random delays and proposals every member switches at the same short-window clocks") {
  c::adaptive_options o;
  o.every = 8;
  o.first_window = 1;
  const c::adaptive policy(o);
  const std::size_t n = 4;
  inproc::options io;
  io.max_random_delay = 200us;
  io.seed = 99;
  std::vector<seen> outs(n);
  inproc::run(
      n, [&](inproc::context& ctx) { switching_member(ctx, policy, 40, outs[ctx.rank()]); }, io);
  for (std::size_t m = 0; m < n; ++m) {
    INFO("member " << m);
    CHECK(outs[m].changes == outs[0].changes);
    CHECK(outs[m].trace == outs[0].trace);
    CHECK(outs[m].bsp_wrong == 0);
  }
  CHECK(outs[0].changes.size() >= 2);
  for (const auto& ch : outs[0].changes) CHECK(policy.agrees_at(ch.clock));
}

TEST_CASE("adaptive: balanced periods give a member slower at every step the smallest share") {
  // Member 2 computes 8x as long as the others at every local step; each
  // member takes period() local steps between two exchanges. The controller
  // (balance allowed, windows of 1, 1, 2, then 4 clocks) balances the periods:
  // every member holds the same settings, and the slow member's period is
  // the smallest.
  const std::size_t n = 4;
  std::vector<std::vector<c::adaptive::change>> changes(n);
  std::vector<std::uint64_t> last_period(n), steps(n);
  inproc::run(n, [&](inproc::context& ctx) {
    c::adaptive_options o;
    o.every = 4;
    o.first_window = 1;
    o.control.balance = true;
    auto v = dml::make_vector<double>(ctx, 8, c::adaptive(o));
    const c::adaptive& a = v.consistency();
    const auto step = ctx.rank() == 2 ? 16ms : 2ms;
    for (int r = 1; r <= 24; ++r) {
      for (std::uint64_t k = 0; k < a.period(); ++k, ++steps[ctx.rank()]) std::this_thread::sleep_for(step);
      v.scatter();
      v.gather();
    }
    changes[ctx.rank()] = a.changes();
    last_period[ctx.rank()] = a.period();
  });
  for (std::size_t m = 0; m < n; ++m) CHECK(changes[m] == changes[0]);
  REQUIRE(!changes[0].empty());
  CHECK(changes[0].front().settings.balanced);
  CHECK(changes[0].front().clock == 3);  // the first decision, from clock 2 (clock 1 is the warm-up)
  INFO("periods " << last_period[0] << " " << last_period[1] << " " << last_period[2] << " "
                  << last_period[3]);
  CHECK(last_period[2] == changes[0].back().settings.period);  // the slowest member's share is 1
  for (std::size_t m : {0u, 1u, 3u}) {
    CHECK(last_period[m] >= 3 * last_period[2]);
    CHECK(steps[m] > 2 * steps[2]);
  }
}

TEST_CASE("adaptive: a caller's rule that balances gets shares capped at control.max_share") {
  // The rule balances from the first decision on; member 2 computes 8x as
  // long per local step, so the others' shares would be 8, but the cap is 2.
  const std::size_t n = 4;
  std::vector<std::uint64_t> last_period(n);
  std::vector<bool> balanced_at_end(n);
  inproc::run(n, [&](inproc::context& ctx) {
    c::adaptive_options o;
    o.every = 4;
    o.first_window = 1;
    o.control.max_share = 2;
    o.rule = [](std::span<const c::window_observation>, const c::adaptive_settings&) { return balanced(); };
    o.rule_name = "always balanced";
    auto v = dml::make_vector<double>(ctx, 8, c::adaptive(o));
    const c::adaptive& a = v.consistency();
    const auto step = ctx.rank() == 2 ? 8ms : 1ms;
    for (int r = 1; r <= 8; ++r) {
      for (std::uint64_t k = 0; k < a.period(); ++k) std::this_thread::sleep_for(step);
      v.scatter();
      v.gather();
    }
    last_period[ctx.rank()] = a.period();
    balanced_at_end[ctx.rank()] = a.current().balanced;
  });
  for (std::size_t m = 0; m < n; ++m) {
    INFO("member " << m);
    CHECK(balanced_at_end[m]);
    CHECK(last_period[m] == (m == 2 ? 1u : 2u));
  }
}

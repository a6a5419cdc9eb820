// SPDX-License-Identifier: BSL-1.0
// One tuning round on a toy problem whose best setting is known: gradient
// descent on f(w) = w^2 / 2 converges fastest with step 1, diverges past 2.
// Three in-process members run it (each on its own copy of w, agreeing on
// the loss); all must pick the same setting, the kept state must be that
// branch's state after its trial, diverged settings must lose, and the
// trial length must double while nothing converges.
#include <dml/dml.hpp>
#include <dml/tune.hpp>

#include "support/catch.hpp"

#include <array>
#include <cmath>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

// This file's helpers and tests, apart from the other sources of its
// executable (tests are compiled several files at a time).
namespace tune_tuner_test {

namespace {
namespace inproc = dml::comm::inproc;
constexpr std::size_t members = 3;

/// Trains w for `clocks` steps with step lr; the agreed loss per step.
dml::tune::trace descend(inproc::context& c, std::vector<double>& w, double lr, std::size_t clocks) {
  dml::tune::trace t;
  std::vector<double> losses;
  for (std::size_t k = 0; k < clocks; ++k) {
    losses.push_back(0.5 * w[0] * w[0]);  // the loss the step starts from
    w[0] -= lr * w[0];
    t.time.push_back(double(k + 1));
  }
  dml::tune::agree_mean(c, losses);
  t.loss = losses;
  return t;
}
}  // namespace

TEST_CASE("a tuning round picks the fastest converging setting on every member and keeps its state") {
  std::array<dml::tune::result, members> results;
  std::array<std::vector<double>, members> kept;
  std::array<std::vector<std::string>, members> labels;
  inproc::run(members, [&](inproc::context& c) {
    const std::size_t r = c.rank();
    std::vector<double> w{1.0 + 0.5 * double(r)};
    dml::tune::branches br(c, w);
    dml::tune::space sp;
    sp.range("lr", 0.01, 10.0, dml::tune::scale::log);
    dml::tune::grid_searcher g(sp, 7);  // 0.01, 0.0316, 0.1, 0.316, 1, 3.16, 10
    dml::tune::options o;
    o.initial_clocks = 2;
    o.max_trials = 8;
    o.on_trial = [&](const dml::tune::trial& t) {
      labels[r].emplace_back(dml::tune::to_string(t.progress.verdict));
    };
    auto run = [&](const dml::tune::setting& s, std::size_t clocks) { return descend(c, w, s[0], clocks); };
    // The user's setting first: 3.16 > 2 diverges in magnitude (unstable).
    results[r] = dml::tune::tune(g, br, run, 0, o, dml::tune::setting{std::pow(10.0, 0.5)});
    kept[r] = w;
  });
  for (std::size_t r = 0; r < members; ++r) {
    INFO("member " << r);
    const auto& res = results[r];
    CHECK(res.found);
    REQUIRE(res.best.size() == 1);
    CHECK(res.best[0] == Approx(1.0));
    CHECK(res.best == results[0].best);
    CHECK(labels[r] == labels[0]);
    // The kept state is the branch's own: w after trial_clocks steps of lr 1 is 0.
    CHECK(kept[r][0] == 0.0);
    CHECK(res.trials.front().progress.verdict == dml::tune::label::unstable);
    std::size_t kept_count = 0;
    for (const auto& t : res.trials) kept_count += t.kept;
    CHECK(kept_count == 1);
  }
  // The user's 3.16 alone does not converge, so the first length (2) doubled.
  CHECK(results[0].trial_clocks >= 2);
}

TEST_CASE("stalled: a flat trace stalls, a falling one does not") {
  dml::tune::trace t;
  for (int i = 0; i < 20; ++i) {
    t.loss.push_back(1.0 / (1 + i));
    t.time.push_back(i);
  }
  CHECK_FALSE(dml::tune::stalled(t));
  t.loss.assign(20, 0.25);
  CHECK(dml::tune::stalled(t));
}

TEST_CASE("near-ties between converging branches go to the fewer wall seconds") {
  // One member; two settings of equal progress per step whose traces
  // report different wall seconds: with tie_spread the cheaper one wins,
  // without it the first (equal speed) stays.
  for (const double spread : {0.0, 0.05}) {
    dml::tune::result res;
    inproc::run(1, [&](inproc::context& c) {
      std::vector<double> w{1.0};
      dml::tune::branches br(c, w);
      dml::tune::space sp;
      sp.range("lr", 0.1, 1.0).choice("cost", {1, 2});
      dml::tune::list_searcher l(sp, {{0.5, 1}});
      dml::tune::options o;
      o.initial_clocks = 4;
      o.tie_spread = spread;
      auto run = [&](const dml::tune::setting& s, std::size_t clocks) {
        auto t = descend(c, w, s[0], clocks);
        t.seconds = s[1] * static_cast<double>(clocks);
        return t;
      };
      res = dml::tune::tune(l, br, run, 0, o, dml::tune::setting{0.5, 2});
    });
    INFO("tie_spread " << spread);
    REQUIRE(res.trials.size() == 2);
    CHECK(res.best[1] == (spread > 0 ? 1.0 : 2.0));
  }
}

namespace {
/// A scripted run for one member: setting s[0] selects the trace. 1: a
/// steady, slow fall; 2: a fast fall with one small jump (unstable, but
/// the higher speed); 3: a loss that rises above the fork.
dml::tune::trace scripted(std::vector<double>& w, double which, std::size_t clocks) {
  dml::tune::trace t;
  for (std::size_t k = 0; k < clocks; ++k) {
    const double i = w[1] + double(k);
    double loss = 10.0;
    if (which == 1) loss = 10.0 - 0.1 * i;
    if (which == 2) loss = 10.0 - 0.5 * i + (static_cast<std::size_t>(i) == 3 ? 1.0 : 0.0);
    if (which == 3) loss = 10.0 + i;
    t.loss.push_back(loss);
    t.time.push_back(double(k + 1));
  }
  w[0] = which;
  w[1] += double(clocks);
  return t;
}
}  // namespace

TEST_CASE("an unstable branch with the higher speed beats a slower converging one") {
  dml::tune::result res;
  std::vector<std::string> labels;
  std::vector<double> kept;
  inproc::run(1, [&](inproc::context& c) {
    std::vector<double> w{0.0, 0.0};  // the last setting run, the clocks run
    dml::tune::branches br(c, w);
    dml::tune::space sp;
    sp.choice("trace", {1, 2, 3});
    dml::tune::list_searcher l(sp, {{2}});
    dml::tune::options o;
    o.initial_clocks = 10;
    o.max_clocks = 10;
    o.on_trial = [&](const dml::tune::trial& t) {
      labels.emplace_back(dml::tune::to_string(t.progress.verdict));
    };
    auto run = [&](const dml::tune::setting& s, std::size_t clocks) { return scripted(w, s[0], clocks); };
    res = dml::tune::tune(l, br, run, 0, o, dml::tune::setting{1});
    kept = w;
  });
  REQUIRE(labels.size() == 2);
  CHECK(labels[0] == "converging");
  CHECK(labels[1] == "unstable");
  REQUIRE(res.trials.size() == 2);
  CHECK(res.trials[1].progress.speed > res.trials[0].progress.speed);
  CHECK(res.best == dml::tune::setting{2});
  CHECK(res.trials[1].kept);
  CHECK(kept[0] == 2.0);  // the kept state is branch 2's
}

TEST_CASE("a branch whose loss rose does not double the trial length") {
  // The first setting rises above its fork; the second converges at the
  // first length. Doubling for the first would have run the second at 4.
  dml::tune::result res;
  inproc::run(1, [&](inproc::context& c) {
    std::vector<double> w{0.0, 0.0};
    dml::tune::branches br(c, w);
    dml::tune::space sp;
    sp.choice("trace", {1, 2, 3});
    dml::tune::list_searcher l(sp, {{1}});
    dml::tune::options o;
    o.initial_clocks = 10;
    o.max_clocks = 40;
    auto run = [&](const dml::tune::setting& s, std::size_t clocks) { return scripted(w, s[0], clocks); };
    res = dml::tune::tune(l, br, run, 0, o, dml::tune::setting{3});
  });
  REQUIRE(res.trials.size() == 2);
  CHECK(res.trial_clocks == 10);
  CHECK(res.trials[0].clocks == 10);
  CHECK(res.best == dml::tune::setting{1});
}

namespace {
/// One member's view of a round on the toy problem of the first test, with
/// the clocks run() was asked for per setting.
struct toy_round {
  dml::tune::result res;
  std::vector<double> kept;
  std::vector<std::pair<double, std::size_t>> runs;  // (lr, clocks) per run() call
  std::vector<std::string> labels;
};

/// lr 1 converges at once, 0.1 slowly, 3.16 and 10 grow (|1 - lr| > 1);
/// `nan_lr`, when given, replaces 0.3 and reports NaN for every loss of a
/// run() call but the first.
toy_round toy(std::size_t check_clocks, double stop_above, double nan_lr = -1, double behind = 0) {
  std::array<toy_round, members> out;
  inproc::run(members, [&](inproc::context& c) {
    const std::size_t r = c.rank();
    std::vector<double> w{1.0 + 0.5 * double(r)};
    dml::tune::branches br(c, w);
    dml::tune::space sp;
    sp.range("lr", 0.01, 10.0, dml::tune::scale::log);
    dml::tune::list_searcher l(sp, {{0.1}, {1.0}, {nan_lr > 0 ? nan_lr : 0.3}, {std::pow(10.0, 0.5)}});
    dml::tune::options o;
    o.initial_clocks = 8;
    o.max_clocks = 8;
    o.check_clocks = check_clocks;
    o.stop_above = stop_above;
    o.behind = behind;
    o.on_trial = [&](const dml::tune::trial& t) {
      out[r].labels.emplace_back(dml::tune::to_string(t.progress.verdict));
    };
    auto run = [&](const dml::tune::setting& s, std::size_t clocks) {
      out[r].runs.emplace_back(s[0], clocks);
      dml::tune::trace t = descend(c, w, s[0], clocks);
      if (s[0] == nan_lr)
        for (std::size_t k = 0; k < t.loss.size(); ++k)
          if (k > 0) t.loss[k] = std::nan("");
      return t;
    };
    out[r].res = dml::tune::tune(l, br, run, 0, o, dml::tune::setting{10.0});
    out[r].kept = w;
  });
  for (std::size_t r = 1; r < members; ++r) {
    INFO("member " << r);
    CHECK(out[r].labels == out[0].labels);
    CHECK(out[r].res.best == out[0].res.best);
  }
  return out[0];
}

std::size_t clocks_of(const toy_round& t, double lr) {
  std::size_t n = 0;
  for (const auto& [x, clocks] : t.runs)
    if (x == lr) n += clocks;
  return n;
}
}  // namespace

TEST_CASE("a trial whose loss runs away once the length is decided stops after its piece, diverged") {
  const toy_round t = toy(2, 2.0);
  // lr 10 multiplies the loss by 81 per clock, 3.16 by 4.7: both pass twice
  // the fork's loss within the first piece of 2 clocks. lr 10 comes first,
  // while the length is being decided: it runs its trial (a loss that came
  // back below the fork's would double the length for all); 3.16 comes
  // after lr 0.1 decided the length and stops.
  CHECK(clocks_of(t, 10.0) == 8);
  CHECK(clocks_of(t, std::pow(10.0, 0.5)) == 2);
  // The others run the whole trial, in pieces of 2.
  CHECK(clocks_of(t, 1.0) == 8);
  CHECK(clocks_of(t, 0.1) == 8);
  for (const auto& [x, clocks] : t.runs) CHECK(clocks <= 2);
  REQUIRE(t.res.trials.size() == 5);
  CHECK_FALSE(t.res.trials[0].stopped);
  CHECK(t.res.trials[0].progress.speed == 0);
  CHECK(t.res.trials[4].stopped);
  CHECK(t.res.trials[4].clocks == 2);
  CHECK(t.res.trials[4].progress.verdict == dml::tune::label::diverged);
  CHECK(t.res.trials[4].progress.speed == 0);
  CHECK_FALSE(t.res.trials[1].stopped);
  CHECK(t.res.best == dml::tune::setting{1.0});
  CHECK(t.res.trial_clocks == 8);
  CHECK(t.kept[0] == 0.0);  // lr 1's branch
}

TEST_CASE("without stop_above only a non-finite loss stops a trial") {
  const toy_round t = toy(2, 0.0, 0.3);
  CHECK(clocks_of(t, 10.0) == 8);  // grows, but stays finite: runs on
  CHECK(clocks_of(t, 0.3) == 2);   // NaN from its second clock
  REQUIRE(t.res.trials.size() == 5);
  CHECK_FALSE(t.res.trials[0].stopped);
  CHECK(t.res.trials[3].values == dml::tune::setting{0.3});
  CHECK(t.res.trials[3].stopped);
  CHECK(t.res.trials[3].progress.verdict == dml::tune::label::diverged);
  CHECK(t.res.best == dml::tune::setting{1.0});
}

TEST_CASE("a trial run in pieces gives the round of a trial run at once") {
  const toy_round whole = toy(0, 0.0), pieces = toy(3, 0.0);  // 8 = 3 + 3 + 2
  CHECK(clocks_of(pieces, 0.1) == 8);
  CHECK(pieces.runs.size() > whole.runs.size());
  REQUIRE(pieces.res.trials.size() == whole.res.trials.size());
  for (std::size_t i = 0; i < whole.res.trials.size(); ++i) {
    INFO("trial " << i);
    const auto &a = whole.res.trials[i], &b = pieces.res.trials[i];
    CHECK(a.values == b.values);
    CHECK(a.clocks == b.clocks);
    CHECK(a.elapsed == b.elapsed);
    CHECK(a.progress.verdict == b.progress.verdict);
    CHECK(a.progress.speed == b.progress.speed);  // exactly: the same trace
    CHECK(a.progress.last == b.progress.last);
  }
  CHECK(pieces.res.best == whole.res.best);
  CHECK(pieces.kept == whole.kept);
}

TEST_CASE("a piece of trace starts where the previous one's work ended (span)") {
  dml::tune::trace whole;
  // Losses measured before each of two units of 4 clocks: at 1 and 5; the
  // piece's work reaches 8.
  const dml::tune::trace piece{{3.0, 2.0}, {1.0, 5.0}, 0.5, 8.0};
  dml::tune::detail::append(whole, piece);
  dml::tune::detail::append(whole, piece);
  CHECK(whole.time == std::vector<double>{1.0, 5.0, 9.0, 13.0});
  CHECK(whole.span == 16.0);
  CHECK(whole.seconds == 1.0);
  // Without a span the last time is the end, as before.
  dml::tune::trace bare;
  dml::tune::detail::append(bare, dml::tune::trace{{3.0, 2.0}, {1.0, 5.0}, 0.0, 0.0});
  dml::tune::detail::append(bare, dml::tune::trace{{3.0, 2.0}, {1.0, 5.0}, 0.0, 0.0});
  CHECK(bare.time == std::vector<double>{1.0, 5.0, 6.0, 10.0});
}

TEST_CASE("a trial behind the best in the second half of its trial stops and cannot win") {
  // lr 0.1 decides the length (8); in the search that follows lr 1 leads
  // (its loss is 0 after one clock), lr 0.3 follows at 0.7^2 per clock: at
  // clock 4 its loss is 0.058 of the fork's, above lr 1's 0 by more than
  // 1 % of lr 1's fall (the whole fork's loss).
  const toy_round off = toy(2, 2.0, -1, 0.0), on = toy(2, 2.0, -1, 0.01);
  CHECK(clocks_of(off, 0.3) == 8);
  CHECK(clocks_of(on, 0.3) == 6);  // the piece from clock 4 is its last
  CHECK(clocks_of(on, 1.0) == 8);  // leading: runs on
  CHECK(clocks_of(on, 0.1) == 8);  // before the length was decided: no rival
  REQUIRE(on.res.trials.size() == 5);
  const auto& t = on.res.trials[3];
  CHECK(t.values == dml::tune::setting{0.3});
  CHECK(t.behind);
  CHECK(t.stopped);
  CHECK(t.progress.speed == 0);
  CHECK_FALSE(off.res.trials[3].behind);
  CHECK(off.res.trials[3].progress.speed > 0);
  CHECK(on.res.best == dml::tune::setting{1.0});
  CHECK(on.kept == off.kept);
  // A lag of less than the margin (0.058 < 10 %) does not stop it.
  CHECK(clocks_of(toy(2, 2.0, -1, 0.1), 0.3) == 8);
}

}  // namespace tune_tuner_test

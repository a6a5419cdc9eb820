// SPDX-License-Identifier: BSL-1.0
// The --tune driver (tune_driver.hpp): its helpers on edge cases and bad
// input (the progress points per unit of work, the progress slice, the
// search space and the round plans), and the re-tuning on stall: on a
// synthetic problem whose every setting starts to raise the loss after a
// given amount of training, a further tuning round runs and is reported;
// on the same problem without that turn, none does.
#include "tune_driver.hpp"

#include "support/catch.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

namespace {

using trainer::points_for;
using trainer::progress_slice;

std::vector<std::size_t> iota(std::size_t n) {
  std::vector<std::size_t> v(n);
  std::iota(v.begin(), v.end(), std::size_t{100});
  return v;
}

}  // namespace

TEST_CASE("points_for: one point per unit of work, at the first clock past each multiple") {
  CHECK(points_for(0, 16, 16).empty());
  CHECK(points_for(1, 16, 16) == std::vector<std::size_t>{0});
  CHECK(points_for(1, 1, 1000) == std::vector<std::size_t>{0});
  // cb == unit or larger: every clock is a point
  CHECK(points_for(4, 16, 16) == std::vector<std::size_t>{0, 1, 2, 3});
  CHECK(points_for(3, 64, 16) == std::vector<std::size_t>{0, 1, 2});
  // cb a quarter of the unit: every fourth clock
  CHECK(points_for(9, 4, 16) == std::vector<std::size_t>{0, 4, 8});
  // uneven: clocks start at 0, 24, 48, 72, 96, 120, 144, 168 samples; the
  // first at or past 64 is 72, past 128 is 144
  CHECK(points_for(8, 24, 64) == std::vector<std::size_t>{0, 3, 6});
  // a clock that jumps over two multiples gives one point, not two
  CHECK(points_for(3, 40, 16) == std::vector<std::size_t>{0, 1, 2});
  CHECK_THROWS_AS(points_for(4, 0, 16), dml::config_error);
  CHECK_THROWS_AS(points_for(4, 16, 0), dml::config_error);
}

TEST_CASE("progress_slice: equal disjoint parts of the order's front, one per member") {
  const std::vector<std::size_t> order = iota(10);
  // half a unit per member: 2 each
  CHECK(progress_slice(order, 3, 0, 4) == std::vector<std::size_t>{100, 101});
  CHECK(progress_slice(order, 3, 1, 4) == std::vector<std::size_t>{102, 103});
  CHECK(progress_slice(order, 3, 2, 4) == std::vector<std::size_t>{104, 105});
  // a unit of 1 (or 0) still gives each member one sample
  CHECK(progress_slice(order, 3, 2, 1) == std::vector<std::size_t>{102});
  CHECK(progress_slice(order, 3, 2, 0) == std::vector<std::size_t>{102});
  // a large unit is capped at a member's share of the order (10 / 3 = 3):
  // the parts stay equal and inside the order
  CHECK(progress_slice(order, 3, 0, 1000) == std::vector<std::size_t>{100, 101, 102});
  CHECK(progress_slice(order, 3, 2, 1000) == std::vector<std::size_t>{106, 107, 108});
  // one member, one sample
  CHECK(progress_slice(iota(1), 1, 0, 8) == std::vector<std::size_t>{100});
  // bad input
  CHECK_THROWS_AS(progress_slice(order, 0, 0, 4), dml::config_error);
  CHECK_THROWS_AS(progress_slice(order, 3, 3, 4), dml::config_error);
  CHECK_THROWS_AS(progress_slice(iota(2), 3, 0, 4), dml::config_error);
  CHECK_THROWS_AS(progress_slice({}, 1, 0, 4), dml::config_error);
}

TEST_CASE("make_tune_space: lr, cb-size, then momentum and staleness when they apply") {
  trainer::settings s;
  s.lr = 0.5f;
  s.cb_size = 16;
  s.consistency = "bsp";
  {
    const auto t = trainer::make_tune_space(s, 1000);
    REQUIRE(t.space.size() == 3);
    CHECK(t.space[0].low == Approx(0.5e-5));
    CHECK(t.space[0].high == Approx(50.0));
    CHECK(t.space[1].choices == std::vector<double>{4, 8, 16, 32, 64});
    CHECK_FALSE(t.momentum);
    REQUIRE(t.staleness == std::size_t{2});
    CHECK(t.space[2].choices == std::vector<double>{0, 1, 3, 7});
    CHECK(t.space.contains(t.start));
    CHECK(t.start == dml::tune::setting{0.5, 16, 0});
  }
  {  // momentum before staleness; the given momentum is among the choices
    s.consistency = "ssp";
    const auto t = trainer::make_tune_space(s, 20, 0.8);
    REQUIRE(t.space.size() == 4);
    CHECK(t.space[1].choices == std::vector<double>{4, 8, 16});  // at most max_cb = 20
    REQUIRE(t.momentum == std::size_t{2});
    CHECK(t.space[2].choices == std::vector<double>{0, 0.5, 0.8, 0.9, 0.95});
    REQUIRE(t.staleness == std::size_t{3});
    CHECK(t.space[3].choices == std::vector<double>{0, 1, 3, 7, 2});
    CHECK(t.start == dml::tune::setting{0.5, 16, 0.8, 2});
  }
  {  // asp: the consistency is kept, no staleness; a cb-size of 1
    s.consistency = "asp";
    s.cb_size = 1;
    const auto t = trainer::make_tune_space(s, 1);
    CHECK(t.space.size() == 2);
    CHECK(t.space[1].choices == std::vector<double>{1});
    CHECK_FALSE(t.staleness);
  }
  s.cb_size = 16;
  CHECK_THROWS_AS(trainer::make_tune_space(s, 8), dml::config_error);  // cb-size above a member's share
  s.cb_size = 0;
  CHECK_THROWS_AS(trainer::make_tune_space(s, 8), dml::config_error);
  s.cb_size = 4;
  CHECK_THROWS_AS(trainer::make_tune_space(s, 8, 1.0), dml::config_error);
  CHECK_THROWS_AS(trainer::make_tune_space(s, 8, -0.1), dml::config_error);
}

TEST_CASE("lr_sweep and refine: plans inside the space, the current setting first, no repeats") {
  trainer::settings s;
  s.lr = 0.1f;
  s.cb_size = 8;
  s.consistency = "bsp";
  const auto t = trainer::make_tune_space(s, 64, 0.5);
  const auto sweep = trainer::lr_sweep(t.start);
  REQUIRE(sweep.size() == 11);
  CHECK(sweep.front() == t.start);
  for (const auto& x : sweep) {
    CHECK(t.space.contains(x));
    CHECK(std::vector<double>(x.begin() + 1, x.end()) ==
          std::vector<double>(t.start.begin() + 1, t.start.end()));
  }
  CHECK_THROWS_AS(trainer::lr_sweep({}), dml::config_error);

  auto distinct = [](const std::vector<dml::tune::setting>& plan) {
    for (std::size_t i = 0; i < plan.size(); ++i)
      for (std::size_t j = 0; j < i; ++j)
        if (plan[i] == plan[j]) return false;
    return true;
  };
  const auto lr_only = trainer::refine(t, t.start, false);
  CHECK(lr_only.size() == 5);
  CHECK(lr_only.front() == t.start);
  CHECK(distinct(lr_only));
  for (const auto& x : lr_only)
    CHECK(std::vector<double>(x.begin() + 1, x.end()) == std::vector<double>{8, 0.5, 0});

  const auto all = trainer::refine(t, t.start, true);
  CHECK(all.front() == t.start);
  CHECK(distinct(all));
  std::size_t momenta = 0;
  for (const auto& x : all) {
    CHECK(t.space.contains(x));
    if (x[2] != 0.5) {  // another momentum: the same lr / (1 - momentum), the rest unchanged
      ++momenta;
      CHECK(x[0] / (1 - x[2]) == Approx(0.1 / 0.5));
      CHECK(x[1] == 8);
      CHECK(x[3] == 0);
    }
  }
  CHECK(momenta == 3);  // 0, 0.9, 0.95
  // at the top of the lr range the plan is clamped into it, and repeats go
  const dml::tune::setting top{t.space[0].high, 8, 0.5, 0};
  for (const auto& x : trainer::refine(t, top, true)) CHECK(x[0] <= t.space[0].high);
  CHECK(distinct(trainer::refine(t, top, true)));
  CHECK_THROWS_AS(trainer::refine(t, dml::tune::setting{0.1, 8}, true), dml::config_error);
}

namespace {

// A synthetic trainer for run_tuned: the model is {loss, samples trained}.
// Each sample lowers the loss by lr / 1000 -- the higher the rate, the
// faster it falls, steadily (converging) -- until `turn` samples per member
// have been trained; from there on every setting raises it (as a rate that
// turned too large once training moved on). The counter is part of the
// model, so branches restore it with the loss. With `variant`:
// `blowup`: a base rate of 0.1 or more adds 5 per sample (the loss passes
// twice its start within the first piece of a trial); `uneven`: member r's
// steps are (1 + r) times as large, so the average matters; `fresh`: the
// driver builds a vector per trial piece and stretch instead of reusing.
struct synthetic {
  bool blowup = false, uneven = false, fresh = false;
  std::string consistency = "bsp";
};
struct synthetic_run {
  trainer::tune_report report;
  std::vector<float> model;  // member 0's at the end
};
synthetic_run run_synthetic(double turn, const synthetic& variant = {}) {
  trainer::settings s;
  s.lr = 0.01f;
  s.cb_size = 1;
  s.epochs = 1;
  s.consistency = variant.consistency;
  s.slack = 1;
  constexpr std::size_t members = 2, n = 2000;  // 1000 samples, units, per member
  std::array<trainer::tune_report, members> reports;
  std::array<std::vector<float>, members> models;
  dml::comm::inproc::run(members, [&](dml::comm::inproc::context& c) {
    dml::comm::any comm(c);
    std::vector<float> model{10.0f, 0.0f};
    const float scale = variant.uneven ? 1.0f + static_cast<float>(c.rank()) : 1.0f;
    auto step = [&](trainer::tuned_step st, std::span<const std::size_t> samples) {
      const auto k = static_cast<float>(samples.size());
      model[1] += k;
      if (variant.blowup && st.lr >= 0.1f)
        model[0] += 5.0f * k;
      else
        model[0] += (model[1] > turn ? 1.0f : -1.0f) * st.lr * 1e-3f * k * scale;
    };
    auto evaluate = [&](std::span<const std::size_t>) { return static_cast<double>(model[0]); };
    trainer::tuned_state state{model};
    state.fresh_vectors = variant.fresh;
    reports[c.rank()] = trainer::run_tuned(comm, trainer::chosen_topology(s), s, n, state, step, evaluate);
    models[c.rank()] = model;
  });
  for (std::size_t r = 1; r < members; ++r) {
    CHECK(reports[r].rounds == reports[0].rounds);
    CHECK(reports[r].retuned_at == reports[0].retuned_at);
    CHECK(reports[r].chosen == reports[0].chosen);
    CHECK(reports[r].stopped == reports[0].stopped);
    CHECK(reports[r].ran_away == reports[0].ran_away);
  }
  return {reports[0], models[0]};
}

}  // namespace

TEST_CASE("run_tuned re-tunes when the loss stalls, and reports it") {
  // The two first rounds take 8 + 16 units; the stall check looks at 8
  // stretches of 16 units, so the turn at 100 falls inside its first look.
  const auto stalled = run_synthetic(100).report;
  CHECK(stalled.rounds >= 3);
  REQUIRE(stalled.retuned_at.size() == stalled.rounds - 2);
  CHECK(stalled.retuned_at.front() > 100);
  CHECK(stalled.retuned_at.front() <= 1000);

  // Without the turn the loss keeps falling: two rounds, no re-tuning.
  const auto steady = run_synthetic(std::numeric_limits<double>::infinity()).report;
  CHECK(steady.rounds == 2);
  CHECK(steady.retuned_at.empty());
  CHECK(steady.chosen.size() == 3);
}

TEST_CASE("run_tuned stops a trial whose loss runs away and does not choose it") {
  const double never = std::numeric_limits<double>::infinity();
  const auto quiet = run_synthetic(never).report;
  CHECK(quiet.ran_away == 0);
  const auto blown = run_synthetic(never, {.blowup = true}).report;
  // The sweep's lr x 10 = 0.1 (and x 10^1/2 in later rounds' plans, when
  // they reach 0.1) adds 5 per sample: stopped after its first piece.
  CHECK(blown.ran_away >= 1);
  CHECK(blown.chosen[trainer::tune_space::lr] < 0.1);
  CHECK(blown.bytes_sent > 0);
}

TEST_CASE("run_tuned: the reused bsp vector gives exactly the run of fresh vectors") {
  const double never = std::numeric_limits<double>::infinity();
  const auto reused = run_synthetic(never, {.uneven = true});
  const auto fresh = run_synthetic(never, {.uneven = true, .fresh = true});
  CHECK(reused.report.chosen == fresh.report.chosen);
  CHECK(reused.report.trials == fresh.report.trials);
  CHECK(reused.report.rounds == fresh.report.rounds);
  REQUIRE(reused.model.size() == fresh.model.size());
  for (std::size_t i = 0; i < reused.model.size(); ++i) CHECK(reused.model[i] == fresh.model[i]);  // bits
  // The averaging mattered: member 1's steps are twice member 0's.
  const auto even = run_synthetic(never);
  CHECK(even.model[0] != reused.model[0]);
}

TEST_CASE("run_tuned under ssp: the members agree while stale vectors are kept or rebuilt") {
  const auto r = run_synthetic(std::numeric_limits<double>::infinity(), {.consistency = "ssp"});
  CHECK(r.report.rounds == 2);
  CHECK(r.report.chosen.size() == 3);
  CHECK(r.report.bytes_sent > 0);
}

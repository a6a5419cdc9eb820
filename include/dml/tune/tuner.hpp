// SPDX-License-Identifier: BSL-1.0
/// @file
/// `dml::tune::tune`: one round of online tuning. From the current training
/// state (saved as the parent branch) it forks trial branches, runs each
/// with a proposed setting for a short trial, summarizes each branch's loss
/// trace (dml/tune/progress.hpp) and leaves the state of the best branch in
/// place, so the winning trial's training is kept.
///
/// The trial length starts at `options::initial_clocks` and doubles (the
/// branches tried so far continue from their own snapshots to the new
/// length) until some branch is `converging` -- but only while some branch
/// falls below its fork's loss (a setting whose loss rose is not helped by
/// a longer trial); with that length the search
/// goes on until the searcher ends, `max_trials` settings were tried, or
/// the best `stop_top` (non-zero) speeds lie within `stop_spread` of each
/// other. The best branch is the one with the highest speed (the label only
/// decides the trial length; detail::better).
///
/// The caller's `run(setting, clocks)` trains the current state for
/// `clocks` clocks with the setting and returns the trace of those clocks:
/// one loss and one time per clock, times counted from the start of that
/// call. The trace must be agreed (the same on every member, e.g. through
/// dml::tune::agree_mean), and so must the searcher's proposals (the same
/// seed everywhere): every decision here is a function of them, so every
/// member takes the same branch without a coordinator.
///
/// A branch is summarized from its fork (`summarize_from`, with the first
/// loss of its trace -- the loss of the forked state -- at time 0): a
/// branch that ends above the loss it was forked at is not converging, and
/// one that dropped the loss within its first window keeps that drop.
///
/// Stopping runaway trials: with `options::check_clocks` a trial runs in
/// pieces of that many clocks, and after each piece a branch whose loss is
/// not finite -- or, once the trial length is decided, with
/// `options::stop_above`, above that multiple of its fork's loss -- is
/// stopped and labelled `diverged` (speed 0), without running the rest of
/// its trial; with `options::behind`, so is one that lags the best branch
/// in the second half of its trial (speed 0). The thesis labels only overflowed numbers
/// diverged; a loss that doubled within a trial did not come back to a
/// positive speed in dml-logreg's or dml-mlp's measured rounds
/// (docs/tuning.md), and such trials were a quarter of a round's work.
///
/// Re-tuning: call `tune` again when `stalled(trace)` says the current
/// setting stopped converging.
#pragma once

#include <dml/error.hpp>
#include <dml/fwd.hpp>
#include <dml/tune/progress.hpp>
#include <dml/tune/searcher.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <utility>
#include <vector>

DML_BEGIN_NAMESPACE
namespace tune {

/// A trace: losses and the times they were taken at. The time may be any
/// measure of work that grows along the trace (seconds, clocks, examples
/// processed); speeds are loss per that unit. `seconds`, when the caller
/// fills it in, is the agreed wall time the stretch took: it breaks ties
/// between branches that progress alike (dml::tune::options::tie_spread).
struct trace {
  std::vector<double> loss, time;
  double seconds = 0;
  /// How far the stretch reached in the time unit, when the caller gives it
  /// (0: its last time). A trace whose points lie before the end of its
  /// work (a loss measured before each unit of work) gives the whole work
  /// here, so that the next piece of the same branch starts after it.
  double span = 0;
};

/// One trial branch as the tuner saw it.
struct trial {
  setting values;
  summary progress;
  std::size_t clocks = 0;  ///< clocks the branch ran
  double elapsed = 0;      ///< the branch's time since the fork, in its trace's unit
  double seconds = 0;      ///< the branch's wall seconds (the sum of its traces' `seconds`)
  bool kept = false;       ///< set on the branch the round ended with
  bool stopped = false;    ///< stopped before the trial length (options::check_clocks)
  bool behind = false;     ///< stopped behind the best branch (options::behind)
};

/// How one round of tuning went.
struct result {
  /// The chosen setting (the one whose state is in place), or the first
  /// setting tried when no branch converged (`found` false).
  setting best;
  summary best_progress;
  bool found = false;
  std::size_t trial_clocks = 0;  ///< the trial length decided
  std::vector<trial> trials;     ///< every branch, in the order forked
  double kept_seconds = 0;       ///< the kept branch's wall seconds (training kept)
  double wall_seconds = 0;       ///< this member's wall time in tune()
};

/// The tuner's knobs.
struct options {
  std::size_t initial_clocks = 8;  ///< first trial length
  std::size_t max_clocks = 1024;   ///< no doubling beyond this
  std::size_t max_trials = 12;     ///< settings tried per round, at most
  /// Run trials in pieces of this many clocks and stop a branch after the
  /// piece in which its loss became non-finite or rose past `stop_above`
  /// (0: each trial in one piece, never stopped early). The pieces must
  /// add up to what one piece would do (the caller's run() continues the
  /// state in place).
  std::size_t check_clocks = 0;
  /// With `check_clocks`, once the trial length is decided: stop a branch
  /// once a loss exceeds this multiple of its fork's loss (the first of its
  /// trace; only when that is positive). 0: only non-finite losses stop a
  /// branch (in either phase).
  double stop_above = 0;
  /// With `check_clocks`, once the trial length is decided: stop a new
  /// branch when, at a piece boundary in the second half of its trial, its
  /// loss lies above the best branch's loss at the same clock by more than
  /// this fraction of the best branch's fall since the fork (when that one
  /// has a positive speed). It gets speed 0 and cannot win. 0: off.
  double behind = 0;
  std::size_t stop_top = 5;  ///< stop when the best stop_top speeds ...
  double stop_spread = 0.1;  ///< ... lie within this fraction of the best
  /// Two branches whose (positive) speeds lie within this fraction of the
  /// higher one progress alike; the one with fewer wall seconds (the
  /// traces' `seconds`, when given) wins. 0: the speed alone decides.
  double tie_spread = 0;
  summarizer_options summarizer{};
  /// Called on every member after each trial (e.g. to print it on one).
  std::function<void(const trial&)> on_trial;
};

/// True when the trace no longer converges: the summarizer labels it
/// anything but `converging`.
[[nodiscard]] inline bool stalled(const trace& t, const summarizer_options& o = {}) {
  return summarize(t.loss, t.time, o).verdict != label::converging;
}

namespace detail {
/// Better branch: a positive speed (converging, or unstable but falling by
/// more than its noise) before a zero speed before diverged; among positive
/// speeds the higher -- unless the speeds lie within `tie_spread` of the
/// higher one and both wall times are known, then the fewer wall seconds --
/// and among zero speeds (which say nothing) the lower last loss; ties keep
/// the earlier. The label does not rank: as in MLtuner it only decides the
/// trial length (a converging branch says the trials are long enough), and
/// the speed already subtracts the noise.
inline bool better(const trial& a, const trial& b, double tie_spread) {
  auto rank = [](const summary& s) { return s.verdict == label::diverged ? 2 : s.speed > 0 ? 0 : 1; };
  const summary &x = a.progress, &y = b.progress;
  if (rank(x) != rank(y)) return rank(x) < rank(y);
  if (x.verdict == label::diverged) return false;
  if (rank(x) == 0) {
    const double top = std::max(x.speed, y.speed);
    if (tie_spread > 0 && a.seconds > 0 && b.seconds > 0 &&
        top - std::min(x.speed, y.speed) <= tie_spread * top)
      return a.seconds < b.seconds;
    if (x.speed != y.speed) return x.speed > y.speed;
  }
  return x.last < y.last;
}

/// Appends `piece` (times from its own start) to `whole`; the piece starts
/// where `whole` reached (its `span`, else its last time).
inline void append(trace& whole, const trace& piece) {
  if (piece.loss.size() != piece.time.size())
    throw config_error("dml::tune::tune: run() returned " + std::to_string(piece.loss.size()) +
                       " losses but " + std::to_string(piece.time.size()) + " times");
  const double offset = whole.span;
  whole.loss.insert(whole.loss.end(), piece.loss.begin(), piece.loss.end());
  for (double t : piece.time) whole.time.push_back(offset + t);
  whole.seconds += piece.seconds;
  whole.span = offset + (piece.span > 0 ? piece.span : piece.time.empty() ? 0.0 : piece.time.back());
}

/// True when a loss of `t` from index `from` on is not finite or, with
/// `above` > 0 and a positive first loss, exceeds `above` times the first.
inline bool runaway(const trace& t, std::size_t from, double above) {
  const double origin = t.loss.empty() ? 0.0 : t.loss.front();
  for (std::size_t i = from; i < t.loss.size(); ++i) {
    if (!std::isfinite(t.loss[i])) return true;
    if (above > 0 && origin > 0 && t.loss[i] > above * origin) return true;
  }
  return false;
}
}  // namespace detail

/// One round of tuning; see the file comment. `branches` is a
/// dml::tune::branches (or anything with save(id, clock), restore(id) and
/// drop(id)) over the training state; `clock` is the caller's agreed
/// training clock now; `first`, when given, is tried first (the user's
/// setting). On return the state of the best branch is in place and every
/// branch is dropped. Collective: every member calls it with agreed
/// arguments.
template <class Searcher, class Branches, class Run>
result tune(Searcher& searcher, Branches& branches, Run&& run, std::uint64_t clock, const options& o = {},
            std::optional<setting> first = std::nullopt) {
  if (o.initial_clocks == 0 || o.max_clocks < o.initial_clocks || o.max_trials == 0)
    throw config_error("dml::tune::tune: needs 1 <= initial_clocks <= max_clocks and max_trials >= 1");
  const auto wall_start = std::chrono::steady_clock::now();
  constexpr std::size_t parent = 0;
  branches.save(parent, clock);

  struct live_branch {
    std::size_t id;
    trial t;
    trace tr;
    std::map<std::size_t, double> at;  // the loss at the start of each piece, by clock
  };
  std::vector<live_branch> tried;
  result r;
  std::size_t length = o.initial_clocks;
  std::size_t best = 0;  // index into tried
  bool decided = false, searcher_done = false;

  auto next_setting = [&]() -> std::optional<setting> {
    if (first) {
      std::optional<setting> s = std::move(first);
      first.reset();
      return s;
    }
    if (searcher_done) return std::nullopt;
    auto s = searcher.next();
    if (!s) searcher_done = true;
    return s;
  };
  // Runs branch b from its snapshot (or the parent when new) up to
  // `length`, in pieces of check_clocks when given; a runaway branch stops
  // after its piece, is labelled diverged and is not saved.
  // `rival` is the best branch once the length is decided. Only then does
  // stop_above apply, and a branch that lags the rival by options::behind
  // in the second half of its trial stop too: while the length is being
  // decided, a branch whose loss spiked but came back below its fork's
  // doubles the length for all (dml-mlp from --lr 50: lr 5 and 0.5), and
  // stopping it would decide a shorter length. A non-finite loss stops a
  // branch in either phase (it neither extends nor doubles).
  auto lags = [&](const live_branch& b, const live_branch& rival, std::size_t at) {
    if (o.behind <= 0 || at == 0 || 2 * at < length || rival.t.progress.speed <= 0) return false;
    const auto mine = b.at.find(at), theirs = rival.at.find(at);
    if (mine == b.at.end() || theirs == rival.at.end()) return false;
    return mine->second > theirs->second + o.behind * -rival.t.progress.range;
  };
  auto advance = [&](live_branch& b, bool fresh, const live_branch* rival = nullptr) {
    branches.restore(fresh ? parent : b.id);
    while (b.t.clocks < length) {
      const std::size_t start = b.t.clocks;
      const std::size_t piece = o.check_clocks ? std::min(o.check_clocks, length - start) : length - start;
      const std::size_t from = b.tr.loss.size();
      detail::append(b.tr, run(std::as_const(b.t.values), piece));
      if (b.tr.loss.size() > from) b.at[start] = b.tr.loss[from];
      b.t.clocks += piece;
      if (o.check_clocks && detail::runaway(b.tr, from, rival ? o.stop_above : 0)) {
        b.t.stopped = b.t.clocks < length;
        break;
      }
      if (o.check_clocks && rival && lags(b, *rival, start)) {
        b.t.stopped = b.t.behind = b.t.clocks < length;
        break;
      }
    }
    b.t.elapsed = b.tr.span;
    b.t.seconds = b.tr.seconds;
    // Judged from the fork: the first loss is the forked state's (run()
    // reports the loss a clock starts from), shared by every branch.
    b.t.progress = b.tr.loss.empty()
                       ? summary{}
                       : summarize_from(b.tr.loss.front(), 0.0, b.tr.loss, b.tr.time, o.summarizer);
    if (o.check_clocks && detail::runaway(b.tr, 0, rival ? o.stop_above : 0)) {
      b.t.progress.verdict = label::diverged;
      b.t.progress.speed = 0;
      return;
    }
    if (b.t.behind) {  // a part of a trial is not judged converging
      b.t.progress.verdict = label::unstable;
      b.t.progress.speed = 0;
      return;
    }
    branches.save(b.id, clock + length);
  };

  // Phase 1: double the trial length until a branch converges.
  while (!decided && tried.size() < o.max_trials) {
    auto s = next_setting();
    if (!s && tried.empty()) throw config_error("dml::tune::tune: the searcher proposed no setting");
    if (s) {
      tried.push_back(
          live_branch{tried.size() + 1, trial{std::move(*s), {}, 0, 0, 0, false, false, false}, {}, {}});
      advance(tried.back(), true);
      searcher.report(tried.back().t.values, tried.back().t.progress.speed);
      if (o.on_trial) o.on_trial(tried.back().t);
    }
    // Branches that ended above their fork's loss are not extended: they
    // made no progress, and more time does not make them comparable.
    for (auto& b : tried)
      if (b.t.clocks < length && b.t.progress.verdict != label::diverged && b.t.progress.range < 0) {
        advance(b, false);
        if (o.on_trial) o.on_trial(b.t);
      }
    for (std::size_t i = 0; i < tried.size(); ++i) {
      if (tried[i].t.progress.verdict == label::diverged) branches.drop(tried[i].id);
      if (detail::better(tried[i].t, tried[best].t, o.tie_spread)) best = i;
    }
    decided = std::any_of(tried.begin(), tried.end(),
                          [](const live_branch& b) { return b.t.progress.verdict == label::converging; });
    if (!decided) {
      if (length * 2 > o.max_clocks || (!s && searcher_done)) break;
      // Longer trials help a branch that falls but not yet steadily; one
      // that rose above its fork's loss (or diverged) will not converge by
      // running longer, so alone it does not double the length.
      if (std::any_of(tried.begin(), tried.end(), [](const live_branch& b) {
            return b.t.progress.verdict != label::diverged && b.t.progress.range < 0;
          }))
        length *= 2;
    }
  }
  for (std::size_t i = 0; i < tried.size(); ++i)
    if (i != best) branches.drop(tried[i].id);

  // Phase 2: keep searching at the decided length, keeping only the best.
  auto spread_small = [&] {
    std::vector<double> speeds;
    for (const auto& b : tried)
      if (b.t.progress.verdict != label::diverged && b.t.progress.speed > 0)
        speeds.push_back(b.t.progress.speed);
    if (speeds.size() < o.stop_top) return false;
    std::sort(speeds.rbegin(), speeds.rend());
    return speeds[0] - speeds[o.stop_top - 1] <= o.stop_spread * speeds[0];
  };
  // It also runs when the length reached max_clocks without a converging
  // branch: the rest of the settings are tried at that length.
  while (tried.size() < o.max_trials && !spread_small()) {
    auto s = next_setting();
    if (!s) break;
    tried.push_back(
        live_branch{tried.size() + 1, trial{std::move(*s), {}, 0, 0, 0, false, false, false}, {}, {}});
    advance(tried.back(), true, &tried[best]);
    searcher.report(tried.back().t.values, tried.back().t.progress.speed);
    if (o.on_trial) o.on_trial(tried.back().t);
    if (detail::better(tried.back().t, tried[best].t, o.tie_spread)) {
      branches.drop(tried[best].id);
      best = tried.size() - 1;
    } else {
      branches.drop(tried.back().id);
    }
    tried.back().tr = {};  // only the summary is needed from here on
  }

  // Keep the best branch: its state goes back in place.
  const bool usable = tried[best].t.progress.verdict != label::diverged;
  if (usable) {
    branches.restore(tried[best].id);
    tried[best].t.kept = true;
  } else {
    branches.restore(parent);
  }
  for (const auto& b : tried) branches.drop(b.id);
  branches.drop(parent);

  r.found = decided;
  r.best = usable ? tried[best].t.values : tried.front().t.values;
  r.best_progress = tried[best].t.progress;
  r.trial_clocks = usable ? tried[best].t.clocks : 0;
  r.kept_seconds = usable ? tried[best].t.seconds : 0;
  for (auto& b : tried) r.trials.push_back(std::move(b.t));
  r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return r;
}

}  // namespace tune
DML_END_NAMESPACE

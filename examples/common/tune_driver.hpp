// SPDX-License-Identifier: BSL-1.0
// --tune for the trainers (dml-logreg, dml-mlp): online tuning with
// dml/tune.hpp (docs/tuning.md). The trainer hands over its model (averaged
// after every local step), any per-member state of the step (momentum's
// velocity), a local training step and an evaluation; this file runs the
// MLtuner loop around them: it forks trial branches from in-memory
// snapshots of the model, the local state and the sample cursor, tries
// settings of the learning rate, the momentum (when the step has one),
// --cb-size and the staleness (ssp slack, 0 = bsp) for short trials, keeps
// the best branch, trains on with its setting and re-tunes when the loss
// stalls. Every member computes the same decisions from the agreed
// (exchanged) loss trace.
#pragma once

#include <dml/tune.hpp>

#include "common.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace trainer {

/// The search space of --tune around the user's settings: the base learning
/// rate (epoch e steps with lr / sqrt(e), as without --tune) from 10^-5 to
/// 10^2 times --lr on a log scale, --cb-size among the powers of two from a
/// quarter to four times the given one (at most `max_cb`), when the trainer
/// has momentum (`momentum` given) the momentum among 0, 0.5, 0.9, 0.95 and
/// the given one, and, when the consistency is bsp or ssp, the staleness
/// among 0 (bsp), 1, 3, 7 and the given slack. The tunables come in that
/// order; `momentum` and `staleness` hold their positions when searched.
struct tune_space {
  dml::tune::space space;
  dml::tune::setting start;
  static constexpr std::size_t lr = 0, cb = 1;
  std::optional<std::size_t> momentum, staleness;
};

inline tune_space make_tune_space(const settings& s, std::size_t max_cb,
                                  std::optional<double> momentum = std::nullopt) {
  if (s.cb_size == 0 || s.cb_size > max_cb)
    throw dml::config_error("--tune: --cb-size " + std::to_string(s.cb_size) + " is not within 1.." +
                            std::to_string(max_cb) + " (a member's share of the samples)");
  if (momentum && !(*momentum >= 0 && *momentum < 1))
    throw dml::config_error("--tune: the momentum must lie in [0, 1), got " + std::to_string(*momentum));
  tune_space t;
  const double lr = static_cast<double>(s.lr);
  t.space.range("lr", lr * 1e-5, lr * 1e2, dml::tune::scale::log);
  std::vector<double> cbs;
  for (std::size_t cb = std::max<std::size_t>(1, s.cb_size / 4); cb <= s.cb_size * 4 && cb <= max_cb; cb *= 2)
    cbs.push_back(static_cast<double>(cb));
  if (std::find(cbs.begin(), cbs.end(), static_cast<double>(s.cb_size)) == cbs.end())
    cbs.push_back(static_cast<double>(s.cb_size));
  t.space.choice("cb-size", cbs);
  t.start = {lr, static_cast<double>(s.cb_size)};
  if (momentum) {
    std::vector<double> ms{0, 0.5, 0.9, 0.95};
    if (std::find(ms.begin(), ms.end(), *momentum) == ms.end()) ms.push_back(*momentum);
    std::sort(ms.begin(), ms.end());
    t.momentum = t.space.size();
    t.space.choice("momentum", ms);
    t.start.push_back(*momentum);
  }
  if (s.consistency == "bsp" || s.consistency == "ssp") {
    const double given = s.consistency == "ssp" ? static_cast<double>(s.slack) : 0;
    std::vector<double> st{0, 1, 3, 7};
    if (std::find(st.begin(), st.end(), given) == st.end()) st.push_back(given);
    t.staleness = t.space.size();
    t.space.choice("staleness", st);
    t.start.push_back(given);
  }
  return t;
}

/// The first round's plan: the user's setting, then its learning rate
/// times 10^k for k = -1, -2, -3, 1, -4 (a decade grid on both sides, far
/// enough to recover from a --lr that is orders of magnitude off), then the
/// half decades between them (k = -1/2, -3/2, -5/2, -7/2, 1/2), the rest as
/// given. The half decades matter: the first round's winner trains the
/// first epoch or two, and on a decade grid the loss after that short a
/// trial prefers the smaller of two neighbours the run as a whole would
/// not (a short horizon favours cautious rates).
inline std::vector<dml::tune::setting> lr_sweep(const dml::tune::setting& start) {
  if (start.empty()) throw dml::config_error("--tune: lr_sweep() needs a setting with a learning rate");
  std::vector<dml::tune::setting> plan{start};
  for (double k : {-1.0, -2.0, -3.0, 1.0, -4.0, -0.5, -1.5, -2.5, -3.5, 0.5}) {
    dml::tune::setting x = start;
    x[tune_space::lr] = start[tune_space::lr] * std::pow(10.0, k);
    plan.push_back(x);
  }
  return plan;
}

/// A refining round's plan around `best`: `best` itself (so that the
/// current setting competes), its learning rate times 10^-1/2, 10^1/2,
/// 10^-1 and 10 (the first round chose among decades from an untrained
/// model, where the noise penalty favours small steps; from a trained
/// state the loss reached ranks them again),
/// and -- when `all` -- its neighbours in cb-size (half, twice and four
/// times, where the space has them), the other momenta (when tuned), each
/// with the learning rate that keeps the step's long-run size lr / (1 -
/// momentum) (a larger momentum at the same rate is mostly a larger step,
/// which the lr trials already cover), and the staleness 1 and 3 (when
/// tuned). Every setting in the plan lies in the space, none twice.
inline std::vector<dml::tune::setting> refine(const tune_space& ts, const dml::tune::setting& best,
                                              bool all) {
  const dml::tune::space& sp = ts.space;
  if (!sp.contains(best)) throw dml::config_error("--tune: refine() needs a setting of the space");
  std::vector<dml::tune::setting> plan{best};
  const double low = sp[tune_space::lr].low, high = sp[tune_space::lr].high;
  auto add = [&](dml::tune::setting x) {
    if (sp.contains(x) && std::find(plan.begin(), plan.end(), x) == plan.end()) plan.push_back(std::move(x));
  };
  for (double f : {std::pow(10.0, -0.5), std::pow(10.0, 0.5), 0.1, 10.0}) {
    dml::tune::setting x = best;
    x[tune_space::lr] = std::clamp(best[tune_space::lr] * f, low, high);
    add(x);
  }
  if (!all) return plan;
  for (double f : {0.5, 2.0, 4.0}) {
    dml::tune::setting x = best;
    x[tune_space::cb] = best[tune_space::cb] * f;
    add(x);
  }
  if (const auto m = ts.momentum)
    for (double to : sp[*m].choices) {
      dml::tune::setting x = best;
      x[*m] = to;
      x[tune_space::lr] = std::clamp(best[tune_space::lr] * (1 - to) / (1 - best[*m]), low, high);
      add(x);
    }
  if (const auto st = ts.staleness)
    for (double v : {1.0, 3.0}) {
      dml::tune::setting x = best;
      x[*st] = v;
      add(x);
    }
  return plan;
}

/// The fixed slice of the training set on which --tune measures progress:
/// of the first `members` x `share` samples of the shuffled order `order`,
/// member `rank`'s `share` (share = half a unit of trial length, at least
/// 1, at most the member's share of the data). Every member's part is the
/// same size, so the mean of their losses is the loss on the whole slice.
/// Throws `dml::config_error` when there are no members, `rank` is not one
/// of them, or `order` has fewer samples than members.
inline std::vector<std::size_t> progress_slice(std::span<const std::size_t> order, std::size_t members,
                                               std::size_t rank, std::size_t unit) {
  if (members == 0 || rank >= members)
    throw dml::config_error("--tune: progress_slice: member " + std::to_string(rank) + " of " +
                            std::to_string(members) + " members");
  if (order.size() < members)
    throw dml::config_error("--tune: progress_slice: " + std::to_string(order.size()) +
                            " samples are too few for " + std::to_string(members) + " members");
  const std::size_t share = std::clamp<std::size_t>(unit / 2, 1, order.size() / members);
  const std::size_t first = rank * share;
  return {order.begin() + static_cast<std::ptrdiff_t>(first),
          order.begin() + static_cast<std::ptrdiff_t>(first + share)};
}

/// The clocks (0-based) of a stretch of `clocks` rounds of `cb` samples
/// before which --tune measures the loss: one per `unit` samples of work
/// (the first clock, then each clock that starts at or past the next
/// multiple of `unit`), so that branches with different cb-sizes report
/// progress at the same amounts of work, and at least one per clock when
/// cb >= unit. Throws `dml::config_error` when cb or unit is 0.
inline std::vector<std::size_t> points_for(std::size_t clocks, std::size_t cb, std::size_t unit) {
  if (cb == 0 || unit == 0)
    throw dml::config_error("--tune: points_for: needs cb-size >= 1 and unit >= 1, got " +
                            std::to_string(cb) + " and " + std::to_string(unit));
  std::vector<std::size_t> points;
  for (std::size_t k = 0, next = 0; k < clocks; ++k)
    if (k * cb >= next) {
      points.push_back(k);
      next = (k * cb / unit + 1) * unit;
    }
  return points;
}

/// One local step of a tuned run: this epoch's learning rate (the setting's
/// base rate / sqrt(epoch)) and the momentum (0 when it is not tuned).
struct tuned_step {
  float lr = 0;
  float momentum = 0;
};

/// The training state a tuned run works on. `model` is every member's
/// replica, averaged through a dist_vector after every local step; `local`
/// is state of the step that each member keeps to itself (momentum's
/// velocity; empty when the step has none): it goes into every snapshot but
/// is not averaged. `momentum`, when the step has one, is the given
/// momentum: it is then tuned too. `unit` is the samples per member in one
/// unit of trial length (0: --cb-size); the progress is measured once per
/// unit on a slice of half a unit per member, so a step that is cheap
/// against an evaluation (one minibatch of a network) takes a unit of
/// several steps, which also makes the slice larger.
struct tuned_state {
  std::span<float> model;
  std::span<float> local = {};
  std::optional<double> momentum = std::nullopt;
  std::size_t unit = 0;
  /// Build a new vector for every trial piece and stretch (as before the
  /// vectors were reused); for tests comparing the two.
  bool fresh_vectors = false;
};

/// What a tuned run reports.
struct tune_report {
  dml::tune::setting chosen;
  double tuning_seconds = 0, kept_seconds = 0, total_seconds = 0;
  std::size_t trials = 0, rounds = 0;
  /// Trials stopped early: all, and those whose loss ran away
  /// (options::stop_above, a non-finite loss); the others lagged the best
  /// (options::behind).
  std::size_t stopped = 0, ran_away = 0;
  /// This member's bytes sent by every vector of the run, trials included.
  std::uint64_t bytes_sent = 0;
  /// The samples of kept training per member after which the stall check
  /// fired, one per re-tuning round.
  std::vector<std::uint64_t> retuned_at;
};

/// Runs tuned training on this member: `state.model` (every member's
/// replica, averaged through a dist_vector over `topology` after every
/// round of cb-size samples), `step(tuned_step, samples)` trains the local
/// model (and `state.local`) on the given sample indices,
/// `evaluate(samples)` returns the mean training loss of the local model on
/// the given samples without changing it, and the budget is s.epochs passes over the n training samples by
/// the kept branch (trials that are thrown away are the tuning overhead). Prints the trials and the 'tuned:'
/// line on the leader; returns the report.
///
/// The progress a branch reports (its trace) is the training loss, as in
/// MLtuner, but measured on a fixed slice of the training set
/// (progress_slice) once per unit of work, before that unit: every member
/// evaluates its part of the slice on its replica and the members agree on
/// the mean. The slice is the same for every branch and every point, so two
/// branches differ only by what they learned, not by which minibatch
/// happened to come up (a minibatch's loss varies between draws by more
/// than the candidates differ); the loss of the local steps themselves
/// would also include their overshoot before the average.
///
/// Work is counted in samples, not seconds: the tuner's unit of trial
/// length is `state.unit` (default --cb-size) samples per member (a setting with another cb-size
/// runs proportionally more or fewer clocks), and a trace's time is the
/// samples the branch has processed. Branches of one round thus process
/// the same samples and are compared by the loss they reach from the same
/// fork, which does not depend on how busy the machine is; the agreed wall
/// time only decides between branches within 2% of each other (cb-size and
/// staleness, whose benefit is time).
template <class Comm, class Step, class Evaluate>
tune_report run_tuned(Comm& comm, const dml::topology::any& topology, const settings& s, std::size_t n,
                      const tuned_state& state, Step&& step, Evaluate&& evaluate) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  const bool leader = dml::io::leader(comm);
  const std::size_t ranks = comm.size(), per_rank = n / ranks;
  const std::span<float> model = state.model, local = state.local;
  const tune_space ts = make_tune_space(s, per_rank, state.momentum);
  const dml::tune::space& sp = ts.space;
  // The sample stream: this member's shard in a fresh shuffle per epoch, so
  // that (epoch, offset) -- saved with the model -- determines what comes next.
  const std::vector<std::size_t> order = dml::data::permutation(n, s.seed);
  std::vector<std::size_t> base, mine;
  for (std::size_t i : dml::data::shard::among(comm.view().live, comm.rank()).indices(order.size()))
    base.push_back(order[i]);
  std::vector<std::uint64_t> cursor{1, 0};  // epoch, offset: part of every snapshot
  std::uint64_t shuffled_for = 0;
  std::vector<std::size_t> batch;
  auto next_samples = [&](std::size_t count) {
    batch.clear();
    while (batch.size() < count) {
      if (cursor[1] >= base.size()) cursor = {cursor[0] + 1, 0};
      if (shuffled_for != cursor[0]) {
        mine = base;
        dml::data::shuffle(mine, s.seed + 1000003 * cursor[0] + comm.rank());
        shuffled_for = cursor[0];
      }
      const std::size_t take = std::min<std::size_t>(count - batch.size(), mine.size() - cursor[1]);
      batch.insert(batch.end(), mine.begin() + static_cast<std::ptrdiff_t>(cursor[1]),
                   mine.begin() + static_cast<std::ptrdiff_t>(cursor[1] + take));
      cursor[1] += take;
    }
    return std::span<const std::size_t>(batch);
  };
  const std::uint64_t budget = static_cast<std::uint64_t>(s.epochs) * base.size();
  std::uint64_t used = 0;  // samples of the kept training, this member
  auto used_now = [&] { return (cursor[0] - 1) * base.size() + cursor[1]; };
  const std::size_t unit =
      state.unit ? state.unit : s.cb_size;  // samples per member in a unit of trial length
  const std::vector<std::size_t> slice = progress_slice(order, comm.view().live.size(), comm.rank(), unit);

  // The vectors that average the model. A bsp vector refreshes every slot
  // at every clock, so one serves every branch and stretch (a snapshot
  // restores the model; nothing of the vector's own state carries over
  // into a gather). A stale consistency (ssp, asp, notify_ack) keeps
  // neighbours' older values in its slots: its vector is reused only to
  // continue the same branch (the same setting, and the model as the last
  // piece left it), else built fresh.
  const dml::consistency::any bsp_consistency{dml::consistency::bsp{}};
  using vector_type = decltype(dml::make_vector<float>(comm, model.size(), topology, bsp_consistency,
                                                       dml::gather::average{}));
  std::unique_ptr<vector_type> bsp_vector, stale_vector;
  dml::tune::setting stale_for;
  std::vector<float> stale_left;  // the model as the stale vector's last piece left it
  tune_report report;
  auto retire = [&](std::unique_ptr<vector_type>& v) {
    if (v) report.bytes_sent += v->stats().bytes_sent;
    v.reset();
  };
  auto vector_for = [&](const dml::tune::setting& x, const dml::consistency::any& consistency,
                        bool bsp) -> vector_type& {
    auto make = [&] {
      auto v = std::unique_ptr<vector_type>(new vector_type(
          dml::make_vector<float>(comm, model.size(), topology, consistency, dml::gather::average{})));
      v->set_advice(false);
      return v;
    };
    if (bsp) {
      if (state.fresh_vectors) retire(bsp_vector);
      if (!bsp_vector) bsp_vector = make();
      return *bsp_vector;
    }
    // Agreed, as building a vector is collective (the check is per member).
    std::vector<double> continues{
        !state.fresh_vectors && stale_vector && stale_for == x &&
                std::equal(model.begin(), model.end(), stale_left.begin(), stale_left.end())
            ? 1.0
            : 0.0};
    dml::tune::agree_mean(comm, continues);
    if (continues[0] != 1.0) {
      retire(stale_vector);
      stale_vector = make();
      stale_for = x;
    }
    return *stale_vector;
  };

  // One trial piece (or a stretch of training) of `units` x --cb-size
  // samples per member: rounds of the setting's cb-size samples through a
  // vector with the setting's consistency, then the agreed trace: the loss
  // on the slice before each unit of work (points_for), at the samples
  // processed, and the work done (span) so that the next piece of the
  // branch starts after it.
  auto run = [&](const dml::tune::setting& x, std::size_t units) {
    const float lr = static_cast<float>(x[tune_space::lr]);
    const float momentum = ts.momentum ? static_cast<float>(x[*ts.momentum]) : 0.0f;
    const auto cb = static_cast<std::size_t>(x[tune_space::cb]);
    const std::size_t clocks = std::max<std::size_t>(1, (units * unit + cb / 2) / cb);
    const std::vector<std::size_t> points = points_for(clocks, cb, unit);
    const std::uint64_t slack = ts.staleness ? static_cast<std::uint64_t>(x[*ts.staleness]) : 0;
    const dml::consistency::any consistency =
        !ts.staleness ? chosen_consistency(s)
                      : (slack == 0 ? dml::consistency::any(dml::consistency::bsp{})
                                    : dml::consistency::any::ssp(slack));
    const bool bsp = ts.staleness && slack == 0;  // untuned: asp or notify_ack
    vector_type& v = vector_for(x, consistency, bsp);
    std::vector<double> agreed;  // the losses, then the wall seconds
    agreed.reserve(points.size() + 1);
    const auto t0 = clock::now();
    for (std::size_t k = 0, p = 0; k < clocks; ++k) {
      if (p < points.size() && points[p] == k) {
        double loss = evaluate(std::span<const std::size_t>(slice));
        if (!std::isfinite(loss)) loss = std::numeric_limits<double>::infinity();
        agreed.push_back(loss);
        ++p;
      }
      // the trainers' decay: epoch e steps with lr / sqrt(e); lr is the base
      step(tuned_step{lr / std::sqrt(static_cast<float>(cursor[0])), momentum}, next_samples(cb));
      std::copy(model.begin(), model.end(), v.span().begin());
      v.scatter();
      v.gather();
      std::copy(v.span().begin(), v.span().end(), model.begin());
    }
    agreed.push_back(std::chrono::duration<double>(clock::now() - t0).count());
    if (!bsp) stale_left.assign(model.begin(), model.end());
    comm.barrier();  // nobody writes into the vector any more: it may go
    dml::tune::agree_mean(comm, agreed);
    dml::tune::trace t;
    t.loss.assign(agreed.begin(), agreed.end() - 1);
    for (std::size_t k : points) t.time.push_back(static_cast<double>((k + 1) * cb));
    t.seconds = agreed.back();
    t.span = static_cast<double>(clocks * cb);
    return t;
  };

  dml::tune::branches br(comm, model, local, cursor);
  dml::tune::options o;
  o.initial_clocks = 8;  // units: 8 x cb-size samples per member
  o.max_clocks = 64;
  o.stop_top = 5;
  o.stop_spread = 0.1;
  // Runaway trials stop after a piece of at least two units: the piece
  // holds a whole number of clocks of every cb-size in the space (at most
  // four units' worth), so pieces add up to the work of one run.
  const double largest_cb =
      *std::max_element(sp[tune_space::cb].choices.begin(), sp[tune_space::cb].choices.end());
  o.check_clocks = std::max<std::size_t>(2, (static_cast<std::size_t>(largest_cb) + unit - 1) / unit);
  o.stop_above = 2;
  // Trials that lag the best are not stopped (options::behind stays 0): in
  // dml-mlp's refinement one point of the slice's loss jumps by more than
  // the candidates differ, and a 5 % margin stopped every candidate,
  // the later winner (momentum 0.95) among them (docs/tuning.md).
  std::size_t trial_no = 0;
  o.on_trial = [&](const dml::tune::trial& t) {
    ++trial_no;
    report.stopped += t.stopped;
    report.ran_away += t.stopped && !t.behind;
    if (!leader) return;
    std::printf("trial %2zu: %s  %zu units  %-10s speed %.4g  loss %.5f  %.3f s range %g noise %g%s\n",
                trial_no, sp.describe(t.values).c_str(), t.clocks,
                std::string(dml::tune::to_string(t.progress.verdict)).c_str(), t.progress.speed,
                t.progress.last, t.seconds, t.progress.range, t.progress.noise,
                t.behind    ? "  (stopped: behind)"
                : t.stopped ? "  (stopped: ran away)"
                            : "");
    std::fflush(stdout);
  };

  dml::tune::setting current = ts.start;
  std::uint64_t clock_now = 0;
  dml::tune::trace recent;
  std::size_t recent_stretches = 0;
  std::size_t stretch = o.initial_clocks;
  constexpr std::size_t max_rounds = 4;  // the sweep, the refinement and up to 2 re-tunings
  auto tune_round = [&](std::vector<dml::tune::setting> plan, double tie_spread) {
    o.max_trials = plan.size();
    o.tie_spread = tie_spread;
    dml::tune::setting head = plan.front();  // tried first: the current setting
    plan.erase(plan.begin());
    dml::tune::list_searcher searcher(sp, std::move(plan));
    const auto r = dml::tune::tune(searcher, br, run, clock_now, o, std::move(head));
    current = r.best;
    clock_now += r.trial_clocks;
    stretch = std::max(r.trial_clocks, o.initial_clocks);
    report.tuning_seconds += r.wall_seconds;
    report.kept_seconds += r.kept_seconds;
    report.trials += r.trials.size();
    ++report.rounds;
    recent = {};
    recent_stretches = 0;
    // Later rounds run trials of a quarter of the first round's length (at
    // least the first trial length), no doubling: late in training a short
    // trial rarely looks converging (the loss falls by less than its
    // noise), and the branches are then ranked by the loss they reach.
    // Equal work and the same samples (every branch restores the sample
    // cursor) make those losses comparable, so the trials can be short.
    if (report.rounds == 1)
      o.initial_clocks = o.max_clocks =
          std::clamp<std::size_t>(2 * r.trial_clocks, o.initial_clocks, o.max_clocks);
    used = used_now();
    if (leader) {
      std::printf("tuning round %zu: %s (%s), trials of %zu units\n", report.rounds,
                  sp.describe(current).c_str(),
                  r.found ? "converging" : "nothing converged; keeping the best", r.trial_clocks);
      std::fflush(stdout);
    }
  };
  // The learning rate first, on a decade grid around the user's (the
  // setting that matters most), then its half-decade neighbours with the
  // cb-size and staleness around the winner; wall time breaks near-ties.
  tune_round(lr_sweep(ts.start), 0.0);
  if (used < budget) tune_round(refine(ts, current, true), 0.02);
  while (used < budget) {
    const auto left = static_cast<std::size_t>((budget - used + unit - 1) / unit);
    const std::size_t units = std::min(stretch, left);
    const dml::tune::trace piece = run(current, units);
    const double offset = recent.span;  // where the last stretch's work ended
    recent.loss.insert(recent.loss.end(), piece.loss.begin(), piece.loss.end());
    for (double t : piece.time) recent.time.push_back(offset + t);
    recent.span = offset + piece.span;
    ++recent_stretches;
    clock_now += units;
    used = used_now();
    // Re-tune the learning rate when the last stretches stopped converging,
    // while enough of the budget is left for a round to pay off.
    if (recent_stretches >= 8 && report.rounds < max_rounds && left > 16 * stretch) {
      if (dml::tune::stalled(recent, o.summarizer)) {
        report.retuned_at.push_back(used);
        if (leader) {
          std::printf("stalled after %llu of %llu samples per member: re-tuning\n",
                      static_cast<unsigned long long>(used), static_cast<unsigned long long>(budget));
          std::fflush(stdout);
        }
        tune_round(refine(ts, current, false), 0.0);
      }
      recent = {};
      recent_stretches = 0;
    }
  }
  comm.barrier();  // nobody writes into the vectors any more
  retire(bsp_vector);
  retire(stale_vector);
  report.chosen = current;
  report.total_seconds = std::chrono::duration<double>(clock::now() - start).count();
  if (leader) {
    const double overhead = report.tuning_seconds - report.kept_seconds;
    std::printf("tuned: lr=%g cb-size=%g", current[tune_space::lr], current[tune_space::cb]);
    if (ts.momentum) std::printf(" momentum=%g", current[*ts.momentum]);
    if (ts.staleness)
      std::printf(" staleness=%g", current[*ts.staleness]);
    else
      std::printf(" consistency=%s (not tuned)", s.consistency.c_str());
    std::printf(" trials=%zu stopped=%zu rounds=%zu tuning_seconds=%.3f overhead=%.1f%%\n", report.trials,
                report.stopped, report.rounds, report.tuning_seconds,
                100.0 * std::max(0.0, overhead) / report.total_seconds);
    std::fflush(stdout);
  }
  return report;
}

}  // namespace trainer

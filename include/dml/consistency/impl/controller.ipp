// SPDX-License-Identifier: BSL-1.0
/// @file
/// Out-of-line definitions for <dml/consistency/controller.hpp> (see <dml/version.hpp>, DML_DECL).
#pragma once

#include <dml/consistency/controller.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

DML_BEGIN_NAMESPACE
namespace detail {
// A member's local steps in a window (observations without them took the
// settings' period at every clock).
inline double observed_steps(const consistency::window_observation& o, std::uint64_t period) {
  return static_cast<double>(o.steps > 0 ? o.steps : o.clocks * std::max<std::uint64_t>(1, period));
}
// The slowest over the lower median of `per` (1 with fewer than two values).
inline double slowest_over_median(std::vector<double> per) {
  if (per.size() < 2) return 1;
  std::sort(per.begin(), per.end());
  const double median = per[(per.size() - 1) / 2];  // lower median: robust to one straggler
  if (!(median > 0)) return 1;
  return per.back() / median;
}
}  // namespace detail

namespace consistency {

DML_DECL std::string adaptive_settings::text() const {
  std::string t = mode == adaptive_mode::bsp   ? "bsp"
                  : mode == adaptive_mode::asp ? "asp"
                                               : "ssp(" + std::to_string(slack) + ")";
  if (period != 1) t += "/period " + std::to_string(period);
  if (balanced) t += "/balanced";
  return t;
}

DML_DECL std::string controller_options::text() const {
  auto num = [](double x) {
    char b[32];
    std::snprintf(b, sizeof b, "%g", x);
    return std::string(b);
  };
  return "straggler " + num(straggler_ratio) + ", balanced " + num(balanced_ratio) + ", wait " +
         num(wait_low) + ".." + num(wait_high) + ", loss rise " + num(loss_rise) + ", comm " + num(comm_low) +
         ".." + num(comm_high) + ", slack<=" + std::to_string(max_slack) +
         ", period<=" + std::to_string(max_period) + (allow_asp ? ", asp" : "") +
         (balance ? ", balance<=" + std::to_string(max_share) : std::string());
}

DML_DECL double controller::imbalance(std::span<const window_observation> obs, std::uint64_t period) {
  std::vector<double> per;
  for (const auto& o : obs)
    if (o.clocks > 0) per.push_back(o.compute_seconds / detail::observed_steps(o, period));
  return detail::slowest_over_median(std::move(per));
}

DML_DECL double controller::clock_imbalance(std::span<const window_observation> obs) {
  std::vector<double> per;
  for (const auto& o : obs)
    if (o.clocks > 0) per.push_back(o.compute_seconds / static_cast<double>(o.clocks));
  return detail::slowest_over_median(std::move(per));
}

DML_DECL std::vector<std::uint64_t> controller::shares(std::span<const window_observation> obs,
                                                       std::uint64_t period, std::uint64_t max_share) {
  double slowest = 0;
  for (const auto& o : obs)
    if (o.clocks > 0) slowest = std::max(slowest, o.compute_seconds / detail::observed_steps(o, period));
  std::vector<std::uint64_t> out(obs.size(), 1);
  for (std::size_t i = 0; i < obs.size(); ++i) {
    const auto& o = obs[i];
    if (o.clocks == 0 || !(o.compute_seconds > 0)) continue;
    const double k = std::round(slowest / (o.compute_seconds / detail::observed_steps(o, period)));
    out[i] = static_cast<std::uint64_t>(
        std::clamp(k, 1.0, static_cast<double>(std::max<std::uint64_t>(1, max_share))));
  }
  return out;
}

DML_DECL double controller::exchange_share(std::span<const window_observation> obs) {
  std::vector<double> share;
  for (const auto& o : obs) {
    const double total = o.exchange_seconds + o.compute_seconds;
    if (o.clocks > 0 && total > 0) share.push_back(o.exchange_seconds / total);
  }
  if (share.empty()) return 0;
  std::sort(share.begin(), share.end());
  return share[(share.size() - 1) / 2];
}

DML_DECL double controller::wait_share(std::span<const window_observation> obs) {
  std::vector<double> share;
  for (const auto& o : obs) {
    const double total = o.exchange_seconds + o.compute_seconds;
    if (o.clocks > 0 && total > 0) share.push_back(std::min(1.0, o.wait_seconds / total));
  }
  if (share.empty()) return 0;
  std::sort(share.begin(), share.end());
  return share[(share.size() - 1) / 2];
}

DML_DECL double controller::mean_loss(std::span<const window_observation> obs) {
  double sum = 0;
  std::size_t n = 0;
  for (const auto& o : obs)
    if (!std::isnan(o.loss)) {
      sum += o.loss;
      ++n;
    }
  return n == 0 ? std::numeric_limits<double>::quiet_NaN() : sum / static_cast<double>(n);
}

DML_DECL double controller::time_per_clock(std::span<const window_observation> obs) {
  std::vector<double> per;
  for (const auto& o : obs)
    if (o.clocks > 0) per.push_back((o.compute_seconds + o.exchange_seconds) / static_cast<double>(o.clocks));
  if (per.empty()) return 0;
  std::sort(per.begin(), per.end());
  return per[(per.size() - 1) / 2];
}

DML_DECL double controller::time_per_step(std::span<const window_observation> obs, std::uint64_t period) {
  std::vector<double> per;
  for (const auto& o : obs)
    if (o.clocks > 0)
      per.push_back((o.compute_seconds + o.exchange_seconds) / detail::observed_steps(o, period));
  if (per.empty()) return 0;
  std::sort(per.begin(), per.end());
  return per[(per.size() - 1) / 2];
}

DML_DECL adaptive_settings controller::decide(std::span<const window_observation> obs,
                                              adaptive_settings now) {
  const double loss = mean_loss(obs);
  const bool diverging =
      !std::isnan(loss) && !std::isnan(last_loss_) && loss > last_loss_ * (1 + o_.loss_rise);
  if (!std::isnan(loss)) last_loss_ = loss;
  bool measured = false;
  for (const auto& o : obs) measured = measured || o.clocks > 0;
  if (!measured) return now;
  // The first window holds the start (the vector's construction, the
  // trainer's first report): a baseline for nothing.
  if (!warm_) {
    warm_ = true;
    return now;
  }
  // Time per local step: a longer period (or a balanced share) puts more
  // steps into a clock.
  const double per_step = time_per_step(obs, now.period);
  if (diverging) {
    // Replicas drift apart: one step towards bsp, exchange more often, and
    // every member takes the same steps again.
    trial_.reset();
    adaptive_settings next = tighter(now);
    next.period = std::max<std::uint64_t>(1, now.period / 2);
    next.balanced = false;
    return next;
  }
  if (trial_) {
    // The last decision relaxed something: keep it only if it paid.
    const trial t = *trial_;
    trial_.reset();
    if (!(per_step < t.per_step * (1 - o_.min_gain))) {
      hold_ = o_.hold_windows;
      return t.before;
    }
  }
  adaptive_settings next = now;
  const double slow_steps = imbalance(obs, now.period);  // a member slower at every step
  // What the others wait for at each clock (balanced shares even it out).
  const double ratio = now.balanced ? clock_imbalance(obs) : slow_steps;
  const double waiting = wait_share(obs);
  const double exchanging = exchange_share(obs);
  const bool may_relax = hold_ == 0;
  if (hold_ > 0) --hold_;
  // One relaxation at a time, so that the trial measures it: first let the
  // faster members take more steps than a persistent straggler (where the
  // program allows it: neither a longer period nor a slack lets them get
  // ahead of a member slow at every step for long), then exchange less
  // often when exchanging dominates, then widen the slack.
  if (o_.balance && !now.balanced && slow_steps >= o_.straggler_ratio) {
    if (may_relax) next.balanced = true;
  } else if (exchanging > o_.comm_high && now.period < o_.max_period) {
    if (may_relax) next.period = std::min(o_.max_period, now.period * 2);
  } else if (ratio >= o_.straggler_ratio || waiting >= o_.wait_high) {
    if (may_relax) next = wider(now, ratio, waiting, max_clocks(obs));
  } else if (slow_steps < o_.balanced_ratio && waiting < o_.wait_low) {
    next = tighter(now);
    next.balanced = false;  // nobody is slower per step any more
  }
  if (exchanging < o_.comm_low) next.period = std::max<std::uint64_t>(1, next.period / 2);
  if (relaxes(now, next)) trial_ = trial{per_step, now};
  return next;
}

DML_DECL std::uint64_t controller::max_clocks(std::span<const window_observation> obs) {
  std::uint64_t c = 0;
  for (const auto& o : obs) c = std::max(c, o.clocks);
  return c;
}

DML_DECL bool controller::relaxes(const adaptive_settings& a, const adaptive_settings& b) {
  auto rank = [](const adaptive_settings& s) {
    return s.mode == adaptive_mode::asp ? ~std::uint64_t{0} : s.mode == adaptive_mode::ssp ? s.slack : 0;
  };
  return rank(b) > rank(a) || b.period > a.period || (b.balanced && !a.balanced);
}

// Enough slack that the others need not block inside a window: in
// `clocks` clocks they get ahead of a straggler r times slower by
// clocks x (1 - 1/r); a member that waits a share w of its time would
// have run about clocks x w clocks further.
DML_DECL adaptive_settings controller::wider(adaptive_settings now, double ratio, double waiting,
                                             std::uint64_t clocks) const {
  const double ahead = std::max(ratio >= o_.straggler_ratio ? 1 - 1 / ratio : 0.0, waiting);
  const auto want = static_cast<std::uint64_t>(std::ceil(static_cast<double>(clocks) * ahead));
  const std::uint64_t slack = std::max<std::uint64_t>(1, want);
  if (slack > o_.max_slack && o_.allow_asp) {
    now.mode = adaptive_mode::asp;
    now.slack = 0;
  } else if (now.mode != adaptive_mode::asp) {
    now.slack = std::max(now.mode == adaptive_mode::ssp ? now.slack : 0, std::min(slack, o_.max_slack));
    now.mode = adaptive_mode::ssp;
  }
  return now;
}

DML_DECL adaptive_settings controller::tighter(adaptive_settings s) const {
  if (s.mode == adaptive_mode::asp) {
    s.mode = adaptive_mode::ssp;
    s.slack = std::max<std::uint64_t>(1, o_.max_slack);
  } else if (s.mode == adaptive_mode::ssp) {
    s.slack /= 2;
    if (s.slack == 0) s.mode = adaptive_mode::bsp;
  }
  return s;
}

}  // namespace consistency
DML_END_NAMESPACE

// SPDX-License-Identifier: BSL-1.0
/// @file
/// The rule that drives consistency::adaptive: from what every member
/// measured over the last decision window (its vector's statistics and the
/// loss its trainer reported) to the mode, slack and communication period
/// of the next window. A pure function of its inputs and of the controller's
/// own memory, so every member that evaluates it on the same records takes
/// the same decision. docs/adaptive.md explains the rule and its reasons.
#pragma once

#include <dml/fwd.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

DML_BEGIN_NAMESPACE
namespace consistency {

/// How members of an adaptive vector wait for each other.
enum class adaptive_mode : std::uint8_t { bsp = 0, ssp = 1, asp = 2 };

/// The values an adaptive vector may change during its run. `slack` matters
/// under ssp only; `period` is advice to the trainer: how many local steps
/// to take between two exchanges (the vector does not enforce it).
struct adaptive_settings {
  adaptive_mode mode = adaptive_mode::bsp;
  std::uint64_t slack = 0;
  std::uint64_t period = 1;
  friend bool operator==(const adaptive_settings&, const adaptive_settings&) = default;
  /// "bsp", "ssp(2)" or "asp", then "/period 3" when the period is not 1.
  [[nodiscard]] std::string text() const {
    std::string t = mode == adaptive_mode::bsp   ? "bsp"
                    : mode == adaptive_mode::asp ? "asp"
                                                 : "ssp(" + std::to_string(slack) + ")";
    if (period != 1) t += "/period " + std::to_string(period);
    return t;
  }
};

/// What one member measured over one decision window: deltas of its
/// vector_stats, and the mean loss its trainer reported (NaN: none).
struct window_observation {
  double compute_seconds = 0;   ///< the caller's own work between exchanges
  double exchange_seconds = 0;  ///< inside scatter/gather (waits included)
  double wait_seconds = 0;      ///< blocked in barriers, waits and the agreement
  std::uint64_t clocks = 0;     ///< gathers in the window
  std::uint64_t full_gathers = 0;
  double loss = std::numeric_limits<double>::quiet_NaN();
};

/// The thresholds of the rule (docs/adaptive.md). Every member must use the
/// same; adaptive puts them into its name, which members compare.
struct controller_options {
  /// A member whose compute time per clock is this many times the median's
  /// is a straggler: the slack widens.
  double straggler_ratio = 1.5;
  /// Below this ratio the group is balanced again: the slack narrows (when
  /// nobody waits much either).
  double balanced_ratio = 1.2;
  /// The median member waiting (barriers, waits, the agreement) for more
  /// than this share of its time also widens the slack: stragglers that
  /// change from step to step raise no member's mean compute time, but
  /// under bsp everybody waits for whoever is slow at each clock.
  double wait_high = 0.25;
  /// Below this waiting share (and the balanced ratio) the slack narrows.
  double wait_low = 0.05;
  /// The reported loss rising by more than this fraction from one window
  /// to the next means the replicas drift apart: the mode tightens.
  double loss_rise = 0.1;
  /// Exchanging (scatter and gather, waits included) above this share of
  /// the median member's time lengthens the period (doubles it); below
  /// `comm_low` shortens it (halves it).
  double comm_high = 0.5;
  double comm_low = 0.15;
  /// A relaxation (a longer period, a wider slack) is a trial: kept when
  /// the median member's time per local step in its first window is at
  /// least this fraction below the window before, else reverted, and no
  /// relaxation is tried again for `hold_windows` windows.
  double min_gain = 0.05;
  std::uint64_t hold_windows = 4;
  std::uint64_t max_slack = 8;
  std::uint64_t max_period = 8;
  /// Whether the rule may choose asp (a straggler beyond what max_slack
  /// covers); off by default: bounded staleness keeps accuracy.
  bool allow_asp = false;

  /// The options as text, for the policy's name.
  [[nodiscard]] std::string text() const {
    auto num = [](double x) {
      char b[32];
      std::snprintf(b, sizeof b, "%g", x);
      return std::string(b);
    };
    return "straggler " + num(straggler_ratio) + ", balanced " + num(balanced_ratio) + ", wait " +
           num(wait_low) + ".." + num(wait_high) + ", loss rise " + num(loss_rise) + ", comm " +
           num(comm_low) + ".." + num(comm_high) + ", slack<=" + std::to_string(max_slack) +
           ", period<=" + std::to_string(max_period) + (allow_asp ? ", asp" : "");
  }
};

/// The rule. `decide` is called once per window with every live member's
/// observation (in the same order on every member) and the settings that
/// were in effect; it returns the settings of the next window. The only
/// state it keeps is the previous window's loss.
class controller {
 public:
  controller() = default;
  explicit controller(controller_options o) : o_(o) {}
  [[nodiscard]] const controller_options& options() const noexcept { return o_; }

  /// Compute time per clock of the slowest member over the median's (1 when
  /// nobody measured anything).
  [[nodiscard]] static double imbalance(std::span<const window_observation> obs) {
    std::vector<double> per;
    for (const auto& o : obs)
      if (o.clocks > 0) per.push_back(o.compute_seconds / static_cast<double>(o.clocks));
    if (per.size() < 2) return 1;
    std::sort(per.begin(), per.end());
    const double median = per[(per.size() - 1) / 2];  // lower median: robust to one straggler
    if (!(median > 0)) return 1;
    return per.back() / median;
  }
  /// The median member's share of time spent exchanging, waits included
  /// (exchange / (exchange + compute), as vector_stats::communication_share).
  [[nodiscard]] static double exchange_share(std::span<const window_observation> obs) {
    std::vector<double> share;
    for (const auto& o : obs) {
      const double total = o.exchange_seconds + o.compute_seconds;
      if (o.clocks > 0 && total > 0) share.push_back(o.exchange_seconds / total);
    }
    if (share.empty()) return 0;
    std::sort(share.begin(), share.end());
    return share[(share.size() - 1) / 2];
  }
  /// The median member's share of time spent waiting (wait / (exchange +
  /// compute)).
  [[nodiscard]] static double wait_share(std::span<const window_observation> obs) {
    std::vector<double> share;
    for (const auto& o : obs) {
      const double total = o.exchange_seconds + o.compute_seconds;
      if (o.clocks > 0 && total > 0) share.push_back(std::min(1.0, o.wait_seconds / total));
    }
    if (share.empty()) return 0;
    std::sort(share.begin(), share.end());
    return share[(share.size() - 1) / 2];
  }
  /// The mean of the reported losses (NaN when nobody reported one).
  [[nodiscard]] static double mean_loss(std::span<const window_observation> obs) {
    double sum = 0;
    std::size_t n = 0;
    for (const auto& o : obs)
      if (!std::isnan(o.loss)) {
        sum += o.loss;
        ++n;
      }
    return n == 0 ? std::numeric_limits<double>::quiet_NaN() : sum / static_cast<double>(n);
  }

  /// The median member's time per clock (its compute and exchange time,
  /// waits included, over its clocks): what a change of mode should lower.
  [[nodiscard]] static double time_per_clock(std::span<const window_observation> obs) {
    std::vector<double> per;
    for (const auto& o : obs)
      if (o.clocks > 0)
        per.push_back((o.compute_seconds + o.exchange_seconds) / static_cast<double>(o.clocks));
    if (per.empty()) return 0;
    std::sort(per.begin(), per.end());
    return per[(per.size() - 1) / 2];
  }

  /// The settings of the next window.
  [[nodiscard]] adaptive_settings decide(std::span<const window_observation> obs, adaptive_settings now) {
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
    // Time per local step: a longer period puts more steps into a clock.
    const double per_step = time_per_clock(obs) / static_cast<double>(std::max<std::uint64_t>(1, now.period));
    if (diverging) {
      // Replicas drift apart: one step towards bsp, and exchange more often.
      trial_.reset();
      adaptive_settings next = tighter(now);
      next.period = std::max<std::uint64_t>(1, now.period / 2);
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
    const double ratio = imbalance(obs);
    const double waiting = wait_share(obs);
    const double exchanging = exchange_share(obs);
    const bool may_relax = hold_ == 0;
    if (hold_ > 0) --hold_;
    // One relaxation at a time, so that the trial measures it: first
    // exchange less often when exchanging dominates, then widen the slack.
    if (exchanging > o_.comm_high && now.period < o_.max_period) {
      if (may_relax) next.period = std::min(o_.max_period, now.period * 2);
    } else if (ratio >= o_.straggler_ratio || waiting >= o_.wait_high) {
      if (may_relax) next = wider(now, ratio, waiting, max_clocks(obs));
    } else if (ratio < o_.balanced_ratio && waiting < o_.wait_low) {
      next = tighter(now);
    }
    if (exchanging < o_.comm_low) next.period = std::max<std::uint64_t>(1, next.period / 2);
    if (relaxes(now, next)) trial_ = trial{per_step, now};
    return next;
  }

 private:
  static std::uint64_t max_clocks(std::span<const window_observation> obs) {
    std::uint64_t c = 0;
    for (const auto& o : obs) c = std::max(c, o.clocks);
    return c;
  }
  struct trial {
    double per_step;  // the median member's time per local step, in the window before
    adaptive_settings before;
  };

  // Whether b waits less than a (a larger slack, or asp) or exchanges less
  // often.
  static bool relaxes(const adaptive_settings& a, const adaptive_settings& b) {
    auto rank = [](const adaptive_settings& s) {
      return s.mode == adaptive_mode::asp ? ~std::uint64_t{0} : s.mode == adaptive_mode::ssp ? s.slack : 0;
    };
    return rank(b) > rank(a) || b.period > a.period;
  }

  // Enough slack that the others need not block inside a window: in
  // `clocks` clocks they get ahead of a straggler r times slower by
  // clocks x (1 - 1/r); a member that waits a share w of its time would
  // have run about clocks x w clocks further.
  adaptive_settings wider(adaptive_settings now, double ratio, double waiting, std::uint64_t clocks) const {
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

  // One step towards bsp: asp -> ssp(max_slack), ssp(s) -> ssp(s / 2), ssp(1) -> bsp.
  adaptive_settings tighter(adaptive_settings s) const {
    if (s.mode == adaptive_mode::asp) {
      s.mode = adaptive_mode::ssp;
      s.slack = std::max<std::uint64_t>(1, o_.max_slack);
    } else if (s.mode == adaptive_mode::ssp) {
      s.slack /= 2;
      if (s.slack == 0) s.mode = adaptive_mode::bsp;
    }
    return s;
  }

  controller_options o_;
  double last_loss_ = std::numeric_limits<double>::quiet_NaN();
  std::optional<trial> trial_;  // the mode was relaxed at the last decision
  std::uint64_t hold_ = 0;      // windows left before the mode may relax again
  bool warm_ = false;           // the first window was seen
};

}  // namespace consistency
DML_END_NAMESPACE

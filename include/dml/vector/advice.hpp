// SPDX-License-Identifier: BSL-1.0
/// @file
/// How often to exchange: what a vector's statistics say about the time an
/// exchange costs against the computation between two, and a one-line
/// piece of advice when communication dominates. docs/exchange-cost.md has
/// a measured table of exchange costs to start from.
#pragma once

#include <dml/fwd.hpp>
#include <dml/vector/stats.hpp>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

DML_BEGIN_NAMESPACE

/// What the statistics of a vector say about its exchange interval.
struct exchange_advice {
  double share = 0;                 ///< of the time, spent exchanging (stats().communication_share())
  double seconds_per_exchange = 0;  ///< one scatter plus gather
  double compute_seconds = 0;       ///< the caller's work between two exchanges
  /// Exchange this many times less often (a power of two, at least 1) to
  /// bring the share to the target.
  double interval_factor = 1;
  bool dominates = false;  ///< the share is above one half
  std::string text;        ///< one line for a person; empty when nothing needs saying
};

/// Reads `s` (at least a few exchanges' worth) against a target share of
/// the time spent communicating (default 15 %): with an exchange costing E
/// and C of computation between two, exchanging every f-th time instead
/// makes the share E / (E + f C), so f ≥ E (1 − target) / (target C).
[[nodiscard]] inline exchange_advice advise(const vector_stats& s, double target = 0.15) {
  exchange_advice a;
  a.share = s.communication_share();
  a.seconds_per_exchange = s.seconds_per_exchange();
  a.compute_seconds = s.compute_seconds_per_exchange();
  a.dominates = a.share > 0.5;
  if (a.share > target && a.compute_seconds > 0) {
    const double f = a.seconds_per_exchange * (1 - target) / (target * a.compute_seconds);
    a.interval_factor = std::exp2(std::ceil(std::log2(std::max(f, 1.0))));
  }
  if (a.share > target) {
    char line[400];
    std::snprintf(
        line, sizeof line,
        "communication takes %.0f%% of the time (%.3g ms per exchange against %.3g ms of computation "
        "between two): exchange about %.0fx less often to bring it near %.0f%%, or use a topology with "
        "fewer neighbours (docs/exchange-cost.md)",
        100 * a.share, 1e3 * a.seconds_per_exchange, 1e3 * a.compute_seconds, a.interval_factor,
        100 * target);
    a.text = line;
  }
  return a;
}

namespace detail {
// Whether vectors print their advice line (DML_ADVICE=0 turns it off).
inline std::atomic<int>& advice_switch() {
  static std::atomic<int> on{[] {
    const char* v = std::getenv("DML_ADVICE");
    return v && std::string(v) == "0" ? 0 : 1;
  }()};
  return on;
}
}  // namespace detail

/// Turns the one-line advice vectors print when communication dominates
/// on or off for the whole process (default: on, unless DML_ADVICE=0).
inline void set_advice(bool on) noexcept { detail::advice_switch().store(on ? 1 : 0); }
[[nodiscard]] inline bool advice_enabled() noexcept { return detail::advice_switch().load() != 0; }

DML_END_NAMESPACE

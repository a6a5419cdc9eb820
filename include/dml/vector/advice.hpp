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
[[nodiscard]] DML_DECL exchange_advice advise(const vector_stats& s, double target = 0.15);

namespace detail {
// Whether vectors print their advice line (DML_ADVICE=0 turns it off).
DML_DECL std::atomic<int>& advice_switch();
}  // namespace detail

/// Turns the one-line advice vectors print when communication dominates
/// on or off for the whole process (default: on, unless DML_ADVICE=0).
inline void set_advice(bool on) noexcept { detail::advice_switch().store(on ? 1 : 0); }
[[nodiscard]] inline bool advice_enabled() noexcept { return detail::advice_switch().load() != 0; }

DML_END_NAMESPACE

#if !defined(DML_SEPARATE_COMPILATION)
#include <dml/vector/impl/advice.ipp>
#endif

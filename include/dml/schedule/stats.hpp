// SPDX-License-Identifier: BSL-1.0
/// @file
/// What an engine reports about a run, on each member.
#pragma once

#include <dml/fwd.hpp>

#include <cstdint>

DML_BEGIN_NAMESPACE
namespace schedule {

/// One member's account of a run.
struct run_stats {
  std::uint64_t iterations = 0;  ///< iterations whose results were applied
  std::uint64_t updates = 0;     ///< parameters updated by this member's update() calls (job sizes summed)
  std::uint64_t exchanges =
      0;                   ///< exchanges of results (one per iteration; all-gathers of the static engine)
  std::uint64_t sums = 0;  ///< exchanges made for context::sum
  double seconds = 0;      ///< wall time of the run on this member
  double schedule_seconds = 0;   ///< inside schedule() (its sums included)
  double update_seconds = 0;     ///< inside update()
  double aggregate_seconds = 0;  ///< inside aggregate() and progress() (waiting for results included)
  bool stopped = false;          ///< progress() ended the run before the last iteration
  /// View changes the run went on through (dynamic engine with a
  /// reshardable program: see dml::schedule::dynamic).
  std::uint64_t failures_survived = 0;
  /// Iterations scheduled and computed again after a failure (their results
  /// had not reached every survivor).
  std::uint64_t iterations_redone = 0;
};

}  // namespace schedule
DML_END_NAMESPACE

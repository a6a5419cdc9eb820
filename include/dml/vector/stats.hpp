// SPDX-License-Identifier: BSL-1.0
/// @file
/// Per-vector statistics. Tests use them to prove consistency guarantees and
/// benchmarks to report bytes moved.
#pragma once

#include <dml/fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

DML_BEGIN_NAMESPACE

/// Counters of one distributed vector on one member, since construction.
struct vector_stats {
  std::uint64_t scatters = 0;    ///< calls of scatter()
  std::uint64_t gathers = 0;     ///< calls of gather()
  std::uint64_t bytes_sent = 0;  ///< bytes written into peers' slots (headers included)
  /// The updates' own bytes among bytes_sent: values, or index/value pairs
  /// of a sparse update, without the slots' headers and footers.
  std::uint64_t payload_bytes_sent = 0;
  std::uint64_t bytes_received = 0;  ///< bytes of accepted updates read from own slots
  /// inputs_combined[k]: gathers that combined exactly k inputs.
  std::vector<std::uint64_t> inputs_combined;
  std::uint64_t full_gathers = 0;   ///< gathers that combined every live in-neighbour
  std::uint64_t torn_reads = 0;     ///< slot reads rejected because header and footer disagreed
  std::uint64_t stale_skipped = 0;  ///< updates present but not combined (too old or already combined)
  /// Gathers whose bounded stall ran out (consistency::ssp_bounded) before
  /// every live in-neighbour came within the slack.
  std::uint64_t stalls_expired = 0;
  /// In-neighbours those gathers combined nothing from: each lagged by more
  /// than the slack when the stall ran out (one count per gather and
  /// neighbour).
  std::uint64_t laggards_left_out = 0;
  /// Updates not combined before and never to be: older than the bound
  /// (consistency::asp_fresh), each counted once (also in stale_skipped).
  std::uint64_t too_old_skipped = 0;
  double wait_seconds = 0;  ///< time spent blocked in barriers and waits
  /// Time spent inside scatter(), scatter_async(), wait() and gather(): what
  /// an exchange costs the caller.
  double exchange_seconds = 0;
  /// Time from the end of each gather() to the start of the next scatter:
  /// the caller's own work between two exchanges.
  double compute_seconds = 0;
  std::uint64_t rebuilds = 0;  ///< view changes this vector was rebuilt for
  /// In-neighbour updates a gather could not combine because a view change
  /// lost them (the sender had moved past that round when the group shrank).
  std::uint64_t lost_in_view_change = 0;
  /// Markers written: scatters with dml::to{...} that left an out-neighbour
  /// out under a policy whose receivers must hear of it (header and footer,
  /// no payload; counted in bytes_sent).
  std::uint64_t markers_sent = 0;
  /// Markers read: an in-neighbour's scatter left this member out. A gather
  /// that heard from every live in-neighbour (an update or a marker) counts
  /// as full.
  std::uint64_t markers_received = 0;

  /// Share of gathers that combined every live in-neighbour (1 when none yet).
  [[nodiscard]] double full_share() const noexcept {
    return gathers == 0 ? 1.0 : static_cast<double>(full_gathers) / static_cast<double>(gathers);
  }
  /// Share of the time spent exchanging rather than computing (0 before
  /// the first round).
  [[nodiscard]] double communication_share() const noexcept {
    const double total = exchange_seconds + compute_seconds;
    return total <= 0 ? 0.0 : exchange_seconds / total;
  }
  /// Mean time of one exchange (scatter plus gather), in seconds.
  [[nodiscard]] double seconds_per_exchange() const noexcept {
    return gathers == 0 ? 0.0 : exchange_seconds / static_cast<double>(gathers);
  }
  /// Mean compute time between two exchanges, in seconds.
  [[nodiscard]] double compute_seconds_per_exchange() const noexcept {
    return gathers <= 1 ? 0.0 : compute_seconds / static_cast<double>(gathers - 1);
  }
  /// Inputs combined over all gathers.
  [[nodiscard]] std::uint64_t inputs_total() const noexcept {
    std::uint64_t s = 0;
    for (std::size_t k = 0; k < inputs_combined.size(); ++k) s += k * inputs_combined[k];
    return s;
  }
};

DML_END_NAMESPACE

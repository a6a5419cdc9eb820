// SPDX-License-Identifier: BSL-1.0
/// @file
/// Per-table statistics, since construction, on one member. Tests use them
/// to check the consistency guarantees and benchmarks to explain times.
#pragma once

#include <dml/fwd.hpp>

#include <cstdint>

DML_BEGIN_NAMESPACE

/// Counters of one table on one member.
struct table_stats {
  std::uint64_t reads = 0;            ///< calls of read() (outside a virtual iteration)
  std::uint64_t cache_hits = 0;       ///< reads served from the cache without fetching
  std::uint64_t own_reads = 0;        ///< reads of rows this member owns
  std::uint64_t reads_waited = 0;     ///< reads (or prefetches) that waited for the slack bound
  double wait_seconds = 0;            ///< time spent waiting (slack bound, ring space, sync)
  std::uint64_t updates = 0;          ///< calls of update()
  std::uint64_t clocks = 0;           ///< clocks ended (clock(), and the one sync() ends)
  std::uint64_t rows_fetched = 0;     ///< rows read from owners
  std::uint64_t fetches = 0;          ///< fetches from owners (one per owner and batch of rows)
  std::uint64_t gets = 0;             ///< one-sided reads issued (a fetch that waits polls: several)
  std::uint64_t torn_fetches = 0;     ///< fetches retried because the owner published meanwhile
  std::uint64_t messages_sent = 0;    ///< update messages written into owners' rings
  std::uint64_t bytes_sent = 0;       ///< bytes written into owners' rings
  std::uint64_t bytes_received = 0;   ///< bytes read from owners
  std::uint64_t batches_applied = 0;  ///< (member, clock) batches this member applied as owner
  std::uint64_t evictions = 0;        ///< rows evicted from the cache
  std::uint64_t rebuilds = 0;         ///< view changes the table was rebuilt for
  /// Row deltas of members that failed (a member's updates to one row in
  /// one clock travel as one delta), withdrawn in a view change, as far as
  /// they had reached this member as owner: a failed member's updates to
  /// rows it owned, or that it had not sent yet, reached nobody and are not
  /// counted anywhere.
  std::uint64_t lost_updates = 0;
  std::uint64_t migrations = 0;  ///< placements applied (end_recording with place_rows)
};

DML_END_NAMESPACE

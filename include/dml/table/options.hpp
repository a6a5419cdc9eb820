// SPDX-License-Identifier: BSL-1.0
/// @file
/// Settings of a parameter table: the IterStore specializations, each
/// switchable so that its effect can be measured, the cache capacity and
/// the size of the receive rings. Pass a `dml::table_options` to
/// `dml::make_table` next to the consistency policy.
#pragma once

#include <dml/fwd.hpp>

#include <cstddef>
#include <string>

DML_BEGIN_NAMESPACE

/// How `table::begin_recording` learns the access pattern.
enum class recording {
  /// Reads return rows of zeros and updates and clocks are only noted:
  /// nothing is sent and nothing changes (IterStore's virtual iteration).
  /// The code that runs it must not depend on the values it reads.
  virtual_iteration,
  /// Reads, updates and clocks work as usual and are noted as well (the
  /// first real iteration).
  real_iteration,
};

/// The settings of one table; every member must give the same ones (they
/// are compared when the table is built, like its shape and policy).
///
/// The four specializations need an access pattern: they take effect at
/// `table::end_recording()` and change nothing about what reads return,
/// only how fast (docs/tables.md).
struct table_options {
  /// Place each row on a member that reads or updates it (the least loaded
  /// one among them); otherwise row r lives on the (r mod n)-th live member.
  bool place_rows = true;
  /// Send each clock's updates to an owner as one batch whose layout (row
  /// ids, then values) is built once from the pattern and reused every
  /// clock; otherwise every updated row is its own message.
  bool batch_updates = true;
  /// At the first read of a clock, refresh every cached row of the pattern
  /// that is too stale, owner by owner in contiguous runs under one version
  /// check; otherwise each row is fetched when it is read.
  bool prefetch = true;
  /// Cache the `cache_rows` rows the pattern reads most and never evict
  /// them; otherwise (and before a pattern is known) least recently used
  /// rows are evicted.
  bool static_cache = true;
  /// Rows of other owners kept in this member's cache; 0: no limit.
  std::size_t cache_rows = 0;
  /// Words (8 bytes) of the receive ring each member keeps for each sender;
  /// raised to hold at least two messages of one row. Larger rings let
  /// senders run further ahead of a busy owner.
  std::size_t ring_words = std::size_t{1} << 15;

  /// Failures (transports that can shrink their group): keep what a failed
  /// member added up to the last `sync()` every survivor completed. Each
  /// sync() then all-gathers the whole table (every member holds it twice:
  /// as of the last sync and the one before, rows x row_length elements
  /// each), and a rebuild starts each row from that copy plus the
  /// survivors' own updates since; only the failed members' updates after
  /// it are withdrawn (stats().lost_updates). Off: a rebuild starts from
  /// zero and withdraws everything the failed members ever added (no copy,
  /// no cost at sync). See docs/tables.md, "Failures".
  bool keep_through_sync = false;

  /// One line naming every setting (what members compare).
  [[nodiscard]] std::string describe() const {
    return std::string("place_rows=") + (place_rows ? "1" : "0") +
           " batch_updates=" + (batch_updates ? "1" : "0") + " prefetch=" + (prefetch ? "1" : "0") +
           " static_cache=" + (static_cache ? "1" : "0") + " cache_rows=" + std::to_string(cache_rows) +
           " ring_words=" + std::to_string(ring_words) +
           " keep_through_sync=" + (keep_through_sync ? "1" : "0");
  }
};

DML_END_NAMESPACE

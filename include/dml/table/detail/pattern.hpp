// SPDX-License-Identifier: BSL-1.0
// Internal: the access pattern a member records between begin_recording()
// and end_recording(): which rows it reads and updates and how often, and
// which rows each clock of the recorded iteration reads.
#pragma once

#include <dml/fwd.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

DML_BEGIN_NAMESPACE
namespace detail {

struct access_pattern {
  std::unordered_map<std::uint64_t, std::uint64_t> reads;    // row -> reads
  std::unordered_map<std::uint64_t, std::uint64_t> updates;  // row -> updates
  std::uint64_t clocks = 0;                                  // clock() calls during the recording
  // Per phase (position within the recorded iteration): row -> reads. Phase
  // k holds the reads between the k-th and the (k+1)-th clock(); after
  // fold() there are period() phases.
  std::vector<std::unordered_map<std::uint64_t, std::uint64_t>> phase_reads;

  void clear() {
    reads.clear();
    updates.clear();
    clocks = 0;
    phase_reads.clear();
  }
  void note_read(std::uint64_t row) {
    ++reads[row];
    const auto k = static_cast<std::size_t>(clocks);
    if (phase_reads.size() <= k) phase_reads.resize(k + 1);
    ++phase_reads[k][row];
  }
  /// Clocks the pattern repeats after: the clock() calls of the recording
  /// (1 when it had none).
  [[nodiscard]] std::size_t period() const noexcept {
    return clocks == 0 ? 1 : static_cast<std::size_t>(clocks);
  }
  /// Folds the reads after the last clock() (those of the clock that
  /// follows the recording) into phase 0, and gives every phase an entry.
  /// Idempotent.
  void fold() {
    const std::size_t p = period();
    for (std::size_t k = p; k < phase_reads.size(); ++k)
      for (const auto& [r, n] : phase_reads[k]) phase_reads[k % p][r] += n;
    phase_reads.resize(p);
  }
  /// Whether phase k reads `row` (after fold()).
  [[nodiscard]] bool phase_reads_row(std::size_t k, std::uint64_t row) const {
    return k < phase_reads.size() && phase_reads[k].contains(row);
  }
  /// Every row read or updated, ascending.
  [[nodiscard]] std::vector<std::uint64_t> accessed() const {
    std::vector<std::uint64_t> out;
    out.reserve(reads.size() + updates.size());
    for (const auto& [r, k] : reads) out.push_back(r);
    for (const auto& [r, k] : updates)
      if (!reads.contains(r)) out.push_back(r);
    std::sort(out.begin(), out.end());
    return out;
  }
  /// Rows read, most read first (ties: lower row first); at most `limit`
  /// of them (0: all).
  [[nodiscard]] std::vector<std::uint64_t> most_read(std::size_t limit) const {
    return most_read(reads, limit);
  }
  /// The same for the rows of one count map (a phase's).
  [[nodiscard]] static std::vector<std::uint64_t> most_read(
      const std::unordered_map<std::uint64_t, std::uint64_t>& counts, std::size_t limit) {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> v(counts.begin(), counts.end());
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
      return a.second != b.second ? a.second > b.second : a.first < b.first;
    });
    if (limit != 0 && v.size() > limit) v.resize(limit);
    std::vector<std::uint64_t> out;
    out.reserve(v.size());
    for (const auto& [r, k] : v) out.push_back(r);
    return out;
  }
};

}  // namespace detail
DML_END_NAMESPACE

// SPDX-License-Identifier: BSL-1.0
// Internal: the access pattern a member records between begin_recording()
// and end_recording(): which rows it reads and updates and how often.
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
  std::uint64_t clocks = 0;

  void clear() {
    reads.clear();
    updates.clear();
    clocks = 0;
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
    std::vector<std::pair<std::uint64_t, std::uint64_t>> v(reads.begin(), reads.end());
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

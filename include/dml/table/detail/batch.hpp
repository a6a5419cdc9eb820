// SPDX-License-Identifier: BSL-1.0
// Internal: the updates a member makes to one owner's rows in one clock, and
// those batches once committed: queued for the owner's ring, and kept until
// the owner has applied them so that the member's reads can add its own
// updates the owner has not applied yet (read-your-writes).
//
// A batch is two arrays: row ids and their values (stride elements per row:
// the row padded to whole words), the layout of a message in the ring, so a
// batch is sent without marshalling. With an access pattern the first
// `static_count` rows are fixed (the rows the pattern updates, found through
// the table's static slot per row); rows outside it follow in a hash map.
#pragma once

#include <dml/fwd.hpp>
#include <dml/table/detail/flat_index.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

DML_BEGIN_NAMESPACE
namespace detail {

inline constexpr std::uint32_t no_slot = 0xffffffffu;

template <class T>
struct row_batch {
  std::shared_ptr<const std::vector<std::uint64_t>> static_ids;  // rows [0, static_count)
  std::size_t static_count = 0;
  std::vector<std::uint64_t> extra_ids;  // rows [static_count, count)
  flat_index extra;                      // row -> position
  std::vector<T> values;                 // count * stride
  std::size_t stride = 0;
  bool touched = false;

  [[nodiscard]] std::size_t count() const noexcept { return static_count + extra_ids.size(); }
  [[nodiscard]] std::uint64_t id(std::size_t i) const {
    return i < static_count ? (*static_ids)[i] : extra_ids[i - static_count];
  }

  /// An empty batch with the given static rows (values zero).
  void reset(std::shared_ptr<const std::vector<std::uint64_t>> ids, std::size_t row_stride) {
    static_ids = std::move(ids);
    static_count = static_ids ? static_ids->size() : 0;
    stride = row_stride;
    extra_ids.clear();
    extra.clear();
    values.assign(static_count * stride, T{});
    touched = false;
  }

  /// The values of `row` (its static position, or no_slot), made on first use.
  T* at(std::uint64_t row, std::uint32_t slot) {
    touched = true;
    if (slot != no_slot && slot < static_count) return values.data() + std::size_t{slot} * stride;
    const auto [at, fresh] = extra.try_emplace(row, static_cast<std::uint32_t>(count()));
    if (fresh) {
      extra_ids.push_back(row);
      values.resize(values.size() + stride, T{});
    }
    return values.data() + std::size_t{at} * stride;
  }

  /// The values of `row`, or nullptr when the batch has none.
  [[nodiscard]] const T* find(std::uint64_t row, std::uint32_t slot) const {
    if (slot != no_slot && slot < static_count) return values.data() + std::size_t{slot} * stride;
    const auto* at = extra.find(row);
    return at ? values.data() + std::size_t{*at} * stride : nullptr;
  }
};

/// A committed batch on its way to (and until applied by) its owner.
template <class T>
struct sent_batch {
  row_batch<T> rows;
  std::uint64_t kind = 0;   // table_wire::updates or table_wire::values
  std::uint64_t clock = 0;  // the clock whose updates these are
  std::size_t written = 0;  // rows written into the ring so far
  bool complete = false;    // the end marker is written too
  std::uint64_t end = 0;    // ring position (words, ever) after the end marker
};

}  // namespace detail
DML_END_NAMESPACE

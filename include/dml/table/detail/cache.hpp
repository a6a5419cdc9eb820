// SPDX-License-Identifier: BSL-1.0
// Internal: a member's copies of other owners' rows. Each copy is the
// owner's published row at some age plus this member's own updates the
// owner had not applied then, kept up to date with the member's later
// updates. Two policies: least recently used eviction over a capacity (0:
// none), or a static set of rows chosen from the access pattern that is
// never evicted (IterStore's static cache).
#pragma once

#include <dml/fwd.hpp>
#include <dml/table/detail/flat_index.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <span>
#include <unordered_set>
#include <vector>

DML_BEGIN_NAMESPACE
namespace detail {

template <class T>
class row_cache {
 public:
  struct entry {
    std::uint64_t row = 0;
    std::uint64_t complete = 0;     // clocks of every member included (age + 1)
    std::uint64_t own_applied = 0;  // this member's clocks the owner had applied
    std::uint64_t generation = 0;   // the table's generation when fetched (sync, view change)
    std::uint64_t fetched = 0;      // this member's clock when fetched
    std::list<std::uint32_t>::iterator lru;
  };

  void configure(std::size_t stride, std::size_t capacity) {
    stride_ = stride;
    capacity_ = capacity;
    allowed_.reset();
    clear();
  }
  /// Only these rows are cached, and never evicted.
  void make_static(std::unordered_set<std::uint64_t> rows) {
    clear();
    allowed_ = std::make_unique<std::unordered_set<std::uint64_t>>(std::move(rows));
  }
  [[nodiscard]] bool is_static() const noexcept { return allowed_ != nullptr; }
  [[nodiscard]] bool cacheable(std::uint64_t row) const { return !allowed_ || allowed_->contains(row); }

  void clear() {
    index_.clear();
    entries_.clear();
    values_.clear();
    free_.clear();
    lru_.clear();
  }

  [[nodiscard]] entry* find(std::uint64_t row) {
    const auto* at = index_.find(row);
    return at ? &entries_[*at] : nullptr;
  }
  [[nodiscard]] const entry* find(std::uint64_t row) const {
    const auto* at = index_.find(row);
    return at ? &entries_[*at] : nullptr;
  }
  /// Marks e used now (for LRU).
  void touch(entry& e) {
    if (!allowed_) lru_.splice(lru_.end(), lru_, e.lru);
  }
  /// A slot for row (which must not be cached), or nullptr when the policy
  /// keeps it out. `evicted` counts evictions.
  entry* insert(std::uint64_t row, std::uint64_t& evicted) {
    if (!cacheable(row)) return nullptr;
    if (!allowed_ && capacity_ != 0 && index_.size() >= capacity_) {
      const std::uint32_t victim = lru_.front();
      lru_.pop_front();
      index_.erase(entries_[victim].row);
      free_.push_back(victim);
      ++evicted;
    }
    std::uint32_t i;
    if (!free_.empty()) {
      i = free_.back();
      free_.pop_back();
    } else {
      i = static_cast<std::uint32_t>(entries_.size());
      entries_.emplace_back();
      values_.resize(values_.size() + stride_);
    }
    entry& e = entries_[i];
    e = entry{};
    e.row = row;
    if (!allowed_) e.lru = lru_.insert(lru_.end(), i);
    (void)index_.try_emplace(row, i);
    return &e;
  }
  [[nodiscard]] std::span<T> values(const entry& e) {
    const auto i = static_cast<std::size_t>(&e - entries_.data());
    return {values_.data() + i * stride_, stride_};
  }
  [[nodiscard]] std::size_t size() const noexcept { return index_.size(); }

 private:
  std::size_t stride_ = 0, capacity_ = 0;
  flat_index index_;
  std::vector<entry> entries_;
  std::vector<T> values_;
  std::vector<std::uint32_t> free_;
  std::list<std::uint32_t> lru_;
  std::unique_ptr<std::unordered_set<std::uint64_t>> allowed_;
};

}  // namespace detail
DML_END_NAMESPACE

// SPDX-License-Identifier: BSL-1.0
// Internal: row id -> position, an open-addressing hash table in one array.
// The table's cache index, a batch's extra rows and the contributions look a
// row up at every read and update; a node-based std::unordered_map made each
// lookup chase pointers into nodes scattered by earlier allocations (after a
// recording of real iterations, PageRank's time per iteration was a third
// higher than after a virtual one with the same counters, all of it in
// lookups). Here a lookup reads one or two neighbouring slots.
#pragma once

#include <dml/fwd.hpp>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

DML_BEGIN_NAMESPACE
namespace detail {

class flat_index {
 public:
  /// The one key that cannot be stored (row ids are far below it).
  static constexpr std::uint64_t no_key = ~std::uint64_t{0};

  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }

  /// The position stored for key, or nullptr.
  [[nodiscard]] const std::uint32_t* find(std::uint64_t key) const noexcept {
    if (size_ == 0) return nullptr;
    for (std::size_t i = home(key);; i = (i + 1) & mask_) {
      if (slots_[i].key == key) return &slots_[i].value;
      if (slots_[i].key == no_key) return nullptr;
    }
  }
  [[nodiscard]] std::uint32_t* find(std::uint64_t key) noexcept {
    return const_cast<std::uint32_t*>(std::as_const(*this).find(key));
  }

  /// Stores value for key unless key is there; returns the stored value and
  /// whether it was inserted now.
  std::pair<std::uint32_t, bool> try_emplace(std::uint64_t key, std::uint32_t value) {
    if (key == no_key) throw std::logic_error("dml::detail::flat_index: the reserved key");
    if (2 * (size_ + 1) > slots_.size()) grow();
    std::size_t i = home(key);
    for (; slots_[i].key != no_key; i = (i + 1) & mask_)
      if (slots_[i].key == key) return {slots_[i].value, false};
    slots_[i] = {key, value};
    ++size_;
    return {value, true};
  }

  /// Removes key; false when it was not there.
  bool erase(std::uint64_t key) noexcept {
    if (size_ == 0) return false;
    std::size_t i = home(key);
    for (; slots_[i].key != key; i = (i + 1) & mask_)
      if (slots_[i].key == no_key) return false;
    // Backward shift: move later entries of the probe run into the hole
    // when their home does not lie cyclically in (hole, their slot].
    for (std::size_t j = (i + 1) & mask_; slots_[j].key != no_key; j = (j + 1) & mask_) {
      const std::size_t h = home(slots_[j].key);
      const bool stays = i <= j ? (i < h && h <= j) : (i < h || h <= j);
      if (!stays) {
        slots_[i] = slots_[j];
        i = j;
      }
    }
    slots_[i].key = no_key;
    --size_;
    return true;
  }

  /// Removes every entry. Keeps the array unless it is much larger than the
  /// entries it held, so that a map grown once for a large batch does not
  /// make every later clear() and lookup pay for it.
  void clear() noexcept {
    if (slots_.size() > 8 * (size_ + 8)) {
      slots_.clear();
      slots_.shrink_to_fit();
      mask_ = 0;
      shift_ = 63;
    } else {
      for (auto& s : slots_) s.key = no_key;
    }
    size_ = 0;
  }

  /// Calls f(key, value) for every entry, in no particular order.
  template <class F>
  void for_each(F&& f) const {
    for (const auto& s : slots_)
      if (s.key != no_key) f(s.key, s.value);
  }

 private:
  struct slot {
    std::uint64_t key = no_key;
    std::uint32_t value = 0;
  };

  [[nodiscard]] std::size_t home(std::uint64_t key) const noexcept {
    // Fibonacci hashing, the product's top bits: rows that differ by a
    // power of two spread out.
    return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_);
  }

  void grow() {
    const std::size_t capacity = slots_.empty() ? 16 : 2 * slots_.size();
    std::vector<slot> old = std::exchange(slots_, std::vector<slot>(capacity));
    mask_ = capacity - 1;
    shift_ = 64 - std::countr_zero(capacity);
    size_ = 0;
    for (const auto& s : old)
      if (s.key != no_key) (void)try_emplace(s.key, s.value);
  }

  std::vector<slot> slots_;
  std::size_t mask_ = 0;
  int shift_ = 63;  // 64 - log2(capacity)
  std::size_t size_ = 0;
};

}  // namespace detail
DML_END_NAMESPACE

// SPDX-License-Identifier: BSL-1.0
// Internal: how a vector's update is laid out in a slot's payload, for each
// representation. The dense codec sends the local buffer as it is; the
// sparse codec sends the nonzeros as index words (uint32) followed by value
// words, up to a capacity. On the receiving side an update becomes a
// gather::input either in place (a view into the slot: bsp and notify_ack,
// where nobody rewrites the slot while it is combined) or as a copy into an
// inbox (asp and ssp, where the sender may be rewriting it).
#pragma once

#include <dml/error.hpp>
#include <dml/fwd.hpp>
#include <dml/vector/detail/slots.hpp>
#include <dml/vector/gather.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

DML_BEGIN_NAMESPACE
namespace detail {

/// A received update copied out of its slot.
template <class T>
struct inbox {
  std::vector<T> values;
  std::vector<std::uint32_t> indices;
};

/// Reinterprets slot words as elements: slot memory is written as 64-bit
/// words by the transport and read as T in place, with the protocol's
/// acquire/release synchronization between the writes and the reads.
template <class T>
[[nodiscard]] std::span<const T> words_as(std::span<const std::uint64_t> words, std::size_t count) noexcept {
  return {reinterpret_cast<const T*>(words.data()), count};
}

template <class T>
class dense_codec {
 public:
  explicit dense_codec(std::size_t n, std::size_t /*capacity*/ = 0) : n_(n) {}

  [[nodiscard]] std::size_t payload_words() const noexcept { return words_for(n_ * sizeof(T)); }

  /// The update to send from `local`; returns its element count. The
  /// payload is read from `local` itself when it is sent.
  std::uint64_t encode(std::span<const T> local) {
    local_ = local;
    return n_;
  }
  /// The same, from a copy of `local` (which may then change while the
  /// update is sent in the background).
  std::uint64_t encode_copy(std::span<const T> local) {
    copy_.assign(local.begin(), local.end());
    local_ = copy_;
    return n_;
  }
  [[nodiscard]] std::array<payload_part, 2> parts(std::uint64_t /*length*/) const {
    return {payload_part{0, std::as_bytes(local_)}, payload_part{}};
  }
  [[nodiscard]] std::size_t payload_bytes(std::uint64_t /*length*/) const noexcept { return sizeof(T) * n_; }

  [[nodiscard]] bool valid_length(std::uint64_t length) const noexcept { return length == n_; }
  /// The update at `word` in place.
  template <class Segment>
  bool view(const Segment& seg, std::size_t word, std::uint64_t /*length*/, gather::input<T>& in) const {
    in.values = words_as<T>(seg.view(word, payload_words()), n_);
    return true;
  }
  /// The update at `word` copied into `box` (a torn slot is caught by the
  /// caller's header check after the copy).
  template <class Segment>
  bool copy(Segment& seg, std::size_t word, std::uint64_t /*length*/, inbox<T>& box,
            gather::input<T>& in) const {
    box.values.resize(n_);
    seg.read(word, std::as_writable_bytes(std::span(box.values)));
    in.values = box.values;
    return true;
  }

 private:
  std::size_t n_;
  std::span<const T> local_;
  std::vector<T> copy_;  // encode_copy()
};

template <class T>
class sparse_codec {
 public:
  sparse_codec(std::size_t n, std::size_t capacity) : n_(n), capacity_(capacity) {}

  [[nodiscard]] std::size_t index_words() const noexcept {
    return words_for(capacity_ * sizeof(std::uint32_t));
  }
  [[nodiscard]] std::size_t payload_words() const noexcept {
    return index_words() + words_for(capacity_ * sizeof(T));
  }

  /// Packs the nonzeros of `local` (a copy: `local` may change afterwards).
  std::uint64_t encode_copy(std::span<const T> local) { return encode(local); }
  /// Packs the nonzeros of `local`; throws config_error, before anything is
  /// sent, when there are more than the capacity.
  std::uint64_t encode(std::span<const T> local) {
    std::size_t nnz = 0;
    for (const T& x : local) nnz += x != T{} ? 1 : 0;
    if (nnz > capacity_)
      throw config_error("dml::sparse: scatter of " + std::to_string(nnz) +
                         " nonzeros exceeds the capacity " + std::to_string(capacity_) +
                         " (nothing was sent)");
    indices_.resize(nnz);
    values_.resize(nnz);
    std::size_t k = 0;
    for (std::size_t i = 0; i < local.size(); ++i) {
      if (local[i] == T{}) continue;
      indices_[k] = static_cast<std::uint32_t>(i);
      values_[k] = local[i];
      ++k;
    }
    return nnz;
  }
  /// Packs given index/value pairs (ascending indices, below the length, at
  /// most the capacity): O(pairs), for callers that know what changed.
  std::uint64_t encode_pairs(std::span<const std::uint32_t> indices, std::span<const T> values) {
    if (indices.size() != values.size())
      throw config_error("dml::dist_vector::scatter(indices, values): " + std::to_string(indices.size()) +
                         " indices but " + std::to_string(values.size()) + " values");
    if (indices.size() > capacity_)
      throw config_error("dml::sparse: scatter of " + std::to_string(indices.size()) +
                         " pairs exceeds the capacity " + std::to_string(capacity_) + " (nothing was sent)");
    for (std::size_t k = 0; k < indices.size(); ++k)
      if (indices[k] >= n_ || (k > 0 && indices[k] <= indices[k - 1]))
        throw config_error("dml::dist_vector::scatter(indices, values): index " + std::to_string(indices[k]) +
                           " at position " + std::to_string(k) +
                           (indices[k] >= n_ ? " is outside the vector of " + std::to_string(n_) + " elements"
                                             : " does not ascend strictly (nothing was sent)"));
    indices_.assign(indices.begin(), indices.end());
    values_.assign(values.begin(), values.end());
    return indices.size();
  }
  [[nodiscard]] std::array<payload_part, 2> parts(std::uint64_t /*length*/) const {
    return {payload_part{0, std::as_bytes(std::span(indices_))},
            payload_part{index_words(), std::as_bytes(std::span(values_))}};
  }
  [[nodiscard]] std::size_t payload_bytes(std::uint64_t length) const noexcept {
    return (sizeof(std::uint32_t) + sizeof(T)) * length;
  }

  [[nodiscard]] bool valid_length(std::uint64_t length) const noexcept { return length <= capacity_; }
  template <class Segment>
  bool view(const Segment& seg, std::size_t word, std::uint64_t length, gather::input<T>& in) const {
    const auto count = static_cast<std::size_t>(length);
    in.indices = words_as<std::uint32_t>(seg.view(word, index_words()), count);
    in.values = words_as<T>(seg.view(word + index_words(), payload_words() - index_words()), count);
    in.sparse_values = true;
    return indices_valid(in.indices);
  }
  template <class Segment>
  bool copy(Segment& seg, std::size_t word, std::uint64_t length, inbox<T>& box, gather::input<T>& in) const {
    const auto count = static_cast<std::size_t>(length);
    box.indices.resize(count);
    box.values.resize(count);
    seg.read(word, std::as_writable_bytes(std::span(box.indices)));
    seg.read(word + index_words(), std::as_writable_bytes(std::span(box.values)));
    in.indices = box.indices;
    in.values = box.values;
    in.sparse_values = true;
    return indices_valid(in.indices);
  }

 private:
  // An index beyond the length cannot come from a well-formed writer.
  [[nodiscard]] bool indices_valid(std::span<const std::uint32_t> indices) const noexcept {
    for (const std::uint32_t i : indices)
      if (i >= n_) return false;
    return true;
  }

  std::size_t n_;
  std::size_t capacity_;
  std::vector<std::uint32_t> indices_;
  std::vector<T> values_;
};

}  // namespace detail
DML_END_NAMESPACE

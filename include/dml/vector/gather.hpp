// SPDX-License-Identifier: BSL-1.0
/// @file
/// Gather functors: how a member combines what its in-neighbours sent with
/// its own vector. A gather functor is any callable
///
///     void f(std::span<T> own, std::span<const dml::gather::input<T>> inputs);
///
/// that rewrites `own` in place. Each input carries the sender, the sender's
/// clock for that update, and its values: dense (one value per element) or
/// sparse (index/value pairs; elements not listed were not sent).
#pragma once

#include <dml/fwd.hpp>

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <type_traits>

DML_BEGIN_NAMESPACE
namespace gather {

/// One received update handed to a gather functor.
template <class T>
struct input {
  member_id sender = 0;
  std::uint64_t clock = 0;                 ///< the sender's clock when it scattered this update
  std::span<const T> values;               ///< dense: every element; sparse: one per index
  std::span<const std::uint32_t> indices;  ///< the elements' indices (sparse only)
  bool sparse_values = false;              ///< true when values pair up with indices

  [[nodiscard]] bool is_sparse() const noexcept { return sparse_values; }

  /// Calls f(index, value) for every element the update carries.
  template <class F>
  void for_each(F&& f) const {
    if (!sparse_values) {
      for (std::size_t i = 0; i < values.size(); ++i) f(i, values[i]);
    } else {
      for (std::size_t k = 0; k < indices.size(); ++k) f(static_cast<std::size_t>(indices[k]), values[k]);
    }
  }
};

/// A gather functor for element type T.
template <class G, class T>
concept gather_functor = std::invocable<G&, std::span<T>, std::span<const input<T>>>;

namespace detail {

/// Whether every input carries one value per element of own.
template <class T>
[[nodiscard]] bool all_dense(std::span<T> own, std::span<const input<T>> inputs) noexcept {
  for (const auto& in : inputs)
    if (in.sparse_values || in.values.size() != own.size()) return false;
  return true;
}

/// own[i] ← finish(own[i] + in_1[i] + ... + in_k[i]) in one pass over
/// blocks that stay in cache: each input is read once and own is read and
/// written once, however many inputs there are. The additions happen in
/// the same order as input by input, so the result is the same to the bit.
template <class T, class Finish>
void fused_sum(std::span<T> own, std::span<const input<T>> inputs, Finish finish) {
  constexpr std::size_t block = 2048;
  const std::size_t n = own.size();
  for (std::size_t first = 0; first < n; first += block) {
    const std::size_t end = std::min(n, first + block);
    T* __restrict out = own.data();
    for (const auto& in : inputs) {
      const T* __restrict x = in.values.data();
      for (std::size_t i = first; i < end; ++i) out[i] += x[i];
    }
    for (std::size_t i = first; i < end; ++i) out[i] = finish(out[i]);
  }
}

}  // namespace detail

/// own ← (own + Σ inputs) / (1 + number of inputs). Elements a sparse input
/// does not carry count as zero, so dense and sparse give the same result.
struct average {
  using policy_slot = slot::gather;
  [[nodiscard]] static constexpr std::string_view name() noexcept { return "average"; }
  template <class T>
  void operator()(std::span<T> own, std::span<const input<T>> inputs) const {
    if (inputs.empty()) return;
    const T k = static_cast<T>(inputs.size() + 1);
    if (detail::all_dense(own, inputs)) {
      detail::fused_sum(own, inputs, [k](T x) { return x / k; });
      return;
    }
    for (const auto& in : inputs) in.for_each([&](std::size_t i, T v) { own[i] += v; });
    for (auto& x : own) x /= k;
  }
};

/// own ← Σ inputs / number of inputs; own is kept when nothing arrived.
struct average_received {
  using policy_slot = slot::gather;
  [[nodiscard]] static constexpr std::string_view name() noexcept { return "average_received"; }
  template <class T>
  void operator()(std::span<T> own, std::span<const input<T>> inputs) const {
    if (inputs.empty()) return;
    std::fill(own.begin(), own.end(), T{});
    const T k = static_cast<T>(inputs.size());
    if (detail::all_dense(own, inputs)) {
      detail::fused_sum(own, inputs, [k](T x) { return x / k; });
      return;
    }
    for (const auto& in : inputs) in.for_each([&](std::size_t i, T v) { own[i] += v; });
    for (auto& x : own) x /= k;
  }
};

/// own ← own + Σ inputs.
struct sum {
  using policy_slot = slot::gather;
  [[nodiscard]] static constexpr std::string_view name() noexcept { return "sum"; }
  template <class T>
  void operator()(std::span<T> own, std::span<const input<T>> inputs) const {
    if (detail::all_dense(own, inputs)) {
      detail::fused_sum(own, inputs, [](T x) { return x; });
      return;
    }
    for (const auto& in : inputs) in.for_each([&](std::size_t i, T v) { own[i] += v; });
  }
};

/// own ← elementwise maximum of own and the inputs (a sparse input competes
/// only on the elements it carries).
struct max {
  using policy_slot = slot::gather;
  [[nodiscard]] static constexpr std::string_view name() noexcept { return "max"; }
  template <class T>
  void operator()(std::span<T> own, std::span<const input<T>> inputs) const {
    for (const auto& in : inputs) in.for_each([&](std::size_t i, T v) { own[i] = std::max(own[i], v); });
  }
};

/// Hogwild-style: the newest input wins. Inputs are applied from oldest to
/// newest clock (equal clocks: higher sender id first), so for every element
/// the newest update carrying it ends up in own; with dense inputs own
/// becomes a copy of the newest input. Own is kept when nothing arrived.
struct replace {
  using policy_slot = slot::gather;
  [[nodiscard]] static constexpr std::string_view name() noexcept { return "replace"; }
  template <class T>
  void operator()(std::span<T> own, std::span<const input<T>> inputs) const {
    // Few inputs (one per in-neighbour): a selection pass per input is cheap
    // and needs no allocation.
    std::uint64_t last_clock = 0;
    member_id last_sender = ~member_id{0};
    bool first = true;
    for (std::size_t applied = 0; applied < inputs.size(); ++applied) {
      const input<T>* next = nullptr;
      for (const auto& in : inputs) {
        const bool after_last =
            first || in.clock > last_clock || (in.clock == last_clock && in.sender < last_sender);
        if (!after_last) continue;
        if (!next || in.clock < next->clock || (in.clock == next->clock && in.sender > next->sender))
          next = &in;
      }
      if (!next) break;
      next->for_each([&](std::size_t i, T v) { own[i] = v; });
      last_clock = next->clock;
      last_sender = next->sender;
      first = false;
    }
  }
};

}  // namespace gather
DML_END_NAMESPACE

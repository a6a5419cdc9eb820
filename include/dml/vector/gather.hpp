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
///
/// When the graph carries mixing weights (topology::graph::with_weights),
/// each input also carries the weight the receiver gives its sender, and a
/// functor that accepts a third argument `const dml::gather::mixing&`
/// (`average` does) is called with the receiver's own weight.
#pragma once

#include <dml/error.hpp>
#include <dml/fwd.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <vector>

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
  double weight = 1;                       ///< the receiver's weight for this sender (1 without weights)
  /// The weight the sender set for this update (dist_vector::set_weight);
  /// 1 unless the gather carries weights (see weighted_average).
  double sender_weight = 1;

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

/// What a weighted graph tells a gather about the receiver: the weight it
/// gives its own value. `weighted` is false when the graph carries no
/// weights (every weight is then 1 and `self` is 1).
struct mixing {
  double self = 1;
  bool weighted = false;
  /// The weight this member set for its own last update
  /// (dist_vector::set_weight); 1 unless the gather carries weights.
  double own_weight = 1;
};

/// Whether a gather functor uses the weights senders set: it says so with
/// `static constexpr bool carries_weights = true;`. Its vector's slots then
/// carry each sender's weight (one word more per slot).
template <class G>
inline constexpr bool carries_weights_v = requires {
  requires G::carries_weights;
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

/// One block of fused_sum: B elements from `first` on. B is a constant, so
/// the loops have a fixed trip count that no vector width leaves a
/// remainder of: GCC vectorizes them at -O2 as well (at -O2 its cost model
/// takes only loops that need no remainder or runtime checks; a loop over
/// [first, end) stayed scalar there and the combine took 2.6 times as long
/// as at -O3 for 1M floats).
template <std::size_t B, class T, class Term, class Finish>
void fused_block(T* __restrict out, std::span<const input<T>> inputs, std::size_t first, Term& term,
                 Finish& finish) {
  for (const auto& in : inputs) {
    const T* __restrict x = in.values.data() + first;
    for (std::size_t i = 0; i < B; ++i) out[i] += term(x[i]);
  }
  for (std::size_t i = 0; i < B; ++i) out[i] = finish(out[i]);
}

/// own[i] ← finish(own[i] + term(in_1[i]) + ... + term(in_k[i])) in one
/// pass over blocks that stay in cache: each input is read once and own is
/// read and written once, however many inputs there are. The additions
/// happen in the same order as input by input, so the result is the same
/// to the bit.
template <class T, class Term, class Finish>
void fused_sum(std::span<T> own, std::span<const input<T>> inputs, Term term, Finish finish) {
  constexpr std::size_t block = 2048;
  const std::size_t n = own.size();
  const std::size_t full = n - n % block;
  T* const out = own.data();
  for (std::size_t first = 0; first < full; first += block)
    fused_block<block>(out + first, inputs, first, term, finish);
  constexpr std::size_t step = 64;  // the rest: 64 at a time, then one by one
  std::size_t first = full;
  for (; first + step <= n; first += step) fused_block<step>(out + first, inputs, first, term, finish);
  for (std::size_t i = first; i < n; ++i) {
    T x = out[i];
    for (const auto& in : inputs) x += term(in.values[i]);
    out[i] = finish(x);
  }
}

/// The identity, for fused_sum's term and finish.
struct unchanged {
  template <class T>
  constexpr T operator()(T x) const noexcept {
    return x;
  }
};

}  // namespace detail

/// own ← (own + Σ inputs) / (1 + number of inputs). Elements a sparse input
/// does not carry count as zero, so dense and sparse give the same result.
///
/// Over a graph with mixing weights (BlueFog's self and per-source weights):
/// own ← (w_self · own + Σ w_q · input_q) / (w_self + Σ w_q), the sum over
/// the inputs combined. With every input of a row that sums to 1 that is
/// row i of the mixing matrix applied as given (up to rounding in the
/// division by the sum); when a policy combines fewer inputs (asp, ssp, a
/// lost neighbour) the weights left are scaled up, as the plain average
/// divides by the inputs it has. Without weights, the plain average, to the
/// bit.
struct average {
  using policy_slot = slot::gather;
  [[nodiscard]] static constexpr std::string_view name() noexcept { return "average"; }
  template <class T>
  void operator()(std::span<T> own, std::span<const input<T>> inputs, const mixing& m) const {
    if (!m.weighted) return (*this)(own, inputs);
    if (inputs.empty()) return;
    double total = m.self;
    for (const auto& in : inputs) total += in.weight;
    const double self = m.self / total;
    if constexpr (std::is_floating_point_v<T>) {
      for (auto& x : own) x = static_cast<T>(self * static_cast<double>(x));
      for (const auto& in : inputs) {
        const double w = in.weight / total;
        in.for_each([&](std::size_t i, T v) { own[i] += static_cast<T>(w * static_cast<double>(v)); });
      }
    } else {  // integers: sum in double, round once
      std::vector<double> acc(own.size());
      for (std::size_t i = 0; i < own.size(); ++i) acc[i] = self * static_cast<double>(own[i]);
      for (const auto& in : inputs) {
        const double w = in.weight / total;
        in.for_each([&](std::size_t i, T v) { acc[i] += w * static_cast<double>(v); });
      }
      for (std::size_t i = 0; i < own.size(); ++i) own[i] = static_cast<T>(std::llround(acc[i]));
    }
  }
  template <class T>
  void operator()(std::span<T> own, std::span<const input<T>> inputs) const {
    if (inputs.empty()) return;
    const T k = static_cast<T>(inputs.size() + 1);
    if (detail::all_dense(own, inputs)) {
      detail::fused_sum(own, inputs, detail::unchanged{}, [k](T x) { return x / k; });
      return;
    }
    for (const auto& in : inputs) in.for_each([&](std::size_t i, T v) { own[i] += v; });
    for (auto& x : own) x /= k;
  }
};

/// The weighted mean of own and the inputs, with the weights their senders
/// set: own ← Σ w_i · x_i / Σ w_i over own and the inputs combined, where
/// w_i is what member i gave dist_vector::set_weight (e.g. its shard size,
/// or the samples it processed since the last exchange) before the scatter
/// that sent x_i. Each weight travels with its update; nothing else is
/// exchanged. Over a graph with mixing weights, w_i is multiplied by the
/// receiver's weight for the sender (and w_self by its own).
///
/// Weights are not mixed (this is not push-sum): every member keeps the
/// weight it set, and its buffer keeps holding the model, not w · model.
/// See docs/vectors.md, "Weighted averaging", for why.
///
/// Own is kept when nothing arrived. With inputs, the weights combined must
/// sum to a positive number; otherwise the gather throws `config_error`.
/// Elements a sparse input does not carry count as zero. Integers are
/// summed in double and rounded once.
struct weighted_average {
  using policy_slot = slot::gather;
  static constexpr bool carries_weights = true;
  [[nodiscard]] static constexpr std::string_view name() noexcept { return "weighted_average"; }
  template <class T>
  void operator()(std::span<T> own, std::span<const input<T>> inputs, const mixing& m) const {
    if (inputs.empty()) return;
    const double self = m.self * m.own_weight;
    double total = self;
    for (const auto& in : inputs) total += in.weight * in.sender_weight;
    if (!(total > 0) || !std::isfinite(total))
      throw config_error("dml::gather::weighted_average: the weights of the " +
                         std::to_string(inputs.size() + 1) + " updates combined sum to " +
                         std::to_string(total) + " (set_weight() on at least one of them must be > 0)");
    if constexpr (std::is_floating_point_v<T>) {
      for (auto& x : own) x = static_cast<T>(self * static_cast<double>(x));
      for (const auto& in : inputs) {
        const double w = in.weight * in.sender_weight;
        in.for_each([&](std::size_t i, T v) { own[i] += static_cast<T>(w * static_cast<double>(v)); });
      }
      for (auto& x : own) x = static_cast<T>(static_cast<double>(x) / total);
    } else {  // integers: sum in double, round once
      std::vector<double> acc(own.size());
      for (std::size_t i = 0; i < own.size(); ++i) acc[i] = self * static_cast<double>(own[i]);
      for (const auto& in : inputs) {
        const double w = in.weight * in.sender_weight;
        in.for_each([&](std::size_t i, T v) { acc[i] += w * static_cast<double>(v); });
      }
      for (std::size_t i = 0; i < own.size(); ++i) own[i] = static_cast<T>(std::llround(acc[i] / total));
    }
  }
  /// Called without mixing information: own has weight 1.
  template <class T>
  void operator()(std::span<T> own, std::span<const input<T>> inputs) const {
    (*this)(own, inputs, mixing{});
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
      detail::fused_sum(own, inputs, detail::unchanged{}, [k](T x) { return x / k; });
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
      detail::fused_sum(own, inputs, detail::unchanged{}, detail::unchanged{});
      return;
    }
    for (const auto& in : inputs) in.for_each([&](std::size_t i, T v) { own[i] += v; });
  }
};

/// own ← own + γ · Σ inputs, for applying *changes* rather than states
/// (CoCoA's combination of local updates): each input carries a sender's
/// change since its last scatter, γ = 1 adds them all (own + Σ inputs, the
/// same result as `sum`, bit for bit), γ = 1/(k + 1) over k + 1 members
/// averages them. Elements a sparse input does not carry count as zero.
///
/// To average the models base + Δ_m of k + 1 members that share `base`, a
/// member scatters its change Δ_0, then (after scatter() returned, before
/// gather()) sets its buffer to base + γ·Δ_0; gather() then gives
/// base + γ·(Δ_0 + Σ Δ_j), what `average` makes of the models. Each product
/// γ·v is rounded to T and added input by input, in input order.
///
/// γ is part of the vector's description, so members constructed with
/// different values get a `config_error` when the vector is built.
struct scaled_sum {
  using policy_slot = slot::gather;
  /// The factor γ: finite and > 0.
  double gamma = 1;

  /// @throws dml::config_error when gamma is not finite or not > 0.
  explicit scaled_sum(double factor) : gamma(factor) {
    if (!std::isfinite(gamma) || !(gamma > 0))
      throw config_error(
          "dml::gather::scaled_sum: gamma must be finite and > 0 (1/(k+1) averages k+1 "
          "members' changes, 1 adds them), got " +
          number(gamma));
  }

  [[nodiscard]] static constexpr std::string_view name() noexcept { return "scaled_sum"; }
  /// "scaled_sum(gamma=<γ, shortest round-trip form>)": compared between
  /// members when the vector is built.
  [[nodiscard]] std::string describe() const { return "scaled_sum(gamma=" + number(gamma) + ")"; }

  template <std::floating_point T>
  void operator()(std::span<T> own, std::span<const input<T>> inputs) const {
    const T g = static_cast<T>(gamma);
    if (detail::all_dense(own, inputs)) {
      detail::fused_sum(
          own, inputs, [g](T v) { return g * v; }, detail::unchanged{});
      return;
    }
    for (const auto& in : inputs) in.for_each([&](std::size_t i, T v) { own[i] += g * v; });
  }

 private:
  static std::string number(double x) {
    char text[32];
    const auto [end, ec] = std::to_chars(text, text + sizeof text, x);
    return ec == std::errc{} ? std::string(text, end) : std::string("?");
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

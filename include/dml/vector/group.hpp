// SPDX-License-Identifier: BSL-1.0
/// @file
/// Fusion: several vectors that share transport, topology and consistency
/// (a network's layers, say) exchanged as one. A `vector_group` holds its
/// parts in one buffer and one set of receive slots, so a round costs one
/// header, one payload put, one flush and one notify or barrier per
/// neighbour instead of one per part, as Horovod's tensor fusion and
/// DDP's gradient buckets do. Each part is combined with the gather functor
/// on its own slice, so functors that look at a whole vector (a norm, a
/// projection) see exactly their part.
///
///     auto g = dml::make_vector_group<float>(comm, {w1.size(), w2.size()}, dml::topology::ring{});
///     std::copy(w1.begin(), w1.end(), g.part(0).begin());
///     std::copy(w2.begin(), w2.end(), g.part(1).begin());
///     g.scatter();
///     g.gather();   // each part averaged with its neighbours' same part
#pragma once

#include <dml/error.hpp>
#include <dml/fwd.hpp>
#include <dml/vector/dist_vector.hpp>
#include <dml/vector/gather.hpp>
#include <dml/vector/make_vector.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

DML_BEGIN_NAMESPACE
namespace detail {

// Applies a gather functor to each part of a fused vector on its slice of
// the buffer and of every input.
template <class Gather>
struct per_part {
  using policy_slot = slot::gather;
  per_part(std::shared_ptr<const std::vector<std::size_t>> parts, Gather g)
      : offsets(std::move(parts)), inner(std::move(g)) {}

  std::shared_ptr<const std::vector<std::size_t>> offsets;  // part p is [offsets[p], offsets[p + 1])
  Gather inner;

  [[nodiscard]] std::string describe() const {
    std::string s = "per_part(" + policy_name(inner) + ", parts";
    for (std::size_t p = 0; p + 1 < offsets->size(); ++p)
      s += " " + std::to_string((*offsets)[p + 1] - (*offsets)[p]);
    return s + ")";
  }

  template <class T>
  void operator()(std::span<T> own, std::span<const gather::input<T>> inputs) {
    apply(own, inputs, nullptr);
  }
  /// Over a weighted graph: the inner functor gets the weights too (each
  /// sliced input keeps its weight) when it takes them.
  template <class T>
  void operator()(std::span<T> own, std::span<const gather::input<T>> inputs, const gather::mixing& m) {
    apply(own, inputs, &m);
  }

 private:
  template <class T>
  void apply(std::span<T> own, std::span<const gather::input<T>> inputs, const gather::mixing* m) {
    const auto& off = *offsets;
    auto& sliced = scratch<T>();
    sliced.assign(inputs.begin(), inputs.end());
    rebased.resize(inputs.size());
    for (std::size_t p = 0; p + 1 < off.size(); ++p) {
      const std::size_t first = off[p], count = off[p + 1] - first;
      for (std::size_t k = 0; k < inputs.size(); ++k) {
        const auto& in = inputs[k];
        auto& out = sliced[k];
        if (!in.sparse_values) {
          out.values = in.values.subspan(first, count);
          continue;
        }
        // Sparse: the pairs of this part, indices relative to it.
        const auto lo = std::lower_bound(in.indices.begin(), in.indices.end(), first);
        const auto hi = std::lower_bound(lo, in.indices.end(), first + count);
        const auto at = static_cast<std::size_t>(lo - in.indices.begin());
        const auto n = static_cast<std::size_t>(hi - lo);
        rebased[k].resize(n);
        for (std::size_t j = 0; j < n; ++j) rebased[k][j] = static_cast<std::uint32_t>(lo[j] - first);
        out.indices = rebased[k];
        out.values = in.values.subspan(at, n);
      }
      const std::span<const gather::input<T>> part_inputs(sliced);
      if constexpr (std::is_invocable_v<Gather&, std::span<T>, std::span<const gather::input<T>>,
                                        const gather::mixing&>) {
        if (m != nullptr) {
          inner(own.subspan(first, count), part_inputs, *m);
          continue;
        }
      }
      inner(own.subspan(first, count), part_inputs);
    }
  }

  // Reused between gathers: sliced inputs, rebased sparse indices.
  template <class T>
  std::vector<gather::input<T>>& scratch() {
    if constexpr (std::is_same_v<T, float>)
      return sliced_f;
    else if constexpr (std::is_same_v<T, double>)
      return sliced_d;
    else
      return sliced_other<T>;
  }
  template <class T>
  static inline thread_local std::vector<gather::input<T>> sliced_other;
  std::vector<gather::input<float>> sliced_f;
  std::vector<gather::input<double>> sliced_d;
  std::vector<std::vector<std::uint32_t>> rebased;
};

}  // namespace detail

/// Vectors exchanged as one; see the file comment. The parts live in one
/// buffer (`span()`, or `part(p)` for one of them); every other operation
/// is the underlying vector's (`dist_vector` with the same policies and a
/// gather functor applied per part).
template <class T, class Vector>
class vector_group {
 public:
  using value_type = T;

  vector_group(Vector v, std::shared_ptr<const std::vector<std::size_t>> offsets)
      : v_(std::move(v)), offsets_(std::move(offsets)) {}

  /// Number of parts.
  [[nodiscard]] std::size_t parts() const noexcept { return offsets_->size() - 1; }
  /// Part p of the buffer.
  [[nodiscard]] std::span<T> part(std::size_t p) {
    check(p);
    return v_.span().subspan((*offsets_)[p], (*offsets_)[p + 1] - (*offsets_)[p]);
  }
  [[nodiscard]] std::span<const T> part(std::size_t p) const {
    check(p);
    return v_.span().subspan((*offsets_)[p], (*offsets_)[p + 1] - (*offsets_)[p]);
  }
  /// All parts, one after the other.
  [[nodiscard]] std::span<T> span() noexcept { return v_.span(); }
  [[nodiscard]] std::span<const T> span() const noexcept { return v_.span(); }
  [[nodiscard]] std::size_t size() const noexcept { return v_.size(); }

  /// One scatter for every part.
  void scatter() { v_.scatter(); }
  /// One gather for every part; each part combined on its own slice.
  void gather() { v_.gather(); }
  void barrier() { v_.barrier(); }
  [[nodiscard]] std::uint64_t clock() const noexcept { return v_.clock(); }
  [[nodiscard]] const vector_stats& stats() const noexcept { return v_.stats(); }
  [[nodiscard]] const std::string& description() const noexcept { return v_.description(); }
  /// The fused vector itself.
  [[nodiscard]] Vector& vector() noexcept { return v_; }

 private:
  void check(std::size_t p) const {
    if (p >= parts())
      throw config_error("dml::vector_group::part: part " + std::to_string(p) + " of " +
                         std::to_string(parts()));
  }
  Vector v_;
  std::shared_ptr<const std::vector<std::size_t>> offsets_;
};

/// Builds a group of vectors with the given part lengths (each at least 1)
/// exchanged as one, with the policies of `make_vector` in any order; the
/// gather functor (default `gather::average`) combines each part on its
/// own. Collective: every member passes the same lengths and policies.
template <class T, class Transport, class... Policies>
auto make_vector_group(Transport& comm, std::span<const std::size_t> lengths, Policies&&... policies) {
  auto offsets = std::make_shared<std::vector<std::size_t>>(1, 0);
  for (const std::size_t n : lengths) {
    if (n == 0) throw config_error("dml::make_vector_group: a part of length 0");
    offsets->push_back(offsets->back() + n);
  }
  if (lengths.empty()) throw config_error("dml::make_vector_group: no parts");
  static_assert(detail::check_policies<T, Transport, Policies...>());
  // The gather functor given (or average), wrapped to work part by part.
  auto gath = detail::pick<slot::gather, gather::average, T>(std::forward<Policies>(policies)...);
  using wrapped = detail::per_part<decltype(gath)>;
  std::shared_ptr<const std::vector<std::size_t>> shared = offsets;
  auto v = detail::assemble_vector<T>(comm, shared->back(), wrapped{shared, std::move(gath)},
                                      std::forward<Policies>(policies)...);
  return vector_group<T, decltype(v)>(std::move(v), std::move(shared));
}

/// The same, with the part lengths as a braced list.
template <class T, class Transport, class... Policies>
auto make_vector_group(Transport& comm, std::initializer_list<std::size_t> lengths, Policies&&... policies) {
  return make_vector_group<T>(comm, std::span<const std::size_t>(lengths.begin(), lengths.size()),
                              std::forward<Policies>(policies)...);
}

DML_END_NAMESPACE

// SPDX-License-Identifier: BSL-1.0
/// @file
/// `dml::schedule::exact_sum`: an all-reduce (sum) whose result is the same
/// to the bit on every member.
#pragma once

#include <dml/comm/concepts.hpp>
#include <dml/consistency/bsp.hpp>
#include <dml/error.hpp>
#include <dml/fwd.hpp>
#include <dml/schedule/detail/ordered_sum.hpp>
#include <dml/topology/all.hpp>
#include <dml/vector/dist_vector.hpp>
#include <dml/vector/make_vector.hpp>

#include <algorithm>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

DML_BEGIN_NAMESPACE
namespace schedule {

/// Sums arrays over the live members: distributed vectors over
/// `topology::all` under `consistency::bsp`, whose gather adds the members'
/// arrays in ascending member id on every member. The totals are therefore
/// identical everywhere, which is what lets every member compute the same
/// schedule from them without a master (see docs/model-parallel.md).
///
/// Collective: every live member constructs it, and calls `operator()` with
/// arrays of the same size, in the same order. An array is sent in a vector
/// of the smallest power-of-two multiple of `initial` elements that holds
/// it (made, collectively, at the first such call: the sizes agree on
/// every member), so a small sum never pays for a large one made earlier;
/// arrays longer than `max_chunk` are summed in pieces. Its vectors never
/// print the vectors' advice line (dist_vector::set_advice).
///
/// @tparam T         element type (arithmetic)
/// @tparam Transport a transport context (dml::comm::transport)
template <class T, class Transport>
class exact_sum {
  static_assert(comm::transport<Transport>,
                "dml::schedule::exact_sum: the Transport must model dml::comm::transport (e.g. the "
                "dml::comm::inproc::context that inproc::run passes)");
  using vector_type = dist_vector<T, Transport, dense, topology::all, consistency::bsp, detail::ordered_sum>;

 public:
  /// Collective. Vectors of initial, 2 initial, 4 initial, ... elements,
  /// up to max_chunk (1 <= initial <= max_chunk).
  explicit exact_sum(Transport& comm, std::size_t initial = 64, std::size_t max_chunk = std::size_t{1} << 16)
      : comm_(&comm), initial_(initial), max_chunk_(max_chunk) {
    if (initial == 0 || max_chunk == 0 || initial > max_chunk)
      throw config_error("dml::schedule::exact_sum: needs 1 <= initial (" + std::to_string(initial) +
                         ") <= max_chunk (" + std::to_string(max_chunk) + ")");
    (void)fitting(1);
  }

  /// Collective: every member's `values` become the sum of all live
  /// members' `values`, added in ascending member id. An empty span costs
  /// nothing (and is not an exchange: every member must pass it empty).
  void operator()(std::span<T> values) {
    for (std::size_t first = 0; first < values.size(); first += max_chunk_) {
      const auto piece = values.subspan(first, std::min(max_chunk_, values.size() - first));
      vector_type& v = fitting(piece.size());
      auto buffer = v.span();
      std::copy(piece.begin(), piece.end(), buffer.begin());
      std::fill(buffer.begin() + static_cast<std::ptrdiff_t>(piece.size()), buffer.end(), T{});
      v.scatter();
      v.gather();
      std::copy(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(piece.size()), piece.begin());
      ++exchanges_;
    }
  }

  /// Collective: the sum of one value over the live members.
  [[nodiscard]] T operator()(T value) {
    (*this)(std::span<T>(&value, 1));
    return value;
  }

  /// Exchanges made so far.
  [[nodiscard]] std::size_t exchanges() const noexcept { return exchanges_; }

 private:
  // The vector of the smallest size class holding n elements (n <= max_chunk).
  vector_type& fitting(std::size_t n) {
    std::size_t size = initial_, k = 0;
    while (size < n) {
      size = std::min(max_chunk_, 2 * size);
      ++k;
    }
    if (classes_.size() <= k) classes_.resize(k + 1);
    if (!classes_[k]) {
      classes_[k].emplace(*comm_, size, dense{}, topology::all{}, consistency::bsp{},
                          detail::ordered_sum{comm_->rank()});
      classes_[k]->set_advice(false);  // its caller's sums, not an exchange rate it chose
    }
    return *classes_[k];
  }

  Transport* comm_;
  std::size_t initial_, max_chunk_;
  std::vector<std::optional<vector_type>> classes_;
  std::size_t exchanges_ = 0;
};

}  // namespace schedule
DML_END_NAMESPACE

// SPDX-License-Identifier: BSL-1.0
/// @file
/// MALT's Halton dataflow: about log2 n out-neighbours spread evenly around
/// the group, repaired so that the graph is strongly connected for every n.
#pragma once

#include <dml/error.hpp>
#include <dml/fwd.hpp>
#include <dml/topology/detail/common.hpp>
#include <dml/version.hpp>

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <string_view>
#include <vector>

DML_BEGIN_NAMESPACE
namespace topology {

/// Halton dataflow (MALT, Li et al., EuroSys 2015): member i sends to
/// i + o (mod n) for k offsets o, so every member has k out- and k
/// in-neighbours (the graph is circulant, hence regular).
///
/// The offsets come from the base-2 van der Corput sequence (the first
/// dimension of the Halton sequence) 1/2, 1/4, 3/4, 1/8, 5/8, 3/8, 7/8,
/// 1/16, ... scaled by n and floored; 0 and repeats are skipped until k
/// distinct offsets are found. So the first neighbour is half-way round
/// the group, the next two at the quarters, and so on: log n neighbours
/// reach everyone in few hops.
///
/// Repair. A circulant graph with offsets S over n members is strongly
/// connected exactly when g = gcd(S, n) is 1; otherwise member i only ever
/// reaches i + multiples of g, and the group falls apart into g separate
/// parts. The raw offsets hit this whenever 2^r, the largest denominator
/// among the first k fractions, divides n: every offset is then a multiple of
/// n / 2^r. For n = 2^m >= 8 with the default k = m this always happens
/// (2^r <= 2m < 2^m; n = 8 gives {4, 2, 6}, n = 256 gives 16 parts), and it
/// happens for other multiples of 8 as well (n = 24 gives {12, 6, 18, 3, 15},
/// all multiples of 3). The rule: when gcd(offsets, n) != 1, the last (finest)
/// offset is replaced by 1. Offset 1 makes the gcd 1, keeps the fan-out at
/// exactly k and leaves the coarse, long-range offsets alone. `naive_offsets`
/// exposes the unrepaired sequence for analysis.
struct halton {
  using policy_slot = slot::topology;

  /// Fan-out ceil(log2 n), chosen when the graph is built.
  constexpr halton() noexcept = default;

  /// Fan-out exactly k for every n > k.
  /// @throws dml::config_error when k = 0.
  constexpr explicit halton(std::size_t k) : fan_out_(k) {
    if (k == 0) throw config_error("topology 'halton': the fan-out must be at least 1, got 0");
  }

  /// The configured fan-out; 0 means ceil(log2 n).
  [[nodiscard]] constexpr std::size_t fan_out() const noexcept { return fan_out_; }

  /// The fan-out used for n members: the configured k, or ceil(log2 n).
  /// @throws dml::config_error when n = 0 or k >= n.
  [[nodiscard]] std::size_t fan_out(std::size_t n) const;

  /// The first fan_out(n) distinct nonzero values of floor(n * v_t), v_t the
  /// base-2 van der Corput sequence, in the order found; before the repair,
  /// so possibly disconnected.
  /// @throws dml::config_error when n = 0 or k >= n.
  [[nodiscard]] std::vector<std::size_t> naive_offsets(std::size_t n) const;

  /// The offsets actually used: naive_offsets(n) with the repair applied.
  /// @throws dml::config_error when n = 0 or k >= n.
  [[nodiscard]] std::vector<std::size_t> offsets(std::size_t n) const;

  /// Out-lists over members 0..n-1.
  /// @throws dml::config_error when n = 0 or k >= n.
  [[nodiscard]] std::vector<std::vector<member_id>> out_lists(std::size_t n) const;

  [[nodiscard]] constexpr std::string_view name() const noexcept { return "halton"; }

  friend constexpr bool operator==(const halton&, const halton&) noexcept = default;

 private:
  std::size_t fan_out_ = 0;
};

}  // namespace topology
DML_END_NAMESPACE

#if !defined(DML_SEPARATE_COMPILATION)
#include <dml/topology/impl/halton.ipp>
#endif

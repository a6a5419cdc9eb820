// SPDX-License-Identifier: BSL-1.0
/// @file
/// The exponential graph: neighbours at distances 1, 2, 4, 8, ...
#pragma once

#include <dml/fwd.hpp>
#include <dml/topology/detail/common.hpp>
#include <dml/version.hpp>

#include <cstddef>
#include <string_view>
#include <vector>

DML_BEGIN_NAMESPACE
namespace topology {

/// Exponential graph: i -> i + 2^k (mod n) for every 2^k < n, so
/// ceil(log2 n) out- and in-neighbours per member (circulant, hence
/// regular). Offset 1 makes it strongly connected for every n, and writing
/// any distance in binary shows the diameter is at most ceil(log2 n).
struct exponential {
  using policy_slot = slot::topology;

  /// Out-lists over members 0..n-1.
  /// @throws dml::config_error when n = 0.
  [[nodiscard]] std::vector<std::vector<member_id>> out_lists(std::size_t n) const {
    detail::check_member_count(name(), n);
    std::vector<std::size_t> offsets;
    for (std::size_t step = 1; step < n; step *= 2) {
      offsets.push_back(step);
      if (step > n / 2) break;  // the next power is >= n; doubling could overflow
    }
    return detail::circulant(n, offsets);
  }

  [[nodiscard]] constexpr std::string_view name() const noexcept { return "exponential"; }
};

}  // namespace topology
DML_END_NAMESPACE

// SPDX-License-Identifier: BSL-1.0
/// @file
/// ASAP's root expander: two out-neighbours per member, one next door and one
/// about sqrt(n) away.
#pragma once

#include <dml/fwd.hpp>
#include <dml/topology/detail/common.hpp>
#include <dml/version.hpp>

#include <cstddef>
#include <string_view>
#include <vector>

DML_BEGIN_NAMESPACE
namespace topology {

/// Root expander (ASAP, Kadav and Kruus): i -> i + 1 and i -> i + floor(sqrt n)
/// (mod n). The ring edge keeps it strongly connected; the long edge cuts the
/// diameter to about 2 sqrt(n) and gives a much larger spectral gap than a ring
/// for the same two messages per member. When the two offsets coincide
/// (n = 2, 3) the edge is kept once, so out-degrees are 2, or 1 for n <= 3
/// (0 for n = 1). Circulant, hence regular.
struct root_expander {
  using policy_slot = slot::topology;

  /// Out-lists over members 0..n-1.
  /// @throws dml::config_error when n = 0.
  [[nodiscard]] std::vector<std::vector<member_id>> out_lists(std::size_t n) const {
    detail::check_member_count(name(), n);
    if (n == 1) return {{}};
    const std::size_t jump = detail::floor_sqrt(n);  // 1 <= jump < n for n >= 2
    std::vector<std::size_t> offsets{1};
    if (jump != 1) offsets.push_back(jump);
    return detail::circulant(n, offsets);
  }

  [[nodiscard]] constexpr std::string_view name() const noexcept { return "root_expander"; }
};

}  // namespace topology
DML_END_NAMESPACE

// SPDX-License-Identifier: BSL-1.0
/// @file
/// The star: a parameter server at member 0 talking to everyone.
#pragma once

#include <dml/fwd.hpp>
#include <dml/topology/detail/common.hpp>
#include <dml/version.hpp>

#include <cstddef>
#include <string_view>
#include <vector>

DML_BEGIN_NAMESPACE
namespace topology {

/// Star: 0 <-> i for every i = 1..n-1, the parameter-server pattern. Workers
/// push to the hub and the hub pushes back, so any update reaches everyone in
/// two rounds with 2(n - 1) messages, but the hub sends and receives n - 1
/// of them (not regular for n >= 3). Over survivors the hub is the smallest
/// surviving id.
struct star {
  using policy_slot = slot::topology;

  /// Out-lists over members 0..n-1.
  /// @throws dml::config_error when n = 0.
  [[nodiscard]] std::vector<std::vector<member_id>> out_lists(std::size_t n) const {
    detail::check_member_count(name(), n);
    std::vector<std::vector<member_id>> out(n);
    out[0].reserve(n - 1);
    for (std::size_t i = 1; i < n; ++i) {
      out[0].push_back(i);
      out[i].push_back(0);
    }
    return out;
  }

  [[nodiscard]] constexpr std::string_view name() const noexcept { return "star"; }
};

}  // namespace topology
DML_END_NAMESPACE

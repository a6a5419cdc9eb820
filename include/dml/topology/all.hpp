// SPDX-License-Identifier: BSL-1.0
/// @file
/// The complete graph: every member sends to every other.
#pragma once

#include <dml/fwd.hpp>
#include <dml/topology/detail/common.hpp>
#include <dml/version.hpp>

#include <cstddef>
#include <string_view>
#include <vector>

DML_BEGIN_NAMESPACE
namespace topology {

/// All-to-all: i -> j for every j != i. The default topology. Fastest mixing
/// (spectral gap 1, diameter 1) at n(n-1) messages per round, which is what
/// the sparse generators trade away.
struct all {
  using policy_slot = slot::topology;

  /// Out-lists over members 0..n-1.
  /// @throws dml::config_error when n = 0.
  [[nodiscard]] std::vector<std::vector<member_id>> out_lists(std::size_t n) const {
    detail::check_member_count(name(), n);
    std::vector<std::vector<member_id>> out(n);
    for (std::size_t i = 0; i < n; ++i) {
      out[i].reserve(n - 1);
      for (std::size_t j = 0; j < n; ++j) {
        if (j != i) out[i].push_back(j);
      }
    }
    return out;
  }

  [[nodiscard]] constexpr std::string_view name() const noexcept { return "all"; }
};

}  // namespace topology
DML_END_NAMESPACE

// SPDX-License-Identifier: BSL-1.0
/// @file
/// The chain (path): members in a line, each talking to its neighbours.
#pragma once

#include <dml/fwd.hpp>
#include <dml/topology/detail/common.hpp>
#include <dml/version.hpp>

#include <cstddef>
#include <string_view>
#include <vector>

DML_BEGIN_NAMESPACE
namespace topology {

/// Chain: i <-> i + 1 for i = 0..n-2, i.e. a path in both directions.
///
/// It is bidirectional by default because a one-way path 0 -> 1 -> ... -> n-1
/// is not strongly connected (nothing reaches member 0), so a vector could
/// not use it; `chain{chain::one_way}` builds that path anyway, for analysis
/// and tests. The ends have one neighbour and inner members two, so the
/// chain is not regular for n >= 3, and (both ways) its diameter is n - 1.
struct chain {
  using policy_slot = slot::topology;

  /// Which way updates travel.
  enum class direction : bool { one_way, bidirectional };
  using enum direction;  // lets users write chain{chain::one_way}

  /// Bidirectional chain.
  constexpr chain() noexcept = default;
  constexpr explicit chain(direction d) noexcept : direction_(d) {}

  [[nodiscard]] constexpr direction way() const noexcept { return direction_; }

  /// Out-lists over members 0..n-1.
  /// @throws dml::config_error when n = 0.
  [[nodiscard]] std::vector<std::vector<member_id>> out_lists(std::size_t n) const {
    detail::check_member_count(name(), n);
    std::vector<std::vector<member_id>> out(n);
    for (std::size_t i = 0; i + 1 < n; ++i) {
      out[i].push_back(i + 1);
      if (direction_ == bidirectional) out[i + 1].push_back(i);
    }
    return out;
  }

  /// "chain" or "one_way_chain".
  [[nodiscard]] constexpr std::string_view name() const noexcept {
    return direction_ == one_way ? "one_way_chain" : "chain";
  }

  friend constexpr bool operator==(const chain&, const chain&) noexcept = default;

 private:
  direction direction_ = bidirectional;
};

}  // namespace topology
DML_END_NAMESPACE

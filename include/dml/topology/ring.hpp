// SPDX-License-Identifier: BSL-1.0
/// @file
/// The ring: each member sends to the next (and optionally the previous) one.
#pragma once

#include <dml/fwd.hpp>
#include <dml/topology/detail/common.hpp>
#include <dml/version.hpp>

#include <cstddef>
#include <string_view>
#include <vector>

DML_BEGIN_NAMESPACE
namespace topology {

/// Ring: i -> i + 1 (mod n), and with `ring{ring::bidirectional}` also
/// i -> i - 1 (mod n). One message per member per round (two when
/// bidirectional; for n = 2 both directions are the same single edge), the
/// cheapest strongly connected graph, but an update needs n - 1 rounds
/// (n / 2 rounds bidirectional) to reach everyone and the spectral gap
/// shrinks like 1/n^2.
struct ring {
  using policy_slot = slot::topology;

  /// Which way updates travel.
  enum class direction : bool { one_way, bidirectional };
  using enum direction;  // lets users write ring{ring::bidirectional}

  /// One-directional ring.
  constexpr ring() noexcept = default;
  constexpr explicit ring(direction d) noexcept : direction_(d) {}

  [[nodiscard]] constexpr direction way() const noexcept { return direction_; }

  /// Out-lists over members 0..n-1.
  /// @throws dml::config_error when n = 0.
  [[nodiscard]] std::vector<std::vector<member_id>> out_lists(std::size_t n) const {
    detail::check_member_count(name(), n);
    if (n == 1) return {{}};
    std::vector<std::size_t> offsets{1};
    if (direction_ == bidirectional && n > 2) offsets.push_back(n - 1);
    return detail::circulant(n, offsets);
  }

  /// "ring" or "bidirectional_ring".
  [[nodiscard]] constexpr std::string_view name() const noexcept {
    return direction_ == bidirectional ? "bidirectional_ring" : "ring";
  }

  friend constexpr bool operator==(const ring&, const ring&) noexcept = default;

 private:
  direction direction_ = one_way;
};

}  // namespace topology
DML_END_NAMESPACE

// SPDX-License-Identifier: BSL-1.0
/// @file
/// The star: a parameter server (the hub, member 0 unless chosen) talking to
/// everyone.
#pragma once

#include <dml/error.hpp>
#include <dml/fwd.hpp>
#include <dml/topology/detail/common.hpp>
#include <dml/version.hpp>

#include <algorithm>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

DML_BEGIN_NAMESPACE
namespace topology {

/// Star: hub <-> i for every other member i, the parameter-server pattern
/// (dml::parameter_server builds on it). Workers push to the hub and the hub
/// pushes back, so any update reaches everyone in two rounds with 2(n - 1)
/// messages, but the hub sends and receives n - 1 of them (not regular for
/// n >= 3). The hub is member 0 unless chosen: `star{3}`. Over survivors
/// the hub stays where it is while it survives; once it has failed, the
/// smallest surviving id takes its place.
struct star {
  using policy_slot = slot::topology;

  /// The hub's id (among 0..n-1 in out_lists(n); an original id over
  /// survivors).
  member_id hub = 0;

  /// Out-lists over members 0..n-1.
  /// @throws dml::config_error when n = 0 or the hub is not below n.
  [[nodiscard]] std::vector<std::vector<member_id>> out_lists(std::size_t n) const {
    detail::check_member_count(name(), n);
    if (hub >= n)
      throw config_error("topology 'star': hub " + std::to_string(hub) + " is not a member of a group of " +
                         detail::members_phrase(n) + " (ids 0.." + std::to_string(n - 1) + ")");
    return lists(n, static_cast<std::size_t>(hub), [](std::size_t i) { return member_id{i}; });
  }

  /// Out-lists over the survivors (ascending original ids): the hub if it
  /// survives, else the smallest survivor, exchanges with every other one.
  [[nodiscard]] std::vector<std::vector<member_id>> out_lists_over(
      std::span<const member_id> survivors) const {
    detail::check_member_count(name(), survivors.size());
    const auto it = std::find(survivors.begin(), survivors.end(), hub);
    const std::size_t centre = it == survivors.end() ? 0 : static_cast<std::size_t>(it - survivors.begin());
    return lists(survivors.size(), centre, [&](std::size_t i) { return survivors[i]; });
  }

  [[nodiscard]] constexpr std::string_view name() const noexcept { return "star"; }

 private:
  // The star around position `centre` of n members named by id(i).
  template <class Id>
  [[nodiscard]] static std::vector<std::vector<member_id>> lists(std::size_t n, std::size_t centre, Id id) {
    std::vector<std::vector<member_id>> out(n);
    out[centre].reserve(n - 1);
    for (std::size_t i = 0; i < n; ++i) {
      if (i == centre) continue;
      out[centre].push_back(id(i));
      out[i].push_back(id(centre));
    }
    return out;
  }
};

}  // namespace topology
DML_END_NAMESPACE

// SPDX-License-Identifier: BSL-1.0
/// @file
/// Hierarchical graphs: members grouped (by node, say), complete inside a
/// group, and a sparser graph between the groups.
#pragma once

#include <dml/error.hpp>
#include <dml/fwd.hpp>
#include <dml/topology/concepts.hpp>
#include <dml/topology/detail/common.hpp>
#include <dml/topology/exponential.hpp>
#include <dml/topology/graph.hpp>
#include <dml/version.hpp>

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

DML_BEGIN_NAMESPACE
namespace topology {

/// Who carries the traffic between groups in a `hierarchical` graph.
enum class between_groups : bool {
  leaders,  ///< only each group's first member (Horovod's hierarchical allreduce)
  all       ///< every member, to the member at the same position of the other group (BlueFog's machine graph)
};

/// Members grouped by `group_size` in id order (members 0..s-1 form group 0,
/// s..2s-1 group 1, ...; the last group holds what is left), every group a
/// complete graph, and between the G = ceil(n / s) groups the graph the
/// `Outer` generator builds over G members:
///
/// - `between_groups::leaders` (default): for each outer edge a -> b, the
///   leader (first member) of group a sends to the leader of group b. The
///   cheapest between groups, as in a hierarchical allreduce; leaders carry
///   all of it, so the graph is regular only when there is one group or
///   the group size is 1.
/// - `between_groups::all`: for each outer edge a -> b, member a s + l sends
///   to member b s + l for every position l that group b has. Every member
///   sends between groups; regular when s divides n and the outer graph is
///   regular (`claims_regular`).
///
/// Strongly connected whenever the outer graph is: each group is complete,
/// and the leaders (position 0, which every group has) carry every outer
/// edge. The outer graph is checked over G groups and a disconnected one is
/// a `config_error`. Over survivors the groups are re-formed by position
/// among the survivors (survivor k belongs to group k / s), like every
/// generator that relabels.
///
/// In-process members are grouped by the given size. The MPI transports do
/// not expose the node a rank runs on (MPI_Comm_split_type with
/// MPI_COMM_TYPE_SHARED is used only inside their monitor), so give the
/// ranks per node as the group size and launch with ranks placed by node
/// (Open MPI's default `--map-by slot` does that).
/// @tparam Outer a topology generator for the graph between groups.
template <class Outer = exponential>
class hierarchical {
  static_assert(topology_generator<Outer>,
                "dml::topology::hierarchical<Outer>: 'Outer', the graph between groups, must be a topology "
                "generator (e.g. dml::topology::exponential or dml::topology::ring)");

 public:
  using policy_slot = slot::topology;

  /// Groups of `group_size` members, `between` choosing who links the
  /// groups along the graph `outer` builds over the groups.
  /// @throws dml::config_error when group_size = 0.
  explicit hierarchical(std::size_t group_size, between_groups between = between_groups::leaders,
                        Outer outer = {})
      : group_size_(group_size), between_(between), outer_(std::move(outer)) {
    if (group_size_ == 0)
      throw config_error("topology 'hierarchical': the group size must be at least 1, got 0");
  }

  [[nodiscard]] std::size_t group_size() const noexcept { return group_size_; }
  [[nodiscard]] between_groups between() const noexcept { return between_; }
  [[nodiscard]] const Outer& outer() const noexcept { return outer_; }

  /// Number of groups over n members: ceil(n / group_size).
  [[nodiscard]] std::size_t groups(std::size_t n) const noexcept {
    return (n + group_size_ - 1) / group_size_;
  }

  /// Whether the graph over n members is regular by construction: one
  /// group, or group size 1 with a regular outer graph, or (between all)
  /// equal groups and a regular outer graph.
  /// @throws dml::config_error as out_lists(n).
  [[nodiscard]] bool claims_regular(std::size_t n) const {
    const std::size_t g = groups(n);
    if (g <= 1) return true;
    const bool outer_regular = is_regular(outer_graph(n));
    if (group_size_ == 1) return outer_regular;
    return between_ == between_groups::all && n % group_size_ == 0 && outer_regular;
  }

  /// Out-lists over members 0..n-1.
  /// @throws dml::config_error when n = 0, or when the outer generator
  ///         cannot build a graph over the groups or builds a disconnected
  ///         one (the message names the groups).
  [[nodiscard]] std::vector<std::vector<member_id>> out_lists(std::size_t n) const {
    const graph outer = outer_graph(n);
    const std::size_t s = group_size_;
    std::vector<std::vector<member_id>> out(n);
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t first = i / s * s;
      const std::size_t last = std::min(n, first + s);
      for (std::size_t j = first; j < last; ++j)
        if (j != i) out[i].push_back(j);
    }
    for (const member_id a : outer.members()) {
      for (const member_id b : outer.out(a)) {
        const std::size_t from = a * s, to = b * s;
        if (between_ == between_groups::leaders) {
          out[from].push_back(to);
          continue;
        }
        const std::size_t common = std::min(std::min(n, from + s) - from, std::min(n, to + s) - to);
        for (std::size_t l = 0; l < common; ++l) out[from + l].push_back(to + l);
      }
    }
    for (auto& list : out) std::sort(list.begin(), list.end());
    return out;
  }

  [[nodiscard]] constexpr std::string_view name() const noexcept { return "hierarchical"; }

  /// "hierarchical(group=4, between=leaders, outer=exponential)".
  [[nodiscard]] std::string describe() const {
    std::string outer;
    if constexpr (requires { outer_.describe(); })
      outer = std::string(outer_.describe());
    else
      outer = std::string(outer_.name());
    return "hierarchical(group=" + std::to_string(group_size_) +
           ", between=" + (between_ == between_groups::leaders ? "leaders" : "all") + ", outer=" + outer +
           ")";
  }

 private:
  // The outer generator's graph over the groups, checked.
  [[nodiscard]] graph outer_graph(std::size_t n) const {
    ::dml::detail::check_member_count(name(), n);
    const std::size_t g = groups(n);
    const std::string where = "topology 'hierarchical' over " + ::dml::detail::members_phrase(n) + " in " +
                              std::to_string(g) + (g == 1 ? " group" : " groups") + " of " +
                              std::to_string(group_size_) + ": between the groups, ";
    graph outer{std::vector<std::vector<member_id>>(1)};
    try {
      outer = build(outer_, g);
    } catch (const config_error& e) {
      throw config_error(where + e.what());
    }
    if (const auto pair = find_unreachable_pair(outer)) {
      throw config_error(where + "'" + std::string(outer_.name()) + "' is not strongly connected: group " +
                         std::to_string(pair->first) + " cannot reach group " + std::to_string(pair->second));
    }
    return outer;
  }

  std::size_t group_size_;
  between_groups between_;
  Outer outer_;
};

}  // namespace topology
DML_END_NAMESPACE

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
#include <span>
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

/// Members grouped, every group a complete graph, and between the G groups
/// the graph the `Outer` generator builds over G members. Two ways to group:
///
/// - by size, `hierarchical(s)`: members 0..s-1 form group 0, s..2s-1
///   group 1, ...; the last group holds what is left, so G = ceil(n / s).
/// - by label, `hierarchical(labels)`: one label per member, members with
///   equal labels form a group (any values, any sizes, a group need not be
///   contiguous in id order). `dml::comm::node_groups(ctx)` gives the node
///   each member runs on (dml/comm/nodes.hpp), which makes the groups the
///   nodes. The graph is over exactly labels.size() members.
///
/// Groups are numbered for the outer generator in the order of their
/// smallest member id; a member's position in its group is its rank by id
/// among the group's members, and a group's leader is the member at
/// position 0 (its smallest id). Between the groups:
///
/// - `between_groups::leaders` (default): for each outer edge a -> b, the
///   leader of group a sends to the leader of group b. The cheapest between
///   groups, as in a hierarchical allreduce; leaders carry all of it.
/// - `between_groups::all`: for each outer edge a -> b, the member at
///   position l of group a sends to the member at position l of group b,
///   for every position both groups have (BlueFog's machine graph).
///
/// Strongly connected whenever the outer graph is: each group is complete,
/// and the leaders carry every outer edge. The outer graph is checked over G
/// groups and a disconnected one is a `config_error`.
///
/// Regular (every member the same in- and out-degree) by construction when
/// there is one group, or when all groups have the same size s and the outer
/// graph is regular and either s = 1 or the groups are linked between all
/// members; `claims_regular` answers exactly that. Groups of unequal sizes
/// are never claimed regular: a member of a smaller group has fewer members
/// inside its group, and between leaders the leaders have more edges.
///
/// Over survivors (`build(gen, survivors)`, after a failure):
/// - by size, the groups are re-formed by position among the survivors
///   (survivor k belongs to group k / s), like every generator that
///   relabels;
/// - by label, every survivor keeps its label: a dead member leaves its
///   group one smaller (its leader, if it died, is replaced by the group's
///   next smallest id), a group that lost every member disappears, and the
///   outer graph is rebuilt over the groups that remain.
/// @tparam Outer a topology generator for the graph between groups.
template <class Outer = exponential>
class hierarchical {
  static_assert(topology_generator<Outer>,
                "dml::topology::hierarchical<Outer>: 'Outer', the graph between groups, must be a topology "
                "generator (e.g. dml::topology::exponential or dml::topology::ring)");

 public:
  using policy_slot = slot::topology;

  /// Groups of `group_size` members in id order, `between` choosing who
  /// links the groups along the graph `outer` builds over the groups.
  /// @throws dml::config_error when group_size = 0.
  explicit hierarchical(std::size_t group_size, between_groups between = between_groups::leaders,
                        Outer outer = {})
      : group_size_(group_size), between_(between), outer_(std::move(outer)) {
    if (group_size_ == 0)
      throw config_error("topology 'hierarchical': the group size must be at least 1, got 0");
  }

  /// Groups by label: member i belongs to the group labelled `labels[i]`
  /// (e.g. `dml::comm::node_groups(ctx)`, the node each member runs on).
  /// @throws dml::config_error when `labels` is empty.
  explicit hierarchical(std::vector<std::size_t> labels, between_groups between = between_groups::leaders,
                        Outer outer = {})
      : group_size_(0), labels_(std::move(labels)), between_(between), outer_(std::move(outer)) {
    if (labels_.empty())
      throw config_error("topology 'hierarchical': the group labels are empty; give one label per member");
  }

  /// The group size, or 0 when the members are grouped by label.
  [[nodiscard]] std::size_t group_size() const noexcept { return group_size_; }
  /// The label of every member, or empty when grouped by size.
  [[nodiscard]] const std::vector<std::size_t>& labels() const noexcept { return labels_; }
  [[nodiscard]] between_groups between() const noexcept { return between_; }
  [[nodiscard]] const Outer& outer() const noexcept { return outer_; }

  /// Number of groups over n members: ceil(n / group_size) by size, the
  /// number of distinct labels by label.
  /// @throws dml::config_error by label, when n is not labels().size().
  [[nodiscard]] std::size_t groups(std::size_t n) const {
    if (by_size()) return (n + group_size_ - 1) / group_size_;
    return form(ids_upto(n)).size();
  }

  /// Whether the graph over n members is regular by construction: one
  /// group, or groups all of one size s with a regular outer graph and
  /// either s = 1 or between all.
  /// @throws dml::config_error as out_lists(n).
  [[nodiscard]] bool claims_regular(std::size_t n) const {
    ::dml::detail::check_member_count(name(), n);
    const auto gs = form(ids_upto(n));
    if (gs.size() <= 1) return true;
    const std::size_t s = gs.front().size();
    for (const auto& g : gs)
      if (g.size() != s) return false;
    if (s > 1 && between_ != between_groups::all) return false;
    return is_regular(outer_graph(n, gs));
  }

  /// Out-lists over members 0..n-1.
  /// @throws dml::config_error when n = 0, by label when n is not
  ///         labels().size(), or when the outer generator cannot build a
  ///         graph over the groups or builds a disconnected one (the
  ///         message names the groups).
  [[nodiscard]] std::vector<std::vector<member_id>> out_lists(std::size_t n) const {
    ::dml::detail::check_member_count(name(), n);
    const auto ids = ids_upto(n);
    return lists(ids, form(ids), n);
  }

  /// Out-lists over the survivors (ascending original ids, as `build`
  /// passes them), naming original ids: by size the groups are re-formed
  /// by position among the survivors, by label every survivor keeps its
  /// label.
  /// @throws dml::config_error as out_lists(survivors.size()), and by label
  ///         when a survivor id is not below labels().size().
  [[nodiscard]] std::vector<std::vector<member_id>> out_lists_over(
      std::span<const member_id> survivors) const {
    ::dml::detail::check_member_count(name(), survivors.size());
    if (!by_size()) {
      for (const member_id id : survivors) {
        if (id >= labels_.size())
          throw config_error("topology 'hierarchical': survivor " + std::to_string(id) +
                             " has no group label (labels were given for " +
                             ::dml::detail::members_phrase(labels_.size()) + ")");
      }
    }
    const std::vector<member_id> ids(survivors.begin(), survivors.end());
    return lists(ids, form(ids), ids.size());
  }

  [[nodiscard]] constexpr std::string_view name() const noexcept { return "hierarchical"; }

  /// "hierarchical(group=4, between=leaders, outer=exponential)", or by
  /// label "hierarchical(labels=0,0,1,2, between=...)" (the first 16).
  [[nodiscard]] std::string describe() const {
    std::string outer;
    if constexpr (requires { outer_.describe(); })
      outer = std::string(outer_.describe());
    else
      outer = std::string(outer_.name());
    std::string grouping;
    if (by_size()) {
      grouping = "group=" + std::to_string(group_size_);
    } else {
      grouping = "labels=";
      for (std::size_t i = 0; i < labels_.size() && i < 16; ++i)
        grouping += (i ? "," : "") + std::to_string(labels_[i]);
      if (labels_.size() > 16) grouping += ",...";
    }
    return "hierarchical(" + grouping +
           ", between=" + (between_ == between_groups::leaders ? "leaders" : "all") + ", outer=" + outer +
           ")";
  }

 private:
  [[nodiscard]] bool by_size() const noexcept { return group_size_ != 0; }

  // Members 0..n-1; by label n must be the number of labels.
  [[nodiscard]] std::vector<member_id> ids_upto(std::size_t n) const {
    if (!by_size() && n != labels_.size())
      throw config_error("topology 'hierarchical' was given group labels for " +
                         ::dml::detail::members_phrase(labels_.size()) + " but asked for a graph over " +
                         ::dml::detail::members_phrase(n) +
                         "; labels cannot be resized (over survivors every survivor keeps its label)");
    std::vector<member_id> ids(n);
    for (std::size_t i = 0; i < n; ++i) ids[i] = i;
    return ids;
  }

  // The groups over `ids` (ascending), as positions into `ids`: ordered by
  // smallest member, each in ascending order.
  [[nodiscard]] std::vector<std::vector<std::size_t>> form(const std::vector<member_id>& ids) const {
    std::vector<std::vector<std::size_t>> gs;
    if (by_size()) {
      for (std::size_t k = 0; k < ids.size(); ++k) {
        if (k % group_size_ == 0) gs.emplace_back();
        gs.back().push_back(k);
      }
      return gs;
    }
    std::vector<std::pair<std::size_t, std::size_t>> order;  // (label, group index)
    for (std::size_t k = 0; k < ids.size(); ++k) {
      const std::size_t label = labels_[ids[k]];
      const auto it =
          std::find_if(order.begin(), order.end(), [&](const auto& p) { return p.first == label; });
      if (it != order.end()) {
        gs[it->second].push_back(k);
      } else {
        order.emplace_back(label, gs.size());
        gs.push_back({k});
      }
    }
    return gs;
  }

  // The out-lists of members `ids` grouped as `gs`, naming ids.
  [[nodiscard]] std::vector<std::vector<member_id>> lists(const std::vector<member_id>& ids,
                                                          const std::vector<std::vector<std::size_t>>& gs,
                                                          std::size_t n) const {
    const graph outer = outer_graph(n, gs);
    std::vector<std::vector<member_id>> out(ids.size());
    for (const auto& g : gs)
      for (const std::size_t i : g)
        for (const std::size_t j : g)
          if (j != i) out[i].push_back(ids[j]);
    for (const member_id a : outer.members()) {
      for (const member_id b : outer.out(a)) {
        const auto& from = gs[a];
        const auto& to = gs[b];
        const std::size_t common = between_ == between_groups::leaders ? 1 : std::min(from.size(), to.size());
        for (std::size_t l = 0; l < common; ++l) out[from[l]].push_back(ids[to[l]]);
      }
    }
    for (auto& list : out) std::sort(list.begin(), list.end());
    return out;
  }

  // The outer generator's graph over the groups `gs` of n members, checked.
  [[nodiscard]] graph outer_graph(std::size_t n, const std::vector<std::vector<std::size_t>>& gs) const {
    const std::size_t g = gs.size();
    std::string where = "topology 'hierarchical' over " + ::dml::detail::members_phrase(n) + " in " +
                        std::to_string(g) + (g == 1 ? " group" : " groups");
    if (by_size())
      where += " of " + std::to_string(group_size_);
    else
      where += " by label";
    where += ": between the groups, ";
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

  std::size_t group_size_;           // 0: grouped by label
  std::vector<std::size_t> labels_;  // by label: one per member
  between_groups between_;
  Outer outer_;
};

}  // namespace topology
DML_END_NAMESPACE

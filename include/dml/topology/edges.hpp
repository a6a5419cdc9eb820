// SPDX-License-Identifier: BSL-1.0
/// @file
/// A user-supplied graph: a member count and a list of directed edges.
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
#include <utility>
#include <vector>

DML_BEGIN_NAMESPACE
namespace topology {

/// A graph the user spells out: `edges{4, {{0, 1}, {1, 2}, {2, 3}, {3, 0}}}`
/// is the one-way 4-ring. A pair (from, to) means `from` sends to `to`.
///
/// The list is validated when the object is made; it is not checked for
/// strong connectivity (that is a property of the use, reported by
/// `require_strongly_connected`). It only builds a graph over the member
/// count it was made for. Over survivors it builds the induced subgraph:
/// the user's edges whose both ends survive, with no edges added; that
/// graph may well be disconnected, which the analysis then reports.
class edges {
 public:
  using policy_slot = slot::topology;
  /// A directed edge (from, to).
  using edge = std::pair<member_id, member_id>;

  /// Graph over members 0..n-1 with the given edges, in any order.
  /// @throws dml::config_error when n = 0, or an edge is a self-edge, names a
  ///         member >= n, or is listed twice; the message names the pair.
  edges(std::size_t n, std::vector<edge> list) : n_(n), edges_(std::move(list)) {
    detail::check_member_count(name(), n_);
    for (const auto& [from, to] : edges_) {
      if (from == to) throw bad_edge(from, to, "is a self-edge: a member cannot send to itself");
      if (from >= n_ || to >= n_) {
        throw bad_edge(from, to,
                       "names member " + std::to_string(from >= n_ ? from : to) +
                           ", but the graph has only " + detail::members_phrase(n_) + " (ids 0.." +
                           std::to_string(n_ - 1) + ")");
      }
    }
    auto sorted = edges_;
    std::sort(sorted.begin(), sorted.end());
    if (const auto dup = std::adjacent_find(sorted.begin(), sorted.end()); dup != sorted.end()) {
      throw bad_edge(dup->first, dup->second, "is listed twice");
    }
  }

  /// The member count the graph was made for.
  [[nodiscard]] std::size_t member_count() const noexcept { return n_; }

  /// The edges as given.
  [[nodiscard]] std::span<const edge> list() const noexcept { return edges_; }

  /// Out-lists over members 0..n-1.
  /// @throws dml::config_error when n is not the member count given at
  ///         construction.
  [[nodiscard]] std::vector<std::vector<member_id>> out_lists(std::size_t n) const {
    if (n != n_) {
      throw config_error("topology 'edges' was given a graph over " + detail::members_phrase(n_) +
                         " but asked for one over " + detail::members_phrase(n) +
                         "; a user graph cannot be resized (over survivors it gives the induced subgraph)");
    }
    std::vector<std::vector<member_id>> out(n_);
    for (const auto& [from, to] : edges_) out[from].push_back(to);
    for (auto& list : out) std::sort(list.begin(), list.end());
    return out;
  }

  /// The induced subgraph over `survivors` (ascending original ids, as
  /// `build` passes them): one out-list per survivor, naming original ids.
  /// @throws dml::config_error when a survivor id is not below the member
  ///         count given at construction.
  [[nodiscard]] std::vector<std::vector<member_id>> out_lists_over(
      std::span<const member_id> survivors) const {
    std::vector<bool> alive(n_, false);
    for (const member_id id : survivors) {
      if (id >= n_) {
        throw config_error("topology 'edges': survivor " + std::to_string(id) +
                           " is not a member of the graph over " + detail::members_phrase(n_) + " (ids 0.." +
                           std::to_string(n_ - 1) + ")");
      }
      alive[id] = true;
    }
    std::vector<std::vector<member_id>> out(survivors.size());
    for (const auto& [from, to] : edges_) {
      if (alive[from] && alive[to]) {
        const auto i = std::lower_bound(survivors.begin(), survivors.end(), from) - survivors.begin();
        out[static_cast<std::size_t>(i)].push_back(to);
      }
    }
    for (auto& list : out) std::sort(list.begin(), list.end());
    return out;
  }

  [[nodiscard]] constexpr std::string_view name() const noexcept { return "edges"; }

  friend bool operator==(const edges&, const edges&) = default;

 private:
  static config_error bad_edge(member_id from, member_id to, const std::string& why) {
    return config_error("topology 'edges': edge (" + std::to_string(from) + ", " + std::to_string(to) + ") " +
                        why);
  }

  std::size_t n_;
  std::vector<edge> edges_;
};

}  // namespace topology
DML_END_NAMESPACE

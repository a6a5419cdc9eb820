// SPDX-License-Identifier: BSL-1.0
/// @file
/// The directed communication graph of a group, building it from a topology
/// generator (over 0..n-1 or over the survivors of a failure), and the
/// combinatorial analysis: strong connectivity, regularity, diameter and
/// message count. The spectral gap lives in <dml/topology/spectral.hpp> so
/// that only code asking for it pays for Eigen's SVD.
#pragma once

#include <dml/error.hpp>
#include <dml/fwd.hpp>
#include <dml/topology/concepts.hpp>
#include <dml/topology/detail/common.hpp>
#include <dml/version.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

DML_BEGIN_NAMESPACE
namespace topology {

/// A directed graph over a set of members, each named by its original id.
///
/// An edge i -> j means i sends its updates to j: j is an out-neighbour of i
/// and i an in-neighbour of j. Members are kept in ascending id order; they
/// are 0..n-1 for a fresh group and an arbitrary ascending subset after a
/// failure, so that vectors keep addressing peers by their original ids.
/// Every neighbour list is sorted ascending and free of duplicates and
/// self-edges. A graph is an immutable value: a topology change builds a new
/// one.
///
/// A graph may carry mixing weights (`with_weights`): per member a self
/// weight and one weight per in-neighbour, row i of the mixing matrix W with
/// W[i][j] the weight member i gives what j sends it. Without them every
/// weight is 1 (plain averaging), and everything that uses a graph behaves
/// exactly as it did before weights existed.
class graph {
 public:
  /// Graph over members 0..n-1 where n = out_lists.size() and out_lists[i]
  /// names the out-neighbours of member i, in any order.
  /// @throws dml::config_error when there are no members, or a list names a
  ///         member out of range, the member itself, or the same member twice.
  explicit graph(std::vector<std::vector<member_id>> out_lists);

  /// Graph over the given members (strictly ascending original ids, e.g. the
  /// survivors of a failure); out_lists[i] names, in original ids, the
  /// out-neighbours of members[i]. (A span rather than a vector, so that
  /// `graph({{1}, {0}})` is not ambiguous with a copy from a braced graph.)
  /// @throws dml::config_error as above, and when the ids are not strictly
  ///         ascending or the two lists differ in length.
  graph(std::span<const member_id> members, std::vector<std::vector<member_id>> out_lists);

  /// Number of members.
  [[nodiscard]] std::size_t size() const noexcept { return members_.size(); }

  /// The members' original ids, ascending.
  [[nodiscard]] std::span<const member_id> members() const noexcept { return members_; }

  /// Whether `id` is a member.
  [[nodiscard]] bool contains(member_id id) const noexcept { return find_index(id).has_value(); }

  /// Position of member `id` in members(): the dense index 0..size()-1 that
  /// per-member arrays (receive slots, degrees) are indexed by.
  /// @throws dml::config_error when `id` is not a member.
  [[nodiscard]] std::size_t index_of(member_id id) const;

  /// Out-neighbours of member `id` (whom it sends to), ascending original ids.
  /// @throws dml::config_error when `id` is not a member.
  [[nodiscard]] std::span<const member_id> out(member_id id) const {
    const std::size_t i = index_of(id);
    return std::span<const member_id>(out_ids_).subspan(out_offsets_[i],
                                                        out_offsets_[i + 1] - out_offsets_[i]);
  }

  /// In-neighbours of member `id` (who sends to it), ascending original ids.
  /// @throws dml::config_error when `id` is not a member.
  [[nodiscard]] std::span<const member_id> in(member_id id) const {
    const std::size_t i = index_of(id);
    return std::span<const member_id>(in_ids_).subspan(in_offsets_[i], in_offsets_[i + 1] - in_offsets_[i]);
  }

  /// Number of directed edges.
  [[nodiscard]] std::size_t edge_count() const noexcept { return out_ids_.size(); }

  /// Whether `from` sends to `to`. False (not an error) when either is not a
  /// member: a departed member has no edges.
  [[nodiscard]] bool has_edge(member_id from, member_id to) const noexcept {
    const auto i = find_index(from);
    if (!i) return false;
    const auto first = out_ids_.begin() + static_cast<std::ptrdiff_t>(out_offsets_[*i]);
    const auto last = out_ids_.begin() + static_cast<std::ptrdiff_t>(out_offsets_[*i + 1]);
    return std::binary_search(first, last, to);
  }

  /// Whether the graph carries mixing weights.
  [[nodiscard]] bool has_weights() const noexcept { return !self_weights_.empty(); }

  /// The weight member `id` gives its own value: 1 without weights.
  /// @throws dml::config_error when `id` is not a member.
  [[nodiscard]] double self_weight(member_id id) const {
    const std::size_t i = index_of(id);
    return has_weights() ? self_weights_[i] : 1.0;
  }

  /// The weights member `id` gives its in-neighbours, aligned with in(id);
  /// empty when the graph carries no weights (each is then 1).
  /// @throws dml::config_error when `id` is not a member.
  [[nodiscard]] std::span<const double> in_weights(member_id id) const {
    const std::size_t i = index_of(id);
    if (!has_weights()) return {};
    return std::span<const double>(in_weights_).subspan(in_offsets_[i], in_offsets_[i + 1] - in_offsets_[i]);
  }

  /// The weight `to` gives what `from` sends it: 1 without weights, 0 when
  /// there is no such edge.
  [[nodiscard]] double weight(member_id from, member_id to) const noexcept;

  /// The same graph with mixing weights: rows[i] is the row of members()[i]
  /// (its self weight and one (sender, weight) per in-neighbour, any order).
  /// An empty `rows` returns the graph without weights.
  /// @throws dml::config_error when there is not one row per member, a row
  ///         names a member that does not send to its owner, names one twice
  ///         or leaves an in-neighbour out, or a weight is not finite, an
  ///         edge weight is not > 0, a self weight is < 0, or a member with
  ///         no in-neighbours has self weight 0.
  [[nodiscard]] graph with_weights(std::vector<mixing_row> rows) const;

  /// Same members, same edges and same weights (or both without).
  friend bool operator==(const graph& a, const graph& b) noexcept {
    return a.members_ == b.members_ && a.out_offsets_ == b.out_offsets_ && a.out_ids_ == b.out_ids_ &&
           a.self_weights_ == b.self_weights_ && a.in_weights_ == b.in_weights_;
  }

 private:
  // Validates the out-lists of members_ and lays out both adjacency arrays.
  void init(std::vector<std::vector<member_id>> out_lists);

  static std::vector<member_id> iota_ids(std::size_t n) {
    std::vector<member_id> ids(n);
    for (std::size_t i = 0; i < n; ++i) ids[i] = i;
    return ids;
  }

  static std::string number(double x);  // as std::ostream prints it, without <sstream>

  static std::string edge_string(member_id from, member_id to) {
    return std::to_string(from) + " -> " + std::to_string(to);
  }

  [[nodiscard]] std::optional<std::size_t> find_index(member_id id) const noexcept {
    if (dense_) {
      if (id < members_.size()) return id;
      return std::nullopt;
    }
    const auto it = std::lower_bound(members_.begin(), members_.end(), id);
    if (it == members_.end() || *it != id) return std::nullopt;
    return static_cast<std::size_t>(it - members_.begin());
  }

  // Lists the members in messages, shortened when there are many.
  [[nodiscard]] std::string describe_members() const;

  std::vector<member_id> members_;
  bool dense_ = false;  // members_ is 0..n-1, so an id is its own index
  std::vector<std::size_t> out_offsets_;
  std::vector<member_id> out_ids_;
  std::vector<std::size_t> in_offsets_;
  std::vector<member_id> in_ids_;
  std::vector<double> self_weights_;  // per member; empty: no weights
  std::vector<double> in_weights_;    // aligned with in_ids_; empty: no weights
};

}  // namespace topology

namespace detail {

/// Adjacency by dense index (position in members()), for the analyses.
struct dense_adjacency {
  std::vector<std::vector<std::size_t>> out;
  std::vector<std::vector<std::size_t>> in;

  explicit dense_adjacency(const topology::graph& g);
};

/// Breadth-first hop counts from `source` along `adj`; -1 when unreachable.
DML_DECL std::vector<long> bfs_distances(const std::vector<std::vector<std::size_t>>& adj,
                                         std::size_t source);

}  // namespace detail

namespace topology {

/// Builds the graph generator `gen` makes over members 0..n-1.
/// @tparam G a `topology_generator`.
/// @throws dml::config_error when `gen` cannot build a graph over n members
///         (n = 0, a fan-out of n or more, an `edges` graph of another size)
///         or returns malformed out-lists.
template <class G>
[[nodiscard]] graph build(const G& gen, std::size_t n) {
  static_assert(topology_generator<G>,
                "dml::topology::build(gen, n) requires 'gen' to be a topology generator: a type with "
                "'using policy_slot = dml::slot::topology;', out_lists(std::size_t) const returning "
                "std::vector<std::vector<dml::member_id>> and name() const returning std::string_view");
  detail::check_member_count(gen.name(), n);
  auto lists = gen.out_lists(n);
  if (lists.size() != n) {
    throw config_error("topology '" + std::string(gen.name()) + "' returned " + std::to_string(lists.size()) +
                       " out-lists for " + detail::members_phrase(n));
  }
  if constexpr (has_mixing<G>) {
    if (auto rows = gen.mixing(n); !rows.empty())
      return graph(std::move(lists)).with_weights(std::move(rows));
  }
  return graph(std::move(lists));
}

/// Builds the graph `gen` makes over the surviving members of a group: how
/// vectors rebuild their neighbour lists after a failure. The survivors
/// (any order) are sorted and relabelled densely 0..m-1, the generator builds
/// its graph over m = survivors.size() members, and the result is mapped back
/// to the original ids; so survivor k (in ascending order) plays the role
/// member k plays in a fresh group of m. A generator modelling
/// `has_survivor_lists` (e.g. `edges`, which yields the induced subgraph)
/// builds the lists itself instead.
/// @tparam G a `topology_generator`.
/// @throws dml::config_error when `survivors` is empty or names a member
///         twice, or as build(gen, n) does for n = survivors.size().
template <class G>
[[nodiscard]] graph build(const G& gen, std::span<const member_id> survivors) {
  static_assert(topology_generator<G>,
                "dml::topology::build(gen, survivors) requires 'gen' to be a topology generator: a type with "
                "'using policy_slot = dml::slot::topology;', out_lists(std::size_t) const returning "
                "std::vector<std::vector<dml::member_id>> and name() const returning std::string_view");
  if (survivors.empty()) {
    throw config_error("topology '" + std::string(gen.name()) +
                       "': the survivor list is empty; a graph needs at least one member");
  }
  std::vector<member_id> ids(survivors.begin(), survivors.end());
  std::sort(ids.begin(), ids.end());
  if (const auto dup = std::adjacent_find(ids.begin(), ids.end()); dup != ids.end()) {
    throw config_error("topology '" + std::string(gen.name()) + "': member " + std::to_string(*dup) +
                       " appears twice in the survivor list");
  }
  const std::size_t m = ids.size();
  std::vector<std::vector<member_id>> lists;
  if constexpr (has_survivor_lists<G>) {
    lists = gen.out_lists_over(std::span<const member_id>(ids));
  } else {
    lists = gen.out_lists(m);
    if (lists.size() == m) {
      for (auto& list : lists) {
        for (auto& j : list) {
          // An out-of-range dense id is left for graph's check to report.
          if (j < m) j = ids[j];
        }
      }
    }
  }
  if (lists.size() != m) {
    throw config_error("topology '" + std::string(gen.name()) + "' returned " + std::to_string(lists.size()) +
                       " out-lists for " + detail::members_phrase(m));
  }
  if constexpr (has_mixing<G>) {
    std::vector<mixing_row> rows;
    if constexpr (has_survivor_mixing<G>) {
      rows = gen.mixing_over(std::span<const member_id>(ids));
    } else {
      rows = gen.mixing(m);
      for (auto& row : rows)
        for (auto& [from, w] : row.in)
          if (from < m) from = ids[from];  // an out-of-range id is left for with_weights to report
    }
    if (!rows.empty()) return graph(ids, std::move(lists)).with_weights(std::move(rows));
  }
  return graph(ids, std::move(lists));
}

/// A pair (from, to) of members such that `from` cannot reach `to`, or none
/// when the graph is strongly connected. The pair is found from the smallest
/// member s: (s, t) for the smallest t that s cannot reach, otherwise (t, s)
/// for the smallest t that cannot reach s.
[[nodiscard]] DML_DECL std::optional<std::pair<member_id, member_id>> find_unreachable_pair(const graph& g);

/// Whether every member can reach every other along directed edges, i.e.
/// every update eventually influences every member. A one-member graph is
/// strongly connected.
[[nodiscard]] inline bool is_strongly_connected(const graph& g) {
  return !find_unreachable_pair(g).has_value();
}

/// Throws unless g is strongly connected; `what` names the topology in the
/// message, e.g. "topology 'edges' over 4 members is not strongly connected:
/// member 3 cannot reach member 0".
/// @throws dml::config_error naming one unreachable pair.
DML_DECL void require_strongly_connected(const graph& g, std::string_view what);

/// Whether all members have the same in-degree and all have the same
/// out-degree. (The two common values are then equal, since in- and
/// out-degrees both sum to edge_count().) Regular graphs spread load evenly:
/// every member sends and receives the same number of updates per round.
[[nodiscard]] DML_DECL bool is_regular(const graph& g);

/// The largest, over ordered pairs (i, j), of the length of a shortest
/// directed path from i to j: how many rounds of scatter/gather it takes for
/// an update to influence every member. 0 for one member; -1 when the graph
/// is not strongly connected. Costs one breadth-first search per member.
[[nodiscard]] DML_DECL int diameter(const graph& g);

/// Messages sent in one round in which every member scatters to all its
/// out-neighbours: the number of directed edges.
[[nodiscard]] inline std::size_t messages_per_round(const graph& g) noexcept { return g.edge_count(); }

}  // namespace topology
DML_END_NAMESPACE

#if !defined(DML_SEPARATE_COMPILATION)
#include <dml/topology/impl/graph.ipp>
#endif

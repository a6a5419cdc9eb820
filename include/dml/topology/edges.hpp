// SPDX-License-Identifier: BSL-1.0
/// @file
/// A user-supplied graph: a member count and a list of directed edges.
#pragma once

#include <dml/error.hpp>
#include <dml/fwd.hpp>
#include <dml/topology/concepts.hpp>
#include <dml/topology/detail/common.hpp>
#include <dml/version.hpp>

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
///
/// With weights (`edges{n, list, weights, self_weights}`) the graph carries
/// a mixing matrix: weights[e] is the weight member `to` gives what `from`
/// sends along list[e], self_weights[i] the weight member i gives its own
/// value (graph::with_weights). Over survivors the induced subgraph keeps
/// the weights of the edges it keeps; gather::average divides by the sum of
/// the weights it applies, so each row still averages.
class edges {
 public:
  using policy_slot = slot::topology;
  /// A directed edge (from, to).
  using edge = std::pair<member_id, member_id>;

  /// Graph over members 0..n-1 with the given edges, in any order.
  /// @throws dml::config_error when n = 0, or an edge is a self-edge, names a
  ///         member >= n, or is listed twice; the message names the pair.
  DML_DECL edges(std::size_t n, std::vector<edge> list);

  /// Weighted graph over members 0..n-1: the edges as above, weights[e] the
  /// weight list[e].second gives list[e].first, self_weights[i] member i's
  /// own weight.
  /// @throws dml::config_error as above, when there is not one weight per
  ///         edge and one self weight per member, when an edge weight is not
  ///         finite and > 0 or a self weight not finite and >= 0, or when a
  ///         member with no in-edges has self weight 0.
  DML_DECL edges(std::size_t n, std::vector<edge> list, std::vector<double> weights,
                 std::vector<double> self_weights);

  /// Whether the graph carries weights.
  [[nodiscard]] bool weighted() const noexcept { return !self_weights_.empty(); }

  /// The mixing rows over members 0..n-1 (see graph::with_weights); empty
  /// without weights.
  /// @throws dml::config_error when n is not the member count.
  [[nodiscard]] DML_DECL std::vector<mixing_row> mixing(std::size_t n) const;

  /// The mixing rows of the induced subgraph over `survivors` (ascending
  /// original ids): one row per survivor, naming original ids; empty
  /// without weights.
  [[nodiscard]] DML_DECL std::vector<mixing_row> mixing_over(std::span<const member_id> survivors) const;

  /// The member count the graph was made for.
  [[nodiscard]] std::size_t member_count() const noexcept { return n_; }

  /// The edges as given.
  [[nodiscard]] std::span<const edge> list() const noexcept { return edges_; }

  /// Out-lists over members 0..n-1.
  /// @throws dml::config_error when n is not the member count given at
  ///         construction.
  [[nodiscard]] DML_DECL std::vector<std::vector<member_id>> out_lists(std::size_t n) const;

  /// The induced subgraph over `survivors` (ascending original ids, as
  /// `build` passes them): one out-list per survivor, naming original ids.
  /// @throws dml::config_error when a survivor id is not below the member
  ///         count given at construction.
  [[nodiscard]] DML_DECL std::vector<std::vector<member_id>> out_lists_over(
      std::span<const member_id> survivors) const;

  [[nodiscard]] constexpr std::string_view name() const noexcept { return "edges"; }

  friend bool operator==(const edges&, const edges&) = default;

 private:
  DML_DECL static config_error bad_edge(member_id from, member_id to, const std::string& why);

  std::size_t n_;
  std::vector<edge> edges_;
  std::vector<double> weights_;       // per edge; empty: unweighted
  std::vector<double> self_weights_;  // per member; empty: unweighted
};

}  // namespace topology
DML_END_NAMESPACE

#if !defined(DML_SEPARATE_COMPILATION)
#include <dml/topology/impl/edges.ipp>
#endif

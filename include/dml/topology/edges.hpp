// SPDX-License-Identifier: BSL-1.0
/// @file
/// A user-supplied graph: a member count and a list of directed edges.
#pragma once

#include <dml/error.hpp>
#include <dml/fwd.hpp>
#include <dml/topology/concepts.hpp>
#include <dml/topology/detail/common.hpp>
#include <dml/version.hpp>

#include <algorithm>
#include <cmath>
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

  /// Weighted graph over members 0..n-1: the edges as above, weights[e] the
  /// weight list[e].second gives list[e].first, self_weights[i] member i's
  /// own weight.
  /// @throws dml::config_error as above, when there is not one weight per
  ///         edge and one self weight per member, when an edge weight is not
  ///         finite and > 0 or a self weight not finite and >= 0, or when a
  ///         member with no in-edges has self weight 0.
  edges(std::size_t n, std::vector<edge> list, std::vector<double> weights, std::vector<double> self_weights)
      : edges(n, std::move(list)) {
    if (weights.size() != edges_.size())
      throw config_error("topology 'edges': " + std::to_string(weights.size()) + " weights for " +
                         std::to_string(edges_.size()) + " edges; give one weight per edge");
    if (self_weights.size() != n_)
      throw config_error("topology 'edges': " + std::to_string(self_weights.size()) + " self weights for " +
                         detail::members_phrase(n_) + "; give one per member");
    std::vector<bool> receives(n_, false);
    for (std::size_t e = 0; e < edges_.size(); ++e) {
      if (!std::isfinite(weights[e]) || !(weights[e] > 0))
        throw bad_edge(
            edges_[e].first, edges_[e].second,
            "has weight " + std::to_string(weights[e]) + "; an edge weight must be finite and > 0");
      receives[edges_[e].second] = true;
    }
    for (std::size_t i = 0; i < n_; ++i) {
      if (!std::isfinite(self_weights[i]) || self_weights[i] < 0)
        throw config_error("topology 'edges': member " + std::to_string(i) + " has self weight " +
                           std::to_string(self_weights[i]) + "; a self weight must be finite and >= 0");
      if (self_weights[i] == 0 && !receives[i])
        throw config_error("topology 'edges': member " + std::to_string(i) +
                           " has self weight 0 and no in-edges, so it would average nothing");
    }
    weights_ = std::move(weights);
    self_weights_ = std::move(self_weights);
  }

  /// Whether the graph carries weights.
  [[nodiscard]] bool weighted() const noexcept { return !self_weights_.empty(); }

  /// The mixing rows over members 0..n-1 (see graph::with_weights); empty
  /// without weights.
  /// @throws dml::config_error when n is not the member count.
  [[nodiscard]] std::vector<mixing_row> mixing(std::size_t n) const {
    (void)out_lists(n);  // the same check of n
    std::vector<member_id> all(n_);
    for (std::size_t i = 0; i < n_; ++i) all[i] = i;
    return mixing_over(all);
  }

  /// The mixing rows of the induced subgraph over `survivors` (ascending
  /// original ids): one row per survivor, naming original ids; empty
  /// without weights.
  [[nodiscard]] std::vector<mixing_row> mixing_over(std::span<const member_id> survivors) const {
    if (!weighted()) return {};
    std::vector<bool> alive(n_, false);
    for (const member_id id : survivors)
      if (id < n_) alive[id] = true;
    std::vector<mixing_row> rows(survivors.size());
    for (std::size_t i = 0; i < survivors.size(); ++i)
      if (survivors[i] < n_) rows[i].self = self_weights_[survivors[i]];
    for (std::size_t e = 0; e < edges_.size(); ++e) {
      const auto [from, to] = edges_[e];
      if (alive[from] && alive[to]) {
        const auto i = std::lower_bound(survivors.begin(), survivors.end(), to) - survivors.begin();
        rows[static_cast<std::size_t>(i)].in.emplace_back(from, weights_[e]);
      }
    }
    return rows;
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
  std::vector<double> weights_;       // per edge; empty: unweighted
  std::vector<double> self_weights_;  // per member; empty: unweighted
};

}  // namespace topology
DML_END_NAMESPACE

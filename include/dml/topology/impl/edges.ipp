// SPDX-License-Identifier: BSL-1.0
/// @file
/// Out-of-line definitions for <dml/topology/edges.hpp> (see <dml/version.hpp>, DML_DECL).
#pragma once

#include <dml/topology/edges.hpp>

#include <algorithm>
#include <cmath>

DML_BEGIN_NAMESPACE
namespace topology {

DML_DECL edges::edges(std::size_t n, std::vector<edge> list) : n_(n), edges_(std::move(list)) {
  detail::check_member_count(name(), n_);
  for (const auto& [from, to] : edges_) {
    if (from == to) throw bad_edge(from, to, "is a self-edge: a member cannot send to itself");
    if (from >= n_ || to >= n_) {
      throw bad_edge(from, to,
                     "names member " + std::to_string(from >= n_ ? from : to) + ", but the graph has only " +
                         detail::members_phrase(n_) + " (ids 0.." + std::to_string(n_ - 1) + ")");
    }
  }
  auto sorted = edges_;
  std::sort(sorted.begin(), sorted.end());
  if (const auto dup = std::adjacent_find(sorted.begin(), sorted.end()); dup != sorted.end()) {
    throw bad_edge(dup->first, dup->second, "is listed twice");
  }
}

DML_DECL edges::edges(std::size_t n, std::vector<edge> list, std::vector<double> weights,
                      std::vector<double> self_weights)
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
      throw bad_edge(edges_[e].first, edges_[e].second,
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

DML_DECL std::vector<mixing_row> edges::mixing(std::size_t n) const {
  (void)out_lists(n);  // the same check of n
  std::vector<member_id> all(n_);
  for (std::size_t i = 0; i < n_; ++i) all[i] = i;
  return mixing_over(all);
}

DML_DECL std::vector<mixing_row> edges::mixing_over(std::span<const member_id> survivors) const {
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

DML_DECL std::vector<std::vector<member_id>> edges::out_lists(std::size_t n) const {
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

DML_DECL std::vector<std::vector<member_id>> edges::out_lists_over(
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

DML_DECL config_error edges::bad_edge(member_id from, member_id to, const std::string& why) {
  return config_error("topology 'edges': edge (" + std::to_string(from) + ", " + std::to_string(to) + ") " +
                      why);
}

}  // namespace topology
DML_END_NAMESPACE

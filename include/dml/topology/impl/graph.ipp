// SPDX-License-Identifier: BSL-1.0
/// @file
/// Out-of-line definitions for <dml/topology/graph.hpp> (see <dml/version.hpp>, DML_DECL).
#pragma once

#include <dml/topology/graph.hpp>

DML_BEGIN_NAMESPACE
namespace topology {

DML_DECL graph::graph(std::vector<std::vector<member_id>> out_lists) : members_(iota_ids(out_lists.size())) {
  init(std::move(out_lists));
}

DML_DECL graph::graph(std::span<const member_id> members, std::vector<std::vector<member_id>> out_lists)
    : members_(members.begin(), members.end()) {
  init(std::move(out_lists));
}

DML_DECL std::size_t graph::index_of(member_id id) const {
  if (const auto i = find_index(id)) return *i;
  throw config_error("graph: " + std::to_string(id) + " is not a member (" + describe_members() + ")");
}

DML_DECL double graph::weight(member_id from, member_id to) const noexcept {
  if (!has_edge(from, to)) return 0;
  if (!has_weights()) return 1;
  const auto j = *find_index(to);
  const auto first = in_ids_.begin() + static_cast<std::ptrdiff_t>(in_offsets_[j]);
  const auto last = in_ids_.begin() + static_cast<std::ptrdiff_t>(in_offsets_[j + 1]);
  return in_weights_[static_cast<std::size_t>(std::lower_bound(first, last, from) - in_ids_.begin())];
}

DML_DECL graph graph::with_weights(std::vector<mixing_row> rows) const {
  graph g = *this;
  g.self_weights_.clear();
  g.in_weights_.clear();
  if (rows.empty()) return g;
  if (rows.size() != size()) {
    throw config_error("graph: " + std::to_string(rows.size()) + " mixing rows for " +
                       detail::members_phrase(size()) + "; there must be one row per member");
  }
  g.self_weights_.resize(size());
  g.in_weights_.assign(in_ids_.size(), 0.0);
  std::vector<bool> seen(in_ids_.size(), false);
  for (std::size_t i = 0; i < size(); ++i) {
    const member_id me = members_[i];
    const auto& row = rows[i];
    if (!std::isfinite(row.self) || row.self < 0) {
      throw config_error("graph: member " + std::to_string(me) + "'s self weight is " + number(row.self) +
                         "; a self weight must be finite and >= 0");
    }
    if (row.self == 0 && in_offsets_[i] == in_offsets_[i + 1]) {
      throw config_error("graph: member " + std::to_string(me) +
                         " has self weight 0 and no in-neighbours, so its row of the mixing matrix is empty");
    }
    g.self_weights_[i] = row.self;
    for (const auto& [from, w] : row.in) {
      const auto first = in_ids_.begin() + static_cast<std::ptrdiff_t>(in_offsets_[i]);
      const auto last = in_ids_.begin() + static_cast<std::ptrdiff_t>(in_offsets_[i + 1]);
      const auto it = std::lower_bound(first, last, from);
      if (it == last || *it != from) {
        throw config_error("graph: member " + std::to_string(me) + "'s mixing row gives a weight to " +
                           std::to_string(from) + ", which does not send to it");
      }
      const auto e = static_cast<std::size_t>(it - in_ids_.begin());
      if (seen[e]) {
        throw config_error("graph: member " + std::to_string(me) + "'s mixing row weighs edge " +
                           edge_string(from, me) + " twice");
      }
      if (!std::isfinite(w) || !(w > 0)) {
        throw config_error("graph: the weight of edge " + edge_string(from, me) + " is " + number(w) +
                           "; an edge weight must be finite and > 0 (leave a zero-weight edge out)");
      }
      seen[e] = true;
      g.in_weights_[e] = w;
    }
    for (std::size_t e = in_offsets_[i]; e < in_offsets_[i + 1]; ++e) {
      if (!seen[e]) {
        throw config_error("graph: member " + std::to_string(me) + "'s mixing row has no weight for edge " +
                           edge_string(in_ids_[e], me));
      }
    }
  }
  return g;
}

DML_DECL void graph::init(std::vector<std::vector<member_id>> out_lists) {
  if (members_.empty()) throw config_error("graph: a graph needs at least one member, got none");
  if (out_lists.size() != members_.size()) {
    throw config_error("graph: " + detail::members_phrase(members_.size()) + " but " +
                       std::to_string(out_lists.size()) +
                       " out-lists; there must be one out-list per member");
  }
  for (std::size_t i = 1; i < members_.size(); ++i) {
    if (members_[i] <= members_[i - 1]) {
      throw config_error("graph: member ids must be strictly ascending, but " + std::to_string(members_[i]) +
                         " follows " + std::to_string(members_[i - 1]));
    }
  }
  dense_ = members_.back() == members_.size() - 1;  // ascending ids ending at n-1 are exactly 0..n-1

  const std::size_t n = members_.size();
  std::vector<std::size_t> in_degree(n, 0);
  out_offsets_.assign(n + 1, 0);
  for (std::size_t i = 0; i < n; ++i) {
    auto& list = out_lists[i];
    std::sort(list.begin(), list.end());
    for (std::size_t e = 0; e < list.size(); ++e) {
      const member_id to = list[e];
      if (to == members_[i]) {
        throw config_error("graph: self-edge " + edge_string(to, to) + ": a member cannot send to itself");
      }
      if (e > 0 && list[e - 1] == to) {
        throw config_error("graph: edge " + edge_string(members_[i], to) + " is listed twice");
      }
      const auto j = find_index(to);
      if (!j) {
        throw config_error("graph: edge " + edge_string(members_[i], to) + " names " + std::to_string(to) +
                           ", which is not a member (" + describe_members() + ")");
      }
      ++in_degree[*j];
    }
    out_offsets_[i + 1] = out_offsets_[i] + list.size();
  }
  out_ids_.reserve(out_offsets_[n]);
  for (const auto& list : out_lists) out_ids_.insert(out_ids_.end(), list.begin(), list.end());

  // In-lists: visiting senders in ascending order leaves each list sorted.
  in_offsets_.assign(n + 1, 0);
  for (std::size_t j = 0; j < n; ++j) in_offsets_[j + 1] = in_offsets_[j] + in_degree[j];
  in_ids_.resize(out_ids_.size());
  std::vector<std::size_t> fill(in_offsets_.begin(), in_offsets_.end() - 1);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t e = out_offsets_[i]; e < out_offsets_[i + 1]; ++e) {
      in_ids_[fill[*find_index(out_ids_[e])]++] = members_[i];
    }
  }
}

DML_DECL std::string graph::number(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", x);
  return text;
}

DML_DECL std::string graph::describe_members() const {
  if (dense_) return "members are 0.." + std::to_string(members_.size() - 1);
  std::string s = "members are";
  const std::size_t shown = std::min<std::size_t>(members_.size(), 12);
  for (std::size_t i = 0; i < shown; ++i) s += " " + std::to_string(members_[i]);
  if (shown < members_.size()) {
    s += " ... " + std::to_string(members_.back()) + " (" + detail::members_phrase(members_.size()) + ")";
  }
  return s;
}

}  // namespace topology

namespace detail {

DML_DECL dense_adjacency::dense_adjacency(const topology::graph& g) : out(g.size()), in(g.size()) {
  const auto members = g.members();
  for (std::size_t i = 0; i < members.size(); ++i) {
    for (const member_id j : g.out(members[i])) out[i].push_back(g.index_of(j));
    for (const member_id j : g.in(members[i])) in[i].push_back(g.index_of(j));
  }
}

DML_DECL std::vector<long> bfs_distances(const std::vector<std::vector<std::size_t>>& adj,
                                         std::size_t source) {
  std::vector<long> dist(adj.size(), -1);
  std::vector<std::size_t> queue{source};
  dist[source] = 0;
  for (std::size_t head = 0; head < queue.size(); ++head) {
    const std::size_t u = queue[head];
    for (const std::size_t v : adj[u]) {
      if (dist[v] < 0) {
        dist[v] = dist[u] + 1;
        queue.push_back(v);
      }
    }
  }
  return dist;
}

}  // namespace detail

namespace topology {

DML_DECL std::optional<std::pair<member_id, member_id>> find_unreachable_pair(const graph& g) {
  const detail::dense_adjacency adj(g);
  const auto members = g.members();
  const auto forward = detail::bfs_distances(adj.out, 0);
  for (std::size_t t = 0; t < forward.size(); ++t) {
    if (forward[t] < 0) return std::pair{members[0], members[t]};
  }
  const auto backward = detail::bfs_distances(adj.in, 0);
  for (std::size_t t = 0; t < backward.size(); ++t) {
    if (backward[t] < 0) return std::pair{members[t], members[0]};
  }
  return std::nullopt;
}

DML_DECL void require_strongly_connected(const graph& g, std::string_view what) {
  if (const auto pair = find_unreachable_pair(g)) {
    throw config_error("topology '" + std::string(what) + "' over " + detail::members_phrase(g.size()) +
                       " is not strongly connected: member " + std::to_string(pair->first) +
                       " cannot reach member " + std::to_string(pair->second));
  }
}

DML_DECL bool is_regular(const graph& g) {
  const auto members = g.members();
  const std::size_t out0 = g.out(members[0]).size();
  const std::size_t in0 = g.in(members[0]).size();
  return std::all_of(members.begin(), members.end(),
                     [&](member_id id) { return g.out(id).size() == out0 && g.in(id).size() == in0; });
}

DML_DECL int diameter(const graph& g) {
  const detail::dense_adjacency adj(g);
  long worst = 0;
  for (std::size_t s = 0; s < g.size(); ++s) {
    for (const long d : detail::bfs_distances(adj.out, s)) {
      if (d < 0) return -1;
      worst = std::max(worst, d);
    }
  }
  return static_cast<int>(worst);
}

}  // namespace topology
DML_END_NAMESPACE

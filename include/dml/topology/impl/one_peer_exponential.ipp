// SPDX-License-Identifier: BSL-1.0
/// @file
/// Out-of-line definitions for <dml/topology/one_peer_exponential.hpp> (see <dml/version.hpp>, DML_DECL).
#pragma once

#include <dml/topology/one_peer_exponential.hpp>

#include <algorithm>

DML_BEGIN_NAMESPACE
namespace topology {

DML_DECL std::size_t one_peer_exponential::exact_after_rounds(std::size_t n) const {
  ::dml::detail::check_member_count(name(), n);
  const std::size_t p = floor_log2(n);
  return (std::size_t{1} << p) == n ? p : p + 2;
}

DML_DECL std::size_t one_peer_exponential::period(std::size_t n) const {
  return std::max<std::size_t>(exact_after_rounds(n), 1);
}

DML_DECL std::vector<std::vector<member_id>> one_peer_exponential::round_out_lists(std::size_t n,
                                                                                   std::uint64_t t) const {
  std::vector<std::vector<member_id>> out(n);
  for (const auto& e : round_edges(n, t)) out[e.from].push_back(e.to);
  return out;
}

DML_DECL std::vector<mixing_row> one_peer_exponential::round_mixing(std::size_t n, std::uint64_t t) const {
  std::vector<mixing_row> rows(n);
  for (const auto& e : round_edges(n, t)) {
    rows[e.to].self = e.self_weight;
    rows[e.to].in.emplace_back(e.from, e.weight);
  }
  return rows;
}

DML_DECL std::vector<std::vector<member_id>> one_peer_exponential::out_lists(std::size_t n) const {
  std::vector<std::vector<member_id>> out(n);
  for (std::size_t t = 0; t < period(n); ++t)
    for (const auto& e : round_edges(n, t))
      if (std::find(out[e.from].begin(), out[e.from].end(), e.to) == out[e.from].end())
        out[e.from].push_back(e.to);
  for (auto& list : out) std::sort(list.begin(), list.end());
  return out;
}

DML_DECL std::size_t one_peer_exponential::floor_log2(std::size_t n) noexcept {
  std::size_t p = 0;
  while (p + 1 < 64 && (std::size_t{1} << (p + 1)) <= n) ++p;
  return p;
}

DML_DECL std::vector<one_peer_exponential::edge> one_peer_exponential::round_edges(std::size_t n,
                                                                                   std::uint64_t t) const {
  const std::size_t rounds = period(n);
  const std::size_t p = floor_log2(n);
  const std::size_t core = std::size_t{1} << p;
  const std::size_t extras = n - core;
  std::size_t r = static_cast<std::size_t>(t % rounds);
  std::vector<edge> edges;
  if (n == 1) return edges;
  if (extras > 0) {
    if (r == 0) {  // fold
      for (std::size_t j = 0; j < extras; ++j) edges.push_back({core + j, j, 0.5, 0.5});
      return edges;
    }
    if (r == p + 1) {  // unfold
      for (std::size_t j = 0; j < extras; ++j) edges.push_back({j, core + j, 0.0, 1.0});
      return edges;
    }
    --r;  // the core's exponential rounds 0..p-1
  }
  // c_m: members core member m stands for; window counts before round r.
  const std::size_t step = std::size_t{1} << r;
  auto stands_for = [&](std::size_t m) -> std::size_t { return m < extras ? 2 : 1; };
  auto window = [&](std::size_t last) {  // sum of c over last - step + 1 .. last (mod core)
    std::size_t count = 0;
    for (std::size_t k = 0; k < step; ++k) count += stands_for((last + core - k) % core);
    return count;
  };
  for (std::size_t i = 0; i < core; ++i) {
    const std::size_t s = (i + core - step) % core;
    const auto ci = static_cast<double>(window(i));
    const auto cs = static_cast<double>(window(s));
    edges.push_back({s, i, ci / (ci + cs), cs / (ci + cs)});
  }
  return edges;
}

}  // namespace topology
DML_END_NAMESPACE

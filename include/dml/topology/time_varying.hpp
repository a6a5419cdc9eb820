// SPDX-License-Identifier: BSL-1.0
/// @file
/// Time-varying topologies: generators whose graph changes from round to
/// round, and the graph of one round (over 0..n-1 or over survivors).
#pragma once

#include <dml/error.hpp>
#include <dml/fwd.hpp>
#include <dml/topology/concepts.hpp>
#include <dml/topology/detail/common.hpp>
#include <dml/topology/graph.hpp>
#include <dml/version.hpp>

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

DML_BEGIN_NAMESPACE
namespace topology {

/// A generator whose graph depends on the round: round t (t = 0, 1, ...;
/// a vector's round is its clock - 1) has its own out-lists and mixing
/// rows, and the schedule repeats every `period(n)` rounds. Its plain
/// `out_lists(n)` is the union over one period: the members a member ever
/// sends to, hence the receive slots a vector needs.
template <class G>
concept time_varying_generator = topology_generator<G> &&
    requires(const std::remove_cvref_t<G>& g, std::size_t n, std::uint64_t t) {
  { g.period(n) } -> std::same_as<std::size_t>;
  { g.round_out_lists(n, t) } -> std::same_as<std::vector<std::vector<member_id>>>;
  { g.round_mixing(n, t) } -> std::same_as<std::vector<mixing_row>>;
};

/// The graph, with its mixing weights, of round t of a time-varying
/// generator over members 0..n-1.
/// @throws dml::config_error as the generator does.
template <time_varying_generator G>
[[nodiscard]] graph build_round(const G& gen, std::size_t n, std::uint64_t t) {
  ::dml::detail::check_member_count(gen.name(), n);
  return graph(gen.round_out_lists(n, t)).with_weights(gen.round_mixing(n, t));
}

/// The graph of round t over the survivors of a group: the generator's
/// round over m = survivors.size() members, relabelled to the survivors'
/// ids (ascending), as `build(gen, survivors)` relabels the union.
/// @throws dml::config_error when `survivors` is empty or names a member
///         twice, or as the generator does.
template <time_varying_generator G>
[[nodiscard]] graph build_round(const G& gen, std::span<const member_id> survivors, std::uint64_t t) {
  std::vector<member_id> ids(survivors.begin(), survivors.end());
  std::sort(ids.begin(), ids.end());
  if (ids.empty() || std::adjacent_find(ids.begin(), ids.end()) != ids.end())
    throw config_error("topology '" + std::string(gen.name()) +
                       "': the survivor list must be non-empty and name each member once");
  const std::size_t m = ids.size();
  auto lists = gen.round_out_lists(m, t);
  auto rows = gen.round_mixing(m, t);
  for (auto& list : lists)
    for (auto& j : list)
      if (j < m) j = ids[j];
  for (auto& row : rows)
    for (auto& [from, w] : row.in)
      if (from < m) from = ids[from];
  return graph(ids, std::move(lists)).with_weights(std::move(rows));
}

}  // namespace topology
DML_END_NAMESPACE

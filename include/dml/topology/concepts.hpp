// SPDX-License-Identifier: BSL-1.0
/// @file
/// The topology policy slot: what a type needs to be a topology generator.
#pragma once

#include <dml/fwd.hpp>
#include <dml/version.hpp>

#include <concepts>
#include <cstddef>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

DML_BEGIN_NAMESPACE
namespace topology {

/// One member's row of a mixing matrix: the weight it gives its own value
/// and the weight it gives each in-neighbour's (sender, weight), as BlueFog
/// gives a self weight and per-source weights. A gather that averages
/// (gather::average) combines own * self + sum of value * weight and divides
/// by the sum of the weights it applied, so rows need not sum to 1; a row
/// that does is used as given.
struct mixing_row {
  double self = 1;                                 ///< finite, >= 0
  std::vector<std::pair<member_id, double>> in{};  ///< one (sender, weight > 0) per in-neighbour
};

/// A topology generator maps a member count n to a directed graph: who sends
/// to whom. A type opts in explicitly with `using policy_slot =
/// dml::slot::topology;` (a type that merely happens to have the right member
/// functions is not taken for a topology) and provides
///
/// - `out_lists(std::size_t n) const` returning
///   `std::vector<std::vector<dml::member_id>>`: for each member 0..n-1 its
///   out-neighbours, ids in 0..n-1, without self-edges or duplicates. It throws
///   `dml::config_error` when it cannot build a graph over n members.
/// - `name() const` returning `std::string_view`, used in messages ("halton").
///
/// Optionally it provides `out_lists_over(std::span<const dml::member_id>
/// survivors) const` (see `has_survivor_lists`) when its graph over survivors
/// is not simply its graph over survivors.size() members relabelled; `edges`
/// does this to return the induced subgraph of the user's graph.
///
/// cv and reference qualifiers are ignored, so `topology_generator<const
/// halton&>` holds.
template <class G>
concept topology_generator = requires {
  typename std::remove_cvref_t<G>::policy_slot;
}
&&std::same_as<typename std::remove_cvref_t<G>::policy_slot, slot::topology>&& requires(
    const std::remove_cvref_t<G>& g, std::size_t n) {
  { g.out_lists(n) } -> std::same_as<std::vector<std::vector<member_id>>>;
  { g.name() } -> std::same_as<std::string_view>;
};

/// True when G models `topology_generator`; for `static_assert`s and
/// `if constexpr`.
template <class G>
inline constexpr bool is_topology_generator_v = topology_generator<G>;

/// Type-trait form of `topology_generator`, for code written against traits.
template <class G>
struct is_topology_generator : std::bool_constant<topology_generator<G>> {};

/// True when a generator builds survivor graphs itself (see
/// `topology_generator`); `build(gen, survivors)` then calls
/// `gen.out_lists_over(survivors)`, which returns one out-list per survivor
/// (in ascending id order) naming original ids.
template <class G>
concept has_survivor_lists = topology_generator<G> &&
    requires(const std::remove_cvref_t<G>& g, std::span<const member_id> survivors) {
  { g.out_lists_over(survivors) } -> std::same_as<std::vector<std::vector<member_id>>>;
};

/// True when a generator gives its graphs mixing weights:
/// `mixing(std::size_t n) const` returns one `mixing_row` per member
/// 0..n-1 (naming senders by their ids 0..n-1), or an empty vector for a
/// graph without weights. `build` attaches them with `graph::with_weights`.
/// Over survivors they are relabelled like the out-lists, unless the
/// generator also provides `mixing_over(survivors)` (rows naming original
/// ids), as it provides `out_lists_over`.
template <class G>
concept has_mixing = topology_generator<G> && requires(const std::remove_cvref_t<G>& g, std::size_t n) {
  { g.mixing(n) } -> std::same_as<std::vector<mixing_row>>;
};

/// True when a generator builds the mixing rows of survivor graphs itself.
template <class G>
concept has_survivor_mixing = has_mixing<G> &&
    requires(const std::remove_cvref_t<G>& g, std::span<const member_id> survivors) {
  { g.mixing_over(survivors) } -> std::same_as<std::vector<mixing_row>>;
};

}  // namespace topology
DML_END_NAMESPACE

// SPDX-License-Identifier: BSL-1.0
/// @file
/// `dml::make_vector<T>(comm, n, policies...)`: policies in any order, the
/// missing ones filled with the defaults of dml/fwd.hpp.
#pragma once

#include <dml/comm/concepts.hpp>
#include <dml/detail/policy.hpp>
#include <dml/fwd.hpp>
#include <dml/vector/dist_vector.hpp>
#include <dml/vector/gather.hpp>

#include <cstddef>
#include <span>
#include <type_traits>
#include <utility>

DML_BEGIN_NAMESPACE
namespace detail {

// The slot a make_vector argument fills: its declared policy_slot, or the
// gather slot for an untagged callable with the gather signature.
template <class P, class T>
using argument_slot_t = std::conditional_t<
    !std::is_void_v<slot_of_t<P>>, slot_of_t<P>,
    std::conditional_t<gather::gather_functor<std::remove_cvref_t<P>, T>, slot::gather, void>>;

template <class P, class T>
constexpr bool check_argument() {
  using S = argument_slot_t<P, T>;
  static_assert(!std::is_same_v<S, slot::transport>,
                "dml::make_vector: a transport was given as a policy; the transport is the first argument "
                "(the comm context), not one of the policies");
  static_assert(
      std::is_same_v<S, slot::representation> || std::is_same_v<S, slot::topology> ||
          std::is_same_v<S, slot::consistency> || std::is_same_v<S, slot::gather> ||
          std::is_same_v<S, slot::transport>,
      "dml::make_vector: an argument is not a dml policy: it declares no policy_slot (representation, "
      "topology, consistency or gather) and is not callable as a gather functor "
      "f(std::span<T>, std::span<const dml::gather::input<T>>)");
  return true;
}

// The one argument filling Slot, moved when it was passed as an rvalue, or
// Default{} when none does (at most one does: check_policies).
template <class Slot, class Default, class T>
Default pick() {
  return Default{};
}
template <class Slot, class Default, class T, class P, class... Rest>
auto pick(P&& p, Rest&&... rest) {
  if constexpr (std::is_same_v<argument_slot_t<P, T>, Slot>) {
    return std::remove_cvref_t<P>(std::forward<P>(p));
  } else {
    return pick<Slot, Default, T>(std::forward<Rest>(rest)...);
  }
}

template <class Slot, class T, class... P>
constexpr std::size_t count_slot() {
  return (std::size_t{0} + ... + (std::is_same_v<argument_slot_t<P, T>, Slot> ? 1 : 0));
}

template <class T, class Transport, class... Policies>
constexpr bool check_policies() {
  static_assert(comm::transport<Transport>,
                "dml::make_vector: the first argument must be a transport context modelling "
                "dml::comm::transport (e.g. the dml::comm::inproc::context that inproc::run passes)");
  static_assert((check_argument<Policies, T>() && ...));
  static_assert(count_slot<slot::representation, T, Policies...>() <= 1,
                "dml::make_vector: more than one representation policy given (dml::dense / dml::sparse)");
  static_assert(count_slot<slot::topology, T, Policies...>() <= 1,
                "dml::make_vector: more than one topology policy given (dml::topology::...)");
  static_assert(count_slot<slot::consistency, T, Policies...>() <= 1,
                "dml::make_vector: more than one consistency policy given (dml::consistency::...)");
  static_assert(count_slot<slot::gather, T, Policies...>() <= 1,
                "dml::make_vector: more than one gather functor given (dml::gather::... or a callable)");
  return true;
}

// The vector with the given gather functor and the other slots taken from
// `policies` (whose own gather functor, if any, is ignored).
template <class T, class Transport, class Gather, class... Policies>
auto assemble_vector(Transport& comm, std::size_t n, Gather&& gath, Policies&&... policies) {
  auto repr = pick<slot::representation, dense, T>(std::forward<Policies>(policies)...);
  auto topo = pick<slot::topology, topology::all, T>(std::forward<Policies>(policies)...);
  auto cons = pick<slot::consistency, consistency::bsp, T>(std::forward<Policies>(policies)...);
  using vector_type =
      dist_vector<T, Transport, decltype(repr), decltype(topo), decltype(cons), std::remove_cvref_t<Gather>>;
  return vector_type(comm, n, std::move(repr), std::move(topo), std::move(cons), std::forward<Gather>(gath));
}

}  // namespace detail

/// Builds a distributed vector of n elements of T over the transport context
/// `comm`. Policies come in any order; missing slots get the defaults
/// (dml::dense, dml::topology::all, dml::consistency::bsp,
/// dml::gather::average). An untagged callable with the gather signature
/// fills the gather slot. Collective: see dist_vector's constructor.
template <class T, class Transport, class... Policies>
auto make_vector(Transport& comm, std::size_t n, Policies&&... policies) {
  static_assert(detail::check_policies<T, Transport, Policies...>());
  // Each argument fills one slot, so each is moved from at most once.
  auto gath = detail::pick<slot::gather, gather::average, T>(std::forward<Policies>(policies)...);
  return detail::assemble_vector<T>(comm, n, std::move(gath), std::forward<Policies>(policies)...);
}

DML_END_NAMESPACE

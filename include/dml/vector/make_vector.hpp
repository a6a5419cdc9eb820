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

#include <boost/hana/bool.hpp>
#include <boost/hana/filter.hpp>
#include <boost/hana/front.hpp>
#include <boost/hana/length.hpp>
#include <boost/hana/tuple.hpp>

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

// Picks the one argument filling Slot, or Default{} when none does.
template <class Slot, class Default, class T, class Tuple>
auto pick(Tuple& args) {
  auto matching = boost::hana::filter(args, [](const auto& p) {
    return boost::hana::bool_c<std::is_same_v<argument_slot_t<decltype(p), T>, Slot>>;
  });
  constexpr std::size_t count = decltype(boost::hana::length(matching))::value;
  if constexpr (count == 0) {
    return Default{};
  } else {
    return boost::hana::front(matching);
  }
}

template <class Slot, class T, class... P>
constexpr std::size_t count_slot() {
  return (std::size_t{0} + ... + (std::is_same_v<argument_slot_t<P, T>, Slot> ? 1 : 0));
}

}  // namespace detail

/// Builds a distributed vector of n elements of T over the transport context
/// `comm`. Policies come in any order; missing slots get the defaults
/// (dml::dense, dml::topology::all, dml::consistency::bsp,
/// dml::gather::average). An untagged callable with the gather signature
/// fills the gather slot. Collective: see dist_vector's constructor.
template <class T, class Transport, class... Policies>
auto make_vector(Transport& comm, std::size_t n, Policies&&... policies) {
  static_assert(comm::transport<Transport>,
                "dml::make_vector: the first argument must be a transport context modelling "
                "dml::comm::transport (e.g. the dml::comm::inproc::context that inproc::run passes)");
  static_assert((detail::check_argument<Policies, T>() && ...));
  static_assert(detail::count_slot<slot::representation, T, Policies...>() <= 1,
                "dml::make_vector: more than one representation policy given (dml::dense / dml::sparse)");
  static_assert(detail::count_slot<slot::topology, T, Policies...>() <= 1,
                "dml::make_vector: more than one topology policy given (dml::topology::...)");
  static_assert(detail::count_slot<slot::consistency, T, Policies...>() <= 1,
                "dml::make_vector: more than one consistency policy given (dml::consistency::...)");
  static_assert(detail::count_slot<slot::gather, T, Policies...>() <= 1,
                "dml::make_vector: more than one gather functor given (dml::gather::... or a callable)");

  auto args = boost::hana::make_tuple(std::forward<Policies>(policies)...);
  auto repr = detail::pick<slot::representation, dense, T>(args);
  auto topo = detail::pick<slot::topology, topology::all, T>(args);
  auto cons = detail::pick<slot::consistency, consistency::bsp, T>(args);
  auto gath = detail::pick<slot::gather, gather::average, T>(args);
  using vector_type =
      dist_vector<T, Transport, std::remove_cvref_t<decltype(repr)>, std::remove_cvref_t<decltype(topo)>,
                  std::remove_cvref_t<decltype(cons)>, std::remove_cvref_t<decltype(gath)>>;
  return vector_type(comm, n, std::move(repr), std::move(topo), std::move(cons), std::move(gath));
}

DML_END_NAMESPACE

// SPDX-License-Identifier: BSL-1.0
/// @file
/// `dml::make_table<T>(comm, rows, row_length, args...)`: a consistency
/// policy (bsp, ssp<S> or asp; default bsp) and `dml::table_options`, in
/// any order, each at most once.
#pragma once

#include <dml/comm/concepts.hpp>
#include <dml/detail/policy.hpp>
#include <dml/fwd.hpp>
#include <dml/table/concepts.hpp>
#include <dml/table/options.hpp>
#include <dml/table/table.hpp>

#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

DML_BEGIN_NAMESPACE
namespace detail {

template <class A>
inline constexpr bool is_table_options_v = std::is_same_v<std::remove_cvref_t<A>, table_options>;

template <class A>
constexpr bool check_table_argument() {
  using P = std::remove_cvref_t<A>;
  static_assert(!fills_slot_v<P, slot::transport>,
                "dml::make_table: a transport was given as an argument; the transport is the first argument "
                "(the comm context)");
  static_assert(!fills_slot_v<P, slot::consistency> || consistency::table_consistency<P>,
                "dml::make_table: the consistency policy of a table must be dml::consistency::bsp, ssp<S> or "
                "asp (notify_ack has no meaning for tables)");
  static_assert(fills_slot_v<P, slot::consistency> || is_table_options_v<P>,
                "dml::make_table: an argument is neither a consistency policy (bsp, ssp<S>, asp) nor "
                "dml::table_options");
  return true;
}

template <class... A>
constexpr std::size_t count_consistency() {
  return (std::size_t{0} + ... + (fills_slot_v<std::remove_cvref_t<A>, slot::consistency> ? 1 : 0));
}
template <class... A>
constexpr std::size_t count_options() {
  return (std::size_t{0} + ... + (is_table_options_v<A> ? 1 : 0));
}

template <class... A>
struct table_consistency_of {
  using type = consistency::bsp;
};
template <class First, class... Rest>
struct table_consistency_of<First, Rest...> {
  using type = std::conditional_t<fills_slot_v<std::remove_cvref_t<First>, slot::consistency>,
                                  std::remove_cvref_t<First>, typename table_consistency_of<Rest...>::type>;
};

template <class C, class A>
void take_table_argument(C& cons, table_options& opts, A&& a) {
  if constexpr (is_table_options_v<A>)
    opts = std::forward<A>(a);
  else
    cons = std::forward<A>(a);
}

}  // namespace detail

/// Builds a parameter table of `rows` rows of `row_length` elements of T
/// over the transport context `comm`. Collective: see dml::table's
/// constructor.
template <class T, class Transport, class... Args>
auto make_table(Transport& comm, std::size_t rows, std::size_t row_length, Args&&... args) {
  static_assert(comm::transport<Transport>,
                "dml::make_table: the first argument must be a transport context modelling "
                "dml::comm::transport (e.g. the dml::comm::inproc::context that inproc::run passes)");
  static_assert((detail::check_table_argument<Args>() && ...));
  static_assert(detail::count_consistency<Args...>() <= 1,
                "dml::make_table: more than one consistency policy given");
  static_assert(detail::count_options<Args...>() <= 1,
                "dml::make_table: more than one dml::table_options given");
  using consistency_type = typename detail::table_consistency_of<Args...>::type;
  consistency_type cons{};
  table_options opts{};
  (detail::take_table_argument(cons, opts, std::forward<Args>(args)), ...);
  return table<T, Transport, consistency_type>(comm, rows, row_length, std::move(cons), opts);
}

DML_END_NAMESPACE

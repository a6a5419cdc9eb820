// SPDX-License-Identifier: BSL-1.0
// Internal: which policy slot a type opts into.
#pragma once

#include <dml/fwd.hpp>

#include <type_traits>

DML_BEGIN_NAMESPACE
namespace detail {

template <class P>
struct slot_of {
  using type = void;
};
template <class P>
requires requires { typename P::policy_slot; }
struct slot_of<P> {
  using type = typename P::policy_slot;
};

/// The slot tag P declares, or void.
template <class P>
using slot_of_t = typename slot_of<std::remove_cvref_t<P>>::type;

template <class P, class Slot>
inline constexpr bool fills_slot_v = std::is_same_v<slot_of_t<P>, Slot>;

template <class...>
inline constexpr bool dependent_false_v = false;

}  // namespace detail
DML_END_NAMESPACE

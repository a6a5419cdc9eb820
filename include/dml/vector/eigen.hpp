// SPDX-License-Identifier: BSL-1.0
/// @file
/// Eigen views of a distributed vector's local buffer. Including this header
/// enables `v.eigen()`; the core headers do not include Eigen, so a program
/// that does not use it does not pay for it (nor need its include path).
#pragma once

#include <dml/fwd.hpp>
#include <dml/vector/detail/names.hpp>

#include <Eigen/Core>

#include <type_traits>

DML_BEGIN_NAMESPACE

/// An Eigen column vector mapping v's local buffer (no copy, no ownership):
/// writes through it change the vector.
template <class V>
auto eigen_view(V& v, detail::priority<1> = {}) {
  using T = typename std::remove_const_t<V>::value_type;
  using column = Eigen::Matrix<T, Eigen::Dynamic, 1>;
  if constexpr (std::is_const_v<V>)
    return Eigen::Map<const column>(v.data(), static_cast<Eigen::Index>(v.size()));
  else
    return Eigen::Map<column>(v.data(), static_cast<Eigen::Index>(v.size()));
}

DML_END_NAMESPACE

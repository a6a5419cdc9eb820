// SPDX-License-Identifier: BSL-1.0
/// @file
/// xtensor views of a distributed vector's local buffer (component
/// dml::xtensor). Including this header enables `v.xtensor()`.
#pragma once

#include <dml/fwd.hpp>
#include <dml/vector/dist_vector.hpp>

#include <xtensor/xadapt.hpp>

#include <array>
#include <cstddef>

DML_BEGIN_NAMESPACE

/// A one-dimensional xtensor adaptor over v's local buffer (no copy, no
/// ownership): writes through it change the vector.
template <class V>
auto xtensor_view(V& v, detail::priority<1> = {}) {
  return xt::adapt(v.data(), v.size(), xt::no_ownership(), std::array<std::size_t, 1>{v.size()});
}

DML_END_NAMESPACE

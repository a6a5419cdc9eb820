// SPDX-License-Identifier: BSL-1.0
// Internal: how a vector names its element type and policies in the
// description members compare, and the overload priorities of the
// optional views (eigen(), xtensor()).
#pragma once

#include <dml/fwd.hpp>
#include <dml/topology/graph.hpp>

#include <cstdint>
#include <string>
#include <type_traits>
#include <typeinfo>

DML_BEGIN_NAMESPACE
namespace detail {

template <int N>
struct priority : priority<N - 1> {};
template <>
struct priority<0> {};

template <class T>
std::string element_name() {
  if constexpr (std::is_same_v<T, float>)
    return "float";
  else if constexpr (std::is_same_v<T, double>)
    return "double";
  else if constexpr (std::is_same_v<T, std::int32_t>)
    return "int32";
  else if constexpr (std::is_same_v<T, std::int64_t>)
    return "int64";
  else if constexpr (std::is_same_v<T, std::uint32_t>)
    return "uint32";
  else if constexpr (std::is_same_v<T, std::uint64_t>)
    return "uint64";
  else
    return std::string(typeid(T).name()) + "/" + std::to_string(sizeof(T));
}

template <class P>
std::string policy_name(const P& p) {
  if constexpr (requires { p.describe(); })
    return std::string(p.describe());
  else if constexpr (requires { p.name(); })
    return std::string(p.name());
  else
    return std::string("user type ") + typeid(P).name();
}

DML_DECL std::uint64_t fnv1a(std::uint64_t h, std::uint64_t v);

/// The description members compare when they build a vector: its length,
/// element type and policies, and the graph's edges and weights (as a hash).
struct vector_names {
  std::size_t length;
  std::string element, representation, topology, consistency, gather;
  bool weighted;  // slots carry the sender's weight
};
DML_DECL std::string describe_vector(const vector_names& names, const topology::graph& graph);

}  // namespace detail
DML_END_NAMESPACE

#if !defined(DML_SEPARATE_COMPILATION)
#include <dml/vector/detail/impl/names.ipp>
#endif

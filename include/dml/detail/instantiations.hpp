// SPDX-License-Identifier: BSL-1.0
/// @file
/// Separate compilation: the instantiations dml compiles once instead of in
/// every translation unit (see docs/getting-started.md#separate-compilation).
///
/// With `DML_SEPARATE_COMPILATION` defined in every translation unit, the
/// umbrella header declares the templates below `extern`: a translation unit
/// that makes, say, a `float` vector over the in-process transport (or over
/// `comm::any`, which the reference trainers use) no longer
/// generates the vector's core, its protocol steps or the recovery code; one
/// translation unit of the program that includes <dml/src.hpp> does, once.
/// Without the macro nothing here is declared and dml is header-only as
/// before. Instantiations not listed here (other element types, other
/// transports, the front end's policy-dependent members) are still
/// generated where they are used.
#pragma once

#include <dml/comm/any.hpp>
#include <dml/comm/inproc.hpp>
#include <dml/fault/membership.hpp>
#include <dml/fault/timeout.hpp>
#include <dml/topology.hpp>
#include <dml/vector/detail/background.hpp>
#include <dml/vector/detail/core.hpp>
#include <dml/vector/detail/protocol.hpp>
#include <dml/vector/representation.hpp>
#include <dml/version.hpp>

/// The list, as a macro so that <dml/src.hpp> defines exactly what this
/// header declares. `DML_DETAIL_KEYWORD` is `extern` for the declarations
/// and empty for the definitions.
#define DML_DETAIL_INSTANTIATE_CORE(T, Comm, Repr)                      \
  DML_DETAIL_KEYWORD template class detail::vector_core<T, Comm, Repr>; \
  DML_DETAIL_KEYWORD template class detail::vector_protocol<detail::vector_core<T, Comm, Repr>>;

#define DML_DETAIL_INSTANTIATE_TRANSPORT(Comm)                                                      \
  DML_DETAIL_KEYWORD template void fault::recover(Comm&);                                           \
  DML_DETAIL_KEYWORD template void fault::observe_round(Comm&, double);                             \
  DML_DETAIL_KEYWORD template std::shared_ptr<fault::detail::state> fault::detail::state_of(Comm&); \
  DML_DETAIL_KEYWORD template void detail::settle_background(Comm&);                                \
  DML_DETAIL_INSTANTIATE_CORE(float, Comm, dense)                                                   \
  DML_DETAIL_INSTANTIATE_CORE(double, Comm, dense)                                                  \
  DML_DETAIL_INSTANTIATE_CORE(float, Comm, sparse)                                                  \
  DML_DETAIL_INSTANTIATE_CORE(double, Comm, sparse)

/// The graph over a group's survivors, for the built-in static topologies.
#define DML_DETAIL_INSTANTIATE_TOPOLOGY(G) \
  DML_DETAIL_KEYWORD template topology::graph topology::build(const G&, std::span<const member_id>);

#define DML_DETAIL_INSTANTIATE_ALL()                       \
  DML_DETAIL_INSTANTIATE_TRANSPORT(comm::inproc::context)  \
  DML_DETAIL_INSTANTIATE_TRANSPORT(comm::any)              \
  DML_DETAIL_INSTANTIATE_TOPOLOGY(topology::all)           \
  DML_DETAIL_INSTANTIATE_TOPOLOGY(topology::any)           \
  DML_DETAIL_INSTANTIATE_TOPOLOGY(topology::chain)         \
  DML_DETAIL_INSTANTIATE_TOPOLOGY(topology::exponential)   \
  DML_DETAIL_INSTANTIATE_TOPOLOGY(topology::halton)        \
  DML_DETAIL_INSTANTIATE_TOPOLOGY(topology::ring)          \
  DML_DETAIL_INSTANTIATE_TOPOLOGY(topology::root_expander) \
  DML_DETAIL_INSTANTIATE_TOPOLOGY(topology::star)

#if defined(DML_SEPARATE_COMPILATION) && !defined(DML_DETAIL_KEYWORD)
#define DML_DETAIL_KEYWORD extern
DML_BEGIN_NAMESPACE
DML_DETAIL_INSTANTIATE_ALL()
DML_END_NAMESPACE
#undef DML_DETAIL_KEYWORD
#endif

// SPDX-License-Identifier: BSL-1.0
/// @file
/// `dml::comm::node_groups(ctx)`: which node each member runs on, for
/// grouping members by node (`dml::topology::hierarchical` over labels):
///
///     dml::comm::mpi_rma comm(argc, argv);
///     dml::topology::hierarchical by_node{dml::comm::node_groups(comm)};
///     auto w = dml::make_vector<float>(comm, n, by_node);
///
/// The transports learn it at start-up: the MPI transports from
/// MPI_Comm_split_type with MPI_COMM_TYPE_SHARED (the ranks that share
/// memory), naming a node by its lowest rank; the in-process transport from
/// `inproc::options::nodes` (one node unless given). The topology layer
/// never sees a transport: it takes the labels as plain numbers.
#pragma once

#include <dml/fwd.hpp>

#include <cstddef>
#include <vector>

DML_BEGIN_NAMESPACE
namespace comm {

/// The node label of every original member 0..size()-1 of `ctx`: members
/// with equal labels run on one node. The same on every member. Labels
/// name nodes, nothing more: they need not be dense or ordered.
/// @tparam Context a transport context with `node_labels()` (inproc's
///         context, mpi_rma, mpi, or comm::any wrapping one of them).
/// @throws dml::config_error from comm::any when the wrapped context does
///         not say.
template <class Context>
[[nodiscard]] std::vector<std::size_t> node_groups(const Context& ctx) {
  static_assert(
      requires { ctx.node_labels(); },
      "dml::comm::node_groups(ctx) requires a transport context that knows the node of every member "
      "(node_labels(): dml::comm::inproc, mpi_rma, mpi or comm::any)");
  const auto& labels = ctx.node_labels();
  return {labels.begin(), labels.end()};
}

}  // namespace comm
DML_END_NAMESPACE

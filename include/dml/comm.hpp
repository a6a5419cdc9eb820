// SPDX-License-Identifier: BSL-1.0
/// @file
/// The transport concept, the in-process transport and the collectives
/// built on the concept alone (broadcast), and the node of every member
/// (node_groups). MPI and rdma-core
/// transports have their own headers (dml/comm/mpi_rma.hpp, dml/comm/mpi.hpp,
/// dml/comm/verbs.hpp) because they need their libraries.
#pragma once

#include <dml/comm/any.hpp>
#include <dml/comm/broadcast.hpp>
#include <dml/comm/concepts.hpp>
#include <dml/comm/inproc.hpp>
#include <dml/comm/nodes.hpp>

// SPDX-License-Identifier: BSL-1.0
/// @file
/// The transport concept and the in-process transport. MPI and rdma-core
/// transports have their own headers (dml/comm/mpi_rma.hpp, dml/comm/mpi.hpp,
/// dml/comm/verbs.hpp) because they need their libraries.
#pragma once

#include <dml/comm/concepts.hpp>
#include <dml/comm/inproc.hpp>

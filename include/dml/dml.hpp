// SPDX-License-Identifier: BSL-1.0
/// @file
/// Convenience umbrella: everything in dml that needs no optional backend.
/// Transports over MPI or rdma-core have their own headers
/// (dml/comm/mpi_rma.hpp, dml/comm/mpi.hpp, dml/comm/verbs.hpp), and so do
/// xtensor views (dml/vector/xtensor.hpp). Under DML_SEPARATE_COMPILATION
/// it also declares `extern` what <dml/src.hpp> compiles once
/// (dml/detail/instantiations.hpp).
#pragma once

#include <dml/comm.hpp>
#include <dml/consistency.hpp>
#include <dml/detail/instantiations.hpp>
#include <dml/error.hpp>
#include <dml/fwd.hpp>
#include <dml/io.hpp>
#include <dml/random.hpp>
#include <dml/topology.hpp>
#include <dml/vector.hpp>
#include <dml/version.hpp>

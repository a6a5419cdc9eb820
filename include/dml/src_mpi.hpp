// SPDX-License-Identifier: BSL-1.0
/// @file
/// Separate compilation with the one-sided MPI transport: include this, in
/// addition to <dml/src.hpp>, in exactly one translation unit of a program
/// that makes vectors over `dml::comm::mpi_rma` and whose translation units
/// are all compiled with `DML_SEPARATE_COMPILATION` defined (see
/// docs/getting-started.md#separate-compilation). It compiles, once, the
/// vector's core and protocol steps and the recovery code over mpi_rma for
/// `float` and `double`, dense and sparse, which <dml/comm/mpi_rma.hpp>
/// declares extern in that mode. The transport's own code stays inline.
#pragma once

#if !defined(DML_SEPARATE_COMPILATION)
#error "<dml/src_mpi.hpp> is for separate compilation: define DML_SEPARATE_COMPILATION everywhere"
#endif

#include <dml/comm/mpi_rma.hpp>
#include <dml/detail/instantiations.hpp>

#define DML_DETAIL_KEYWORD
DML_BEGIN_NAMESPACE
DML_DETAIL_INSTANTIATE_TRANSPORT(comm::mpi_rma)
DML_END_NAMESPACE
#undef DML_DETAIL_KEYWORD

// SPDX-License-Identifier: BSL-1.0
/// @file
/// Separate compilation with the MPI transports: include this, in addition
/// to <dml/src.hpp>, in exactly one translation unit of a program that uses
/// `dml::comm::mpi_rma`, `dml::comm::mpi` or `dml::comm::verbs` (which
/// starts through MPI) and whose translation units are all compiled with
/// `DML_SEPARATE_COMPILATION` defined (see
/// docs/getting-started.md#separate-compilation). It compiles, once, the
/// non-template code of mpi_rma and of what the three share (MPI start-up
/// and shut-down, the fault monitor, the watchdog), which their headers only
/// declare in that mode, and the vector's core and protocol steps and the
/// recovery code over mpi_rma for `float` and `double`, dense and sparse,
/// which <dml/comm/mpi_rma.hpp> declares extern in that mode. It needs MPI,
/// not Boost.MPI.
#pragma once

#if !defined(DML_SEPARATE_COMPILATION)
#error "<dml/src_mpi.hpp> is for separate compilation: define DML_SEPARATE_COMPILATION everywhere"
#endif

#include <dml/comm/mpi_rma.hpp>
#include <dml/detail/instantiations.hpp>
// The non-template functions the MPI headers only declare in this mode (the
// beacon's, which need no MPI, are in <dml/src.hpp>).
#include <dml/comm/impl/mpi_rma.ipp>
#include <dml/comm/mpi/impl/common.ipp>
#include <dml/comm/mpi/impl/group.ipp>
#include <dml/comm/mpi/impl/monitor.ipp>
#include <dml/comm/mpi/impl/watchdog.ipp>

#define DML_DETAIL_KEYWORD
DML_BEGIN_NAMESPACE
DML_DETAIL_INSTANTIATE_TRANSPORT(comm::mpi_rma)
DML_END_NAMESPACE
#undef DML_DETAIL_KEYWORD

// SPDX-License-Identifier: BSL-1.0
/// @file
/// Separate compilation: include this in exactly one translation unit of a
/// program whose translation units are all compiled with
/// `DML_SEPARATE_COMPILATION` defined (see docs/getting-started.md#separate-compilation).
/// It compiles, once, what the others then only declare.
#pragma once

#if !defined(DML_SEPARATE_COMPILATION)
#error "<dml/src.hpp> is for separate compilation: define DML_SEPARATE_COMPILATION in every translation unit"
#endif

#include <dml/dml.hpp>
// The non-template functions the headers only declare in this mode.
#include <dml/comm/impl/inproc.ipp>
// The MPI transports' start-up beacon needs no MPI (POSIX shared memory):
// compiled here, so that a program without MPI that includes
// <dml/comm/mpi/beacon.hpp> links too; the rest is in <dml/src_mpi.hpp>.
#include <dml/comm/mpi/impl/beacon.ipp>
#include <dml/consistency/impl/adaptive.ipp>
#include <dml/consistency/impl/any.ipp>
#include <dml/consistency/impl/controller.ipp>
#include <dml/detail/impl/env.ipp>
#include <dml/detail/impl/members.ipp>
#include <dml/fault/impl/membership.ipp>
#include <dml/fault/impl/timeout.ipp>
#include <dml/impl/error.ipp>
#include <dml/topology/detail/impl/common.ipp>
#include <dml/topology/impl/any.ipp>
#include <dml/topology/impl/best_circulant.ipp>
#include <dml/topology/impl/edges.ipp>
#include <dml/topology/impl/graph.ipp>
#include <dml/topology/impl/halton.ipp>
#include <dml/topology/impl/one_peer_exponential.ipp>
#include <dml/vector/detail/impl/background.ipp>
#include <dml/vector/detail/impl/names.ipp>
#include <dml/vector/impl/advice.ipp>

#define DML_DETAIL_KEYWORD
DML_BEGIN_NAMESPACE
DML_DETAIL_INSTANTIATE_ALL()
DML_END_NAMESPACE
#undef DML_DETAIL_KEYWORD

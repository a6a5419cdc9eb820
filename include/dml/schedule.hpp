// SPDX-License-Identifier: BSL-1.0
/// @file
/// Scheduled model parallelism (SMPFRAME): the user writes schedule, update
/// and aggregate; an engine runs them over any transport -- static rotation
/// of parameter blocks with macro synchronization, or dynamic, pipelined
/// sets such as dyn_regr's prioritized, dependency-checked ones. See
/// docs/model-parallel.md.
#pragma once

#include <dml/schedule/concepts.hpp>
#include <dml/schedule/context.hpp>
#include <dml/schedule/dyn_regr.hpp>
#include <dml/schedule/dynamic.hpp>
#include <dml/schedule/exact_sum.hpp>
#include <dml/schedule/run.hpp>
#include <dml/schedule/static_rotation.hpp>
#include <dml/schedule/stats.hpp>

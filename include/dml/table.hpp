// SPDX-License-Identifier: BSL-1.0
/// @file
/// Parameter tables: rows that every member reads and updates with
/// accumulated deltas under stale synchronous consistency (bsp, ssp<S>,
/// asp), with IterStore's access-pattern specializations. See docs/tables.md.
#pragma once

#include <dml/table/concepts.hpp>
#include <dml/table/make_table.hpp>
#include <dml/table/options.hpp>
#include <dml/table/stats.hpp>
#include <dml/table/table.hpp>

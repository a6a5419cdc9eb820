// SPDX-License-Identifier: BSL-1.0
/// @file
/// Fault tolerance: checkpoints of vectors and training state, in-memory
/// snapshots (dml/fault/snapshot.hpp), and the
/// local fail-stop trap for fatal signals (docs/fault-tolerance.md). Not
/// part of dml/dml.hpp.
#pragma once

#include <dml/fault/checkpoint.hpp>
#include <dml/fault/signals.hpp>
#include <dml/fault/snapshot.hpp>
#include <dml/fault/timeout.hpp>

// SPDX-License-Identifier: BSL-1.0
/// @file
/// Fault tolerance: checkpoints of vectors and training state
/// (docs/fault-tolerance.md). Not part of dml/dml.hpp.
#pragma once

#include <dml/fault/checkpoint.hpp>

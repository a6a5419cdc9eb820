// SPDX-License-Identifier: BSL-1.0
/// @file
/// Distributed vectors: the type, make_vector, representations, gather
/// functors, statistics, per-call destinations (dml::to), delta
/// tracking and the parameter server built from two vectors. (xtensor views: dml/vector/xtensor.hpp.)
#pragma once

#include <dml/vector/advice.hpp>
#include <dml/vector/delta.hpp>
#include <dml/vector/dist_vector.hpp>
#include <dml/vector/gather.hpp>
#include <dml/vector/make_vector.hpp>
#include <dml/vector/parameter_server.hpp>
#include <dml/vector/representation.hpp>
#include <dml/vector/stats.hpp>
#include <dml/vector/to.hpp>

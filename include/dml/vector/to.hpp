// SPDX-License-Identifier: BSL-1.0
/// @file
/// Per-call destinations: `v.scatter(dml::to{ids})` sends one update to a
/// subset of the vector's out-neighbours.
#pragma once

#include <dml/fwd.hpp>

#include <initializer_list>
#include <span>
#include <utility>
#include <vector>

DML_BEGIN_NAMESPACE

/// The out-neighbours one scatter sends its update to. Each id must be an
/// out-neighbour of the member in the round the scatter belongs to (under a
/// time-varying topology, one of that round's); duplicates are allowed, an
/// empty list sends the update to nobody. What the out-neighbours left out
/// see depends on the consistency policy (docs/vectors.md, "Per-call
/// destinations").
///
///     v.scatter(dml::to{1, 4});
///     v.scatter(dml::to{chosen});  // a std::vector<dml::member_id>
struct to {
  std::vector<member_id> ids;

  to() = default;
  to(std::initializer_list<member_id> list) : ids(list) {}
  explicit to(std::vector<member_id> list) : ids(std::move(list)) {}
  explicit to(std::span<const member_id> list) : ids(list.begin(), list.end()) {}
};

DML_END_NAMESPACE

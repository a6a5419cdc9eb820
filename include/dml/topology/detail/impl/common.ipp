// SPDX-License-Identifier: BSL-1.0
/// @file
/// Out-of-line definitions for <dml/topology/detail/common.hpp> (see <dml/version.hpp>, DML_DECL).
#pragma once

#include <dml/topology/detail/common.hpp>

#include <algorithm>

DML_BEGIN_NAMESPACE
namespace detail {

DML_DECL std::string members_phrase(std::size_t n) {
  return std::to_string(n) + (n == 1 ? " member" : " members");
}

DML_DECL void check_member_count(std::string_view topology_name, std::size_t n) {
  if (n == 0) {
    throw config_error("topology '" + std::string(topology_name) +
                       "' needs at least one member, but was asked for a graph over 0 members");
  }
}

DML_DECL void check_fan_out(std::string_view topology_name, std::size_t k, std::size_t n) {
  if (k >= n) {
    throw config_error("topology '" + std::string(topology_name) + "' with fan-out " + std::to_string(k) +
                       " needs more than " + members_phrase(k) + ", but was asked for a graph over " +
                       members_phrase(n) + " (each member has only " + std::to_string(n - 1) + " peers)");
  }
}

DML_DECL std::vector<std::vector<member_id>> circulant(std::size_t n,
                                                       const std::vector<std::size_t>& offsets) {
  std::vector<std::vector<member_id>> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    out[i].reserve(offsets.size());
    for (const std::size_t o : offsets) out[i].push_back((i + o) % n);
    std::sort(out[i].begin(), out[i].end());
  }
  return out;
}

}  // namespace detail
DML_END_NAMESPACE

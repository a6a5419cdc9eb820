// SPDX-License-Identifier: BSL-1.0
// Internal: small helpers on sorted lists of member ids, shared by the
// transports and the fault tolerance layer.
#pragma once

#include <dml/fwd.hpp>

#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

DML_BEGIN_NAMESPACE
namespace detail {

/// Members of `before` missing from `after` (both ascending).
[[nodiscard]] inline std::vector<member_id> removed_members(const std::vector<member_id>& before,
                                                            const std::vector<member_id>& after) {
  std::vector<member_id> out;
  std::set_difference(before.begin(), before.end(), after.begin(), after.end(), std::back_inserter(out));
  return out;
}

/// "3, 5": a list of members for messages.
[[nodiscard]] inline std::string member_list(const std::vector<member_id>& ms) {
  std::string s;
  for (std::size_t i = 0; i < ms.size(); ++i) {
    if (i != 0) s.append(", ");
    s.append(std::to_string(ms[i]));
  }
  return s;
}

}  // namespace detail
DML_END_NAMESPACE

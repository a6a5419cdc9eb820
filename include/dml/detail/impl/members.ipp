// SPDX-License-Identifier: BSL-1.0
/// @file
/// Out-of-line definitions for <dml/detail/members.hpp> (see <dml/version.hpp>, DML_DECL).
#pragma once

#include <dml/detail/members.hpp>

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <string>
#include <vector>

DML_BEGIN_NAMESPACE
namespace detail {

DML_DECL std::vector<member_id> removed_members(const std::vector<member_id>& before,
                                                const std::vector<member_id>& after) {
  std::vector<member_id> out;
  std::set_difference(before.begin(), before.end(), after.begin(), after.end(), std::back_inserter(out));
  return out;
}

DML_DECL std::string member_list(const std::vector<member_id>& ms) {
  std::string s;
  for (std::size_t i = 0; i < ms.size(); ++i) {
    if (i != 0) s.append(", ");
    s.append(std::to_string(ms[i]));
  }
  return s;
}

DML_DECL std::string members_named(const std::vector<member_id>& ms) {
  if (ms.empty()) return "no member";
  return (ms.size() == 1 ? "member " : "members ") + member_list(ms);
}

}  // namespace detail
DML_END_NAMESPACE

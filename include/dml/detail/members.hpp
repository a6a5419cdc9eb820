// SPDX-License-Identifier: BSL-1.0
// Internal: small helpers on sorted lists of member ids, shared by the
// transports and the fault tolerance layer.
#pragma once

#include <dml/fwd.hpp>

#include <string>
#include <vector>

DML_BEGIN_NAMESPACE
namespace detail {

/// Members of `before` missing from `after` (both ascending).
[[nodiscard]] DML_DECL std::vector<member_id> removed_members(const std::vector<member_id>& before,
                                                              const std::vector<member_id>& after);

/// "3, 5": a list of members for messages.
[[nodiscard]] DML_DECL std::string member_list(const std::vector<member_id>& ms);

/// "member 3", "members 3, 5" (or "no member"): members named in a message,
/// so that a reader (or a script looking for "member 3") finds each one.
[[nodiscard]] DML_DECL std::string members_named(const std::vector<member_id>& ms);

}  // namespace detail
DML_END_NAMESPACE

#if !defined(DML_SEPARATE_COMPILATION)
#include <dml/detail/impl/members.ipp>
#endif

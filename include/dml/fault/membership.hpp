// SPDX-License-Identifier: BSL-1.0
/// @file
/// What the transports that can shrink their group share: the failure policy
/// of a program, the record of each view change, and the registry through
/// which a context rebuilds every vector built on it after a view change.
#pragma once

#include <dml/error.hpp>
#include <dml/fwd.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

DML_BEGIN_NAMESPACE
namespace fault {

/// What vectors do when a member of their group fails.
enum class policy {
  /// The survivors agree on a new view without the dead, every vector
  /// rebuilds its graph and receive slots over them, and training goes on.
  tolerate,
  /// The survivors agree on who died, then every vector operation on every
  /// survivor throws `dml::peer_failure` naming the dead member.
  abort,
};

[[nodiscard]] inline const char* name(policy p) noexcept {
  return p == policy::tolerate ? "tolerate" : "abort";
}

/// One view change as a member saw it.
struct view_change {
  std::uint64_t epoch = 0;         ///< epoch of the new view
  std::vector<member_id> removed;  ///< members in the old view but not the new one
  std::vector<member_id> live;     ///< the new view's live set
  double detection_seconds = 0;    ///< from the first removed member's failure to the agreed view
  double recovery_seconds = 0;     ///< from that failure to this member's rebuilt vectors
};

/// Human-readable list "3, 5".
[[nodiscard]] inline std::string list(const std::vector<member_id>& ms) {
  std::string s;
  for (std::size_t i = 0; i < ms.size(); ++i) {
    if (i != 0) s.append(", ");
    s.append(std::to_string(ms[i]));
  }
  return s;
}

}  // namespace fault

namespace detail {

/// A vector's entry in its context's registry: how to rebuild it.
struct rebuild_entry {
  void* owner = nullptr;
  void (*rebuild)(void*) = nullptr;
};

/// The vectors built on one context, in construction order. Vectors are
/// built collectively in the same order on every member, so rebuilding them
/// in this order keeps the collective steps of a rebuild matched.
class vector_registry {
 public:
  void add(rebuild_entry* e) { entries_.push_back(e); }
  void remove(rebuild_entry* e) noexcept {
    const auto it = std::find(entries_.begin(), entries_.end(), e);
    if (it != entries_.end()) entries_.erase(it);
  }
  void rebuild_all() {
    // Copy: a rebuild never adds or removes vectors, but be safe anyway.
    const auto entries = entries_;
    for (auto* e : entries) e->rebuild(e->owner);
  }
  /// rebuild_all(), but false when another member failed meanwhile (the
  /// caller agrees again); past `deadline` that failure is rethrown.
  template <class TimePoint>
  bool try_rebuild_all(TimePoint deadline) {
    try {
      rebuild_all();
      return true;
    } catch (const peer_failure&) {
      if (TimePoint::clock::now() > deadline) throw;
      return false;
    }
  }
  [[nodiscard]] std::size_t size() const noexcept { return entries_.size(); }

 private:
  std::vector<rebuild_entry*> entries_;
};

/// What the abort policy throws on member `rank` once the survivors agreed.
[[nodiscard]] inline peer_failure abort_failure(const std::string& who, member_id rank,
                                                const std::vector<member_id>& removed, std::uint64_t epoch) {
  return peer_failure(removed.front(), who + ": member " + std::to_string(rank) + ": member(s) " +
                                           fault::list(removed) + " failed; the survivors agreed on view " +
                                           std::to_string(epoch) + " and the failure policy is abort");
}

/// What every survivor throws when a view change leaves fewer members than
/// the tolerate policy's minimum (a guard against going on as a small
/// partition of the group).
[[nodiscard]] inline peer_failure too_few_survivors(const std::string& who, member_id rank,
                                                    const std::vector<member_id>& removed,
                                                    std::uint64_t epoch, std::size_t survivors,
                                                    std::size_t minimum) {
  return peer_failure(removed.empty() ? rank : removed.front(),
                      who + ": member " + std::to_string(rank) + ": member(s) " + fault::list(removed) +
                          " failed; view " + std::to_string(epoch) + " has " + std::to_string(survivors) +
                          " members, fewer than the minimum of " + std::to_string(minimum) +
                          " survivors (min_survivors), so every survivor stops");
}

/// Members of `before` missing from `after` (both ascending).
[[nodiscard]] inline std::vector<member_id> removed_members(const std::vector<member_id>& before,
                                                            const std::vector<member_id>& after) {
  std::vector<member_id> out;
  std::set_difference(before.begin(), before.end(), after.begin(), after.end(), std::back_inserter(out));
  return out;
}

}  // namespace detail
DML_END_NAMESPACE

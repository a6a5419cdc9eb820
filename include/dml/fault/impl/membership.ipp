// SPDX-License-Identifier: BSL-1.0
/// @file
/// Out-of-line definitions for <dml/fault/membership.hpp> (see <dml/version.hpp>, DML_DECL).
#pragma once

#include <dml/fault/membership.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

DML_BEGIN_NAMESPACE
namespace fault {
namespace detail {

DML_DECL policy policy_from_env(const char* who) {
  const char* p = std::getenv("DML_FAILURE_POLICY");
  const std::string v = p ? p : "";
  if (v == "abort") return policy::abort;
  if (v == "tolerate" || v.empty()) return policy::tolerate;
  throw config_error(std::string(who) + ": DML_FAILURE_POLICY is '" + v + "'; use 'tolerate' or 'abort'");
}

DML_DECL std::shared_ptr<state> make_state(std::size_t group_size) {
  auto made = std::make_shared<state>();
  made->on_failure = policy_from_env("dml::fault");
  made->min_survivors = static_cast<std::size_t>(dml::detail::number_from_env(
      "DML_MIN_SURVIVORS", 0, 0, static_cast<long>(group_size), "dml::fault", "a number of members"));
  return made;
}

DML_DECL peer_failure abort_failure(member_id rank, const std::vector<member_id>& removed,
                                    std::uint64_t epoch) {
  return peer_failure(removed.empty() ? rank : removed.front(),
                      "dml::fault: member " + std::to_string(rank) + ": " +
                          dml::detail::members_named(removed) + " failed; the survivors agreed on view " +
                          std::to_string(epoch) + " and the failure policy is abort");
}

DML_DECL peer_failure too_few_survivors(member_id rank, const std::vector<member_id>& removed,
                                        std::uint64_t epoch, std::size_t survivors, std::size_t minimum) {
  return peer_failure(removed.empty() ? rank : removed.front(),
                      "dml::fault: member " + std::to_string(rank) + ": " +
                          dml::detail::members_named(removed) + " failed; view " + std::to_string(epoch) +
                          " has " + std::to_string(survivors) + " members, fewer than the minimum of " +
                          std::to_string(minimum) + " survivors (min_survivors), so every survivor stops");
}

DML_DECL void record_view_change(state& s, member_id rank, const std::vector<member_id>& before,
                                 const comm::agreement& a, const timeout_report& adapted) {
  view_change change;
  change.epoch = a.view.epoch;
  change.removed = dml::detail::removed_members(before, a.view.live);
  change.live = a.view.live;
  change.detection_seconds = a.detection_seconds;
  change.wait_limit_seconds = std::chrono::duration<double>(adapted.wait_limit).count();
  change.heartbeat_timeout_seconds = std::chrono::duration<double>(adapted.heartbeat_timeout).count();
  if (s.rebuild_due && !s.changes.empty()) {
    // The previous view was superseded before this member's vectors
    // were rebuilt in it (another member failed meanwhile): it was
    // never worked in, so it merges into this one. Members that
    // learned of both failures at once list the same single change.
    auto& last = s.changes.back();
    change.removed.insert(change.removed.end(), last.removed.begin(), last.removed.end());
    std::sort(change.removed.begin(), change.removed.end());
    change.detection_seconds = last.detection_seconds;
    last = std::move(change);
  } else {
    s.decided_at = std::chrono::steady_clock::now();
    s.changes.push_back(change);
  }
  s.rebuild_due = true;
  const view_change& now = s.changes.back();  // `change` may have been moved into it
  if (s.on_failure == policy::abort)
    s.stopped = abort_failure(rank, now.removed, now.epoch);
  else if (now.live.size() < s.min_survivors)
    s.stopped = too_few_survivors(rank, now.removed, now.epoch, now.live.size(), s.min_survivors);
}

}  // namespace detail

DML_DECL subscription& subscription::operator=(subscription&& o) noexcept {
  if (this != &o) {
    reset();
    state_ = std::move(o.state_);
    entry_ = std::move(o.entry_);
  }
  return *this;
}

DML_DECL void subscription::reset() noexcept {
  if (!entry_) return;
  auto& list = state_->subscribers;
  const auto it = std::find(list.begin(), list.end(), entry_.get());
  if (it != list.end()) list.erase(it);
  entry_.reset();
  state_.reset();
}

}  // namespace fault
DML_END_NAMESPACE

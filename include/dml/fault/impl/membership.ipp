// SPDX-License-Identifier: BSL-1.0
/// @file
/// Out-of-line definitions for <dml/fault/membership.hpp> (see <dml/version.hpp>, DML_DECL).
#pragma once

#include <dml/fault/membership.hpp>

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

DML_DECL peer_failure abort_failure(member_id rank, const std::vector<member_id>& removed,
                                    std::uint64_t epoch) {
  return peer_failure(removed.empty() ? rank : removed.front(),
                      "dml::fault: member " + std::to_string(rank) + ": member(s) " + list(removed) +
                          " failed; the survivors agreed on view " + std::to_string(epoch) +
                          " and the failure policy is abort");
}

DML_DECL peer_failure too_few_survivors(member_id rank, const std::vector<member_id>& removed,
                                        std::uint64_t epoch, std::size_t survivors, std::size_t minimum) {
  return peer_failure(removed.empty() ? rank : removed.front(),
                      "dml::fault: member " + std::to_string(rank) + ": member(s) " + list(removed) +
                          " failed; view " + std::to_string(epoch) + " has " + std::to_string(survivors) +
                          " members, fewer than the minimum of " + std::to_string(minimum) +
                          " survivors (min_survivors), so every survivor stops");
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

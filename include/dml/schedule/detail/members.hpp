// SPDX-License-Identifier: BSL-1.0
/// @file
/// Internal: this member's place among the live members.
#pragma once

#include <dml/error.hpp>
#include <dml/fwd.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

DML_BEGIN_NAMESPACE
namespace schedule::detail {

/// (live members, this member's position among them).
template <class Transport>
std::pair<std::size_t, std::size_t> place(const Transport& comm, const char* who) {
  const auto view = comm.view();
  for (std::size_t i = 0; i < view.live.size(); ++i)
    if (view.live[i] == comm.rank()) return {view.live.size(), i};
  throw config_error(std::string(who) + ": member " + std::to_string(comm.rank()) +
                     " is not among the live members");
}

/// At the start of a run that survives failures, before its first
/// collective: when members of `comm` died before the run (fewer live than
/// the group), a program built over the whole group (as with
/// `comm.rank()` and `comm.size()`) would keep the dead members' shares
/// untouched for the whole run; reshard() gives this member its share of
/// the live members, as after a failure inside the run. (A program built
/// over the live members is resharded to the same place.)
template <class Transport, class Program>
void reshard_at_start(const Transport& comm, Program& program, std::size_t members, std::size_t position) {
  if (members < comm.size()) program.reshard(position, members);
}

/// Throws dml::peer_failure naming the first member of `before` that is
/// no longer live in `comm`'s view: an engine's schedule, blocks and data
/// shares are cut over the members it started with, and a run goes on only
/// while they all live (a survivor that went on alone would silently lose
/// the dead member's data and blocks).
template <class Transport>
void require_members(const Transport& comm, const std::vector<member_id>& before, std::uint64_t iteration,
                     const char* who) {
  const auto view = comm.view();
  if (view.live.size() == before.size()) return;
  for (member_id m : before)
    if (std::find(view.live.begin(), view.live.end(), m) == view.live.end())
      throw peer_failure(m, std::string(who) + ": member " + std::to_string(m) + " failed in iteration " +
                                std::to_string(iteration) + "; the run was cut over " +
                                std::to_string(before.size()) +
                                " members and ends here (restart it over the " +
                                std::to_string(view.live.size()) + " survivors)");
}

}  // namespace schedule::detail
DML_END_NAMESPACE

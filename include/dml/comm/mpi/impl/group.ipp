// SPDX-License-Identifier: BSL-1.0
/// @file
/// Out-of-line definitions for <dml/comm/mpi/group.hpp> (see <dml/version.hpp>, DML_DECL).
#pragma once

#include <dml/comm/mpi/group.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

DML_BEGIN_NAMESPACE
namespace detail::mpi_impl {

DML_DECL group::~group() = default;

DML_DECL void group::attach(MPI_Comm comm, clock::duration wait_limit) {
  if (comm == MPI_COMM_NULL) throw config_error(std::string(who_) + ": the communicator is MPI_COMM_NULL");
  const auto heartbeat = heartbeat_timeout_from_env(who_);
  const auto startup = startup_limit(heartbeat, wait_limit);
  {
    watchdog::scope guard(who_, "MPI_Comm_dup (start-up)", startup);
    check(MPI_Comm_dup(comm, &world_), who_, "MPI_Comm_dup");
  }
  current_ = world_;
  check(MPI_Comm_set_errhandler(world_, MPI_ERRORS_RETURN), who_, "MPI_Comm_set_errhandler");
  int r = 0, n = 0;
  check(MPI_Comm_rank(world_, &r), who_, "MPI_Comm_rank");
  check(MPI_Comm_size(world_, &n), who_, "MPI_Comm_size");
  rank_ = static_cast<member_id>(r);
  size_ = static_cast<std::size_t>(n);
  failed_.assign(size_, 0);
  view_.live.clear();
  for (member_id m = 0; m < size_; ++m) view_.live.push_back(m);
  shared_windows_ = one_node(world_, who_, startup, nodes_);
  monitor_.start(world_, rank_, size_, shared_windows_, heartbeat, startup, who_);
  // The monitor's heartbeats run now: the start-up beacon's job is done
  // (its probe was replaced by the monitor's on one node).
  if (auto& b = process().startup; b.running()) {
    if (!shared_windows_) watchdog::instance().clear_probe();
    watchdog::instance().set_before_exit(nullptr);
    b.stop(true);  // alive and watched by the monitor now, not gone
  }
}

DML_DECL void group::mark_failed(member_id m) {
  if (m < size_) failed_[m] = 1;
  monitor_.declare(m);
  mark_broken();
}

DML_DECL void group::throw_view_change() const {
  throw peer_failure(rank_, std::string(who_) + ": member " + std::to_string(rank_) +
                                ": another member started a view change");
}

DML_DECL void group::watch(const char* what) const {
  check_view();
  for (member_id m : view_.live)
    if (m != rank_ && !alive(m))
      throw peer_failure(m, std::string(who_) + ": member " + std::to_string(rank_) + " waited in " + what +
                                " for member " + std::to_string(m) +
                                ", which has failed (heartbeat silent or operations failing)");
}

DML_DECL member_id group::member_of(int r) const {
  if (r < 0 || static_cast<std::size_t>(r) >= view_.live.size())
    throw comm_error(std::string(who_) + ": rank " + std::to_string(r) + " is not in the current view");
  return view_.live[static_cast<std::size_t>(r)];
}

DML_DECL void group::switch_to(const comm::membership_view& next, clock::time_point deadline) {
  MPI_Group all = MPI_GROUP_NULL, survivors = MPI_GROUP_NULL;
  check(MPI_Comm_group(world_, &all), who_, "MPI_Comm_group");
  std::vector<int> ranks(next.live.begin(), next.live.end());
  check(MPI_Group_incl(all, static_cast<int>(ranks.size()), ranks.data(), &survivors), who_,
        "MPI_Group_incl");
  MPI_Comm fresh = MPI_COMM_NULL;
  int rc = MPI_SUCCESS;
  {
    const auto limit = std::max<clock::duration>(deadline - clock::now(), std::chrono::seconds(1));
    watchdog::scope guard(who_, "MPI_Comm_create_group (the survivors' new group)", limit);
    rc = MPI_Comm_create_group(world_, survivors, static_cast<int>(next.epoch % 32768), &fresh);
  }
  MPI_Group_free(&survivors);
  MPI_Group_free(&all);
  check(rc, who_, "MPI_Comm_create_group (survivors)");
  check(MPI_Comm_set_errhandler(fresh, MPI_ERRORS_RETURN), who_, "MPI_Comm_set_errhandler");
  current_ = fresh;  // the old communicator is left alone: freeing it is collective
  current_broken_ = false;
  view_ = next;
}

}  // namespace detail::mpi_impl
DML_END_NAMESPACE

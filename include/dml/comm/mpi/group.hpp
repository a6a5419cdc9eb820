// SPDX-License-Identifier: BSL-1.0
// Internal: what the two MPI transports share about their group. The
// original communicator (a duplicate) and the current view's, member ids
// and ranks, failure detection (the heartbeat monitor plus operations that
// failed), the agreement primitive (agree on the survivors with the
// monitor, then build their communicator with MPI_Comm_create_group), the
// start-up and the closing barrier before the monitor window is freed.
#pragma once

#include <dml/comm/attributes.hpp>
#include <dml/comm/concepts.hpp>
#include <dml/comm/mpi/common.hpp>
#include <dml/comm/mpi/monitor.hpp>
#include <dml/comm/mpi/watchdog.hpp>
#include <dml/error.hpp>
#include <dml/fwd.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

DML_BEGIN_NAMESPACE
namespace detail::mpi_impl {

class group {
 public:
  using clock = std::chrono::steady_clock;

  explicit group(const char* who) : who_(who) {}
  group(const group&) = delete;
  group& operator=(const group&) = delete;
  DML_DECL ~group();

  /// Start-up, collective over `comm`: duplicates it, learns rank and size,
  /// whether all members share a node, and starts the fault monitor. The
  /// calls that cannot be interrupted are bounded by the watchdog.
  DML_DECL void attach(MPI_Comm comm, clock::duration wait_limit);

  /// Shut-down: meets the others in a barrier (polled, heartbeats on, so a
  /// member that died meanwhile ends it instead of leaving this one in
  /// MPI_Win_free), stops the heartbeat, frees the monitor window and the
  /// communicators. After a failure nothing collective is attempted.
  /// `progress` runs while waiting (the two-sided transport serves messages).
  ///
  /// A member that dies after the barrier would leave the others in
  /// MPI_Win_free and MPI_Finalize, which MPI cannot interrupt: on one
  /// node the beacon (beacon.hpp) runs from before the barrier until after
  /// MPI_Finalize, and the watchdog ends such a member's peers within the
  /// heartbeat timeout, naming it, instead of after the wait limit.
  template <class Progress>
  void shutdown(clock::duration wait_limit, Progress&& progress) noexcept {
    bool beacon = false;
    if (monitor_.started() && !finalized() && !broken() && !current_broken_) {
      try {
        // Started before the barrier: once it passes, every member's word exists.
        beacon = shared_windows_ && process().startup.start(monitor_.heartbeat_timeout(), "shut-down");
      } catch (...) {
        beacon = false;
      }
      try {
        barrier(world_, wait_limit, who_, [&] {
          progress();
          watch("shut-down");
        });
      } catch (...) {
        mark_broken();
      }
    }
    monitor_.stop();
    auto& b = process().startup;
    if (beacon) {
      watchdog::instance().set_probe([&b] { return b.stale_member(); }, static_cast<long>(rank_));
      watchdog::instance().set_before_exit([&b] { b.remove(); });
    }
    // Unless dml finalizes MPI right after this (the last context, MPI
    // started by dml: the environment stops the beacon after MPI_Finalize),
    // the beacon's job ends with this shut-down. Its word says 'left': the
    // probe watches every process of the job, and one still in a collective
    // of its own must not take this one for dead.
    const bool finalize_follows = process().contexts == 1 && process().initialized_by_dml;
    auto end_beacon = [&] {
      if (!beacon || finalize_follows) return;
      watchdog::instance().clear_probe();
      watchdog::instance().set_before_exit(nullptr);
      b.stop(true);
    };
    if (finalized() || broken()) {  // collectives could hang
      end_beacon();
      return;
    }
    {
      watchdog::scope guard(who_, "shut-down (MPI_Win_free of the fault monitor)", wait_limit);
      if (monitor_.started()) {
        MPI_Win win = monitor_.window();
        MPI_Win_unlock_all(win);
        MPI_Win_free(&win);
      }
      if (current_ != MPI_COMM_NULL && current_ != world_) MPI_Comm_free(&current_);
      if (world_ != MPI_COMM_NULL) MPI_Comm_free(&world_);
    }
    end_beacon();
  }

  [[nodiscard]] const char* who() const noexcept { return who_; }
  [[nodiscard]] MPI_Comm world() const noexcept { return world_; }
  /// The communicator of the current view.
  [[nodiscard]] MPI_Comm current() const noexcept { return current_; }
  [[nodiscard]] member_id rank() const noexcept { return rank_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] const comm::membership_view& view() const noexcept { return view_; }
  [[nodiscard]] bool shared_windows() const noexcept { return shared_windows_; }
  /// The node of every member, named by the lowest member id on it.
  [[nodiscard]] const std::vector<std::size_t>& node_labels() const noexcept { return nodes_; }
  [[nodiscard]] comm::attributes& attributes() noexcept { return attributes_; }
  [[nodiscard]] const comm::attributes& attributes() const noexcept { return attributes_; }

  /// False once an operation aimed at m failed, or m's heartbeat stalled
  /// past the heartbeat timeout.
  [[nodiscard]] bool alive(member_id m) const {
    return m < size_ && failed_[m] == 0 && !(monitor_.started() && monitor_.suspect(m));
  }
  /// An operation aimed at m failed: m is dead for this member, and the
  /// process can no longer finalize MPI or free windows collectively.
  DML_DECL void mark_failed(member_id m);

  /// Throws dml::peer_failure when another member started a view change
  /// this member has not joined (one local load).
  void check_view() const {
    if (monitor_.started() && monitor_.alarmed(view_.epoch)) throw_view_change();
  }
  /// Called while a collective or an answer is awaited: a view change
  /// started elsewhere, or a live member that failed, ends the wait.
  DML_DECL void watch(const char* what) const;

  /// The agreement primitive (comm::shrinkable_transport): when a failure
  /// is known or another member started a view change, agrees with the
  /// other survivors on the view without the dead and builds its
  /// communicator from the original group. The old view's windows and
  /// communicators are left alone (freeing them is collective over members
  /// that are gone), and MPI will not be finalized. `progress` runs while
  /// the agreement waits (the two-sided transport serves messages: a member
  /// waiting for this one's answer could not join otherwise).
  template <class Progress>
  comm::agreement agree_on_survivors(clock::time_point deadline, Progress&& progress) {
    comm::agreement a;
    bool known = monitor_.alarmed(view_.epoch);
    for (member_id m : view_.live)
      if (m != rank_ && !alive(m)) known = true;
    if (known) {
      const auto remaining = std::max<clock::duration>(deadline - clock::now(), std::chrono::milliseconds(1));
      const auto next = monitor_.agree(view_, remaining, progress);
      if (next.epoch > view_.epoch) {
        // From the last heartbeat seen of a removed member to the agreed view.
        for (member_id m : view_.live)
          if (!next.contains(m))
            a.detection_seconds = std::max(a.detection_seconds, monitor_.silent_seconds(m));
        mark_broken();
        switch_to(next, deadline);
      }
    }
    a.view = view_;
    return a;
  }

  /// The rank of member m in the current view's communicator, -1 when m is
  /// not in it.
  [[nodiscard]] int rank_of(member_id m) const noexcept {
    const auto it = std::lower_bound(view_.live.begin(), view_.live.end(), m);
    return it != view_.live.end() && *it == m ? static_cast<int>(it - view_.live.begin()) : -1;
  }
  /// The member at rank r of the current view's communicator.
  [[nodiscard]] DML_DECL member_id member_of(int r) const;

  /// Runs a collective on the current communicator: once one is cut short
  /// the communicator is unusable until a view change replaces it.
  template <class Fn>
  decltype(auto) collective(const char* what, Fn&& fn) {
    if (current_broken_)
      throw comm_error(std::string(who_) + ": " + what +
                       " refused: an earlier peer failure or timeout left this group unable to complete "
                       "collective operations (dml::fault::recover moves it to the survivors)");
    try {
      return fn();
    } catch (...) {
      current_broken_ = true;
      throw;
    }
  }

  void set_heartbeat_timeout(clock::duration t) { monitor_.set_heartbeat_timeout(t); }
  [[nodiscard]] clock::duration heartbeat_timeout() const noexcept { return monitor_.heartbeat_timeout(); }

 private:
  // Builds the communicator of `next` from the original group. Only called
  // once every member of `next` confirmed it, so nobody outside it takes
  // part and every member of it does.
  DML_DECL void switch_to(const comm::membership_view& next, clock::time_point deadline);
  // check_view's slow path.
  [[noreturn]] DML_DECL void throw_view_change() const;

  const char* who_;
  MPI_Comm world_ = MPI_COMM_NULL;    // the original group (a duplicate)
  MPI_Comm current_ = MPI_COMM_NULL;  // the current view's group
  member_id rank_ = 0;
  std::size_t size_ = 0;
  std::vector<char> failed_;
  comm::membership_view view_;
  bool shared_windows_ = false;
  std::vector<std::size_t> nodes_;  // per member: the lowest member id on its node
  bool current_broken_ = false;
  mutable monitor monitor_;
  comm::attributes attributes_;
};

}  // namespace detail::mpi_impl
DML_END_NAMESPACE

#if !defined(DML_SEPARATE_COMPILATION)
#include <dml/comm/mpi/impl/group.ipp>
#endif

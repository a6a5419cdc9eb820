// SPDX-License-Identifier: BSL-1.0
// Internal: bounds the MPI calls that cannot be interrupted. Most blocking
// steps of the MPI transports poll (see common.hpp), but some MPI calls have
// no nonblocking form: MPI_Init_thread, MPI_Comm_dup, window allocation and
// freeing, MPI_Comm_create_group, MPI_Finalize. Each waits for every member
// of its group, so a member that dies while the others are inside one leaves
// them there forever (Open MPI 4.1 has no way out: it spins in the call).
//
// The main thread marks such a call with a `watchdog::scope`. A background
// thread (one per process, no MPI calls) ends the process when the call has
// not returned in time:
// - when a liveness probe is installed (the fault monitor's heartbeats in
//   shared memory, readable without MPI), as soon as a member of the view has
//   been silent for the heartbeat timeout;
// - in any case past the scope's time limit.
// It prints one line naming the member and the call, then ends the process
// with `stuck_exit_status`: a process that cannot leave an MPI call cannot
// throw, and its silence would otherwise hang the whole job.
#pragma once

#include <dml/fwd.hpp>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

DML_BEGIN_NAMESPACE
namespace detail::mpi_impl {

/// Exit status of a process the watchdog ends (EX_SOFTWARE of sysexits.h).
inline constexpr int stuck_exit_status = 70;

class watchdog {
 public:
  using clock = std::chrono::steady_clock;
  /// Called from the watchdog thread while a scope is open; returns a
  /// description of a failed member ("member 3 (heartbeat silent for 1.2 s)")
  /// or an empty string. Must not call MPI.
  using probe = std::function<std::string()>;

  /// The process's watchdog.
  DML_DECL static watchdog& instance();

  /// Marks one uninterruptible MPI call of the main thread.
  class scope {
   public:
    scope(const char* who, const char* what, clock::duration limit) : dog_(&instance()) {
      dog_->open(who, what, limit);
    }
    scope(const scope&) = delete;
    scope& operator=(const scope&) = delete;
    ~scope() { dog_->close(); }

   private:
    watchdog* dog_;
  };

  /// Installs the liveness probe (empty: none) and this process's rank for
  /// the message.
  DML_DECL void set_probe(probe p, long rank);
  DML_DECL void clear_probe();
  /// What to tidy up (no MPI) before the watchdog ends the process, which
  /// runs no destructors; empty: nothing.
  DML_DECL void set_before_exit(std::function<void()> f);

  watchdog(const watchdog&) = delete;
  watchdog& operator=(const watchdog&) = delete;

 private:
  watchdog() = default;
  DML_DECL ~watchdog();

  DML_DECL void open(const char* who, const char* what, clock::duration limit);
  DML_DECL void close();
  DML_DECL void watch();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::thread thread_;
  bool quit_ = false;
  bool active_ = false;
  const char* who_ = "";
  const char* what_ = "";
  clock::time_point since_{};
  clock::duration limit_{};
  probe probe_;
  std::function<void()> before_exit_;
  long rank_ = -1;
};

}  // namespace detail::mpi_impl
DML_END_NAMESPACE

#if !defined(DML_SEPARATE_COMPILATION)
#include <dml/comm/mpi/impl/watchdog.ipp>
#endif

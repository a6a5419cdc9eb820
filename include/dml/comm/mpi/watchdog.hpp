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
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

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
  static watchdog& instance() {
    static watchdog w;
    return w;
  }

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
  void set_probe(probe p, long rank) {
    std::lock_guard lock(mutex_);
    probe_ = std::move(p);
    rank_ = rank;
  }
  void clear_probe() {
    std::lock_guard lock(mutex_);
    probe_ = nullptr;
  }
  /// What to tidy up (no MPI) before the watchdog ends the process, which
  /// runs no destructors; empty: nothing.
  void set_before_exit(std::function<void()> f) {
    std::lock_guard lock(mutex_);
    before_exit_ = std::move(f);
  }

  watchdog(const watchdog&) = delete;
  watchdog& operator=(const watchdog&) = delete;

 private:
  watchdog() = default;
  ~watchdog() {
    {
      std::lock_guard lock(mutex_);
      quit_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  void open(const char* who, const char* what, clock::duration limit) {
    std::lock_guard lock(mutex_);
    who_ = who;
    what_ = what;
    since_ = clock::now();
    limit_ = limit;
    active_ = true;
    if (!thread_.joinable()) thread_ = std::thread([this] { watch(); });
    wake_.notify_all();
  }
  void close() {
    std::lock_guard lock(mutex_);
    active_ = false;
  }

  void watch() {
    std::unique_lock lock(mutex_);
    while (!quit_) {
      if (!active_) {
        wake_.wait(lock, [this] { return quit_ || active_; });
        continue;
      }
      wake_.wait_for(lock, std::chrono::milliseconds(20));
      if (!active_ || quit_) continue;
      std::string cause;
      if (probe_) cause = probe_();
      const auto waited = clock::now() - since_;
      if (cause.empty() && waited <= limit_) continue;
      const double seconds = std::chrono::duration<double>(waited).count();
      std::string text =
          std::string(who_) + ": " +
          (rank_ >= 0 ? "member " + std::to_string(rank_) : std::string("a process of the job")) + ": ";
      if (!cause.empty())
        text += cause + " while this member was in " + what_ + ", which MPI cannot interrupt";
      else
        text += std::string(what_) + " did not return within " + std::to_string(seconds) +
                " s (a member of the job has probably died or stopped)";
      text += "; ending this process with exit status " + std::to_string(stuck_exit_status);
      std::fprintf(stderr, "%s\n", text.c_str());
      std::fflush(stderr);
      std::fflush(stdout);
      if (before_exit_) before_exit_();
      std::_Exit(stuck_exit_status);
    }
  }

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

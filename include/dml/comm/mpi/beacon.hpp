// SPDX-License-Identifier: BSL-1.0
// Internal: heartbeats before MPI runs. The fault monitor's heartbeats live
// in an MPI window, so until MPI_Init and the start-up collectives are done
// a member that dies cannot be told apart from a slow one, and the others
// wait in MPI_Init for the whole start-up bound without being able to name
// it. The beacon closes that gap on one node: before MPI_Init each process
// publishes a heartbeat word in POSIX shared memory named after the job and
// its rank (both known from the launcher's environment: Open MPI, MPICH's
// Hydra, Slurm), and the watchdog reads the other processes' words while
// the main thread is inside a call MPI cannot interrupt. A process whose
// word stops moving for the heartbeat timeout is named. The beacon stops
// once the fault monitor's own heartbeats run. Processes on other nodes
// have no word here and are covered by the time bound alone.
//
// It runs again for the shut-down (see group::shutdown): from before the
// closing barrier to after MPI_Finalize, when the monitor's window is being
// freed and MPI_Finalize's fence waits for every process. A process that
// is done writes `left` into its word instead of stopping silently, so the
// others, still inside those calls, do not take it for dead.
#pragma once

#include <dml/detail/ticker.hpp>
#include <dml/fwd.hpp>

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#if __has_include(<sys/mman.h>) && __has_include(<fcntl.h>) && __has_include(<unistd.h>)
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#define DML_HAS_BEACON 1
#else
#define DML_HAS_BEACON 0
#endif

DML_BEGIN_NAMESPACE
namespace detail::mpi_impl {

/// Who this process is in its job, from the launcher's environment.
struct launch_identity {
  std::string job;  ///< empty when no known launcher started the process
  long rank = -1;
  long size = 0;
};

/// The launcher's environment names the job: Open MPI, MPICH's Hydra, Slurm.
DML_DECL launch_identity launch_identity_from_env();

class beacon {
 public:
  using clock = std::chrono::steady_clock;

  beacon() = default;
  beacon(const beacon&) = delete;
  beacon& operator=(const beacon&) = delete;
  ~beacon() { stop(); }

  /// What a process that left normally writes into its word.
  static constexpr std::uint64_t left = ~std::uint64_t{0};

  /// Publishes this process's heartbeat word, when the launcher's
  /// environment names the job; false otherwise (nothing is started).
  /// `phase` names the phase in the message about a silent member.
  DML_DECL bool start(clock::duration heartbeat_timeout, const char* phase = "start-up");

  /// Removes this process's word without stopping anything (for the
  /// watchdog's last act: the process ends right after).
  DML_DECL void remove() const;

  /// Stops the heartbeat and removes this process's word; with
  /// `mark_left`, writes `left` into it first, so that readers still
  /// waiting in a collective call do not take this process for dead.
  DML_DECL void stop(bool mark_left = false);

  [[nodiscard]] bool running() const noexcept { return own_ != nullptr; }
  [[nodiscard]] long rank() const noexcept { return id_.rank; }

  /// For the watchdog (no MPI): the first process of the job whose word
  /// exists on this node and has not moved for the heartbeat timeout, as
  /// "member 3 has failed (...)"; empty when none. Removes a dead
  /// process's word, which nobody else would.
  DML_DECL std::string stale_member();

 private:
  struct peer {
    std::uint64_t* word = nullptr;
    std::uint64_t seen = 0;
    clock::time_point changed{};
    clock::time_point last_try{};
  };

  [[nodiscard]] DML_DECL std::string path(long rank) const;

  launch_identity id_;
  clock::duration timeout_ = std::chrono::seconds(1);
  std::string phase_ = "start-up";
  std::uint64_t* own_ = nullptr;
  std::mutex mutex_;
  std::vector<peer> peers_;
  detail::ticker beater_;  // last: stopped before the members its ticks use go
};

}  // namespace detail::mpi_impl
DML_END_NAMESPACE

#if !defined(DML_SEPARATE_COMPILATION)
#include <dml/comm/mpi/impl/beacon.ipp>
#endif

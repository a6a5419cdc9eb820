// SPDX-License-Identifier: BSL-1.0
// Shared by the reference trainers: where the ranks run. --transport inproc
// starts threads in this process; mpi_rma and mpi (in a build with dml::mpi,
// where CMake defines DML_EXAMPLES_MPI) make this process one rank of the
// MPI job started by mpiexec. Nothing here is dml API. launcher.cpp holds
// the part that depends on the transports: build it once with the trainers.
#pragma once

#include <dml/comm/any.hpp>
#include <dml/comm/inproc.hpp>
#include <dml/fault/membership.hpp>
#include <dml/io.hpp>

#include "cli.hpp"
#include "kill_after.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace trainer {

/// A bad command line: main() prints it and exits with code 2.
using usage_error = cli::usage_error;

/// Where the ranks run: `ranks` threads of this process (inproc), or this
/// process as one rank of an MPI job (mpi_rma, mpi). Construct it after
/// parsing and before loading data: it starts MPI, and finalizes it when
/// destroyed if it started it.
class launcher {
 public:
  /// `ranks` threads of this process.
  explicit launcher(std::size_t ranks);

  /// transport: inproc, mpi_rma or mpi. Under MPI, sets `ranks` to the
  /// number of processes.
  /// `kills`: in-process members that die at the given times (--kill-after).
  launcher(const std::string& transport, std::size_t& ranks, int& argc, char**& argv,
           const std::vector<std::pair<std::size_t, std::chrono::steady_clock::time_point>>& kills = {});
  launcher(launcher&&) noexcept;
  launcher& operator=(launcher&&) noexcept;
  ~launcher();  // finalizes MPI if it started it

  /// `--baseline mpi_allreduce`: checks that this run is an MPI job, for
  /// which allreduce_mean() is the whole exchange.
  void require_mpi_for(const std::string& option) const;

  /// The baseline the benchmarks compare dml with (bench/, docs/benchmarks.md):
  /// synchronous data-parallel SGD as written without dml. Replaces a
  /// vector's scatter() + gather() by MPI_Allreduce (sum) of `x` over every
  /// process of the job and division by their number: the exact mean, the
  /// result `gather::average` under bsp over `all` also computes.
  void allreduce_mean(std::span<float> x) const;

  /// Whether the ranks are threads of this process.
  [[nodiscard]] bool in_process() const noexcept;

  /// Whether this process prints what the whole run prints once (the
  /// header, the CSV file): in-process always (the members are this
  /// process's threads, and main prints outside them), under MPI when this
  /// process's member is dml::io::leader of the group (the lowest live
  /// member). Inside the run, members use dml::io::leader(comm) and
  /// dml::io::print(comm, ...) themselves.
  [[nodiscard]] bool leader() const;

  /// Calls body(comm) on every rank with the rank's transport context
  /// behind a `dml::comm::any`: whichever transport was chosen, body is
  /// compiled once (a generic lambda [&](auto& comm) { ... } is instantiated
  /// for dml::comm::any only), which keeps the trainers' build time to one
  /// training loop instead of three. The transports themselves, and their
  /// `comm::any` wrappers, are compiled once in launcher.cpp.
  template <class Body>
  void run(Body&& body) {
    using B = std::remove_reference_t<Body>;
    run_any([](void* b, dml::comm::any& comm) { (*static_cast<B*>(b))(comm); },
            const_cast<void*>(static_cast<const void*>(std::addressof(body))));
  }

 private:
  struct mpi_contexts;  // the MPI transport contexts, in a build with MPI
  void run_any(void (*body)(void*, dml::comm::any&), void* state);

  std::size_t ranks_ = 1;
  dml::comm::inproc::options inproc_options_;
  std::unique_ptr<mpi_contexts> mpi_;
};

/// The rank mpiexec gave this process, read from the environment it sets
/// (Open MPI: OMPI_COMM_WORLD_RANK; MPICH and others: PMI_RANK, PMIX_RANK);
/// -1 outside mpiexec. Known before MPI starts.
[[nodiscard]] inline long launched_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"})
    if (const char* v = std::getenv(name); v != nullptr && *v != '\0') return std::strtol(v, nullptr, 10);
  return -1;
}

/// For a bad command line, found before MPI starts: prints
/// "<program>: <message> (see --help)" and returns exit code 2. Under
/// mpiexec every process finds the same error; rank 0 alone prints it, and
/// (in a build with MPI) all then meet at a barrier before exiting, since
/// mpiexec ends the whole job as soon as one process exits with an error
/// and would otherwise often end rank 0 before it printed.
int usage_failure(const char* program, const char* message);

/// Prints one line for each view change `comm` took part in since the last
/// call (`printed` counts them): who failed, how many go on, and how long
/// detection and recovery took.
template <class Comm>
void print_view_changes(const Comm& comm, std::size_t& printed) {
  const auto& changes = dml::fault::view_changes(comm);
  for (; printed < changes.size(); ++printed) {
    const auto& c = changes[printed];
    std::string removed;
    for (auto m : c.removed) removed += (removed.empty() ? "" : ", ") + std::to_string(m);
    std::printf(
        "view %llu: member%s %s failed; %zu members go on (detected after %.2f s, recovered after %.2f s)\n",
        static_cast<unsigned long long>(c.epoch), c.removed.size() == 1 ? "" : "s", removed.c_str(),
        c.live.size(), c.detection_seconds, c.recovery_seconds);
    std::fflush(stdout);
  }
}

/// After a run of a dml::schedule engine (its run_stats): how many failures
/// it went on over and how many iterations it computed again; nothing when
/// none failed.
template <class Stats>
void print_failures_survived(const Stats& st) {
  if (st.failures_survived == 0) return;
  std::printf("went on over the survivors of %llu failure(s): %llu iterations computed again\n",
              static_cast<unsigned long long>(st.failures_survived),
              static_cast<unsigned long long>(st.iterations_redone));
  std::fflush(stdout);
}

/// The iterations to give dml::schedule::static_rotation for `rotations`
/// full rotations of `members` members, when the program's progress()
/// ends the run after that many: a bound that holds after failures too.
/// Each failure throws away at most members - 1 iterations of a rotation
/// cut short, at most members - 1 members can fail, and a rotation of the
/// survivors takes fewer iterations than one of all.
[[nodiscard]] inline std::uint64_t rotation_bound(std::size_t rotations, std::size_t members) {
  return (static_cast<std::uint64_t>(rotations) + members) * members;
}

/// Under MPI, at the end of the run body, on every member: `print()` runs
/// on the reporting member (the first live one), then every member meets
/// in dml::fault::barrier, which survives failures, and when the reporter
/// died before it printed, the member that became the reporter in the
/// barrier runs `print()`. So the result is printed although the member
/// that printed the progress lines died after the last of them (the
/// survivors, done with the run, would otherwise exit 0 without a result).
/// `print()` prints from what this member holds: every member must hold
/// the result by then. A second barrier keeps every member here until all
/// have left the first: a member killed inside the first can let some
/// members complete it while another is still waiting, and without the
/// second those would exit, the one left behind would take them for dead
/// (a view of one member) and print the result a second time; with it, they
/// are still there to tell it in the recovery that the first barrier
/// completed. In-process this does nothing (main() prints once, after the
/// run).
template <class Comm, class Print>
void print_final_surviving(const launcher& launch, Comm& comm, Print&& print) {
  if (launch.in_process()) return;
  bool printed = false;
  auto print_if_reporter = [&] {
    if (!dml::io::leader(comm)) return;
    die_here_if_asked("DML_EXAMPLES_DIE_BEFORE_FINAL", comm.rank());
    print();
    printed = true;
  };
  print_if_reporter();
  dml::fault::barrier(comm);
  if (!printed) print_if_reporter();
  dml::fault::barrier(comm);
}

}  // namespace trainer

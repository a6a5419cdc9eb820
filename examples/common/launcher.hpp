// SPDX-License-Identifier: BSL-1.0
// Shared by the reference trainers: where the ranks run. --transport inproc
// starts threads in this process; mpi_rma and mpi (in a build with dml::mpi,
// where CMake defines DML_EXAMPLES_MPI) make this process one rank of the
// MPI job started by mpiexec. Nothing here is dml API.
#pragma once

#include <dml/comm/any.hpp>
#include <dml/comm/inproc.hpp>
#include <dml/fault/membership.hpp>
#include <dml/io.hpp>

#include "cli.hpp"

#if DML_EXAMPLES_MPI
#include <dml/comm/mpi.hpp>
#include <dml/comm/mpi_rma.hpp>

#include <mpi.h>
#endif

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
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
  explicit launcher(std::size_t ranks) : ranks_(ranks) {}

  /// transport: inproc, mpi_rma or mpi. Under MPI, sets `ranks` to the
  /// number of processes.
  /// `kills`: in-process members that die at the given times (--kill-after).
  launcher(const std::string& transport, std::size_t& ranks, int& argc, char**& argv,
           const std::vector<std::pair<std::size_t, std::chrono::steady_clock::time_point>>& kills = {}) {
    for (const auto& [member, at] : kills) inproc_options_.kill_at.emplace_back(member, at);
#if DML_EXAMPLES_MPI
    if (transport == "mpi_rma") ranks = rma_.emplace(argc, argv).size();
    if (transport == "mpi") ranks = two_sided_.emplace(argc, argv).size();
#else
    (void)argc;
    (void)argv;
    if (transport != "inproc")
      throw usage_error("--transport " + transport +
                        " needs a build with MPI (dml::mpi: Open MPI or MPICH, and Boost.MPI); this one has "
                        "only inproc");
#endif
    ranks_ = ranks;
  }

  /// `--baseline mpi_allreduce`: checks that this run is an MPI job, for
  /// which allreduce_mean() is the whole exchange.
  void require_mpi_for(const std::string& option) const {
#if DML_EXAMPLES_MPI
    if (rma_ || two_sided_) return;
#endif
    throw usage_error(option + " is plain MPI: it needs --transport mpi_rma or mpi (under mpiexec)");
  }

  /// The baseline the benchmarks compare dml with (bench/, docs/benchmarks.md):
  /// synchronous data-parallel SGD as written without dml. Replaces a
  /// vector's scatter() + gather() by MPI_Allreduce (sum) of `x` over every
  /// process of the job and division by their number: the exact mean, the
  /// result `gather::average` under bsp over `all` also computes.
  void allreduce_mean(std::span<float> x) const {
#if DML_EXAMPLES_MPI
    if (rma_ || two_sided_) {
      int size = 1;
      MPI_Comm_size(MPI_COMM_WORLD, &size);
      MPI_Allreduce(MPI_IN_PLACE, x.data(), static_cast<int>(x.size()), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      for (float& e : x) e /= static_cast<float>(size);
      return;
    }
#endif
    (void)x;
    throw usage_error("allreduce_mean needs an MPI transport");
  }

  /// Whether the ranks are threads of this process.
  [[nodiscard]] bool in_process() const noexcept {
#if DML_EXAMPLES_MPI
    return !rma_ && !two_sided_;
#else
    return true;
#endif
  }

  /// Whether this process prints what the whole run prints once (the
  /// header, the CSV file): in-process always (the members are this
  /// process's threads, and main prints outside them), under MPI when this
  /// process's member is dml::io::leader of the group (the lowest live
  /// member). Inside the run, members use dml::io::leader(comm) and
  /// dml::io::print(comm, ...) themselves.
  [[nodiscard]] bool leader() const {
#if DML_EXAMPLES_MPI
    if (rma_) return dml::io::leader(*rma_);
    if (two_sided_) return dml::io::leader(*two_sided_);
#endif
    return true;
  }

  /// Calls body(comm) on every rank with the rank's transport context
  /// behind a `dml::comm::any`: whichever transport was chosen, body is
  /// compiled once (a generic lambda [&](auto& comm) { ... } is instantiated
  /// for dml::comm::any only), which keeps the trainers' build time to one
  /// training loop instead of three.
  template <class Body>
  void run(Body&& body) {
    auto erased = [&body](auto& context) {
      dml::comm::any comm(context);
      body(comm);
    };
#if DML_EXAMPLES_MPI
    if (rma_) return erased(*rma_);
    if (two_sided_) return erased(*two_sided_);
#endif
    dml::comm::inproc::run(ranks_, erased, inproc_options_);
  }

 private:
  std::size_t ranks_ = 1;
  dml::comm::inproc::options inproc_options_;
#if DML_EXAMPLES_MPI
  std::optional<dml::comm::mpi_rma> rma_;
  std::optional<dml::comm::mpi> two_sided_;
#endif
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
inline int usage_failure(const char* program, const char* message) {
  const long rank = launched_rank();
  if (rank <= 0) {
    std::fprintf(stderr, "%s: %s (see --help)\n", program, message);
    std::fflush(stderr);
  }
#if DML_EXAMPLES_MPI
  int started = 0;
  if (rank >= 0 && MPI_Initialized(&started) == MPI_SUCCESS && !started &&
      MPI_Init(nullptr, nullptr) == MPI_SUCCESS) {
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
  }
#endif
  return 2;
}

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

}  // namespace trainer

// SPDX-License-Identifier: BSL-1.0
// The launcher's code that depends on the transports (examples/common/launcher.hpp),
// compiled once for all trainers: the MPI transports and the comm::any
// wrappers of the three transports took 2-3 s of every trainer's build
// (g++ 12, -O1 to -O2).
#include "launcher.hpp"

#if DML_EXAMPLES_MPI
#include <dml/comm/mpi.hpp>
#include <dml/comm/mpi_rma.hpp>

#include <mpi.h>
#if defined(DML_SEPARATE_COMPILATION)
// The vectors over mpi_rma, compiled once for the trainers that link this
// (docs/getting-started.md#separate-compilation).
#include <dml/src_mpi.hpp>
#endif
#endif

namespace trainer {

struct launcher::mpi_contexts {
#if DML_EXAMPLES_MPI
  std::optional<dml::comm::mpi_rma> rma;
  std::optional<dml::comm::mpi> two_sided;
#endif
};

launcher::launcher(std::size_t ranks) : ranks_(ranks), mpi_(std::make_unique<mpi_contexts>()) {}

launcher::launcher(const std::string& transport, std::size_t& ranks, int& argc, char**& argv,
                   const std::vector<std::pair<std::size_t, std::chrono::steady_clock::time_point>>& kills)
    : mpi_(std::make_unique<mpi_contexts>()) {
  for (const auto& [member, at] : kills) inproc_options_.kill_at.emplace_back(member, at);
#if DML_EXAMPLES_MPI
  if (transport == "mpi_rma") ranks = mpi_->rma.emplace(argc, argv).size();
  if (transport == "mpi") ranks = mpi_->two_sided.emplace(argc, argv).size();
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

launcher::launcher(launcher&&) noexcept = default;
launcher& launcher::operator=(launcher&&) noexcept = default;
launcher::~launcher() = default;

void launcher::require_mpi_for(const std::string& option) const {
  if (!in_process()) return;
  throw usage_error(option + " is plain MPI: it needs --transport mpi_rma or mpi (under mpiexec)");
}

void launcher::allreduce_mean(std::span<float> x) const {
#if DML_EXAMPLES_MPI
  if (!in_process()) {
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

bool launcher::in_process() const noexcept {
#if DML_EXAMPLES_MPI
  return !mpi_ || (!mpi_->rma && !mpi_->two_sided);
#else
  return true;
#endif
}

bool launcher::leader() const {
#if DML_EXAMPLES_MPI
  if (mpi_ && mpi_->rma) return dml::io::leader(*mpi_->rma);
  if (mpi_ && mpi_->two_sided) return dml::io::leader(*mpi_->two_sided);
#endif
  return true;
}

void launcher::run_any(void (*body)(void*, dml::comm::any&), void* state) {
  auto erased = [&](auto& context) {
    dml::comm::any comm(context);
    body(state, comm);
  };
#if DML_EXAMPLES_MPI
  if (mpi_ && mpi_->rma) return erased(*mpi_->rma);
  if (mpi_ && mpi_->two_sided) return erased(*mpi_->two_sided);
#endif
  dml::comm::inproc::run(ranks_, erased, inproc_options_);
}

int usage_failure(const char* program, const char* message) {
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

}  // namespace trainer

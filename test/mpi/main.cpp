// SPDX-License-Identifier: BSL-1.0
// main() of an MPI test program: starts MPI through the transport's
// (argc, argv) constructor, runs the Catch2 session on every rank and prints
// one verdict line per rank, which the death tests count (mpiexec
// --enable-recovery does not report a survivor's exit status).
#include "mpi/support.hpp"

#include <cstdio>
#include <cstdlib>

namespace mpi_test {
int run_catch_session(int argc, char** argv);  // catch_impl.cpp
}

namespace {
mpi_test::transport* the_world = nullptr;
}

mpi_test::transport& mpi_test::world() { return *the_world; }

int main(int argc, char** argv) {
  int failed = 0;
  int rank = 0, size = 0;
  {
    mpi_test::transport world(argc, argv);
    the_world = &world;
    rank = static_cast<int>(world.rank());
    size = static_cast<int>(world.size());
    failed = mpi_test::run_catch_session(argc, argv);
    std::printf("dml-mpi-test: %s rank %d of %d: %s\n", mpi_test::transport_name, rank, size,
                failed == 0 ? "passed" : "failed");
    std::fflush(stdout);
    if (dml::detail::mpi_impl::broken()) {
      // A member died (the death tests): MPI cannot be shut down cleanly, and
      // exiting normally could run MPI's own teardown into the dead peer.
      std::fflush(stderr);
      std::_Exit(failed == 0 ? 0 : 1);
    }
    the_world = nullptr;
  }
  return failed == 0 ? 0 : 1;
}

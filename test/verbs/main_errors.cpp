// SPDX-License-Identifier: BSL-1.0
// main() of the verbs error tests: MPI is started here (not by a verbs
// context, whose construction is what the tests make fail), then the Catch2
// session runs on every rank and each rank prints its verdict line.
#include <dml/comm/mpi/common.hpp>

#include <cstdio>

namespace mpi_test {
int run_catch_session(int argc, char** argv);  // test/mpi/catch_impl.cpp
}

int main(int argc, char** argv) {
  int provided = 0;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) return 2;
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int failed = mpi_test::run_catch_session(argc, argv);
  std::printf("dml-mpi-test: verbs_errors rank %d of %d: %s\n", rank, size,
              failed == 0 ? "passed" : "failed");
  std::fflush(stdout);
  MPI_Finalize();
  return failed == 0 ? 0 : 1;
}

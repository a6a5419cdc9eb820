// SPDX-License-Identifier: BSL-1.0
// Catch2's session, compiled once for both MPI test programs: their main()
// (main.cpp) starts MPI first and then calls run_catch_session. With Catch2
// v2 this file also holds Catch's implementation; v3 links it as a library.
#if __has_include(<catch2/catch_all.hpp>)
#include <catch2/catch_session.hpp>
#else
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#endif

namespace mpi_test {
int run_catch_session(int argc, char** argv) { return Catch::Session().run(argc, argv); }
}  // namespace mpi_test

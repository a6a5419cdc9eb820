// SPDX-License-Identifier: BSL-1.0
// What the MPI test programs share. Each program is built once per transport
// (DML_TEST_MPI_RMA, DML_TEST_MPI_TWO_SIDED or, in test/verbs, DML_TEST_VERBS)
// and started under mpiexec:
// every MPI process is one member, runs every test case in the same order,
// and merges its findings with the others' before it asserts, so all ranks
// pass or fail a case together instead of some waiting for the rest.
#pragma once

#if defined(DML_TEST_MPI_RMA)
#include <dml/comm/mpi_rma.hpp>
#elif defined(DML_TEST_MPI_TWO_SIDED)
#include <dml/comm/mpi.hpp>
#elif defined(DML_TEST_VERBS)
#include <dml/comm/verbs.hpp>
#else
#error "define DML_TEST_MPI_RMA, DML_TEST_MPI_TWO_SIDED or DML_TEST_VERBS"
#endif

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace mpi_test {

#if defined(DML_TEST_MPI_RMA)
using transport = dml::comm::mpi_rma;
inline constexpr const char* transport_name = "mpi_rma";
#elif defined(DML_TEST_VERBS)
using transport = dml::comm::verbs::context;
inline constexpr const char* transport_name = "verbs";
#else
using transport = dml::comm::mpi;
inline constexpr const char* transport_name = "mpi";
#endif

/// The context main() created from (argc, argv); lives for the whole run.
transport& world();

/// Every member's value of a trivially copyable T, indexed by rank.
template <class T>
std::vector<T> all_values(transport& comm, const T& mine) {
  static_assert(std::is_trivially_copyable_v<T>);
  const auto raw = comm.exchange(std::as_bytes(std::span(&mine, 1)));
  std::vector<T> out(raw.size());
  for (std::size_t i = 0; i < raw.size(); ++i) std::memcpy(&out[i], raw[i].data(), sizeof(T));
  return out;
}

/// Every member's string, indexed by rank.
inline std::vector<std::string> all_strings(transport& comm, const std::string& mine) {
  const auto raw = comm.exchange(std::as_bytes(std::span(mine.data(), mine.size())));
  std::vector<std::string> out;
  for (const auto& r : raw) out.emplace_back(reinterpret_cast<const char*>(r.data()), r.size());
  return out;
}

/// The first non-empty string of any member, prefixed with its rank.
inline std::string first_message(transport& comm, const std::string& mine) {
  const auto all = all_strings(comm, mine);
  for (std::size_t r = 0; r < all.size(); ++r)
    if (!all[r].empty()) return "rank " + std::to_string(r) + ": " + all[r];
  return {};
}

/// Straggler injection for MPI: sleeps a uniformly random time in [0, max].
inline void random_pause(std::mt19937_64& rng, std::chrono::microseconds max) {
  std::this_thread::sleep_for(
      std::chrono::microseconds(std::uniform_int_distribution<long long>(0, max.count())(rng)));
}

}  // namespace mpi_test

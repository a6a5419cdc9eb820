// SPDX-License-Identifier: BSL-1.0
// The start-up beacon (comm/mpi/beacon.hpp) reads other processes' words
// from POSIX shared memory: a peer that has created its object but not
// sized it yet must be skipped, not read (reading past an object's end is
// SIGBUS; CI met it once in MPI_Init), and a word that stops is named.
#include <dml/comm/mpi/beacon.hpp>

#include "support/catch.hpp"

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#if DML_HAS_BEACON
TEST_CASE("beacon: an unsized peer object is skipped, a silent one named", "[beacon]") {
  using namespace std::chrono_literals;
  const std::string job = "dmltest" + std::to_string(::getpid());
  ::setenv("PMIX_NAMESPACE", job.c_str(), 1);
  ::setenv("OMPI_COMM_WORLD_RANK", "0", 1);
  ::setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
  const std::string peer = "/dml-" + job + "-1";
  const int fd = ::shm_open(peer.c_str(), O_CREAT | O_RDWR | O_TRUNC, 0600);  // created, size 0
  REQUIRE(fd >= 0);
  dml::detail::mpi_impl::beacon b;
  REQUIRE(b.start(200ms));
  CHECK(b.stale_member().empty());  // unsized: skipped (this read was the SIGBUS)
  REQUIRE(::ftruncate(fd, sizeof(std::uint64_t)) == 0);
  ::close(fd);
  std::this_thread::sleep_for(60ms);   // past the retry interval
  CHECK(b.stale_member().empty());     // mapped now; first sight of its value
  std::this_thread::sleep_for(300ms);  // the peer never beats
  const std::string named = b.stale_member();
  CHECK(named.rfind("member 1 has failed (its start-up heartbeat was silent for", 0) == 0);
  b.stop();
  ::shm_unlink(peer.c_str());  // stale_member unlinked it already; harmless
  ::unsetenv("PMIX_NAMESPACE");
  ::unsetenv("OMPI_COMM_WORLD_RANK");
  ::unsetenv("OMPI_COMM_WORLD_SIZE");
}
#endif

// SPDX-License-Identifier: BSL-1.0
// The start-up beacon (comm/mpi/beacon.hpp) reads other processes' words
// from POSIX shared memory: a peer that has created its object but not
// sized it yet must be skipped, not read (reading past an object's end is
// SIGBUS; CI met it once in MPI_Init), and a word that stops is named. In
// the shut-down a process that is done marks its word `left`: it is not
// named, however long its word stays still.
#include <dml/comm/mpi/beacon.hpp>

#include "support/catch.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
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

TEST_CASE("beacon: a peer that left (shut-down) is not named; a silent one in the shut-down is", "[beacon]") {
  using namespace std::chrono_literals;
  using dml::detail::mpi_impl::beacon;
  const std::string job = "dmltestbye" + std::to_string(::getpid());
  ::setenv("PMIX_NAMESPACE", job.c_str(), 1);
  ::setenv("OMPI_COMM_WORLD_SIZE", "3", 1);
  // Members 1 and 2 are beacons of this process too (their own words).
  ::setenv("OMPI_COMM_WORLD_RANK", "1", 1);
  beacon one;
  REQUIRE(one.start(500ms, "shut-down"));
  ::setenv("OMPI_COMM_WORLD_RANK", "2", 1);
  beacon two;
  REQUIRE(two.start(500ms, "shut-down"));
  ::setenv("OMPI_COMM_WORLD_RANK", "0", 1);
  beacon me;
  REQUIRE(me.start(500ms, "shut-down"));
  CHECK(me.stale_member().empty());  // first sight of both words
  // Member 1 leaves normally; member 2's word stops as a killed process's
  // would (its owner's mapping is gone; the reader's stays).
  one.stop(true);
  two.stop();
  CHECK(me.stale_member().empty());  // sees the last value of member 2's word
  std::this_thread::sleep_for(700ms);
  const std::string named = me.stale_member();
  INFO("named: " << named);
  CHECK(named.rfind("member 2 has failed (its shut-down heartbeat was silent for", 0) == 0);
  std::this_thread::sleep_for(700ms);
  const std::string later = me.stale_member();
  CHECK(later.find("member 1") == std::string::npos);  // left: never named
  me.stop(true);
  ::unsetenv("PMIX_NAMESPACE");
  ::unsetenv("OMPI_COMM_WORLD_RANK");
  ::unsetenv("OMPI_COMM_WORLD_SIZE");
}
#endif

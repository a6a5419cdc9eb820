// SPDX-License-Identifier: BSL-1.0
// How often to exchange: the statistics that time exchanges against the
// computation between them, the advice computed from them, and the one line
// a vector prints when communication dominates (and only then).
#include <dml/dml.hpp>

#include "support/catch.hpp"

#include <unistd.h>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace inproc = dml::comm::inproc;
using namespace std::chrono_literals;

namespace {

// What the process writes to stderr while f runs.
template <class F>
std::string stderr_of(F&& f) {
  std::fflush(stderr);
  char path[] = "/tmp/dml-advice-XXXXXX";
  const int fd = ::mkstemp(path);
  const int saved = ::dup(2);
  ::dup2(fd, 2);
  f();
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  ::close(fd);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  ::unlink(path);
  return text.str();
}

// 100 rounds of 8 members over all, with `work` of computation between two.
std::string rounds_with(std::chrono::microseconds work, double& share) {
  return stderr_of([&] {
    inproc::run(8, [&](inproc::context& c) {
      auto v = dml::make_vector<float>(c, 20000);
      for (int r = 0; r < 100; ++r) {
        std::this_thread::sleep_for(work);
        v.scatter();
        v.gather();
      }
      if (c.rank() == 0) share = v.stats().communication_share();
    });
  });
}

}  // namespace

TEST_CASE("advise: the interval factor brings the share to the target") {
  dml::vector_stats s;
  s.gathers = 101;
  s.exchange_seconds = 101 * 3e-3;  // 3 ms per exchange
  s.compute_seconds = 100 * 1e-3;   // 1 ms of work between two
  const auto a = dml::advise(s, 0.15);
  CHECK(a.share == Approx(0.7518).epsilon(1e-3));
  CHECK(a.dominates);
  // f >= 3 * 0.85 / (0.15 * 1) = 17: the next power of two is 32.
  CHECK(a.interval_factor == 32);
  CHECK(a.text.find("exchange about 32x less often") != std::string::npos);
  s.compute_seconds = 100 * 30e-3;  // 30 ms of work: 9 %, nothing to say
  const auto quiet = dml::advise(s, 0.15);
  CHECK_FALSE(quiet.dominates);
  CHECK(quiet.text.empty());
  CHECK(quiet.interval_factor == 1);
}

TEST_CASE("the advice line appears when communication dominates and not otherwise") {
  dml::set_advice(true);
  double busy = 0, idle = 0;
  const std::string dominated = rounds_with(0us, busy);
  INFO(dominated);
  CHECK(busy > 0.5);
  REQUIRE(dominated.find("dml: advice for a vector of 20000 elements: communication takes") !=
          std::string::npos);
  // Printed once, by one member.
  REQUIRE(dominated.find("dml: advice") == dominated.rfind("dml: advice"));
  const std::string relaxed = rounds_with(20ms, idle);
  INFO(relaxed);
  CHECK(idle < 0.5);
  REQUIRE(relaxed.find("dml: advice") == std::string::npos);
  dml::set_advice(false);
  const std::string off = rounds_with(0us, busy);
  REQUIRE(off.find("dml: advice") == std::string::npos);
  dml::set_advice(true);
}

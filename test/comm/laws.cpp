// SPDX-License-Identifier: BSL-1.0
// The transport laws (test/comm/laws.hpp) on in-process members at odd and
// prime group sizes; test/mpi runs the same laws on the MPI transports.
#include "comm/laws.hpp"

#include <dml/comm/any.hpp>
#include <dml/comm/inproc.hpp>

#include "support/catch.hpp"

#include <vector>

TEST_CASE("transport laws: inproc") {
  for (const std::size_t n : {1u, 2u, 3u, 5u, 8u}) {
    std::vector<comm_laws::outcome> outs(n);
    dml::comm::inproc::run(n, [&](dml::comm::inproc::context& c) { comm_laws::all(c, outs[c.rank()]); });
    for (std::size_t m = 0; m < n; ++m) {
      INFO("n = " << n << ", member " << m << ": " << outs[m].first);
      REQUIRE(outs[m].broken == 0);
    }
  }
}

// dml::comm::any passes the same laws as the context it wraps.
TEST_CASE("transport laws: any over inproc") {
  for (const std::size_t n : {1u, 3u, 5u}) {
    std::vector<comm_laws::outcome> outs(n);
    dml::comm::inproc::run(n, [&](dml::comm::inproc::context& c) {
      dml::comm::any a(c);
      comm_laws::all(a, outs[c.rank()]);
    });
    for (std::size_t m = 0; m < n; ++m) {
      INFO("n = " << n << ", member " << m << ": " << outs[m].first);
      REQUIRE(outs[m].broken == 0);
    }
  }
}

// SPDX-License-Identifier: BSL-1.0
// Must not compile: a time-varying topology under a policy other than bsp.
#include <dml/dml.hpp>
#include <dml/topology/one_peer_exponential.hpp>

int main() {
  dml::comm::inproc::run(2, [](dml::comm::inproc::context& c) {
    auto v = dml::make_vector<double>(c, 4, dml::topology::one_peer_exponential{}, dml::consistency::asp{});
    (void)v;
  });
}

// SPDX-License-Identifier: BSL-1.0
// Build-cost probe (bench/run times its compilation; never run): dml without
// MPI -- the umbrella header, the in-process transport and one vector.
#include <dml/comm/inproc.hpp>
#include <dml/dml.hpp>

int main() {
  dml::comm::inproc::run(2, [](dml::comm::inproc::context& comm) {
    auto v = dml::make_vector<float>(comm, 1024, dml::topology::halton{}, dml::consistency::notify_ack{},
                                     dml::gather::average{});
    v.scatter();
    v.gather();
  });
}

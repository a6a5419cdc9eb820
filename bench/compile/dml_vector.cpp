// SPDX-License-Identifier: BSL-1.0
// Build-cost probe (bench/run times its compilation; never run): what a
// trainer's translation unit pays for dml -- the umbrella header, the MPI
// one-sided transport and one distributed vector, used.
#include <dml/comm/mpi_rma.hpp>
#include <dml/dml.hpp>

int main(int argc, char** argv) {
  dml::comm::mpi_rma comm(argc, argv);
  auto v = dml::make_vector<float>(comm, 1024, dml::topology::halton{}, dml::consistency::notify_ack{},
                                   dml::gather::average{});
  v.scatter();
  v.gather();
  return v.span()[0] > 0 ? 0 : 1;
}

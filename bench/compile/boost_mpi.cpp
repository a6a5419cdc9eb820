// SPDX-License-Identifier: BSL-1.0
// Build-cost probe (bench/run times its compilation; never run): the
// baseline, a translation unit that includes only Boost.MPI and averages a
// vector with it.
#include <boost/mpi.hpp>

#include <functional>
#include <vector>

int main(int argc, char** argv) {
  boost::mpi::environment env(argc, argv);
  boost::mpi::communicator world;
  std::vector<float> x(1024, 1.0f), sum(1024);
  boost::mpi::all_reduce(world, x.data(), static_cast<int>(x.size()), sum.data(), std::plus<float>());
  return sum[0] > 0 ? 0 : 1;
}

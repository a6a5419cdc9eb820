// SPDX-License-Identifier: BSL-1.0
// The package's smoke test: four in-process ranks (threads) average their
// vectors over topology::all under bsp, so every member ends with the mean
// 2.5; then a Halton graph over 16 members is built and checked.
#include <dml/dml.hpp>
#include <dml/vector/eigen.hpp>

#include <atomic>
#include <cmath>
#include <cstdio>

int main() {
  constexpr std::size_t ranks = 4, dim = 16;
  std::atomic<int> failures{0};
  dml::comm::inproc::run(ranks, [&](dml::comm::inproc::context& c) {
    auto v = dml::make_vector<float>(c, dim, dml::topology::all{}, dml::consistency::bsp{},
                                     dml::gather::average{});
    v.eigen().setConstant(float(c.rank() + 1));
    v.scatter();
    v.gather();  // over all members: exactly the mean
    for (float x : v.span())
      if (std::fabs(x - 2.5f) > 1e-6f) ++failures;
  });
  if (failures != 0) {
    std::printf("dml test_package: %d wrong values\n", failures.load());
    return 1;
  }
  const auto g = dml::topology::build(dml::topology::halton{}, 16);
  if (!dml::topology::is_strongly_connected(g)) return 1;
  std::printf("dml %s test_package: ok (4 ranks averaged; halton(16) has %zu edges)\n", DML_VERSION_STRING,
              g.edge_count());
  return 0;
}

// SPDX-License-Identifier: BSL-1.0
// Built with nothing but `pkg-config --cflags --libs dml`: three in-process
// ranks average their vectors over a ring, which needs the headers, Boost
// (Hana), Eigen, C++20 and threads from the flags.
#include <dml/dml.hpp>
#include <dml/vector/eigen.hpp>

#include <atomic>
#include <cstdio>

int main() {
  std::atomic<int> wrong{0};
  dml::comm::inproc::run(3, [&](dml::comm::inproc::context& c) {
    auto v = dml::make_vector<double>(c, 4, dml::topology::all{}, dml::consistency::bsp{});
    v.eigen().setConstant(double(c.rank() + 1));  // 1, 2, 3
    v.scatter();
    v.gather();  // average of all three: 2
    for (double x : v.span())
      if (x != 2.0) ++wrong;
  });
  if (wrong != 0) return 1;
  std::printf("pkg-config consumer: ok (dml %s)\n", DML_VERSION_STRING);
  return 0;
}

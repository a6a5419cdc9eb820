// SPDX-License-Identifier: BSL-1.0
// Must not compile: see the REGEX in test/table/CMakeLists.txt (its twin that
// compiles is in test/table/static.cpp).
#include <dml/comm/inproc.hpp>
#include <dml/table.hpp>

#include <span>
#include <vector>
void f(dml::comm::inproc::context& c) {
  auto t = dml::make_table<float>(c, 4, 2);
  std::vector<double> d(2);
  t.update(0, std::span<const double>(d));
}

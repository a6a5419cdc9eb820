// SPDX-License-Identifier: BSL-1.0
// Must not compile: see the REGEX in test/vector/CMakeLists.txt.
#include <dml/dml.hpp>

void f(dml::comm::inproc::context& c) {
  auto v = dml::make_vector<float>(c, 4);
  auto x = v.eigen();  // without dml/vector/eigen.hpp
}

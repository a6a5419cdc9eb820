// SPDX-License-Identifier: BSL-1.0
// Must not compile: see the REGEX in test/comm/CMakeLists.txt.
#include <dml/dml.hpp>

#include <vector>

void f(dml::comm::inproc::context& c) {
  std::vector<float> v(4);
  dml::broadcast(c, v, 0);  // a std::vector is not trivially copyable: std::span(v) is meant
}

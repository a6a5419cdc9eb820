// SPDX-License-Identifier: BSL-1.0
// Must not compile: see the REGEX in test/vector/CMakeLists.txt. A weight
// set for a gather that ignores weights would be silently lost. (Its twin
// with gather::weighted_average compiles: test/vector/weighted.cpp.)
#include <dml/dml.hpp>

void f(dml::comm::inproc::context& c) {
  auto v = dml::make_vector<float>(c, 16, dml::gather::average{});
  v.set_weight(3);
}

// SPDX-License-Identifier: BSL-1.0
// Must not compile: see the REGEX in test/vector/CMakeLists.txt.
#include <dml/dml.hpp>
#include <dml/vector/delta_vector.hpp>

void f(dml::comm::inproc::context& c) {
  auto v = dml::make_delta_vector<float>(c, 16, dml::sparse{4}, dml::consistency::asp{});  // skips updates
}

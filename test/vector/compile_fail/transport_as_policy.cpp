// SPDX-License-Identifier: BSL-1.0
// Must not compile: see the REGEX in test/vector/CMakeLists.txt.
#include <dml/dml.hpp>

struct my_transport {
  using policy_slot = dml::slot::transport;
};
void f(dml::comm::inproc::context& c) { auto v = dml::make_vector<float>(c, 4, my_transport{}); }

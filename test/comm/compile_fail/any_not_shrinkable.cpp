// SPDX-License-Identifier: BSL-1.0
// Must not compile: see the REGEX in test/comm/CMakeLists.txt.
#include <dml/comm/any.hpp>

struct not_a_transport {
  int rank() const { return 0; }
};

void f(not_a_transport& t) {
  dml::comm::any a(t);  // not a dml::comm::shrinkable_transport
  (void)a;
}

// SPDX-License-Identifier: BSL-1.0
// Must not compile: see the REGEX in test/table/CMakeLists.txt (its twin that
// compiles is in test/table/static.cpp).
#include <dml/comm/inproc.hpp>
#include <dml/consistency/notify_ack.hpp>
#include <dml/table.hpp>

void f(dml::comm::inproc::context& c) {
  auto t = dml::make_table<float>(c, 4, 2, dml::consistency::notify_ack{});
}

// SPDX-License-Identifier: BSL-1.0
// Must not compile: see the REGEX in test/table/CMakeLists.txt (its twin that
// compiles is in test/table/static.cpp).
#include <dml/comm/inproc.hpp>
#include <dml/table.hpp>

using bad = dml::table<bool, dml::comm::inproc::context>;
std::size_t s = sizeof(bad);

// SPDX-License-Identifier: BSL-1.0
// Must not compile: see the REGEX in test/table/CMakeLists.txt (its twin that
// compiles is in test/table/static.cpp).
#include <dml/comm/inproc.hpp>
#include <dml/table.hpp>

void f(int& not_a_context) { auto t = dml::make_table<float>(not_a_context, 4, 2); }

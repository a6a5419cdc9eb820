// SPDX-License-Identifier: BSL-1.0
// Must not compile: see the REGEX in test/vector/CMakeLists.txt.
#include <dml/dml.hpp>

void f(int& not_a_context) { auto v = dml::make_vector<float>(not_a_context, 4); }

// SPDX-License-Identifier: BSL-1.0
// Must not compile: see the REGEX in test/vector/CMakeLists.txt.
#include <dml/dml.hpp>

#include <string>
using bad = dml::dist_vector<std::string, dml::comm::inproc::context>;
bad* p = nullptr;
std::size_t s = sizeof(bad);

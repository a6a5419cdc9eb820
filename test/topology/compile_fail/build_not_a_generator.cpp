// SPDX-License-Identifier: BSL-1.0
// Must not compile: build() names the slot a non-generator fails.
#include <dml/topology/graph.hpp>

struct not_a_topology {};

int main() { (void)dml::topology::build(not_a_topology{}, 4); }

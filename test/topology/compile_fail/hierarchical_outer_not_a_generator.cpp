// SPDX-License-Identifier: BSL-1.0
// Must not compile: hierarchical<Outer> says which argument is not a generator.
#include <dml/topology/hierarchical.hpp>

int main() { (void)dml::topology::hierarchical<int>(4); }

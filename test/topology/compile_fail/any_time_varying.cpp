// SPDX-License-Identifier: BSL-1.0
// Must not compile: topology::any would hand out only the union graph of a
// time-varying generator.
#include <dml/topology/any.hpp>
#include <dml/topology/one_peer_exponential.hpp>

int main() { (void)dml::topology::any(dml::topology::one_peer_exponential{}); }

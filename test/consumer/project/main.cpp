// SPDX-License-Identifier: BSL-1.0
// Uses the installed headers: a topology and its analysis, plus the
// component's own header when one was asked for.
#include <dml/dml.hpp>

#include <cstdio>

int main() {
  const auto g = dml::topology::build(dml::topology::halton{}, 16);
  if (!dml::topology::is_strongly_connected(g) || g.size() != 16) return 1;
  if (DML_VERSION < 100) return 1;  // 0.1.0 or later
  std::printf("consumer-%s: ok (dml %s, %zu edges)\n", DML_CONSUMER_NAME, DML_VERSION_STRING, g.edge_count());
  return 0;
}

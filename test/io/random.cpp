// SPDX-License-Identifier: BSL-1.0
// dml::splitmix64, the library's one seeded generator (the core's small
// utilities are tested with io's): the published SplitMix64 sequence, and
// unit() in [0, 1).
#include <dml/random.hpp>

#include "support/catch.hpp"

#include <algorithm>
#include <cmath>
#include <concepts>
#include <random>

static_assert(std::uniform_random_bit_generator<dml::splitmix64>);

TEST_CASE("splitmix64: the reference sequence from seed 0", "[random]") {
  dml::splitmix64 g(0);
  CHECK(g() == 0xe220a8397b1dcdafULL);
  CHECK(g() == 0x6e789e6aa1b965f4ULL);
  CHECK(g() == 0x06c45d188009454fULL);
  CHECK(g() == 0xf88bb8a8724c81ecULL);
}

TEST_CASE("splitmix64: a seed fixes the sequence; unit() stays in [0, 1)", "[random]") {
  dml::splitmix64 a(42), b(42), c(43);
  bool differs = false;
  for (int i = 0; i < 1000; ++i) {
    const auto x = a(), y = b(), z = c();
    CHECK(x == y);
    differs = differs || x != z;
  }
  CHECK(differs);
  dml::splitmix64 u(7);
  double lo = 1, hi = 0, sum = 0;
  for (int i = 0; i < 100000; ++i) {
    const double v = u.unit();
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
  }
  CHECK(lo >= 0.0);
  CHECK(hi < 1.0);
  CHECK(std::abs(sum / 100000 - 0.5) < 0.01);
}

// SPDX-License-Identifier: BSL-1.0
// dml::splitmix64, the library's one seeded generator (the core's small
// utilities are tested with io's): the published SplitMix64 sequence, and
// unit() in [0, 1) and below(n) in [0, n).
#include <dml/random.hpp>

#include "support/catch.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <concepts>
#include <cstdint>
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

TEST_CASE("splitmix64: below(n) is in [0, n), unbiased, and 0 for n = 0", "[random]") {
  dml::splitmix64 g(9);
  CHECK(g.below(0) == 0);
  CHECK(g.below(1) == 0);
  // Each of 7 values about equally often: 70000 draws, 10000 expected each;
  // a bias of 1 % would need 100 standard deviations of luck to hide.
  std::array<int, 7> seen{};
  for (int i = 0; i < 70000; ++i) {
    const auto v = g.below(7);
    REQUIRE(v < 7);
    ++seen[v];
  }
  for (int count : seen) CHECK(std::abs(count - 10000) < 500);
  // n close to 2^64: the rejected range (2^64 mod n) is almost half of all
  // numbers, and what is returned still stays below n.
  const std::uint64_t big = (std::uint64_t{1} << 63) + 12345;
  for (int i = 0; i < 1000; ++i) CHECK(g.below(big) < big);
  // The same seed, the same draws.
  dml::splitmix64 a(5), b(5);
  for (int i = 0; i < 100; ++i) CHECK(a.below(1000) == b.below(1000));
}

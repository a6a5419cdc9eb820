// SPDX-License-Identifier: BSL-1.0
/// @file
/// dml::splitmix64: the library's one seeded generator. A seed gives the same
/// sequence on every platform and standard library (std's distributions and
/// engines other than the fixed ones do not), which shuffles, schedules,
/// searchers and generated data sets rely on to agree across members.
#pragma once

#include <dml/version.hpp>

#include <cstdint>

DML_BEGIN_NAMESPACE

/// SplitMix64 (Steele, Lea and Flood, 2014): 64 bits of state, one addition
/// and two multiply-xorshift rounds per number. A UniformRandomBitGenerator.
class splitmix64 {
 public:
  using result_type = std::uint64_t;
  explicit constexpr splitmix64(std::uint64_t seed) noexcept : state_(seed) {}
  static constexpr result_type min() noexcept { return 0; }
  static constexpr result_type max() noexcept { return ~result_type{0}; }
  constexpr result_type operator()() noexcept {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, 1): the top 53 bits of the next number.
  constexpr double unit() noexcept { return static_cast<double>((*this)() >> 11) * 0x1.0p-53; }
  /// Uniform in [0, n) without bias (numbers below 2^64 mod n are drawn
  /// again); 0 when n is 0. The same on every platform, unlike
  /// std::uniform_int_distribution.
  constexpr result_type below(result_type n) noexcept {
    if (n == 0) return 0;
    const result_type skip = (0 - n) % n;  // 2^64 mod n
    for (;;)
      if (const result_type r = (*this)(); r >= skip) return r % n;
  }

 private:
  std::uint64_t state_;
};

DML_END_NAMESPACE

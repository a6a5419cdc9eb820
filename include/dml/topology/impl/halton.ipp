// SPDX-License-Identifier: BSL-1.0
/// @file
/// Out-of-line definitions for <dml/topology/halton.hpp> (see <dml/version.hpp>, DML_DECL).
#pragma once

#include <dml/topology/halton.hpp>

DML_BEGIN_NAMESPACE
namespace topology {

DML_DECL std::size_t halton::fan_out(std::size_t n) const {
  detail::check_member_count(name(), n);
  if (fan_out_ == 0) return detail::powers_of_two_below(n);
  detail::check_fan_out(name(), fan_out_, n);
  return fan_out_;
}

DML_DECL std::vector<std::size_t> halton::naive_offsets(std::size_t n) const {
  const std::size_t k = fan_out(n);
  std::vector<std::size_t> offsets;
  offsets.reserve(k);
  // Terminates: once 2^bits >= n, the fractions j / 2^bits are spaced at
  // most 1/n apart, so every offset 1..n-1 turns up, and k <= n - 1.
  for (std::size_t t = 1; offsets.size() < k; ++t) {
    std::size_t numerator = 0;  // bit-reversal of t: v_t = numerator / 2^bits
    std::size_t bits = 0;
    for (std::size_t r = t; r != 0; r >>= 1) {
      numerator = (numerator << 1) | (r & 1);
      ++bits;
    }
    // floor(n * numerator / 2^bits) without forming n * numerator, which
    // could overflow; bits stays near log2(2n), so low * numerator fits.
    const std::size_t low = n & ((std::size_t{1} << bits) - 1);
    const std::size_t offset = (n >> bits) * numerator + ((low * numerator) >> bits);
    if (offset != 0 && std::find(offsets.begin(), offsets.end(), offset) == offsets.end()) {
      offsets.push_back(offset);
    }
  }
  return offsets;
}

DML_DECL std::vector<std::size_t> halton::offsets(std::size_t n) const {
  auto result = naive_offsets(n);
  std::size_t divisor = n;
  for (const std::size_t o : result) divisor = std::gcd(divisor, o);
  if (divisor != 1 && !result.empty()) result.back() = 1;  // 1 is absent, else the gcd would be 1
  return result;
}

DML_DECL std::vector<std::vector<member_id>> halton::out_lists(std::size_t n) const {
  return detail::circulant(n, offsets(n));
}

}  // namespace topology
DML_END_NAMESPACE

// SPDX-License-Identifier: BSL-1.0
/// @file
/// Internal helpers shared by the topology generators: argument checks with
/// uniform messages, integer arithmetic and circulant graphs. Not public API.
#pragma once

#include <dml/error.hpp>
#include <dml/fwd.hpp>
#include <dml/version.hpp>

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

DML_BEGIN_NAMESPACE
namespace detail {

/// "1 member", "4 members": error messages read better with the right number.
DML_DECL std::string members_phrase(std::size_t n);

/// Every generator needs somebody to connect; n = 0 is always a mistake
/// (usually an empty survivor list or an uninitialised size).
DML_DECL void check_member_count(std::string_view topology_name, std::size_t n);

/// A member has only n - 1 peers, so it cannot send to k >= n distinct ones.
DML_DECL void check_fan_out(std::string_view topology_name, std::size_t k, std::size_t n);

/// The number of powers of two below n, which is ceil(log2 n) for n >= 1
/// (and 0 for n <= 1).
constexpr std::size_t powers_of_two_below(std::size_t n) noexcept {
  std::size_t e = 0;
  while (e < 64 && (std::size_t{1} << e) < n) ++e;
  return e;
}

/// floor(sqrt(n)) exactly; std::sqrt on a double can be one off for large n.
constexpr std::size_t floor_sqrt(std::size_t n) noexcept {
  if (n < 2) return n;
  std::size_t lo = 1;
  std::size_t hi = std::min<std::size_t>(n, std::size_t{1} << 32);  // (2^32)^2 > any size_t
  while (lo + 1 < hi) {                                             // invariant: lo^2 <= n < hi^2
    const std::size_t mid = lo + (hi - lo) / 2;
    if (mid <= n / mid) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return lo;
}

/// Out-lists of the circulant digraph i -> (i + o) mod n for every offset o.
/// Offsets must be in 1..n-1 and distinct, so the lists have no self-edges
/// and no duplicates; each list is sorted.
DML_DECL std::vector<std::vector<member_id>> circulant(std::size_t n,
                                                       const std::vector<std::size_t>& offsets);

}  // namespace detail
DML_END_NAMESPACE

#if !defined(DML_SEPARATE_COMPILATION)
#include <dml/topology/detail/impl/common.ipp>
#endif

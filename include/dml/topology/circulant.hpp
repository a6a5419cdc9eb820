// SPDX-License-Identifier: BSL-1.0
/// @file
/// A circulant graph with offsets the user chooses: i -> i + o (mod n) for
/// every offset o.
#pragma once

#include <dml/error.hpp>
#include <dml/fwd.hpp>
#include <dml/topology/detail/common.hpp>
#include <dml/version.hpp>

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

DML_BEGIN_NAMESPACE
namespace topology {

/// Circulant graph: member i sends to i + o (mod n) for every offset o, so
/// every member has k = offsets().size() out- and in-neighbours (regular).
/// `circulant{{1, 5}}` over 25 members is i -> i + 1, i -> i + 5.
///
/// Offsets are taken mod n, so one list serves any group size (and the
/// survivors of a failure); over n members they must stay distinct and
/// nonzero mod n, and fewer than n. The graph is strongly connected exactly
/// when gcd(offsets, n) = 1; otherwise member i only ever reaches i plus
/// multiples of that gcd, and building it is a `config_error` that says so.
/// `best_circulant` (<dml/topology/best_circulant.hpp>) searches the offsets
/// with the largest spectral gap for a given k.
class circulant {
 public:
  using policy_slot = slot::topology;

  /// @throws dml::config_error when `offsets` is empty or holds 0 or the
  ///         same offset twice.
  explicit circulant(std::vector<std::size_t> offsets) : offsets_(std::move(offsets)) {
    if (offsets_.empty())
      throw config_error(
          "topology 'circulant': the offset list is empty; give at least one offset (1 is a ring)");
    for (std::size_t e = 0; e < offsets_.size(); ++e) {
      if (offsets_[e] == 0)
        throw config_error("topology 'circulant': offset 0 would make every member send to itself");
      for (std::size_t f = 0; f < e; ++f) {
        if (offsets_[f] == offsets_[e])
          throw config_error("topology 'circulant': offset " + std::to_string(offsets_[e]) +
                             " is listed twice");
      }
    }
  }

  /// The offsets as given.
  [[nodiscard]] const std::vector<std::size_t>& offsets() const noexcept { return offsets_; }

  /// The offsets reduced mod n, in the order given.
  /// @throws dml::config_error when n = 0, when there are n or more offsets,
  ///         when an offset is a multiple of n (a self-edge) or two offsets
  ///         are equal mod n (a duplicate edge), or when gcd(offsets, n) != 1
  ///         (the graph falls apart).
  [[nodiscard]] std::vector<std::size_t> offsets(std::size_t n) const {
    ::dml::detail::check_member_count(name(), n);
    ::dml::detail::check_fan_out(name(), offsets_.size(), n);
    std::vector<std::size_t> reduced;
    reduced.reserve(offsets_.size());
    std::size_t divisor = n;
    for (const std::size_t o : offsets_) {
      const std::size_t r = o % n;
      if (r == 0)
        throw config_error("topology 'circulant': offset " + std::to_string(o) + " is a multiple of n = " +
                           std::to_string(n) + ", so every member would send to itself");
      for (std::size_t f = 0; f < reduced.size(); ++f) {
        if (reduced[f] == r)
          throw config_error("topology 'circulant': offsets " + std::to_string(offsets_[f]) + " and " +
                             std::to_string(o) + " are equal mod n = " + std::to_string(n) +
                             " (each member would send to the same peer twice)");
      }
      reduced.push_back(r);
      divisor = std::gcd(divisor, r);
    }
    if (divisor != 1) {
      throw config_error("topology '" + describe() + "' over " + ::dml::detail::members_phrase(n) +
                         " is not strongly connected: every offset and n are multiples of " +
                         std::to_string(divisor) +
                         ", so member 0 reaches only members that are (the group "
                         "falls apart into " +
                         std::to_string(divisor) + " parts; add an offset coprime with n, e.g. 1)");
    }
    return reduced;
  }

  /// Out-lists over members 0..n-1.
  /// @throws dml::config_error as offsets(n).
  [[nodiscard]] std::vector<std::vector<member_id>> out_lists(std::size_t n) const {
    return ::dml::detail::circulant(n, offsets(n));
  }

  [[nodiscard]] constexpr std::string_view name() const noexcept { return "circulant"; }

  /// "circulant(offsets=1,5)": members that build a vector compare it.
  [[nodiscard]] std::string describe() const {
    std::string s = "circulant(offsets=";
    for (std::size_t e = 0; e < offsets_.size(); ++e) s += (e ? "," : "") + std::to_string(offsets_[e]);
    return s + ")";
  }

  friend bool operator==(const circulant&, const circulant&) = default;

 private:
  std::vector<std::size_t> offsets_;
};

}  // namespace topology
DML_END_NAMESPACE

// SPDX-License-Identifier: BSL-1.0
/// @file
/// The circulant graph of out-degree k with the largest spectral gap: a
/// deterministic search over offset sets, and a generator that uses it.
#pragma once

#include <dml/error.hpp>
#include <dml/fwd.hpp>
#include <dml/random.hpp>
#include <dml/topology/detail/common.hpp>
#include <dml/topology/halton.hpp>
#include <dml/version.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <span>
#include <string>
#include <string_view>
#include <vector>

DML_BEGIN_NAMESPACE
namespace detail {

/// cos and sin of 2 pi m / n for m = 0..n-1, and the running eigenvalue sums
/// of a circulant graph's averaging matrix.
///
/// For offsets S over n members, P = (I + sum_{o in S} Z^o) / (k + 1) with
/// Z the cyclic shift, k = |S|. P is circulant, hence normal, so its
/// singular values are the moduli of its eigenvalues
/// lambda_j = (1 + sum_o w^(o j)) / (k + 1), w = e^(2 pi i / n): j = 0 gives
/// 1, and sigma_2 = max over j = 1..n-1 of |lambda_j|. Since
/// lambda_(n-j) = conj(lambda_j), j = 1..floor(n/2) suffice.
class circulant_spectrum {
 public:
  DML_DECL explicit circulant_spectrum(std::size_t n);

  /// Adds (sign = +1) or removes (sign = -1) offset o from the sums.
  DML_DECL void add(std::size_t o, double sign) noexcept;

  /// sigma_2 of the averaging matrix for the k offsets currently added.
  [[nodiscard]] DML_DECL double second_singular_value(std::size_t k) const noexcept;

 private:
  std::size_t n_;
  std::vector<double> cos_, sin_;
  std::vector<double> re_, im_;  // 1 + sum_o of cos / sin(2 pi o j / n), j = 0..n/2
};

/// C(a, b), saturating at `cap` (the search only needs to know whether it
/// is below its budget).
constexpr std::uint64_t binomial_capped(std::uint64_t a, std::uint64_t b, std::uint64_t cap) noexcept {
  if (b > a) return 0;
  b = std::min(b, a - b);
  std::uint64_t c = 1;
  for (std::uint64_t i = 1; i <= b; ++i) {
    // c * (a - b + i) / i is exact at every step; stop before it overflows.
    if (c > cap || (a - b + i) > UINT64_MAX / std::max<std::uint64_t>(c, 1)) return cap + 1;
    c = c * (a - b + i) / i;
  }
  return std::min(c, cap + 1);
}

/// Lexicographic order of two offset lists of equal length.
inline bool lex_less(const std::vector<std::size_t>& a, const std::vector<std::size_t>& b) noexcept {
  return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
}

}  // namespace detail

namespace topology {

/// The spectral gap 1 - sigma_2(P) of the circulant graph i -> i + o
/// (mod n), o in `offsets`, in closed form (see dml::detail::circulant_spectrum):
/// the same number `spectral_gap(build(circulant{offsets}, n))` computes
/// with a dense SVD, in O(n k) time instead of O(n^3). Offsets are taken
/// mod n and must be distinct and nonzero there; a disconnected offset set
/// has gap 0. One member: 1.
[[nodiscard]] DML_DECL double circulant_gap(std::size_t n, std::span<const std::size_t> offsets);

/// What `search_circulant` found.
struct circulant_search_result {
  std::vector<std::size_t> offsets;  ///< ascending; the lexicographically first among equal gaps
  double gap = 0;                    ///< its spectral gap (circulant_gap)
  bool exhaustive = false;           ///< every k-subset of 1..n-1 was measured: the gap is the largest
  std::uint64_t candidates = 0;      ///< offset sets measured
};

/// Default work limit of `search_circulant`: offset sets times n/2, the
/// cost of measuring one. About 0.1 s on one core of a 2020s machine.
inline constexpr std::uint64_t default_circulant_budget = 40'000'000;

/// The k offsets o in 1..n-1 whose circulant graph i -> i + o (mod n) has
/// the largest spectral gap (ASAP appendix A, as `spectral_gap` measures
/// it), found deterministically: the same n, k and budget give the same
/// offsets on every member.
///
/// - When C(n-1, k) offset sets, at n/2 operations each, fit in `budget`,
///   every set is measured (`exhaustive`): the result is a best one.
/// - Otherwise a local search: from a starting set it replaces one offset
///   at a time by the value that raises the gap most, until no single
///   replacement does. It starts from four structured sets (the
///   exponential offsets 1, 2, 4, ...; the Halton offsets; a geometric
///   spread n^(i/k); an even spread), then from pseudo-random sets
///   (splitmix64 seeded with n and k) while the budget lasts, and keeps the
///   best end point. Not guaranteed best; docs/topologies.md compares it
///   with the exhaustive result where both can be run. The structured
///   starts always run, so at large n it takes longer than the budget; at
///   25 budgets (n above about 2000) it stops improving and returns the
///   best set found so far.
///
/// Gaps within 1e-12 of each other count as equal and the
/// lexicographically smaller offset list wins, so rounding in the last bits
/// does not decide between equally good graphs.
/// @throws dml::config_error when n = 0, k = 0 or k >= n.
[[nodiscard]] DML_DECL circulant_search_result
search_circulant(std::size_t n, std::size_t k, std::uint64_t budget = default_circulant_budget);

/// The circulant graph with out-degree k and the largest spectral gap that
/// `search_circulant(n, k)` finds; k defaults to ceil(log2 n), the fan-out
/// of `halton{}` and `exponential`, so the three compare at equal cost.
/// Regular; strongly connected, since a disconnected offset set has gap 0
/// and offset 1 alone already does better. Every member runs the same
/// deterministic search (about 0.1 s with the default budget, more at
/// n > 500: see docs/topologies.md); a process remembers the offsets it
/// found for each (n, k), so in-process members and rebuilds search once.
class best_circulant {
 public:
  using policy_slot = slot::topology;

  /// Out-degree ceil(log2 n), chosen when the graph is built.
  constexpr best_circulant() noexcept = default;

  /// Out-degree exactly k for every n > k.
  /// @throws dml::config_error when k = 0.
  constexpr explicit best_circulant(std::size_t k) : k_(k) {
    if (k == 0) throw config_error("topology 'best_circulant': the out-degree k must be at least 1, got 0");
  }

  /// The configured out-degree; 0 means ceil(log2 n).
  [[nodiscard]] constexpr std::size_t fan_out() const noexcept { return k_; }

  /// The out-degree used over n members.
  /// @throws dml::config_error when n = 0 or k >= n.
  [[nodiscard]] DML_DECL std::size_t fan_out(std::size_t n) const;

  /// The offsets the search picks over n members (empty for n = 1).
  /// @throws dml::config_error when n = 0 or k >= n.
  [[nodiscard]] DML_DECL std::vector<std::size_t> offsets(std::size_t n) const;

  /// Out-lists over members 0..n-1.
  /// @throws dml::config_error when n = 0 or k >= n.
  [[nodiscard]] DML_DECL std::vector<std::vector<member_id>> out_lists(std::size_t n) const;

  [[nodiscard]] constexpr std::string_view name() const noexcept { return "best_circulant"; }

  /// "best_circulant(k=4)", or "best_circulant" for the default degree.
  [[nodiscard]] DML_DECL std::string describe() const;

  friend constexpr bool operator==(const best_circulant&, const best_circulant&) noexcept = default;

 private:
  std::size_t k_ = 0;
};

}  // namespace topology
DML_END_NAMESPACE

#if !defined(DML_SEPARATE_COMPILATION)
#include <dml/topology/impl/best_circulant.ipp>
#endif

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
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <numbers>
#include <numeric>
#include <span>
#include <string>
#include <string_view>
#include <utility>
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
  explicit circulant_spectrum(std::size_t n)
      : n_(n), cos_(n), sin_(n), re_(n / 2 + 1, 1.0), im_(n / 2 + 1, 0.0) {
    for (std::size_t m = 0; m < n; ++m) {
      const double angle = 2 * std::numbers::pi * static_cast<double>(m) / static_cast<double>(n);
      cos_[m] = std::cos(angle);
      sin_[m] = std::sin(angle);
    }
  }

  // The two loops below are the search's whole cost; they index raw
  // pointers so that an unoptimized build (a user's debug build, the
  // sanitized tests at -O0) does not pay a call per element: 3x faster
  // there, the same code with optimization.

  /// Adds (sign = +1) or removes (sign = -1) offset o from the sums.
  void add(std::size_t o, double sign) noexcept {
    double* re = re_.data();
    double* im = im_.data();
    const double* cos = cos_.data();
    const double* sin = sin_.data();
    const std::size_t end = re_.size();
    std::size_t m = 0;  // o * j mod n, stepped without overflow
    for (std::size_t j = 1; j < end; ++j) {
      m += o;
      if (m >= n_) m -= n_;
      re[j] += sign * cos[m];
      im[j] += sign * sin[m];
    }
  }

  /// sigma_2 of the averaging matrix for the k offsets currently added.
  [[nodiscard]] double second_singular_value(std::size_t k) const noexcept {
    const double* re = re_.data();
    const double* im = im_.data();
    const std::size_t end = re_.size();
    double worst = 0;
    for (std::size_t j = 1; j < end; ++j) {
      const double power = re[j] * re[j] + im[j] * im[j];
      if (power > worst) worst = power;
    }
    return std::sqrt(worst) / static_cast<double>(k + 1);
  }

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
[[nodiscard]] inline double circulant_gap(std::size_t n, std::span<const std::size_t> offsets) {
  if (n <= 1) return 1.0;
  ::dml::detail::circulant_spectrum s(n);
  for (const std::size_t o : offsets) s.add(o % n, 1.0);
  return 1.0 - s.second_singular_value(offsets.size());
}

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
[[nodiscard]] inline circulant_search_result search_circulant(
    std::size_t n, std::size_t k, std::uint64_t budget = default_circulant_budget) {
  ::dml::detail::check_member_count("best_circulant", n);
  if (k == 0) throw config_error("topology 'best_circulant': the out-degree k must be at least 1, got 0");
  ::dml::detail::check_fan_out("best_circulant", k, n);
  constexpr double tie = 1e-12;
  circulant_search_result best;
  best.gap = -1;
  auto consider = [&](std::vector<std::size_t> offsets, double gap) {
    std::sort(offsets.begin(), offsets.end());
    if (gap > best.gap + tie || (gap >= best.gap - tie && ::dml::detail::lex_less(offsets, best.offsets))) {
      best.offsets = std::move(offsets);
      best.gap = gap;
    }
  };
  const std::uint64_t per_set = std::max<std::uint64_t>(n / 2, 1);
  const std::uint64_t sets = ::dml::detail::binomial_capped(n - 1, k, budget / per_set);
  if (sets * per_set <= budget) {
    // Every k-subset in lexicographic order; the sums are kept incrementally
    // along the recursion by adding and removing one offset at a time.
    best.exhaustive = true;
    ::dml::detail::circulant_spectrum s(n);
    std::vector<std::size_t> chosen;
    chosen.reserve(k);
    auto visit = [&](auto&& self, std::size_t from) -> void {
      if (chosen.size() == k) {
        ++best.candidates;
        const double gap = 1.0 - s.second_singular_value(k);
        if (gap > best.gap + tie) {  // lexicographic order: a tie never replaces
          best.offsets = chosen;
          best.gap = gap;
        }
        return;
      }
      for (std::size_t o = from; o + (k - chosen.size()) <= n; ++o) {
        chosen.push_back(o);
        s.add(o, 1.0);
        self(self, o + 1);
        s.add(o, -1.0);
        chosen.pop_back();
      }
    };
    visit(visit, 1);
    return best;
  }

  // Local search from deterministic starting sets.
  std::vector<std::vector<std::size_t>> starts;
  auto distinct_fill = [&](std::vector<std::size_t> seed) {
    std::vector<std::size_t> set;
    for (const std::size_t o : seed) {
      const std::size_t r = o % n;
      if (r != 0 && std::find(set.begin(), set.end(), r) == set.end() && set.size() < k) set.push_back(r);
    }
    for (std::size_t o = 1; set.size() < k; ++o)  // k < n: enough values exist
      if (std::find(set.begin(), set.end(), o) == set.end()) set.push_back(o);
    return set;
  };
  {
    std::vector<std::size_t> powers;
    for (std::size_t p = 1; p < n && powers.size() < k; p *= 2) powers.push_back(p);
    starts.push_back(distinct_fill(powers));
  }
  starts.push_back(distinct_fill(halton{k}.offsets(n)));
  {
    std::vector<std::size_t> geometric;
    for (std::size_t i = 0; i < k; ++i)
      geometric.push_back(static_cast<std::size_t>(
          std::floor(std::pow(static_cast<double>(n), static_cast<double>(i) / static_cast<double>(k)))));
    starts.push_back(distinct_fill(geometric));
  }
  {
    std::vector<std::size_t> even;
    for (std::size_t i = 0; i < k; ++i) even.push_back(1 + i * (n - 1) / k);
    starts.push_back(distinct_fill(even));
  }
  // Then pseudo-random starts (splitmix64 from n and k: the same on every
  // member) while the budget lasts; at least the structured ones run.
  splitmix64 next_random(0x9e3779b97f4a7c15ULL ^ (static_cast<std::uint64_t>(n) << 20) ^ k);
  for (std::size_t start = 0;; ++start) {
    if (start >= starts.size()) {
      if (best.candidates * per_set >= budget) break;
      std::vector<std::size_t> seed;
      for (std::size_t i = 0; i < k; ++i) seed.push_back(1 + next_random() % (n - 1));
      starts.push_back(distinct_fill(seed));
    }
    auto set = starts[start];
    ::dml::detail::circulant_spectrum s(n);
    for (const std::size_t o : set) s.add(o, 1.0);
    double gap = 1.0 - s.second_singular_value(k);
    ++best.candidates;
    // A hard cap on the work (25 budgets, about 2.5 s) for very large n,
    // where one pass over all replacements costs k n^2 / 2: the search then
    // stops with the best set so far. Counted, so still deterministic.
    const std::uint64_t cap = budget > UINT64_MAX / 25 ? UINT64_MAX : 25 * budget;
    while (best.candidates * per_set < cap) {
      // The best single replacement; ties go to the smaller resulting list.
      double best_gap = gap;
      std::size_t best_pos = k, best_value = 0;
      std::vector<std::size_t> best_set;
      std::vector<bool> used(n, false);
      for (const std::size_t o : set) used[o] = true;
      for (std::size_t pos = 0; pos < k; ++pos) {
        s.add(set[pos], -1.0);
        for (std::size_t v = 1; v < n; ++v) {
          if (used[v]) continue;
          s.add(v, 1.0);
          const double g = 1.0 - s.second_singular_value(k);
          s.add(v, -1.0);
          ++best.candidates;
          if (g > best_gap + tie) {
            best_gap = g;
            best_pos = pos;
            best_value = v;
          }
        }
        s.add(set[pos], 1.0);
      }
      if (best_pos == k) break;
      s.add(set[best_pos], -1.0);
      s.add(best_value, 1.0);
      set[best_pos] = best_value;
      gap = best_gap;
    }
    consider(set, gap);
  }
  return best;
}

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
  [[nodiscard]] std::size_t fan_out(std::size_t n) const {
    ::dml::detail::check_member_count(name(), n);
    if (k_ == 0) return ::dml::detail::powers_of_two_below(n);
    ::dml::detail::check_fan_out(name(), k_, n);
    return k_;
  }

  /// The offsets the search picks over n members (empty for n = 1).
  /// @throws dml::config_error when n = 0 or k >= n.
  [[nodiscard]] std::vector<std::size_t> offsets(std::size_t n) const {
    const std::size_t k = fan_out(n);
    if (k == 0) return {};
    // Every member of an in-process group, and every rebuild after a
    // failure, asks again: remember the answers (a few words each).
    static std::mutex mutex;
    static std::map<std::pair<std::size_t, std::size_t>, std::vector<std::size_t>> found;
    {
      const std::lock_guard lock(mutex);
      if (const auto it = found.find({n, k}); it != found.end()) return it->second;
    }
    auto offsets = search_circulant(n, k).offsets;
    const std::lock_guard lock(mutex);
    return found.emplace(std::pair{n, k}, std::move(offsets)).first->second;
  }

  /// Out-lists over members 0..n-1.
  /// @throws dml::config_error when n = 0 or k >= n.
  [[nodiscard]] std::vector<std::vector<member_id>> out_lists(std::size_t n) const {
    return ::dml::detail::circulant(n, offsets(n));
  }

  [[nodiscard]] constexpr std::string_view name() const noexcept { return "best_circulant"; }

  /// "best_circulant(k=4)", or "best_circulant" for the default degree.
  [[nodiscard]] std::string describe() const {
    return k_ == 0 ? std::string(name()) : "best_circulant(k=" + std::to_string(k_) + ")";
  }

  friend constexpr bool operator==(const best_circulant&, const best_circulant&) noexcept = default;

 private:
  std::size_t k_ = 0;
};

}  // namespace topology
DML_END_NAMESPACE

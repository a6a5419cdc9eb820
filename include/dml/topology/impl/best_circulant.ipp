// SPDX-License-Identifier: BSL-1.0
/// @file
/// Out-of-line definitions for <dml/topology/best_circulant.hpp> (see <dml/version.hpp>, DML_DECL).
#pragma once

#include <dml/topology/best_circulant.hpp>

#include <cmath>
#include <map>
#include <mutex>
#include <numbers>
#include <utility>

DML_BEGIN_NAMESPACE
namespace detail {

DML_DECL circulant_spectrum::circulant_spectrum(std::size_t n)
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

DML_DECL void circulant_spectrum::add(std::size_t o, double sign) noexcept {
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

DML_DECL double circulant_spectrum::second_singular_value(std::size_t k) const noexcept {
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

}  // namespace detail

namespace topology {

DML_DECL double circulant_gap(std::size_t n, std::span<const std::size_t> offsets) {
  if (n <= 1) return 1.0;
  ::dml::detail::circulant_spectrum s(n);
  for (const std::size_t o : offsets) s.add(o % n, 1.0);
  return 1.0 - s.second_singular_value(offsets.size());
}

DML_DECL circulant_search_result search_circulant(std::size_t n, std::size_t k, std::uint64_t budget) {
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

DML_DECL std::size_t best_circulant::fan_out(std::size_t n) const {
  ::dml::detail::check_member_count(name(), n);
  if (k_ == 0) return ::dml::detail::powers_of_two_below(n);
  ::dml::detail::check_fan_out(name(), k_, n);
  return k_;
}

DML_DECL std::vector<std::size_t> best_circulant::offsets(std::size_t n) const {
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

DML_DECL std::vector<std::vector<member_id>> best_circulant::out_lists(std::size_t n) const {
  return ::dml::detail::circulant(n, offsets(n));
}

DML_DECL std::string best_circulant::describe() const {
  return k_ == 0 ? std::string(name()) : "best_circulant(k=" + std::to_string(k_) + ")";
}

}  // namespace topology
DML_END_NAMESPACE

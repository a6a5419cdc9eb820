// SPDX-License-Identifier: BSL-1.0
/// @file
/// `dml::schedule::dyn_regr`: the prioritized, dependency-checked schedule
/// of SMPFRAME's Algorithm 2 (scheduleDynRegr) for coordinate descent on
/// regressions (Lasso, sparse logistic regression), with the random
/// (Shotgun) and prioritized-only variants it is compared with.
#pragma once

#include <dml/error.hpp>
#include <dml/fwd.hpp>
#include <dml/schedule/context.hpp>

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

DML_BEGIN_NAMESPACE
namespace schedule {

/// What dyn_regr reads from a program's data: statistics of the design
/// matrix's columns over this member's rows (the engine sums them).
template <class D>
concept column_data = requires(const D& d, parameter a, parameter b) {
  { d.local_dot(a, b) } -> std::convertible_to<double>;
  { d.local_norm2(a) } -> std::convertible_to<double>;
};

/// Settings of dyn_regr.
struct dyn_regr_options {
  /// K: at most this many parameters per iteration (>= 1).
  std::size_t set_size = 8;
  /// L: candidates sampled before the dependency check (>= set_size; 0:
  /// 2 x set_size). Algorithm 2 samples L > P.
  std::size_t candidates = 0;
  /// Two candidates conflict when the absolute correlation of their columns
  /// exceeds tau, in [0, 1]. 1 lets everything through; 0 keeps only
  /// orthogonal columns together.
  double tau = 0.1;
  /// Sampling weight of parameter a: its squared last change plus floor
  /// times the largest squared last change (>= 0). Without a floor a
  /// parameter that did not move would never be picked again (Algorithm 2
  /// leaves this open). Parameters never updated weigh as much as the one
  /// that moved most.
  double floor = 0.01;
  /// false: uniform sampling (Shotgun's random coordinates).
  bool prioritize = true;
  /// false: no dependency check (the first set_size candidates are taken).
  bool check_dependencies = true;
  /// Leave out parameters whose results are still in the pipeline
  /// (context::in_flight): updating one twice from the same stale value
  /// would apply its change twice. With the dependency check, candidates
  /// that conflict with a parameter in flight are dropped too: iterations
  /// in the pipeline run concurrently as much as a set's members do.
  bool skip_in_flight = true;
  /// Column correlations are cached (they depend on the data alone); the
  /// cache is emptied, on every member alike, when it exceeds this many pairs.
  std::size_t max_cached_pairs = std::size_t{1} << 22;
  /// When all M (M - 1) / 2 pairs are at most this many, the first call
  /// computes every correlation in one collective sum, and no later
  /// iteration exchanges anything for the check (0: never).
  std::size_t precompute_pairs_up_to = std::size_t{1} << 20;

  /// Throws config_error naming the first bad setting.
  void validate() const {
    if (set_size < 1) throw config_error("dml::schedule::dyn_regr: set_size must be >= 1");
    if (candidates != 0 && candidates < set_size)
      throw config_error("dml::schedule::dyn_regr: candidates (" + std::to_string(candidates) +
                         ") must be at least set_size (" + std::to_string(set_size) +
                         "), or 0 for 2 x set_size");
    if (!(tau >= 0 && tau <= 1))
      throw config_error("dml::schedule::dyn_regr: tau must be in [0, 1], got " + std::to_string(tau));
    if (!(floor >= 0) || !std::isfinite(floor))
      throw config_error("dml::schedule::dyn_regr: floor must be a finite number >= 0, got " +
                         std::to_string(floor));
  }
};

/// The schedule of SMPFRAME's Algorithm 2, computed on every member alike:
///
///  1. sample L candidates without replacement, with probability
///     proportional to weight (squared last change + floor; uniform when
///     not prioritizing), from the shared random stream of the iteration;
///  2. (dependency check) walk them in sampled order -- most important
///     first -- and keep a candidate unless the absolute correlation of its
///     column with a kept one's exceeds tau, up to K kept: an independent
///     set of the graph whose edges are the pairs above tau;
///  3. return them in that order (SMPFRAME moves the highest priorities to
///     the front of an iteration).
///
/// The correlation of columns a and b is x_a.x_b / (|x_a| |x_b|) (for
/// centred columns, Pearson's). Members hold different rows, so the dot
/// products of candidate pairs not seen before are summed over the members
/// with context::sum -- a collective made at the same point on every member,
/// because every member samples the same candidates -- and cached.
///
/// The program calls `record(a, change)` from its aggregate() for every
/// parameter it changed; aggregate runs alike everywhere, so the weights,
/// and with them the schedule, stay the same on every member.
class dyn_regr {
 public:
  /// `parameters`: M, the model's length (1..2^32 - 1).
  dyn_regr(std::size_t parameters, dyn_regr_options options) : options_(options), m_(parameters) {
    options_.validate();
    if (parameters == 0) throw config_error("dml::schedule::dyn_regr: the model has no parameters");
    if (parameters > std::size_t{std::numeric_limits<parameter>::max()})
      throw config_error("dml::schedule::dyn_regr: " + std::to_string(parameters) +
                         " parameters (at most 2^32 - 1)");
    if (options_.candidates == 0) options_.candidates = 2 * options_.set_size;
    change2_.assign(m_, 0.0);
    touched_.assign(m_, 0);
  }

  /// Shotgun: K uniformly random parameters, no dependency check.
  [[nodiscard]] static dyn_regr_options random(std::size_t set_size) {
    dyn_regr_options o;
    o.set_size = set_size;
    o.candidates = set_size;
    o.prioritize = false;
    o.check_dependencies = false;
    return o;
  }
  /// Prioritization alone: K parameters sampled by weight, no dependency check.
  [[nodiscard]] static dyn_regr_options priority(std::size_t set_size) {
    dyn_regr_options o;
    o.set_size = set_size;
    o.candidates = set_size;
    o.check_dependencies = false;
    return o;
  }
  /// Prioritization and the dependency check (Algorithm 2).
  [[nodiscard]] static dyn_regr_options smp(std::size_t set_size, double tau) {
    dyn_regr_options o;
    o.set_size = set_size;
    o.tau = tau;
    return o;
  }

  /// The job of this iteration. Collective when the dependency check needs
  /// correlations not cached yet (then every member must call it, as the
  /// dynamic engine does).
  template <class Data>
  [[nodiscard]] job operator()(const context& ctx, const Data& data) {
    static_assert(column_data<Data>,
                  "dml::schedule::dyn_regr: the data must provide local_dot(a, b) and local_norm2(a) over "
                  "this member's rows (see dml::schedule::column_data)");
    if (norm2_.empty()) {  // first call: every column's squared norm, summed over the members
      // Kept only once the sum is whole: a member's failure may end the
      // sum with dml::fault::interrupted (dml::schedule::dynamic), and the
      // next call must sum again.
      std::vector<double> norm2(m_);
      for (std::size_t a = 0; a < m_; ++a)
        norm2[a] = static_cast<double>(data.local_norm2(static_cast<parameter>(a)));
      ctx.sum(norm2);
      norm2_ = std::move(norm2);
      if (options_.check_dependencies && options_.tau < 1 &&
          m_ * (m_ - 1) / 2 <= options_.precompute_pairs_up_to &&
          m_ * (m_ - 1) / 2 <= options_.max_cached_pairs) {
        std::vector<parameter> every(m_);
        for (std::size_t a = 0; a < m_; ++a) every[a] = static_cast<parameter>(a);
        correlate(ctx, data, every);
      }
    }
    const std::vector<parameter> cand = sample(ctx);
    job out;
    if (!options_.check_dependencies || options_.tau >= 1) {
      out.assign(cand.begin(),
                 cand.begin() + static_cast<std::ptrdiff_t>(std::min(cand.size(), options_.set_size)));
      return out;
    }
    // Parameters in flight conflict like kept ones (but are not returned).
    std::vector<parameter> flying;
    if (options_.skip_in_flight)
      for (const auto& j : ctx.in_flight())
        for (parameter a : j)
          if (a < m_) flying.push_back(a);
    std::vector<parameter> pairs = cand;
    pairs.insert(pairs.end(), flying.begin(), flying.end());
    correlate(ctx, data, pairs);
    const auto conflicts_with = [&](parameter a, const std::vector<parameter>& set) {
      for (parameter b : set)
        if (std::abs(cache_.at(key(a, b))) > options_.tau) return true;
      return false;
    };
    for (parameter a : cand) {
      if (out.size() == options_.set_size) break;
      if (conflicts_with(a, out) || conflicts_with(a, flying))
        ++conflicts_;
      else
        out.push_back(a);
    }
    return out;
  }

  /// Parameter a changed by `change` (call from aggregate()).
  void record(parameter a, double change) {
    if (a >= m_)
      throw config_error("dml::schedule::dyn_regr::record: parameter " + std::to_string(a) + " of " +
                         std::to_string(m_));
    change2_[a] = change * change;
    touched_[a] = 1;
  }

  /// Drops the squared column norms and the correlations summed over the
  /// members; the next call sums them again (collective, on every member
  /// alike). For a program's reshard() after a failure: the survivors'
  /// shares of the rows changed, and a sum the failure cut short may be
  /// cached on some survivors and not on others. The priorities stay.
  void forget_sums() noexcept {
    norm2_.clear();
    cache_.clear();
  }

  /// |correlation| of columns a and b as the check saw it (a pair seen
  /// together among the candidates since the cache was last emptied).
  [[nodiscard]] double correlation(parameter a, parameter b) const {
    const auto it = cache_.find(key(a, b));
    if (it == cache_.end())
      throw config_error("dml::schedule::dyn_regr::correlation: the pair (" + std::to_string(a) + ", " +
                         std::to_string(b) + ") is not cached");
    return it->second;
  }

  [[nodiscard]] const dyn_regr_options& options() const noexcept { return options_; }
  /// Candidates dropped by the dependency check so far.
  [[nodiscard]] std::uint64_t conflicts() const noexcept { return conflicts_; }
  /// Column pairs whose dot product was summed over the members so far.
  [[nodiscard]] std::uint64_t pairs_computed() const noexcept { return pairs_computed_; }

 private:
  static std::uint64_t key(parameter a, parameter b) noexcept {
    if (a > b) std::swap(a, b);
    return (std::uint64_t{a} << 32) | b;
  }

  // L candidates in sampled order: exponential keys E/w, smallest first
  // (sampling without replacement, proportional to w).
  std::vector<parameter> sample(const context& ctx) {
    std::vector<char> busy(m_, 0);
    if (options_.skip_in_flight)
      for (const auto& j : ctx.in_flight())
        for (parameter a : j)
          if (a < m_) busy[a] = 1;
    double top = 0;
    for (std::size_t a = 0; a < m_; ++a)
      if (touched_[a]) top = std::max(top, change2_[a]);
    if (!(top > 0)) top = 1;
    auto g = ctx.random();
    std::vector<std::pair<double, parameter>> keys;
    keys.reserve(m_);
    for (std::size_t a = 0; a < m_; ++a) {
      const double u = (static_cast<double>(g() >> 11) + 0.5) * 0x1p-53;  // the same draws on every member
      if (busy[a] || !(norm2_[a] > 0)) continue;                          // an empty column never moves
      const double w = options_.prioritize ? (touched_[a] ? change2_[a] : top) + options_.floor * top : 1.0;
      if (!(w > 0)) continue;
      keys.emplace_back(-std::log(u) / w, static_cast<parameter>(a));
    }
    const std::size_t l = std::min(options_.candidates, keys.size());
    std::partial_sort(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(l), keys.end());
    std::vector<parameter> out(l);
    for (std::size_t i = 0; i < l; ++i) out[i] = keys[i].second;
    return out;
  }

  // Caches the correlation of every candidate pair, summing the dot
  // products of the new ones over the members (one exchange, or none).
  template <class Data>
  void correlate(const context& ctx, const Data& data, const std::vector<parameter>& cand) {
    std::vector<std::uint64_t> wanted;
    for (std::size_t i = 0; i < cand.size(); ++i)
      for (std::size_t j = i + 1; j < cand.size(); ++j) {
        if (cand[i] == cand[j]) continue;
        const auto k = key(cand[i], cand[j]);
        if (!cache_.contains(k)) wanted.push_back(k);
      }
    if (wanted.empty()) return;
    if (cache_.size() + wanted.size() > options_.max_cached_pairs) cache_.clear();
    std::vector<double> dots(wanted.size());
    for (std::size_t i = 0; i < wanted.size(); ++i)
      dots[i] = static_cast<double>(data.local_dot(static_cast<parameter>(wanted[i] >> 32),
                                                   static_cast<parameter>(wanted[i] & 0xffffffffu)));
    ctx.sum(dots);
    pairs_computed_ += wanted.size();
    for (std::size_t i = 0; i < wanted.size(); ++i) {
      const double na = norm2_[wanted[i] >> 32], nb = norm2_[wanted[i] & 0xffffffffu];
      cache_[wanted[i]] = na > 0 && nb > 0 ? dots[i] / std::sqrt(na * nb) : 0.0;
    }
  }

  dyn_regr_options options_;
  std::size_t m_;
  std::vector<double> change2_;
  std::vector<char> touched_;
  std::vector<double> norm2_;  // summed over the members; empty until the first call
  std::unordered_map<std::uint64_t, double> cache_;
  std::uint64_t conflicts_ = 0, pairs_computed_ = 0;
};

}  // namespace schedule
DML_END_NAMESPACE

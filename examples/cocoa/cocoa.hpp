// SPDX-License-Identifier: BSL-1.0
// dml-cocoa's math: elastic-net regularized least squares, solved on its
// dual by stochastic dual coordinate ascent (SDCA), serially or as the
// local solver of CoCoA / CoCoA+. Nothing here communicates; main.cpp
// moves the changes through a dml::delta_vector.
//
// The problem, for C outputs solved side by side (one per class in
// one-vs-rest, or C = 1), each with its own weights w_c:
//
//     P(w) = 1/n sum_i sum_c 1/2 (x_i . w_c - y_ic)^2
//            + sum_c ( l2/2 |w_c|^2 + l1 |w_c|_1 ),
//     l2 = lambda (1 - l1_ratio) > 0,  l1 = lambda l1_ratio.
//
// With g(w) = 1/2 |w|^2 + kappa |w|_1 (kappa = l1 / l2; g is 1-strongly
// convex) the regularizer is l2 g(w), and the dual in a_ic (one per sample
// and output) is
//
//     D(a) = 1/n sum_ic (a_ic y_ic - a_ic^2 / 2) - l2/2 sum_c |soft(v_c, kappa)|^2,
//     v_c = 1/(l2 n) sum_i a_ic x_i,   w_c = soft(v_c, kappa)
//
// (soft: soft thresholding, the gradient of g's conjugate g*(v) =
// 1/2 |soft(v, kappa)|^2). Weak duality P(w) >= D(a) holds for every w and
// a: their difference, the duality gap, bounds how far P(w) is from the
// optimum.
//
// An SDCA step on sample i moves a_ic by
//
//     delta = (y_ic - x_i . soft(u_c, kappa) - a_ic) / (1 + s |x_i|^2 / (l2 n))
//
// and u_c by s delta x_i / (l2 n), where u is the v the step sees. The step
// maximizes the dual along a_ic exactly when kappa = 0 and a lower bound of
// it (g* is 1-smooth) otherwise, so the dual never decreases. Serially
// s = 1 and u = v. In CoCoA each member k runs such steps on its shard
// against u = v + s dv_k, with v the agreed state at the start of the
// round and dv_k its own change so far; then the members merge
// v += gamma sum_k dv_k and a_[k] += gamma da_[k]:
//  - gamma = 1/K, s = 1 (CoCoA, averaging): each member ascends D over its
//    own block, and D is concave, so the average of the K improved points
//    is no worse than the worst of them;
//  - gamma = 1, s = K (CoCoA+, adding): g* is convex, so
//    g*(v + sum_k dv_k) <= 1/K sum_k g*(v + K dv_k); the members' local
//    objectives (with s = K) add up to a lower bound of D that is exact at
//    dv = 0, and each member raising its own raises D.
// With one member both are the serial solver.
#pragma once

#include <dml/data/shard.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace cocoa {

/// Rows in compressed form (CSR), the last feature of every row a constant
/// 1 (the bias, regularized like the other weights).
struct rows {
  std::size_t n = 0, d = 0;        // samples; features including the bias
  std::vector<std::size_t> start;  // row i: entries [start[i], start[i + 1])
  std::vector<std::uint32_t> col;
  std::vector<double> val;
  std::vector<double> norm2;  // |x_i|^2

  /// Appends a row of (feature, value) pairs with features < d - 1, then
  /// the bias entry.
  template <class Pairs>
  void add(const Pairs& pairs) {
    if (start.empty()) start.push_back(0);
    double s = 1;
    for (const auto& [j, x] : pairs) {
      if (x == 0) continue;
      col.push_back(static_cast<std::uint32_t>(j));
      val.push_back(static_cast<double>(x));
      s += static_cast<double>(x) * static_cast<double>(x);
    }
    col.push_back(static_cast<std::uint32_t>(d - 1));
    val.push_back(1.0);
    start.push_back(col.size());
    norm2.push_back(s);
    ++n;
  }
};

/// Training data, targets and the regularizer.
struct problem {
  rows x;
  std::size_t outputs = 1;  // C
  std::vector<double> y;    // n x C, sample-major: y[i * C + c]
  double lambda = 1e-3, l1_ratio = 0.5;

  [[nodiscard]] double l2() const { return lambda * (1 - l1_ratio); }
  [[nodiscard]] double l1() const { return lambda * l1_ratio; }
  [[nodiscard]] double kappa() const { return l1_ratio / (1 - l1_ratio); }
  /// Weights and dual sums are d x C, feature-major: [j * C + c].
  [[nodiscard]] std::size_t width() const { return x.d * outputs; }
  /// Throws std::invalid_argument for a regularizer the dual cannot use.
  void validate() const {
    if (!(lambda > 0) || !std::isfinite(lambda))
      throw std::invalid_argument("lambda must be a finite number > 0");
    if (!(l1_ratio >= 0 && l1_ratio < 1))
      throw std::invalid_argument(
          "l1-ratio must be in [0, 1): the dual solver needs the L2 part (l1-ratio 1 is the pure Lasso; "
          "use 0.99, or dml-lasso)");
  }
};

[[nodiscard]] inline double soft(double v, double kappa) {
  return v > kappa ? v - kappa : v < -kappa ? v + kappa : 0.0;
}

/// w = soft(v, kappa), elementwise.
inline void weights_of(const problem& p, std::span<const double> v, std::vector<double>& w) {
  w.resize(v.size());
  const double k = p.kappa();
  for (std::size_t j = 0; j < v.size(); ++j) w[j] = soft(v[j], k);
}

/// x_i . w_c for every c into out (C values).
inline void predict(const rows& x, std::size_t outputs, std::span<const double> w, std::size_t i,
                    double* out) {
  for (std::size_t c = 0; c < outputs; ++c) out[c] = 0;
  for (std::size_t e = x.start[i]; e < x.start[i + 1]; ++e) {
    const double* wj = w.data() + std::size_t{x.col[e]} * outputs;
    for (std::size_t c = 0; c < outputs; ++c) out[c] += x.val[e] * wj[c];
  }
}

/// The primal objective P(w).
[[nodiscard]] inline double primal(const problem& p, std::span<const double> w) {
  const std::size_t C = p.outputs;
  std::vector<double> z(C);
  double loss = 0;
  for (std::size_t i = 0; i < p.x.n; ++i) {
    predict(p.x, C, w, i, z.data());
    for (std::size_t c = 0; c < C; ++c) loss += 0.5 * (z[c] - p.y[i * C + c]) * (z[c] - p.y[i * C + c]);
  }
  double sq = 0, abs = 0;
  for (const double wj : w) {
    sq += wj * wj;
    abs += std::fabs(wj);
  }
  return loss / static_cast<double>(p.x.n) + 0.5 * p.l2() * sq + p.l1() * abs;
}

/// The dual objective from its two sums: `linear` = sum_ic (a_ic y_ic -
/// a_ic^2 / 2) and v = 1/(l2 n) sum_i a_i x_i.
[[nodiscard]] inline double dual(const problem& p, double linear, std::span<const double> v) {
  const double k = p.kappa();
  double sq = 0;
  for (const double vj : v) sq += soft(vj, k) * soft(vj, k);
  return linear / static_cast<double>(p.x.n) - 0.5 * p.l2() * sq;
}

/// Adds the dual sums of the samples `mine` with duals `a` (|mine| x C):
/// linear += sum (a y - a^2/2), v += 1/(l2 n) sum a_i x_i.
inline void add_dual_sums(const problem& p, std::span<const std::size_t> mine, std::span<const double> a,
                          double& linear, std::span<double> v) {
  const std::size_t C = p.outputs;
  const double scale = 1 / (p.l2() * static_cast<double>(p.x.n));
  for (std::size_t s = 0; s < mine.size(); ++s) {
    const std::size_t i = mine[s];
    for (std::size_t c = 0; c < C; ++c)
      linear += a[s * C + c] * p.y[i * C + c] - 0.5 * a[s * C + c] * a[s * C + c];
    for (std::size_t e = p.x.start[i]; e < p.x.start[i + 1]; ++e)
      for (std::size_t c = 0; c < C; ++c)
        v[std::size_t{p.x.col[e]} * C + c] += scale * a[s * C + c] * p.x.val[e];
  }
}

/// The samples a member visits, in passes over its shard, each pass in a
/// fresh order (seeded by seed, member and pass): the serial solver and a
/// single member visit the same sequence.
class sampler {
 public:
  sampler(std::vector<std::size_t> shard, std::uint64_t seed, std::size_t member)
      : shard_(std::move(shard)), seed_(seed), member_(member) {}
  /// The position in the shard of the next sample.
  std::size_t next() {
    if (pos_ == order_.size()) {
      order_.resize(shard_.size());
      for (std::size_t s = 0; s < order_.size(); ++s) order_[s] = s;
      dml::data::shuffle(order_, seed_ + 1000003 * pass_++ + 7919 * member_);
      pos_ = 0;
    }
    return order_[pos_++];
  }
  [[nodiscard]] const std::vector<std::size_t>& shard() const noexcept { return shard_; }

 private:
  std::vector<std::size_t> shard_, order_;
  std::uint64_t seed_;
  std::size_t member_, pos_ = 0, pass_ = 0;
};

/// Member k's samples among K: a contiguous block of a permutation of the
/// n samples (the permutation of `seed`).
[[nodiscard]] inline std::vector<std::size_t> shard_of(std::size_t n, std::size_t k, std::size_t K,
                                                       std::uint64_t seed) {
  const std::vector<std::size_t> order = dml::data::permutation(n, seed);
  return {order.begin() + static_cast<std::ptrdiff_t>(k * n / K),
          order.begin() + static_cast<std::ptrdiff_t>((k + 1) * n / K)};
}

/// The local solver of one member: its samples' duals and H steps of SDCA
/// per round against the agreed v (see the file comment).
class local_solver {
 public:
  local_solver(const problem& p, std::vector<std::size_t> shard, std::uint64_t seed, std::size_t member)
      : p_(&p), sample_(std::move(shard), seed, member) {
    a_.assign(sample_.shard().size() * p.outputs, 0.0);
    da_ = a_;
    u_.resize(p.width());
  }

  /// H steps against the agreed `v` with factor `sigma` (s above). `local`
  /// holds v plus this member's changes not merged yet (pending: a quota
  /// held them back); the steps add their change of v to it and call
  /// touched(j) for every coordinate j they add to. They see
  /// u = v + sigma (local - v): the pending changes count as this member's
  /// own, whose duals already moved (else it would redo that work and
  /// overshoot); without a quota nothing is pending at the start of a
  /// round.
  template <class Touched>
  void solve(std::span<const double> v, double sigma, std::size_t H, std::span<double> local,
             Touched&& touched) {
    const problem& p = *p_;
    const rows& x = p.x;
    const std::size_t C = p.outputs;
    const double k = p.kappa(), scale = 1 / (p.l2() * static_cast<double>(x.n));
    u_.resize(v.size());
    for (std::size_t j = 0; j < v.size(); ++j)
      u_[j] = local[j] == v[j] ? v[j] : v[j] + sigma * (local[j] - v[j]);
    std::span<double> dv = local;
    std::vector<double> z(C), delta(C);
    for (std::size_t h = 0; h < H; ++h) {
      const std::size_t s = sample_.next(), i = sample_.shard()[s];
      for (std::size_t c = 0; c < C; ++c) z[c] = 0;
      for (std::size_t e = x.start[i]; e < x.start[i + 1]; ++e) {
        const double* uj = u_.data() + std::size_t{x.col[e]} * C;
        for (std::size_t c = 0; c < C; ++c) z[c] += x.val[e] * soft(uj[c], k);
      }
      const double denominator = 1 + sigma * x.norm2[i] * scale;
      for (std::size_t c = 0; c < C; ++c) {
        const double a = a_[s * C + c] + da_[s * C + c];
        delta[c] = (p.y[i * C + c] - z[c] - a) / denominator;
        da_[s * C + c] += delta[c];
      }
      for (std::size_t e = x.start[i]; e < x.start[i + 1]; ++e) {
        const std::size_t j = std::size_t{x.col[e]} * C;
        for (std::size_t c = 0; c < C; ++c) {
          const double step = delta[c] * x.val[e] * scale;
          u_[j + c] += sigma * step;
          dv[j + c] += step;
          touched(j + c);
        }
      }
    }
  }

  /// The merge's part for the duals: a += gamma da, da = 0.
  void commit(double gamma) {
    for (std::size_t q = 0; q < a_.size(); ++q) {
      a_[q] += gamma * da_[q];
      da_[q] = 0;
    }
  }

  [[nodiscard]] std::span<const std::size_t> shard() const noexcept { return sample_.shard(); }
  [[nodiscard]] std::span<const double> duals() const noexcept { return a_; }

 private:
  const problem* p_;
  sampler sample_;
  std::vector<double> a_, da_, u_;
};

/// Serial SDCA, written out without the CoCoA machinery: `rounds` times
/// H steps over all samples (the sequence a single member visits with
/// `seed`), v updated after every step. Returns v; `linear` gets the dual's
/// linear sum.
struct serial_result {
  std::vector<double> v;
  double linear = 0;
};
[[nodiscard]] inline serial_result serial_sdca(const problem& p, std::size_t rounds, std::size_t H,
                                               std::uint64_t seed) {
  const rows& x = p.x;
  const std::size_t C = p.outputs;
  const double k = p.kappa(), scale = 1 / (p.l2() * static_cast<double>(x.n));
  sampler sample(shard_of(x.n, 0, 1, seed), seed, 0);
  std::vector<double> v(p.width(), 0.0), a(x.n * C, 0.0), z(C);
  for (std::size_t step = 0; step < rounds * H; ++step) {
    const std::size_t s = sample.next(), i = sample.shard()[s];
    std::fill(z.begin(), z.end(), 0.0);
    for (std::size_t e = x.start[i]; e < x.start[i + 1]; ++e)
      for (std::size_t c = 0; c < C; ++c) z[c] += x.val[e] * soft(v[std::size_t{x.col[e]} * C + c], k);
    for (std::size_t c = 0; c < C; ++c) {
      const double delta = (p.y[i * C + c] - z[c] - a[s * C + c]) / (1 + x.norm2[i] * scale);
      a[s * C + c] += delta;
      for (std::size_t e = x.start[i]; e < x.start[i + 1]; ++e)
        v[std::size_t{x.col[e]} * C + c] += delta * x.val[e] * scale;
    }
  }
  serial_result r;
  r.v.assign(p.width(), 0.0);
  add_dual_sums(p, sample.shard(), a, r.linear, r.v);
  r.v = std::move(v);
  return r;
}

}  // namespace cocoa

// SPDX-License-Identifier: BSL-1.0
// Lasso by scheduled model-parallel coordinate descent (SMPFRAME §4.1,
// Algorithm 2), shared by dml-lasso, its generator and the tests:
//
//   minimize  0.5 * sum_i (y_i - x_i b)^2 + lambda * |b|_1       (SMPFRAME Eq. 4)
//
// Every member holds a share of the rows and a replica of b. An iteration
// updates a set J of coordinates, the same on every member
// (dml::schedule::dyn_regr): each member computes x_a^T r over its rows for
// a in J (r = y - X b, its residuals), the engine sums them over the
// members, and every member applies the soft-thresholded coordinate step
//
//   b_a <- S(x_a^T r + |x_a|^2 b_a, lambda) / |x_a|^2
//
// (Eq. 5 for columns of any length) and updates its residuals.
//
// The same program solves sparse logistic regression (loss::logistic):
//
//   minimize  sum_i log(1 + exp(-y_i x_i b)) + lambda * |b|_1,  y_i = +-1
//
// by coordinate descent on a quadratic upper bound. With margins z = X b
// and f(b) the loss, the derivative along coordinate a is
// g_a = -sum_i x_ia y_i sigma(-y_i z_i), and the second derivative
// sum_i x_ia^2 sigma(z_i) sigma(-z_i) is at most L_a = |x_a|^2 / 4 for
// every b. So f(b + d e_a) <= f(b) + g_a d + L_a d^2 / 2, and minimizing
// that bound plus lambda |b_a + d| gives
//
//   b_a <- S(L_a b_a - g_a, lambda) / L_a
//
// which never increases the objective (a majorize-minimize step). For the
// squared loss the same formula with L_a = |x_a|^2 and g_a = -x_a^T r is
// the exact step above. A proximal Newton step would use the exact second
// derivative instead of L_a: larger steps, but without a line search (one
// more exchange per iteration) the objective may rise. Members hold their
// rows' margins; each sends its part of g_a. Nothing here is dml API.
#pragma once

#include <dml/error.hpp>
#include <dml/random.hpp>
#include <dml/schedule.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <numeric>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace lasso {

using dml::schedule::parameter;

/// The loss of the data term.
enum class loss { squared, logistic };

inline const char* name(loss l) { return l == loss::squared ? "squared" : "logistic"; }

/// log(1 + exp(-m)) without overflow.
inline double logistic_loss(double m) {
  return m > 0 ? std::log1p(std::exp(-m)) : -m + std::log1p(std::exp(m));
}
/// sigma(-m) = 1 / (1 + exp(m)), without overflow.
inline double sigmoid_minus(double m) {
  if (m >= 0) {
    const double e = std::exp(-m);
    return e / (1 + e);
  }
  return 1 / (1 + std::exp(m));
}

/// Rows of a regression data set (compressed rows, double values).
struct dataset {
  std::size_t features = 0;
  std::vector<std::size_t> start{0};  // row i: entries start[i] .. start[i + 1]
  std::vector<parameter> column;
  std::vector<double> value;
  std::vector<double> y;

  [[nodiscard]] std::size_t rows() const noexcept { return y.size(); }
  void add_row(double label, std::span<const std::pair<parameter, double>> entries) {
    for (const auto& [c, v] : entries) {
      column.push_back(c);
      value.push_back(v);
      features = std::max<std::size_t>(features, std::size_t{c} + 1);
    }
    start.push_back(column.size());
    y.push_back(label);
  }
};

/// Logistic labels: +1 and -1 stay, 0 becomes -1; any other label is an
/// error (dml::config_error naming the first such row, from 1).
inline dataset logistic_labels(dataset d) {
  for (std::size_t i = 0; i < d.rows(); ++i) {
    if (d.y[i] == 0) d.y[i] = -1;
    if (d.y[i] != 1 && d.y[i] != -1) {
      char label[32];
      std::snprintf(label, sizeof label, "%g", d.y[i]);
      throw dml::config_error("lasso: --loss logistic needs labels +1/-1 or 1/0; row " +
                              std::to_string(i + 1) + " has " + label);
    }
  }
  return d;
}

/// 0.5 |y - X b|^2 + lambda |b|_1 (squared) or sum_i log(1 + exp(-y_i
/// x_i b)) + lambda |b|_1 (logistic) over the whole data set.
inline double objective(const dataset& d, std::span<const double> b, double lambda, loss l = loss::squared) {
  double data = 0;
  for (std::size_t i = 0; i < d.rows(); ++i) {
    double z = 0;
    for (std::size_t k = d.start[i]; k < d.start[i + 1]; ++k) z += d.value[k] * b[d.column[k]];
    if (l == loss::squared) {
      const double r = d.y[i] - z;
      data += 0.5 * r * r;
    } else {
      data += logistic_loss(d.y[i] * z);
    }
  }
  double l1 = 0;
  for (double v : b) l1 += std::abs(v);
  return data + lambda * l1;
}

/// The curvature bound's factor: L_a = factor * |x_a|^2.
inline double curvature(loss l) { return l == loss::squared ? 1.0 : 0.25; }

/// Row i's term of -g_a / x_ia: the residual (squared) or y sigma(-y z)
/// (logistic), from the row's state (residual or margin).
inline double pull(loss l, double y, double state) {
  return l == loss::squared ? state : y * sigmoid_minus(y * state);
}

inline double soft_threshold(double z, double lambda) {
  return z > lambda ? z - lambda : (z < -lambda ? z + lambda : 0.0);
}

/// The columns of a member's rows (compressed columns): what update() and
/// the dependency check read.
class columns {
 public:
  /// Rows i with i mod members == member (all rows for members == 1).
  columns(const dataset& d, std::size_t member, std::size_t members) : features_(d.features) {
    std::vector<std::size_t> mine;
    for (std::size_t i = member; i < d.rows(); i += members) mine.push_back(i);
    y_.reserve(mine.size());
    std::vector<std::size_t> count(features_ + 1, 0);
    for (std::size_t i : mine)
      for (std::size_t k = d.start[i]; k < d.start[i + 1]; ++k) ++count[d.column[k] + 1];
    std::partial_sum(count.begin(), count.end(), count.begin());
    start_ = count;
    row_.resize(start_.back());
    value_.resize(start_.back());
    std::vector<std::size_t> at(start_.begin(), start_.end() - 1);
    for (std::size_t local = 0; local < mine.size(); ++local) {
      const std::size_t i = mine[local];
      y_.push_back(d.y[i]);
      for (std::size_t k = d.start[i]; k < d.start[i + 1]; ++k) {
        const std::size_t p = at[d.column[k]]++;
        row_[p] = static_cast<std::uint32_t>(local);
        value_[p] = d.value[k];
      }
    }
  }

  [[nodiscard]] std::size_t features() const noexcept { return features_; }
  [[nodiscard]] std::size_t rows() const noexcept { return y_.size(); }
  [[nodiscard]] const std::vector<double>& y() const noexcept { return y_; }
  [[nodiscard]] std::size_t nonzeros(parameter a) const noexcept { return start_[a + 1] - start_[a]; }

  /// Calls f(local row, value) for column a's entries.
  template <class F>
  void for_each(parameter a, F&& f) const {
    for (std::size_t k = start_[a]; k < start_[a + 1]; ++k) f(row_[k], value_[k]);
  }

  // dml::schedule::column_data: over this member's rows.
  [[nodiscard]] double local_norm2(parameter a) const {
    double s = 0;
    for (std::size_t k = start_[a]; k < start_[a + 1]; ++k) s += value_[k] * value_[k];
    return s;
  }
  [[nodiscard]] double local_dot(parameter a, parameter b) const {
    std::size_t i = start_[a], j = start_[b];
    double s = 0;
    while (i < start_[a + 1] && j < start_[b + 1]) {
      if (row_[i] < row_[j]) {
        ++i;
      } else if (row_[j] < row_[i]) {
        ++j;
      } else {
        s += value_[i++] * value_[j++];
      }
    }
    return s;
  }

 private:
  std::size_t features_;
  std::vector<std::size_t> start_;
  std::vector<std::uint32_t> row_;
  std::vector<double> value_;
  std::vector<double> y_;
};

enum class schedule_kind { random, priority, smp };

inline const char* name(schedule_kind k) {
  return k == schedule_kind::random ? "random" : (k == schedule_kind::priority ? "priority" : "smp");
}

struct settings {
  loss kind = loss::squared;
  double lambda = 0.1;
  schedule_kind schedule = schedule_kind::smp;
  std::size_t set_size = 8;  // coordinates per iteration
  double tau = 0.2;
  double floor = 0.01;
  std::size_t report_every = 1;  // progress reports (an objective: one more exchange) every N iterations
  double target = 0;             // > 0: stop once the objective is at most this

  void validate() const {
    if (!(lambda >= 0) || !std::isfinite(lambda))
      throw dml::config_error("lasso: lambda must be a finite number >= 0, got " + std::to_string(lambda));
    if (set_size < 1) throw dml::config_error("lasso: the set size must be >= 1");
    if (report_every < 1) throw dml::config_error("lasso: report_every must be >= 1");
  }
  [[nodiscard]] dml::schedule::dyn_regr_options schedule_options() const {
    using dml::schedule::dyn_regr;
    auto o = schedule == schedule_kind::random     ? dyn_regr::random(set_size)
             : schedule == schedule_kind::priority ? dyn_regr::priority(set_size)
                                                   : dyn_regr::smp(set_size, tau);
    o.floor = floor;
    return o;
  }
};

/// One progress report (the same on every member).
struct report {
  std::uint64_t iteration = 0;  // iterations applied
  double objective = 0;
  std::uint64_t updates = 0;  // coordinate updates applied, all members' sets counted once
  std::uint64_t samples = 0;  // data samples processed: nonzeros of the updated columns, over all rows
  double seconds = 0;
};

/// The SMP program of one member (schedule, update, aggregate, progress).
class program {
 public:
  program(const dataset& d, std::size_t member, std::size_t members, settings s)
      : settings_((s.validate(), s)),
        data_(&d),
        cols_(check(d), member, members),
        schedule_(d.features, s.schedule_options()),
        beta_(d.features, 0.0),
        residual_(s.kind == loss::squared ? cols_.y() : std::vector<double>(cols_.rows(), 0.0)),
        start_(std::chrono::steady_clock::now()) {}

  /// Called with each report (on every member; print from one).
  std::function<void(const report&)> on_report;

  // dml::schedule::dynamic_program
  dml::schedule::job schedule(dml::schedule::context& ctx) {
    if (norm2_.empty()) prepare(ctx);
    return schedule_(ctx, cols_);
  }
  void update(const dml::schedule::step& s, std::span<double> out) {
    auto& used = stale_[s.iteration];
    used.resize(s.job.size());
    for (std::size_t k = 0; k < s.job.size(); ++k) {
      const parameter a = s.job[k];
      double dot = 0;
      const auto& y = cols_.y();
      if (settings_.kind == loss::squared)
        cols_.for_each(a, [&](std::uint32_t i, double v) { dot += v * residual_[i]; });
      else
        cols_.for_each(
            a, [&](std::uint32_t i, double v) { dot += v * pull(loss::logistic, y[i], residual_[i]); });
      out[k] = dot;  // -g_a over this member's rows
      used[k] = beta_[a];
    }
  }
  void aggregate(const dml::schedule::step& s, std::span<const double> total) {
    const auto it = stale_.find(s.iteration);
    for (std::size_t k = 0; k < s.job.size(); ++k) {
      const parameter a = s.job[k];
      if (!(norm2_[a] > 0)) continue;
      const double old = it->second[k];  // the value update() used (Eq. 3: the model of t - s)
      const double bound = curvature(settings_.kind) * norm2_[a];
      const double fresh = soft_threshold(total[k] + bound * old, settings_.lambda) / bound;
      const double change = fresh - old;
      schedule_.record(a, change);
      ++updates_;
      samples_ += nonzeros_[a];
      if (change == 0) continue;
      beta_[a] += change;
      if (settings_.kind == loss::squared)
        cols_.for_each(a, [&](std::uint32_t i, double v) { residual_[i] -= v * change; });
      else
        cols_.for_each(a, [&](std::uint32_t i, double v) { residual_[i] += v * change; });
    }
    stale_.erase(it);
    ++iterations_;
  }
  // dml::schedule::reshardable_program: after a member failed, this
  // member's rows are the member-th share of `members`; the residuals of
  // its new rows come from the model (the same on every survivor), the
  // values kept for iterations that will be computed again are dropped, and
  // so are the sums over the members (the schedule's and the column norms:
  // the next schedule() sums them again on every survivor).
  void reshard(std::size_t member, std::size_t members) {
    cols_ = columns(*data_, member, members);
    residual_ = settings_.kind == loss::squared ? cols_.y() : std::vector<double>(cols_.rows(), 0.0);
    const double sign = settings_.kind == loss::squared ? -1.0 : 1.0;  // as aggregate() moves them
    for (parameter a = 0; a < cols_.features(); ++a)
      if (beta_[a] != 0)
        cols_.for_each(a, [&](std::uint32_t i, double v) { residual_[i] += sign * v * beta_[a]; });
    stale_.clear();
    norm2_.clear();
    schedule_.forget_sums();
  }
  bool progress(dml::schedule::context& ctx) {
    if (iterations_ % settings_.report_every != 0) return true;
    const report r = current(ctx);  // collective: every survivor takes part, also in a repeated call
    // After a failure the engine may call progress() again for the same
    // iteration (dml/schedule/concepts.hpp): on_report sees it again, on
    // every member, and prints it once (the member that prints may be a
    // new one, whose own call had returned while another member printed).
    if (on_report) on_report(r);
    return !(settings_.target > 0 && r.objective <= settings_.target);
  }

  /// Collective: the objective over all members' rows, and the counters.
  report current(const dml::schedule::context& ctx) const {
    double data = 0;
    if (settings_.kind == loss::squared) {
      for (double r : residual_) data += 0.5 * r * r;
    } else {
      for (std::size_t i = 0; i < residual_.size(); ++i) data += logistic_loss(cols_.y()[i] * residual_[i]);
    }
    data = ctx.sum(data);
    double l1 = 0;
    for (double v : beta_) l1 += std::abs(v);
    return report{iterations_, data + settings_.lambda * l1, updates_, samples_,
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count()};
  }

  [[nodiscard]] const std::vector<double>& beta() const noexcept { return beta_; }
  [[nodiscard]] const dml::schedule::dyn_regr& scheduler() const noexcept { return schedule_; }
  [[nodiscard]] const columns& data() const noexcept { return cols_; }
  [[nodiscard]] std::uint64_t updates() const noexcept { return updates_; }
  [[nodiscard]] std::uint64_t samples() const noexcept { return samples_; }

 private:
  static const dataset& check(const dataset& d) {
    if (d.rows() == 0) throw dml::config_error("lasso: the data set has no rows");
    if (d.features == 0) throw dml::config_error("lasso: the data set has no features (every row is empty)");
    return d;
  }
  // First schedule() call: squared column norms and nonzeros over all rows.
  void prepare(const dml::schedule::context& ctx) {
    const std::size_t m = cols_.features();
    std::vector<double> both(2 * m);
    for (parameter a = 0; a < m; ++a) {
      both[a] = cols_.local_norm2(a);
      both[m + a] = static_cast<double>(cols_.nonzeros(a));
    }
    ctx.sum(both);
    norm2_.assign(both.begin(), both.begin() + static_cast<std::ptrdiff_t>(m));
    nonzeros_.resize(m);
    for (std::size_t a = 0; a < m; ++a) nonzeros_[a] = static_cast<std::uint64_t>(both[m + a]);
  }

  settings settings_;
  const dataset* data_;
  columns cols_;
  dml::schedule::dyn_regr schedule_;
  std::vector<double> beta_, residual_, norm2_;  // residual_: y - z (squared) or the margin z (logistic)
  std::vector<std::uint64_t> nonzeros_;
  std::unordered_map<std::uint64_t, std::vector<double>> stale_;  // iteration -> values update() used
  std::uint64_t iterations_ = 0, updates_ = 0, samples_ = 0;
  std::chrono::steady_clock::time_point start_;
};

/// The serial reference: cyclic coordinate descent over all rows (the
/// update above, one coordinate at a time) until no coordinate moves by
/// more than `tolerance` in a sweep (or `max_sweeps`).
struct serial_result {
  std::vector<double> beta;
  double objective = 0;
  std::size_t sweeps = 0;
};
inline serial_result serial_cd(const dataset& d, double lambda, double tolerance = 1e-12,
                               std::size_t max_sweeps = 100000, loss l = loss::squared) {
  if (!(lambda >= 0)) throw dml::config_error("lasso: lambda must be >= 0");
  const columns c(d, 0, 1);
  std::vector<double> beta(d.features, 0.0), norm2(d.features);
  std::vector<double> state = l == loss::squared ? c.y() : std::vector<double>(c.rows(), 0.0);
  const double sign = l == loss::squared ? -1.0 : 1.0;  // how a change moves the state
  for (parameter a = 0; a < d.features; ++a) norm2[a] = curvature(l) * c.local_norm2(a);
  serial_result out;
  for (; out.sweeps < max_sweeps;) {
    ++out.sweeps;
    double moved = 0;
    for (parameter a = 0; a < d.features; ++a) {
      if (!(norm2[a] > 0)) continue;
      double dot = 0;
      c.for_each(a, [&](std::uint32_t i, double v) { dot += v * pull(l, c.y()[i], state[i]); });
      const double fresh = soft_threshold(dot + norm2[a] * beta[a], lambda) / norm2[a];
      const double change = fresh - beta[a];
      if (change == 0) continue;
      beta[a] = fresh;
      c.for_each(a, [&](std::uint32_t i, double v) { state[i] += sign * v * change; });
      moved = std::max(moved, std::abs(change));
    }
    if (moved <= tolerance) break;
  }
  out.objective = objective(d, beta, lambda, l);
  out.beta = std::move(beta);
  return out;
}

/// lambda_max = max_a |x_a^T y| (squared) or max_a |x_a^T y| / 2
/// (logistic, y = +-1): the largest |g_a| at b = 0; from it on, b = 0 is
/// the solution.
inline double lambda_max(const dataset& d, loss l = loss::squared) {
  std::vector<double> g(d.features, 0.0);
  for (std::size_t i = 0; i < d.rows(); ++i)
    for (std::size_t k = d.start[i]; k < d.start[i + 1]; ++k) g[d.column[k]] += d.value[k] * d.y[i];
  double top = 0;
  for (double v : g) top = std::max(top, std::abs(v));
  return l == loss::squared ? top : 0.5 * top;
}

/// Generated data with block-correlated columns and a sparse planted truth
/// (dml-gen-lasso and the tests). Columns come in blocks of `block`; in
/// each row a block is present with probability `density`, and then its
/// columns are sqrt(rho) z + sqrt(1 - rho) e with z shared by the block
/// and e per column (standard normal): columns of a block correlate by
/// about rho, columns of different blocks by about 0. `support` planted
/// coefficients, +-(0.5 + U(0, 1)), sit on distinct random columns; y =
/// X b* + noise * N(0, 1). With loss::logistic the label is +1 with
/// probability sigma(x b*) and -1 otherwise (noise unused): the data of
/// sparse logistic regression, with the same columns. Everything is a
/// function of the seed.
struct generator_settings {
  loss kind = loss::squared;
  std::size_t rows = 2000, features = 1000, block = 20, support = 40;
  double rho = 0.8, density = 0.1, noise = 0.5;
  std::uint64_t seed = 1;

  void validate() const {
    if (rows < 1 || features < 1) throw dml::config_error("generator: rows and features must be >= 1");
    if (features > (std::size_t{1} << 26)) throw dml::config_error("generator: at most 2^26 features");
    if (block < 1 || block > features) throw dml::config_error("generator: block must be 1..features");
    if (support > features) throw dml::config_error("generator: support must be at most features");
    if (!(rho >= 0 && rho < 1)) throw dml::config_error("generator: rho must be in [0, 1)");
    if (!(density > 0 && density <= 1)) throw dml::config_error("generator: density must be in (0, 1]");
    if (!(noise >= 0) || !std::isfinite(noise)) throw dml::config_error("generator: noise must be >= 0");
  }
};

struct generated {
  dataset data;
  std::vector<double> truth;
};

inline generated generate(const generator_settings& s) {
  s.validate();
  dml::splitmix64 g(s.seed * 0x9e3779b97f4a7c15ULL + 0x1a55);
  const auto uniform = [&] { return (static_cast<double>(g() >> 11) + 0.5) * 0x1p-53; };
  const auto normal = [&] {
    const double u = uniform(), v = uniform();
    return std::sqrt(-2.0 * std::log(u)) * std::cos(6.283185307179586 * v);
  };
  generated out;
  out.truth.assign(s.features, 0.0);
  std::vector<parameter> cols(s.features);
  std::iota(cols.begin(), cols.end(), parameter{0});
  for (std::size_t k = 0; k < s.support; ++k) {  // partial Fisher-Yates: distinct columns
    const std::size_t j = k + static_cast<std::size_t>(uniform() * static_cast<double>(s.features - k));
    std::swap(cols[k], cols[std::min(j, s.features - 1)]);
    out.truth[cols[k]] = (uniform() < 0.5 ? -1.0 : 1.0) * (0.5 + uniform());
  }
  const double shared = std::sqrt(s.rho), own = std::sqrt(1 - s.rho);
  std::vector<std::pair<parameter, double>> row;
  for (std::size_t i = 0; i < s.rows; ++i) {
    row.clear();
    double y = 0;
    for (std::size_t first = 0; first < s.features; first += s.block) {
      if (uniform() >= s.density) continue;
      const double z = normal();
      for (std::size_t c = first; c < std::min(s.features, first + s.block); ++c) {
        const double v = shared * z + own * normal();
        row.emplace_back(static_cast<parameter>(c), v);
        y += v * out.truth[c];
      }
    }
    if (s.kind == loss::squared)
      out.data.add_row(y + s.noise * normal(), row);
    else
      out.data.add_row(uniform() < 1 - sigmoid_minus(y) ? 1.0 : -1.0, row);
  }
  out.data.features = s.features;
  return out;
}

}  // namespace lasso

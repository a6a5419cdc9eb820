// SPDX-License-Identifier: BSL-1.0
// The linear trainers' math (dml-svm-sgd, dml-logreg), written for both row
// storages the trainers read: dense rows (Fashion-MNIST, about half of the
// pixels nonzero: Eigen's dense kernels are fastest) and sparse rows
// (LIBSVM files of up to 2^26 features: every step costs the nonzeros of
// its samples, never the width). The two are overloads with the same
// meaning; examples/common/linear_test.cpp checks that they compute the
// same steps. Nothing here is dml API.
#pragma once

#include <Eigen/Core>
#include <Eigen/SparseCore>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <span>
#include <utility>
#include <vector>

namespace trainer {

/// Dense samples, one per row.
using matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
/// Sparse samples, one per row (what dml::data::read_libsvm returns).
using sparse_matrix = Eigen::SparseMatrix<float, Eigen::RowMajor>;

/// The rows `rows` of x, in that order.
inline matrix select_rows(const matrix& x, const std::vector<Eigen::Index>& rows) {
  return x(rows, Eigen::all);
}
/// The rows `rows` of x, in that order.
inline sparse_matrix select_rows(const sparse_matrix& x, const std::vector<Eigen::Index>& rows) {
  Eigen::Index nonzeros = 0;
  for (const Eigen::Index r : rows) nonzeros += x.outerIndexPtr()[r + 1] - x.outerIndexPtr()[r];
  sparse_matrix out(static_cast<Eigen::Index>(rows.size()), x.cols());
  out.reserve(nonzeros);
  for (std::size_t k = 0; k < rows.size(); ++k) {
    out.startVec(static_cast<Eigen::Index>(k));
    for (sparse_matrix::InnerIterator it(x, rows[k]); it; ++it)
      out.insertBack(static_cast<Eigen::Index>(k), it.index()) = it.value();
  }
  out.finalize();
  return out;
}

/// x_i . w (w has at least x.cols() elements).
inline float row_dot(const matrix& x, Eigen::Index i, const float* w) {
  return x.row(i).dot(Eigen::Map<const Eigen::RowVectorXf>(w, x.cols()));
}
inline float row_dot(const sparse_matrix& x, Eigen::Index i, const float* w) {
  float sum = 0;
  for (sparse_matrix::InnerIterator it(x, i); it; ++it) sum += it.value() * w[it.index()];
  return sum;
}

/// w += alpha x_i; returns how much |w|^2 changed (from each changed
/// element's old and new value, so a scaled model keeps its norm current in
/// O(nonzeros)).
inline double row_axpy(const matrix& x, Eigen::Index i, float alpha, float* w) {
  double change = 0;
  for (Eigen::Index j = 0; j < x.cols(); ++j) {
    const float old = w[j], now = old + alpha * x(i, j);
    change += static_cast<double>(now) * now - static_cast<double>(old) * old;
    w[j] = now;
  }
  return change;
}
inline double row_axpy(const sparse_matrix& x, Eigen::Index i, float alpha, float* w) {
  double change = 0;
  for (sparse_matrix::InnerIterator it(x, i); it; ++it) {
    float& e = w[it.index()];
    const float old = e, now = old + alpha * it.value();
    change += static_cast<double>(now) * now - static_cast<double>(old) * old;
    e = now;
  }
  return change;
}

// ------------------------------------------------------------------ SVM

/// A linear SVM in Bottou's scaled form: the weights are w = scale * v, so
/// the L2 shrink w *= 1 - eta lambda of every step multiplies one number
/// and a step costs the nonzeros of its sample. The bias (last element of
/// v) is neither scaled nor regularized. |v|^2 is kept current by the
/// steps, so |w| and the projection into a ball cost O(1) as well.
struct scaled_svm {
  Eigen::VectorXf v;  ///< [v; b]
  double scale = 1;
  double norm2 = 0;  ///< |v without the bias|^2

  explicit scaled_svm(Eigen::Index features) : v(Eigen::VectorXf::Zero(features + 1)) {}
  [[nodiscard]] Eigen::Index features() const noexcept { return v.size() - 1; }
  /// Makes scale 1, so that v is [w; b]: before the model leaves (the
  /// exchange, evaluation), and when the scale would get too small. O(width).
  void fold() {
    if (scale != 1) v.head(features()) *= static_cast<float>(scale);
    scale = 1;
    refresh_norm();
  }
  /// Recomputes |v|^2 exactly (after v was replaced, or to end drift). O(width).
  void refresh_norm() { norm2 = v.head(features()).template cast<double>().squaredNorm(); }
  /// Projects w into the ball |w| <= radius (Pegasos: the optimum lies in
  /// it for radius 1/sqrt(lambda)), by the scale alone. O(1).
  void project(double radius) {
    const double w2 = scale * scale * norm2;
    if (w2 > radius * radius) scale *= radius / std::sqrt(w2);
  }
};

/// One step of Bottou's svmsgd on sample i (label y = +-1) with step eta:
///     w *= 1 - eta lambda;  if y (w.x + b) < 1 (margin before the shrink):
///     w += eta y x, b += 0.01 eta y
/// in O(nonzeros of x_i) (O(width) once in a while, when the scale is
/// folded back into v).
template <class Rows>
void svm_step(scaled_svm& m, const Rows& x, Eigen::Index i, float y, float eta, float lambda) {
  const Eigen::Index d = m.features();
  const float score = static_cast<float>(m.scale) * row_dot(x, i, m.v.data()) + m.v[d];
  // The factor as a float model applies it (1 - 1e-6 rounds in float).
  const double shrink = 1.0f - eta * lambda;
  if (std::abs(m.scale * shrink) < 1e-6) {  // v would grow too large (or shrink is <= 0): fold now
    m.fold();
    m.v.head(d) *= static_cast<float>(shrink);
    m.refresh_norm();
  } else {
    m.scale *= shrink;
  }
  if (y * score < 1.0f) {
    m.norm2 += row_axpy(x, i, static_cast<float>(static_cast<double>(eta * y) / m.scale), m.v.data());
    m.v[d] += 0.01f * eta * y;  // svmsgd's smaller bias step
  }
}

/// The primal objective lambda/2 |w|^2 + mean hinge loss of m on the rows
/// `sample` of x (labels y).
template <class Rows>
double svm_objective(const scaled_svm& m, const Rows& x, const Eigen::VectorXf& y,
                     std::span<const std::size_t> sample, float lambda) {
  const Eigen::Index d = m.features();
  double hinge = 0;
  for (const std::size_t i : sample) {
    const auto r = static_cast<Eigen::Index>(i);
    const double margin = y[r] * (m.scale * row_dot(x, r, m.v.data()) + m.v[d]);
    hinge += std::max(0.0, 1.0 - margin);
  }
  const double norm2 = m.scale * m.scale * static_cast<double>(m.v.head(d).squaredNorm());
  return 0.5 * lambda * norm2 + (sample.empty() ? 0.0 : hinge / static_cast<double>(sample.size()));
}

/// The initial step eta_0 as Bottou's svmsgd chooses it: one pass over the
/// rows `sample` from w = 0 with a constant step eta, for eta = 1 and then
/// by factors of 2 in the direction in which the objective on the sample
/// falls, until it rises again; the best eta wins. Deterministic: every
/// member computing it on the same sample gets the same value. O(width)
/// per candidate (a fresh model), O(nonzeros of the sample) per pass.
template <class Rows>
float svm_calibrate_eta0(const Rows& x, const Eigen::VectorXf& y, std::span<const std::size_t> sample,
                         float lambda) {
  scaled_svm m(x.cols());
  auto cost = [&](float eta) {
    m.v.setZero();
    m.scale = 1;
    for (const std::size_t i : sample)
      svm_step(m, x, static_cast<Eigen::Index>(i), y[static_cast<Eigen::Index>(i)], eta, lambda);
    const double c = svm_objective(m, x, y, sample, lambda);
    return std::isfinite(c) ? c : std::numeric_limits<double>::infinity();
  };
  float best = 1.0f;
  double best_cost = cost(best);
  for (const float factor : {2.0f, 0.5f}) {
    bool moved = false;
    for (int k = 0; k < 30; ++k) {
      const float next = best * factor;
      const double c = cost(next);
      if (!(c < best_cost)) break;
      best = next;
      best_cost = c;
      moved = true;
    }
    if (moved) break;  // the objective fell upwards: no need to look down
  }
  return best;
}

/// Margins y_i (w.x_i + b) of every row, for a folded model [w; b].
template <class Rows>
Eigen::VectorXf svm_margins(const Eigen::VectorXf& model, const Rows& x, const Eigen::VectorXf& y) {
  const Eigen::Index d = x.cols();
  Eigen::VectorXf scores = x * model.head(d);
  return (scores.array() + model[d]) * y.array();
}

// ------------------------------------------------------------ softmax

/// Softmax-regression weights, (features + 1) x classes, row-major: row j
/// holds feature j's weight for every class, the last row the biases. A
/// sparse step then touches whole rows, one per nonzero feature.
using weights = Eigen::Map<Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;
using const_weights = Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;
/// Scores or probabilities, one row per sample.
using class_scores = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// Logits of every row of x.
template <class W>
void logits(const W& w, const matrix& x, class_scores& z) {
  const Eigen::Index d = x.cols();
  z.noalias() = x * w.topRows(d);
  z.rowwise() += w.row(d);
}
template <class W>
void logits(const W& w, const sparse_matrix& x, class_scores& z) {
  z.resize(x.rows(), w.cols());
  for (Eigen::Index i = 0; i < x.rows(); ++i) {
    z.row(i) = w.row(w.rows() - 1);
    for (sparse_matrix::InnerIterator it(x, i); it; ++it) z.row(i) += it.value() * w.row(it.index());
  }
}

/// Rowwise softmax of z, in place; returns the mean cross-entropy against
/// the labels y (y[i] for row i).
template <class Labels>
double softmax(class_scores& z, const Labels& y) {
  double loss = 0;
  for (Eigen::Index i = 0; i < z.rows(); ++i) {
    const float top = z.row(i).maxCoeff();
    z.row(i) = (z.row(i).array() - top).exp();
    const float sum = z.row(i).sum();
    z.row(i) /= sum;
    loss -= std::log(std::max(z(i, y[static_cast<std::size_t>(i)]), 1e-30f));
  }
  return z.rows() ? loss / static_cast<double>(z.rows()) : 0;
}

/// Mean cross-entropy and accuracy of w on the rows x with labels y.
template <class W, class Rows>
std::pair<double, double> softmax_evaluate(const W& w, const Rows& x, const std::vector<int>& y) {
  class_scores z;
  logits(w, x, z);
  std::size_t right = 0;
  for (Eigen::Index i = 0; i < z.rows(); ++i) {
    Eigen::Index best = 0;
    z.row(i).maxCoeff(&best);
    right += best == y[static_cast<std::size_t>(i)];
  }
  const double loss = softmax(z, y);
  return {loss, x.rows() ? static_cast<double>(right) / static_cast<double>(x.rows()) : 0};
}

/// One SGD step of softmax regression on the rows `batch` of x (labels y):
/// W -= lr / b * [X_b^T P; 1^T P], P = softmax(X_b W) - onehot(y_b).
/// Dense rows: Eigen's matrix products on a copy of the batch. Returns the
/// batch's mean cross-entropy before the step (online tuning's trace, the
/// adaptive controller's loss).
template <class W>
double softmax_step(W& w, const matrix& x, const std::vector<int>& y, std::span<const std::size_t> batch,
                    float lr, class_scores& p) {
  const matrix xb = x(std::vector<std::size_t>(batch.begin(), batch.end()), Eigen::all);
  std::vector<int> yb(batch.size());
  for (std::size_t k = 0; k < batch.size(); ++k) yb[k] = y[batch[k]];
  logits(w, xb, p);
  const double loss = softmax(p, yb);
  for (std::size_t k = 0; k < batch.size(); ++k) p(static_cast<Eigen::Index>(k), yb[k]) -= 1.0f;
  const float scale = lr / static_cast<float>(batch.size());
  const Eigen::Index d = xb.cols();
  w.topRows(d).noalias() -= scale * (xb.transpose() * p);
  w.row(d) -= scale * p.colwise().sum();
  return loss;
}

/// The same step for sparse rows: X_b W and X_b^T P visit only the rows of
/// W of the batch's nonzero features, so the step costs O(nonzeros x
/// classes) whatever the width.
template <class W>
double softmax_step(W& w, const sparse_matrix& x, const std::vector<int>& y,
                    std::span<const std::size_t> batch, float lr, class_scores& p) {
  const Eigen::Index d = w.rows() - 1;
  const auto b = static_cast<Eigen::Index>(batch.size());
  p.resize(b, w.cols());
  for (Eigen::Index k = 0; k < b; ++k) {
    p.row(k) = w.row(d);
    for (sparse_matrix::InnerIterator it(x, static_cast<Eigen::Index>(batch[k])); it; ++it)
      p.row(k) += it.value() * w.row(it.index());
  }
  std::vector<int> yb(batch.size());
  for (std::size_t k = 0; k < batch.size(); ++k) yb[k] = y[batch[k]];
  const double loss = softmax(p, yb);
  for (Eigen::Index k = 0; k < b; ++k) p(k, yb[static_cast<std::size_t>(k)]) -= 1.0f;
  const float scale = lr / static_cast<float>(batch.size());
  for (Eigen::Index k = 0; k < b; ++k)
    for (sparse_matrix::InnerIterator it(x, static_cast<Eigen::Index>(batch[k])); it; ++it)
      w.row(it.index()) -= (scale * it.value()) * p.row(k);
  w.row(d) -= scale * p.colwise().sum();
  return loss;
}

/// The mean squared length of the rows of x.
inline double mean_squared_norm(const matrix& x) {
  return x.rows() ? static_cast<double>(x.squaredNorm()) / static_cast<double>(x.rows()) : 0;
}
inline double mean_squared_norm(const sparse_matrix& x) {
  return x.rows() ? static_cast<double>(x.squaredNorm()) / static_cast<double>(x.rows()) : 0;
}

}  // namespace trainer

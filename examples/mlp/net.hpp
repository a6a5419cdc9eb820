// SPDX-License-Identifier: BSL-1.0
// dml-mlp's network: a 784-256-10 multilayer perceptron (ReLU, softmax),
// its initialization, forward pass, gradient and SGD step, shared by the
// training loops over distributed vectors (main.cpp) and over parameter
// tables (tables.hpp). Nothing here is distributed.
#pragma once

#include "../common/common.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <utility>
#include <vector>

namespace mlp {

using trainer::dataset;

constexpr int hidden = 256, classes = 10;

// One layer's parameters in one buffer: weights (fan_in x fan_out, column
// major), then biases.
struct layer {
  Eigen::Index in, out;
  std::vector<float> p;
  Eigen::Map<Eigen::MatrixXf> w() { return {p.data(), in, out}; }
  Eigen::Map<Eigen::RowVectorXf> b() { return {p.data() + in * out, out}; }
  [[nodiscard]] std::size_t size() const { return static_cast<std::size_t>((in + 1) * out); }
};

using net = std::array<layer, 2>;

net initial(Eigen::Index inputs, std::uint64_t seed) {  // He initialization, zero biases
  net n{layer{inputs, hidden, {}}, layer{hidden, classes, {}}};
  std::mt19937_64 rng(seed);
  for (auto& l : n) {
    l.p.assign(l.size(), 0.0f);
    std::normal_distribution<float> normal(0.0f, std::sqrt(2.0f / static_cast<float>(l.in)));
    for (Eigen::Index k = 0; k < l.in * l.out; ++k) l.p[static_cast<std::size_t>(k)] = normal(rng);
  }
  return n;
}

// Forward pass: hidden activations and class probabilities; returns the
// mean cross-entropy and sets `right` to the number of correct predictions.
template <class Labels>
double forward(net& n, const trainer::matrix& x, const Labels& y, Eigen::MatrixXf& h, Eigen::MatrixXf& p,
               std::size_t* right = nullptr) {
  h = ((x * n[0].w()).rowwise() + n[0].b()).cwiseMax(0.0f);
  p = (h * n[1].w()).rowwise() + n[1].b();
  double loss = 0;
  std::size_t ok = 0;
  for (Eigen::Index i = 0; i < p.rows(); ++i) {
    Eigen::Index best = 0;
    const float top = p.row(i).maxCoeff(&best);
    const int label = y[static_cast<std::size_t>(i)];
    ok += best == label;
    p.row(i) = (p.row(i).array() - top).exp();
    p.row(i) /= p.row(i).sum();
    loss -= std::log(std::max(p(i, label), 1e-30f));
  }
  if (right) *right = ok;
  return p.rows() ? loss / static_cast<double>(p.rows()) : 0;
}

// One SGD step of a layer's parameters p along the gradient g: plain when
// momentum is 0 (the default), else heavy ball with the velocity v:
// v = momentum v + g, p -= lr v.
void sgd(std::span<float> p, std::span<const float> g, std::span<float> v, float lr, float momentum) {
  if (momentum == 0) {
    for (std::size_t j = 0; j < p.size(); ++j) p[j] -= lr * g[j];
    return;
  }
  for (std::size_t j = 0; j < p.size(); ++j) {
    v[j] = momentum * v[j] + g[j];
    p[j] -= lr * v[j];
  }
}

// Step k of an epoch whose samples are taken per_step at a time: the
// sample ids, their labels and their rows of the data.
struct minibatch {
  std::vector<std::size_t> ids;
  std::vector<int> y;
  trainer::matrix x;

  void take(std::span<const std::size_t> samples, std::size_t k, std::size_t per_step, const dataset& data) {
    const auto first = samples.subspan(k * per_step, per_step);
    ids.assign(first.begin(), first.end());
    y.resize(per_step);
    for (std::size_t i = 0; i < per_step; ++i) y[i] = data.y[ids[i]];
    x = data.x(ids, Eigen::all);
  }
};

// Gradients of the mean loss over the batch, one buffer per layer, back to
// front: ready(l) runs as soon as layer l's gradient is in g[l] (the top
// layer's first), so that a caller can send it while the layers below are
// still computed (--params tables).
struct no_op {
  void operator()(std::size_t) const noexcept {}
};
template <class Ready = no_op>
void gradient(net& n, const trainer::matrix& xb, const std::vector<int>& yb, net& g, Ready&& ready = {}) {
  Eigen::MatrixXf h, p;
  forward(n, xb, yb, h, p);
  for (std::size_t i = 0; i < yb.size(); ++i) p(static_cast<Eigen::Index>(i), yb[i]) -= 1.0f;
  p /= static_cast<float>(yb.size());
  g[1].w().noalias() = h.transpose() * p;
  g[1].b() = p.colwise().sum();
  ready(std::size_t{1});
  const Eigen::MatrixXf dh =
      (p * n[1].w().transpose()).cwiseProduct((h.array() > 0.0f).cast<float>().matrix());
  g[0].w().noalias() = xb.transpose() * dh;
  g[0].b() = dh.colwise().sum();
  ready(std::size_t{0});
}

std::pair<double, double> evaluate(net& n, const dataset& d, Eigen::Index limit) {
  const Eigen::Index rows = std::min(limit, d.x.rows());
  const trainer::matrix x = d.x.topRows(rows);
  Eigen::MatrixXf h, p;
  std::size_t right = 0;
  const double loss = forward(n, x, d.y, h, p, &right);
  return {loss, static_cast<double>(right) / static_cast<double>(rows)};
}

}  // namespace mlp

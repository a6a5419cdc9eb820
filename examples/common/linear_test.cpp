// SPDX-License-Identifier: BSL-1.0
// The linear trainers' steps (linear.hpp) on sparse rows compute what they
// compute on the same data as dense rows; the scaled SVM step is the
// textbook one; and a sparse step writes only the weights of its sample's
// nonzero features.
#include "linear.hpp"

#include "support/catch.hpp"

#include <cmath>
#include <cstdint>
#include <vector>

namespace {

using trainer::matrix;
using trainer::sparse_matrix;

// Rows with about 60% zeros and values in (0, 1], deterministic.
matrix random_rows(Eigen::Index n, Eigen::Index d, std::uint64_t seed) {
  matrix x(n, d);
  for (Eigen::Index i = 0; i < n; ++i)
    for (Eigen::Index j = 0; j < d; ++j) {
      seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
      const auto r = static_cast<int>(seed >> 54);  // 0..1023
      x(i, j) = r < 614 ? 0.0f : static_cast<float>(r - 613) / 410.0f;
    }
  return x;
}

float max_abs_difference(const Eigen::MatrixXf& a, const Eigen::MatrixXf& b) {
  return (a - b).cwiseAbs().maxCoeff();
}

}  // namespace

TEST_CASE("svm steps on sparse rows give the model they give on dense rows") {
  const matrix dense = random_rows(300, 50, 1);
  const sparse_matrix sparse = dense.sparseView();
  REQUIRE(sparse.nonZeros() < dense.size() / 2);
  Eigen::VectorXf y(300);
  for (Eigen::Index i = 0; i < 300; ++i) y[i] = dense.row(i).sum() > 8 ? 1.0f : -1.0f;
  trainer::scaled_svm a(50), b(50);
  const float lambda = 1e-2f;
  for (int t = 0; t < 900; ++t) {
    const Eigen::Index i = (t * 7) % 300;
    const float eta = 1.0f / (lambda * (static_cast<float>(t) + 100.0f));
    trainer::svm_step(a, dense, i, y[i], eta, lambda);
    trainer::svm_step(b, sparse, i, y[i], eta, lambda);
  }
  REQUIRE(a.scale == b.scale);  // the same multiplications
  REQUIRE(a.scale < 0.5);       // the scale did the shrinking
  REQUIRE(max_abs_difference(a.v, b.v) <= 1e-5f * a.v.cwiseAbs().maxCoeff());
}

TEST_CASE("the scaled svm step is the textbook step: shrink w, then add eta y x below the margin") {
  const matrix x = random_rows(200, 40, 2);
  Eigen::VectorXf y(200);
  for (Eigen::Index i = 0; i < 200; ++i) y[i] = x(i, 3) + x(i, 7) > x(i, 11) + 0.3f ? 1.0f : -1.0f;
  trainer::scaled_svm scaled(40);
  Eigen::VectorXf w = Eigen::VectorXf::Zero(41);  // [w; b], the unscaled textbook model
  const float lambda = 1e-2f;
  int below_margin = 0;
  for (int t = 0; t < 600; ++t) {
    const Eigen::Index i = (t * 13) % 200;
    const float eta = 1.0f / (lambda * (static_cast<float>(t) + 50.0f));
    const float score = x.row(i).dot(w.head(40)) + w[40];
    w.head(40) *= 1.0f - eta * lambda;
    if (y[i] * score < 1.0f) {
      w.head(40) += (eta * y[i]) * x.row(i).transpose();
      w[40] += 0.01f * eta * y[i];
      ++below_margin;
    }
    trainer::svm_step(scaled, x, i, y[i], eta, lambda);
  }
  REQUIRE(below_margin > 50);  // the update branch was exercised
  scaled.fold();
  REQUIRE(scaled.scale == 1);
  REQUIRE(max_abs_difference(scaled.v, w) <= 1e-4f * w.cwiseAbs().maxCoeff());
}

TEST_CASE("the scaled svm keeps |v|^2 current and projects into a ball by its scale") {
  const matrix dense = random_rows(100, 30, 5);
  const sparse_matrix sparse = dense.sparseView();
  trainer::scaled_svm m(30);
  for (int t = 0; t < 300; ++t) {
    const Eigen::Index i = (t * 11) % 100;
    trainer::svm_step(m, sparse, i, (i % 3) ? 1.0f : -1.0f, 1.0f / (1e-2f * (static_cast<float>(t) + 20.0f)),
                      1e-2f);
  }
  const double exact = m.v.head(30).cast<double>().squaredNorm();
  REQUIRE(m.norm2 > 0);
  REQUIRE(std::abs(m.norm2 - exact) <= 1e-9 * exact);
  const Eigen::VectorXf v = m.v;
  const double radius = 0.5 * m.scale * std::sqrt(exact);  // half of |w|: the projection must act
  m.project(radius);
  REQUIRE(m.v == v);  // only the scale changed
  REQUIRE(std::abs(m.scale * std::sqrt(m.norm2) - radius) <= 1e-12 * radius);
  const double scale = m.scale;
  m.project(2 * radius);  // inside the ball: nothing to do
  REQUIRE(m.scale == scale);
}

TEST_CASE("an svm step on a sparse row writes only its nonzero features and the bias") {
  const Eigen::Index d = Eigen::Index{1} << 20;
  sparse_matrix x(1, d);
  x.insert(0, 5) = 0.5f;
  x.insert(0, 70000) = -1.0f;
  x.insert(0, d - 1) = 2.0f;
  x.makeCompressed();
  trainer::scaled_svm m(d);
  m.v.setConstant(0.25f);
  const Eigen::VectorXf before = m.v;
  trainer::svm_step(m, x, 0, 1.0f, 0.1f, 1e-3f);  // margin 0.25 * (0.5 - 1 + 2) + 0.25 < 1: an update
  Eigen::Index changed = 0;
  for (Eigen::Index j = 0; j <= d; ++j) changed += m.v[j] != before[j];
  REQUIRE(changed == 4);  // three weights and the bias
  REQUIRE(m.v[5] != before[5]);
  REQUIRE(m.v[d] != before[d]);
  REQUIRE(m.scale < 1);
}

TEST_CASE("softmax steps on sparse rows match the dense matrix products") {
  const matrix dense = random_rows(96, 30, 3);
  const sparse_matrix sparse = dense.sparseView();
  std::vector<int> y(96);
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = static_cast<int>(i * 7 % 4);
  std::vector<float> a(31 * 4), b;
  for (std::size_t k = 0; k < a.size(); ++k) a[k] = 0.01f * static_cast<float>(k % 11) - 0.05f;
  b = a;
  trainer::weights wa(a.data(), 31, 4), wb(b.data(), 31, 4);
  trainer::class_scores scratch;
  for (int step = 0; step < 12; ++step) {
    std::vector<std::size_t> batch;
    for (std::size_t k = 0; k < 16; ++k) batch.push_back((static_cast<std::size_t>(step) * 16 + k * 5) % 96);
    trainer::softmax_step(wa, dense, y, batch, 0.5f, scratch);
    trainer::softmax_step(wb, sparse, y, batch, 0.5f, scratch);
  }
  REQUIRE(max_abs_difference(wa, wb) <= 1e-5f * wa.cwiseAbs().maxCoeff());
  REQUIRE(max_abs_difference(wa, trainer::weights(std::vector<float>(a.size(), 0.0f).data(), 31, 4)) > 0.01f);
  const auto [loss_dense, accuracy_dense] = trainer::softmax_evaluate(wa, dense, y);
  const auto [loss_sparse, accuracy_sparse] = trainer::softmax_evaluate(wa, sparse, y);
  REQUIRE(std::abs(loss_dense - loss_sparse) <= 1e-5 * loss_dense);
  REQUIRE(accuracy_dense == accuracy_sparse);
}

TEST_CASE("a sparse softmax step writes only the model rows of the batch's features and the biases") {
  const Eigen::Index d = Eigen::Index{1} << 20, classes = 3;
  sparse_matrix x(2, d);
  x.insert(0, 17) = 1.0f;
  x.insert(0, 900000) = 0.5f;
  x.insert(1, 17) = -0.25f;
  x.insert(1, 4242) = 2.0f;
  x.makeCompressed();
  std::vector<float> storage(static_cast<std::size_t>((d + 1) * classes), 0.0f), before;
  before = storage;
  trainer::weights w(storage.data(), d + 1, classes);
  trainer::class_scores scratch;
  const std::vector<std::size_t> batch{0, 1};
  trainer::softmax_step(w, x, std::vector<int>{2, 0}, batch, 1.0f, scratch);
  std::vector<Eigen::Index> rows_changed;
  for (Eigen::Index r = 0; r <= d; ++r)
    for (Eigen::Index c = 0; c < classes; ++c)
      if (storage[static_cast<std::size_t>(r * classes + c)] !=
          before[static_cast<std::size_t>(r * classes + c)]) {
        rows_changed.push_back(r);
        break;
      }
  REQUIRE(rows_changed == std::vector<Eigen::Index>{17, 4242, 900000, d});
}

TEST_CASE("select_rows and mean_squared_norm agree on dense and sparse rows") {
  const matrix dense = random_rows(20, 9, 4);
  const sparse_matrix sparse = dense.sparseView();
  const std::vector<Eigen::Index> rows{7, 2, 2, 19};
  const matrix a = trainer::select_rows(dense, rows);
  const matrix b = matrix(trainer::select_rows(sparse, rows));
  REQUIRE(a == b);
  REQUIRE(std::abs(trainer::mean_squared_norm(dense) - trainer::mean_squared_norm(sparse)) <=
          1e-6 * trainer::mean_squared_norm(dense));
}

// SPDX-License-Identifier: BSL-1.0
// porting-serial: a small serial trainer of the kind docs/porting.md starts
// from -- a linear SVM (hinge loss, L2 regularization) trained by plain SGD
// on sparse LIBSVM data, written the way classic single-file SGD codes
// are: its own data reader, the weights kept as w = scale * v so that the
// shrinking of every step costs one multiplication, a start-up search for
// the initial step size, its own timer and its own output. It uses no dml
// at all; examples/porting/parallel.cpp is its data-parallel port, and the
// guide shows the diff between the two files.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <numeric>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {

// ---- data: LIBSVM text, "label index:value ...", indices from 1 ----------

struct sparse_row {
  std::vector<std::pair<std::size_t, double>> entries;  // (feature, value)
};

struct data_set {
  std::vector<sparse_row> x;
  std::vector<double> y;  // +1 or -1
  std::size_t features = 0;
};

data_set read_libsvm(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open the file");
  data_set d;
  std::string line;
  for (std::size_t number = 1; std::getline(in, line); ++number) {
    std::istringstream fields(line);
    double label = 0;
    if (!(fields >> label)) {
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;  // an empty line
      throw std::runtime_error(path + ":" + std::to_string(number) +
                               ": the line does not start with a label");
    }
    sparse_row row;
    std::string item;
    while (fields >> item) {
      char* end = nullptr;
      const unsigned long index = std::strtoul(item.c_str(), &end, 10);
      const bool colon = *end == ':';
      const double value = colon ? std::strtod(end + 1, &end) : 0;
      if (!colon || *end != '\0' || index == 0 || index > (1ul << 26) || !std::isfinite(value))
        throw std::runtime_error(path + ":" + std::to_string(number) + ": bad item '" + item +
                                 "' (index:value, indices 1 to 2^26)");
      row.entries.emplace_back(index - 1, value);
      d.features = std::max<std::size_t>(d.features, index);
    }
    d.x.push_back(std::move(row));
    d.y.push_back(label > 0 ? 1.0 : -1.0);
  }
  return d;
}

// ---- the model: w = scale * v, plus a bias --------------------------------

struct svm {
  std::vector<double> v;
  double scale = 1, bias = 0;

  explicit svm(std::size_t features) : v(features, 0.0) {}
  [[nodiscard]] double score(const sparse_row& x) const {
    double s = 0;
    for (const auto& [i, value] : x.entries)
      if (i < v.size()) s += v[i] * value;
    return scale * s + bias;
  }
  void add(const sparse_row& x, double g) {  // w += g x
    for (const auto& [i, value] : x.entries) v[i] += g / scale * value;
  }
  void renorm() {  // folds the scale into the weights
    for (double& e : v) e *= scale;
    scale = 1;
  }
  [[nodiscard]] double squared_norm() const {
    double s = 0;
    for (double e : v) s += e * e;
    return scale * scale * s;
  }
};

// One SGD step on sample (x, y) with step eta: the gradient of
// lambda/2 |w|^2 + max(0, 1 - y (w.x + b)).
void step(svm& w, const sparse_row& x, double y, double eta, double lambda) {
  const double margin = y * w.score(x);
  w.scale *= 1 - eta * lambda;
  if (w.scale < 1e-9) w.renorm();  // keep v in range
  if (margin < 1) {
    w.add(x, eta * y);
    w.bias += 0.01 * eta * y;  // a smaller step for the unregularized bias
  }
}

// Objective (regularization plus mean hinge loss) and accuracy on d.
std::pair<double, double> evaluate(const svm& w, const data_set& d, double lambda) {
  double loss = 0, right = 0;
  for (std::size_t i = 0; i < d.x.size(); ++i) {
    const double margin = d.y[i] * w.score(d.x[i]);
    loss += std::max(0.0, 1 - margin);
    right += margin > 0 ? 1 : 0;
  }
  const double n = static_cast<double>(d.x.size());
  return {0.5 * lambda * w.squared_norm() + loss / n, right / n};
}

// The initial step: the power of two whose constant step lowers the
// objective most in one pass over the first `count` samples.
double initial_step(const data_set& d, double lambda, std::size_t count) {
  count = std::min(count, d.x.size());
  data_set part;
  part.x.assign(d.x.begin(), d.x.begin() + static_cast<std::ptrdiff_t>(count));
  part.y.assign(d.y.begin(), d.y.begin() + static_cast<std::ptrdiff_t>(count));
  auto cost = [&](double eta) {
    svm w(d.features);
    for (std::size_t i = 0; i < count; ++i) step(w, part.x[i], part.y[i], eta, lambda);
    return evaluate(w, part, lambda).first;
  };
  double eta = 1, best = cost(eta);
  const double direction = cost(2 * eta) < best ? 2 : 0.5;  // search upwards or downwards
  for (double next = cost(eta * direction); next < best; next = cost(eta * direction)) {
    eta *= direction;
    best = next;
  }
  return eta;
}

// ---- timer: processor time, as many classic codes measure it -------------

class timer {
 public:
  void start() { began_ = std::clock(); }
  void stop() { total_ += static_cast<double>(std::clock() - began_) / CLOCKS_PER_SEC; }
  [[nodiscard]] double seconds() const { return total_; }

 private:
  std::clock_t began_ = 0;
  double total_ = 0;
};

struct options {
  std::size_t epochs = 5;
  double lambda = 1e-4;
  unsigned seed = 1;
};

// The training loop: epochs of SGD over the shuffled samples.
void train_svm(const data_set& train, const data_set& test, const options& o) {
  const double lambda = o.lambda;
  const std::size_t features = std::max(train.features, test.features);
  const double eta0 = initial_step(train, lambda, 1000);
  std::printf("porting-serial: %zu training / %zu test samples, %zu features, lambda %g, eta0 %g\n",
              train.x.size(), test.x.size(), features, lambda, eta0);

  svm w(features);
  std::vector<std::size_t> order(train.x.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::mt19937 rng(o.seed);
  double t = 0;  // steps so far
  timer clock;
  for (std::size_t epoch = 1; epoch <= o.epochs; ++epoch) {
    clock.start();
    std::shuffle(order.begin(), order.end(), rng);
    for (std::size_t i : order) {
      const double eta = eta0 / (1 + lambda * eta0 * t++);
      step(w, train.x[i], train.y[i], eta, lambda);
    }
    w.renorm();
    clock.stop();
    const double loss = evaluate(w, train, lambda).first, accuracy = evaluate(w, test, lambda).second;
    std::printf("epoch %zu: loss %.6f accuracy %.4f (%.3f s)\n", epoch, loss, accuracy, clock.seconds());
  }
  const double loss = evaluate(w, train, lambda).first, accuracy = evaluate(w, test, lambda).second;
  std::printf("final: accuracy=%.4f loss=%.6f seconds=%.3f\n", accuracy, loss, clock.seconds());
}

}  // namespace

int main(int argc, char** argv) {
  std::string train_file, test_file;
  options o;
  CLI::App app{"Trains a linear SVM by SGD on sparse LIBSVM data (labels -1/+1).", "porting-serial"};
  app.add_option("train", train_file, "training file (LIBSVM)")->required();
  app.add_option("test", test_file, "test file (LIBSVM)")->required();
  app.add_option("--epochs", o.epochs, "passes over the training data")->capture_default_str();
  app.add_option("--lambda", o.lambda, "regularization")->capture_default_str();
  app.add_option("--seed", o.seed, "shuffle seed")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  try {
    const data_set train = read_libsvm(train_file), test = read_libsvm(test_file);
    train_svm(train, test, o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "porting-serial: %s\n", e.what());
    return 1;
  }
}

// SPDX-License-Identifier: BSL-1.0
// porting-parallel: examples/porting/serial.cpp made data parallel with
// dml, as docs/porting.md walks through it. The members (threads of this
// process, or MPI processes) each train on their shard of the samples and
// average their models a fixed number of times per epoch. The changes are
// marked [1]..[9]; everything else is the serial code unchanged, and with
// one member the port prints what the serial trainer prints.
#include <CLI/CLI.hpp>
#include <dml/data/shard.hpp>
#include <dml/dml.hpp>  // [1] dml: transports, vectors, broadcast, io
#if DML_EXAMPLES_MPI
#include <dml/comm/mpi_rma.hpp>
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <span>
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

// ---- timer: wall time [7]; std::clock() would add up the processor time of
// every thread of the process, every in-process member's --------------------

class timer {
 public:
  void start() { began_ = std::chrono::steady_clock::now(); }
  void stop() { total_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - began_).count(); }
  [[nodiscard]] double seconds() const { return total_; }

 private:
  std::chrono::steady_clock::time_point began_;
  double total_ = 0;
};

struct options {
  std::size_t epochs = 5, exchange_every = 0;
  double lambda = 1e-4;
  unsigned seed = 1;
};

// [9] What the processes of an MPI run compare before they train: every
// value they read, in order.
std::uint64_t fingerprint_of(const data_set& train, const data_set& test) {
  dml::io::fingerprint f;
  for (const data_set* d : {&train, &test}) {
    f.add(d->features);
    f.add_span(std::span<const double>(d->y));
    for (const sparse_row& row : d->x) {
      f.add(row.entries.size());
      for (const auto& [feature, value] : row.entries) {
        f.add(feature);
        f.add(value);
      }
    }
  }
  return f.value();
}

// The training loop: epochs of SGD over the shuffled samples, run by every
// member with its transport context [1].
template <class Comm>
void train_svm(Comm& comm, const data_set& train, const data_set& test, const options& o) {
  const double lambda = o.lambda;
  const std::size_t features = std::max(train.features, test.features);
  double eta0 = 0;  // [3] searched for once, on member 0, and sent to every member
  if (comm.rank() == 0) eta0 = initial_step(train, lambda, 1000);
  dml::broadcast(comm, eta0, 0);
  dml::io::print(
      comm,
      "porting-parallel: members %zu, %zu training / %zu test samples, %zu features, lambda %g, eta0 %g",
      comm.size(), train.x.size(), test.x.size(), features, lambda, eta0);  // [8] from one member

  svm w(features);
  auto shared = dml::make_vector<double>(comm, features + 1);  // [5] [w, b], averaged over all members
  // [2] This member's shard of the samples; [4] shuffled with its own seed.
  std::vector<std::size_t> order =
      dml::data::shard::among(comm.view().live, comm.rank()).indices(train.x.size());
  std::mt19937 rng(o.seed + static_cast<unsigned>(comm.rank()));
  // [6] Exchanges per epoch: the same number on every member (bsp needs
  // it), from the global sample count, whatever this member's shard size.
  const std::size_t exchanges =
      o.exchange_every == 0 ? 1 : std::max<std::size_t>(1, train.x.size() / (comm.size() * o.exchange_every));
  double t = 0;  // steps so far
  timer clock;
  for (std::size_t epoch = 1; epoch <= o.epochs; ++epoch) {
    clock.start();
    std::shuffle(order.begin(), order.end(), rng);
    for (std::size_t k = 0; k < exchanges; ++k) {
      for (std::size_t j = k * order.size() / exchanges; j < (k + 1) * order.size() / exchanges; ++j) {
        const std::size_t i = order[j];
        const double eta = eta0 / (1 + lambda * eta0 * t++);
        step(w, train.x[i], train.y[i], eta, lambda);
      }
      w.renorm();  // [6] the vector carries w, not v: the scale is folded in first
      auto mine = shared.span();
      std::copy(w.v.begin(), w.v.end(), mine.begin());
      mine[features] = w.bias;
      shared.scatter();
      shared.gather();
      std::copy(mine.begin(), mine.end() - 1, w.v.begin());
      w.bias = mine[features];
    }
    clock.stop();
    if (dml::io::leader(comm)) {  // [8] the members hold the same model now: one evaluates and prints
      const double loss = evaluate(w, train, lambda).first, accuracy = evaluate(w, test, lambda).second;
      dml::io::print(comm, "epoch %zu: loss %.6f accuracy %.4f (%.3f s)", epoch, loss, accuracy,
                     clock.seconds());
    }
  }
  if (dml::io::leader(comm)) {
    const double loss = evaluate(w, train, lambda).first, accuracy = evaluate(w, test, lambda).second;
    dml::io::print(comm, "final: accuracy=%.4f loss=%.6f seconds=%.3f", accuracy, loss, clock.seconds());
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string train_file, test_file, transport = "inproc";
  std::size_t ranks = 4;
  options o;
  CLI::App app{"Trains a linear SVM by SGD on sparse LIBSVM data (labels -1/+1), data parallel.",
               "porting-parallel"};
  app.add_option("train", train_file, "training file (LIBSVM)")->required();
  app.add_option("test", test_file, "test file (LIBSVM)")->required();
  app.add_option("--epochs", o.epochs, "passes over the training data")->capture_default_str();
  app.add_option("--lambda", o.lambda, "regularization")->capture_default_str();
  app.add_option("--seed", o.seed, "shuffle seed (member m uses seed + m)")->capture_default_str();
  app.add_option("--ranks", ranks, "in-process members (threads)")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  app.add_option("--transport", transport, "inproc, or mpi_rma under mpiexec")
      ->capture_default_str()
      ->check(CLI::IsMember({"inproc", "mpi_rma"}));
  app.add_option("--exchange-every", o.exchange_every,
                 "samples per member between model averages; 0: once per epoch")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  try {
    const data_set train = read_libsvm(train_file), test = read_libsvm(test_file);
#if DML_EXAMPLES_MPI
    if (transport == "mpi_rma") {  // [1] one member per MPI process
      dml::comm::mpi_rma comm(argc, argv);
      // [9] Every process read the files itself: all must have read the same.
      dml::io::input_report read;
      read.fingerprint = fingerprint_of(train, test);
      read.summary =
          std::to_string(train.x.size()) + " training / " + std::to_string(test.x.size()) + " test samples";
      try {
        dml::io::agree_on_input(comm, read, "the data");
      } catch (const dml::io::input_error& e) {  // the same on every process: one prints it
        if (e.reporter()) std::fprintf(stderr, "porting-parallel: %s\n", e.what());
        comm.barrier();  // the first process to exit with an error ends the job: the others wait
        return 1;
      }
      train_svm(comm, train, test, o);
      return 0;
    }
#endif
    if (transport != "inproc")
      throw std::runtime_error("--transport " + transport + " needs a build with MPI");
    dml::comm::inproc::run(ranks,
                           [&](auto& comm) { train_svm(comm, train, test, o); });  // [1] members as threads
  } catch (const std::exception& e) {
    std::fprintf(stderr, "porting-parallel: %s\n", e.what());
    return 1;
  }
}

// SPDX-License-Identifier: BSL-1.0
// dml-logreg: multinomial logistic (softmax) regression by minibatch SGD,
// data parallel over ranks (threads, or MPI processes) that average their
// models.
//
// From a serial trainer to this one. The serial loop is
//
//     W = 0;                                        // (features + 1) x classes
//     for (epoch) for (each minibatch B of b rows, shuffled)
//       W -= lr * gradient(W, B);                   // softmax cross-entropy
//
// and the data-parallel version differs in five places, marked [1]..[5]
// below (about 30 changed lines; argument parsing, loading and reporting
// live in examples/common/common.hpp and would be there in a serial
// trainer too):
//  [1] main() starts the ranks -- R threads with dml::comm::inproc::run, or
//      one per MPI process (trainer::launcher picks) -- and the loop moves
//      into a function of the rank's transport context;
//  [2] each rank takes its shard of the (once shuffled) training set among
//      the live members (trainer::epoch_samples, dml::data::shard::among) --
//      together the ranks use every sample once per epoch, and after a
//      failure the survivors take over the dead member's samples;
//  [3] the model gets a distributed vector: make_vector<float>(comm, size,
//      topology, consistency, dml::gather::average{});
//  [4] after each local step: copy W into it, scatter(), gather(), copy the
//      average back (model averaging: it keeps the replicas together under
//      every topology and consistency policy, which averaging gradients
//      does not -- see examples/least_squares);
//  [5] reporting averages the replicas once per epoch.
#include "../common/common.hpp"

#include <Eigen/Core>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using trainer::dataset;
using trainer::settings;

constexpr int classes = 10;

// The model: column c holds class c's weights, the last row the biases.
using model = Eigen::Map<Eigen::MatrixXf>;
using const_model = Eigen::Map<const Eigen::MatrixXf>;

template <class Model>
Eigen::MatrixXf logits(const Model& w, const trainer::matrix& x) {
  const Eigen::Index d = x.cols();
  return (x * w.topRows(d)).rowwise() + w.row(d);
}

// Rowwise softmax, in place; returns the mean cross-entropy against y.
template <class Labels>
double softmax(Eigen::MatrixXf& z, const Labels& y) {
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

// Mean loss and accuracy of w on a data set.
std::pair<double, double> evaluate(const const_model& w, const dataset& d) {
  Eigen::MatrixXf z = logits(w, d.x);
  std::size_t right = 0;
  for (Eigen::Index i = 0; i < z.rows(); ++i) {
    Eigen::Index best = 0;
    z.row(i).maxCoeff(&best);
    right += best == d.y[static_cast<std::size_t>(i)];
  }
  const double loss = softmax(z, d.y);
  return {loss, static_cast<double>(right) / static_cast<double>(d.x.rows())};
}

// One SGD step on the rows `batch` of the training set.
void step(model& w, const dataset& train, const std::vector<std::size_t>& batch, float lr) {
  const trainer::matrix xb = train.x(batch, Eigen::all);
  std::vector<int> yb(batch.size());
  for (std::size_t i = 0; i < batch.size(); ++i) yb[i] = train.y[batch[i]];
  Eigen::MatrixXf p = logits(w, xb);
  softmax(p, yb);
  for (std::size_t i = 0; i < batch.size(); ++i) p(static_cast<Eigen::Index>(i), yb[i]) -= 1.0f;
  const float scale = lr / static_cast<float>(batch.size());
  const Eigen::Index d = xb.cols();
  w.topRows(d).noalias() -= scale * (xb.transpose() * p);
  w.row(d) -= scale * p.colwise().sum();
}

template <class Topology, class Consistency>
trainer::row train(trainer::launcher& launch, const settings& s, std::size_t batch_size, bool allreduce,
                   const dataset& train, const dataset& test, trainer::progress& out) {
  const std::size_t n = static_cast<std::size_t>(train.x.rows()), dim = (train.x.cols() + 1) * classes;
  const std::vector<std::size_t> order = dml::data::permutation(n, s.seed);
  trainer::row last;
  launch.run([&](auto& comm) {  // [1]
    const std::size_t ranks = comm.size();
    trainer::epoch_samples mine;  // [2] this rank's samples (its shard among the live members)
    // [3] The model's distributed vector, and one for reporting (defaults:
    // bsp over all, average -- an exact mean over ranks, once per epoch).
    auto v = dml::make_vector<float>(comm, dim, Topology{}, Consistency{}, dml::gather::average{});
    auto mean = dml::make_vector<double>(comm, dim + 2);
    std::size_t changes_printed = 0;
    std::vector<float> storage(dim, 0.0f);
    model w(storage.data(), train.x.cols() + 1, classes);
    const std::size_t steps = n / ranks / s.cb_size;  // the same on every rank
    double seconds = 0;

    using clock = std::chrono::steady_clock;
    // [5] Once per epoch: average the replicas and statistics over all ranks
    // (a barrier), stop the clock -- `seconds` is wall time until every rank
    // has finished the epoch -- and let rank 0 evaluate while the others wait.
    auto report = [&](std::size_t epoch, clock::time_point start) {
      const auto d = static_cast<Eigen::Index>(dim);
      mean.eigen().head(d) = Eigen::Map<const Eigen::VectorXf>(storage.data(), d).cast<double>();
      mean.eigen()[d] = static_cast<double>(v.stats().bytes_sent);
      mean.eigen()[d + 1] = v.stats().full_share();
      mean.scatter();
      mean.gather();
      seconds += std::chrono::duration<double>(clock::now() - start).count();
      if (trainer::reports(comm)) {  // member 0, or the lowest survivor once it failed
        trainer::print_view_changes(comm, changes_printed);
        const Eigen::VectorXd means = mean.eigen().head(d);
        const Eigen::VectorXf avg = means.cast<float>();
        const const_model m(avg.data(), train.x.cols() + 1, classes);
        const double loss = evaluate(m, train).first, accuracy = evaluate(m, test).second;
        last = {epoch,
                seconds,
                loss,
                accuracy,
                mean.eigen()[d] * static_cast<double>(ranks),
                mean.eigen()[d + 1]};
        out.add(last);
      }
      mean.barrier();
    };

    report(0, clock::now());
    std::vector<std::size_t> batch;
    for (std::size_t epoch = 1; epoch <= s.epochs; ++epoch) {
      const auto start = clock::now();
      mine.next(comm, order, s, epoch);
      const std::size_t per_step = mine.per_step();
      const float lr = s.lr / std::sqrt(static_cast<float>(epoch));  // a decaying step settles the noise
      for (std::size_t k = 0; k < steps; ++k) {
        // cb-size examples in minibatches of `batch` (the last one may be smaller)
        const auto& samples = mine.samples();
        for (std::size_t first = k * per_step, end = first + per_step; first < end; first += batch_size) {
          batch.assign(samples.begin() + static_cast<std::ptrdiff_t>(first),
                       samples.begin() + static_cast<std::ptrdiff_t>(std::min(end, first + batch_size)));
          step(w, train, batch, lr);
        }
        // [4] Model averaging with the neighbours.
        if (allreduce) {  // --baseline mpi_allreduce: the same step without dml
          launch.allreduce_mean(storage);
          continue;
        }
        std::copy(storage.begin(), storage.end(), v.span().begin());
        v.scatter();
        v.gather();
        std::copy(v.span().begin(), v.span().end(), storage.begin());
      }
      report(epoch, start);
    }
  });
  return last;
}

constexpr const char* help_head = R"(usage: dml-logreg [options]
Trains softmax regression (10 classes) by minibatch SGD, data parallel over
ranks that average their models with a dml distributed vector
after every --cb-size examples. Data: Fashion-MNIST (pixels scaled to [0, 1])
or LIBSVM files with labels 0..9.
  --data FILE --test FILE  LIBSVM training and test files
  --batch N              examples per SGD step, default 32; --cb-size
                         (default 256) examples per rank between model
                         averages: cb-size / batch local steps
  --baseline mpi_allreduce  replace the dml vector by MPI_Allreduce of the
                         model (the exact mean over all processes: plain
                         synchronous SGD, the benchmarks' baseline); needs
                         --transport mpi_rma or mpi
)";

}  // namespace

int main(int argc, char** argv) {
  settings s;
  s.epochs = 10;
  s.cb_size = 256;
  s.lr = 0.2f;
  std::size_t batch = 32;  // examples per SGD step
  bool allreduce = false;  // --baseline mpi_allreduce
  try {
    for (int i = 1; i < argc; ++i)
      if (std::string_view(argv[i]) == "--help")
        return std::printf("%s%s", help_head, trainer::common_help) < 0 ? 1 : 0;
    s = trainer::parse(argc, argv, s,
                       {{"--batch", "--baseline"}, [&](std::string_view name, std::string_view v) {
                          if (name == "--baseline")
                            allreduce = trainer::parse_choice(name, v, {"mpi_allreduce"}) == "mpi_allreduce";
                          else
                            batch = trainer::parse_number<std::size_t>(name, v);
                        }});
  } catch (const trainer::usage_error& e) {
    std::fprintf(stderr, "dml-logreg: %s (see --help)\n", e.what());
    return 2;
  }
  try {
    // starts MPI for --transport mpi_rma / mpi
    trainer::launcher launch(s.transport, s.ranks, argc, argv, trainer::planned_kills(s));
    if (allreduce) launch.require_mpi_for("--baseline mpi_allreduce");
    const auto [train_set, test_set] = trainer::load(s);
    for (const auto* d : {&train_set, &test_set})
      for (int label : d->y)
        if (label < 0 || label >= classes)
          throw dml::data_error(d->name, 0, "label " + std::to_string(label) + " outside 0..9");
    if (static_cast<std::size_t>(train_set.x.rows()) / s.ranks < s.cb_size)
      throw trainer::usage_error(std::to_string(train_set.x.rows()) + " training samples are too few for " +
                                 std::to_string(s.ranks) + " ranks with --cb-size " +
                                 std::to_string(s.cb_size));
    if (launch.leader())
      std::printf(
          "dml-logreg: %zu ranks, topology %s, consistency %s, cb-size %zu, lr %g, %zu training / %zu test "
          "samples\n",
          s.ranks, s.topology.c_str(), s.consistency.c_str(), s.cb_size, static_cast<double>(s.lr),
          static_cast<std::size_t>(train_set.x.rows()), static_cast<std::size_t>(test_set.x.rows()));
    trainer::progress out(launch.leader() ? s.csv : std::string(), "accuracy");
    const trainer::row r = trainer::with_policies(s, [&](auto topology, auto consistency) {
      return train<decltype(topology), decltype(consistency)>(launch, s, batch, allreduce, train_set,
                                                              test_set, out);
    });
    trainer::finish(launch, s, r, "accuracy");
  } catch (const trainer::usage_error& e) {
    std::fprintf(stderr, "dml-logreg: %s (see --help)\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dml-logreg: %s\n", e.what());
    return 1;
  }
}

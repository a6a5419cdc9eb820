// SPDX-License-Identifier: BSL-1.0
// dml-svm-sgd: a linear SVM trained by SGD in the style of Leon Bottou's
// svmsgd (hinge loss, L2 regularization lambda, step eta_t = 1 / (lambda
// (t + t0))), data parallel over ranks (threads or MPI processes) that
// average their models with a user gather functor that also rescales, as in
// MALT's SVM.
//
// From a serial trainer to this one. Bottou's loop is
//
//     for (epoch) for (each sample (x, y), shuffled) {
//       eta = 1 / (lambda * (t++ + t0));
//       w *= 1 - eta * lambda;                       // regularization
//       if (y * (w . x + b) < 1) { w += eta * y * x; b += 0.01 * eta * y; }
//     }
//
// The data-parallel version changes it in the places marked [1]..[5] (the
// same five as examples/logreg): ranks started by trainer::launcher,
// a dml::data::shard per rank, one distributed vector holding [w, b], and
// after every --cb-size samples: copy the model in, scatter(), gather(),
// copy it back. The gather functor average_and_rescale (below, a dozen
// lines) is the one piece of SVM knowledge in the communication: the
// optimum of the regularized hinge loss lies in the ball |w| <= 1/sqrt(lambda)
// (Pegasos), so after averaging the model is projected back into it --
// which bounds what a stale or far-off neighbour's model can do under asp.
#include "../common/common.hpp"

#include <Eigen/Core>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <span>
#include <string>
#include <vector>

namespace {

using trainer::settings;

/// The gather functor: the plain average of own and the inputs, then the
/// weights (all but the last element, the bias) projected into the ball of
/// radius 1/sqrt(lambda).
struct average_and_rescale {
  float radius;
  void operator()(std::span<float> own, std::span<const dml::gather::input<float>> inputs) const {
    dml::gather::average{}(own, inputs);
    const auto weights = own.first(own.size() - 1);
    double norm2 = 0;
    for (float x : weights) norm2 += double{x} * x;
    const double norm = std::sqrt(norm2);
    if (norm > radius)
      for (float& x : weights) x = static_cast<float>(x * (radius / norm));
  }
};

// A binary task: rows with label +1 / -1.
struct task {
  trainer::matrix x;
  Eigen::VectorXf y;
};

task binary(const trainer::dataset& d, int positive, int negative) {  // negative < 0: the rest
  std::vector<Eigen::Index> rows;
  std::vector<float> labels;
  for (std::size_t i = 0; i < d.y.size(); ++i) {
    const int label = d.y[i];
    if (label == positive || label == negative || (negative < 0 && label != positive)) {
      rows.push_back(static_cast<Eigen::Index>(i));
      labels.push_back(label == positive ? 1.0f : -1.0f);
    }
  }
  task t{d.x(rows, Eigen::all),
         Eigen::Map<Eigen::VectorXf>(labels.data(), static_cast<Eigen::Index>(labels.size()))};
  return t;
}

// Primal objective lambda/2 |w|^2 + mean hinge loss, and accuracy.
std::pair<double, double> evaluate(const Eigen::VectorXf& model, const task& t, float lambda) {
  const Eigen::Index d = t.x.cols();
  const Eigen::VectorXf margin = ((t.x * model.head(d)).array() + model[d]) * t.y.array();
  const double hinge = (1.0f - margin.array()).max(0.0f).cast<double>().mean();
  const double right = (margin.array() > 0).cast<double>().sum();
  return {0.5 * lambda * model.head(d).squaredNorm() + hinge, right / static_cast<double>(t.x.rows())};
}

struct svm_options {
  float lambda = 1e-3f;
  int positive = 0, negative = 6;
  bool allreduce = false;  // --baseline mpi_allreduce
};

template <class Topology, class Consistency>
trainer::row train(trainer::launcher& launch, const settings& s, const svm_options& o, const task& train,
                   const task& test, trainer::progress& out) {
  const std::size_t n = static_cast<std::size_t>(train.x.rows()),
                    d = static_cast<std::size_t>(train.x.cols());
  const std::vector<std::size_t> order = dml::data::permutation(n, s.seed);
  const double t0 = 1.0 / (double{o.lambda} * s.lr);  // eta_0 = --lr
  trainer::row last;
  launch.run([&](auto& comm) {  // [1]
    using clock = std::chrono::steady_clock;
    const std::size_t ranks = comm.size();
    trainer::epoch_samples mine;  // [2] its shard among the live members
    // [3] [w, b], averaged and rescaled by the user's gather functor.
    auto v = dml::make_vector<float>(comm, d + 1, Topology{}, Consistency{},
                                     average_and_rescale{1.0f / std::sqrt(o.lambda)});
    auto mean = dml::make_vector<double>(comm, d + 3);
    std::size_t changes_printed = 0;                                              // view-change lines printed
    Eigen::VectorXf w = Eigen::VectorXf::Zero(static_cast<Eigen::Index>(d + 1));  // bias last
    const std::size_t steps = n / ranks / s.cb_size;
    double t = 0, seconds = 0;

    auto report = [&](std::size_t epoch, clock::time_point start) {  // [5]
      const auto m = static_cast<Eigen::Index>(d + 1);
      mean.eigen().head(m) = w.cast<double>();
      mean.eigen()[m] = static_cast<double>(v.stats().bytes_sent);
      mean.eigen()[m + 1] = v.stats().full_share();
      mean.scatter();
      mean.gather();
      seconds += std::chrono::duration<double>(clock::now() - start).count();
      if (trainer::reports(comm)) {  // member 0, or the lowest survivor once it failed
        trainer::print_view_changes(comm, changes_printed);
        const Eigen::VectorXd means = mean.eigen().head(m);
        const Eigen::VectorXf avg = means.cast<float>();
        last = {epoch,
                seconds,
                evaluate(avg, train, o.lambda).first,
                evaluate(avg, test, o.lambda).second,
                mean.eigen()[m] * static_cast<double>(ranks),
                mean.eigen()[m + 1]};
        out.add(last);
      }
      mean.barrier();
    };

    report(0, clock::now());
    for (std::size_t epoch = 1; epoch <= s.epochs; ++epoch) {
      const auto start = clock::now();
      mine.next(comm, order, s, epoch);
      const std::size_t per_step = mine.per_step();
      for (std::size_t k = 0; k < steps; ++k) {
        for (std::size_t j = k * per_step; j < (k + 1) * per_step; ++j) {  // Bottou's step
          const auto i = static_cast<Eigen::Index>(mine.samples()[j]);
          const float eta = static_cast<float>(1.0 / (double{o.lambda} * (t++ + t0)));
          const float y = train.y[i];
          const float score =
              train.x.row(i).dot(w.head(static_cast<Eigen::Index>(d))) + w[static_cast<Eigen::Index>(d)];
          w.head(static_cast<Eigen::Index>(d)) *= 1.0f - eta * o.lambda;
          if (y * score < 1.0f) {
            w.head(static_cast<Eigen::Index>(d)) += (eta * y) * train.x.row(i).transpose();
            w[static_cast<Eigen::Index>(d)] += 0.01f * eta * y;  // svmsgd's smaller bias step
          }
        }
        // [4] Model averaging (and rescaling) with the neighbours.
        if (o.allreduce) {  // --baseline mpi_allreduce: the same step without dml
          const std::span<float> model(w.data(), d + 1);
          launch.allreduce_mean(model);
          average_and_rescale{1.0f / std::sqrt(o.lambda)}(model, {});  // the projection alone
          continue;
        }
        v.eigen() = w;
        v.scatter();
        v.gather();
        w = v.eigen();
      }
      report(epoch, start);
    }
  });
  return last;
}

constexpr const char* help_head = R"(usage: dml-svm-sgd [options]
Trains a linear SVM (hinge loss, L2 regularization) by SGD with Bottou's
step eta_t = 1 / (lambda (t + t0)), eta_0 = --lr, data parallel over
ranks that average their models, projected into the ball
|w| <= 1/sqrt(lambda), after every --cb-size samples. Data: Fashion-MNIST
(pixels in [0, 1]) or LIBSVM files with whole-number labels.
  --positive N           the +1 class, default 0 (T-shirt/top)
  --negative N|rest      the -1 class, default 6 (shirt); rest: all others
  --lambda X             regularization, default 1e-3
  --data FILE --test FILE  LIBSVM training and test files
  --baseline mpi_allreduce  replace the dml vector by MPI_Allreduce of the
                         model, then the same projection (the exact mean
                         over all processes: plain synchronous SGD, the
                         benchmarks' baseline); needs --transport mpi_rma
                         or mpi
)";

}  // namespace

int main(int argc, char** argv) {
  settings s;
  s.epochs = 20;
  s.cb_size = 64;
  s.lr = 0.001f;
  svm_options o;
  try {
    for (int i = 1; i < argc; ++i)
      if (std::string_view(argv[i]) == "--help")
        return std::printf("%s%s", help_head, trainer::common_help) < 0 ? 1 : 0;
    s = trainer::parse(
        argc, argv, s,
        {{"--positive", "--negative", "--lambda", "--baseline"},
         [&](std::string_view name, std::string_view v) {
           if (name == "--baseline")
             o.allreduce = trainer::parse_choice(name, v, {"mpi_allreduce"}) == "mpi_allreduce";
           else if (name == "--lambda")
             o.lambda = trainer::parse_number<float>(name, v);
           else if (name == "--negative" && v == "rest")
             o.negative = -1;
           else
             (name == "--positive" ? o.positive : o.negative) = trainer::parse_number<int>(name, v, 0);
         }});
    if (o.positive == o.negative) throw trainer::usage_error("--positive and --negative name the same class");
  } catch (const trainer::usage_error& e) {
    std::fprintf(stderr, "dml-svm-sgd: %s (see --help)\n", e.what());
    return 2;
  }
  try {
    // starts MPI for --transport mpi_rma / mpi
    trainer::launcher launch(s.transport, s.ranks, argc, argv, trainer::planned_kills(s));
    if (o.allreduce) launch.require_mpi_for("--baseline mpi_allreduce");
    const auto [train_set, test_set] = trainer::load(s);
    const task train = binary(train_set, o.positive, o.negative),
               test = binary(test_set, o.positive, o.negative);
    if (test.x.rows() == 0) throw dml::data_error(test_set.name, 0, "no test samples of the two classes");
    if (static_cast<std::size_t>(train.x.rows()) / s.ranks < s.cb_size)
      throw trainer::usage_error(std::to_string(train.x.rows()) + " training samples are too few for " +
                                 std::to_string(s.ranks) + " ranks with --cb-size " +
                                 std::to_string(s.cb_size));
    if (launch.leader())
      std::printf(
          "dml-svm-sgd: %zu ranks, topology %s, consistency %s, cb-size %zu, eta0 %g, lambda %g, "
          "class %d vs %s, %zu training / %zu test samples\n",
          s.ranks, s.topology.c_str(), s.consistency.c_str(), s.cb_size, static_cast<double>(s.lr),
          static_cast<double>(o.lambda), o.positive,
          o.negative < 0 ? "rest" : std::to_string(o.negative).c_str(),
          static_cast<std::size_t>(train.x.rows()), static_cast<std::size_t>(test.x.rows()));
    trainer::progress out(launch.leader() ? s.csv : std::string(), "accuracy");
    const trainer::row r = trainer::with_policies(s, [&](auto topology, auto consistency) {
      return ::train<decltype(topology), decltype(consistency)>(launch, s, o, train, test, out);
    });
    trainer::finish(launch, s, r, "accuracy");
  } catch (const trainer::usage_error& e) {
    std::fprintf(stderr, "dml-svm-sgd: %s (see --help)\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dml-svm-sgd: %s\n", e.what());
    return 1;
  }
}

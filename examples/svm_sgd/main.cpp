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
// (here in Bottou's scaled form, w = scale * v, so that the shrink costs
// one multiplication and a step the nonzeros of its sample: LIBSVM files of
// up to 2^26 features train as sparse rows; examples/common/linear.hpp).
// The data-parallel version changes it in the places marked [1]..[5] (the
// same five as examples/logreg): ranks started by trainer::launcher,
// a dml::data::shard per rank, one distributed vector holding [w, b], and
// after every --cb-size samples: copy the model in, scatter(), gather(),
// copy it back (the scale folded into the weights first: the vector
// carries w, not v). The gather functor average_and_rescale (below, a dozen
// lines) is the one piece of SVM knowledge in the communication: the
// optimum of the regularized hinge loss lies in the ball |w| <= 1/sqrt(lambda)
// (Pegasos), so after averaging the model is projected back into it --
// which bounds what a stale or far-off neighbour's model can do under asp.
//
// --topology ps replaces the peer-to-peer averaging by a parameter server
// (dml::parameter_server, member 0 serving and training too): after every
// --cb-size samples each member sends its model's change since the last
// exchange up, the server adds the mean change to the model, projects it,
// and sends the model down. Under bsp every member starts a step from the
// same model, so the mean change added is the mean of the members' models
// minus that model: the same model averaging as --topology all, with other
// traffic (MALT's Figs. 9 and 13 compare the two).
#include "../common/common.hpp"

#include <dml/vector/delta_vector.hpp>
#include <dml/vector/parameter_server.hpp>

#include <Eigen/Core>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <limits>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

namespace {

using trainer::settings;

constexpr int rest = std::numeric_limits<int>::min();  // --negative rest

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

// A binary task: rows with label +1 / -1, dense or sparse.
struct task {
  std::variant<trainer::matrix, trainer::sparse_matrix> x;
  Eigen::VectorXf y;
  [[nodiscard]] Eigen::Index rows() const { return y.size(); }
};

task binary(const trainer::sample_set& d, int positive, int negative) {  // negative < 0: the rest
  std::vector<Eigen::Index> rows;
  std::vector<float> labels;
  for (std::size_t i = 0; i < d.y.size(); ++i) {
    const int label = d.y[i];
    if (label == positive || label == negative || (negative == rest && label != positive)) {
      rows.push_back(static_cast<Eigen::Index>(i));
      labels.push_back(label == positive ? 1.0f : -1.0f);
    }
  }
  task t;
  d.visit([&](const auto& x) { t.x = trainer::select_rows(x, rows); });
  t.y = Eigen::Map<Eigen::VectorXf>(labels.data(), static_cast<Eigen::Index>(labels.size()));
  return t;
}

// Primal objective lambda/2 |w|^2 + mean hinge loss, and accuracy, of a
// folded model [w; b].
std::pair<double, double> evaluate(const Eigen::VectorXf& model, const task& t, float lambda) {
  const Eigen::VectorXf margin =
      std::visit([&](const auto& x) { return trainer::svm_margins(model, x, t.y); }, t.x);
  const double hinge = (1.0f - margin.array()).max(0.0f).cast<double>().mean();
  const double right = (margin.array() > 0).cast<double>().sum();
  const Eigen::Index d = model.size() - 1;
  return {0.5 * lambda * model.head(d).squaredNorm() + hinge, right / static_cast<double>(t.rows())};
}

struct svm_options {
  float lambda = 1e-3f;
  int positive = 0, negative = 6;
  bool classes_given = false;  // --positive or --negative on the command line
  bool lambda_given = false;   // --lambda on the command line
  bool allreduce = false;      // --baseline mpi_allreduce
  bool ps = false;             // --topology ps
  /// --exchange: the whole model (dense), or only the coordinates changed
  /// since the last exchange (deltas; sparse data under bsp or notify_ack).
  std::string exchange = "auto";
};

// Models at least this wide exchange deltas by default (on sparse rows,
// under bsp or notify_ack): a dense exchange would move 16 MB per neighbour
// and keep two such slots per in-neighbour on every member, while a step's
// samples touch a small share of the weights (docs/trainers.md measures it).
constexpr std::size_t delta_width = std::size_t{1} << 22;

// Whether to exchange deltas (see --exchange). Under asp or ssp a skipped
// delta would be lost, so they need an exact policy.
bool use_deltas(const svm_options& o, bool sparse_rows, std::size_t width, const std::string& consistency) {
  if (o.ps && o.exchange == "deltas")
    throw trainer::usage_error("--exchange deltas and --topology ps do not go together");
  if (o.ps) return false;  // the parameter server moves whole models down
  const bool exact = consistency == "bsp" || consistency == "notify_ack";
  if (o.exchange == "deltas" && (!sparse_rows || !exact))
    throw trainer::usage_error(
        "--exchange deltas needs LIBSVM data (sparse rows) and --consistency bsp or notify_ack");
  if (o.exchange == "deltas" && o.allreduce)
    throw trainer::usage_error("--exchange deltas and --baseline mpi_allreduce do not go together");
  return o.exchange == "deltas" ||
         (o.exchange == "auto" && sparse_rows && exact && !o.allreduce && width >= delta_width);
}

// The most coordinates one exchange may need to send: the nonzeros of the
// samples of one step (and the bias), from the densest rows.
template <class Comm>
std::size_t delta_capacity(const task& train, const settings& s, const Comm& comm) {
  const auto& x = std::get<trainer::sparse_matrix>(train.x);
  Eigen::Index widest = 0;
  for (Eigen::Index r = 0; r < x.rows(); ++r)
    widest = std::max<Eigen::Index>(widest, x.outerIndexPtr()[r + 1] - x.outerIndexPtr()[r]);
  const std::size_t per_step = s.cb_size * comm.size() / std::max<std::size_t>(comm.view().live.size(), 1);
  return std::min(static_cast<std::size_t>(x.cols()) + 1, per_step * static_cast<std::size_t>(widest) + 1);
}

template <class Consistency>
trainer::row train(trainer::launcher& launch, const dml::topology::any& topology,
                   const Consistency& consistency, const settings& s, const svm_options& o, const task& train,
                   const task& test, trainer::progress& out) {
  const std::size_t n = static_cast<std::size_t>(train.rows()),
                    d = static_cast<std::size_t>(std::visit([](const auto&x) { return x.cols(); }, train.x));
  const std::vector<std::size_t> order = dml::data::permutation(n, s.seed);
  const double t0 = 1.0 / (double{o.lambda} * s.lr);  // eta_0 = --lr
  trainer::row last;
  launch.run([&](auto& comm) {  // [1]
    using clock = std::chrono::steady_clock;
    const std::size_t ranks = comm.size();
    trainer::epoch_samples mine;  // [2] its shard among the live members
    // [3] [w, b], averaged and rescaled by the user's gather functor; or,
    // exchanging deltas, a delta vector holding v of w = scale v: every
    // member's scale is the same at every exchange (the same steps, the same
    // folds), so averaging the v's averages the models, and only the
    // coordinates the samples touched travel.
    const bool deltas =
        use_deltas(o, std::holds_alternative<trainer::sparse_matrix>(train.x), d, s.consistency);
    auto v = dml::make_vector<float>(comm, deltas || o.ps ? 1 : d + 1, topology, consistency,
                                     average_and_rescale{1.0f / std::sqrt(o.lambda)});
    // --topology ps: the model on the server (member 0), changes up, models down.
    std::optional<dml::parameter_server<float, std::remove_cvref_t<decltype(comm)>, Consistency>> ps;
    if (o.ps) ps.emplace(comm, d + 1, consistency);
    std::optional<dml::delta_vector<float, std::remove_cvref_t<decltype(comm)>, dml::topology::any,
                                    dml::consistency::any>>
        dv;
    if (deltas) dv.emplace(comm, d + 1, dml::sparse{delta_capacity(train, s, comm)}, topology, consistency);
    trainer::model_mean mean(comm, d + 1, 2);
    std::size_t changes_printed = 0;  // view-change lines printed
    trainer::scaled_svm model(static_cast<Eigen::Index>(d));
    const std::size_t steps = n / ranks / s.cb_size;
    double t = 0, seconds = 0;
    std::vector<float> avg;
    std::vector<double> stats;

    // Folds the scale into v: in the delta vector too, identically on
    // every member, so that its agreed state stays the members' common v.
    auto fold = [&] {
      if (dv && model.scale != 1) dv->scale(static_cast<float>(model.scale));
      model.fold();
    };
    // The row of the averaged model in avg (and the statistics in stats).
    auto evaluate_row = [&](std::size_t epoch) {
      const Eigen::VectorXf w =
          Eigen::Map<const Eigen::VectorXf>(avg.data(), static_cast<Eigen::Index>(d + 1));
      return trainer::row{epoch,
                          seconds,
                          evaluate(w, train, o.lambda).first,
                          evaluate(w, test, o.lambda).second,
                          stats[0] * static_cast<double>(ranks),
                          stats[1]};
    };
    auto report = [&](std::size_t epoch, clock::time_point start) {  // [5]
      fold();
      const auto& vs = dv ? dv->stats() : ps ? ps->up_stats() : v.stats();
      const double extras[] = {static_cast<double>(ps ? ps->bytes_sent() : vs.bytes_sent), vs.full_share()};
      const bool me = dml::io::leader(comm);  // member 0, or the lowest survivor once it failed
      // After the last epoch every member keeps the average: under MPI
      // another one may have to report it (trainer::report_final).
      const bool keep = me || (epoch == s.epochs && !launch.in_process());
      mean.average({model.v.data(), d + 1}, extras, keep ? &avg : nullptr, keep ? &stats : nullptr);
      seconds += std::chrono::duration<double>(clock::now() - start).count();
      if (me) {
        trainer::print_view_changes(comm, changes_printed);
        last = evaluate_row(epoch);
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
        std::visit(
            [&](const auto& x) {
              for (std::size_t j = k * per_step; j < (k + 1) * per_step; ++j) {  // Bottou's step
                const auto i = static_cast<Eigen::Index>(mine.samples()[j]);
                const float eta = static_cast<float>(1.0 / (double{o.lambda} * (t++ + t0)));
                if (dv) {
                  // Fold before svm_step would (the delta vector must fold
                  // too), then mirror the touched coordinates into it.
                  if (std::abs(model.scale * (1.0f - eta * o.lambda)) < 1e-6) fold();
                  trainer::svm_step(model, x, i, train.y[i], eta, o.lambda);
                  if constexpr (std::is_same_v<std::remove_cvref_t<decltype(x)>, trainer::sparse_matrix>)
                    for (trainer::sparse_matrix::InnerIterator it(x, i); it; ++it) {
                      dv->span()[static_cast<std::size_t>(it.col())] = model.v[it.col()];
                      dv->touch(static_cast<std::size_t>(it.col()));
                    }
                  dv->span()[d] = model.v[static_cast<Eigen::Index>(d)];
                  dv->touch(d);
                } else {
                  trainer::svm_step(model, x, i, train.y[i], eta, o.lambda);
                }
              }
            },
            train.x);
        // [4] Model averaging (and rescaling) with the neighbours: the
        // vector carries [w, b], so the scale goes into the weights first.
        // Alone, the exchange is the projection, which the scale does
        // without touching the width.
        if (ranks == 1 && !o.allreduce) {
          model.project(1.0 / std::sqrt(double{o.lambda}));
          continue;
        }
        if (dv) {  // only the touched coordinates travel; the scale stays
          dv->scatter();
          dv->gather();
          for (const std::uint32_t c : dv->last_changed()) model.v[c] = dv->span()[c];
          continue;
        }
        model.fold();
        if (ps) {  // the change since the last exchange up, the model down
          const Eigen::Map<Eigen::VectorXf> w(ps->model().data(), static_cast<Eigen::Index>(d + 1));
          Eigen::Map<Eigen::VectorXf>(ps->update().data(), static_cast<Eigen::Index>(d + 1)) = model.v - w;
          ps->step([&](std::span<float> server_model, std::span<const float> mean_change) {
            for (std::size_t i = 0; i <= d; ++i) server_model[i] += mean_change[i];
            average_and_rescale{1.0f / std::sqrt(o.lambda)}(server_model, {});  // the projection alone
          });
          model.v = w;
          model.refresh_norm();
          continue;
        }
        if (o.allreduce) {  // --baseline mpi_allreduce: the same step without dml
          const std::span<float> w(model.v.data(), d + 1);
          launch.allreduce_mean(w);
          average_and_rescale{1.0f / std::sqrt(o.lambda)}(w, {});  // the projection alone
          model.refresh_norm();
          continue;
        }
        v.eigen() = model.v;
        v.scatter();
        v.gather();
        model.v = v.eigen();
        model.refresh_norm();
      }
      report(epoch, start);
    }
    trainer::report_final(launch, comm, s, last, "accuracy", [&] {
      trainer::print_view_changes(comm, changes_printed);
      return evaluate_row(s.epochs);
    });
  });
  return last;
}

constexpr const char* description =
    R"(Trains a linear SVM (hinge loss, L2 regularization) by SGD with Bottou's
step eta_t = 1 / (lambda (t + t0)), eta_0 = --lr, data parallel over
ranks that average their models, projected into the ball
|w| <= 1/sqrt(lambda), after every --cb-size samples. Data: Fashion-MNIST
(pixels in [0, 1]) or LIBSVM files with whole-number labels, of up to 2^26
features (kept sparse: a step costs the nonzeros of its sample). --lr is
eta0: 0.001 on Fashion-MNIST; on LIBSVM files by default the constant step
that lowers the objective most in one pass over 1000 training samples
(powers of 2 from 1), as Bottou's svmsgd chooses it. --cb-size: 64; on
LIBSVM files by default the power of two >= features / (4 x mean nonzeros
per row) if larger (each exchange moves the whole dense model), at most a
rank's share of the samples.)";

}  // namespace

int main(int argc, char** argv) {
  settings s;
  s.epochs = 20;
  s.cb_size = 64;
  s.lr = 0.001f;
  svm_options o;
  std::string negative, baseline;
  const auto app = trainer::command_line(
      "dml-svm-sgd", description, s, "ps",
      "(ps: a parameter server at member 0, which trains\ntoo: model changes up, models down;\nbsp, asp, ssp "
      "or notify_ack)");
  app->add_option("--positive", o.positive,
                  "the +1 class, default 0 (T-shirt/top); for a LIBSVM\nfile of two labels, the larger one")
      ->option_text("N")
      ->check(cli::whole_number<int>(-1000000));
  app->add_option(
         "--negative", negative,
         "the -1 class, default 6 (shirt); rest: all others;\nfor a LIBSVM file of two labels, the smaller "
         "one")
      ->option_text("N|rest")
      ->check(CLI::Validator(
          [](std::string& v) {
            return v == "rest" || cli::to_number<int>(v, -1000000)
                       ? std::string()
                       : "needs a whole number >= -1000000 or 'rest', got '" + v + "'";
          },
          "N|rest"));
  app->add_option(
         "--lambda", o.lambda,
         "regularization, default 1e-3 on Fashion-MNIST and\n1/n on LIBSVM files of n training samples\n"
         "(liblinear's default C = 1)")
      ->option_text("X")
      ->check(cli::positive_number<float>());
  app->add_option(
         "--exchange", o.exchange,
         "dense: the whole model every --cb-size samples;\ndeltas: only the weights the samples "
         "changed\n(dml::delta_vector; LIBSVM data, bsp or notify_ack;\nno projection; --cb-size "
         "default 64); auto\n(default): deltas for such data of 2^22 or more\nfeatures, dense otherwise")
      ->option_text("HOW")
      ->check(cli::one_of({"auto", "dense", "deltas"}));
  app->add_option(
         "--baseline", baseline,
         "mpi_allreduce: replace the dml vector by MPI_Allreduce\nof the model, then the same projection "
         "(the exact\nmean over all processes: plain synchronous SGD, the\nbenchmarks' baseline); needs "
         "--transport mpi_rma\nor mpi")
      ->option_text("NAME")
      ->check(cli::one_of({"mpi_allreduce"}));
  if (const auto exit = trainer::parse(*app, argc, argv, s, [&] {
        o.allreduce = baseline == "mpi_allreduce";
        o.ps = s.topology == "ps";
        if (o.ps && o.allreduce)
          throw trainer::usage_error("--topology ps and --baseline mpi_allreduce do not go together");
        if (o.ps && s.consistency == "adaptive")
          throw trainer::usage_error("--topology ps takes --consistency bsp, asp, ssp or notify_ack");
        if (o.ps && s.transport == "inproc" && s.ranks < 2)
          throw trainer::usage_error("--topology ps needs at least 2 ranks (a server and a worker)");
        o.lambda_given = app->count("--lambda") > 0;
        o.classes_given = app->count("--positive") + app->count("--negative") > 0;
        if (!negative.empty()) o.negative = negative == "rest" ? rest : std::stoi(negative);
        if (o.positive == o.negative)
          throw trainer::usage_error("--positive and --negative name the same class");
      }))
    return *exit;
  try {
    // starts MPI for --transport mpi_rma / mpi
    trainer::launcher launch(s.transport, s.ranks, argc, argv, trainer::planned_kills(s));
    if (o.allreduce) launch.require_mpi_for("--baseline mpi_allreduce");
    const auto [train_set, test_set] =
        trainer::read_everywhere(launch, "dml-svm-sgd", [&] { return trainer::load_samples(s); });
    if (!s.data.empty() && !o.classes_given) {  // a LIBSVM file of two classes: the larger label is +1
      const std::set<int> labels(train_set.y.begin(), train_set.y.end());
      if (labels.size() != 2)
        throw trainer::usage_error(s.data + " has " + std::to_string(labels.size()) +
                                   " different labels: name the classes with --positive and --negative "
                                   "(or --negative rest)");
      o.positive = *labels.rbegin();
      o.negative = *labels.begin();
    }
    trainer::check_model_size(train_set.name, static_cast<std::size_t>(train_set.cols()), 1);
    const bool deltas =
        use_deltas(o, train_set.sparse(), static_cast<std::size_t>(train_set.cols()), s.consistency);
    trainer::check_inproc_memory(launch, s.ranks, static_cast<std::size_t>(train_set.cols()) + 1, s, deltas);
    const task train = binary(train_set, o.positive, o.negative),
               test = binary(test_set, o.positive, o.negative);
    if (test.rows() == 0) throw dml::data_error(test_set.name, 0, "no test samples of the two classes");
    // LIBSVM data: unless given, lambda = 1/n (liblinear's default C = 1)
    // and eta0 chosen on 1000 training samples as svmsgd does; the
    // Fashion-MNIST defaults were tuned on its pixels.
    std::string eta_note;
    if (!s.data.empty() && !o.lambda_given) o.lambda = 1.0f / static_cast<float>(train.rows());
    if (!s.data.empty() && !s.lr_given) {
      std::vector<std::size_t> sample =
          dml::data::permutation(static_cast<std::size_t>(train.rows()), s.seed);
      sample.resize(std::min<std::size_t>(sample.size(), 1000));
      s.lr = std::visit(
          [&](const auto& x) { return trainer::svm_calibrate_eta0(x, train.y, sample, o.lambda); }, train.x);
      eta_note = " (calibrated on " + std::to_string(sample.size()) + " samples)";
    }
    if (!s.data.empty() && !s.cb_size_given && !deltas)  // deltas need no amortizing
      s.cb_size =
          trainer::sparse_cb_size(train_set, static_cast<std::size_t>(train.rows()) / s.ranks, s.cb_size);
    if (static_cast<std::size_t>(train.rows()) / s.ranks < s.cb_size)
      throw trainer::usage_error(std::to_string(train.rows()) + " training samples are too few for " +
                                 std::to_string(s.ranks) + " ranks with --cb-size " +
                                 std::to_string(s.cb_size));
    if (launch.leader())
      std::printf(
          "dml-svm-sgd: %zu ranks, topology %s, consistency %s, cb-size %zu, eta0 %g%s, lambda %g, "
          "class %d vs %s, %zu training / %zu test samples, %zu features%s\n",
          s.ranks, s.topology.c_str(), s.consistency.c_str(), s.cb_size, static_cast<double>(s.lr),
          eta_note.c_str(), static_cast<double>(o.lambda), o.positive,
          o.negative == rest ? "rest" : std::to_string(o.negative).c_str(),
          static_cast<std::size_t>(train.rows()), static_cast<std::size_t>(test.rows()),
          static_cast<std::size_t>(train_set.cols()), train_set.sparse() ? " (sparse rows)" : "");
    trainer::progress out(launch.leader() ? s.csv : std::string(), "accuracy");
    const trainer::row r = trainer::with_policies(s, [&](auto topology, auto consistency) {
      return ::train(launch, topology, consistency, s, o, train, test, out);
    });
    trainer::finish(launch, s, r, "accuracy");
  } catch (const trainer::agreed_error& e) {  // the same on every process: the leader says it
    return trainer::agreed_failure("dml-svm-sgd", e);
  } catch (const trainer::usage_error& e) {
    std::fprintf(stderr, "dml-svm-sgd: %s (see --help)\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dml-svm-sgd: %s\n", e.what());
    return 1;
  }
}

// SPDX-License-Identifier: BSL-1.0
// dml-cocoa: elastic-net least squares by CoCoA (averaging, gamma = 1/K) or
// CoCoA+ (adding, gamma = 1, sigma' = K), data parallel over ranks that each
// hold a shard of the samples. Every round each rank runs --local-steps
// steps of SDCA on its shard's duals (examples/cocoa/cocoa.hpp has the math
// and why both merges raise the dual), then the ranks merge their changes
// of v = A a / (l2 n) through a dml::delta_vector: agreed v += gamma * sum
// of the changes. With --filter and --quota-percent a rank sends at most
// that share of the dense model's bytes per round, the filter choosing
// which coordinates; the rest stays pending and goes out later (error
// feedback: nothing is lost). The ranks are threads (--transport inproc)
// or MPI processes (mpi_rma | mpi under mpiexec).
#include <dml/data/idx.hpp>
#include <dml/data/libsvm.hpp>
#include <dml/io.hpp>
#include <dml/vector/delta_vector.hpp>
#include <dml/vector/filter.hpp>
#include <dml/vector/make_vector.hpp>

#include "../common/cli.hpp"
#include "../common/kill_after.hpp"
#include "../common/launcher.hpp"
#include "../common/same_input.hpp"
#include "cocoa.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#ifndef DML_FASHION_MNIST_DIR
#define DML_FASHION_MNIST_DIR "/usr/share/datasets/fashion-mnist"
#endif

namespace {

using cli::usage_error;

struct options {
  std::string data, test, transport = "inproc", klass, gamma = "add", filter = "none";
  std::size_t ranks = 4, rounds = 20, local_steps = 0, limit = 0, report_every = 1;
  double lambda = 1e-3, l1_ratio = 0.5, quota_percent = 10;
  trainer::kill_plan kill_after;  // --kill-after R@S
  std::uint64_t seed = 1;
  bool serial = false;
};

constexpr const char* description =
    R"(Solves elastic-net least squares, min 1/n sum_i 1/2 (x_i w - y_i)^2 +
lambda ((1 - r)/2 |w|^2 + r |w|_1) with r = --l1-ratio < 1, by CoCoA over
ranks that each hold a shard of the samples: per round every rank runs
--local-steps steps of SDCA on its samples' duals, and the ranks merge
their changes through a dml::delta_vector, w += gamma * sum of changes
(--gamma avg: gamma = 1/K, CoCoA; add: gamma = 1 with sigma' = K,
CoCoA+). Data: Fashion-MNIST one-vs-rest (all 10 classes side by side,
argmax; or --class C: C against the rest) or a LIBSVM file (labels +-1 or
0/1: binary; other labels: regression, 'accuracy' is R^2; --class all:
one-vs-rest over labels 0..C-1). A constant feature 1 is the bias.
--filter and --quota-percent P: each rank sends per round at most P % of
the dense model's bytes as index/value pairs, the filter choosing which;
the others wait (error feedback). Prints per round the primal objective,
the duality gap, test accuracy and the bytes all ranks sent; then
final: objective=F accuracy=A bytes=B rounds=R seconds=S.)";

bool parse(int argc, char** argv, options& o) {
  const auto app = cli::app("dml-cocoa", description);
  app->add_option("--data", o.data, "LIBSVM training file; default Fashion-MNIST")
      ->option_text("FILE")
      ->check(cli::not_empty());
  app->add_option("--test", o.test, "LIBSVM test file (with --data; without it the\ntraining set is scored)")
      ->option_text("FILE")
      ->check(cli::not_empty());
  app->add_option("--class", o.klass,
                  "C: label C against the rest; all: one-vs-rest over\nevery class (Fashion-MNIST's default)")
      ->option_text("C|all");
  app->add_option("--lambda", o.lambda, "regularization weight, default 1e-3")
      ->option_text("X")
      ->check(cli::positive_number<double>());
  app->add_option("--l1-ratio", o.l1_ratio, "share of the L1 part, [0, 1), default 0.5")
      ->option_text("R")
      ->check(cli::number_where<double>([](double r) { return r >= 0 && r < 1; },
                                        "must be in [0, 1) (the dual solver needs the L2 part)"));
  app->add_option("--local-steps", o.local_steps, "SDCA steps per rank per round, default its shard's size")
      ->option_text("H")
      ->check(cli::whole_number());
  app->add_option("--gamma", o.gamma, "avg (gamma = 1/K, sigma' = 1) | add (gamma = 1,\nsigma' = K; default)")
      ->option_text("HOW")
      ->check(cli::one_of({"avg", "add"}));
  app->add_option("--rounds", o.rounds, "communication rounds, default 20")
      ->option_text("R")
      ->check(cli::whole_number());
  app->add_option("--filter", o.filter,
                  "none (default: every change, every round) | magnitude |\nrelative | random | round_robin")
      ->option_text("NAME")
      ->check(cli::one_of({"none", "magnitude", "relative", "random", "round_robin"}));
  app->add_option(
         "--quota-percent", o.quota_percent,
         "with a filter: bytes per rank and round, in % of the\ndense model's (8 per weight), default 10")
      ->option_text("P")
      ->check(cli::number_where<double>([](double p) { return p > 0 && p <= 1000; }, "must be in (0, 1000]"));
  app->add_option("--ranks", o.ranks, "in-process ranks, default 4")
      ->option_text("N")
      ->check(
          cli::number_where<std::size_t>([](std::size_t n) { return n >= 1 && n <= 256; }, "must be 1..256"));
  app->add_option("--transport", o.transport,
                  "inproc (threads, default) | mpi_rma | mpi (one rank per\nMPI process: mpiexec -n N "
                  "dml-cocoa --transport mpi_rma)")
      ->option_text("NAME")
      ->check(cli::one_of({"inproc", "mpi_rma", "mpi"}));
  app->add_option("--seed", o.seed, "of the shards and sample orders, default 1")
      ->option_text("N")
      ->check(cli::whole_number<std::uint64_t>(0));
  app->add_option("--limit", o.limit, "use only the first N training samples")
      ->option_text("N")
      ->check(cli::whole_number());
  app->add_option("--report-every", o.report_every, "rounds between progress lines, default 1")
      ->option_text("N")
      ->check(cli::whole_number());
  app->add_flag("--serial", o.serial,
                "run plain serial SDCA instead (--rounds x --local-steps\nsteps; what one rank computes)");
  trainer::add_kill_after(*app, o.kill_after);
  if (!cli::parse(*app, argc, argv)) return false;
  if (o.serial && !o.kill_after.empty()) throw usage_error("--kill-after kills a rank; not with --serial");
  trainer::check_kills(o.kill_after, o.transport, o.ranks);
  if (!o.test.empty() && o.data.empty()) throw usage_error("--test needs --data");
  if (o.transport != "inproc" && app->count("--ranks") > 0)
    throw usage_error("--ranks is for --transport inproc; with " + o.transport +
                      " every MPI process is one rank (mpiexec -n N)");
  if (app->count("--quota-percent") > 0 && o.filter == "none")
    throw usage_error("--quota-percent needs a --filter (with none every change goes out)");
  if (!o.klass.empty() && o.klass != "all" && !cli::to_number<int>(o.klass, 0))
    throw usage_error("--class: needs a label >= 0 or 'all', got '" + o.klass + "'");
  return true;
}

// The problem's task: what the outputs mean and how accuracy is scored.
enum class task { one_vs_rest, binary, regression };

struct labelled {
  cocoa::rows x;
  std::vector<double> labels;
};

// Rows of a dense row-major matrix or a row-major sparse one.
template <class Matrix>
cocoa::rows to_rows(const Matrix& m, std::size_t features) {
  cocoa::rows r;
  r.d = features + 1;
  std::vector<std::pair<std::size_t, float>> pairs;
  for (Eigen::Index i = 0; i < m.rows(); ++i) {
    pairs.clear();
    if constexpr (requires { m.outerIndexPtr(); }) {
      for (typename Matrix::InnerIterator it(m, i); it; ++it)
        if (static_cast<std::size_t>(it.col()) < features) pairs.emplace_back(it.col(), it.value());
    } else {
      for (Eigen::Index j = 0; j < m.cols(); ++j)
        if (m(i, j) != 0) pairs.emplace_back(j, m(i, j));
    }
    r.add(pairs);
  }
  return r;
}

labelled fashion(bool train, std::size_t limit) {
  const std::string dir = DML_FASHION_MNIST_DIR, part = train ? "train" : "t10k";
  const auto images = dml::data::read_idx_images(dir + "/" + part + "-images-idx3-ubyte.gz", limit);
  const auto labels = dml::data::read_idx_labels(dir + "/" + part + "-labels-idx1-ubyte.gz", limit);
  if (labels.size() != static_cast<std::size_t>(images.rows()))
    throw dml::data_error(dir + "/" + part + "-labels-idx1-ubyte.gz", 0, "fewer labels than images");
  return {to_rows(images, static_cast<std::size_t>(images.cols())), {labels.begin(), labels.end()}};
}

labelled libsvm(const std::string& path, std::size_t features, std::size_t limit) {
  dml::data::libsvm_options lo;
  lo.features = features;
  const auto set = dml::data::read_libsvm(path, lo);
  const Eigen::Index n =
      limit == 0 ? set.x.rows() : std::min<Eigen::Index>(set.x.rows(), static_cast<Eigen::Index>(limit));
  if (n == 0) throw dml::data_error(path, 0, "no samples");
  labelled l{to_rows(Eigen::SparseMatrix<float, Eigen::RowMajor>(set.x.topRows(n)),
                     static_cast<std::size_t>(set.x.cols())),
             {}};
  for (Eigen::Index i = 0; i < n; ++i) l.labels.push_back(set.y[i]);
  return l;
}

// Targets (n x C) of labels for the task; `positive`: the class of --class C.
std::vector<double> targets(const std::vector<double>& labels, task t, std::size_t classes, int positive) {
  std::vector<double> y;
  for (const double label : labels) {
    if (t == task::regression) {
      y.push_back(label);
    } else if (t == task::binary) {
      y.push_back(positive >= 0 ? (label == positive ? 1.0 : -1.0) : (label > 0 ? 1.0 : -1.0));
    } else {
      for (std::size_t c = 0; c < classes; ++c) y.push_back(label == static_cast<double>(c) ? 1.0 : -1.0);
    }
  }
  return y;
}

// Accuracy of w on a set: argmax (one-vs-rest), sign (binary), R^2
// (regression).
double score(const cocoa::rows& x, const std::vector<double>& y, std::size_t outputs, task t,
             std::span<const double> w) {
  std::vector<double> z(outputs);
  double right = 0, residual = 0, mean = 0, spread = 0;
  if (t == task::regression) {
    for (const double v : y) mean += v;
    mean /= static_cast<double>(y.size());
  }
  for (std::size_t i = 0; i < x.n; ++i) {
    cocoa::predict(x, outputs, w, i, z.data());
    if (t == task::one_vs_rest) {
      const auto best = static_cast<std::size_t>(std::max_element(z.begin(), z.end()) - z.begin());
      right += y[i * outputs + best] > 0 ? 1 : 0;
    } else if (t == task::binary) {
      right += (z[0] > 0) == (y[i] > 0) ? 1 : 0;
    } else {
      residual += (z[0] - y[i]) * (z[0] - y[i]);
      spread += (y[i] - mean) * (y[i] - mean);
    }
  }
  if (t == task::regression) return spread > 0 ? 1 - residual / spread : 0;
  return right / static_cast<double>(x.n);
}

// The report's reduction: the first `summed` elements are added, the rest
// take the maximum.
struct sum_then_max {
  std::size_t summed;
  void operator()(std::span<double> own, std::span<const dml::gather::input<double>> inputs) const {
    for (const auto& in : inputs)
      in.for_each([&](std::size_t i, double v) { own[i] = i < summed ? own[i] + v : std::max(own[i], v); });
  }
};

using filter_choice = std::variant<std::monostate, dml::filter::magnitude, dml::filter::relative,
                                   dml::filter::random, dml::filter::round_robin>;

filter_choice make_filter(const std::string& name, std::uint64_t seed) {
  if (name == "magnitude") return dml::filter::magnitude{};
  if (name == "relative") return dml::filter::relative{};
  if (name == "random") return dml::filter::random{seed};
  if (name == "round_robin") return dml::filter::round_robin{};
  return std::monostate{};
}

struct evaluation {
  const cocoa::problem* p;
  const cocoa::rows* test_x;
  const std::vector<double>* test_y;
  task t;
};

void print_final(double objective, double accuracy, double bytes, std::size_t rounds, double seconds) {
  std::printf("final: objective=%.10f accuracy=%.4f bytes=%.0f rounds=%zu seconds=%.3f\n", objective,
              accuracy, bytes, rounds, seconds);
  std::fflush(stdout);
}

// The distributed run: one call per rank.
template <class Comm>
void train(Comm& comm, const options& o, const evaluation& ev) {
  using clock = std::chrono::steady_clock;
  const cocoa::problem& p = *ev.p;
  const std::size_t K = comm.size(), k = comm.rank(), width = p.width();
  const bool averaging = o.gamma == "avg";
  const double gamma = averaging ? 1.0 / static_cast<double>(K) : 1.0;
  const double sigma = averaging ? 1.0 : static_cast<double>(K);
  cocoa::local_solver solver(p, cocoa::shard_of(p.x.n, k, K, o.seed), o.seed, k);
  const std::size_t H = o.local_steps ? o.local_steps : solver.shard().size();
  // Pairs per scatter: every coordinate, or the quota's worth.
  constexpr double pair_bytes = sizeof(std::uint32_t) + sizeof(double);
  const double quota = o.quota_percent / 100 * static_cast<double>(width) * sizeof(double);
  const auto quota_pairs = static_cast<std::size_t>(quota / pair_bytes);
  const bool filtered = o.filter != "none";  // main() checked that quota_pairs >= 1
  auto dv = dml::make_delta_vector<double>(comm, width, dml::sparse{filtered ? quota_pairs : width},
                                           dml::gather::scaled_sum{gamma});
  // The report's sums: the dual sums and the linear term of every member's
  // duals, how many members added theirs, each member's bytes sent in its
  // own element, then (the maximum) the largest payload.
  const std::size_t counted_at = width + 1, bytes_at = width + 2, largest_at = width + 2 + K;
  auto reduce = dml::make_vector<double>(comm, width + 3 + K, sum_then_max{largest_at});
  // Every member's bytes as last reported: a dead member's stay counted.
  std::vector<double> bytes_of(K, 0.0);
  std::size_t changes_printed = 0;  // view-change lines printed
  filter_choice filter = make_filter(o.filter, o.seed * 7919 + k);
  double largest_payload = 0, seconds = 0;
  std::vector<double> w;

  auto report = [&](std::size_t round) {
    auto sums = reduce.span();
    std::fill(sums.begin(), sums.end(), 0.0);
    double linear = 0;
    cocoa::add_dual_sums(p, solver.shard(), solver.duals(), linear, sums.first(width));
    sums[width] = linear;
    sums[counted_at] = 1;
    sums[bytes_at + k] = static_cast<double>(dv.stats().bytes_sent);
    sums[largest_at] = largest_payload;
    reduce.scatter();
    reduce.gather();
    double bytes = 0;
    for (std::size_t m = 0; m < K; ++m) bytes += bytes_of[m] = std::max(bytes_of[m], sums[bytes_at + m]);
    // Member 0 prints, or the lowest survivor once it failed (every member
    // holds the agreed v).
    if (!dml::io::leader(comm)) return;
    trainer::print_view_changes(comm, changes_printed);
    cocoa::weights_of(p, dv.agreed(), w);
    const double objective = cocoa::primal(p, w);
    const double accuracy = score(*ev.test_x, *ev.test_y, p.outputs, ev.t, w);
    // The duality gap needs every member's duals; a dead member's are lost
    // (its share of v stays in the model, so the objective is still exact).
    char gap[16] = "n/a";
    if (sums[counted_at] == static_cast<double>(K))
      std::snprintf(gap, sizeof gap, "%.3e", objective - cocoa::dual(p, sums[width], sums.first(width)));
    std::printf("round %zu objective %.10f gap %s accuracy %.4f bytes %.0f seconds %.3f\n", round, objective,
                gap, accuracy, bytes, seconds);
    if (round == o.rounds) {
      if (filtered)
        std::printf("quota: largest_payload=%.0f quota=%.0f\n", sums[largest_at], quota_pairs * pair_bytes);
      print_final(objective, accuracy, bytes, round, seconds);
    }
    std::fflush(stdout);
  };

  report(0);
  for (std::size_t round = 1; round <= o.rounds; ++round) {
    const auto start = clock::now();
    // The local buffer is the agreed v plus what is still pending; the
    // solver adds this round's change to it and marks what it touched.
    solver.solve(dv.agreed(), sigma, H, dv.span(), [&](std::size_t j) { dv.touch(j); });
    const double before = static_cast<double>(dv.stats().payload_bytes_sent);
    std::visit(
        [&](auto& f) {
          if constexpr (std::is_same_v<std::remove_cvref_t<decltype(f)>, std::monostate>)
            dv.scatter();
          else
            dv.scatter(f);
        },
        filter);
    dv.gather();
    solver.commit(gamma);
    if (const std::size_t out = dv.in_neighbours().size(); out > 0)  // all: as many out as in
      largest_payload =
          std::max(largest_payload,
                   (static_cast<double>(dv.stats().payload_bytes_sent) - before) / static_cast<double>(out));
    seconds += std::chrono::duration<double>(clock::now() - start).count();
    if (round % o.report_every == 0 || round == o.rounds) report(round);
  }
}

/// What every process reads and derives from the command line: the
/// problem, the test set and the task.
struct loaded {
  cocoa::problem p;
  labelled test;
  std::vector<double> test_y;
  task t = task::one_vs_rest;
};

loaded load(const options& o) {
  loaded in;
  labelled train_set;
  std::size_t classes = 10;
  int positive = -1;
  if (!o.klass.empty() && o.klass != "all") positive = *cli::to_number<int>(o.klass, 0);
  if (o.data.empty()) {
    train_set = fashion(true, o.limit);
    in.test = fashion(false, 0);
    if (positive > 9) throw usage_error("--class: Fashion-MNIST has classes 0..9");
    if (positive >= 0) in.t = task::binary;
  } else {
    train_set = libsvm(o.data, 0, o.limit);
    in.test = o.test.empty() ? train_set : libsvm(o.test, train_set.x.d - 1, 0);
    const std::set<double> seen(train_set.labels.begin(), train_set.labels.end());
    const bool two = std::all_of(seen.begin(), seen.end(), [](double l) { return l == 1 || l == -1; }) ||
                     std::all_of(seen.begin(), seen.end(), [](double l) { return l == 1 || l == 0; });
    if (positive >= 0) {
      in.t = task::binary;
    } else if (o.klass == "all") {
      for (const double l : seen)
        if (l < 0 || l != std::floor(l) || l > 1000)
          throw dml::data_error(o.data, 0,
                                "--class all needs labels 0..C-1 (C <= 1001), got " + std::to_string(l));
      classes = static_cast<std::size_t>(*seen.rbegin()) + 1;
    } else {
      in.t = two ? task::binary : task::regression;
    }
  }
  cocoa::problem& p = in.p;
  p.x = std::move(train_set.x);
  p.outputs = in.t == task::one_vs_rest ? classes : 1;
  p.y = targets(train_set.labels, in.t, classes, positive);
  p.lambda = o.lambda;
  p.l1_ratio = o.l1_ratio;
  p.validate();
  if (p.x.n < o.ranks)
    throw usage_error(std::to_string(p.x.n) + " samples are too few for " + std::to_string(o.ranks) +
                      " ranks");
  if (o.filter != "none" && o.quota_percent / 100 * static_cast<double>(p.width()) * sizeof(double) < 12)
    throw usage_error("--quota-percent " + std::to_string(o.quota_percent) + " of " +
                      std::to_string(p.width()) + " weights cannot carry one index/value pair (12 bytes)");
  in.test_y = targets(in.test.labels, in.t, classes, positive);
  return in;
}

void add_to(trainer::fingerprint& f, const cocoa::rows& x) {
  f.add(x.n);
  f.add(x.d);
  f.add_span(std::span<const std::size_t>(x.start));
  f.add_span(std::span<const std::uint32_t>(x.col));
  f.add_span(std::span<const double>(x.val));
}

/// The data's fingerprint, compared between processes under MPI: what
/// training and the evaluation read.
std::uint64_t hash_of(const loaded& in) {
  trainer::fingerprint f;
  add_to(f, in.p.x);
  f.add(in.p.outputs);
  f.add_span(std::span<const double>(in.p.y));
  add_to(f, in.test.x);
  f.add_span(std::span<const double>(in.test_y));
  return f.value();
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  try {
    if (!parse(argc, argv, o)) return 0;  // --help
  } catch (const usage_error& e) {
    std::fprintf(stderr, "dml-cocoa: %s (see --help)\n", e.what());
    return 2;
  }
  try {
    trainer::launcher launch(o.transport, o.ranks, argc, argv,
                             trainer::planned_kills(o.kill_after));  // starts MPI for mpi_rma / mpi
    // Every process reads the whole data set and trains its share of the
    // samples: under MPI the processes compare what they read first
    // (read_agreed), since a file that differs between machines would mix
    // two data sets into one wrong model, and a read that failed on one
    // process would leave the others waiting.
    loaded in;
    trainer::read_agreed(
        launch, "dml-cocoa", [&] { in = load(o); },
        [&] {
          return std::pair(hash_of(in), std::to_string(in.p.x.n) + " training / " +
                                            std::to_string(in.test.x.n) + " test samples, " +
                                            std::to_string(in.p.x.d) + " features from " +
                                            (o.data.empty() ? std::string("Fashion-MNIST") : o.data));
        },
        "the data");
    const cocoa::problem& p = in.p;
    const labelled& test_set = in.test;
    const std::vector<double>& test_y = in.test_y;
    const task t = in.t;
    const evaluation ev{&p, &test_set.x, &test_y, t};
    const char* task_name = t == task::one_vs_rest ? "one-vs-rest"
                            : t == task::binary    ? "binary"
                                                   : "regression";
    char quota_note[48] = "";
    if (o.filter != "none") std::snprintf(quota_note, sizeof quota_note, " at %g %%", o.quota_percent);
    if (launch.leader())
      std::printf(
          "dml-cocoa: %zu ranks (%s), %s, gamma %s, lambda %g, l1-ratio %g, filter %s%s, %s %zu outputs, %zu "
          "training / %zu test samples, %zu features (with the bias)\n",
          o.serial ? std::size_t{1} : o.ranks, o.serial ? "serial SDCA" : o.transport.c_str(),
          o.data.empty() ? "Fashion-MNIST" : o.data.c_str(), o.gamma.c_str(), o.lambda, o.l1_ratio,
          o.filter.c_str(), quota_note, task_name, p.outputs, p.x.n, test_set.x.n, p.x.d);
    std::fflush(stdout);
    if (o.serial) {
      const auto start = std::chrono::steady_clock::now();
      const std::size_t H = o.local_steps ? o.local_steps : p.x.n;
      const cocoa::serial_result r = cocoa::serial_sdca(p, o.rounds, H, o.seed);
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::vector<double> w;
      cocoa::weights_of(p, r.v, w);
      const double objective = cocoa::primal(p, w);
      std::printf("serial: gap %.3e\n", objective - cocoa::dual(p, r.linear, r.v));
      print_final(objective, score(test_set.x, test_y, p.outputs, t, w), 0, o.rounds, seconds);
      return 0;
    }
    launch.run([&](auto& comm) { train(comm, o, ev); });
  } catch (const trainer::agreed_error& e) {  // the same on every process: the leader says it
    return trainer::agreed_failure("dml-cocoa", e);
  } catch (const usage_error& e) {
    std::fprintf(stderr, "dml-cocoa: %s (see --help)\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dml-cocoa: %s\n", e.what());
    return 1;
  }
}

// SPDX-License-Identifier: BSL-1.0
// dml-lasso: Lasso by scheduled model-parallel coordinate descent
// (SMPFRAME §4.1): every rank holds a share of the rows and a replica of
// the coefficients; each iteration a set of coordinates, the same on every
// rank, is updated from all rows -- each rank computes its rows' part, the
// engine sums them (dml::schedule::dynamic, pipelined to --depth).
//
// --schedule picks the set (dml::schedule::dyn_regr):
//   random    Shotgun: uniformly random coordinates, no dependency check;
//   priority  sampled with probability ~ squared last change (+ a floor);
//   smp       priority, then drop candidates whose column correlates with
//             a kept one by more than --tau (SMPFRAME Algorithm 2).
// --loss logistic solves sparse logistic regression with the same
// schedules. The ranks are threads (--transport inproc) or MPI processes
// (--transport mpi_rma | mpi under mpiexec: examples/common/launcher.hpp).
// The math is examples/lasso/lasso.hpp; dml-gen-lasso writes test data.
// A rank that dies (--kill-after, or a process killed under mpiexec
// --enable-recovery) is survived: the others take over its rows
// (lasso::program::reshard) and go on; a 'view' line says so.
#include <dml/data/libsvm.hpp>
#include <dml/io.hpp>
#include <dml/schedule.hpp>

#include "../common/cli.hpp"
#include "../common/kill_after.hpp"
#include "../common/launcher.hpp"
#include "../common/same_input.hpp"
#include "lasso.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace {

using cli::usage_error;

struct options {
  std::string data;
  std::string loss = "squared";
  std::string transport = "inproc";
  bool ranks_given = false;
  trainer::kill_plan kill_after;  // --kill-after R@S
  double lambda = -1;
  std::string schedule = "smp";
  std::size_t depth = 1;
  std::uint64_t iterations = 1000;
  std::size_t ranks = 4;
  std::size_t coords = 0;  // 0: 4 x ranks
  double tau = 0.2;
  double floor = 0.01;
  std::uint64_t seed = 1;
  std::size_t report_every = 1;
  double target = 0;
  bool reference = false;
};

constexpr const char* description =
    R"(Solves the Lasso, min 0.5 * sum_i (y_i - x_i b)^2 + lambda * |b|_1, on a
LIBSVM file (label = y, features = columns of X), or with --loss logistic
sparse logistic regression, min sum_i log(1 + exp(-y_i x_i b)) + lambda *
|b|_1 (labels +1/-1 or 1/0), by coordinate descent over ranks that share
the rows (--ranks threads, or the processes of an MPI job). Each iteration updates
--coords coordinates chosen by --schedule, the same on every rank; each rank
computes its rows' part and the parts are summed. Prints the objective
every --report-every iterations with the coordinate updates and data
samples (nonzeros of the updated columns) processed so far, then
final: objective=F nonzeros=K updates=U seconds=S.)";

/// The data's fingerprint, compared between processes under MPI.
std::uint64_t hash_of(const lasso::dataset& d) {
  trainer::fingerprint f;
  f.add(d.features);
  f.add_span(std::span<const double>(d.y));
  f.add_span(std::span<const std::size_t>(d.start));
  f.add_span(std::span<const lasso::parameter>(d.column));
  f.add_span(std::span<const double>(d.value));
  return f.value();
}

lasso::dataset load(const std::string& path) {
  const auto set = dml::data::read_libsvm(path);
  lasso::dataset d;
  std::vector<std::pair<lasso::parameter, double>> row;
  for (Eigen::Index i = 0; i < set.x.outerSize(); ++i) {
    row.clear();
    for (Eigen::SparseMatrix<float, Eigen::RowMajor>::InnerIterator it(set.x, i); it; ++it)
      row.emplace_back(static_cast<lasso::parameter>(it.col()), static_cast<double>(it.value()));
    d.add_row(static_cast<double>(set.y[i]), row);
  }
  d.features = static_cast<std::size_t>(set.x.cols());
  return d;
}

std::size_t nonzeros(const std::vector<double>& b) {
  std::size_t k = 0;
  for (double v : b) k += v != 0 ? 1 : 0;
  return k;
}

bool parse(int argc, char** argv, options& o) {
  const auto app = cli::app("dml-lasso", description);
  app->add_option("--loss", o.loss, "squared (the Lasso, default) | logistic")
      ->option_text("NAME")
      ->check(cli::one_of({"squared", "logistic"}));
  app->add_option("--transport", o.transport,
                  "inproc (threads, default) | mpi_rma | mpi (one rank per\nMPI process: mpiexec -n N "
                  "dml-lasso --transport mpi_rma)")
      ->option_text("NAME")
      ->check(cli::one_of({"inproc", "mpi_rma", "mpi"}));
  trainer::add_kill_after(*app, o.kill_after);
  app->add_option("--data", o.data, "LIBSVM file (required)")->option_text("FILE")->check(cli::not_empty());
  app->add_option("--lambda", o.lambda,
                  "the l1 weight, >= 0 (required; the header prints\nlambda_max, from which b = 0)")
      ->option_text("L")
      ->check(cli::number_where<double>([](double l) { return l >= 0; }, "must be a number >= 0"));
  app->add_option("--schedule", o.schedule, "random | priority | smp, default smp")
      ->option_text("NAME")
      ->check(cli::one_of({"random", "priority", "smp"}));
  app->add_option("--depth", o.depth, "pipeline depth s: iteration t uses the model of t - s,\ndefault 1")
      ->option_text("S")
      ->check(
          cli::number_where<std::size_t>([](std::size_t s) { return s >= 1 && s <= 64; }, "must be 1..64"));
  app->add_option("--iterations", o.iterations, "default 1000")
      ->option_text("K")
      ->check(cli::whole_number<std::uint64_t>());
  app->add_option("--ranks", o.ranks, "in-process ranks, default 4")
      ->option_text("N")
      ->check(
          cli::number_where<std::size_t>([](std::size_t n) { return n >= 1 && n <= 256; }, "must be 1..256"));
  app->add_option("--coords", o.coords, "coordinates per iteration, default 4 x ranks")
      ->option_text("C")
      ->check(cli::whole_number());
  app->add_option("--tau", o.tau, "smp: largest |column correlation| kept together,\n[0, 1], default 0.2")
      ->option_text("T")
      ->check(cli::number_where<double>([](double t) { return t >= 0 && t <= 1; }, "must be in [0, 1]"));
  app->add_option("--floor", o.floor, "priority, smp: weight floor (share of the largest),\ndefault 0.01")
      ->option_text("X")
      ->check(cli::number_where<double>([](double f) { return f >= 0; }, "must be >= 0"));
  app->add_option("--seed", o.seed, "of the schedule, default 1")
      ->option_text("N")
      ->check(cli::whole_number<std::uint64_t>(0));
  app->add_option("--report-every", o.report_every, "iterations between objective lines, default 1")
      ->option_text("N")
      ->check(cli::whole_number());
  app->add_option("--target", o.target, "stop once the objective is at most F")
      ->option_text("F")
      ->check(cli::positive_number());
  app->add_flag(
      "--reference", o.reference,
      "only run serial cyclic coordinate descent to convergence\nand print reference: objective=...");
  if (!cli::parse(*app, argc, argv)) return false;
  if (o.data.empty()) throw usage_error("--data FILE is required");
  if (o.lambda < 0) throw usage_error("--lambda L is required (a number >= 0)");
  o.ranks_given = app->count("--ranks") > 0;
  if (o.transport != "inproc" && o.ranks_given)
    throw usage_error("--ranks is for --transport inproc; with " + o.transport +
                      " every MPI process is one rank (mpiexec -n N)");
  trainer::check_kills(o.kill_after, o.transport, o.ranks);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  try {
    if (!parse(argc, argv, o)) return 0;  // --help
  } catch (const usage_error& e) {
    std::fprintf(stderr, "dml-lasso: %s (see --help)\n", e.what());
    return 2;
  }
  try {
    const auto kills = trainer::planned_kills(o.kill_after);
    trainer::launcher launch(o.transport, o.ranks, argc, argv, kills);  // starts MPI for mpi_rma / mpi
    if (o.coords == 0) o.coords = 4 * o.ranks;
    const lasso::loss kind = o.loss == "logistic" ? lasso::loss::logistic : lasso::loss::squared;
    lasso::dataset data;
    // Every process reads the whole file and updates its share of the
    // coordinates from it: under MPI the processes compare what they read
    // first (read_agreed), since different data (a file that differs
    // between machines) would mix into one wrong objective, and a read
    // that failed on one process would leave the others waiting.
    trainer::read_agreed(
        launch, "dml-lasso",
        [&] { data = kind == lasso::loss::logistic ? lasso::logistic_labels(load(o.data)) : load(o.data); },
        [&] {
          return std::pair(hash_of(data), std::to_string(data.rows()) + " samples, " +
                                              std::to_string(data.features) + " features, " +
                                              std::to_string(data.value.size()) + " nonzeros from " + o.data);
        },
        "the data");
    if (o.reference) {
      const auto start = std::chrono::steady_clock::now();
      const auto ref = lasso::serial_cd(data, o.lambda, 1e-12, 100000, kind);
      if (launch.leader())
        std::printf("reference: objective=%.10g nonzeros=%zu sweeps=%zu seconds=%.3f\n", ref.objective,
                    nonzeros(ref.beta), ref.sweeps,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      return 0;
    }
    lasso::settings s;
    s.kind = kind;
    s.lambda = o.lambda;
    s.schedule = o.schedule == "random"     ? lasso::schedule_kind::random
                 : o.schedule == "priority" ? lasso::schedule_kind::priority
                                            : lasso::schedule_kind::smp;
    s.set_size = o.coords;
    s.tau = o.tau;
    s.floor = o.floor;
    s.report_every = o.report_every;
    s.target = o.target;
    s.validate();
    if (launch.leader()) {
      std::printf(
          "dml-lasso: %zu ranks (%s), loss %s, schedule %s%s, %zu coordinates per iteration, depth %zu, "
          "lambda %g (lambda_max %g), %zu samples, %zu features\n",
          o.ranks, o.transport.c_str(), o.loss.c_str(), o.schedule.c_str(),
          o.schedule == "smp" ? (" (tau " + std::to_string(o.tau) + ")").c_str() : "", o.coords, o.depth,
          o.lambda, lasso::lambda_max(data, kind), data.rows(), data.features);
      std::printf("iteration 0 objective %.10g updates 0 samples 0 seconds 0\n",
                  lasso::objective(data, std::vector<double>(data.features, 0.0), o.lambda, kind));
      std::fflush(stdout);
    }
    std::vector<double> beta;
    dml::schedule::run_stats stats;
    std::uint64_t updates = 0;
    bool reporter = false;  // this process's member printed the last report
    auto print_final = [&] {
      std::printf("final: objective=%.10g nonzeros=%zu updates=%llu seconds=%.3f\n",
                  lasso::objective(data, beta, o.lambda, kind), nonzeros(beta),
                  static_cast<unsigned long long>(updates), stats.seconds);
      std::fflush(stdout);
    };
    launch.run([&](auto& comm) {
      lasso::program prog(data, comm.rank(), o.ranks, s);
      std::size_t changes_printed = 0;  // view-change lines printed
      // The last iteration this member printed: one reported again after a
      // failure is printed once.
      std::uint64_t printed = ~std::uint64_t{0};
      prog.on_report = [&](const lasso::report& r) {
        if (!dml::io::leader(comm)) return;  // member 0, or the lowest survivor once it failed
        trainer::print_view_changes(comm, changes_printed);
        if (r.iteration == printed) return;
        printed = r.iteration;
        std::printf("iteration %llu objective %.10g updates %llu samples %llu seconds %.4f\n",
                    static_cast<unsigned long long>(r.iteration), r.objective,
                    static_cast<unsigned long long>(r.updates), static_cast<unsigned long long>(r.samples),
                    r.seconds);
        std::fflush(stdout);
      };
      const auto st = dml::schedule::run(comm, prog, dml::schedule::dynamic{.depth = o.depth, .seed = o.seed},
                                         o.iterations);
      // Every member holds the model: the reporter takes it (a survivor
      // takes over under MPI when the reporter died after its last report).
      auto take = [&] {
        reporter = true;
        trainer::print_view_changes(comm, changes_printed);
        trainer::print_failures_survived(st);
        beta = prog.beta();
        stats = st;
        updates = prog.updates();
      };
      if (dml::io::leader(comm)) take();
      trainer::print_final_surviving(launch, comm, [&] {
        if (!reporter) take();
        print_final();
      });
    });
    // In-process the members share the result: printed once, here.
    if (reporter && launch.in_process()) print_final();
  } catch (const trainer::agreed_error& e) {  // the same on every process: the leader says it
    return trainer::agreed_failure("dml-lasso", e);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dml-lasso: %s\n", e.what());
    return 1;
  }
}

// SPDX-License-Identifier: BSL-1.0
// dml-least-squares: linear least-squares regression by minibatch SGD, data
// parallel over in-process ranks or MPI processes.
//
// From a serial trainer to this one. A serial loop looks like
//
//     Eigen::VectorXf w = Eigen::VectorXf::Zero(dim), g(dim);
//     for (each minibatch B of size R * b) {
//       g = (2 / |B|) * X_B^T (X_B w - y_B);
//       w -= lr * g;
//     }
//
// Four changes make it data parallel (see train() below):
//  1. The loop moves into a function of a transport context `comm`, and
//     main() starts the ranks: dml::comm::inproc::run(R, fn) for threads, or
//     an MPI context (dml::comm::mpi_rma) per process; trainer::launcher
//     (examples/common/launcher.hpp) picks by --transport.
//  2. Each rank walks its own shard: rank r takes rows r, r + R, r + 2R, ...,
//     a minibatch of b rows each step.
//  3. The gradient buffer becomes a distributed vector:
//     `auto v = dml::make_vector<float>(comm, dim, topology, consistency,
//     dml::gather::average{})`; the gradient is written into v.eigen().
//  4. Between computing and applying the gradient: v.scatter(); v.gather();
//     afterwards v.eigen() holds the combined gradient.
// With consistency::bsp (or notify_ack) over topology::all, gather::average
// turns v into the mean of all R ranks' gradients, so every rank takes
// exactly the step serial SGD with minibatch R * b takes, and all replicas
// of w stay equal.
//
// Anywhere else (asp, ssp, sparse topologies) ranks combine different
// gradients, and averaging gradients does nothing to pull the replicas of w
// back together: they drift apart, and training can diverge (halton + bsp
// reaches mse 14.7 after 10 epochs here, ssp over all starts to diverge
// after a few dozen epochs). There, average the models instead (--exchange models): each rank
// steps with its own gradient, then v carries w through scatter() and
// gather(); averaging w with the neighbours' keeps the replicas in consensus
// (decentralized SGD, as in MALT and ASAP). Over all with bsp it takes the
// same steps as averaging gradients.
//
// Failures: --kill R@STEP makes in-process member R stop at training step
// STEP as if its process had died (under MPI, kill a process from outside).
// The training loop does nothing about it: the vectors notice the dead
// member, the survivors agree on a new view, every vector rebuilds its graph
// over them and training goes on (with --on-failure abort every survivor
// throws dml::peer_failure instead). The dead member's shard is no longer
// trained on, and the reported model is the survivors' mean. Only reporting
// takes care: the lowest live member reports (dml::io::leader), and every
// member keeps the last report's mean, so that a member that takes over
// from a dead reporter can print the result.
#include <dml/dml.hpp>
#include <dml/fault/membership.hpp>
#include <dml/vector/eigen.hpp>

#include "../common/cli.hpp"
#include "../common/launcher.hpp"
#include "../common/same_input.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <initializer_list>
#include <iterator>
#include <optional>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

struct settings {
  std::size_t ranks = 8, epochs = 10, dim = 32, samples = 8192, batch = 32;
  float lr = 0.05f;
  std::uint64_t seed = 1;
  std::string transport = "inproc", topology = "all", consistency = "bsp";
  bool ranks_given = false;      // --ranks was on the command line
  bool exchange_models = false;  // --exchange models
  bool check = false;            // --check-against-single
  struct planned_kill {
    dml::member_id member = 0;
    std::size_t step = 0;  // 1-based, counted over all epochs
    std::string text;      // as given, for messages
  };
  std::vector<planned_kill> kills;  // --kill R@STEP (in-process only)
  dml::fault::policy on_failure = dml::fault::policy::tolerate;
  bool on_failure_given = false;
};

using trainer::usage_error;

constexpr float noise_sd = 0.5f;  // y = x . w* + N(0, noise_sd^2)

struct dataset {
  Eigen::MatrixXf x;  // samples x dim, standard normal features
  Eigen::VectorXf y;
};

dataset generate(const settings& s) {
  std::mt19937_64 rng(s.seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto draw = [&] { return normal(rng); };
  const auto n = static_cast<Eigen::Index>(s.samples), d = static_cast<Eigen::Index>(s.dim);
  const Eigen::VectorXf w_true = Eigen::VectorXf::NullaryExpr(d, draw);
  dataset data{Eigen::MatrixXf::NullaryExpr(n, d, draw), {}};
  data.y = data.x * w_true + noise_sd * Eigen::VectorXf::NullaryExpr(n, draw);
  return data;
}

float mse(const dataset& d, const Eigen::VectorXf& w) {
  return (d.x * w - d.y).squaredNorm() / static_cast<float>(d.x.rows());
}

struct outcome {
  float loss = 0;
  double seconds = 0, bytes = 0;
  Eigen::VectorXf model;                         // averaged over ranks (the survivors, after a failure)
  std::vector<dml::fault::view_change> changes;  // as the last reporting member saw them
};

// "view 1: member 3 removed, 7 left; detected after 12.3 us, vectors rebuilt after 0.41 ms"
void print_view_change(const dml::fault::view_change& c) {
  std::printf(
      "view %llu: member%s %s removed, %zu left; detected after %.1f us, vectors rebuilt after %.2f ms\n",
      static_cast<unsigned long long>(c.epoch), c.removed.size() == 1 ? "" : "s",
      dml::fault::list(c.removed).c_str(), c.live.size(), 1e6 * c.detection_seconds,
      1e3 * c.recovery_seconds);
}

// The view changes and the 'final:' line.
void print_result(const outcome& r, std::size_t epochs) {
  for (const auto& c : r.changes) print_view_change(c);
  std::printf("final: loss=%.6f seconds=%.3f bytes=%.0f epochs=%zu\n", static_cast<double>(r.loss), r.seconds,
              r.bytes, epochs);
  std::fflush(stdout);
}

template <class Consistency>
outcome train(trainer::launcher& launch, const dml::topology::any& topology, const Consistency& consistency,
              const settings& s, const dataset& data, bool verbose) {
  outcome result;
  launch.run([&](auto& comm) {
    // --on-failure (otherwise the default, tolerate, or DML_FAILURE_POLICY).
    if (s.on_failure_given) dml::fault::set_policy(comm, s.on_failure);
    const auto ranks = static_cast<Eigen::Index>(comm.size()), rank = static_cast<Eigen::Index>(comm.rank());
    const auto b = static_cast<Eigen::Index>(s.batch), dim = static_cast<Eigen::Index>(s.dim);
    // The one distributed vector training needs: it carries each step's
    // gradient (or, with --exchange models, each rank's updated model).
    auto v = dml::make_vector<float>(comm, s.dim, topology, consistency, dml::gather::average{});
    // For reporting only: the defaults (bsp, all, average) make this the exact
    // mean over ranks of [model, bytes sent, share of full gathers]. It is a
    // barrier once per epoch, under every consistency policy.
    auto mean = dml::make_vector<double>(comm, s.dim + 2);
    Eigen::VectorXf w = Eigen::VectorXf::Zero(dim);
    const Eigen::Index steps = data.x.rows() / (ranks * b);  // per epoch; leftover rows stay unused
    // Fault injection (--kill): the step at which this member stops, 0 for never.
    std::size_t stop_at = 0;
    for (const auto& k : s.kills)
      if (k.member == comm.rank()) stop_at = k.step;
    double seconds = 0;  // training time (the reporting member's is reported)
    // The last report's mean, which every member holds, and whether this
    // member evaluated it (it was the reporting member then).
    Eigen::VectorXd last;
    bool evaluated = false;
    auto evaluate = [&] {
      const Eigen::VectorXf model = last.head(dim).cast<float>();
      result.loss = mse(data, model);
      result.seconds = seconds;
      result.bytes = last[dim];
      result.model = model;
      evaluated = true;
    };

    auto report = [&](std::size_t epoch) {
      mean.eigen().head(dim) = w.cast<double>();
      mean.eigen()[dim] = static_cast<double>(v.stats().bytes_sent);
      mean.eigen()[dim + 1] = v.stats().full_share();
      mean.scatter();
      mean.gather();
      last = mean.eigen();
      evaluated = false;
      if (!dml::io::leader(comm)) return;  // member 0, or the lowest survivor once it failed
      evaluate();
      if (verbose)
        std::printf("epoch %3zu  %7.3f s  mse %10.5f  %12.0f bytes sent per member  %5.1f%% full gathers\n",
                    epoch, seconds, static_cast<double>(result.loss), result.bytes, 100 * last[dim + 1]);
    };

    report(0);
    for (std::size_t epoch = 1; epoch <= s.epochs; ++epoch) {
      const auto start = std::chrono::steady_clock::now();
      for (Eigen::Index k = 0; k < steps; ++k) {
        {
          const auto step = (epoch - 1) * static_cast<std::size_t>(steps) + static_cast<std::size_t>(k) + 1;
          if (step == stop_at) comm.stop();  // never returns: this member is dead from here on
        }
        // Rows k*R*b + rank, + R, + 2R, ...: R ranks together cover the rows
        // k*R*b .. (k+1)*R*b - 1, the same minibatch a single rank with batch
        // R*b takes in step k.
        const auto rows = Eigen::seqN(k * ranks * b + rank, b, ranks);
        const Eigen::MatrixXf xb = data.x(rows, Eigen::all);
        const Eigen::VectorXf grad =
            (2.0f / static_cast<float>(b)) * (xb.transpose() * (xb * w - data.y(rows)));
        if (!s.exchange_models) {  // average the gradients, then step
          v.eigen() = grad;
          v.scatter();
          v.gather();
          w -= s.lr * v.eigen();
        } else {  // step, then average the models (decentralized SGD)
          v.eigen() = w - s.lr * grad;
          v.scatter();
          v.gather();
          w = v.eigen();
        }
      }
      seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      report(epoch);
    }
    // The result: from the reporting member, or from the one that took over
    // after it died (it evaluates the last report's mean itself).
    auto finish = [&] {
      if (!evaluated) evaluate();
      result.changes = dml::fault::view_changes(comm);
    };
    if (launch.in_process()) {
      if (dml::io::leader(comm)) finish();  // main() prints it once
    } else {
      trainer::print_final_surviving(launch, comm, [&] {
        finish();
        print_result(result, s.epochs);
      });
    }
  });
  return result;
}

// Runtime names to policies: the topology at run time (one vector type for
// all of them), the consistency policy as a type.
outcome train(trainer::launcher& launch, const settings& s, const dataset& data, bool verbose) {
  namespace t = dml::topology;
  namespace c = dml::consistency;
  t::any topology = t::ring{};
  if (s.topology == "all") topology = t::all{};
  if (s.topology == "halton") topology = t::halton{};
  if (s.topology == "root_expander") topology = t::root_expander{};
  c::any consistency = c::notify_ack{};
  if (s.consistency == "bsp") consistency = c::bsp{};
  if (s.consistency == "asp") consistency = c::asp{};
  if (s.consistency == "ssp") consistency = c::ssp<2>{};
  return train<c::any>(launch, topology, consistency, s, data, verbose);
}

// The acceptance check: do R ranks reach the loss of one rank? Under bsp or
// notify_ack over all, R ranks with batch b take exactly the steps of one
// rank with batch R*b (the same rows, averaged), so those two runs may differ
// only by float rounding: their losses must agree to 0.1%. One rank with
// batch b takes R times as many noisier steps, a different algorithm, so it
// is only held to the noise floor: every run must end within 10% of the
// noise variance (the least-squares optimum's training MSE is about
// noise_sd^2 * (1 - dim / samples), slightly below it).
int check_against_single(settings s, const dataset& data) {
  const std::size_t ranks = s.ranks, b = s.batch;
  const bool exact = s.topology == "all" && (s.consistency == "bsp" || s.consistency == "notify_ack");
  trainer::launcher threads(ranks), one(1);
  const outcome many = train(threads, s, data, false);
  s.ranks = 1;
  s.batch = ranks * b;
  const outcome same_steps = train(one, s, data, false);
  s.batch = b;
  const outcome small_batch = train(one, s, data, false);
  const double floor = double{noise_sd} * noise_sd, limit = 1.1 * floor;
  const double diff = std::abs(double{many.loss} - same_steps.loss) / same_steps.loss;
  std::printf("check: %zu ranks x batch %zu: mse %.6f\n", ranks, b, static_cast<double>(many.loss));
  std::printf("check: 1 rank x batch %zu: mse %.6f (relative difference %.2e%s)\n", ranks * b,
              static_cast<double>(same_steps.loss), diff, exact ? ", must be below 1e-3" : ", not compared");
  if (exact)
    std::printf("check: their models differ by %.2e relative (float rounding)\n",
                static_cast<double>((many.model - same_steps.model).norm() / same_steps.model.norm()));
  std::printf("check: 1 rank x batch %zu: mse %.6f\n", b, static_cast<double>(small_batch.loss));
  std::printf("check: noise variance %.4f; every run must end below %.4f\n", floor, limit);
  const bool ok =
      (!exact || diff < 1e-3) && many.loss < limit && same_steps.loss < limit && small_batch.loss < limit;
  std::printf("check: %s\n", ok ? "passed" : "FAILED");
  return ok ? 0 : 1;
}

// --kill R@STEP: member R stops at training step STEP (1-based, counted
// over all epochs). Checked against --ranks in check_kills().
std::optional<settings::planned_kill> parse_kill(std::string_view text) {
  const auto at = text.find('@');
  settings::planned_kill k;
  k.text = std::string(text);
  auto whole = [&](std::string_view part, auto& out) {
    const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), out);
    return !part.empty() && ec == std::errc{} && end == part.data() + part.size();
  };
  if (at == std::string_view::npos || !whole(text.substr(0, at), k.member) ||
      !whole(text.substr(at + 1), k.step))
    return std::nullopt;
  return k;
}

void check_kills(const settings& s) {
  if (s.kills.empty()) return;
  if (s.kills.size() >= s.ranks)
    throw usage_error("--kill given " + std::to_string(s.kills.size()) +
                      (s.kills.size() == 1 ? " time" : " times") + ", but of " + std::to_string(s.ranks) +
                      (s.ranks == 1 ? " rank" : " ranks") + " at most " + std::to_string(s.ranks - 1) +
                      " can be killed (one must survive)");
  for (std::size_t i = 0; i < s.kills.size(); ++i) {
    const auto& k = s.kills[i];
    if (k.member >= s.ranks)
      throw usage_error("--kill " + k.text + ": there is no member " + std::to_string(k.member) + " among " +
                        std::to_string(s.ranks) + " ranks (they are members 0 to " +
                        std::to_string(s.ranks - 1) + ")");
    for (std::size_t j = 0; j < i; ++j)
      if (s.kills[j].member == k.member)
        throw usage_error("--kill " + k.text + ": member " + std::to_string(k.member) +
                          " is already killed by --kill " + s.kills[j].text);
  }
}

constexpr const char* description =
    R"(Trains linear least squares y = x . w by minibatch SGD on generated data
(standard normal features, y = x . w* + N(0, 0.25)), data parallel over
ranks that average gradients or models with a dml distributed vector.)";

constexpr const char* footer = R"(Prints one line per epoch, one 'view E: ...' line per membership change, and
finally 'final: loss=... seconds=... bytes=... epochs=...'.)";

// The command line into s: --help printed (false), or parsed and checked.
bool parse(int argc, char** argv, settings& s) {
  const auto app = cli::app("dml-least-squares", description, footer);
  app->add_option("--transport", s.transport,
                  "inproc (threads, default) | mpi_rma | mpi (one rank per\nMPI process: mpiexec -n N "
                  "dml-least-squares ...)")
      ->option_text("NAME")
      ->check(cli::one_of({"inproc", "mpi_rma", "mpi"}));
  app->add_option("--ranks", s.ranks, "in-process ranks (threads) for inproc, default 8")
      ->option_text("N")
      ->check(cli::whole_number());
  app->add_option("--topology", s.topology, "all | halton | root_expander | ring, default all")
      ->option_text("NAME")
      ->check(cli::one_of({"all", "halton", "root_expander", "ring"}));
  app->add_option("--consistency", s.consistency, "bsp | asp | ssp (slack 2) | notify_ack, default bsp")
      ->option_text("NAME")
      ->check(cli::one_of({"bsp", "asp", "ssp", "notify_ack"}));
  std::string exchange = "gradients", on_failure = "tolerate";
  std::vector<std::string> kills;
  app->add_option(
         "--exchange", exchange,
         "gradients | models, default gradients: averaging\ngradients is exact synchronous SGD with bsp "
         "or\nnotify_ack over all; elsewhere average models")
      ->option_text("WHAT")
      ->check(cli::one_of({"gradients", "models"}));
  app->add_option("--epochs", s.epochs, "passes over the data, default 10")
      ->option_text("N")
      ->check(cli::whole_number());
  app->add_option("--lr", s.lr, "learning rate, default 0.05")
      ->option_text("X")
      ->check(cli::positive_number<float>());
  app->add_option("--dim", s.dim, "features, default 32")->option_text("N")->check(cli::whole_number());
  app->add_option("--samples", s.samples, "samples, default 8192")
      ->option_text("N")
      ->check(cli::whole_number());
  app->add_option("--batch", s.batch, "minibatch per rank and step, default 32")
      ->option_text("N")
      ->check(cli::whole_number());
  app->add_option("--seed", s.seed, "data seed, default 1")
      ->option_text("N")
      ->check(cli::whole_number<std::uint64_t>(0));
  app->add_flag("--check-against-single", s.check, "also train 1 rank and check both reach the same loss");
  app->add_option(
         "--kill", kills,
         "in-process only: member R (0 .. ranks-1) stops at\ntraining step STEP (from 1, counted over all "
         "epochs)\nas if its process died; repeatable. Under MPI kill a\nprocess from outside (kill -9; "
         "docs/fault-tolerance.md)")
      ->option_text("R@STEP")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->check(CLI::Validator(
          [](std::string& v) {
            return parse_kill(v)
                       ? std::string()
                       : "needs MEMBER@STEP, e.g. 3@20 (member 3 stops at training step 20), got '" + v + "'";
          },
          "R@STEP"));
  app->add_option(
         "--on-failure", on_failure,
         "tolerate | abort, default tolerate:\nthe survivors rebuild their vectors over themselves\nand go "
         "on, or every survivor stops with an error\nnaming the dead")
      ->option_text("WHAT")
      ->check(cli::one_of({"tolerate", "abort"}));
  if (!cli::parse(*app, argc, argv)) return false;
  s.ranks_given = app->count("--ranks") > 0;
  s.exchange_models = exchange == "models";
  s.on_failure_given = app->count("--on-failure") > 0;
  s.on_failure = on_failure == "tolerate" ? dml::fault::policy::tolerate : dml::fault::policy::abort;
  for (const auto& k : kills) {
    s.kills.push_back(*parse_kill(k));
    if (s.kills.back().step == 0)
      throw usage_error("--kill " + k + ": steps are counted from 1 (the first training step)");
  }
  if (s.ranks > 256)
    throw usage_error("--ranks " + std::to_string(s.ranks) + " is too many (at most 256 threads)");
  if (s.transport != "inproc" && s.ranks_given)
    throw usage_error("--ranks is for --transport inproc; with " + s.transport +
                      " every MPI process is one rank (mpiexec -n N)");
  if (s.transport != "inproc" && s.check)
    throw usage_error("--check-against-single compares in-process runs (--transport inproc)");
  if (s.transport != "inproc" && !s.kills.empty())
    throw usage_error("--kill stops an in-process rank (--transport inproc); with " + s.transport +
                      " kill an MPI process from outside, e.g. with kill -9; see docs/fault-tolerance.md");
  if (s.check && !s.kills.empty())
    throw usage_error("--check-against-single compares runs without failures; drop --kill");
  check_kills(s);
  if (s.samples > (std::size_t{1} << 28) / s.dim)
    throw usage_error("--samples " + std::to_string(s.samples) + " x --dim " + std::to_string(s.dim) +
                      " is too much data for this example (at most 2^28 values)");
  return true;
}

// Once the number of ranks is known (under MPI: after MPI started).
void require_enough_samples(const settings& s) {
  if (s.samples / s.ranks < s.batch)
    throw usage_error("--samples " + std::to_string(s.samples) + " is too few: " + std::to_string(s.ranks) +
                      " ranks with batch " + std::to_string(s.batch) + " need at least " +
                      std::to_string(s.ranks * s.batch) + " per step");
  const std::size_t per_epoch = s.samples / (s.ranks * s.batch);
  for (const auto& k : s.kills)
    if (k.step > s.epochs * per_epoch)
      throw usage_error("--kill " + k.text + ": training has only " + std::to_string(s.epochs * per_epoch) +
                        " steps (" + std::to_string(s.epochs) + " epochs of " + std::to_string(per_epoch) +
                        ")");
}

}  // namespace

int main(int argc, char** argv) {
  settings s;
  try {
    if (!parse(argc, argv, s)) return 0;  // --help
  } catch (const usage_error& e) {
    std::fprintf(stderr, "dml-least-squares: %s (see --help)\n", e.what());
    return 2;
  }
  try {
    trainer::launcher launch(s.transport, s.ranks, argc, argv);  // starts MPI for mpi_rma / mpi
    // Every process generates the whole data set from --seed and trains its
    // share: under MPI the processes compare what they generated first
    // (read_agreed), since processes started with other generator options
    // (or a standard library whose normal distribution draws differently)
    // would mix two data sets into one wrong model.
    dataset data;
    trainer::read_agreed(
        launch, "dml-least-squares",
        [&] {
          require_enough_samples(s);
          data = generate(s);
        },
        [&] {
          trainer::fingerprint f;
          f.add(static_cast<std::uint64_t>(data.x.rows()));
          f.add(static_cast<std::uint64_t>(data.x.cols()));
          f.add_span(std::span<const float>(data.x.data(), static_cast<std::size_t>(data.x.size())));
          f.add_span(std::span<const float>(data.y.data(), static_cast<std::size_t>(data.y.size())));
          return std::pair(f.value(), std::to_string(data.x.rows()) + " samples x " +
                                          std::to_string(data.x.cols()) + " features from --seed " +
                                          std::to_string(s.seed));
        },
        "the generated data");
    if (s.check) return check_against_single(s, data);
    if (launch.leader())
      std::printf(
          "%zu ranks, topology %s, consistency %s, exchange %s, %zu samples x %zu features, batch %zu per "
          "rank, "
          "lr %g\n",
          s.ranks, s.topology.c_str(), s.consistency.c_str(), s.exchange_models ? "models" : "gradients",
          s.samples, s.dim, s.batch, static_cast<double>(s.lr));
    const outcome r = train(launch, s, data, true);
    // Under MPI train() printed the result (on the member that reported).
    if (launch.in_process()) print_result(r, s.epochs);
  } catch (const trainer::agreed_error& e) {  // the same on every process: the leader says it
    return trainer::agreed_failure("dml-least-squares", e);
  } catch (const usage_error& e) {
    std::fprintf(stderr, "dml-least-squares: %s (see --help)\n", e.what());
    return 2;
  } catch (const dml::peer_failure& e) {  // --on-failure abort
    std::fprintf(stderr, "dml-least-squares: member %zu failed: %s\n", e.rank(), e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dml-least-squares: %s\n", e.what());
    return 1;
  }
}

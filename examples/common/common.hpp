// SPDX-License-Identifier: BSL-1.0
// Shared by the reference trainers: the common command line, where the ranks
// run (in-process threads or MPI processes), runtime policy names to
// compile-time policies, data sets (Fashion-MNIST or LIBSVM files, dense or
// sparse rows), the exact model mean of the reports, and the per-epoch
// progress line / CSV row. Nothing here is dml API; a trainer copied out of
// examples/ takes this file (and linear.hpp, cli.hpp, launcher.hpp and
// launcher.cpp, which its build compiles once) along.
#pragma once

#include <dml/data.hpp>
#include <dml/dml.hpp>
#include <dml/fault/membership.hpp>
#include <dml/io.hpp>
#include <dml/vector/eigen.hpp>

#include "cli.hpp"
#include "kill_after.hpp"
#include "launcher.hpp"
#include "linear.hpp"
#include "same_input.hpp"

#include <Eigen/Core>
#include <Eigen/SparseCore>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <unistd.h>  // sysconf: the machine's memory

#ifndef DML_FASHION_MNIST_DIR
#define DML_FASHION_MNIST_DIR "/usr/share/datasets/fashion-mnist"
#endif

namespace trainer {

/// The options every trainer shares.
struct settings {
  std::size_t ranks = 8, epochs = 10, cb_size = 32, limit = 0;
  std::size_t test_limit = 0;  // --test-limit: evaluate on the first N test samples (0: all)
  float lr = 0.1f;
  std::uint64_t seed = 1;
  std::string transport = "inproc", topology = "all", consistency = "bsp";
  /// --slack: how many clocks an input may lag behind under ssp,
  /// ssp_bounded and asp_fresh; --stall-ms: ssp_bounded's bounded stall.
  std::size_t slack = 2, stall_ms = 50;
  std::string data, test, csv;  // empty data/test: Fashion-MNIST
  bool ranks_given = false;     // --ranks was on the command line
  bool lr_given = false;        // --lr was on the command line
  bool cb_size_given = false;   // --cb-size was on the command line
  /// Members may take unequal numbers of local steps (dml-logreg
  /// --seconds): --consistency adaptive may then balance the periods.
  bool uneven_work = false;
  /// --kill-after R@SECONDS: in-process member R dies that long after the
  /// trainer started (at its next transport operation).
  kill_plan kill_after;
};

/// The planned in-process kills of s as times, for the launcher.
inline std::vector<std::pair<std::size_t, std::chrono::steady_clock::time_point>> planned_kills(
    const settings& s) {
  return planned_kills(s.kill_after);
}

/// The command line of a trainer: the options every trainer shares, written
/// into `s` (whose values at this call are the defaults the help names);
/// the trainer adds its own options to the returned app, then calls parse.
/// `extra_topology`: one more --topology name that the trainer handles
/// itself (dml-svm-sgd's "ps"), with `extra_help`, its line in the help.
inline std::unique_ptr<CLI::App> command_line(const std::string& name, const std::string& description,
                                              settings& s, const std::string& extra_topology = {},
                                              const std::string& extra_help = {}) {
  auto app = cli::app(name, description);
  auto text = [](const char* what, const auto& value) {
    std::string t(what);
    if constexpr (std::is_arithmetic_v<std::remove_cvref_t<decltype(value)>>) {
      char v[32];
      std::snprintf(v, sizeof v, "%g", static_cast<double>(value));
      t += ", default ";
      t += v;
    }
    return t;
  };
  app->add_option("--transport", s.transport,
                  "inproc (threads, default) | mpi_rma | mpi (one rank per\nMPI process: mpiexec -n N " +
                      name + " --transport mpi_rma)")
      ->option_text("NAME")
      ->check(cli::one_of({"inproc", "mpi_rma", "mpi"}));
  app->add_option("--ranks", s.ranks, text("in-process ranks (threads) for inproc", s.ranks))
      ->option_text("N")
      ->check(cli::whole_number());
  std::vector<std::string> topologies{"all", "halton", "root_expander", "ring"};
  if (!extra_topology.empty()) topologies.push_back(extra_topology);
  app->add_option("--topology", s.topology,
                  "all | halton | root_expander | ring" +
                      (extra_topology.empty() ? "" : " | " + extra_topology) + ", default all" +
                      (extra_help.empty() ? "" : "\n" + extra_help))
      ->option_text("NAME")
      ->check(cli::one_of(std::move(topologies)));
  app->add_option("--consistency", s.consistency,
                  "bsp | asp | ssp | notify_ack | adaptive | ssp_bounded |\nasp_fresh (ssp: slack --slack; "
                  "adaptive: bsp/ssp/asp\nswitched during the run by a controller, docs/adaptive.md;\n"
                  "ssp_bounded: MALT's SSP, waits at most --stall-ms for a\nneighbour more than --slack "
                  "clocks behind; asp_fresh:\nMALT's ASP, asp skipping updates more than --slack\nclocks "
                  "old), default bsp")
      ->option_text("NAME")
      ->check(cli::one_of({"bsp", "asp", "ssp", "notify_ack", "adaptive", "ssp_bounded", "asp_fresh"}));
  app->add_option(
         "--slack", s.slack,
         "clocks an input may lag behind under ssp, ssp_bounded\nand asp_fresh: 0 .. 1000, default 2")
      ->option_text("S")
      ->check(cli::number_where<std::size_t>([](std::size_t v) { return v <= 1000; }, "needs 0 .. 1000"));
  app->add_option("--stall-ms", s.stall_ms,
                  "ssp_bounded: how long a gather waits for lagging\nneighbours, in milliseconds, default 50")
      ->option_text("MS")
      ->check(cli::whole_number<std::size_t>(0));
  app->add_option("--cb-size", s.cb_size, text("examples per rank between communications", s.cb_size))
      ->option_text("N")
      ->check(cli::whole_number());
  app->add_option("--epochs", s.epochs, text("passes over the training data", s.epochs))
      ->option_text("N")
      ->check(cli::whole_number());
  app->add_option("--lr", s.lr, text("learning rate", s.lr))
      ->option_text("X")
      ->check(cli::positive_number<float>());
  app->add_option("--seed", s.seed, text("shuffle / initialization seed", s.seed))
      ->option_text("N")
      ->check(cli::whole_number<std::uint64_t>(0));
  app->add_option("--limit", s.limit, "use only the first N training samples")
      ->option_text("N")
      ->check(cli::whole_number());
  app->add_option("--test-limit", s.test_limit, "evaluate on the first N test samples only")
      ->option_text("N")
      ->check(cli::whole_number());
  app->add_option("--data", s.data, "LIBSVM training file (with --test)")
      ->option_text("FILE")
      ->check(cli::not_empty());
  app->add_option("--test", s.test, "LIBSVM test file (with --data)")
      ->option_text("FILE")
      ->check(cli::not_empty());
  app->add_option("--csv", s.csv, "also write the per-epoch rows to FILE")
      ->option_text("FILE")
      ->check(cli::not_empty());
  add_kill_after(*app, s.kill_after);
  return app;
}

/// Parses the command line with `app` (from command_line, plus the
/// trainer's own options) and checks what concerns several options, then
/// the trainer's `check` (which throws usage_error). Returns the exit code
/// when main() should end now: 0 after --help, 2 after a bad command line
/// (the message is on stderr).
template <class Check>
std::optional<int> parse(CLI::App& app, int argc, char** argv, settings& s, Check&& check) {
  try {
    if (!cli::parse(app, argc, argv)) return 0;
    s.ranks_given = app.count("--ranks") > 0;
    s.lr_given = app.count("--lr") > 0;
    s.cb_size_given = app.count("--cb-size") > 0;
    if (s.ranks > 256)
      throw usage_error("--ranks " + std::to_string(s.ranks) + " is too many (at most 256 threads)");
    if (s.data.empty() != s.test.empty()) throw usage_error("--data and --test go together");
    if (app.count("--slack") > 0 && s.consistency != "ssp" && s.consistency != "ssp_bounded" &&
        s.consistency != "asp_fresh")
      throw usage_error("--slack is for --consistency ssp, ssp_bounded or asp_fresh, not " + s.consistency);
    if (app.count("--stall-ms") > 0 && s.consistency != "ssp_bounded")
      throw usage_error("--stall-ms is for --consistency ssp_bounded, not " + s.consistency);
    check_kills(s.kill_after, s.transport, s.ranks);
    if (s.transport != "inproc" && s.ranks_given)
      throw usage_error("--ranks is for --transport inproc; with " + s.transport +
                        " every MPI process is one rank (mpiexec -n N)");
    check();
  } catch (const usage_error& e) {
    std::fprintf(stderr, "%s: %s (see --help)\n", app.get_name().c_str(), e.what());
    return 2;
  }
  return std::nullopt;
}

inline std::optional<int> parse(CLI::App& app, int argc, char** argv, settings& s) {
  return parse(app, argc, argv, s, [] {});
}

/// The topology named in s, chosen at run time: one vector type serves every
/// topology (see dml/topology/any.hpp), which keeps the trainers' builds
/// short.
inline dml::topology::any chosen_topology(const settings& s) {
  namespace t = dml::topology;
  if (s.topology == "all") return t::all{};
  if (s.topology == "halton") return t::halton{};
  if (s.topology == "root_expander") return t::root_expander{};
  if (s.topology == "ps") return t::star{};  // the graph of a parameter server at member 0
  return t::ring{};
}

/// --consistency adaptive: starts in bsp, decides every 8 clocks (the
/// first windows 1, 1, 2 and 4 clocks long, so that the first decisions come
/// early) with the controller's default thresholds, and may balance the
/// periods when the members' work may be unequal (docs/adaptive.md).
inline dml::consistency::adaptive_options adaptive_options(const settings& s) {
  dml::consistency::adaptive_options o;
  o.every = 8;
  o.first_window = 1;
  o.control.balance = s.uneven_work;
  return o;
}

/// The vector's adaptive policy, or nullptr.
template <class V>
const dml::consistency::adaptive* adaptive_of(const V& v) {
  if constexpr (std::is_same_v<typename V::consistency_type, dml::consistency::any>)
    return v.consistency().held_adaptive();
  else
    return nullptr;
}

/// The communication period the vector's adaptive policy advises this
/// member (local steps between two exchanges); 1 under every other policy.
template <class V>
std::uint64_t advised_period(const V& v) {
  const auto* a = adaptive_of(v);
  return a == nullptr ? 1 : a->period();
}

/// The consistency policy named in s, chosen at run time (see
/// dml/consistency/any.hpp).
inline dml::consistency::any chosen_consistency(const settings& s) {
  namespace c = dml::consistency;
  if (s.consistency == "bsp") return c::bsp{};
  if (s.consistency == "asp") return c::asp{};
  if (s.consistency == "ssp") return c::any::ssp(s.slack);
  if (s.consistency == "ssp_bounded")
    return c::any::ssp_bounded(s.slack, std::chrono::milliseconds(static_cast<std::int64_t>(s.stall_ms)));
  if (s.consistency == "asp_fresh") return c::any::asp_fresh(s.slack);
  if (s.consistency == "adaptive") return c::adaptive(adaptive_options(s));
  return c::notify_ack{};
}

/// Calls f(topology, consistency) with the policies named in s, both chosen
/// at run time (`dml::topology::any`, `dml::consistency::any`): the training
/// loop is compiled once per transport, not once per combination.
template <class F>
decltype(auto) with_policies(const settings& s, F&& f) {
  return f(chosen_topology(s), chosen_consistency(s));
}

/// Labelled samples, one per dense row, with integer labels (dml-mlp).
struct dataset {
  matrix x;
  std::vector<int> y;
  std::string name;
};

/// Fashion-MNIST train or test set from the Debian package's files, pixels
/// in [0, 1]; `limit` (0: all) keeps the first samples.
inline dataset fashion_mnist(bool train, std::size_t limit) {
  const std::string dir = DML_FASHION_MNIST_DIR, part = train ? "train" : "t10k";
  dataset d{dml::data::read_idx_images(dir + "/" + part + "-images-idx3-ubyte.gz", limit),
            dml::data::read_idx_labels(dir + "/" + part + "-labels-idx1-ubyte.gz", limit),
            {}};
  if (d.y.size() != static_cast<std::size_t>(d.x.rows()))
    throw dml::data_error(dir + "/" + part + "-labels-idx1-ubyte.gz", 0, "fewer labels than images");
  d.name = "Fashion-MNIST " + part;
  return d;
}

/// The labels of a LIBSVM set as integers: they must be whole numbers.
inline std::vector<int> whole_labels(const std::string& path, const dml::data::sparse_set& s,
                                     Eigen::Index n) {
  std::vector<int> y;
  y.reserve(static_cast<std::size_t>(n));
  for (Eigen::Index i = 0; i < n; ++i) {
    const float label = s.y[i];
    if (label != std::floor(label) || std::abs(label) > 1e6f)
      throw dml::data_error(path, s.lines[static_cast<std::size_t>(i)], "label must be a whole number");
    y.push_back(static_cast<int>(label));
  }
  return y;
}

/// The most values a dense copy of a LIBSVM set may have (400 MB of floats).
inline constexpr double dense_limit = 1e8;

/// A LIBSVM file as dense rows, for the trainers with dense math (dml-mlp);
/// `features` 0: the file's width. A set of more than dense_limit values
/// is refused before anything that large is allocated.
inline dataset libsvm(const std::string& path, std::size_t features, std::size_t limit) {
  dml::data::libsvm_options o;
  o.features = features;
  dml::data::sparse_set s = dml::data::read_libsvm(path, o);
  const Eigen::Index n =
      limit == 0 ? s.x.rows() : std::min<Eigen::Index>(s.x.rows(), static_cast<Eigen::Index>(limit));
  if (static_cast<double>(n) * static_cast<double>(s.x.cols()) > dense_limit)
    throw dml::data_error(path, 0,
                          std::to_string(n) + " samples x " + std::to_string(s.x.cols()) +
                              " features are too many values for the dense reference trainers (at most 10^8; "
                              "use --limit, or dml-logreg / dml-svm-sgd, which keep the rows sparse)");
  return {matrix(s.x.topRows(n)), whole_labels(path, s, n), path};
}

/// Training and test sets as dense rows (dml-mlp): the LIBSVM files in s,
/// or Fashion-MNIST. The test set gets the training set's width.
inline std::pair<dataset, dataset> load(const settings& s) {
  if (s.data.empty()) return {fashion_mnist(true, s.limit), fashion_mnist(false, s.test_limit)};
  dataset train = libsvm(s.data, 0, s.limit);
  dataset test = libsvm(s.test, static_cast<std::size_t>(train.x.cols()), s.test_limit);
  return {std::move(train), std::move(test)};
}

/// Labelled samples for the linear trainers (dml-logreg, dml-svm-sgd):
/// dense rows for Fashion-MNIST, sparse rows for LIBSVM files of any width
/// up to 2^26 (dml::data::libsvm_options::max_features), so that memory
/// follows the nonzeros. The math in linear.hpp takes either; visit(f)
/// calls f with the one held.
struct sample_set {
  std::variant<matrix, sparse_matrix> x;
  std::vector<int> y;
  std::string name;

  [[nodiscard]] Eigen::Index rows() const {
    return std::visit([](const auto& m) { return m.rows(); }, x);
  }
  [[nodiscard]] Eigen::Index cols() const {
    return std::visit([](const auto& m) { return m.cols(); }, x);
  }
  [[nodiscard]] bool sparse() const noexcept { return x.index() == 1; }
  template <class F>
  decltype(auto) visit(F&& f) const {
    return std::visit(std::forward<F>(f), x);
  }
};

/// Training and test sets for the linear trainers: the LIBSVM files in s as
/// sparse rows, both as wide as the wider of the two (a feature only the
/// test set has keeps a weight of 0), or Fashion-MNIST as dense rows.
inline std::pair<sample_set, sample_set> load_samples(const settings& s) {
  if (s.data.empty()) {
    dataset train = fashion_mnist(true, s.limit), test = fashion_mnist(false, s.test_limit);
    return {sample_set{std::move(train.x), std::move(train.y), std::move(train.name)},
            sample_set{std::move(test.x), std::move(test.y), std::move(test.name)}};
  }
  auto read = [](const std::string& path, std::size_t limit) {
    dml::data::sparse_set set = dml::data::read_libsvm(path);  // indices up to 2^26
    const Eigen::Index n =
        limit == 0 ? set.x.rows() : std::min<Eigen::Index>(set.x.rows(), static_cast<Eigen::Index>(limit));
    std::vector<int> y = whole_labels(path, set, n);
    sparse_matrix x = n == set.x.rows() ? std::move(set.x) : sparse_matrix(set.x.topRows(n));
    return sample_set{std::move(x), std::move(y), path};
  };
  sample_set train = read(s.data, s.limit), test = read(s.test, s.test_limit);
  const Eigen::Index width = std::max(train.cols(), test.cols());
  for (sample_set* d : {&train, &test}) std::get<sparse_matrix>(d->x).conservativeResize(d->rows(), width);
  return {std::move(train), std::move(test)};
}

/// A data set's fingerprint (same_input.hpp), its values and labels.
inline void add_to(fingerprint& f, const matrix& x) {
  f.add(x.rows());
  f.add(x.cols());
  f.add_span(std::span<const float>(x.data(), static_cast<std::size_t>(x.size())));
}
inline void add_to(fingerprint& f, const sparse_matrix& x) {
  f.add(x.rows());
  f.add(x.cols());
  f.add(x.nonZeros());
  const auto nnz = static_cast<std::size_t>(x.nonZeros());
  if (x.isCompressed()) {
    f.add_span(std::span<const float>(x.valuePtr(), nnz));
    f.add_span(std::span<const typename sparse_matrix::StorageIndex>(x.innerIndexPtr(), nnz));
    f.add_span(std::span<const typename sparse_matrix::StorageIndex>(
        x.outerIndexPtr(), static_cast<std::size_t>(x.outerSize()) + 1));
  } else {
    for (Eigen::Index i = 0; i < x.outerSize(); ++i)
      for (sparse_matrix::InnerIterator it(x, i); it; ++it) {
        f.add(it.index());
        f.add(it.value());
      }
  }
}
inline void add_to(fingerprint& f, const dataset& d) {
  add_to(f, d.x);
  f.add_span(std::span<const int>(d.y));
}
inline void add_to(fingerprint& f, const sample_set& d) {
  d.visit([&](const auto& x) { add_to(f, x); });
  f.add_span(std::span<const int>(d.y));
}
inline Eigen::Index rows_of(const dataset& d) { return d.x.rows(); }
inline Eigen::Index rows_of(const sample_set& d) { return d.rows(); }
inline Eigen::Index cols_of(const dataset& d) { return d.x.cols(); }
inline Eigen::Index cols_of(const sample_set& d) { return d.cols(); }

/// The training and test sets under MPI: every process reads them whole
/// (and keeps its share of the training rows), so every process must have
/// read the same ones. A file that differs between machines would
/// otherwise train one model on a mix of two data sets, and a read that
/// failed on one process would leave the others waiting for it. The
/// processes compare fingerprints first (agree_on_input): a mismatch, or a
/// failure anywhere, throws the same agreed_error on every process, after
/// the leader printed it as "<program>: ..." (read_agreed).
/// In-process ranks share one copy: `read()` as it is.
template <class Read>
auto read_everywhere(launcher& launch, const char* program, Read&& read) {
  decltype(read()) sets;
  read_agreed(
      launch, program, [&] { sets = read(); },
      [&] {
        fingerprint f;
        add_to(f, sets.first);
        add_to(f, sets.second);
        return std::pair(f.value(),
                         std::to_string(rows_of(sets.first)) + " training and " +
                             std::to_string(rows_of(sets.second)) + " test samples of " +
                             std::to_string(cols_of(sets.first)) + " features from " + sets.first.name +
                             (sets.second.name == sets.first.name ? "" : " and " + sets.second.name));
      },
      "the data");
  return sets;
}

/// The default step for R ranks that average their models (or gradients)
/// every few examples: unless --lr was given, the single-rank default times
/// sqrt(R). Averaging R replicas averages away gradient noise, so each
/// epoch moves the model less, as a batch R times larger does; sqrt(R)
/// keeps the noise of a step about as it was (a linear R would, for the
/// mean step, but was worse: docs/trainers.md, "Equal-epoch quality").
/// Returns the note for the header line.
inline std::string scale_lr_with_ranks(settings& s) {
  if (s.lr_given || s.ranks == 1) return "";
  const float base = s.lr;
  s.lr = base * std::sqrt(static_cast<float>(s.ranks));
  char note[64];
  std::snprintf(note, sizeof note, " (%g x sqrt(%zu ranks))", static_cast<double>(base), s.ranks);
  return note;
}

/// The default --cb-size of the linear trainers on sparse rows: each
/// exchange moves the whole dense model, so on wide data it is made rare
/// enough that the samples between two exchanges carry at least a quarter
/// as many nonzeros as the model has features -- the smallest power of two
/// >= features / (4 x mean nonzeros per row), at least `minimum` (the
/// trainer's default) and at most `samples_per_rank`. Measured with
/// dml-svm-sgd on generated data, 4 ranks, 300 nonzeros per row: at 2^20
/// features --cb-size 1024 took 4.6 s instead of 80 s with 64, at the same
/// accuracy (0.8546 and 0.8541); at 2^24, one exchange per epoch ended at
/// 0.8649, liblinear at 0.8647.
inline std::size_t sparse_cb_size(const sample_set& train, std::size_t samples_per_rank,
                                  std::size_t minimum) {
  const auto& x = std::get<sparse_matrix>(train.x);
  const double nonzeros = x.rows() ? static_cast<double>(x.nonZeros()) / static_cast<double>(x.rows()) : 1;
  const double wanted = static_cast<double>(x.cols()) / (4.0 * std::max(1.0, nonzeros));
  std::size_t cb = minimum;
  while (static_cast<double>(cb) < wanted) cb *= 2;
  return std::max(minimum, std::min(cb, samples_per_rank));
}

/// The most weights (features x weight vectors) of a linear trainer's model:
/// 2^26, 256 MiB of floats a copy, as for a binary model of the widest
/// LIBSVM file read (2^26 features). Every rank holds a few copies (its
/// model, the vector's buffer and receive slots), so data with more
/// classes must be hashed into fewer features.
inline constexpr std::size_t max_model_weights = std::size_t{1} << 26;

/// Refuses a model of `features` x `vectors` weights (vectors: one per
/// class, one for a binary model) beyond max_model_weights, naming the data
/// set, its shape and the memory it would take, before anything that large
/// is allocated.
inline void check_model_size(const std::string& data, std::size_t features, std::size_t vectors) {
  const double floats = static_cast<double>(features + 1) * static_cast<double>(vectors);
  if (static_cast<double>(features) * static_cast<double>(vectors) <= static_cast<double>(max_model_weights))
    return;
  char gib[32];
  std::snprintf(gib, sizeof gib, "%.1f", floats * sizeof(float) / (1u << 30));
  throw dml::data_error(
      data, 0,
      std::to_string(features) + " features x " + std::to_string(vectors) + " classes need a model of " +
          std::to_string(static_cast<std::uint64_t>(floats)) + " floats (" + gib +
          " GiB per copy, several copies per rank), beyond the trainers' limit of 2^26 weights "
          "(256 MiB); hash the features into fewer dimensions");
}

/// In-process ranks share this process's memory, and a dense model travels
/// through each rank's vector: its local buffer, two receive slots per
/// in-neighbour and a copy of each input while gathering, besides the
/// trainer's own model -- (2 + 3 x in-degree) copies of the model per rank,
/// as measured with /usr/bin/time (docs/trainers.md). (Gathers under bsp
/// and notify_ack read their inputs in place now, so that is an upper
/// bound.) Exchanging deltas (`deltas`), a rank holds three copies: its
/// model, the delta vector's local and agreed state; the slots hold pairs. Refuses a run that
/// would need more than 80% of the machine's memory, with the numbers and
/// the ways out, before anything is allocated (swapping or the kernel's
/// OOM killer would be the alternative). `extra_copies`: more copies of the
/// model a rank keeps (dml-logreg --seconds: its snapshots). MPI processes
/// are not checked: where they run is mpiexec's business.
inline void check_inproc_memory(const launcher& launch, std::size_t ranks, std::size_t model_floats,
                                const settings& s, bool deltas = false, double extra_copies = 0) {
  const std::string& topology = s.topology;
  if (!launch.in_process()) return;
  std::size_t in_degree = 0;
  if (ranks > 1) {
    std::vector<std::size_t> in(ranks, 0);
    for (const auto& out : chosen_topology(s).out_lists(ranks))
      for (const auto to : out) in_degree = std::max(in_degree, ++in[to]);
  }
  const double copies = (deltas ? 3.0 : 2.0 + 3.0 * static_cast<double>(in_degree)) + extra_copies;
  const double need = static_cast<double>(ranks) * copies * static_cast<double>(model_floats) * sizeof(float);
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return;  // unknown: nothing to compare with
  const double have = static_cast<double>(pages) * static_cast<double>(page);
  if (need <= 0.8 * have) return;
  char text[200];
  std::snprintf(text, sizeof text,
                "%.1f GiB (%.0f copies of %.0f MiB per rank), more than 80%% of this machine's %.1f GiB",
                need / (1u << 30), copies, static_cast<double>(model_floats) * sizeof(float) / (1u << 20),
                have / (1u << 30));
  throw usage_error(std::to_string(ranks) + " in-process ranks exchanging " +
                    (deltas ? "the deltas of a model of " : "a dense model of ") +
                    std::to_string(model_floats) + " floats over " + topology + " need about " + text +
                    ": use fewer --ranks, " +
                    (deltas ? "" : "a topology with fewer in-neighbours (ring: 1), ") +
                    "or MPI processes on several machines");
}

/// [5] The exact mean over the live members of a model of floats plus a
/// few statistics, for the once-per-epoch report. It goes through a dml
/// vector (bsp over all) of at most 2^16 doubles, one round per 2^16
/// elements, so that the report's receive slots stay small however wide
/// the model is. Collective: every member calls average() equally often.
template <class Comm>
class model_mean {
 public:
  model_mean(Comm& comm, std::size_t model_size, std::size_t extras)
      : model_(model_size),
        extras_(extras),
        v_(dml::make_vector<double>(comm, std::min(model_size + extras, chunk))) {}

  /// The mean of every live member's (model, extras): into `model_out` and
  /// `extras_out` when they are given (the reporting member), else only
  /// taking part.
  void average(std::span<const float> model, std::span<const double> extras, std::vector<float>* model_out,
               std::vector<double>* extras_out) {
    const std::size_t total = model_ + extras_, width = v_.size();
    if (model_out) model_out->resize(model_);
    if (extras_out) extras_out->resize(extras_);
    for (std::size_t first = 0; first < total; first += width) {
      const std::size_t count = std::min(width, total - first);
      auto buf = v_.span();
      for (std::size_t k = 0; k < width; ++k) {
        const std::size_t i = first + k;
        buf[k] = k >= count ? 0.0 : i < model_ ? static_cast<double>(model[i]) : extras[i - model_];
      }
      v_.scatter();
      v_.gather();
      for (std::size_t k = 0; k < count; ++k) {
        const std::size_t i = first + k;
        if (i < model_) {
          if (model_out) (*model_out)[i] = static_cast<float>(buf[k]);
        } else if (extras_out) {
          (*extras_out)[i - model_] = buf[k];
        }
      }
    }
  }
  void barrier() { v_.barrier(); }

 private:
  static constexpr std::size_t chunk = std::size_t{1} << 16;
  std::size_t model_, extras_;
  decltype(dml::make_vector<double>(std::declval<Comm&>(), 1)) v_;
};

/// One progress row. bytes: sent by all members together.
struct row {
  std::size_t epoch = 0;
  double seconds = 0, loss = 0, quality = 0, bytes = 0, full_share = 0;
};

/// [2] This member's samples, epoch by epoch: its shard among the live
/// members of the current view, so after a failure the survivors take over
/// the dead member's samples and every sample is still used once per epoch.
/// The number of exchanges per epoch (which bsp needs equal on every member)
/// stays n / ranks / cb-size; the survivors put proportionally more samples
/// between two exchanges instead.
class epoch_samples {
 public:
  /// Call at the start of every epoch (1, 2, ...): recomputes the shard when
  /// the view changed, then shuffles it with the epoch's seed.
  template <class Comm>
  void next(const Comm& comm, const std::vector<std::size_t>& order, const settings& s, std::size_t epoch) {
    const auto view = comm.view();
    if (!planned_ || view.epoch != view_epoch_) {
      mine_.clear();
      for (std::size_t i : dml::data::shard::among(view.live, comm.rank()).indices(order.size()))
        mine_.push_back(order[i]);
      per_step_ = s.cb_size * comm.size() / view.live.size();
      view_epoch_ = view.epoch;
      planned_ = true;
    }
    dml::data::shuffle(mine_, s.seed + 1000003 * epoch + comm.rank());
  }
  [[nodiscard]] const std::vector<std::size_t>& samples() const noexcept { return mine_; }
  /// Samples between two exchanges: cb-size, scaled by ranks / live members.
  [[nodiscard]] std::size_t per_step() const noexcept { return per_step_; }

 private:
  std::vector<std::size_t> mine_;
  std::size_t per_step_ = 0;
  std::uint64_t view_epoch_ = 0;
  bool planned_ = false;
};

/// Prints progress lines and writes the CSV rows.
class progress {
 public:
  progress(const std::string& csv, const char* quality_name) : quality_(quality_name) {
    if (!csv.empty()) {
      file_ = std::fopen(csv.c_str(), "w");
      if (!file_) throw std::runtime_error("cannot write " + csv);
      std::fprintf(file_, "epoch,seconds,loss,%s,bytes,full_share\n", quality_);
    }
  }
  progress(const progress&) = delete;
  progress& operator=(const progress&) = delete;
  ~progress() {
    if (file_) std::fclose(file_);
  }
  void add(const row& r) {
    std::printf("epoch %3zu  %8.3f s  loss %.5f  %s %.4f  %12.0f bytes sent  %5.1f%% full gathers\n", r.epoch,
                r.seconds, r.loss, quality_, r.quality, r.bytes, 100 * r.full_share);
    std::fflush(stdout);
    if (file_) {
      std::fprintf(file_, "%zu,%.4f,%.6f,%.6f,%.0f,%.4f\n", r.epoch, r.seconds, r.loss, r.quality, r.bytes,
                   r.full_share);
      std::fflush(file_);
    }
    last_ = r;
  }
  /// A report within an epoch (dml-mlp --evaluate-every): printed, not
  /// written to the CSV (whose rows are whole epochs), and not the last row.
  /// `samples`: training samples every member together has used so far.
  void add_step(const row& r, std::size_t step, std::size_t samples) {
    std::printf("step %7zu  epoch %3zu  %8.3f s  loss %.5f  %s %.4f  %zu samples\n", step, r.epoch, r.seconds,
                r.loss, quality_, r.quality, samples);
    std::fflush(stdout);
  }
  [[nodiscard]] const row& last() const noexcept { return last_; }

 private:
  const char* quality_;
  std::FILE* file_ = nullptr;
  row last_;
};

/// The 'final:' line, the one line scripts read (scripts/kill-driver.py,
/// compare_runs.cmake).
inline void print_final(const row& r, const char* quality_name) {
  std::printf("final: %s=%.4f loss=%.5f seconds=%.3f bytes=%.0f epochs=%zu\n", quality_name, r.quality,
              r.loss, r.seconds, r.bytes, r.epoch);
  std::fflush(stdout);
}

/// Under MPI, at the end of the run body, on every member: prints the
/// 'final:' line so that it survives the reporting member. Each process
/// holds only its own results, so the reporting member prints `last` here,
/// and then every member meets in dml::fault::barrier, which survives
/// failures; a member that became the reporter in it (the old one died
/// after the last report) evaluates the averaged model -- after the last
/// report every member holds it -- with `evaluate()` and prints the line
/// itself. When the old reporter died after printing, the line appears
/// twice; both describe the same model, and scripts take the last one.
/// In-process the members share `last` and main() prints it once (finish);
/// this does nothing.
template <class Comm, class Evaluate>
void report_final(const launcher& launch, Comm& comm, const settings& s, row& last, const char* quality_name,
                  Evaluate&& evaluate) {
  print_final_surviving(launch, comm, [&] {
    if (last.epoch != s.epochs) last = evaluate();  // took over from a reporter that died
    print_final(last, quality_name);
  });
}

/// In-process: prints the 'final:' line once, from the row the members
/// share; a run in which no member finished every epoch is an error, not a
/// quiet exit 0. Under MPI report_final printed it inside the run.
inline void finish(const launcher& launch, const settings& s, const row& r, const char* quality_name) {
  if (!launch.in_process()) return;
  if (r.epoch != s.epochs)
    throw std::runtime_error("the run did not complete: no member finished epoch " +
                             std::to_string(s.epochs));
  print_final(r, quality_name);
}

}  // namespace trainer

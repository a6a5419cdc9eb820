// SPDX-License-Identifier: BSL-1.0
// Shared by the reference trainers: the common command line, where the ranks
// run (in-process threads or MPI processes), runtime policy names to
// compile-time policies, data sets (Fashion-MNIST or LIBSVM files), and the
// per-epoch progress line / CSV row. Nothing here is dml API; a trainer
// copied out of examples/ takes this file along.
#pragma once

#include <dml/data.hpp>
#include <dml/dml.hpp>
#include <dml/vector/eigen.hpp>

#include "launcher.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#ifndef DML_FASHION_MNIST_DIR
#define DML_FASHION_MNIST_DIR "/usr/share/datasets/fashion-mnist"
#endif

namespace trainer {

/// The options every trainer shares.
struct settings {
  std::size_t ranks = 8, epochs = 10, cb_size = 32, limit = 0;
  float lr = 0.1f;
  std::uint64_t seed = 1;
  std::string transport = "inproc", topology = "all", consistency = "bsp";
  std::string data, test, csv;  // empty data/test: Fashion-MNIST
  bool ranks_given = false;     // --ranks was on the command line
  /// --kill-after R@SECONDS: in-process member R dies that long after the
  /// trainer started (at its next transport operation).
  std::vector<std::pair<std::size_t, double>> kill_after;
};

/// When the trainer started (the clock of --kill-after).
inline const std::chrono::steady_clock::time_point program_start = std::chrono::steady_clock::now();

/// The planned in-process kills of s as times, for the launcher.
inline std::vector<std::pair<std::size_t, std::chrono::steady_clock::time_point>> planned_kills(
    const settings& s) {
  std::vector<std::pair<std::size_t, std::chrono::steady_clock::time_point>> out;
  for (const auto& [member, seconds] : s.kill_after)
    out.emplace_back(member, program_start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                 std::chrono::duration<double>(seconds)));
  return out;
}

/// A whole number >= min, or for floating types a finite number > 0.
template <class Number>
Number parse_number(std::string_view name, std::string_view text, Number min = 1) {
  Number value{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  const bool ok = std::is_floating_point_v<Number> ? std::isfinite(double(value)) && value > 0 : value >= min;
  if (ec != std::errc{} || end != text.data() + text.size() || !ok)
    throw usage_error(std::string(name) + " needs " +
                      (std::is_floating_point_v<Number> ? std::string("a positive number")
                                                        : "a whole number >= " + std::to_string(min)) +
                      ", got '" + std::string(text) + "'");
  return value;
}

inline std::string parse_choice(std::string_view name, std::string_view text,
                                std::initializer_list<std::string_view> ok) {
  std::string list;
  for (auto c : ok) {
    if (c == text) return std::string(text);
    list += (list.empty() ? "" : ", ") + std::string(c);
  }
  throw usage_error("unknown " + std::string(name.substr(2)) + " '" + std::string(text) +
                    "'; choose one of " + list);
}

/// A trainer's own options: their names, and what sets one from its value
/// (throwing usage_error for a bad value). Each takes a value.
struct extra_options {
  std::vector<std::string_view> names;
  std::function<void(std::string_view, std::string_view)> set;
};

/// Parses the shared options ('--name value' or '--name=value') and hands
/// every other '--name value' to `extra`.
inline settings parse(int argc, char** argv, settings s, const extra_options& extra) {
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i], value;
    if (arg.substr(0, 2) != "--") throw usage_error("unknown argument '" + std::string(arg) + "'");
    const auto eq = arg.find('=');
    const bool inline_value = eq != std::string_view::npos;
    if (inline_value) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    } else if (i + 1 < argc) {
      value = argv[i + 1];
    }
    auto need_value = [&] {
      if (!inline_value) {
        if (i + 1 == argc) throw usage_error(std::string(arg) + " needs a value");
        ++i;
      }
    };
    if (arg == "--ranks") {
      need_value();
      s.ranks = parse_number<std::size_t>(arg, value);
      s.ranks_given = true;
    } else if (arg == "--epochs") {
      need_value();
      s.epochs = parse_number<std::size_t>(arg, value);
    } else if (arg == "--cb-size") {
      need_value();
      s.cb_size = parse_number<std::size_t>(arg, value);
    } else if (arg == "--limit") {
      need_value();
      s.limit = parse_number<std::size_t>(arg, value);
    } else if (arg == "--lr") {
      need_value();
      s.lr = parse_number<float>(arg, value);
    } else if (arg == "--seed") {
      need_value();
      s.seed = parse_number<std::uint64_t>(arg, value, 0);
    } else if (arg == "--transport") {
      need_value();
      s.transport = parse_choice(arg, value, {"inproc", "mpi_rma", "mpi"});
    } else if (arg == "--topology") {
      need_value();
      s.topology = parse_choice(arg, value, {"all", "halton", "root_expander", "ring"});
    } else if (arg == "--consistency") {
      need_value();
      s.consistency = parse_choice(arg, value, {"bsp", "asp", "ssp", "notify_ack"});
    } else if (arg == "--kill-after") {
      need_value();
      const auto at = value.find('@');
      if (at == std::string_view::npos)
        throw usage_error("--kill-after needs MEMBER@SECONDS (e.g. 3@1.5), got '" + std::string(value) + "'");
      const auto member = parse_number<std::size_t>("--kill-after's member", value.substr(0, at), 0);
      const auto seconds = parse_number<double>("--kill-after's seconds", value.substr(at + 1));
      s.kill_after.emplace_back(member, seconds);
    } else if (arg == "--data" || arg == "--test" || arg == "--csv") {
      need_value();
      if (value.empty()) throw usage_error(std::string(arg) + " needs a file name");
      (arg == "--data" ? s.data : arg == "--test" ? s.test : s.csv) = std::string(value);
    } else {
      if (std::find(extra.names.begin(), extra.names.end(), arg) == extra.names.end())
        throw usage_error("unknown argument '" + std::string(argv[i]) + "'");
      need_value();
      extra.set(arg, value);
    }
  }
  if (s.ranks > 256)
    throw usage_error("--ranks " + std::to_string(s.ranks) + " is too many (at most 256 threads)");
  if (s.data.empty() != s.test.empty()) throw usage_error("--data and --test go together");
  if (!s.kill_after.empty() && s.transport != "inproc")
    throw usage_error(
        "--kill-after is for in-process ranks; under MPI kill a process from outside "
        "(scripts/kill-driver.py does both)");
  for (const auto& k : s.kill_after)
    if (k.first >= s.ranks)
      throw usage_error("--kill-after " + std::to_string(k.first) + "@...: there are only " +
                        std::to_string(s.ranks) + " ranks");
  if (s.transport != "inproc" && s.ranks_given)
    throw usage_error("--ranks is for --transport inproc; with " + s.transport +
                      " every MPI process is one rank (mpiexec -n N)");
  return s;
}

/// Calls f(Topology{}, Consistency{}) with the policies named in s: the one
/// place runtime names become compile-time policy types.
template <class F>
decltype(auto) with_policies(const settings& s, F&& f) {
  namespace t = dml::topology;
  namespace c = dml::consistency;
  auto with_consistency = [&](auto topology) -> decltype(auto) {
    if (s.consistency == "bsp") return f(topology, c::bsp{});
    if (s.consistency == "asp") return f(topology, c::asp{});
    if (s.consistency == "ssp") return f(topology, c::ssp<2>{});
    return f(topology, c::notify_ack{});
  };
  if (s.topology == "all") return with_consistency(t::all{});
  if (s.topology == "halton") return with_consistency(t::halton{});
  if (s.topology == "root_expander") return with_consistency(t::root_expander{});
  return with_consistency(t::ring{});
}

using matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// Labelled samples, one per row, with integer labels.
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

/// A LIBSVM file as dense rows (the reference trainers use dense math; fine
/// for up to about 10^8 values). Labels must be whole numbers.
inline dataset libsvm(const std::string& path, std::size_t features, std::size_t limit) {
  dml::data::libsvm_options o;
  o.features = features;
  dml::data::sparse_set s = dml::data::read_libsvm(path, o);
  const Eigen::Index n =
      limit == 0 ? s.x.rows() : std::min<Eigen::Index>(s.x.rows(), static_cast<Eigen::Index>(limit));
  if (static_cast<double>(n) * static_cast<double>(s.x.cols()) > 1e8)
    throw dml::data_error(path, 0, "too large for the dense reference trainers (use --limit)");
  dataset d{matrix(s.x.topRows(n)), {}, path};
  for (Eigen::Index i = 0; i < n; ++i) {
    const float label = s.y[i];
    if (label != std::floor(label) || std::abs(label) > 1e6f)
      throw dml::data_error(path, s.lines[static_cast<std::size_t>(i)], "label must be a whole number");
    d.y.push_back(static_cast<int>(label));
  }
  return d;
}

/// Training and test sets: the LIBSVM files in s, or Fashion-MNIST. The test
/// set gets the training set's width.
inline std::pair<dataset, dataset> load(const settings& s) {
  if (s.data.empty()) return {fashion_mnist(true, s.limit), fashion_mnist(false, 0)};
  dataset train = libsvm(s.data, 0, s.limit);
  dataset test = libsvm(s.test, static_cast<std::size_t>(train.x.cols()), 0);
  return {std::move(train), std::move(test)};
}

/// One progress row. bytes: sent by all members together.
struct row {
  std::size_t epoch = 0;
  double seconds = 0, loss = 0, quality = 0, bytes = 0, full_share = 0;
};

/// Whether this member evaluates and prints: the lowest-ranked live one, so
/// that a run whose member 0 failed still reports.
template <class Comm>
[[nodiscard]] bool reports(const Comm& comm) {
  const auto view = comm.view();
  return !view.live.empty() && comm.rank() == view.live.front();
}

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

/// Prints one line for each view change `comm` took part in since the last
/// call (`printed` counts them): who failed, the new group size, and how
/// long detection and recovery took.
template <class Comm>
void print_view_changes(const Comm& comm, std::size_t& printed) {
  {
    const auto& changes = dml::fault::view_changes(comm);
    for (; printed < changes.size(); ++printed) {
      const auto& c = changes[printed];
      std::string removed;
      for (auto m : c.removed) removed += (removed.empty() ? "" : ", ") + std::to_string(m);
      std::printf(
          "view %llu: member%s %s failed; %zu members go on (detected after %.2f s, recovered after "
          "%.2f s)\n",
          static_cast<unsigned long long>(c.epoch), c.removed.size() == 1 ? "" : "s", removed.c_str(),
          c.live.size(), c.detection_seconds, c.recovery_seconds);
      std::fflush(stdout);
    }
  }
}

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
  [[nodiscard]] const row& last() const noexcept { return last_; }

 private:
  const char* quality_;
  std::FILE* file_ = nullptr;
  row last_;
};

/// Prints the 'final:' line from the member that holds the report (under
/// MPI one process does; the others print nothing). In-process, a run in
/// which no member finished every epoch is an error, not a quiet exit 0.
inline void finish(const launcher& launch, const settings& s, const row& r, const char* quality_name) {
  if (r.epoch == s.epochs) {
    std::printf("final: %s=%.4f loss=%.5f seconds=%.3f bytes=%.0f epochs=%zu\n", quality_name, r.quality,
                r.loss, r.seconds, r.bytes, s.epochs);
    std::fflush(stdout);
  } else if (launch.in_process()) {
    throw std::runtime_error("the run did not complete: no member finished epoch " +
                             std::to_string(s.epochs));
  }
}

/// The shared part of the help text.
inline constexpr const char* common_help =
    R"(  --transport NAME       inproc (threads, default) | mpi_rma | mpi (one rank per
                         MPI process: mpiexec -n N dml-... --transport mpi_rma)
  --ranks N              in-process ranks (threads) for inproc, default 8
  --topology NAME        all | halton | root_expander | ring, default all
  --consistency NAME     bsp | asp | ssp (slack 2) | notify_ack, default bsp
  --cb-size N            examples per rank between communications
  --epochs N             passes over the training data
  --lr X                 learning rate
  --seed N               shuffle / initialization seed, default 1
  --limit N              use only the first N training samples
  --csv FILE             also write the per-epoch rows to FILE
  --kill-after R@S       fault injection (in-process): member R dies S seconds
                         after the trainer started; repeatable
)";

}  // namespace trainer

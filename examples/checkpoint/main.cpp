// SPDX-License-Identifier: BSL-1.0
// dml-checkpoint-demo: least-squares regression by SGD with momentum on 4
// in-process ranks that checkpoints every few steps and, with --resume,
// continues from its last checkpoint as if it had never stopped.
//
// What a checkpoint must hold for an exact resume is everything the next
// step depends on: here the model w, the momentum m and the step number.
// The data set is regenerated from --seed and each step's minibatch is a
// function of the step number, so the seed goes into the checkpoint's user
// bytes and a resume with other data is refused. The distributed gradient
// vector needs no saving: gather() overwrites it every step.
//
// Every rank saves its own file (rank-<r>.ckpt in --dir). The ranks' sums
// in gather() run in different orders, so their replicas of w can differ in
// the last bits; saving one rank's model for all would make a resumed run
// differ slightly from an uninterrupted one. Each file is replaced
// atomically, but the set of files is not: a crash between two ranks'
// saves leaves files of different steps (rank 0 at step 40, the others at
// 30). So each rank keeps two generations (keep_previous: the replaced file
// becomes rank-<r>.ckpt.prev), and --resume continues from the newest step
// that every rank holds in one of its two files, saying so when that is not
// the newest step saved. The ranks save in lock-step (a step's gather()
// needs every rank, and each saves before its next scatter()), so no rank
// is ever more than one save ahead, and a crash at any moment leaves a
// common step; --resume loses at most the interrupted save. A resume from
// the older generation first drops the newer one (checkpoint::
// restore_previous()), so that the ranks save in lock-step again from there
// (a kill soon after such a resume once left no common step). The one moment
// without a saved common step is the first save: some ranks hold its file,
// the others none. Step 0 is then the common step (the start, rebuilt from
// --seed). A rank without files beside a rank with two generations cannot
// come from a crash (the second save needs every rank's first), so that is
// refused rather than quietly starting over.
//
// A missing file offers no step. A file that exists but fails its checks
// (damaged on disk: a crash never leaves one, the saves being atomic) stops
// --resume with an error naming it, rather than quietly resuming from older
// data; removing that file resumes from the other generation.
#include <dml/dml.hpp>
#include <dml/fault.hpp>
#include <dml/vector/eigen.hpp>

#include "../common/cli.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <optional>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace {

constexpr std::size_t ranks = 4;
constexpr Eigen::Index batch = 16;  // rows per rank per step
constexpr float lr = 0.02f, momentum = 0.5f;

struct settings {
  std::size_t steps = 60, every = 10, stop_after = 0, dim = 8, samples = 2048;
  std::uint64_t seed = 1;
  std::string dir = "dml-checkpoint-demo.d";
  bool resume = false;
};

using cli::usage_error;

struct dataset {
  Eigen::MatrixXf x;
  Eigen::VectorXf y;
};

dataset generate(const settings& s) {
  std::mt19937_64 rng(s.seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto draw = [&] { return normal(rng); };
  const auto n = static_cast<Eigen::Index>(s.samples), d = static_cast<Eigen::Index>(s.dim);
  const Eigen::VectorXf w_true = Eigen::VectorXf::NullaryExpr(d, draw);
  dataset data{Eigen::MatrixXf::NullaryExpr(n, d, draw), {}};
  data.y = data.x * w_true + 0.5f * Eigen::VectorXf::NullaryExpr(n, draw);
  return data;
}

double mse(const dataset& d, const Eigen::VectorXf& w) {
  return static_cast<double>((d.x * w - d.y).squaredNorm()) / static_cast<double>(d.x.rows());
}

// One of a rank's two checkpoint files and the step it holds.
struct generation {
  std::uint64_t step;
  dml::fault::checkpoint file;
};

// The seed as the checkpoint's user bytes, least significant byte first.
std::vector<std::byte> seed_bytes(std::uint64_t seed) {
  std::vector<std::byte> b(8);
  for (std::size_t i = 0; i < 8; ++i) b[i] = static_cast<std::byte>((seed >> (8 * i)) & 0xffu);
  return b;
}

// The generations this rank can resume from, newest first: a missing file
// offers nothing. A file that exists is read whole before the ranks compare
// their steps, so that every rank that holds one has checked it, even when
// the run starts at step 0 without it: dml::data_error names a file that
// fails its checks, is of another --dim (the vectors' lengths) or of another
// --seed. Thrown before the comparison, the error stops every rank.
std::vector<generation> generations_of(const dml::fault::checkpoint& ck, const settings& s) {
  std::vector<generation> held;
  std::vector<float> w(s.dim), m(s.dim);
  for (const dml::fault::checkpoint& file : {ck, ck.previous()})
    if (file.exists()) {
      const auto state = file.load(std::span<float>(w), std::span<float>(m));
      if (state.user != seed_bytes(s.seed))
        throw dml::data_error(
            file.path(), 0,
            "written by a run with another --seed; this run has --seed " + std::to_string(s.seed));
      const std::uint64_t step = state.clock;
      // Both files hold the same step after a crash between their renames.
      if (held.empty() || held.front().step != step) held.push_back({step, file});
    }
  return held;
}

// The newest step held by every rank (held[r]: rank r's steps), if any.
// While no rank holds more than one step, the first save may have been cut
// off between ranks, and step 0, the start, is held by every rank.
std::optional<std::uint64_t> newest_common_step(const std::vector<std::vector<std::uint64_t>>& held) {
  std::optional<std::uint64_t> best;
  if (held.empty()) return best;
  if (std::all_of(held.begin(), held.end(),
                  [](const std::vector<std::uint64_t>& h) { return h.size() <= 1; }))
    best = 0;
  for (const std::uint64_t step : held.front()) {
    const bool everywhere = std::all_of(held.begin(), held.end(), [&](const std::vector<std::uint64_t>& h) {
      return std::find(h.begin(), h.end(), step) != h.end();
    });
    if (everywhere && (!best || step > *best)) best = step;
  }
  return best;
}

// "rank 2" or "ranks 1, 2 and 3".
std::string rank_list(const std::vector<std::size_t>& ranks_listed) {
  std::string text = ranks_listed.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < ranks_listed.size(); ++i) {
    if (i > 0) text += i + 1 == ranks_listed.size() ? " and " : ", ";
    text += std::to_string(ranks_listed[i]);
  }
  return text;
}

// A run without --resume starts at step 0 and must not meet another run's
// checkpoints in DIR: its first save would push the old file into .prev,
// and a later --resume would then continue the old run (its step being the
// newest) instead of this one. Nor may a forgotten --resume cost the old
// run's files. So such a run stops before it saves, naming the files.
void refuse_earlier_checkpoints(const std::string& dir) {
  std::string found;
  for (std::size_t r = 0; r < ranks; ++r) {
    const dml::fault::checkpoint ck(dir + "/rank-" + std::to_string(r) + ".ckpt");
    for (const dml::fault::checkpoint& file : {ck, ck.previous()})
      if (std::filesystem::exists(file.path()))
        found += (found.empty() ? "" : ", ") + std::filesystem::path(file.path()).filename().string();
  }
  if (!found.empty())
    throw std::runtime_error(dir + " holds the checkpoints of an earlier run (" + found +
                             "); continue it with --resume, or remove them to start over");
}

void train(dml::comm::inproc::context& comm, const settings& s, const dataset& data) {
  const std::size_t rank = comm.rank();
  const auto dim = static_cast<Eigen::Index>(s.dim);
  const std::uint64_t steps_per_epoch = s.samples / (ranks * batch);
  dml::fault::checkpoint ck(s.dir + "/rank-" + std::to_string(rank) + ".ckpt");
  ck.keep_previous(true);  // two generations: see the top of this file

  Eigen::VectorXf w = Eigen::VectorXf::Zero(dim), m = Eigen::VectorXf::Zero(dim);
  // The checkpoint reads and writes Eigen's memory through spans.
  auto model = [&] { return std::span<float>(w.data(), s.dim); };
  auto velocity = [&] { return std::span<float>(m.data(), s.dim); };

  // Only this rank saves to this path, and it is not saving yet: leftovers
  // of a save that was killed can go.
  ck.remove_temporaries();
  const std::vector<generation> mine = s.resume ? generations_of(ck, s) : std::vector<generation>{};
  // All ranks must resume from the same step: each tells the others which
  // steps it holds. This collective also keeps rank 0 from saving (below)
  // before every rank has looked at its files.
  std::vector<std::uint64_t> my_steps;
  for (const generation& gen : mine) my_steps.push_back(gen.step);
  const auto records = comm.exchange(std::as_bytes(std::span(my_steps)));
  std::vector<std::vector<std::uint64_t>> held(records.size());
  std::uint64_t newest = 0;  // the newest step any rank saved
  bool any = false;          // any rank has a checkpoint
  for (std::size_t r = 0; r < records.size(); ++r) {
    held[r].resize(records[r].size() / sizeof(std::uint64_t));
    if (!held[r].empty())  // memcpy from or to null, even of 0 bytes, is undefined
      std::memcpy(held[r].data(), records[r].data(), held[r].size() * sizeof(std::uint64_t));
    if (!held[r].empty()) any = true;
    for (const std::uint64_t step : held[r]) newest = std::max(newest, step);
  }
  std::uint64_t step = 0;
  if (any) {
    const std::optional<std::uint64_t> common = newest_common_step(held);
    if (!common) {
      std::string steps;
      for (std::size_t r = 0; r < held.size(); ++r) {
        steps += (r > 0 ? "; rank " : "rank ") + std::to_string(r) + ": ";
        for (std::size_t k = 0; k < held[r].size(); ++k)
          steps += (k > 0 ? ", " : "") + std::to_string(held[r][k]);
        if (held[r].empty()) steps += "none";
      }
      throw dml::data_error(
          s.dir, 0,
          "no step is saved by every rank (steps held: " + steps + "); remove the directory to start over");
    }
    step = *common;
    const auto from =
        std::find_if(mine.begin(), mine.end(), [&](const generation& gen) { return gen.step == step; });
    if (from != mine.end()) {  // none: step 0, the start (newest_common_step)
      const auto state = from->file.load(model(), velocity());
      if (state.clock != step)  // replaced since generations_of(): another run in the same directory
        throw dml::data_error(from->file.path(), 0,
                              "holds step " + std::to_string(state.clock) + " but held step " +
                                  std::to_string(step) + " a moment ago; is another run saving here?");
    }
    // Nothing newer than the step resumed from may stay: the next save would
    // keep it as .prev and drop the generation resumed from, and a crash
    // during that save could leave no step that every rank holds (a rank
    // with only the abandoned step beside one with only the resumed step).
    if (!mine.empty() && mine.front().step > step) {
      if (from != mine.end()) {
        ck.restore_previous();  // the generation resumed from is the older one
      } else {                  // step 0: the start
        for (const dml::fault::checkpoint& file : {ck.previous(), ck}) std::filesystem::remove(file.path());
      }
    }
  }
  if (step > s.steps)
    throw dml::data_error(
        ck.path(), 0,
        "the checkpoint is at step " + std::to_string(step) + ", past --steps " + std::to_string(s.steps));
  dml::io::print(comm, "%zu ranks, %zu features, %zu steps, checkpoints every %zu steps in %s", ranks, s.dim,
                 s.steps, s.every, s.dir.c_str());
  if (s.resume && !any) dml::io::print(comm, "no checkpoint in %s; starting from step 0", s.dir.c_str());
  if (any && step != newest) {
    std::vector<std::size_t> behind;  // the ranks without the newest step saved
    for (std::size_t r = 0; r < held.size(); ++r)
      if (std::find(held[r].begin(), held[r].end(), newest) == held[r].end()) behind.push_back(r);
    dml::io::print(
        comm,
        "%s %s no checkpoint of step %llu (a save was interrupted, or a file is gone); "
        "resuming from step %llu, %s",
        rank_list(behind).c_str(), behind.size() == 1 ? "has" : "have",
        static_cast<unsigned long long>(newest), static_cast<unsigned long long>(step),
        step == 0 ? "the start, as no save was finished by every rank" : "the newest step every rank saved");
  }
  if (any)
    dml::io::print(comm, "resumed from %s at step %llu (epoch %llu), mse %.6f", s.dir.c_str(),
                   static_cast<unsigned long long>(step),
                   static_cast<unsigned long long>(step / steps_per_epoch), mse(data, w));

  auto g = dml::make_vector<float>(comm, s.dim);  // bsp over all ranks, gather::average
  Eigen::MatrixXf xb(batch, dim);
  Eigen::VectorXf yb(batch);
  while (step < s.steps) {
    // Step t's minibatch on rank r: the rows (t * ranks + r) * batch + j, wrapping around.
    for (Eigen::Index j = 0; j < batch; ++j) {
      const auto row = static_cast<Eigen::Index>(
          ((step * ranks + rank) * static_cast<std::uint64_t>(batch) + static_cast<std::uint64_t>(j)) %
          s.samples);
      xb.row(j) = data.x.row(row);
      yb[j] = data.y[row];
    }
    g.eigen() = (2.0f / static_cast<float>(batch)) * xb.transpose() * (xb * w - yb);
    g.scatter();
    g.gather();  // the mean of all ranks' gradients
    m = momentum * m + g.eigen();
    w -= lr * m;
    ++step;
    if (step % s.every == 0 || step == s.steps) {
      ck.save({.clock = step, .epoch = step / steps_per_epoch, .user = seed_bytes(s.seed)}, model(),
              velocity());
      dml::io::print(comm, "step %llu mse %.6f, saved", static_cast<unsigned long long>(step), mse(data, w));
    }
    if (step == s.stop_after) {
      dml::io::print(comm, "stopped after step %llu", static_cast<unsigned long long>(step));
      return;
    }
  }
  dml::io::print(comm, "final: step %llu mse %.6f", static_cast<unsigned long long>(step), mse(data, w));
}

constexpr const char* description =
    R"(Least-squares SGD with momentum on 4 in-process ranks. Every K steps (default 10)
each rank saves its model to DIR/rank-<r>.ckpt (default DIR: dml-checkpoint-demo.d),
keeping the one before as rank-<r>.ckpt.prev. --stop-after S stops after step S as
an interrupted run would; --resume continues from the newest step that every rank
has saved in DIR (or starts at step 0 when there are none). Without --resume, a DIR
that holds checkpoints is refused.)";

// The command line into s: --help printed (false), or parsed.
bool parse(int argc, char** argv, settings& s) {
  const auto app = cli::app("dml-checkpoint-demo", description);
  app->add_option("--steps", s.steps, "training steps, default 60")
      ->option_text("N")
      ->check(cli::whole_number());
  app->add_option("--every", s.every, "steps between checkpoints, default 10")
      ->option_text("K")
      ->check(cli::whole_number());
  app->add_option("--stop-after", s.stop_after, "stop after step S, as an interrupted run would")
      ->option_text("S")
      ->check(cli::whole_number());
  app->add_flag("--resume", s.resume, "continue from the checkpoints in DIR");
  app->add_option("--dir", s.dir, "checkpoint directory, default dml-checkpoint-demo.d")
      ->option_text("DIR")
      ->check(cli::not_empty("a directory name"));
  app->add_option("--dim", s.dim, "features, default 8")->option_text("D")->check(cli::whole_number());
  app->add_option("--seed", s.seed, "data seed, default 1")
      ->option_text("X")
      ->check(cli::whole_number<std::uint64_t>(0));
  return cli::parse(*app, argc, argv);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    settings s;
    if (!parse(argc, argv, s)) return 0;  // --help
    std::filesystem::create_directories(s.dir);
    if (!s.resume) refuse_earlier_checkpoints(s.dir);
    const dataset data = generate(s);
    dml::comm::inproc::run(ranks, [&](dml::comm::inproc::context& comm) { train(comm, s, data); });
    return 0;
  } catch (const usage_error& e) {
    std::fprintf(stderr, "dml-checkpoint-demo: %s (see --help)\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dml-checkpoint-demo: %s\n", e.what());
    return 1;
  }
}

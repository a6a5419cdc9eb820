// SPDX-License-Identifier: BSL-1.0
// dml-smp-mf: matrix factorization by SGD with the static rotation engine
// (dml::schedule::static_rotation; SMPFRAME §4.2, SMP-MF). Ranks own the
// ratings of their users (rows of U stay local); the item factors V are
// cut into one block per rank, and the blocks rotate: in iteration t rank p
// runs SGD over its ratings of the items in block (p - t) mod P and passes
// the block on to rank p + 1. No two ranks touch the same item at once, so
// nothing is averaged or lost. After each rotation (P iterations, one pass
// over the training ratings: an epoch) every rank holds all of V and the
// training and held-out test RMSE are printed in dml-mf's format, so one
// script reads both trainers (scripts/compare-mf.py).
//
// Data: a generated low-rank matrix R = U* V*^T + N(0, noise^2), a
// --density share of it observed, item popularity skewed (item j is rated
// with weight 1 / (1 + j / 50)), so some items cost far more than others:
// the case for heaviest-first dispatch; 10% of the observed entries are
// held out for testing. Or --ratings FILE [--test-ratings FILE]: dml-mf's
// rating files, read by the same reader (examples/common/ratings.hpp).
//
// The ranks are threads (--transport inproc) or MPI processes (--transport
// mpi_rma | mpi under mpiexec: examples/common/launcher.hpp). Every process
// generates, or reads, the whole rating set and keeps its users' ratings;
// the processes check that they hold the same set before training
// (examples/common/same_input.hpp).
#include <dml/io.hpp>
#include <dml/random.hpp>
#include <dml/schedule.hpp>

#include "../common/cli.hpp"
#include "../common/kill_after.hpp"
#include "../common/launcher.hpp"
#include "../common/ratings.hpp"
#include "../common/same_input.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <numeric>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace {

using cli::usage_error;

struct options {
  std::size_t ranks = 4, users = 2000, items = 2000, rank = 8, rotations = 10;
  double density = 0.05, noise = 0.1, lr = 0.02, reg = 0.01;
  bool micro_sync = false, no_heaviest_first = false, lr_decay = false;
  std::uint64_t seed = 1;
  std::string ratings, test_ratings, write_ratings;  // files (--ratings, --test-ratings, --write-ratings)
  std::string transport = "inproc";
  trainer::kill_plan kill_after;  // --kill-after R@S
};

struct rating {
  std::uint32_t user, item;
  float value, truth;  // truth: without noise (a file's: the value)
};

struct problem {
  std::vector<rating> train, test;
  bool truth_known = true;  // generated (a file's ratings have no noiseless truth)
};

double uniform(dml::splitmix64& g) { return (static_cast<double>(g() >> 11) + 0.5) * 0x1p-53; }
double normal(dml::splitmix64& g) {
  const double u = uniform(g), v = uniform(g);
  return std::sqrt(-2.0 * std::log(u)) * std::cos(6.283185307179586 * v);
}

problem generate(const options& o) {
  dml::splitmix64 g(o.seed * 0x9e3779b97f4a7c15ULL + 7);
  dml::splitmix64 held_out(o.seed * 0x9e3779b97f4a7c15ULL + 11);  // its own stream: g's ratings stay
  const double scale = 1.0 / std::sqrt(static_cast<double>(o.rank));
  std::vector<double> u(o.users * o.rank), v(o.items * o.rank);
  for (double& x : u) x = normal(g) * std::sqrt(scale);
  for (double& x : v) x = normal(g) * std::sqrt(scale);
  problem out;
  double mean_weight = 0;
  for (std::size_t j = 0; j < o.items; ++j) mean_weight += 1.0 / (1.0 + static_cast<double>(j) / 50.0);
  mean_weight /= static_cast<double>(o.items);
  for (std::size_t i = 0; i < o.users; ++i)
    for (std::size_t j = 0; j < o.items; ++j) {
      const double p = o.density * (1.0 / (1.0 + static_cast<double>(j) / 50.0)) / mean_weight;
      if (uniform(g) >= p) continue;
      double dot = 0;
      for (std::size_t k = 0; k < o.rank; ++k) dot += u[i * o.rank + k] * v[j * o.rank + k];
      // Values are floats, as a rating file holds them, so a written and
      // read-back set trains the same model.
      const rating r{static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(j),
                     static_cast<float>(dot + o.noise * normal(g)), static_cast<float>(dot)};
      (uniform(held_out) < 0.9 ? out.train : out.test).push_back(r);
    }
  return out;
}

/// --ratings FILE [--test-ratings FILE]: as dml-mf reads them (ids remapped
/// densely; without a test file 10% held out by a coin of --seed); sets
/// --users and --items to the distinct ids.
problem load(options& o) {
  const mf_ratings::dense_set set = mf_ratings::load(o.ratings, o.test_ratings, o.seed);
  o.users = set.users;
  o.items = set.items;
  problem out;
  out.truth_known = false;
  for (const auto& [from, to] : {std::pair{&set.train, &out.train}, std::pair{&set.test, &out.test}})
    for (const auto& r : *from) to->push_back({r.user, r.item, r.value, r.value});
  return out;
}

/// Squared errors of a set of ratings: against the values and the truth.
struct errors {
  double noisy = 0, clean = 0, count = 0;
};

// One rank's program: its users' ratings grouped by item.
class mf_program {
 public:
  mf_program(const problem& data, const options& o, std::size_t member, std::size_t members)
      : o_(o), data_(&data), u_(o.users * o.rank), v_(o.items * o.rank), visited_(members, 0.0) {
    deal(member, members);
    // The same initial V on every rank; U only matters for own users.
    dml::splitmix64 g(o.seed + 99);
    for (double& x : v_) x = 0.1 * normal(g);
    for (double& x : u_) x = 0.1 * normal(g);
  }

  // dml::schedule::rotation_program
  [[nodiscard]] std::size_t parameters() const { return o_.items; }
  [[nodiscard]] std::size_t width() const { return o_.rank; }
  [[nodiscard]] double weight(dml::schedule::parameter j) const {
    return static_cast<double>(start_[j + 1] - start_[j]);
  }
  void update(const dml::schedule::step& s, std::span<double> out) {
    const std::size_t k = o_.rank;
    // --lr-decay: epoch e (rotation e, from 1) steps lr / sqrt(e), as dml-mf.
    const double lr = o_.lr_decay ? o_.lr / std::sqrt(static_cast<double>(rotation_ + 1)) : o_.lr;
    for (std::size_t n = 0; n < s.job.size(); ++n) {
      const std::size_t j = s.job[n];
      double* vj = &v_[j * k];
      for (std::size_t q = start_[j]; q < start_[j + 1]; ++q) {
        const rating& r = by_item_[q];
        double* ui = &u_[r.user * k];
        double e = r.value;
        for (std::size_t c = 0; c < k; ++c) e -= ui[c] * vj[c];
        for (std::size_t c = 0; c < k; ++c) {
          const double uc = ui[c];
          ui[c] += lr * (e * vj[c] - o_.reg * uc);
          vj[c] += lr * (e * uc - o_.reg * vj[c]);
        }
        ++updates_;
      }
      std::copy(vj, vj + k, out.begin() + static_cast<std::ptrdiff_t>(n * k));
    }
  }
  void aggregate(const dml::schedule::step& s, std::span<const double> values) {
    for (std::size_t n = 0; n < s.job.size(); ++n)
      std::copy_n(values.begin() + static_cast<std::ptrdiff_t>(n * o_.rank), o_.rank,
                  &v_[s.job[n] * o_.rank]);
  }
  // dml::schedule::restartable_rotation_program: after a member died, the
  // engine restores the item factors of the last full rotation (aggregate)
  // and deals the users out again over the survivors (reshard).
  void values(std::span<const dml::schedule::parameter> job, std::span<double> out) const {
    for (std::size_t n = 0; n < job.size(); ++n)
      std::copy_n(&v_[job[n] * o_.rank], o_.rank, out.begin() + static_cast<std::ptrdiff_t>(n * o_.rank));
  }
  /// This member's users become those with user mod `members` ==
  /// `member`; each one's factor row is fitted to its ratings against the
  /// (restored) item factors: ridge regression, the SGD's regularization
  /// once per rating. A dead member's users lose their trained rows, the
  /// others' rows match the model they go on with.
  void reshard(std::size_t member, std::size_t members) {
    deal(member, members);
    // One user at a time (its ratings in user order), so the k x k system
    // is scratch space, not one per user.
    const std::size_t k = o_.rank;
    std::vector<std::size_t> by_user(by_item_.size());
    std::iota(by_user.begin(), by_user.end(), std::size_t{0});
    std::stable_sort(by_user.begin(), by_user.end(),
                     [&](std::size_t x, std::size_t y) { return by_item_[x].user < by_item_[y].user; });
    std::vector<double> a(k * k), b(k);
    for (std::size_t q = 0; q < by_user.size();) {
      const std::uint32_t user = by_item_[by_user[q]].user;
      std::fill(a.begin(), a.end(), 0.0);
      std::fill(b.begin(), b.end(), 0.0);
      double n = 0;
      for (; q < by_user.size() && by_item_[by_user[q]].user == user; ++q, n += 1) {
        const rating& r = by_item_[by_user[q]];
        const double* vj = &v_[r.item * k];
        for (std::size_t x = 0; x < k; ++x) {
          b[x] += r.value * vj[x];
          for (std::size_t y = 0; y < k; ++y) a[x * k + y] += vj[x] * vj[y];
        }
      }
      solve_ridge(a.data(), b.data(), n * o_.reg, &u_[std::size_t{user} * k]);
    }
  }
  bool progress(dml::schedule::context& ctx) {
    const auto start = std::chrono::steady_clock::now();
    const errors train = squared_errors(by_item_), test = squared_errors(test_);
    // The errors, then every member's count of ratings visited in a slot of
    // its own (exact as a double up to 2^53): the sum over the live members
    // gathers the counts, and a member that died keeps in visited_ what its
    // last report said. A sum of the counts would lose a dead member's
    // visits of all the rotations before its death.
    std::vector<double> sums(5 + visited_.size(), 0.0);
    sums[0] = train.noisy;
    sums[1] = train.count;
    sums[2] = test.noisy;
    sums[3] = test.clean;
    sums[4] = test.count;
    sums[5 + ctx.rank()] = static_cast<double>(updates_);
    ctx.sum(sums);
    for (std::size_t m = 0; m < visited_.size(); ++m) visited_[m] = std::max(visited_[m], sums[5 + m]);
    // After a failure inside progress() the engine reports that rotation
    // again (the same iteration): it counts once.
    if (ctx.iteration() + 1 != progressed_) ++rotation_;
    progressed_ = ctx.iteration() + 1;
    last_ = {rotation_,
             0,
             std::sqrt(sums[0] / sums[1]),
             std::sqrt(sums[2] / sums[4]),
             std::sqrt(sums[3] / sums[4]),
             static_cast<std::uint64_t>(std::accumulate(visited_.begin(), visited_.end(), 0.0))};
    evaluation_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (on_rotation) on_rotation(last_, evaluation_seconds_);
    return rotation_ < o_.rotations;  // the same count on every member: all stop together
  }
  /// One rotation's numbers (seconds: filled in by the printer).
  struct row {
    std::size_t epoch = 0;
    double seconds = 0, train = 0, test = 0, truth = 0;
    std::uint64_t updates = 0;  // ratings visited by all members so far (the dead: up to their last report)
  };
  /// Called on rank 0 after each rotation, with the seconds spent evaluating so far.
  std::function<void(const row&, double)> on_rotation;
  [[nodiscard]] const row& last() const { return last_; }
  [[nodiscard]] double evaluation_seconds() const { return evaluation_seconds_; }
  [[nodiscard]] std::uint64_t updates() const { return updates_; }

 private:
  [[nodiscard]] errors squared_errors(const std::vector<rating>& set) const {
    errors out;
    for (const auto& r : set) {
      double pred = 0;
      for (std::size_t c = 0; c < o_.rank; ++c) pred += u_[r.user * o_.rank + c] * v_[r.item * o_.rank + c];
      out.noisy += (pred - r.value) * (pred - r.value);
      out.clean += (pred - r.truth) * (pred - r.truth);
    }
    out.count = static_cast<double>(set.size());
    return out;
  }

  // Keeps the ratings of users with user mod members == member, by item.
  void deal(std::size_t member, std::size_t members) {
    std::vector<rating> mine;
    test_.clear();
    for (const auto& r : data_->train)
      if (r.user % members == member) mine.push_back(r);
    for (const auto& r : data_->test)
      if (r.user % members == member) test_.push_back(r);
    start_.assign(o_.items + 1, 0);
    for (const auto& r : mine) ++start_[r.item + 1];
    for (std::size_t j = 0; j < o_.items; ++j) start_[j + 1] += start_[j];
    by_item_.resize(mine.size());
    std::vector<std::size_t> at(start_.begin(), start_.end() - 1);
    for (const auto& r : mine) by_item_[at[r.item]++] = r;
  }

  // x = (A + ridge I)^-1 b for a k x k symmetric A (Cholesky, in place).
  void solve_ridge(double* a, const double* b, double ridge, double* x) const {
    const std::size_t k = o_.rank;
    for (std::size_t d = 0; d < k; ++d) a[d * k + d] += ridge;
    for (std::size_t c = 0; c < k; ++c) {
      double diag = a[c * k + c];
      for (std::size_t q = 0; q < c; ++q) diag -= a[c * k + q] * a[c * k + q];
      if (!(diag > 0)) return;  // no positive definite system (no ridge, degenerate): keep the row
      diag = std::sqrt(diag);
      a[c * k + c] = diag;
      for (std::size_t r = c + 1; r < k; ++r) {
        double v = a[r * k + c];
        for (std::size_t q = 0; q < c; ++q) v -= a[r * k + q] * a[c * k + q];
        a[r * k + c] = v / diag;
      }
    }
    std::vector<double> y(k);
    for (std::size_t r = 0; r < k; ++r) {  // L y = b
      double v = b[r];
      for (std::size_t q = 0; q < r; ++q) v -= a[r * k + q] * y[q];
      y[r] = v / a[r * k + r];
    }
    for (std::size_t r = k; r-- > 0;) {  // L^T x = y
      double v = y[r];
      for (std::size_t q = r + 1; q < k; ++q) v -= a[q * k + r] * x[q];
      x[r] = v / a[r * k + r];
    }
  }

  options o_;
  const problem* data_;
  std::vector<std::size_t> start_;
  std::vector<rating> by_item_, test_;
  std::vector<double> u_, v_;
  row last_;
  double evaluation_seconds_ = 0;
  std::size_t rotation_ = 0;
  std::uint64_t progressed_ = 0;  // iteration + 1 of the last progress()
  std::uint64_t updates_ = 0;
  std::vector<double> visited_;  // per member id: its count of ratings visited, as last reported
};

constexpr const char* description =
    R"(Matrix factorization by SGD on the static rotation engine: item blocks
rotate among the ranks (--ranks threads, or the processes of an MPI job),
results pass along a ring, and all
ranks synchronize after each full rotation (macro synchronization; --micro-sync
adds a barrier after every iteration). The ratings are generated (a planted
rank --rank truth with noise --noise, skewed item popularity, 10% held out)
or read from dml-mf's rating files (--ratings).)";

constexpr const char* footer =
    R"(Prints one line per rotation (an epoch: every training rating visited
once) in dml-mf's format, 'epoch E  S s  train rmse X  test rmse Y', and
finally 'final: rmse=<test rmse> seconds=<s> truth=<rmse against the
noiseless ratings, n/a for a file> epochs=<rotations> updates=<ratings
visited by all ranks; one that died counts up to its last report>'.
Seconds leave out the RMSE evaluation, as dml-mf's do. Bad arguments exit
with 2, other errors with 1.)";

void parse(CLI::App& app, options& o) {
  app.add_option("--ranks", o.ranks, "in-process ranks, default 4")
      ->option_text("N")
      ->check(cli::whole_number());
  app.add_option("--transport", o.transport,
                 "inproc (threads, default) | mpi_rma | mpi (one rank per\nMPI process: mpiexec -n N "
                 "dml-smp-mf --transport mpi_rma)")
      ->option_text("NAME")
      ->check(cli::one_of({"inproc", "mpi_rma", "mpi"}));
  app.add_option("--rotations", o.rotations, "full rotations (ranks iterations each), default 10")
      ->option_text("N")
      ->check(cli::whole_number());
  app.add_option("--users", o.users, "default 2000")->option_text("N")->check(cli::whole_number());
  app.add_option("--items", o.items, "default 2000")->option_text("N")->check(cli::whole_number());
  app.add_option("--rank", o.rank, "factor rank, default 8")->option_text("K")->check(cli::whole_number());
  app.add_option("--density", o.density, "share of ratings observed, default 0.05")
      ->option_text("D")
      ->check(cli::number_where<double>([](double d) { return d > 0 && d <= 1; }, "must be in (0, 1]"));
  app.add_option("--noise", o.noise, "noise standard deviation of generated ratings, default 0.1")
      ->option_text("X")
      ->check(cli::positive_number());
  app.add_option("--lr", o.lr, "SGD step, default 0.02")->option_text("X")->check(cli::positive_number());
  app.add_flag("--lr-decay", o.lr_decay, "step --lr / sqrt(e) in rotation e (from 1), as dml-mf");
  app.add_option("--reg", o.reg, "L2 regularization, default 0.01")
      ->option_text("X")
      ->check(cli::positive_number());
  app.add_flag("--micro-sync", o.micro_sync, "a barrier after every iteration");
  app.add_flag("--no-heaviest-first", o.no_heaviest_first, "dispatch a block's items in index order");
  app.add_option("--seed", o.seed, "data, initialization and held-out coin, default 1")
      ->option_text("N")
      ->check(cli::whole_number<std::uint64_t>(0));
  app.add_option(
         "--ratings", o.ratings,
         "read the ratings from FILE (dml-mf's 'user item rating'\nlines, ids remapped densely) instead "
         "of generating them")
      ->option_text("FILE");
  app.add_option("--test-ratings", o.test_ratings,
                 "with --ratings: the held-out ratings (default: 10% of\n--ratings, chosen by --seed)")
      ->option_text("FILE");
  app.add_option("--write-ratings", o.write_ratings,
                 "write the generated training ratings to FILE and the test\nratings to FILE.test")
      ->option_text("FILE");
  trainer::add_kill_after(app, o.kill_after);
}

void check(const CLI::App& app, const options& o) {
  trainer::check_kills(o.kill_after, o.transport, o.ranks);
  if (!o.test_ratings.empty() && o.ratings.empty()) throw usage_error("--test-ratings needs --ratings");
  if (!o.ratings.empty() && !o.write_ratings.empty())
    throw usage_error("--write-ratings writes generated ratings; not with --ratings");
  for (const char* generator_option : {"--users", "--items", "--density", "--noise"})
    if (!o.ratings.empty() && app.count(generator_option) != 0)
      throw usage_error(std::string(generator_option) + " shapes generated ratings; not with --ratings");
  if (o.transport != "inproc" && app.count("--ranks") != 0)
    throw usage_error("--ranks is for --transport inproc; with " + o.transport +
                      " every MPI process is one rank (mpiexec -n N)");
  if (o.transport == "inproc" && o.ratings.empty() && o.ranks > o.items)
    throw usage_error("--ranks: at most --items");
  if (o.users > (std::size_t{1} << 24) || o.items > (std::size_t{1} << 24))
    throw usage_error("--users and --items: at most 2^24 each");
  if (static_cast<double>(o.users) * static_cast<double>(o.items) * o.density > 1e8)
    throw usage_error("--users x --items x --density is more than 10^8 ratings");
}

/// What every rank checks it shares with the others: the whole rating set.
std::uint64_t hash_of(const problem& data, const options& o) {
  trainer::fingerprint f;
  f.add(o.users);
  f.add(o.items);
  for (const auto* set : {&data.train, &data.test}) {
    f.add(set->size());
    for (const auto& r : *set) {
      f.add(r.user);
      f.add(r.item);
      f.add(r.value);
      f.add(r.truth);
    }
  }
  return f.value();
}

/// The ratings (generated or read) and the checks that need them: the same
/// on every rank, so under MPI every process finds the same error.
problem load_checked(options& o, const std::string& ranks_text) {
  problem data = o.ratings.empty() ? generate(o) : load(o);
  if (data.train.empty() || data.test.empty())
    throw usage_error((o.ratings.empty() ? std::string("the generated matrix") : o.ratings) + " gives " +
                      std::to_string(data.train.size()) + " training and " +
                      std::to_string(data.test.size()) + " test ratings; both need some");
  if (o.ranks > o.items)
    throw usage_error(ranks_text + " is more than the " + std::to_string(o.items) + " items" +
                      (o.ratings.empty() ? std::string() : " of " + o.ratings) +
                      " (one block of items per rank)");
  return data;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  try {
    const auto app = cli::app("dml-smp-mf", description, footer);
    parse(*app, o);
    if (!cli::parse(*app, argc, argv)) return 0;
    check(*app, o);
  } catch (const usage_error& e) {
    return trainer::usage_failure("dml-smp-mf", e.what());  // under mpiexec: once
  }
  try {
    trainer::launcher launch(o.transport, o.ranks, argc, argv,
                             trainer::planned_kills(o.kill_after));  // starts MPI for mpi_rma / mpi
    const std::string ranks_text =
        launch.in_process() ? "--ranks " + std::to_string(o.ranks) : "mpiexec -n " + std::to_string(o.ranks);
    // In-process, the ranks share this process's one copy; under MPI every
    // process makes its own and the ranks agree on it (or on its error).
    const bool leader = launch.leader();
    problem data;
    trainer::read_agreed(
        launch, "dml-smp-mf",
        [&] {
          data = load_checked(o, ranks_text);
          if (leader && !o.write_ratings.empty()) {  // one writer
            mf_ratings::write(o.write_ratings, data.train, "dml-smp-mf");
            mf_ratings::write(o.write_ratings + ".test", data.test, "dml-smp-mf");
          }
        },
        [&] {
          return std::pair(hash_of(data, o), std::to_string(data.train.size()) + " training / " +
                                                 std::to_string(data.test.size()) + " test ratings of " +
                                                 std::to_string(o.users) + " users x " +
                                                 std::to_string(o.items) + " items");
        },
        "the rating set");
    mf_program::row last;
    double seconds = 0;
    bool reporter = false;  // this process's member printed the last report
    auto print_result = [&] {
      const auto visited = static_cast<unsigned long long>(last.updates);
      if (data.truth_known) {
        std::printf("noise %.4f: test rmse %.5f is %.1f%% above it; rmse against the noiseless truth %.5f\n",
                    o.noise, last.test, 100 * (last.test / o.noise - 1), last.truth);
        std::printf("final: rmse=%.5f seconds=%.3f truth=%.5f epochs=%zu updates=%llu\n", last.test, seconds,
                    last.truth, last.epoch, visited);
      } else {
        std::printf("final: rmse=%.5f seconds=%.3f truth=n/a epochs=%zu updates=%llu\n", last.test, seconds,
                    last.epoch, visited);
      }
      std::fflush(stdout);
    };
    if (launch.leader()) {  // asked again: member 0 may have died while the input was agreed
      if (!o.ratings.empty())
        std::printf("dml-smp-mf: %s: %zu users x %zu items (ids remapped densely)\n", o.ratings.c_str(),
                    o.users, o.items);
      std::printf(
          "dml-smp-mf: %zu ranks%s, %zu users x %zu items, rank %zu, %zu training / %zu test ratings, %s "
          "sync%s\n",
          o.ranks, launch.in_process() ? "" : (" (" + o.transport + ")").c_str(), o.users, o.items, o.rank,
          data.train.size(), data.test.size(), o.micro_sync ? "micro" : "macro",
          o.no_heaviest_first ? "" : ", heaviest first");
      std::fflush(stdout);
    }
    launch.run([&](auto& comm) {
      mf_program prog(data, o, comm.rank(), o.ranks);
      const auto start = std::chrono::steady_clock::now();  // the leader's, after its set-up
      // Every member may become the one that prints: the leader is the
      // first live member, the next one after member 0 died.
      std::size_t changes_printed = 0;  // view-change lines printed
      std::size_t printed = 0;          // the last epoch printed (one reported again after a failure is not)
      prog.on_rotation = [&](const mf_program::row& r, double evaluating) {
        if (!dml::io::leader(comm)) return;
        trainer::print_view_changes(comm, changes_printed);
        if (r.epoch == printed) return;
        printed = r.epoch;
        const double s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() - evaluating;
        std::printf("epoch %3zu  %8.3f s  train rmse %.5f  test rmse %.5f\n", r.epoch, s, r.train, r.test);
        std::fflush(stdout);
      };
      const dml::schedule::static_rotation engine{
          // One executor: the updates of a block's items share this member's
          // user rows, so they cannot run on several threads.
          .macro_sync = !o.micro_sync,
          .heaviest_first = !o.no_heaviest_first,
          .executors = 1};
      // progress() ends the run after --rotations full rotations; the
      // iterations are a bound that holds after failures too.
      const auto st = dml::schedule::run(comm, prog, engine, trainer::rotation_bound(o.rotations, o.ranks));
      // Every member holds the last rotation's numbers (sums over the
      // members): the reporter takes them, or under MPI a survivor, when
      // the reporter died after its last report.
      auto take = [&] {
        reporter = true;
        trainer::print_view_changes(comm, changes_printed);
        trainer::print_failures_survived(st);
        seconds = st.seconds - prog.evaluation_seconds();
        last = prog.last();
      };
      if (dml::io::leader(comm)) take();
      trainer::print_final_surviving(launch, comm, [&] {
        if (!reporter) take();
        print_result();
      });
    });
    // In-process the members share the result: printed once, here.
    if (reporter && launch.in_process()) print_result();
  } catch (const trainer::agreed_error& e) {  // the same on every rank: the leader says it
    return trainer::agreed_failure("dml-smp-mf", e);
  } catch (const usage_error& e) {
    std::fprintf(stderr, "dml-smp-mf: %s (see --help)\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dml-smp-mf: %s\n", e.what());
    return 1;
  }
}

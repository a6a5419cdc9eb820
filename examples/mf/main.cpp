// SPDX-License-Identifier: BSL-1.0
// dml-mf: matrix factorization by SGD on a dml parameter table, over
// in-process ranks or MPI processes, on a generated low-rank rating matrix
// with a planted truth: R = U* V*^T + N(0, noise^2), a random part observed
// (the generator of dml-mf-hogwild: with the same sizes and seed the two
// trainers see the same ratings).
//
// The serial algorithm: for every observed rating r_ij, in a shuffled order,
//
//     e = r_ij - u_i . v_j;  u_i += lr (e v_j - reg u_i);  v_j += lr (e u_i - reg v_j)
//
// with lr = --lr / sqrt(epoch). On a table (IterStore's MF, Cui §2.4.1,
// Algorithm 1): every factor row u_i and v_j is a row of the table (users
// first, then items), and a step reads both rows and adds the two deltas as
// updates. Each member takes its shard of the training ratings (among the
// live members), shuffled every epoch, and ends a clock after every
// 1/--clocks of it; every member ends the same number of clocks. Its own
// steps are visible to it at once (a table read includes the caller's own
// updates); the others' arrive as the consistency policy bounds them: under
// bsp a read at clock T includes every member's steps of clocks 0..T-1,
// under ssp<S> of clocks 0..T-S-1, under asp whatever has arrived. Unlike
// the vector trainer (dml-mf-hogwild), no step is ever lost or counted
// twice: the table sums the deltas. Before a clock's first step a member
// reads every row of others that the clock's ratings touch with one
// read_rows call (a fetch per owner); the steps' reads then come from the
// cache (--no-read-ahead: each row is fetched at its first read, a round
// trip each, which over the two-sided mpi transport costs ten times as
// much: docs/tables.md).
//
// Clock 0 writes the initial model (small random values, the same on every
// member and at every rank count; row r is written by one member). After
// every epoch the members add their table statistics to six extra rows and
// sync() (collective: afterwards reads include every update); the leader
// reads the whole model, evaluates and prints, and a second sync() keeps the
// others from changing the model meanwhile. So the numbers printed are those
// of the model after the epoch, at any rank count. Within an epoch, at more
// than one rank, which updates a read includes beyond the bound depends on
// timing (the bound is a lower bound), so runs differ in the last digits.
//
// At one rank under bsp the run computes exactly what a serial SGD computes
// that keeps, as the table does for a member's own rows, each row's value
// and the sum of the current clock's deltas apart (a read returns their
// sum; the clock's end adds the deltas to the value): --check-serial runs
// that serial loop (serial_sgd below) after the table run and compares the
// two models element by element.
//
// Failures (docs/tables.md): the table withdraws a dead member's updates,
// its share of the initial model included. The survivors take over its
// ratings from the next epoch on (shards follow the live view) and re-add
// the initial values of the rows it had written, so training goes on from
// the survivors' model. With --keep-through-sync the table withdraws only
// what the dead member added after the last sync every survivor completed
// (table_options::keep_through_sync), and once a sync is kept the initial
// values are too: nothing is re-added.
#include <dml/error.hpp>
#include <dml/io.hpp>
#include <dml/table.hpp>

#include "../common/cli.hpp"
#include "../common/launcher.hpp"
#include "../common/ratings.hpp"
#include "../common/same_input.hpp"
#include "../common/table_app.hpp"

#include <dml/data/shard.hpp>

#include <Eigen/Core>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace {

using trainer::usage_error;

struct settings : trainer::table_settings {
  std::size_t users = 300, items = 300, rank = 5, epochs = 20, clocks = 10;
  double density = 0.5, power_law = 0;
  std::string ratings, test_ratings, write_ratings;  // files (--ratings, --test-ratings, --write-ratings)
  float noise = 0.1f, lr = 0.05f, reg = 0.01f;
  std::uint64_t seed = 1;
  bool check_serial = false, serial = false, virtual_iteration = false;
};

// ---- the data: dml-mf-hogwild's generator ---------------------------------------------

struct rating {
  std::uint32_t user, item;
  float value, truth;
};

struct problem {
  std::vector<rating> train, test;  // 90% / 10% of the observed entries
  bool truth_known = true;          // generated (a file's ratings have no noiseless truth)
};

/// U* and V* with N(0, 1/sqrt(rank)) entries (so a true rating has variance
/// about 1); each entry observed with probability `density`, with noise;
/// 90% of the observed entries train, 10% test. The same random sequence
/// as dml-mf-hogwild's generator: the same sizes and seed give the same
/// ratings. With --power-law A, user i and item j have weights (i+1)^-A and
/// (j+1)^-A scaled to mean 1, and the entry is observed with probability
/// min(1, density x both weights): a few users and items have most of the
/// ratings, as in real rating data, the expected count stays about the
/// same, and the truth is planted as before.
problem generate(const settings& s) {
  std::mt19937_64 rng(s.seed);
  std::normal_distribution<float> factor(0.0f, 1.0f / std::sqrt(std::sqrt(static_cast<float>(s.rank))));
  std::normal_distribution<float> noise(0.0f, s.noise);
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  Eigen::MatrixXf u(static_cast<Eigen::Index>(s.users), static_cast<Eigen::Index>(s.rank));
  Eigen::MatrixXf v(static_cast<Eigen::Index>(s.items), static_cast<Eigen::Index>(s.rank));
  u = u.unaryExpr([&](float) { return factor(rng); });
  v = v.unaryExpr([&](float) { return factor(rng); });
  const auto weights = [&](std::size_t n) {
    std::vector<double> w(n, 1.0);
    if (s.power_law <= 0) return w;
    double sum = 0;
    for (std::size_t i = 0; i < n; ++i) sum += w[i] = std::pow(static_cast<double>(i + 1), -s.power_law);
    for (double& x : w) x *= static_cast<double>(n) / sum;
    return w;
  };
  const std::vector<double> wu = weights(s.users), wv = weights(s.items);
  problem out;
  for (std::uint32_t i = 0; i < s.users; ++i)
    for (std::uint32_t j = 0; j < s.items; ++j) {
      const double p = s.power_law > 0 ? std::min(1.0, s.density * wu[i] * wv[j]) : s.density;
      if (coin(rng) >= p) continue;
      const float truth = u.row(i).dot(v.row(j));
      (coin(rng) < 0.9 ? out.train : out.test).push_back({i, j, truth + noise(rng), truth});
    }
  return out;
}

/// The ratings of --ratings (and --test-ratings): ids mapped densely, the
/// model's sizes set in `s` (one row per user and item that occurs); without
/// --test-ratings 10% of the lines are held out by a coin of --seed, as the
/// generator holds out 10% of its entries.
problem load(settings& s) {
  const mf_ratings::dense_set set = mf_ratings::load(s.ratings, s.test_ratings, s.seed);
  s.users = set.users;
  s.items = set.items;
  problem out;
  out.truth_known = false;
  for (const auto& [from, to] : {std::pair{&set.train, &out.train}, std::pair{&set.test, &out.test}})
    for (const auto& r : *from) to->push_back({r.user, r.item, r.value, r.value});
  return out;
}

/// The checks on what generate() or load() gave, run inside the read so
/// that under MPI one process reports a failure (read_agreed).
problem checked(problem data, const settings& s) {
  if (!s.ratings.empty() && (data.train.empty() || data.test.empty()))
    throw usage_error(s.ratings + " gives " + std::to_string(data.train.size()) + " training and " +
                      std::to_string(data.test.size()) + " test ratings; both need some");
  if (!s.ratings.empty() && s.rank > std::min(s.users, s.items))
    throw usage_error("--rank " + std::to_string(s.rank) + " is more than the " + std::to_string(s.users) +
                      " users or " + std::to_string(s.items) + " items of " + s.ratings);
  if (data.train.empty() || data.test.empty())
    throw usage_error("the generated matrix has " + std::to_string(data.train.size()) + " training and " +
                      std::to_string(data.test.size()) + " test ratings; both need some (raise --density)");
  if (!s.serial && data.train.size() < s.ranks * s.clocks)
    throw usage_error(std::to_string(data.train.size()) + " training ratings are too few for " +
                      std::to_string(s.ranks) + " ranks with " + std::to_string(s.clocks) +
                      " clocks per epoch (each clock needs a rating on every rank)");
  return data;
}

/// --write-ratings FILE: the training ratings to FILE and the test ratings
/// to FILE.test, one `user item rating` line each (floats written exactly).
void write_ratings(const problem& data, const std::string& path) {
  mf_ratings::write(path, data.train, "dml-mf");
  mf_ratings::write(path + ".test", data.test, "dml-mf");
}

// ---- the model ------------------------------------------------------------------------------

/// The initial model, U's rows then V's, k values each: N(0, 0.1), the same
/// values dml-mf-hogwild starts from.
std::vector<double> initial_model(const settings& s) {
  std::vector<double> m((s.users + s.items) * s.rank);
  std::mt19937_64 rng(s.seed);
  std::normal_distribution<float> small(0.0f, 0.1f);
  for (double& x : m) x = small(rng);
  return m;
}

/// One SGD step on rating value r with the rows' current values u and v:
/// writes the deltas to du and dv and returns the error before the step.
/// The table run and the serial loop share it, so both do the same
/// floating-point operations.
double sgd_step(std::span<const double> u, std::span<const double> v, double r, double lr, double reg,
                std::span<double> du, std::span<double> dv) {
  double pred = 0;
  for (std::size_t f = 0; f < u.size(); ++f) pred += u[f] * v[f];
  const double e = r - pred;
  for (std::size_t f = 0; f < u.size(); ++f) {
    du[f] = lr * (e * v[f] - reg * u[f]);
    dv[f] = lr * (e * u[f] - reg * v[f]);
  }
  return e;
}

/// RMSE of a whole model (U's rows then V's) on a set, against the noisy
/// values and against the noiseless truth.
std::pair<double, double> rmse(const std::vector<double>& model, const settings& s,
                               const std::vector<rating>& set) {
  double noisy = 0, clean = 0;
  const std::size_t k = s.rank;
  for (const auto& r : set) {
    const double* u = &model[r.user * k];
    const double* v = &model[(s.users + r.item) * k];
    double pred = 0;
    for (std::size_t f = 0; f < k; ++f) pred += u[f] * v[f];
    noisy += (pred - r.value) * (pred - r.value);
    clean += (pred - r.truth) * (pred - r.truth);
  }
  const auto n = static_cast<double>(set.size());
  return {std::sqrt(noisy / n), std::sqrt(clean / n)};
}

/// The learning rate of epoch e (from 1).
double epoch_lr(const settings& s, std::size_t epoch) {
  return static_cast<double>(s.lr) / std::sqrt(static_cast<double>(epoch));
}

/// The ratings this member trains on in `epoch`: its shard of the training
/// set among the live members, shuffled with the epoch's seed.
template <class Comm>
std::vector<std::size_t> epoch_ratings(const Comm& comm, const std::vector<std::size_t>& order,
                                       const settings& s, std::size_t epoch) {
  std::vector<std::size_t> mine;
  for (std::size_t i : dml::data::shard::among(comm.view().live, comm.rank()).indices(order.size()))
    mine.push_back(order[i]);
  dml::data::shuffle(mine, s.seed + 1000003 * epoch + comm.rank());
  return mine;
}

/// Ratings [first, end) of a member's `count` for clock c of an epoch.
std::pair<std::size_t, std::size_t> clock_range(std::size_t count, std::size_t c, std::size_t clocks) {
  return {count * c / clocks, count * (c + 1) / clocks};
}

// ---- progress -------------------------------------------------------------------------------

struct epoch_row {
  std::size_t epoch = 0;
  double seconds = 0, train = 0, test = 0, truth = 0;
};

void print_epoch(const epoch_row& r, const std::string& table_line) {
  std::printf("epoch %3zu  %8.3f s  train rmse %.5f  test rmse %.5f%s%s\n", r.epoch, r.seconds, r.train,
              r.test, table_line.empty() ? "" : "  ", table_line.c_str());
  std::fflush(stdout);
}

struct outcome {
  epoch_row last;
  std::vector<double> model;  // the final model (leader)
  bool done = false;
};

// ---- on a table -------------------------------------------------------------------------------

outcome table_mf(trainer::launcher& launch, const settings& s, const problem& data) {
  const std::size_t k = s.rank, model_rows = s.users + s.items;
  const std::vector<std::size_t> order = dml::data::permutation(data.train.size(), s.seed);
  const std::vector<double> init = initial_model(s);
  outcome result;
  launch.run([&](auto& comm) {
    using clock = std::chrono::steady_clock;
    auto t = dml::make_table<double>(comm, model_rows + trainer::table_stats_rows<double>::count, k,
                                     trainer::table_consistency(s), trainer::table_options_of(s));
    trainer::table_stats_rows<double> stats(model_rows);
    std::vector<std::size_t> every_row(model_rows);
    for (std::size_t r = 0; r < model_rows; ++r) every_row[r] = r;
    std::vector<double> u(k), v(k), du(k), dv(k);
    std::vector<std::size_t> clock_rows;  // --read-ahead: the rows a clock reads
    std::size_t changes_printed = 0;
    double seconds = 0;

    // Who wrote each row's initial value: row r by the (r mod n)-th member
    // at first; a row whose writer failed is written again by the
    // (r mod n')-th survivor (the table withdrew the first write).
    std::vector<dml::member_id> writer(model_rows, 0);
    std::uint64_t view_epoch = 0;
    auto write_initial = [&](bool first) {
      const auto view = comm.view();
      if (!first && view.epoch == view_epoch) return;
      view_epoch = view.epoch;
      const auto& live = view.live;
      // With --keep-through-sync, once a sync is kept for good (clock 0's
      // writes precede every sync) nothing was withdrawn: writing again
      // would count the values twice.
      const bool kept = !first && t.kept_syncs() > 0;
      for (std::size_t r = 0; r < model_rows; ++r) {
        if (!first && std::find(live.begin(), live.end(), writer[r]) != live.end()) continue;
        writer[r] = live[r % live.size()];
        if (writer[r] == comm.rank() && !kept) t.update(r, std::span<const double>(&init[r * k], k));
      }
    };

    // One epoch's steps: --clocks clocks over this member's ratings.
    auto train_epoch = [&](std::size_t epoch, bool virtual_pass) {
      const std::vector<std::size_t> mine = epoch_ratings(comm, order, s, epoch);
      const double lr = epoch_lr(s, epoch);
      for (std::size_t c = 0; c < s.clocks; ++c) {
        if (!virtual_pass) {
          if (c == s.clocks / 2 && trainer::killed_in(s, comm.rank(), epoch)) trainer::stop_member(comm);
          write_initial(false);
        }
        const auto [first, end] = clock_range(mine.size(), c, s.clocks);
        if (s.read_ahead) {
          clock_rows.clear();
          for (std::size_t i = first; i < end; ++i) {
            clock_rows.push_back(data.train[mine[i]].user);
            clock_rows.push_back(s.users + data.train[mine[i]].item);
          }
          trainer::read_ahead(t, clock_rows, comm.rank());
        }
        for (std::size_t i = first; i < end; ++i) {
          const rating& r = data.train[mine[i]];
          const std::size_t a = r.user, b = s.users + r.item;
          const auto ru = t.read(a);  // valid until the next table call: copied
          std::copy(ru.begin(), ru.end(), u.begin());
          const auto rv = t.read(b);
          std::copy(rv.begin(), rv.end(), v.begin());
          (void)sgd_step(u, v, r.value, lr, s.reg, du, dv);
          t.update(a, du);
          t.update(b, dv);
        }
        t.clock();
      }
    };

    // After an epoch: statistics in, sync, the leader evaluates, sync.
    // The leader reads the whole model and prints the epoch's line.
    auto evaluate = [&](std::size_t epoch) {
      trainer::print_view_changes(comm, changes_printed);
      // One batch read: a fetch per owner, not a round trip per row (which
      // over the two-sided mpi transport costs seconds per evaluation).
      const auto all = t.read_rows(every_row);
      std::vector<double> model(all.begin(), all.end());
      const auto [test, truth] = rmse(model, s, data.test);
      result.last = {epoch, seconds, rmse(model, s, data.train).first, test, truth};
      print_epoch(result.last, trainer::describe(stats.read(t)));
      if (epoch == s.epochs) {
        result.model = std::move(model);
        result.done = true;
      }
    };
    auto report = [&](std::size_t epoch, clock::time_point start) {
      stats.add(t);
      t.sync();
      seconds += std::chrono::duration<double>(clock::now() - start).count();
      const bool leading = dml::io::leader(comm);
      if (leading) evaluate(epoch);
      t.sync();  // nobody changes the model while the leader reads it
      // The leader failed during the report: its successor reports (the
      // epoch's line may appear twice, if it printed before it failed).
      if (!leading && dml::io::leader(comm)) evaluate(epoch);
    };

    auto start = clock::now();
    write_initial(true);
    t.clock();
    report(0, start);
    for (std::size_t epoch = 1; epoch <= s.epochs; ++epoch) {
      start = clock::now();
      if (epoch == 1 && s.virtual_iteration) {
        // IterStore's virtual iteration: the first epoch's reads and
        // updates, only recorded (reads return zeros, nothing changes),
        // then the specializations (placement, batches, prefetch, static
        // cache) are set up from them. Later epochs touch the same rows in
        // another order.
        t.begin_recording(dml::recording::virtual_iteration);
        train_epoch(epoch, true);
        t.end_recording();  // counted in epoch 1's time
      }
      train_epoch(epoch, false);
      report(epoch, start);
    }
    t.sync();  // nobody leaves while a successor of a failed leader reads the model
  });
  return result;
}

// ---- the serial reference -------------------------------------------------------------------

/// The same SGD in one loop without a table: each row's value and the sum
/// of the current clock's deltas kept apart, a read returning their sum and
/// a clock's end adding the deltas to the values -- what a table does for
/// the rows a member owns, so at one rank under bsp both compute the same
/// numbers. `print`: epoch lines.
outcome serial_sgd(const settings& s, const problem& data, bool print) {
  using clock = std::chrono::steady_clock;
  const std::size_t k = s.rank, n = (s.users + s.items) * k;
  const std::vector<std::size_t> order = dml::data::permutation(data.train.size(), s.seed);
  std::vector<double> value(n, 0.0), pending = initial_model(s);
  std::vector<double> u(k), v(k), du(k), dv(k);
  auto end_clock = [&] {
    for (std::size_t i = 0; i < n; ++i) {
      value[i] += pending[i];
      pending[i] = 0;
    }
  };
  auto read = [&](std::size_t row, std::vector<double>& out) {
    for (std::size_t f = 0; f < k; ++f) out[f] = value[row * k + f] + pending[row * k + f];
  };
  outcome result;
  double seconds = 0;
  auto report = [&](std::size_t epoch) {
    const auto [test, truth] = rmse(value, s, data.test);
    result.last = {epoch, seconds, rmse(value, s, data.train).first, test, truth};
    if (print) print_epoch(result.last, "");
  };
  end_clock();
  report(0);
  for (std::size_t epoch = 1; epoch <= s.epochs; ++epoch) {
    const auto start = clock::now();
    std::vector<std::size_t> mine = order;
    dml::data::shuffle(mine, s.seed + 1000003 * epoch);
    const double lr = epoch_lr(s, epoch);
    for (std::size_t c = 0; c < s.clocks; ++c) {
      const auto [first, end] = clock_range(mine.size(), c, s.clocks);
      for (std::size_t i = first; i < end; ++i) {
        const rating& r = data.train[mine[i]];
        const std::size_t a = r.user, b = s.users + r.item;
        read(a, u);
        read(b, v);
        (void)sgd_step(u, v, r.value, lr, s.reg, du, dv);
        for (std::size_t f = 0; f < k; ++f) pending[a * k + f] += du[f];
        for (std::size_t f = 0; f < k; ++f) pending[b * k + f] += dv[f];
      }
      end_clock();
    }
    seconds += std::chrono::duration<double>(clock::now() - start).count();
    report(epoch);
  }
  result.model = value;
  result.done = true;
  return result;
}

/// --check-serial: whether the table run's model equals the serial loop's.
bool check_against_serial(const outcome& r, const settings& s, const problem& data) {
  const outcome ref = serial_sgd(s, data, false);
  std::size_t differ = 0;
  double largest = 0;
  for (std::size_t i = 0; i < ref.model.size(); ++i)
    if (r.model[i] != ref.model[i]) {
      ++differ;
      largest = std::max(largest, std::abs(r.model[i] - ref.model[i]));
    }
  std::printf("check: serial SGD, %zu epochs, %.3f s, test rmse %.5f\n", s.epochs, ref.last.seconds,
              ref.last.test);
  if (differ == 0) {
    std::printf("check: the %zu model values are equal\ncheck: passed\n", ref.model.size());
    return true;
  }
  std::printf("check: %zu of %zu model values differ (largest difference %.3e)\ncheck: FAILED\n", differ,
              ref.model.size(), largest);
  return false;
}

// ---- command line ----------------------------------------------------------------------------

constexpr const char* description =
    R"(Matrix factorization by SGD on a dml parameter table: the user and item
factor rows are rows of the table, every rank trains on its share of the
ratings and adds its steps to the rows it touches. The ratings are
generated: a planted rank --rank truth, --density of it observed, with
Gaussian noise of --noise (the best test RMSE possible), 90% train, 10%
test; the defaults are dml-mf-hogwild's data.)";

constexpr const char* footer =
    R"(Prints one line per epoch (train and test RMSE, the table's statistics
summed over the ranks) and finally 'final: rmse=<test rmse> seconds=<s>
truth=<rmse against the noiseless ratings> epochs=<n>'. Bad arguments exit
with 2, other errors with 1.)";

bool parse(int argc, char** argv, settings& s) {
  const auto app = cli::app("dml-mf", description, footer);
  trainer::add_table_options(*app, s, "dml-mf", "epoch");
  trainer::add_keep_option(*app, s, "epoch");
  app->add_option("--users", s.users, "rows of the rating matrix, default 300")
      ->option_text("N")
      ->check(cli::whole_number());
  app->add_option("--items", s.items, "columns of the rating matrix, default 300")
      ->option_text("N")
      ->check(cli::whole_number());
  app->add_option("--rank", s.rank, "rank of the planted truth and of the factors, default 5")
      ->option_text("K")
      ->check(cli::number_where<std::size_t>([](std::size_t v) { return v >= 1 && v <= 1024; },
                                             "needs 1 .. 1024"));
  app->add_option("--density", s.density, "share of the matrix observed, default 0.5")
      ->option_text("X")
      ->check(cli::number_where<double>([](double v) { return v > 0 && v <= 1; }, "needs a share in (0, 1]"));
  app->add_option("--noise", s.noise, "noise standard deviation, default 0.1")
      ->option_text("X")
      ->check(cli::positive_number<float>());
  app->add_option("--epochs", s.epochs, "passes over the training ratings, default 20")
      ->option_text("N")
      ->check(cli::number_where<std::size_t>([](std::size_t v) { return v >= 1 && v <= 100000; },
                                             "needs 1 .. 100000 epochs"));
  app->add_option("--clocks", s.clocks,
                  "clocks per epoch (each rank's ratings in as many\nparts), default 10")
      ->option_text("N")
      ->check(cli::number_where<std::size_t>([](std::size_t v) { return v >= 1 && v <= 100000; },
                                             "needs 1 .. 100000 clocks"));
  app->add_option("--lr", s.lr, "learning rate (epoch e: lr / sqrt(e)), default 0.05")
      ->option_text("X")
      ->check(cli::positive_number<float>());
  app->add_option("--reg", s.reg, "L2 regularization, default 0.01")
      ->option_text("X")
      ->check(cli::positive_number<float>());
  app->add_option("--seed", s.seed, "data, initialization and shuffle seed, default 1")
      ->option_text("N")
      ->check(cli::whole_number<std::uint64_t>(0));
  app->add_option("--power-law", s.power_law,
                  "generated ratings: user and item i observed with weight\n(i+1)^-A (power-law counts), "
                  "default 0: uniform")
      ->option_text("A")
      ->check(cli::number_where<double>([](double v) { return v >= 0 && v <= 4; }, "needs 0 .. 4"));
  app->add_option("--ratings", s.ratings,
                  "read the ratings from FILE ('user item rating' lines, ids\nremapped densely) instead of "
                  "generating them")
      ->option_text("FILE");
  app->add_option("--test-ratings", s.test_ratings,
                  "with --ratings: the held-out ratings (default: 10% of\n--ratings, chosen by --seed)")
      ->option_text("FILE");
  app->add_option("--write-ratings", s.write_ratings,
                  "write the generated training ratings to FILE and the test\nratings to FILE.test")
      ->option_text("FILE");
  app->add_flag("--virtual-iteration", s.virtual_iteration,
                "record the first epoch's accesses in a virtual iteration\nand specialize the table to them");
  trainer::add_read_ahead_option(*app, s);
  app->add_flag("--serial", s.serial, "the serial SGD only (no table)");
  app->add_flag(
      "--check-serial", s.check_serial,
      "also run the serial SGD and require an equal model\n(exit 1 otherwise; holds at 1 rank under bsp)");
  if (!cli::parse(*app, argc, argv)) return false;
  trainer::check_table_settings(*app, s, s.epochs, "epoch");
  if (s.users > (std::size_t{1} << 24) || s.items > (std::size_t{1} << 24))
    throw usage_error("--users and --items: at most 2^24 each");
  if (!s.test_ratings.empty() && s.ratings.empty()) throw usage_error("--test-ratings needs --ratings");
  if (!s.ratings.empty() && !s.write_ratings.empty())
    throw usage_error("--write-ratings writes generated ratings; not with --ratings");
  for (const char* generator_option : {"--users", "--items", "--density", "--noise", "--power-law"})
    if (!s.ratings.empty() && app->count(generator_option) != 0)
      throw usage_error(std::string(generator_option) + " shapes generated ratings; not with --ratings");
  if (s.ratings.empty() && s.rank > std::min(s.users, s.items))
    throw usage_error(
        "--rank " + std::to_string(s.rank) + " is more than the matrix's " +
        (s.users <= s.items ? "--users " + std::to_string(s.users) : "--items " + std::to_string(s.items)) +
        " (a factorization of that rank has more unknowns than needed)");
  if (static_cast<double>(s.users) * static_cast<double>(s.items) * s.density > 1e8)
    throw usage_error("--users x --items x --density is more than 10^8 ratings");
  if (s.serial && s.transport != "inproc")
    throw usage_error("--serial runs in this process (--transport inproc)");
  if (s.serial && s.check_serial)
    throw usage_error("--check-serial compares a table run with --serial; not both");
  if (s.serial && (s.ranks_given || !s.kill_at.empty() || !s.kill_after.empty()))
    throw usage_error("--serial runs no ranks (no --ranks, --kill or --kill-after)");
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  settings s;
  try {
    if (!parse(argc, argv, s)) return 0;  // --help
  } catch (const usage_error& e) {
    std::fprintf(stderr, "dml-mf: %s (see --help)\n", e.what());
    return 2;
  }
  try {
    trainer::launcher launch = trainer::table_launcher(s, argc, argv);  // starts MPI for mpi_rma / mpi
    // Every process generates or reads all the ratings and keeps its users'
    // share: under MPI the processes compare what they hold first
    // (read_agreed), since a file that differs between machines would train
    // one model on a mix of two rating sets.
    problem data;
    trainer::read_agreed(
        launch, "dml-mf", [&] { data = checked(s.ratings.empty() ? generate(s) : load(s), s); },
        [&] {
          trainer::fingerprint f;
          f.add(s.users);
          f.add(s.items);
          f.add_span(std::span<const rating>(data.train));
          f.add_span(std::span<const rating>(data.test));
          return std::pair(f.value(), std::to_string(data.train.size()) + " training / " +
                                          std::to_string(data.test.size()) + " test ratings of " +
                                          std::to_string(s.users) + " users x " + std::to_string(s.items) +
                                          " items" + (s.ratings.empty() ? "" : " from " + s.ratings));
        },
        "the rating set");
    if (!s.write_ratings.empty() && launch.leader()) write_ratings(data, s.write_ratings);
    if (launch.leader() && !s.ratings.empty())
      std::printf("dml-mf: %s: %zu users x %zu items (ids remapped densely)\n", s.ratings.c_str(), s.users,
                  s.items);
    if (launch.leader() && !s.ratings.empty())
      std::printf(
          "dml-mf: %zu training / %zu test ratings; rank %zu; %s, %zu epochs, %zu clocks per epoch, lr %g, "
          "reg %g\n",
          data.train.size(), data.test.size(), s.rank,
          (std::to_string(s.ranks) + " ranks, " + s.transport + ", consistency " +
           trainer::consistency_name(s))
              .c_str(),
          s.epochs, s.clocks, static_cast<double>(s.lr), static_cast<double>(s.reg));
    else if (launch.leader())
      std::printf(
          "dml-mf: %zu x %zu rank %zu, noise %g, %zu training / %zu test ratings; %s, %zu epochs, %zu clocks "
          "per "
          "epoch, lr %g, reg %g\n",
          s.users, s.items, s.rank, static_cast<double>(s.noise), data.train.size(), data.test.size(),
          s.serial ? "serial"
                   : (std::to_string(s.ranks) + " ranks, " + s.transport + ", consistency " +
                      trainer::consistency_name(s))
                         .c_str(),
          s.epochs, s.clocks, static_cast<double>(s.lr), static_cast<double>(s.reg));
    const outcome r = s.serial ? serial_sgd(s, data, true) : table_mf(launch, s, data);
    if (!launch.leader()) return 0;
    if (!r.done) throw std::runtime_error("the run did not complete: no member finished the last epoch");
    if (data.truth_known) {
      std::printf("noise %.4f: test rmse %.5f is %.1f%% above it; rmse against the noiseless truth %.5f\n",
                  static_cast<double>(s.noise), r.last.test, 100 * (r.last.test / s.noise - 1), r.last.truth);
      std::printf("final: rmse=%.5f seconds=%.3f truth=%.5f epochs=%zu\n", r.last.test, r.last.seconds,
                  r.last.truth, s.epochs);
    } else {  // a file's ratings: no truth to compare with
      std::printf("final: rmse=%.5f seconds=%.3f truth=n/a epochs=%zu\n", r.last.test, r.last.seconds,
                  s.epochs);
    }
    std::fflush(stdout);
    if (s.check_serial && !check_against_serial(r, s, data)) return 1;
  } catch (const trainer::agreed_error& e) {  // the same on every process: the leader says it
    return trainer::agreed_failure("dml-mf", e);
  } catch (const usage_error& e) {
    std::fprintf(stderr, "dml-mf: %s (see --help)\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dml-mf: %s\n", e.what());
    return 1;
  }
}

// SPDX-License-Identifier: BSL-1.0
// dml-smp-mf: matrix factorization by SGD with the static rotation engine
// (dml::schedule::static_rotation; SMPFRAME §4.2, SMP-MF). Ranks own the
// ratings of their users (rows of U stay local); the item factors V are
// cut into one block per rank, and the blocks rotate: in iteration t rank p
// runs SGD over its ratings of the items in block (p - t) mod P and passes
// the block on to rank p + 1. No two ranks touch the same item at once, so
// nothing is averaged or lost. After each rotation (P iterations) every
// rank holds all of V and the RMSE over all ratings is printed.
//
// Data: a generated low-rank matrix R = U* V*^T + N(0, noise^2), a
// --density share of it observed, item popularity skewed (item j is rated
// with weight 1 / (1 + j / 50)), so some items cost far more than others:
// the case for heaviest-first dispatch.
#include <dml/comm/inproc.hpp>
#include <dml/schedule.hpp>

#include "../common/cli.hpp"

#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <numeric>
#include <span>
#include <string>
#include <vector>

namespace {

using cli::usage_error;

struct options {
  std::size_t ranks = 4, users = 2000, items = 2000, rank = 8, rotations = 10, executors = 1;
  double density = 0.05, noise = 0.1, lr = 0.02, reg = 0.01;
  bool micro_sync = false, no_heaviest_first = false;
  std::uint64_t seed = 1;
};

struct rating {
  std::uint32_t user, item;
  double value;
};

double uniform(dml::data::splitmix64& g) { return (static_cast<double>(g() >> 11) + 0.5) * 0x1p-53; }
double normal(dml::data::splitmix64& g) {
  const double u = uniform(g), v = uniform(g);
  return std::sqrt(-2.0 * std::log(u)) * std::cos(6.283185307179586 * v);
}

std::vector<rating> generate(const options& o) {
  dml::data::splitmix64 g(o.seed * 0x9e3779b97f4a7c15ULL + 7);
  const double scale = 1.0 / std::sqrt(static_cast<double>(o.rank));
  std::vector<double> u(o.users * o.rank), v(o.items * o.rank);
  for (double& x : u) x = normal(g) * std::sqrt(scale);
  for (double& x : v) x = normal(g) * std::sqrt(scale);
  std::vector<rating> out;
  double mean_weight = 0;
  for (std::size_t j = 0; j < o.items; ++j) mean_weight += 1.0 / (1.0 + static_cast<double>(j) / 50.0);
  mean_weight /= static_cast<double>(o.items);
  for (std::size_t i = 0; i < o.users; ++i)
    for (std::size_t j = 0; j < o.items; ++j) {
      const double p = o.density * (1.0 / (1.0 + static_cast<double>(j) / 50.0)) / mean_weight;
      if (uniform(g) >= p) continue;
      double dot = 0;
      for (std::size_t k = 0; k < o.rank; ++k) dot += u[i * o.rank + k] * v[j * o.rank + k];
      out.push_back(
          {static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(j), dot + o.noise * normal(g)});
    }
  return out;
}

// One rank's program: its users' ratings grouped by item.
class mf_program {
 public:
  mf_program(const std::vector<rating>& all, const options& o, std::size_t member, std::size_t members)
      : o_(o), start_(o.items + 1, 0), u_(o.users * o.rank), v_(o.items * o.rank) {
    std::vector<rating> mine;
    for (const auto& r : all)
      if (r.user % members == member) mine.push_back(r);
    for (const auto& r : mine) ++start_[r.item + 1];
    for (std::size_t j = 0; j < o.items; ++j) start_[j + 1] += start_[j];
    by_item_.resize(mine.size());
    std::vector<std::size_t> at(start_.begin(), start_.end() - 1);
    for (const auto& r : mine) by_item_[at[r.item]++] = r;
    // The same initial V on every rank; U only matters for own users.
    dml::data::splitmix64 g(o.seed + 99);
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
          ui[c] += o_.lr * (e * vj[c] - o_.reg * uc);
          vj[c] += o_.lr * (e * uc - o_.reg * vj[c]);
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
  bool progress(dml::schedule::context& ctx) {
    double sq = 0;
    for (const auto& r : by_item_) {
      double e = r.value;
      for (std::size_t c = 0; c < o_.rank; ++c) e -= u_[r.user * o_.rank + c] * v_[r.item * o_.rank + c];
      sq += e * e;
    }
    double both[2] = {sq, static_cast<double>(by_item_.size())};
    ctx.sum(both);
    rmse_ = std::sqrt(both[0] / both[1]);
    ++rotation_;
    if (on_rotation) on_rotation(rotation_, rmse_);
    return true;
  }
  std::function<void(std::size_t, double)> on_rotation;
  [[nodiscard]] double rmse() const { return rmse_; }
  [[nodiscard]] std::uint64_t updates() const { return updates_; }

 private:
  options o_;
  std::vector<std::size_t> start_;
  std::vector<rating> by_item_;
  std::vector<double> u_, v_;
  double rmse_ = 0;
  std::size_t rotation_ = 0;
  std::uint64_t updates_ = 0;
};

constexpr const char* description =
    R"(Matrix factorization by SGD on the static rotation engine: item blocks
rotate among --ranks in-process ranks, results pass along a ring, and all
ranks synchronize after each full rotation (macro synchronization; --micro-sync
adds a barrier after every iteration). Prints the RMSE over all ratings after
every rotation, then final: rmse=X seconds=S updates=U (ratings visited).)";

}  // namespace

int main(int argc, char** argv) {
  options o;
  try {
    const auto app = cli::app("dml-smp-mf", description);
    app->add_option("--ranks", o.ranks, "in-process ranks, default 4")
        ->option_text("N")
        ->check(cli::whole_number());
    app->add_option("--rotations", o.rotations, "full rotations (ranks iterations each), default 10")
        ->option_text("N")
        ->check(cli::whole_number());
    app->add_option("--users", o.users, "default 2000")->option_text("N")->check(cli::whole_number());
    app->add_option("--items", o.items, "default 2000")->option_text("N")->check(cli::whole_number());
    app->add_option("--rank", o.rank, "factor rank, default 8")->option_text("K")->check(cli::whole_number());
    app->add_option("--density", o.density, "share of ratings observed, default 0.05")
        ->option_text("D")
        ->check(cli::number_where<double>([](double d) { return d > 0 && d <= 1; }, "must be in (0, 1]"));
    app->add_option("--lr", o.lr, "SGD step, default 0.02")->option_text("X")->check(cli::positive_number());
    app->add_option("--executors", o.executors, "threads per rank, default 1")
        ->option_text("N")
        ->check(cli::whole_number());
    app->add_flag("--micro-sync", o.micro_sync, "a barrier after every iteration");
    app->add_flag("--no-heaviest-first", o.no_heaviest_first, "dispatch a block's items in index order");
    app->add_option("--seed", o.seed, "default 1")
        ->option_text("N")
        ->check(cli::whole_number<std::uint64_t>(0));
    if (!cli::parse(*app, argc, argv)) return 0;
    if (o.ranks > o.items) throw usage_error("--ranks: at most --items");
  } catch (const usage_error& e) {
    std::fprintf(stderr, "dml-smp-mf: %s (see --help)\n", e.what());
    return 2;
  }
  try {
    const auto ratings = generate(o);
    std::printf("dml-smp-mf: %zu ranks, %zu users x %zu items, rank %zu, %zu ratings, %s sync%s\n", o.ranks,
                o.users, o.items, o.rank, ratings.size(), o.micro_sync ? "micro" : "macro",
                o.no_heaviest_first ? "" : ", heaviest first");
    double seconds = 0, rmse = 0;
    std::vector<std::uint64_t> per_rank(o.ranks, 0);
    const auto start = std::chrono::steady_clock::now();
    dml::comm::inproc::run(o.ranks, [&](auto& comm) {
      mf_program prog(ratings, o, comm.rank(), o.ranks);
      if (comm.rank() == 0)
        prog.on_rotation = [&](std::size_t r, double x) {
          std::printf("rotation %zu rmse %.6f seconds %.3f\n", r, x,
                      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        };
      const dml::schedule::static_rotation engine{
          .macro_sync = !o.micro_sync, .heaviest_first = !o.no_heaviest_first, .executors = 1};
      const auto st = dml::schedule::run(comm, prog, engine, o.rotations * o.ranks);
      if (comm.rank() == 0) {
        seconds = st.seconds;
        rmse = prog.rmse();
      }
      per_rank[comm.rank()] = prog.updates();
    });
    std::printf(
        "final: rmse=%.6f seconds=%.3f updates=%llu\n", rmse, seconds,
        static_cast<unsigned long long>(std::accumulate(per_rank.begin(), per_rank.end(), std::uint64_t{0})));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dml-smp-mf: %s\n", e.what());
    return 1;
  }
}

// SPDX-License-Identifier: BSL-1.0
// dml-mf-hogwild: matrix factorization by SGD, distributed Hogwild style,
// over ranks (threads or MPI processes), on a generated low-rank rating
// matrix with a planted truth: R = U* V*^T + N(0, noise^2), a random part observed.
//
// Each rank runs plain SGD on its shard of the observed ratings,
//
//     e = r_ij - u_i . v_j;  u_i += lr (e v_j - reg u_i);  v_j += lr (e u_i - reg v_j)
//
// and after every --cb-size ratings it publishes the rows it changed: the
// distributed vector (all of U and V, sparse representation, gather
// `replace`) is cleared, the changed rows are copied in, scatter() sends only
// those (nonzero) elements, and gather() writes the newest value of every
// element any neighbour changed into the buffer. Every nonzero element of the
// buffer then goes into the rank's model: the rank's own changes, overwritten
// where a neighbour changed the same row more recently. No averaging: as in
// Hogwild, conflicting writes are rare (a step touches 2 of the 600 rows)
// and the last writer wins.
//
// Where it works: each row change is sent once, to the direct
// out-neighbours, and must be combined by them. That holds over `all` with
// bsp or notify_ack (every update of every rank reaches every rank). Over
// sparser topologies a change reaches only the neighbours (halton still ends
// within 10% of the noise at 8 ranks, ring does not); under asp and ssp a
// gather combines only each neighbour's newest complete update, so the rows
// of a skipped update are lost for good. Forwarding received rows was tried
// and made things worse (stale values circulate). docs/trainers.md has the
// numbers; a trainer that needs asp should send whole models instead.

// The held-out ratings carry the same noise, so the best possible test RMSE
// is the noise level; the trainer reports how close it gets, and also the
// RMSE against the noiseless truth.
#include "../common/common.hpp"

#include <Eigen/Core>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {

using trainer::settings;

struct problem_size {
  std::size_t users = 300, items = 300, rank = 5;
  double density = 0.5;  // share of the matrix observed
  float noise = 0.1f, reg = 0.01f;
};

struct rating {
  std::uint32_t user, item;
  float value, truth;
};

struct problem {
  std::vector<rating> train, test;  // 90% / 10% of the observed entries
};

problem generate(const problem_size& p, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> factor(0.0f, 1.0f / std::sqrt(std::sqrt(static_cast<float>(p.rank))));
  std::normal_distribution<float> noise(0.0f, p.noise);
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  Eigen::MatrixXf u(static_cast<Eigen::Index>(p.users), static_cast<Eigen::Index>(p.rank));
  Eigen::MatrixXf v(static_cast<Eigen::Index>(p.items), static_cast<Eigen::Index>(p.rank));
  u = u.unaryExpr([&](float) { return factor(rng); });
  v = v.unaryExpr([&](float) { return factor(rng); });
  problem out;
  for (std::uint32_t i = 0; i < p.users; ++i)
    for (std::uint32_t j = 0; j < p.items; ++j) {
      if (coin(rng) >= p.density) continue;
      const float truth = u.row(i).dot(v.row(j));
      (coin(rng) < 0.9 ? out.train : out.test).push_back({i, j, truth + noise(rng), truth});
    }
  return out;
}

// RMSE of the model on a set of ratings, against the noisy values and the truth.
std::pair<double, double> rmse(const std::vector<float>& model, const problem_size& p,
                               const std::vector<rating>& set) {
  double noisy = 0, clean = 0;
  const std::size_t k = p.rank;
  for (const auto& r : set) {
    const float* u = &model[r.user * k];
    const float* v = &model[(p.users + r.item) * k];
    float pred = 0;
    for (std::size_t f = 0; f < k; ++f) pred += u[f] * v[f];
    noisy += double(pred - r.value) * (pred - r.value);
    clean += double(pred - r.truth) * (pred - r.truth);
  }
  const auto n = static_cast<double>(set.size());
  return {std::sqrt(noisy / n), std::sqrt(clean / n)};
}

struct outcome {
  trainer::row last;
  double truth_rmse = 0;
};

/// The result lines: how close the test RMSE comes to the noise, and 'final:'.
void print_result(const outcome& r, const problem_size& p, std::size_t epochs) {
  std::printf("noise %.4f: test rmse %.4f is %.1f%% above it; rmse against the noiseless truth %.4f\n",
              static_cast<double>(p.noise), r.last.quality, 100 * (r.last.quality / p.noise - 1),
              r.truth_rmse);
  std::printf("final: rmse=%.5f loss=%.5f seconds=%.3f bytes=%.0f epochs=%zu\n", r.last.quality, r.last.loss,
              r.last.seconds, r.last.bytes, epochs);
  std::fflush(stdout);
}

template <class Consistency>
outcome train(trainer::launcher& launch, const dml::topology::any& topology, const Consistency& consistency,
              const settings& s, const problem_size& p, const problem& data, trainer::progress& out) {
  const std::size_t n = data.train.size(), k = p.rank, size = (p.users + p.items) * k;
  const std::vector<std::size_t> order = dml::data::permutation(n, s.seed);
  outcome result;
  launch.run([&](auto& comm) {
    using clock = std::chrono::steady_clock;
    const std::size_t rank = comm.rank(), ranks = comm.size();
    std::vector<std::size_t> mine;
    for (std::size_t i : dml::data::shard{rank, ranks}.indices(n)) mine.push_back(order[i]);
    // The model: U's rows, then V's. Every rank starts from the same one.
    std::vector<float> model(size);
    std::mt19937_64 rng(s.seed);
    std::normal_distribution<float> small(0.0f, 0.1f);
    for (float& x : model) x = small(rng);
    // A step changes 2 rows of k values: 2 * cb-size * k nonzeros at most.
    auto v = dml::make_vector<float>(comm, size, dml::sparse{std::min(size, 2 * s.cb_size * k)}, topology,
                                     consistency, dml::gather::replace{});
    auto mean = dml::make_vector<double>(comm, size + 2);
    std::vector<char> changed(p.users + p.items, 0);
    std::vector<std::size_t> rows;  // changed rows since the last scatter
    const std::size_t steps = n / ranks / s.cb_size;
    double seconds = 0;
    std::size_t changes_printed = 0;  // view changes printed (by the reporting member)

    // The averaged model of the last report (every member holds it), evaluated.
    auto evaluate = [&](std::size_t epoch) {
      const auto all = mean.eigen();
      std::vector<float> avg(size);
      for (std::size_t i = 0; i < size; ++i) avg[i] = static_cast<float>(all[static_cast<Eigen::Index>(i)]);
      const auto [test_rmse, truth_rmse] = rmse(avg, p, data.test);
      result.last = {epoch,
                     seconds,
                     rmse(avg, p, data.train).first,
                     test_rmse,
                     all[static_cast<Eigen::Index>(size)] * static_cast<double>(ranks),
                     all[static_cast<Eigen::Index>(size + 1)]};
      result.truth_rmse = truth_rmse;
    };
    auto report = [&](std::size_t epoch, clock::time_point start) {
      auto all = mean.eigen();
      for (std::size_t i = 0; i < size; ++i) all[static_cast<Eigen::Index>(i)] = model[i];
      all[static_cast<Eigen::Index>(size)] = static_cast<double>(v.stats().bytes_sent);
      all[static_cast<Eigen::Index>(size + 1)] = v.stats().full_share();
      mean.scatter();
      mean.gather();
      seconds += std::chrono::duration<double>(clock::now() - start).count();
      if (dml::io::leader(comm)) {  // member 0, or the lowest survivor once it failed
        trainer::print_view_changes(comm, changes_printed);
        evaluate(epoch);
        out.add(result.last);
      }
      mean.barrier();
    };

    report(0, clock::now());
    for (std::size_t epoch = 1; epoch <= s.epochs; ++epoch) {
      const auto start = clock::now();
      dml::data::shuffle(mine, s.seed + 1000003 * epoch + rank);
      const float lr = s.lr / std::sqrt(static_cast<float>(epoch));
      for (std::size_t step = 0; step < steps; ++step) {
        for (std::size_t j = step * s.cb_size; j < (step + 1) * s.cb_size; ++j) {
          const rating& r = data.train[mine[j]];
          const std::size_t a = r.user, b = p.users + r.item;
          float* u = &model[a * k];
          float* w = &model[b * k];
          float pred = 0;
          for (std::size_t f = 0; f < k; ++f) pred += u[f] * w[f];
          const float e = r.value - pred;
          for (std::size_t f = 0; f < k; ++f) {
            const float uf = u[f];
            u[f] += lr * (e * w[f] - p.reg * uf);
            w[f] += lr * (e * uf - p.reg * w[f]);
          }
          for (std::size_t row : {a, b})
            if (!changed[row]) {
              changed[row] = 1;
              rows.push_back(row);
            }
        }
        // Publish the changed rows; take in the neighbours' newer values.
        const auto buffer = v.span();
        std::fill(buffer.begin(), buffer.end(), 0.0f);
        for (std::size_t row : rows) {
          std::copy_n(&model[row * k], k, &buffer[row * k]);
          changed[row] = 0;
        }
        rows.clear();
        v.scatter();
        v.gather();
        for (std::size_t i = 0; i < size; ++i)
          if (buffer[i] != 0.0f) model[i] = buffer[i];
      }
      report(epoch, start);
    }
    // Under MPI the result survives the reporting member: a survivor that
    // took over evaluates the last report's averaged model and prints it.
    trainer::print_final_surviving(launch, comm, [&] {
      if (result.last.epoch != s.epochs) evaluate(s.epochs);
      print_result(result, p, s.epochs);
    });
  });
  return result;
}

constexpr const char* description =
    R"(Factorizes a generated rank-5 300 x 300 rating matrix (half observed, noise
0.1) by SGD over ranks that publish the rows they change after
every --cb-size ratings with a sparse distributed vector and the `replace`
gather (distributed Hogwild). Reports the test RMSE (the noise level is the
best possible) and the RMSE against the noiseless truth.)";

}  // namespace

int main(int argc, char** argv) {
  settings s;
  s.epochs = 20;
  s.cb_size = 16;
  s.lr = 0.05f;
  problem_size p;
  const auto app = trainer::command_line("dml-mf-hogwild", description, s);
  app->add_option("--noise", p.noise, "noise standard deviation, default 0.1")
      ->option_text("X")
      ->check(cli::positive_number<float>());
  if (const auto exit = trainer::parse(*app, argc, argv, s, [&] {
        if (!s.data.empty()) throw trainer::usage_error("dml-mf-hogwild generates its data (no --data)");
      }))
    return *exit;
  try {
    // Starts MPI for --transport mpi_rma / mpi; in-process, arms --kill-after.
    trainer::launcher launch(s.transport, s.ranks, argc, argv, trainer::planned_kills(s));
    // Every process generates the whole rating set from --seed and trains
    // its share: under MPI the processes compare what they generated first
    // (read_agreed), since processes started with other generator options
    // (or a standard library whose distributions draw differently) would
    // mix two rating sets into one wrong model.
    problem data;
    trainer::read_agreed(
        launch, "dml-mf-hogwild",
        [&] {
          data = generate(p, s.seed);
          if (s.limit != 0 && s.limit < data.train.size()) data.train.resize(s.limit);
          if (s.test_limit != 0 && s.test_limit < data.test.size()) data.test.resize(s.test_limit);
          if (data.train.size() / s.ranks < s.cb_size)
            throw trainer::usage_error(std::to_string(data.train.size()) +
                                       " training ratings are too few for " + std::to_string(s.ranks) +
                                       " ranks with --cb-size " + std::to_string(s.cb_size));
        },
        [&] {
          trainer::fingerprint f;
          f.add_span(std::span<const rating>(data.train));
          f.add_span(std::span<const rating>(data.test));
          return std::pair(f.value(), std::to_string(data.train.size()) + " training / " +
                                          std::to_string(data.test.size()) + " test ratings from --seed " +
                                          std::to_string(s.seed));
        },
        "the generated rating set");
    if (launch.leader())
      std::printf(
          "dml-mf-hogwild: %zu ranks, topology %s, consistency %s, cb-size %zu, lr %g, %zu x %zu rank %zu, "
          "noise %g, %zu training / %zu test ratings\n",
          s.ranks, s.topology.c_str(), s.consistency.c_str(), s.cb_size, static_cast<double>(s.lr), p.users,
          p.items, p.rank, static_cast<double>(p.noise), data.train.size(), data.test.size());
    trainer::progress out(launch.leader() ? s.csv : std::string(), "rmse");
    const outcome r = trainer::with_policies(s, [&](auto topology, auto consistency) {
      return train(launch, topology, consistency, s, p, data, out);
    });
    // In-process the members share the result: printed once, here (under
    // MPI train() printed it).
    if (launch.in_process()) print_result(r, p, s.epochs);
  } catch (const trainer::agreed_error& e) {  // the same on every process: the leader says it
    return trainer::agreed_failure("dml-mf-hogwild", e);
  } catch (const trainer::usage_error& e) {
    std::fprintf(stderr, "dml-mf-hogwild: %s (see --help)\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dml-mf-hogwild: %s\n", e.what());
    return 1;
  }
}

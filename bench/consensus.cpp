// SPDX-License-Identifier: BSL-1.0
// Benchmark (not a test): what the spectral gap of ASAP's appendix A
// predicts, measured on dml vectors. Every rank starts from its own random
// vector and does nothing but scatter() + gather() with gather::average
// under notify_ack, which combines exactly each round's updates, so round t
// computes x(t+1) = P x(t) with P the appendix's matrix. After each round
// the members' disagreement (root mean square distance from the members'
// mean, relative to round 0) is recorded; it shrinks by about sigma_2(P) =
// 1 - gap per round on a circulant graph, whatever the machine.
//
//   bench_consensus [--ranks 25] [--rounds 60] [--floats 256] [--csv FILE]
//
// Prints, per topology (all, root_expander, halton, ring), 1 - gap, the
// measured shrink factor per round (geometric mean over the second half of
// the rounds) and the rounds until the disagreement falls below 1 %.
// --csv writes round,<topology>... rows of the relative disagreement.
#include "../examples/common/cli.hpp"

#include <dml/comm/inproc.hpp>
#include <dml/dml.hpp>
#include <dml/topology/spectral.hpp>

#include <cmath>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace {

struct settings {
  std::size_t ranks = 25;
  std::size_t rounds = 60;
  std::size_t floats = 256;
  std::string csv;
};

// The relative disagreement after each round 0..rounds.
template <class Topo>
std::vector<double> disagreement(const settings& s) {
  std::vector<std::vector<double>> state(s.ranks, std::vector<double>(s.floats));
  std::vector<double> out(s.rounds + 1, 0.0);
  auto measure = [&](std::size_t round) {  // on member 0, between two barriers
    double sum = 0;
    for (std::size_t k = 0; k < s.floats; ++k) {
      double mean = 0;
      for (const auto& x : state) mean += x[k];
      mean /= static_cast<double>(s.ranks);
      for (const auto& x : state) sum += (x[k] - mean) * (x[k] - mean);
    }
    out[round] = std::sqrt(sum / static_cast<double>(s.ranks * s.floats));
  };
  dml::comm::inproc::run(s.ranks, [&](dml::comm::inproc::context& c) {
    auto v =
        dml::make_vector<double>(c, s.floats, Topo{}, dml::consistency::notify_ack{}, dml::gather::average{});
    std::mt19937_64 rng(1000 + c.rank());
    std::normal_distribution<double> normal;
    for (auto& x : v.span()) x = normal(rng);
    for (std::size_t t = 0;; ++t) {
      const auto own = v.span();
      state[c.rank()].assign(own.begin(), own.end());
      v.barrier();
      if (c.rank() == 0) measure(t);
      v.barrier();
      if (t == s.rounds) break;
      v.scatter();
      v.gather();
    }
  });
  const double first = out[0];
  for (auto& d : out) d /= first;
  return out;
}

struct row {
  std::string name;
  double sigma2;
  std::vector<double> d;
};

template <class Topo>
row measure_topology(const settings& s) {
  const double gap = dml::topology::spectral_gap(dml::topology::build(Topo{}, s.ranks));
  return {std::string(Topo{}.name()), 1 - gap, disagreement<Topo>(s)};
}

}  // namespace

int main(int argc, char** argv) {
  // Exchanges with no computation between them: the advice to exchange
  // less often would be printed for every configuration and means nothing here.
  dml::set_advice(false);
  settings s;
  const auto app = cli::app("bench_consensus",
                            "Repeated averaging over a topology on dml vectors (notify_ack, ranks are\n"
                            "threads): how fast the members agree, against 1 - spectral gap.");
  app->add_option("--ranks", s.ranks, "ranks (threads), 2..64, default 25")
      ->check(
          cli::number_where<std::size_t>([](std::size_t n) { return n >= 2 && n <= 64; }, "must be 2..64"));
  app->add_option("--rounds", s.rounds, "averaging rounds, default 60")->check(cli::whole_number(2));
  app->add_option("--floats", s.floats, "vector length, default 256")->check(cli::whole_number());
  app->add_option("--csv", s.csv, "write round,<topology>... rows to FILE")
      ->option_text("FILE")
      ->check(cli::not_empty());
  try {
    if (!cli::parse(*app, argc, argv)) return 0;  // --help
  } catch (const cli::usage_error& e) {
    std::fprintf(stderr, "bench_consensus: %s (see --help)\n", e.what());
    return 2;
  }
  try {
    using namespace dml::topology;
    const std::vector<row> rows{measure_topology<all>(s), measure_topology<root_expander>(s),
                                measure_topology<halton>(s), measure_topology<ring>(s)};
    std::printf(
        "%zu ranks, %zu rounds of scatter()+gather() (notify_ack, gather::average), %zu values each\n\n",
        s.ranks, s.rounds, s.floats);
    std::printf(
        "| topology | 1 - gap | measured shrink per round | rounds to 1 %% |\n|---|---:|---:|---:|\n");
    for (const auto& r : rows) {
      const std::size_t half = s.rounds / 2;
      const double shrink =
          r.d[half] > 1e-12 ? std::pow(r.d[s.rounds] / r.d[half], 1.0 / static_cast<double>(s.rounds - half))
                            : 0.0;  // agreed already (all: after one round)
      std::size_t to1 = 0;
      while (to1 <= s.rounds && r.d[to1] >= 0.01) ++to1;
      const std::string rounds = to1 <= s.rounds ? std::to_string(to1) : "> " + std::to_string(s.rounds);
      std::printf("| %s | %.4f | %.4f | %s |\n", r.name.c_str(), r.sigma2, shrink, rounds.c_str());
    }
    if (!s.csv.empty()) {
      std::FILE* f = std::fopen(s.csv.c_str(), "w");
      if (!f) throw std::runtime_error("cannot write " + s.csv);
      std::fputs("round", f);
      for (const auto& r : rows) std::fprintf(f, ",%s", r.name.c_str());
      std::fputs("\n", f);
      for (std::size_t t = 0; t <= s.rounds; ++t) {
        std::fprintf(f, "%zu", t);
        for (const auto& r : rows) std::fprintf(f, ",%.6g", r.d[t]);
        std::fputs("\n", f);
      }
      std::fclose(f);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_consensus: %s\n", e.what());
    return 1;
  }
  return 0;
}

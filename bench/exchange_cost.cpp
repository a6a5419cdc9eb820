// SPDX-License-Identifier: BSL-1.0
// bench_exchange_cost: what one exchange of a model costs with in-process
// ranks, by model size, ranks and topology, and how much work must lie
// between two exchanges to keep communication under a share of the time.
// The table in docs/exchange-cost.md comes from this program:
//
//   build-bench/bench/bench_exchange_cost [--quick] [--target 0.15]
//
// Each cell is the median over repetitions of one bsp scatter + gather of
// a float vector, every member exchanging back to back (no work between),
// timed on member 0. "work per exchange" is the computation between two
// exchanges that makes the exchange a `target` share of the time:
// E (1 - target) / target. Not shown: MPI (docs/benchmarks.md), other
// policies (notify_ack costs about what bsp does here), machines with more
// cores (here 2 cores serve every rank, so the cost grows with the ranks).
#include <dml/dml.hpp>

#include "common.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

double median_exchange_seconds(std::size_t ranks, std::size_t floats, const dml::topology::any& topo,
                               int reps) {
  std::vector<double> times;
  dml::comm::inproc::run(ranks, [&](dml::comm::inproc::context& c) {
    auto v = dml::make_vector<float>(c, floats, topo);
    dml::set_advice(false);
    for (int r = 0; r < 3; ++r) {  // warm up: pages, caches
      v.scatter();
      v.gather();
    }
    std::vector<double> mine;
    for (int r = 0; r < reps; ++r) {
      v.barrier();
      const auto t0 = std::chrono::steady_clock::now();
      v.scatter();
      v.gather();
      mine.push_back(bench::seconds_since(t0));
    }
    if (c.rank() == 0) times = mine;
  });
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

std::string ms(double s) {
  char b[32];
  std::snprintf(b, sizeof b, s < 1e-3 ? "%.3f" : "%.2f", 1e3 * s);
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  double target = 0.15;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") {
      quick = true;
    } else if (a == "--target" && i + 1 < argc) {
      target = std::atof(argv[++i]);
      if (!(target > 0 && target < 1)) {
        std::fprintf(stderr, "bench_exchange_cost: --target needs a share in (0, 1)\n");
        return 2;
      }
    } else {
      std::fprintf(stderr, "usage: bench_exchange_cost [--quick] [--target SHARE]\n");
      return 2;
    }
  }
  const std::vector<std::size_t> sizes = quick ? std::vector<std::size_t>{10'000, 200'000}
                                               : std::vector<std::size_t>{10'000, 200'000, 1'000'000};
  const std::vector<std::size_t> ranks{2, 4, 8};
  struct named {
    const char* name;
    dml::topology::any topo;
  };
  const std::vector<named> topologies{
      {"all", dml::topology::all{}}, {"halton", dml::topology::halton{}}, {"ring", dml::topology::ring{}}};
  const int reps = quick ? 15 : 41;
  std::printf("| floats | ranks | topology | exchange ms | work per exchange for %.0f%% ms |\n",
              100 * target);
  std::printf("|-------:|------:|----------|------------:|------------------------------:|\n");
  for (std::size_t n : sizes)
    for (std::size_t r : ranks)
      for (const auto& t : topologies) {
        if (r == 2 && std::strcmp(t.name, "all") != 0) continue;  // all three are one edge each way
        const double e = median_exchange_seconds(r, n, t.topo, reps);
        std::printf("| %zu | %zu | %s | %s | %s |\n", n, r, t.name, ms(e).c_str(),
                    ms(e * (1 - target) / target).c_str());
        std::fflush(stdout);
      }
}

// SPDX-License-Identifier: BSL-1.0
// Benchmark (not a test): ASAP's Fig. 8 micro-benchmark. How many inputs
// does each reduce (gather) combine under notify_ack, bsp, asp and the
// barrier-only BSP that ASAP measured (test/support/weak_bsp.hpp, for tests
// and benchmarks only)? Ranks are threads over the complete graph (8 ranks:
// in-degree 7, as in the paper); between two exchanges each rank "computes"
// for a random time, and the in-process transport sleeps a random time
// before every operation, so the members interleave differently each round.
//
//   bench_inputs_per_reduce [--ranks 8] [--floats 47236] [--rounds 300]
//                           [--work-us 200] [--delay-us 50] [--seed 1] [--csv FILE]
//
// Prints one markdown row per policy: gathers, the share that combined all
// in-neighbours and 5 or more, torn slot reads, updates skipped as already
// combined or too old, and the share of combined inputs from an older round
// than the gatherer's (mixed versions). --csv writes the distribution:
// policy,inputs,gathers,share (one row per policy and input count).
#include "../examples/common/cli.hpp"
#include "common.hpp"
#include "support/weak_bsp.hpp"

#include <dml/comm/inproc.hpp>
#include <dml/dml.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

struct settings {
  std::size_t ranks = 8;
  std::size_t floats = 47236;  // RCV1's features, the paper's data set for Fig. 8
  std::size_t rounds = 300;
  unsigned work_us = 200;
  unsigned delay_us = 50;
  std::uint64_t seed = 1;
  std::string csv;
};

struct result {
  std::vector<std::uint64_t> histogram;  // [k]: gathers that combined k inputs, all members
  std::uint64_t gathers = 0, torn = 0, stale = 0, inputs = 0, older = 0;
};

template <class Cons>
result measure(const settings& s) {
  dml::comm::inproc::options o;
  o.max_random_delay = std::chrono::microseconds(s.delay_us);
  o.seed = s.seed;
  result out;
  out.histogram.assign(s.ranks, 0);
  std::mutex m;
  dml::comm::inproc::run(
      s.ranks,
      [&](dml::comm::inproc::context& c) {
        std::uint64_t older = 0, round = 0;
        // average, counting inputs older than this member's round
        auto counting = [&](std::span<float> own, std::span<const dml::gather::input<float>> inputs) {
          for (const auto& in : inputs) older += in.clock < round ? 1 : 0;
          dml::gather::average{}(own, inputs);
        };
        auto v = dml::make_vector<float>(c, s.floats, Cons{}, dml::topology::all{}, counting);
        std::mt19937_64 rng(s.seed * 1000 + c.rank());
        std::uniform_int_distribution<unsigned> work(0, 2 * s.work_us);
        for (std::size_t r = 1; r <= s.rounds; ++r) {
          std::this_thread::sleep_for(std::chrono::microseconds(work(rng)));
          for (auto& x : v.span()) x = static_cast<float>(c.rank() + r);
          v.scatter();
          round = v.clock();
          v.gather();
        }
        const auto& st = v.stats();
        const std::scoped_lock lock(m);
        for (std::size_t k = 0; k < st.inputs_combined.size() && k < s.ranks; ++k)
          out.histogram[k] += st.inputs_combined[k];
        out.gathers += st.gathers;
        out.torn += st.torn_reads;
        out.stale += st.stale_skipped;
        out.inputs += st.inputs_total();
        out.older += older;
      },
      o);
  return out;
}

double share(std::uint64_t part, std::uint64_t whole) {
  return whole == 0 ? 0.0 : 100.0 * static_cast<double>(part) / static_cast<double>(whole);
}

void report(std::string_view name, const result& r, std::size_t ranks, std::FILE* csv) {
  const std::size_t in = ranks - 1;
  std::uint64_t five = 0;
  for (std::size_t k = 5; k < r.histogram.size(); ++k) five += r.histogram[k];
  std::printf("| %-10.*s | %7llu | %6.1f%% | %6.1f%% | %9llu | %9llu | %6.1f%% |\n",
              static_cast<int>(name.size()), name.data(), static_cast<unsigned long long>(r.gathers),
              share(r.histogram[in], r.gathers), share(five, r.gathers),
              static_cast<unsigned long long>(r.torn), static_cast<unsigned long long>(r.stale),
              share(r.older, r.inputs));
  std::fflush(stdout);
  if (csv)
    for (std::size_t k = 0; k <= in; ++k)
      std::fprintf(csv, "%.*s,%zu,%llu,%.2f\n", static_cast<int>(name.size()), name.data(), k,
                   static_cast<unsigned long long>(r.histogram[k]), share(r.histogram[k], r.gathers));
}

}  // namespace

int main(int argc, char** argv) {
  // Exchanges with no computation between them: the advice to exchange
  // less often would be printed for every configuration and means nothing here.
  dml::set_advice(false);
  settings s;
  const auto app = cli::app("bench_inputs_per_reduce",
                            "ASAP Fig. 8: inputs per reduce under notify_ack, bsp, asp and ASAP's\n"
                            "barrier-only BSP (weak_bsp, test-only), complete graph, ranks are threads.");
  app->add_option("--ranks", s.ranks, "ranks (threads), 2..64, default 8")
      ->check(
          cli::number_where<std::size_t>([](std::size_t n) { return n >= 2 && n <= 64; }, "must be 2..64"));
  app->add_option("--floats", s.floats, "vector length, default 47236 (RCV1's features)")
      ->check(cli::whole_number());
  app->add_option("--rounds", s.rounds, "scatter+gather rounds per rank, default 300")
      ->check(cli::whole_number());
  app->add_option("--work-us", s.work_us, "mean compute time between exchanges (uniform 0..2x), default 200")
      ->check(cli::whole_number<unsigned>(0));
  app->add_option("--delay-us", s.delay_us,
                  "random delay before every transport operation, up to, default 50")
      ->check(cli::whole_number<unsigned>(0));
  app->add_option("--seed", s.seed, "seed of the delays, default 1")
      ->check(cli::whole_number<std::uint64_t>(0));
  app->add_option("--csv", s.csv, "write policy,inputs,gathers,share rows to FILE")
      ->option_text("FILE")
      ->check(cli::not_empty());
  try {
    if (!cli::parse(*app, argc, argv)) return 0;  // --help
  } catch (const cli::usage_error& e) {
    std::fprintf(stderr, "bench_inputs_per_reduce: %s (see --help)\n", e.what());
    return 2;
  }
  std::FILE* csv = nullptr;
  try {
    if (!s.csv.empty()) {
      csv = std::fopen(s.csv.c_str(), "w");
      if (!csv) throw std::runtime_error("cannot write " + s.csv);
      std::fputs("policy,inputs,gathers,share\n", csv);
    }
    std::printf(
        "%zu ranks (threads), complete graph (in-degree %zu), %zu floats, %zu rounds, compute 0..%u us per "
        "round, up to %u us before every transport operation\n\n",
        s.ranks, s.ranks - 1, s.floats, s.rounds, 2 * s.work_us, s.delay_us);
    std::printf(
        "| policy     | gathers | all %zu  | >= 5    | torn reads | skipped  | older-round inputs |\n",
        s.ranks - 1);
    std::printf("|------------|--------:|--------:|--------:|----------:|----------:|-------:|\n");
    report("notify_ack", measure<dml::consistency::notify_ack>(s), s.ranks, csv);
    report("bsp", measure<dml::consistency::bsp>(s), s.ranks, csv);
    report("weak_bsp", measure<dml_test::weak_bsp>(s), s.ranks, csv);
    report("asp", measure<dml::consistency::asp>(s), s.ranks, csv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_inputs_per_reduce: %s\n", e.what());
    if (csv) std::fclose(csv);
    return 1;
  }
  if (csv) std::fclose(csv);
  return 0;
}

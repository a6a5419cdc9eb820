// SPDX-License-Identifier: BSL-1.0
// Benchmark (not a test): how close the in-process transport comes to the
// memory bandwidth of the machine. A scatter to k out-neighbours copies k
// times the vector (plus a 40-byte slot header and footer each) into the
// neighbours' slots, and every rank does it at once; the bound is memcpy of
// the same bytes by as many threads at once, measured in the same run.
//
//   bench_bandwidth [--quick] [--ranks 2,4,8] [--csv FILE]
//
// For each rank count, size (1K, 64K, 1M, and without --quick 16M floats)
// and topology (all, halton, root_expander, exponential, ring) under bsp and
// notify_ack it reports ms per scatter()+gather() (slowest rank), the bytes
// each member wrote per step (vector statistics), the aggregate rate (all
// members' bytes / time) and that rate as a share of the concurrent memcpy
// rate.
// gather() also reads every accepted slot, so 100% is not reachable: the
// share says how much of the copy bound is left to the protocol.
#include "../examples/common/cli.hpp"
#include "common.hpp"

#include <dml/comm/inproc.hpp>
#include <dml/dml.hpp>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

using namespace bench;

using clock_type = std::chrono::steady_clock;

struct settings {
  bool quick = false;
  std::vector<std::size_t> ranks{2, 4, 8};
  std::string csv;
};

// Seconds for `threads` threads to each copy `bytes` at once (slowest
// thread, per copy), and the aggregate rate in bytes per second.
std::pair<double, double> concurrent_memcpy(std::size_t threads, std::size_t bytes, double budget) {
  std::vector<double> seconds(threads);
  std::barrier sync(static_cast<std::ptrdiff_t>(threads));
  std::vector<std::thread> pool;
  for (std::size_t t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      std::vector<char> from(bytes, static_cast<char>(t)), to(bytes);
      std::memcpy(to.data(), from.data(), bytes);  // first touch
      const auto probe = clock_type::now();
      std::memcpy(to.data(), from.data(), bytes);
      const double one = std::max(seconds_since(probe), 1e-8);
      const int reps = static_cast<int>(std::clamp(budget / one, 5.0, 20000.0));
      sync.arrive_and_wait();
      const auto t0 = clock_type::now();
      for (int r = 0; r < reps; ++r) {
        std::memcpy(to.data(), from.data(), bytes);
        from[(r * 7919u) % bytes] = to[(r * 104729u) % bytes];  // keep the copies observable
      }
      seconds[t] = seconds_since(t0) / reps;
    });
  for (auto& th : pool) th.join();
  const double slowest = *std::max_element(seconds.begin(), seconds.end());
  return {slowest, static_cast<double>(threads * bytes) / slowest};
}

struct result {
  double seconds = 0;     // per step, slowest member
  double bytes_sent = 0;  // per member per step, mean
};

template <class Topo, class Cons>
result exchange(std::size_t ranks, std::size_t floats, double budget) {
  std::vector<double> seconds(ranks), sent(ranks);
  dml::comm::inproc::run(ranks, [&](dml::comm::inproc::context& comm) {
    auto v = dml::make_vector<float>(comm, floats, Topo{}, Cons{}, dml::gather::average{});
    for (auto& x : v.span()) x = static_cast<float>(comm.rank());
    auto step = [&] {
      v.scatter();
      v.gather();
    };
    step();  // first touch of the slots
    v.barrier();
    auto t0 = clock_type::now();
    step();
    seconds[comm.rank()] = seconds_since(t0);
    v.barrier();  // everyone has written its probe time
    const double slowest = *std::max_element(seconds.begin(), seconds.end());
    const int steps = static_cast<int>(std::clamp(budget / std::max(slowest, 1e-7), 3.0, 2000.0));
    const auto sent0 = v.stats().bytes_sent;
    v.barrier();
    t0 = clock_type::now();
    for (int s = 0; s < steps; ++s) step();
    seconds[comm.rank()] = seconds_since(t0) / steps;
    sent[comm.rank()] = static_cast<double>(v.stats().bytes_sent - sent0) / steps;
    v.barrier();
  });
  double mean_sent = 0;
  for (double s : sent) mean_sent += s / static_cast<double>(ranks);
  return {*std::max_element(seconds.begin(), seconds.end()), mean_sent};
}

class report {
 public:
  explicit report(const std::string& csv) {
    if (csv.empty()) return;
    file_ = std::fopen(csv.c_str(), "w");
    if (!file_) throw std::runtime_error("cannot write " + csv);
    std::fputs("ranks,floats,topology,consistency,ms_per_step,bytes_per_member,gb_per_s,memcpy_gb_per_s\n",
               file_);
  }
  report(const report&) = delete;
  report& operator=(const report&) = delete;
  ~report() {
    if (file_) std::fclose(file_);
  }

  void row(std::size_t ranks, std::size_t floats, std::string_view topo, std::string_view cons,
           const result& r, double copy_rate) {
    const double rate = r.bytes_sent * static_cast<double>(ranks) / r.seconds;
    std::printf("| %5zu | %6s | %-13.*s | %-10.*s | %10.4f | %10.1f kB | %8.2f | %5.0f%% |\n", ranks,
                human_floats(floats).c_str(), static_cast<int>(topo.size()), topo.data(),
                static_cast<int>(cons.size()), cons.data(), r.seconds * 1e3, r.bytes_sent / 1e3, rate / 1e9,
                100.0 * rate / copy_rate);
    std::fflush(stdout);
    if (file_) {
      std::fprintf(file_, "%zu,%zu,%.*s,%.*s,%.6f,%.0f,%.4f,%.4f\n", ranks, floats,
                   static_cast<int>(topo.size()), topo.data(), static_cast<int>(cons.size()), cons.data(),
                   r.seconds * 1e3, r.bytes_sent, rate / 1e9, copy_rate / 1e9);
      std::fflush(file_);
    }
  }

 private:
  std::FILE* file_ = nullptr;
};

template <class Topo>
void run_topology(report& out, std::size_t ranks, std::size_t floats, double budget) {
  // The bound for this graph: each member copies its out-degree times the
  // vector; memcpy of that many bytes per thread, all threads at once.
  const auto graph = dml::topology::build(Topo{}, ranks);
  const std::size_t degree = graph.out(0).size();
  const double copy_rate = concurrent_memcpy(ranks, degree * floats * sizeof(float), budget).second;
  out.row(ranks, floats, Topo{}.name(), "bsp", exchange<Topo, dml::consistency::bsp>(ranks, floats, budget),
          copy_rate);
  out.row(ranks, floats, Topo{}.name(), "notify_ack",
          exchange<Topo, dml::consistency::notify_ack>(ranks, floats, budget), copy_rate);
}

// "2,4,8": member counts of 2..64, or nullopt.
std::optional<std::vector<std::size_t>> rank_list(const std::string& text) {
  std::vector<std::size_t> out;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    const auto v = cli::to_number<std::size_t>(std::string_view(text).substr(at, comma - at), 2);
    if (!v || *v > 64) return std::nullopt;
    out.push_back(*v);
    at = comma + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  // Exchanges with no computation between them: the advice to exchange
  // less often would be printed for every configuration and means nothing here.
  dml::set_advice(false);
  settings opt;
  std::string ranks = "2,4,8";
  const auto app =
      cli::app("bench_bandwidth",
               "The in-process transport against memcpy bandwidth: scatter()+gather() of a float\n"
               "vector per step, ranks as threads (bench/README.md).");
  app->add_flag("--quick", opt.quick, "vectors up to 1M floats, shorter timings");
  app->add_option("--ranks", ranks, "comma-separated member counts of 2..64, default 2,4,8")
      ->option_text("LIST")
      ->check(CLI::Validator(
          [](std::string& v) {
            return rank_list(v) ? std::string() : "needs a comma-separated list of 2..64, got '" + v + "'";
          },
          "LIST"));
  app->add_option("--csv", opt.csv, "also append the rows to FILE")
      ->option_text("FILE")
      ->check(cli::not_empty());
  try {
    if (!cli::parse(*app, argc, argv)) return 0;  // --help
    opt.ranks = *rank_list(ranks);
  } catch (const cli::usage_error& e) {
    std::fprintf(stderr, "bench_bandwidth: %s (see --help)\n", e.what());
    return 2;
  }
  try {
    const double budget = opt.quick ? 0.1 : 0.4;
    report out(opt.csv);
    std::printf(
        "dml in-process bandwidth: scatter()+gather() of a float vector per step, gather::average, ranks are "
        "threads\nGB/s = bytes written by all members / time; bound = memcpy of out-degree x vector by every "
        "thread at once\n\n");
    std::printf(
        "| ranks | floats | topology      | consistency | ms/step    | sent/member   | GB/s     | of memcpy "
        "|\n");
    std::printf(
        "|------:|-------:|---------------|-------------|-----------:|--------------:|---------:|------:|\n");
    for (const std::size_t ranks : opt.ranks)
      for (const std::size_t floats :
           {std::size_t{1} << 10, std::size_t{1} << 16, std::size_t{1} << 20, std::size_t{16} << 20}) {
        if (opt.quick && floats > (std::size_t{1} << 20)) continue;  // quick: up to 1M floats
        using namespace dml::topology;
        // topology all at 16M floats and 8 ranks needs 3 x 7 x 64 MB per member
        if (!(floats == (std::size_t{16} << 20) && ranks > 4)) run_topology<all>(out, ranks, floats, budget);
        run_topology<halton>(out, ranks, floats, budget);
        run_topology<root_expander>(out, ranks, floats, budget);
        run_topology<exponential>(out, ranks, floats, budget);
        run_topology<ring>(out, ranks, floats, budget);
      }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_bandwidth: %s\n", e.what());
    return 1;
  }
  return 0;
}

// SPDX-License-Identifier: BSL-1.0
// Benchmark (not a test): one step of a data-parallel trainer's exchange,
// i.e. scatter() + gather() of a float vector, on the one-sided transport
// (mpi_rma) and the two-sided one (mpi), against MPI_Allreduce averaging the
// same vector, side by side in one run, under the topologies all, halton,
// root_expander, exponential and ring with bsp and notify_ack. Rank 0 prints
// a table: milliseconds per step (slowest rank), ratio to MPI_Allreduce,
// bytes each member sent per step (from the vector's statistics) and the
// rate at which it sent them, next to memcpy of the same vector by every
// rank at once (the memory-bandwidth bound of one machine).
//
//   mpiexec -n <p> bench_exchange [--quick] [--max-floats N] [--memory-gb G]
//                                 [--two-sided-max-floats N] [--csv FILE]
//
// --quick measures four sizes with shorter runs; --memory-gb (default 6)
// skips configurations whose receive slots and inboxes would need more
// memory than that over all ranks (topology::all keeps 2 slots per peer);
// --two-sided-max-floats skips the two-sided transport above that size;
// --csv appends the rows (rank 0) for bench/report.py.
#define DML_BENCH_WITH_MPI 1
#include "../examples/common/cli.hpp"
#include "common.hpp"

#include <dml/comm/mpi.hpp>
#include <dml/comm/mpi_rma.hpp>
#include <dml/dml.hpp>

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace bench;

struct settings {
  bool quick = false;
  std::size_t max_floats = std::size_t{16} << 20;
  std::size_t two_sided_max_floats = std::size_t{16} << 20;
  double memory_gb = 6.0;
  std::string csv;
};

// Rows for bench/report.py, one per configuration, written by rank 0.
class csv_file {
 public:
  explicit csv_file(const std::string& path) {
    if (path.empty()) return;
    file_ = open_csv(path, "processes,floats,impl,topology,consistency,ms_per_step,bytes_per_member,skipped");
    if (!file_) throw std::runtime_error("cannot write " + path);
  }
  csv_file(const csv_file&) = delete;
  csv_file& operator=(const csv_file&) = delete;
  ~csv_file() {
    if (file_) std::fclose(file_);
  }
  void add(std::size_t processes, std::size_t floats, std::string_view impl, std::string_view topo,
           std::string_view cons, double seconds, double bytes, bool skipped) {
    if (!file_) return;
    std::fprintf(file_, "%zu,%zu,%.*s,%.*s,%.*s,%.6f,%.0f,%d\n", processes, floats,
                 static_cast<int>(impl.size()), impl.data(), static_cast<int>(topo.size()), topo.data(),
                 static_cast<int>(cons.size()), cons.data(), seconds * 1e3, bytes, skipped ? 1 : 0);
    std::fflush(file_);
  }

 private:
  std::FILE* file_ = nullptr;
};

struct result {
  double seconds = 0;     // per step, slowest rank
  double bytes_sent = 0;  // per member per step, mean over members
  bool skipped = false;
};

result allreduce(std::size_t floats, double budget) {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  std::vector<float> x(floats, 1.0f);
  const float scale = 1.0f / static_cast<float>(n);
  const double t = seconds_per_step(
      [&] {
        MPI_Allreduce(MPI_IN_PLACE, x.data(), static_cast<int>(floats), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        for (auto& v : x) v *= scale;
      },
      budget);
  return {t, 0, false};
}

// Every rank copies the vector at once: the rate a scatter on one machine
// can at best reach (a put into a shared window is a copy). Ten times the
// steps of the other rows: one copy is short.
result copy(std::size_t floats, double budget) {
  std::vector<float> from(floats, 1.0f), to(floats, 0.0f);
  const double t = seconds_per_step(
      [&] {
        std::memcpy(to.data(), from.data(), floats * sizeof(float));
        from[floats / 2] = to[floats / 3] + 1.0f;  // keep the copies observable
      },
      budget, 10);
  return {t, static_cast<double>(floats * sizeof(float)), false};
}

template <class Topo, class Cons, class Comm>
result exchange(Comm& comm, std::size_t floats, double budget, const settings& opt) {
  // Memory over all ranks: two slots per in-neighbour plus one inbox each.
  const auto graph = dml::topology::build(Topo{}, std::span<const dml::member_id>(comm.view().live));
  double in_edges = 0;
  for (dml::member_id m = 0; m < comm.size(); ++m) in_edges += static_cast<double>(graph.in(m).size());
  const double bytes_needed = in_edges * 3.0 * 4.0 * static_cast<double>(floats);
  if (bytes_needed > opt.memory_gb * 1e9) return {0, 0, true};

  auto v = dml::make_vector<float>(comm, floats, Topo{}, Cons{}, dml::gather::average{});
  for (auto& x : v.span()) x = static_cast<float>(comm.rank());
  auto step = [&] {
    v.scatter();
    v.gather();
  };
  step();  // warm up (first touch of the slots)
  v.barrier();
  auto t0 = std::chrono::steady_clock::now();
  step();
  const double one = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // A dml collective before any MPI call of our own: with the two-sided
  // transport a member blocked in MPI_Allreduce would not answer the acks
  // and flushes its peers still need (docs/running.md).
  v.barrier();
  const int steps = steps_for(max_over_ranks(one), budget);
  const auto sent0 = v.stats().bytes_sent;
  t0 = std::chrono::steady_clock::now();
  for (int s = 0; s < steps; ++s) step();
  const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / steps;
  const double sent = static_cast<double>(v.stats().bytes_sent - sent0) / steps;
  v.barrier();
  return {max_over_ranks(t), mean_over_ranks(sent), false};
}

struct table {
  bool root;
  std::size_t processes;
  csv_file csv;
  double baseline = 1;  // MPI_Allreduce seconds at the current size

  void row(std::size_t floats, std::string_view impl, std::string_view topo, std::string_view cons,
           const result& r) {
    if (!root) return;
    csv.add(processes, floats, impl, topo, cons, r.seconds, r.bytes_sent, r.skipped);
    const std::string f = human_floats(floats);
    if (r.skipped) {
      std::printf("| %6s | %-9s | %-13.*s | %-10.*s | %12s | %8s | %12s | %9s |\n", f.c_str(),
                  std::string(impl).c_str(), static_cast<int>(topo.size()), topo.data(),
                  static_cast<int>(cons.size()), cons.data(), "skipped", "(memory)", "", "");
    } else {
      char rate[32] = "-";
      if (r.bytes_sent > 0) std::snprintf(rate, sizeof rate, "%.2f", r.bytes_sent / r.seconds / 1e9);
      std::printf("| %6s | %-9s | %-13.*s | %-10.*s | %12.4f | %8.2f | %12s | %9s |\n", f.c_str(),
                  std::string(impl).c_str(), static_cast<int>(topo.size()), topo.data(),
                  static_cast<int>(cons.size()), cons.data(), r.seconds * 1e3, r.seconds / baseline,
                  r.bytes_sent > 0 ? human_bytes(r.bytes_sent).c_str() : "-", rate);
    }
    std::fflush(stdout);
  }
};

template <class Topo, class Comm>
void run_topology(Comm& comm, const char* name, std::size_t floats, double budget, const settings& opt,
                  table& out) {
  using namespace dml;
  out.row(floats, name, Topo{}.name(), "bsp", exchange<Topo, consistency::bsp>(comm, floats, budget, opt));
  out.row(floats, name, Topo{}.name(), "notify_ack",
          exchange<Topo, consistency::notify_ack>(comm, floats, budget, opt));
}

template <class Comm>
void run_transport(Comm& comm, const char* name, std::size_t floats, double budget, const settings& opt,
                   table& out) {
  using namespace dml::topology;
  run_topology<all>(comm, name, floats, budget, opt, out);
  run_topology<halton>(comm, name, floats, budget, opt, out);
  run_topology<root_expander>(comm, name, floats, budget, opt, out);
  run_topology<exponential>(comm, name, floats, budget, opt, out);
  run_topology<ring>(comm, name, floats, budget, opt, out);
}

}  // namespace

int main(int argc, char** argv) {
  // Exchanges with no computation between them: the advice to exchange
  // less often would be printed for every configuration and means nothing here.
  dml::set_advice(false);
  try {
    dml::comm::mpi_rma rma(argc, argv);  // starts MPI
    dml::comm::mpi two_sided(MPI_COMM_WORLD);
    settings opt;
    const auto app =
        cli::app("bench_exchange",
                 "dml's exchange (mpi_rma and mpi) against MPI_Allreduce and memcpy, per vector size,\n"
                 "topology and consistency policy (bench/README.md). Run under mpiexec.");
    app->add_flag("--quick", opt.quick, "fewer sizes and shorter timings");
    app->add_option("--max-floats", opt.max_floats, "largest vector, default 16M floats")
        ->option_text("N")
        ->check(cli::whole_number());
    app->add_option("--two-sided-max-floats", opt.two_sided_max_floats,
                    "largest vector for the two-sided transport, default 16M")
        ->option_text("N")
        ->check(cli::whole_number());
    app->add_option("--memory-gb", opt.memory_gb, "receive memory configurations may use, default 6")
        ->option_text("G")
        ->check(cli::positive_number());
    app->add_option("--csv", opt.csv, "also append the rows to FILE")
        ->option_text("FILE")
        ->check(cli::not_empty());
    try {
      if (!cli::parse(*app, argc, argv, rma.rank() == 0)) return 0;  // --help
    } catch (const cli::usage_error& e) {
      if (rma.rank() == 0) std::fprintf(stderr, "bench_exchange: %s (see --help)\n", e.what());
      return 2;
    }
    std::vector<std::size_t> sizes;
    if (opt.quick)
      sizes = {std::size_t{1} << 10, std::size_t{1} << 16, std::size_t{1} << 20, std::size_t{16} << 20};
    else
      for (std::size_t s = std::size_t{1} << 10; s <= (std::size_t{16} << 20); s *= 4) sizes.push_back(s);
    const double budget = opt.quick ? 0.1 : 0.4;
    const bool root = rma.rank() == 0;
    table out{root, rma.size(), csv_file(root ? opt.csv : std::string())};
    if (root) {
      std::printf(
          "dml exchange benchmark: %zu processes, scatter()+gather() of a float vector per step, "
          "gather::average\n",
          rma.size());
      std::printf(
          "time = ms per step (slowest rank); ratio = time / MPI_Allreduce (sum, then scale by 1/p); "
          "sent = bytes per member per step (vector statistics); GB/s = sent / time (memcpy: the vector "
          "copied by every rank at once)\n\n");
      std::printf(
          "| floats | impl      | topology      | consistency| ms per step  | ratio    | sent/member  | GB/s "
          "     |\n");
      std::printf(
          "|-------:|-----------|---------------|------------|-------------:|---------:|-------------:|------"
          "----:|\n");
    }
    for (const std::size_t floats : sizes) {
      if (floats > opt.max_floats) continue;
      const auto base = allreduce(floats, budget);
      out.baseline = base.seconds;
      out.row(floats, "allreduce", "-", "-", base);
      out.row(floats, "memcpy", "-", "-", copy(floats, budget));
      run_transport(rma, "mpi_rma", floats, budget, opt, out);
      if (floats <= opt.two_sided_max_floats) run_transport(two_sided, "mpi", floats, budget, opt, out);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_exchange: %s\n", e.what());
    return 1;
  }
  return 0;
}

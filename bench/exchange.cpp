// SPDX-License-Identifier: BSL-1.0
// Benchmark (not a test): one step of a data-parallel trainer's exchange,
// i.e. scatter() + gather() of a float vector, on the one-sided transport
// (mpi_rma) and the two-sided one (mpi), against MPI_Allreduce averaging the
// same vector, side by side in one run. Rank 0 prints a table: seconds per
// step (slowest rank), ratio to MPI_Allreduce, and bytes each member sent
// per step (from the vector's statistics).
//
//   mpiexec -n <p> bench_exchange [--quick] [--max-floats N] [--memory-gb G]
//
// --quick measures four sizes with shorter runs; --memory-gb (default 6)
// skips configurations whose receive slots and inboxes would need more
// memory than that over all ranks (topology::all keeps 2 slots per peer).
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
#include <string>
#include <string_view>
#include <vector>

namespace {

struct settings {
  bool quick = false;
  std::size_t max_floats = std::size_t{16} << 20;
  double memory_gb = 6.0;
};

struct result {
  double seconds = 0;     // per step, slowest rank
  double bytes_sent = 0;  // per member per step, mean over members
  bool skipped = false;
};

double max_over_ranks(double x) {
  double m = 0;
  MPI_Allreduce(&x, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return m;
}

double mean_over_ranks(double x) {
  double s = 0;
  int n = 1;
  MPI_Allreduce(&x, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return s / n;
}

// Steps so that one configuration takes about `budget` seconds, agreed by
// all ranks.
int steps_for(double one_step, double budget) {
  const double s = budget / std::max(one_step, 1e-7);
  return static_cast<int>(std::clamp(s, 3.0, 300.0));
}

result allreduce(std::size_t floats, double budget) {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  std::vector<float> x(floats, 1.0f);
  const float scale = 1.0f / static_cast<float>(n);
  auto step = [&] {
    MPI_Allreduce(MPI_IN_PLACE, x.data(), static_cast<int>(floats), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    for (auto& v : x) v *= scale;
  };
  step();  // warm up
  MPI_Barrier(MPI_COMM_WORLD);
  auto t0 = std::chrono::steady_clock::now();
  step();
  const int steps = steps_for(
      max_over_ranks(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()), budget);
  MPI_Barrier(MPI_COMM_WORLD);
  t0 = std::chrono::steady_clock::now();
  for (int s = 0; s < steps; ++s) step();
  const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / steps;
  return {max_over_ranks(t), 0, false};
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

std::string human_bytes(double b) {
  char buf[32];
  if (b >= 1e9)
    std::snprintf(buf, sizeof buf, "%.2f GB", b / 1e9);
  else if (b >= 1e6)
    std::snprintf(buf, sizeof buf, "%.2f MB", b / 1e6);
  else if (b >= 1e3)
    std::snprintf(buf, sizeof buf, "%.1f kB", b / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.0f B", b);
  return buf;
}

std::string human_floats(std::size_t n) {
  if (n >= (std::size_t{1} << 20)) return std::to_string(n >> 20) + "M";
  return std::to_string(n >> 10) + "K";
}

void print_row(bool root, const std::string& floats, const char* transport, std::string_view topo,
               std::string_view cons, const result& r, double baseline) {
  if (!root) return;
  if (r.skipped) {
    std::printf("| %6s | %-9s | %-13s | %-10s | %12s | %8s | %12s |\n", floats.c_str(), transport,
                std::string(topo).c_str(), std::string(cons).c_str(), "skipped", "(memory)", "");
  } else {
    std::printf("| %6s | %-9s | %-13s | %-10s | %12.4f | %8.2f | %12s |\n", floats.c_str(), transport,
                std::string(topo).c_str(), std::string(cons).c_str(), r.seconds * 1e3, r.seconds / baseline,
                r.bytes_sent > 0 ? human_bytes(r.bytes_sent).c_str() : "-");
  }
  std::fflush(stdout);
}

template <class Comm>
void run_transport(Comm& comm, const char* name, std::size_t floats, double budget, const settings& opt,
                   double baseline, bool root) {
  using namespace dml;
  const auto f = human_floats(floats);
  print_row(root, f, name, "all", "bsp", exchange<topology::all, consistency::bsp>(comm, floats, budget, opt),
            baseline);
  print_row(root, f, name, "all", "notify_ack",
            exchange<topology::all, consistency::notify_ack>(comm, floats, budget, opt), baseline);
  print_row(root, f, name, "halton", "bsp",
            exchange<topology::halton, consistency::bsp>(comm, floats, budget, opt), baseline);
  print_row(root, f, name, "halton", "notify_ack",
            exchange<topology::halton, consistency::notify_ack>(comm, floats, budget, opt), baseline);
  print_row(root, f, name, "root_expander", "bsp",
            exchange<topology::root_expander, consistency::bsp>(comm, floats, budget, opt), baseline);
  print_row(root, f, name, "root_expander", "notify_ack",
            exchange<topology::root_expander, consistency::notify_ack>(comm, floats, budget, opt), baseline);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    dml::comm::mpi_rma rma(argc, argv);  // starts MPI
    dml::comm::mpi two_sided(MPI_COMM_WORLD);
    settings opt;
    for (int i = 1; i < argc; ++i) {
      const std::string_view a = argv[i];
      if (a == "--quick")
        opt.quick = true;
      else if (a == "--max-floats" && i + 1 < argc)
        opt.max_floats = std::strtoull(argv[++i], nullptr, 10);
      else if (a == "--memory-gb" && i + 1 < argc)
        opt.memory_gb = std::strtod(argv[++i], nullptr);
      else {
        if (rma.rank() == 0)
          std::fprintf(stderr, "usage: mpiexec -n <p> %s [--quick] [--max-floats N] [--memory-gb G]\n",
                       argv[0]);
        return 2;
      }
    }
    std::vector<std::size_t> sizes;
    if (opt.quick)
      sizes = {std::size_t{1} << 10, std::size_t{1} << 16, std::size_t{1} << 20, std::size_t{16} << 20};
    else
      for (std::size_t s = std::size_t{1} << 10; s <= (std::size_t{16} << 20); s *= 4) sizes.push_back(s);
    const double budget = opt.quick ? 0.1 : 0.4;
    const bool root = rma.rank() == 0;
    if (root) {
      std::printf(
          "dml exchange benchmark: %zu processes, scatter()+gather() of a float vector per step, "
          "gather::average\n",
          rma.size());
      std::printf(
          "time = ms per step (slowest rank); ratio = time / MPI_Allreduce (sum, then scale by 1/p); "
          "sent = bytes per member per step (vector statistics)\n\n");
      std::printf(
          "| floats | transport | topology      | consistency| ms per step  | ratio    | sent/member  |\n");
      std::printf(
          "|-------:|-----------|---------------|------------|-------------:|---------:|-------------:|\n");
    }
    for (const std::size_t floats : sizes) {
      if (floats > opt.max_floats) continue;
      const auto base = allreduce(floats, budget);
      print_row(root, human_floats(floats), "allreduce", "-", "-", base, base.seconds);
      run_transport(rma, "mpi_rma", floats, budget, opt, base.seconds, root);
      run_transport(two_sided, "mpi", floats, budget, opt, base.seconds, root);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_exchange: %s\n", e.what());
    return 1;
  }
  return 0;
}

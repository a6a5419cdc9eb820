// SPDX-License-Identifier: BSL-1.0
// Benchmark (not a test): Gloo's ring allreduce as a baseline next to
// MPI_Allreduce. Each step averages a float vector over all processes: an
// allreduce with sum, then a scale by 1/p on every member (the same work the
// MPI_Allreduce baseline of bench_exchange does). MPI only starts the
// processes and bootstraps Gloo: rank 0 makes a temporary directory, every
// rank meets the others there through gloo::rendezvous::FileStore and
// connects a full mesh of TCP pairs on 127.0.0.1.
//
//   mpiexec -n <p> bench_gloo [--quick] [--max-floats N] [--csv FILE]
//
// Rank 0 prints a markdown table (ms per step on the slowest rank, ratio to
// MPI_Allreduce) and, with --csv, appends one row per measurement (a header
// line first when the file is new; the columns of bench_exchange --csv):
//   processes,floats,impl,topology,consistency,ms_per_step,bytes_per_member,skipped
// impl is 'allreduce' (MPI_Allreduce) or 'gloo_ring'; bytes_per_member is
// the ring algorithm's count 2(p-1)/p * 4 * floats, not a measurement, and
// 0 for MPI_Allreduce (Open MPI picks its algorithm at run time).
#define DML_BENCH_WITH_MPI 1
#include "../examples/common/cli.hpp"
#include "common.hpp"

#include <gloo/allreduce.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/attr.h>
#include <gloo/transport/tcp/device.h>

#include <mpi.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace bench;

struct settings {
  bool quick = false;
  std::size_t max_floats = std::size_t{16} << 20;
  std::string csv;
};

struct result {
  double seconds = 0;  // per step, slowest rank
  bool skipped = false;
};

int world_size() {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

// ms per step on the slowest rank; `step` must be collective.
template <class Step>
result measure(Step&& step, double budget) {
  return {seconds_per_step(step, budget), false};
}

void scale(std::vector<float>& x, float by) {
  for (auto& v : x) v *= by;
}

result mpi_allreduce(std::size_t floats, double budget) {
  std::vector<float> x(floats, 1.0f);
  const float by = 1.0f / static_cast<float>(world_size());
  return measure(
      [&] {
        MPI_Allreduce(MPI_IN_PLACE, x.data(), static_cast<int>(floats), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        scale(x, by);
      },
      budget);
}

// Gloo's ring allreduce through the options API (gloo::allreduce with
// Algorithm::RING: a reduce-scatter, then an allgather, both around the
// ring, in segments of at most 1 MiB). The options (and the buffer
// registration they hold) are built once per size and reused every step,
// as a trainer that reuses its gradient buffer would.
result gloo_ring(const std::shared_ptr<gloo::Context>& ctx, std::size_t floats, double budget) {
  if (ctx->size < 2) return {0, true};  // the ring needs a neighbour
  std::vector<float> x(floats, 1.0f);
  const float by = 1.0f / static_cast<float>(ctx->size);
  gloo::AllreduceOptions opts(ctx);
  opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
  opts.setOutput(x.data(), floats);
  opts.setReduceFunction(
      static_cast<void (*)(void*, const void*, const void*, std::size_t)>(&gloo::sum<float>));
  auto r = measure(
      [&] {
        gloo::allreduce(opts);
        scale(x, by);
      },
      budget);
  // Every member holds the same average (1.0): a cheap sanity check that the
  // ring ran over everyone.
  int bad = 0;
  for (float v : x) bad |= v != 1.0f ? 1 : 0;
  int any_bad = 0;
  MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (any_bad) throw std::runtime_error("Gloo's allreduce returned a wrong average");
  return r;
}

// Bytes each member sends per ring allreduce: p-1 chunks of n/p in the
// reduce-scatter and p-1 in the allgather (the algorithm's count).
double ring_bytes(std::size_t floats, int p) {
  if (p < 2) return 0;
  return 2.0 * (p - 1) / p * 4.0 * static_cast<double>(floats);
}

struct report {
  bool root = false;
  int processes = 1;
  std::FILE* csv = nullptr;

  void row(std::size_t floats, const char* impl, const result& r, double baseline, double bytes) const {
    if (!root) return;
    const auto f = human_floats(floats);
    if (r.skipped)
      std::printf("| %6s | %-9s | %12s | %8s | %14s |\n", f.c_str(), impl, "skipped", "(p < 2)", "");
    else
      std::printf("| %6s | %-9s | %12.4f | %8.2f | %14s |\n", f.c_str(), impl, r.seconds * 1e3,
                  r.seconds / baseline, bytes > 0 ? human_bytes(bytes).c_str() : "-");
    std::fflush(stdout);
    if (csv) {
      std::fprintf(csv, "%d,%zu,%s,-,-,%.6f,%.0f,%d\n", processes, floats, impl,
                   r.skipped ? 0.0 : r.seconds * 1e3, r.skipped ? 0.0 : bytes, r.skipped ? 1 : 0);
      std::fflush(csv);
    }
  }
};

// Rank 0 makes the rendezvous directory and tells the others its path.
std::string shared_temp_dir() {
  std::array<char, 4096> path{};
  if (world_rank() == 0) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "dml-gloo-XXXXXX").string();
    if (tmpl.size() < path.size()) {
      std::copy(tmpl.begin(), tmpl.end(), path.begin());
      if (mkdtemp(path.data()) == nullptr) path[0] = '\0';
    }
  }
  MPI_Bcast(path.data(), static_cast<int>(path.size()), MPI_CHAR, 0, MPI_COMM_WORLD);
  if (path[0] == '\0') throw std::runtime_error("rank 0 could not create a temporary rendezvous directory");
  return path.data();
}

std::shared_ptr<gloo::Context> connect_gloo() {
  const std::string dir = shared_temp_dir();
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  auto dev = gloo::transport::tcp::CreateDevice(attr);
  auto ctx = std::make_shared<gloo::rendezvous::Context>(world_rank(), world_size());
  {
    gloo::rendezvous::FileStore store(dir);
    ctx->connectFullMesh(store, dev);
  }
  // Oversubscribed runs of 16 M floats take seconds per step.
  ctx->setTimeout(std::chrono::minutes(5));
  MPI_Barrier(MPI_COMM_WORLD);  // everyone is connected: the store's files are done with
  if (world_rank() == 0) {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
  return ctx;
}

int run(int argc, char** argv) {
  const bool root = world_rank() == 0;
  settings opt;
  const auto app =
      cli::app("bench_gloo", R"(Gloo's ring allreduce next to MPI_Allreduce (bench/README.md). Run under
mpiexec.)");
  app->add_flag("--quick", opt.quick, "fewer sizes and shorter timings");
  app->add_option("--max-floats", opt.max_floats, "largest vector, default 16M floats")
      ->option_text("N")
      ->check(cli::whole_number());
  app->add_option("--csv", opt.csv, "also append the rows to FILE")
      ->option_text("FILE")
      ->check(cli::not_empty());
  try {
    if (!cli::parse(*app, argc, argv, root)) return 0;  // --help
  } catch (const cli::usage_error& e) {
    if (root) std::fprintf(stderr, "bench_gloo: %s (see --help)\n", e.what());
    return 2;
  }
  report out;
  out.root = root;
  out.processes = world_size();
  int csv_ok = 1;
  if (root && !opt.csv.empty()) {
    out.csv =
        open_csv(opt.csv, "processes,floats,impl,topology,consistency,ms_per_step,bytes_per_member,skipped");
    csv_ok = out.csv != nullptr ? 1 : 0;
  }
  MPI_Bcast(&csv_ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (!csv_ok) {
    if (root) std::fprintf(stderr, "bench_gloo: cannot write %s\n", opt.csv.c_str());
    return 1;
  }

  const auto ctx = connect_gloo();
  std::vector<std::size_t> sizes;
  if (opt.quick)
    sizes = {std::size_t{1} << 10, std::size_t{1} << 16, std::size_t{1} << 20, std::size_t{16} << 20};
  else
    for (std::size_t s = std::size_t{1} << 10; s <= (std::size_t{16} << 20); s *= 4) sizes.push_back(s);
  const double budget = opt.quick ? 0.1 : 0.4;
  const int p = world_size();
  if (root) {
    std::printf(
        "Gloo ring allreduce vs MPI_Allreduce: %d processes, average of a float vector per step "
        "(allreduce sum, then scale by 1/p)\n",
        p);
    std::printf(
        "time = ms per step (slowest rank); ratio = time / MPI_Allreduce; sent = bytes per member per "
        "step by the ring algorithm's count 2(p-1)/p * 4 * floats (not measured)\n\n");
    std::printf("| floats | impl      | ms per step  | ratio    | sent/member    |\n");
    std::printf("|-------:|-----------|-------------:|---------:|---------------:|\n");
  }
  for (const std::size_t floats : sizes) {
    if (floats > opt.max_floats) continue;
    const auto base = mpi_allreduce(floats, budget);
    out.row(floats, "allreduce", base, base.seconds, 0);
    out.row(floats, "gloo_ring", gloo_ring(ctx, floats, budget), base.seconds, ring_bytes(floats, p));
  }
  if (out.csv) std::fclose(out.csv);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rc = 0;
  try {
    rc = run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_gloo (rank %d): %s\n", world_rank(), e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return rc;
}

// SPDX-License-Identifier: BSL-1.0
// Shared by the benchmark programs (not part of dml): number formatting,
// argument parsing, CSV files and, with MPI, agreement over ranks.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <string>

#ifdef DML_BENCH_WITH_MPI
#include <mpi.h>
#endif

namespace bench {

inline std::string human_bytes(double b) {
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

/// 1K, 64K, 1M, ...; other counts as plain numbers.
inline std::string human_floats(std::size_t n) {
  if (n >= (std::size_t{1} << 20) && n % (std::size_t{1} << 20) == 0) return std::to_string(n >> 20) + "M";
  if (n >= (std::size_t{1} << 10) && n % (std::size_t{1} << 10) == 0) return std::to_string(n >> 10) + "K";
  return std::to_string(n);
}

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Appends to `path` (runs at several process counts collect into one
/// file); the header line goes first when the file is new or empty.
inline std::FILE* open_csv(const std::string& path, const char* header) {
  std::FILE* probe = std::fopen(path.c_str(), "r");
  const bool fresh = probe == nullptr || std::fgetc(probe) == EOF;
  if (probe) std::fclose(probe);
  std::FILE* f = std::fopen(path.c_str(), "a");
  if (f && fresh) std::fprintf(f, "%s\n", header);
  return f;
}

/// Steps so that one configuration takes about `budget` seconds (3 to 300).
inline int steps_for(double one_step, double budget) {
  const double s = budget / std::max(one_step, 1e-7);
  return static_cast<int>(std::clamp(s, 3.0, 300.0));
}

#ifdef DML_BENCH_WITH_MPI
inline double max_over_ranks(double x) {
  double m = 0;
  MPI_Allreduce(&x, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return m;
}

/// Seconds per call of the collective `step` on the slowest rank: a warm-up
/// call, one timed call that sizes the run to about `budget` seconds, then
/// `repeat` times that many calls.
template <class Step>
double seconds_per_step(Step&& step, double budget, int repeat = 1) {
  step();  // warm up (first touch, connection buffers)
  MPI_Barrier(MPI_COMM_WORLD);
  auto t0 = std::chrono::steady_clock::now();
  step();
  const int steps = steps_for(max_over_ranks(seconds_since(t0)), budget) * repeat;
  MPI_Barrier(MPI_COMM_WORLD);
  t0 = std::chrono::steady_clock::now();
  for (int s = 0; s < steps; ++s) step();
  return max_over_ranks(seconds_since(t0) / steps);
}

inline double mean_over_ranks(double x) {
  double s = 0;
  int n = 1;
  MPI_Allreduce(&x, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return s / n;
}
#endif

}  // namespace bench

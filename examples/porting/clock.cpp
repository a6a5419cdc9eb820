// SPDX-License-Identifier: BSL-1.0
// porting-clock: why a serial trainer's std::clock() timer reports wrong
// times once its loop runs in in-process members (docs/trainers.md,
// "Measuring time"). Every member does the same fixed amount of work and
// reports three timers: the wall time that passed (std::chrono::
// steady_clock), the processor time of its own thread (POSIX
// CLOCK_THREAD_CPUTIME_ID), and std::clock(), which is the processor time
// of the whole process: every member's work on every core, added up.
#include <CLI/CLI.hpp>
#include <dml/comm/inproc.hpp>
#include <dml/io.hpp>

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <ctime>
#include <thread>

#include <time.h>  // clock_gettime, CLOCK_THREAD_CPUTIME_ID (POSIX)

namespace {

double thread_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t ranks = 4;
  double work = 1e8;
  CLI::App app{"Shows what std::clock() and steady_clock report in in-process members.", "porting-clock"};
  app.add_option("--ranks", ranks, "in-process members (threads)")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  app.add_option("--work", work, "loop iterations per member")
      ->capture_default_str()
      ->check(CLI::Range(1e3, 1e12));
  CLI11_PARSE(app, argc, argv);

  dml::comm::inproc::run(ranks, [&](dml::comm::inproc::context& comm) {
    comm.barrier();  // start together
    const std::clock_t process_start = std::clock();
    const double thread_start = thread_seconds();
    const auto wall_start = std::chrono::steady_clock::now();
    volatile double sink = 0;
    double x = 0;
    for (double i = 0; i < work; ++i) x = x * 0.5 + 1;  // the same computing on every member
    sink = x;
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
    const double own = thread_seconds() - thread_start;
    const double process = static_cast<double>(std::clock() - process_start) / CLOCKS_PER_SEC;
    comm.barrier();
    dml::io::print_each(comm, "steady_clock %.3f s, own thread %.3f s, std::clock() %.3f s", wall, own,
                        process);
    (void)sink;
  });
  std::printf("%zu members, %u hardware threads\n", ranks, std::thread::hardware_concurrency());
}

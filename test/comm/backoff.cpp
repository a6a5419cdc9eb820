// SPDX-License-Identifier: BSL-1.0
// The wait loops' backoff (dml/detail/backoff.hpp): spin, then yield, then
// sleep; and a thread whose yields are slow (other work holds the core for
// a time slice) sleeps instead of yielding for a while.
#include <dml/detail/backoff.hpp>

#include "support/catch.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

namespace {

std::atomic<int> yields{0};
void fast_yield() { ++yields; }
void slow_yield() {
  ++yields;
  std::this_thread::sleep_for(std::chrono::milliseconds(2));  // above backoff::slow_yield (100 us)
}

// Pauses of a backoff with `yield`, on a thread of its own (the slow-yield
// state is per thread); returns how many times it yielded.
int yields_in(void (*yield)(), unsigned pauses) {
  yields = 0;
  std::thread([&] {
    dml::detail::backoff_steps steps;
    steps.spin = 4;
    steps.yield = 4 + pauses;
    steps.short_sleep = std::chrono::microseconds(1);
    dml::detail::backoff b(steps, yield);
    for (unsigned i = 0; i < 4 + pauses; ++i) b.pause();
  }).join();
  return yields.load();
}

}  // namespace

TEST_CASE("backoff: spins first, then yields at every pause while yields are fast") {
  CHECK(yields_in(&fast_yield, 0) == 0);  // the spinning pauses do not yield
  // Every pause of the yield phase does. (A thread preempted between the
  // clock reads around a yield takes it for a slow one: the best of three
  // tries, so that a loaded machine does not fail the test.)
  int best = 0;
  for (int attempt = 0; attempt < 3 && best != 20; ++attempt)
    best = std::max(best, yields_in(&fast_yield, 20));
  CHECK(best == 20);
}

TEST_CASE("backoff: after a slow yield the thread sleeps instead of yielding") {
  // The first yield takes 2 ms: the next ones within backoff::sleep_instead
  // (100 ms; 10 pauses of a 1 us sleep each take far less) sleep.
  CHECK(yields_in(&slow_yield, 10) == 1);
  // A new thread starts with fast yields again.
  CHECK(yields_in(&fast_yield, 5) == 5);
}

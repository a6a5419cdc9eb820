// SPDX-License-Identifier: BSL-1.0
// Internal: how every wait loop of dml waits for a peer (a vector's inputs,
// a table's rows, an answer over the two-sided mpi transport): spin
// briefly, then yield, then sleep.
//
// Members often share few cores (oversubscribed runs), and a waiter that
// spins starves the peer it waits for, so it soon yields. But a yield hands
// the core to any runnable thread, and when other work competes for the
// cores (a busy process, a second job) that thread keeps it for a whole
// scheduler time slice, milliseconds, on every yield: measured on 2 cores
// with two busy loops, dml-lda over the two-sided transport took 12.6 s
// instead of 0.9 s. A yield that took longer than `slow_yield` is that
// case: the thread then sleeps instead of yielding for `sleep_instead`
// (a sleeper is woken promptly when its time is up; same run: 3.6 s).
#pragma once

#include <dml/fwd.hpp>

#include <chrono>
#include <thread>

DML_BEGIN_NAMESPACE
namespace detail {

/// When a backoff moves on to its next step, counted in pauses.
struct backoff_steps {
  unsigned spin = 64;            ///< pauses that return at once
  unsigned yield = 512;          ///< until then: yield (unless yields are slow here lately)
  unsigned short_sleeps = 4096;  ///< until then: sleep `short_sleep`; after: `long_sleep`
  std::chrono::microseconds short_sleep{20};
  std::chrono::microseconds long_sleep{200};
};

class backoff {
 public:
  static constexpr std::chrono::microseconds slow_yield{100};
  static constexpr std::chrono::milliseconds sleep_instead{100};

  constexpr backoff() noexcept = default;
  constexpr explicit backoff(backoff_steps steps) noexcept : steps_(steps) {}
  /// With another yield than std::this_thread::yield (tests make it slow).
  constexpr backoff(backoff_steps steps, void (*yield)()) noexcept : steps_(steps), yield_(yield) {}

  /// One pause of the wait.
  void pause() {
    const unsigned n = pauses_++;
    if (n < steps_.spin) return;
    if (n < steps_.yield && yield_unless_slow()) return;
    std::this_thread::sleep_for(n < steps_.short_sleeps ? steps_.short_sleep : steps_.long_sleep);
  }
  /// The wait starts over (the next pauses spin again).
  void reset() noexcept { pauses_ = 0; }

 private:
  // Yields and returns true, or returns false while this thread's yields
  // are known to be slow.
  bool yield_unless_slow() const {
    using clock = std::chrono::steady_clock;
    thread_local clock::time_point no_yields_until{};
    const auto before = clock::now();
    if (before < no_yields_until) return false;
    yield_();
    const auto after = clock::now();
    if (after - before > slow_yield) no_yields_until = after + sleep_instead;
    return true;
  }

  static void std_yield() { std::this_thread::yield(); }

  backoff_steps steps_{};
  void (*yield_)() = &std_yield;
  unsigned pauses_ = 0;
};

}  // namespace detail
DML_END_NAMESPACE

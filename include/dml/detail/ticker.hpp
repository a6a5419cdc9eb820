// SPDX-License-Identifier: BSL-1.0
// Internal: a background thread that does one thing every period until it
// is stopped (the heartbeats of the MPI transports' fault monitor and of
// the start-up and shut-down beacons).
//
// stop() wakes the thread at once. A thread that slept its period out
// before it looked at a stop flag kept every MPI process's exit waiting
// for up to a period per heartbeat: with the default heartbeat timeout of
// 1 s (a period of 100 ms) an MPI test program of five ranks that runs no
// test took 1.05 s to start and end, and 0.82 s with a period of 10 ms.
#pragma once

#include <dml/fwd.hpp>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

DML_BEGIN_NAMESPACE
namespace detail {

class ticker {
 public:
  ticker() = default;
  ticker(const ticker&) = delete;
  ticker& operator=(const ticker&) = delete;
  ~ticker() { stop(); }

  /// Starts the thread: `tick()` at once, then again after each
  /// `period()` (asked anew each time, so it may change) until stop().
  template <class Tick, class Period>
  void start(Tick tick, Period period) {
    stop();
    stopping_ = false;
    thread_ = std::thread([this, tick = std::move(tick), period = std::move(period)]() mutable {
      std::unique_lock lock(mutex_);
      while (!stopping_) {
        lock.unlock();
        tick();
        const auto wait = period();
        lock.lock();
        wake_.wait_for(lock, wait, [this] { return stopping_; });
      }
    });
  }

  /// Ends the thread and waits for it (a tick under way finishes first).
  void stop() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }

  [[nodiscard]] bool running() const noexcept { return thread_.joinable(); }

 private:
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace detail
DML_END_NAMESPACE

// SPDX-License-Identifier: BSL-1.0
// The heartbeat threads' ticker (dml/detail/ticker.hpp): ticks once at the
// start and then every period, asks for the period anew each time, and
// stop() ends the thread without waiting the period out.
#include <dml/detail/ticker.hpp>

#include "support/catch.hpp"

#include <atomic>
#include <chrono>
#include <thread>

using namespace std::chrono_literals;

TEST_CASE("ticker: ticks at once, then every period, until stopped") {
  std::atomic<int> ticks{0};
  dml::detail::ticker t;
  CHECK_FALSE(t.running());
  t.start([&] { ++ticks; }, [] { return 1ms; });
  CHECK(t.running());
  const auto give_up = std::chrono::steady_clock::now() + 30s;
  while (ticks.load() < 5 && std::chrono::steady_clock::now() < give_up) std::this_thread::sleep_for(1ms);
  t.stop();
  CHECK_FALSE(t.running());
  const int at_stop = ticks.load();
  CHECK(at_stop >= 5);
  std::this_thread::sleep_for(20ms);
  CHECK(ticks.load() == at_stop);  // no tick after stop() returned
}

TEST_CASE("ticker: stop() wakes a thread in the middle of a long period") {
  std::atomic<int> ticks{0};
  dml::detail::ticker t;
  const auto start = std::chrono::steady_clock::now();
  t.start([&] { ++ticks; }, [] { return std::chrono::hours(1); });
  while (ticks.load() == 0) std::this_thread::sleep_for(1ms);
  t.stop();  // a ticker that slept its period out would hang here for an hour
  CHECK(ticks.load() == 1);
  CHECK(std::chrono::steady_clock::now() - start < 10min);
}

TEST_CASE("ticker: the period is asked for after every tick, so it may change") {
  std::atomic<int> ticks{0};
  std::atomic<int> asked{0};
  dml::detail::ticker t;
  // 1 ms after each of the first four ticks, then an hour: five ticks.
  t.start([&] { ++ticks; },
          [&] { return ++asked <= 4 ? std::chrono::milliseconds(1) : std::chrono::hours(1); });
  const auto give_up = std::chrono::steady_clock::now() + 30s;
  while (asked.load() < 5 && std::chrono::steady_clock::now() < give_up) std::this_thread::sleep_for(1ms);
  std::this_thread::sleep_for(50ms);
  CHECK(ticks.load() == 5);
  CHECK(asked.load() == 5);
  t.stop();
}

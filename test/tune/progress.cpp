// SPDX-License-Identifier: BSL-1.0
// The progress summarizer on synthetic traces: a clean descent converges, a
// jumpy or flat one is unstable, NaN or infinity anywhere is diverged, and
// the numbers follow the definitions (window means, largest rise).
#include <dml/tune/progress.hpp>

#include "support/catch.hpp"

#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

namespace {

using dml::tune::label;
using dml::tune::summarize;

std::vector<double> times(std::size_t n) {
  std::vector<double> t(n);
  for (std::size_t i = 0; i < n; ++i) t[i] = 0.5 * static_cast<double>(i);
  return t;
}

}  // namespace

TEST_CASE("a falling loss with little noise is converging, and its speed follows the windows") {
  // 100 points: 10 - 0.05 i plus a +-0.01 zigzag that the windows average away.
  std::vector<double> loss(100);
  for (std::size_t i = 0; i < loss.size(); ++i) loss[i] = 10.0 - 0.05 * double(i) + (i % 2 ? 0.01 : -0.01);
  const auto t = times(loss.size());
  const auto s = summarize(loss, t);
  CHECK(s.verdict == label::converging);
  // windows of 10 points: means 9.775, 9.275, ...; range = -4.5; no rises
  CHECK(s.range == Approx(-4.5));
  CHECK(s.noise == 0.0);
  CHECK(s.elapsed == Approx(45.0));  // mean times 2.25 .. 47.25
  CHECK(s.speed == Approx(0.1));
  CHECK(s.last == Approx(10.0 - 0.05 * 94.5));
}

TEST_CASE("a loss that falls but jumps up between windows is unstable, and the jump costs speed") {
  std::vector<double> loss(10);
  for (std::size_t i = 0; i < loss.size(); ++i) loss[i] = 10.0 - double(i);
  loss[5] = 9.5;  // a rise of 3.5 against a range of -9: more than 1/10 of it
  const auto t = times(loss.size());
  const auto s = summarize(loss, t);
  CHECK(s.verdict == label::unstable);
  CHECK(s.noise == Approx(3.5));  // 9.5 - 6
  CHECK(s.range == Approx(-9.0));
  CHECK(s.speed == Approx((9.0 - 3.5) / 4.5));
  // A smaller rise (below 0.9) keeps it converging.
  loss[5] = 6.8;  // a rise of 0.8
  CHECK(summarize(loss, t).verdict == label::converging);
}

TEST_CASE("a flat or rising loss is unstable with speed 0") {
  const std::vector<double> flat(40, 3.0), rising{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  const auto s = summarize(flat, times(flat.size()));
  CHECK(s.verdict == label::unstable);
  CHECK(s.speed == 0.0);
  const auto r = summarize(rising, times(rising.size()));
  CHECK(r.verdict == label::unstable);
  CHECK(r.speed == 0.0);
  CHECK(r.range > 0);
}

TEST_CASE("NaN or infinity anywhere in a trace is diverged, speed 0") {
  for (const double bad : {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                           -std::numeric_limits<double>::infinity()}) {
    for (const std::size_t at : {std::size_t{0}, std::size_t{7}, std::size_t{19}}) {
      std::vector<double> loss(20);
      for (std::size_t i = 0; i < loss.size(); ++i) loss[i] = 5.0 - 0.2 * double(i);
      loss[at] = bad;
      const auto s = summarize(loss, times(loss.size()));
      INFO("value " << bad << " at " << at);
      CHECK(s.verdict == label::diverged);
      CHECK(s.speed == 0.0);
    }
  }
  std::vector<double> loss{3, 2, 1}, t{0, 1, std::numeric_limits<double>::quiet_NaN()};
  CHECK(summarize(loss, t).verdict == label::diverged);
}

TEST_CASE("short traces and bad arguments") {
  const std::vector<double> one{2.0}, none;
  CHECK(summarize(one, one).verdict == label::unstable);
  CHECK(summarize(none, none).verdict == label::unstable);
  const std::vector<double> two{2.0, 1.0}, t2{0.0, 1.0};
  CHECK(summarize(two, t2).verdict == label::converging);  // fewer points than windows: one per point
  REQUIRE_THROWS_AS(summarize(two, one), dml::config_error);
  dml::tune::summarizer_options o;
  o.windows = 1;
  REQUIRE_THROWS_WITH(summarize(two, t2, o), dml_test::contains("at least 2 windows"));
  CHECK(std::string(dml::tune::to_string(label::diverged)) == "diverged");
}

TEST_CASE("summarize_from: the fork's loss is window 0, so a fast early drop counts") {
  // Two branches forked at loss 2: one drops to 1 at once and stays flat,
  // the other falls steadily from 2 to 1.5. From the first window the flat
  // one has made no progress; from the fork it has made twice as much.
  std::vector<double> flat(20, 1.0), steady(20);
  for (std::size_t i = 0; i < steady.size(); ++i) steady[i] = 2.0 - 0.025 * double(i + 1);
  const auto t = times(20);
  CHECK(summarize(flat, t).verdict == label::unstable);
  const auto a = dml::tune::summarize_from(2.0, 0.0, flat, t);
  const auto b = dml::tune::summarize_from(2.0, 0.0, steady, t);
  CHECK(a.verdict == label::converging);
  CHECK(b.verdict == label::converging);
  CHECK(a.range == Approx(-1.0));
  CHECK(a.noise == 0.0);
  CHECK(a.elapsed == Approx(9.25));  // last window's mean time (9.0 + 9.5) / 2, from 0
  CHECK(a.speed == Approx(1.0 / 9.25));
  CHECK(a.speed > b.speed);
  // A branch that jumps above the fork's loss first carries that rise as noise.
  std::vector<double> jump(20, 1.0);
  jump[0] = jump[1] = 5.0;
  const auto c = dml::tune::summarize_from(2.0, 0.0, jump, t);
  CHECK(c.noise == Approx(3.0));
  CHECK(c.verdict == label::unstable);
  CHECK(c.speed == 0.0);
  // Ending above the fork's loss is never converging.
  std::vector<double> up(20, 2.5);
  CHECK(dml::tune::summarize_from(2.0, 0.0, up, t).verdict == label::unstable);
  CHECK(dml::tune::summarize_from(std::nan(""), 0.0, up, t).verdict == label::diverged);
}

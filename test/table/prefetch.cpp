// SPDX-License-Identifier: BSL-1.0
// The prefetch of a recorded pattern that spans several clocks: each clock
// refreshes only the rows its place in the pattern reads (counted with
// stats(), never timed), an extra clock (a sync) shifts the phases without
// losing the prefetch, and patterns that do not fit what runs later (no
// clock in the recording, other rows) leave every value exact.
#include <dml/dml.hpp>
#include <dml/table.hpp>

#include "support/catch.hpp"

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace table_prefetch {

namespace inproc = dml::comm::inproc;

constexpr std::size_t members = 3;
constexpr std::size_t half = 30;  // rows of one set
constexpr std::size_t steps = 8;  // real steps after the recording
constexpr std::size_t len = 2;    // elements per row

// What the recording notes before the real steps.
enum class plan {
  none,               // no recording
  virtual_two,        // a virtual iteration of two clocks: the alternation itself
  real_two,           // the first two real steps
  virtual_two_shift,  // virtual_two, then a sync() (an extra clock) before the steps
  virtual_three,      // three clocks (sets 0, 1, 0): a period the steps do not follow
  zero_clocks,        // reads of set 0 and no clock(): a period of one clock
  other_rows,         // two clocks that read set 2, which the steps never read
};

struct member_result {
  std::vector<double> sums;   // per real step: a checksum of the rows read
  std::uint64_t fetched = 0;  // rows fetched during the steps after the recording
  std::uint64_t needed = 0;   // rows of others those steps read (each once per step)
  std::string error;
};

// Step k reads set k % 2 and updates set (k + 1) % 2, so that under bsp
// every value read is exact (the set read at a clock is written next one
// clock later). Set 2 is never written.
std::vector<member_result> run(bool prefetch, plan p) {
  std::vector<member_result> out(members);
  std::mutex mutex;
  inproc::run(members, [&](auto& c) {
    member_result res;
    try {
      dml::table_options o;
      o.prefetch = prefetch;
      o.place_rows = false;  // rows stay where the counts below expect them
      auto t = dml::make_table<double>(c, 3 * half, len, dml::consistency::bsp{}, o);
      const double me = static_cast<double>(c.rank() + 1);
      std::vector<double> delta(len);
      auto step = [&](std::size_t k, std::size_t read_set, bool count) {
        double sum = 0;
        std::vector<double> seen(half);
        for (std::size_t i = 0; i < half; ++i) {
          const auto v = t.read(read_set * half + i);
          seen[i] = v[0] + 0.5 * v[1];
          sum += seen[i] * static_cast<double>(i + 1);
        }
        const std::size_t write_set = (k + 1) % 2;
        for (std::size_t i = 0; i < half; ++i) {
          delta[0] = me * static_cast<double>(k + 1);
          delta[1] = seen[i] * 0.25 + me;
          t.update(write_set * half + i, delta);
        }
        t.clock();
        if (count) res.sums.push_back(sum);
      };
      auto note = [&](std::size_t read_set) {  // a recorded clock that reads `read_set`
        for (std::size_t i = 0; i < half; ++i) (void)t.read(read_set * half + i);
        t.update((read_set + 1) % 2 * half, std::vector<double>(len, 0.0));
        t.clock();
      };
      std::size_t k = 0;
      switch (p) {
        case plan::none:
          break;
        case plan::virtual_two:
        case plan::virtual_two_shift:
          t.begin_recording(dml::recording::virtual_iteration);
          note(0);
          note(1);
          t.end_recording();
          if (p == plan::virtual_two_shift) t.sync();
          break;
        case plan::real_two:
          t.begin_recording(dml::recording::real_iteration);
          step(0, 0, true);
          step(1, 1, true);
          t.end_recording();
          k = 2;
          break;
        case plan::virtual_three:
          t.begin_recording(dml::recording::virtual_iteration);
          note(0);
          note(1);
          note(0);
          t.end_recording();
          break;
        case plan::zero_clocks:
          t.begin_recording(dml::recording::virtual_iteration);
          for (std::size_t i = 0; i < half; ++i) (void)t.read(i);
          t.end_recording();
          break;
        case plan::other_rows:
          t.begin_recording(dml::recording::virtual_iteration);
          note(2);
          note(2);
          t.end_recording();
          break;
      }
      const auto before = t.stats();
      for (; k < steps; ++k) {
        step(k, k % 2, true);
        for (std::size_t i = 0; i < half; ++i)
          if (t.owner(k % 2 * half + i) != c.rank()) ++res.needed;
      }
      res.fetched = t.stats().rows_fetched - before.rows_fetched;
      t.sync();
    } catch (const std::exception& e) {
      res.error = e.what();
    }
    std::lock_guard lock(mutex);
    out[c.rank()] = std::move(res);
  });
  return out;
}

void require_same_values(const std::vector<member_result>& got, const std::vector<member_result>& want) {
  for (std::size_t m = 0; m < members; ++m) {
    INFO("member " << m);
    REQUIRE(got[m].error.empty());
    REQUIRE(got[m].sums.size() == want[m].sums.size());
    for (std::size_t k = 0; k < want[m].sums.size(); ++k) {
      INFO("step " << k);
      CHECK(got[m].sums[k] == want[m].sums[k]);
    }
  }
}

TEST_CASE("table prefetch: a two-clock pattern refreshes only the rows of the current clock", "[table]") {
  const auto base = run(false, plan::none);
  for (const auto& r : base) REQUIRE(r.error.empty());
  // The values change from step to step (else the comparison proves little).
  CHECK(base[0].sums.front() != base[0].sums.back());
  for (plan p : {plan::virtual_two, plan::real_two, plan::virtual_two_shift}) {
    INFO("plan " << static_cast<int>(p));
    const auto got = run(true, p);
    require_same_values(got, base);
    for (std::size_t m = 0; m < members; ++m) {
      INFO("member " << m);
      // Every row of others a step reads is stale (written the clock before)
      // and fetched once: by the prefetch, and only if the step reads it. A
      // prefetch of both sets would fetch twice as many.
      CHECK(got[m].needed > 0);
      CHECK(got[m].fetched == got[m].needed);
    }
  }
}

TEST_CASE("table prefetch: patterns that do not fit the later steps leave the values exact", "[table]") {
  const auto base = run(false, plan::none);
  for (plan p : {plan::zero_clocks, plan::other_rows, plan::virtual_three}) {
    INFO("plan " << static_cast<int>(p));
    const auto got = run(true, p);
    require_same_values(got, base);
    // Every row read is fetched at least once per step; a pattern that
    // misses some of them costs fetches, never values.
    for (std::size_t m = 0; m < members; ++m) CHECK(got[m].fetched >= got[m].needed);
  }
  // No clock in the recording: one phase, the rows of set 0 at every clock,
  // as a pattern of one set always was: set 1's steps fetch both sets.
  const auto once = run(true, plan::zero_clocks);
  for (std::size_t m = 0; m < members; ++m) CHECK(once[m].fetched > once[m].needed);
}

}  // namespace table_prefetch

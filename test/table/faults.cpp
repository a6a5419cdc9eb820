// SPDX-License-Identifier: BSL-1.0
// Parameter tables when members fail (in-process fault injection): under
// fault::policy::tolerate the survivors rebuild the table from their own
// updates and go on, the failed members' updates are withdrawn and counted;
// under abort every survivor throws dml::peer_failure naming the dead.
#include <dml/dml.hpp>
#include <dml/table.hpp>

#include "laws.hpp"
#include "support/catch.hpp"

#include <atomic>
#include <chrono>
#include <cmath>
#include <mutex>
#include <random>
#include <string>
#include <vector>

namespace inproc = dml::comm::inproc;
using table_laws::f;
using table_laws::total;

namespace {

struct member_result {
  bool finished = false;
  std::string error;
  std::int64_t wrong = 0;
  std::string first;
  std::uint64_t lost = 0, rebuilds = 0, epoch = 0;
  std::vector<dml::member_id> live;
  void fail(const std::string& w) {
    if (first.empty()) first = w;
    ++wrong;
  }
};

// Checks that no finished member saw a wrong value; returns the finished
// members.
std::vector<std::size_t> check_finished(const std::vector<member_result>& results) {
  std::vector<std::size_t> done;
  for (std::size_t m = 0; m < results.size(); ++m) {
    const auto& r = results[m];
    INFO("member " << m << ": " << r.first);
    if (!r.finished) continue;
    done.push_back(m);
    CHECK(r.wrong == 0);
  }
  return done;
}

// Every member updates every row f(q, r, c) times a clock (element q, n and
// n + 1 as in the laws) and reads every row; `victim` stops (as if its
// process died) right after its clock `die_after`. The survivors run
// `rounds` clocks, sync, and check that the table holds exactly their own
// updates and none of the victim's.
template <class Cons>
void run_with_a_death(std::size_t n, std::size_t victim, std::uint64_t die_after, int rounds,
                      dml::table_options opts, bool record, std::vector<member_result>& results,
                      inproc::options io = {}) {
  inproc::run(
      n,
      [&](auto& c) {
        auto& res = results[c.rank()];
        const std::size_t rows = 2 * n + 3, len = n + 2, me = c.rank();
        auto t = dml::make_table<double>(c, rows, len, Cons{}, opts);
        std::vector<double> delta(len, 0.0);
        delta[me] = 1;
        delta[n] = 1;
        delta[n + 1] = 2;
        auto work = [&](std::uint64_t clock, bool check) {
          for (std::size_t r = 0; r < rows; ++r)
            for (int k = 0; k < f(me, r, clock); ++k) t.update(r, delta);
          for (std::size_t r = 0; r < rows; ++r) {
            const auto v = t.read(r);
            if (!check) continue;
            double sum = 0;
            for (std::size_t q = 0; q < n; ++q) sum += v[q];
            if (v[n] != sum || v[n + 1] != 2 * v[n])
              res.fail("part of an update at clock " + std::to_string(clock));
            if (std::llround(v[me]) != total(me, r, 0, clock + 1))
              res.fail("own updates " + std::to_string(v[me]) + " at clock " + std::to_string(clock) +
                       ", row " + std::to_string(r));
          }
          t.clock();
          if (me == victim && clock == die_after) c.stop();
        };
        std::uint64_t clock = 0;
        if (record) {
          t.begin_recording(dml::recording::virtual_iteration);
          work(0, false);
          t.end_recording();
        }
        for (; clock < static_cast<std::uint64_t>(rounds); ++clock) work(clock, true);
        t.sync();
        const auto& live = c.view().live;
        for (std::size_t r = 0; r < rows; ++r) {
          const auto v = t.read(r);
          double all = 0;
          for (std::size_t q = 0; q < n; ++q) {
            const bool alive = std::find(live.begin(), live.end(), q) != live.end();
            const double want = alive ? static_cast<double>(total(q, r, 0, rounds)) : 0.0;
            all += want;
            if (v[q] != want)
              res.fail("after sync, row " + std::to_string(r) + ": member " + std::to_string(q) + " has " +
                       std::to_string(v[q]) + ", want " + std::to_string(want));
          }
          if (v[n] != all || v[n + 1] != 2 * all) res.fail("after sync: sums");
        }
        res.lost = t.stats().lost_updates;
        res.rebuilds = t.stats().rebuilds;
        res.epoch = c.view().epoch;
        res.live = live;
        t.sync();
        res.finished = true;
      },
      io);
}

}  // namespace

TEMPLATE_LIST_TEST_CASE("table faults: the survivors of a member that dies go on with exactly their updates",
                        "[table][fault]", table_laws::policies) {
  for (std::size_t n : {3u, 5u}) {
    for (std::size_t victim : {std::size_t{0}, n - 1}) {
      for (bool record : {false, true}) {
        std::vector<member_result> results(n);
        constexpr std::uint64_t die_after = 2;
        run_with_a_death<TestType>(n, victim, die_after, 6, dml::table_options{}, record, results);
        INFO("n = " << n << ", victim " << victim << (record ? ", placed rows" : ", cyclic rows"));
        std::uint64_t lost = 0;
        for (std::size_t m = 0; m < n; ++m) {
          const auto& r = results[m];
          INFO("member " << m << ": " << r.first);
          if (m == victim) {
            CHECK_FALSE(r.finished);
            continue;
          }
          CHECK(r.finished);
          CHECK(r.wrong == 0);
          CHECK(r.epoch == 1);
          CHECK(r.rebuilds == 1);
          CHECK(r.live.size() == n - 1);
          lost += r.lost;
        }
        // The victim's row deltas of its clocks 0..die_after (its updates
        // to one row in one clock travel as one) reached their owners
        // (in-process puts land at once) and were withdrawn; those to rows
        // it owned itself reached nobody else. With cyclic rows the count is
        // exact.
        if (!record) {
          std::uint64_t expected = 0;
          for (std::size_t r = 0; r < 2 * n + 3; ++r)
            for (std::uint64_t c = 0; c <= die_after; ++c)
              if (r % n != victim && f(victim, r, c) > 0) ++expected;
          CHECK(lost == expected);
        } else {
          CHECK(lost > 0);
        }
      }
    }
  }
}

TEST_CASE("table faults: under fault::policy::abort every survivor throws peer_failure naming the dead",
          "[table][fault]") {
  constexpr std::size_t n = 4, victim = 2;
  std::vector<std::string> what(n);
  std::vector<dml::member_id> named(n, 99);
  inproc::run(n, [&](auto& c) {
    dml::fault::set_policy(c, dml::fault::policy::abort);
    auto t = dml::make_table<float>(c, 10, 2, dml::consistency::ssp<1>{});
    try {
      for (int k = 0; k < 20; ++k) {
        for (std::size_t r = 0; r < 10; ++r) t.update(r, {1, 1});
        for (std::size_t r = 0; r < 10; ++r) (void)t.read(r);
        t.clock();
        if (c.rank() == victim && k == 3) c.stop();
      }
      t.sync();
      what[c.rank()] = "no error";
    } catch (const dml::peer_failure& e) {
      what[c.rank()] = e.what();
      named[c.rank()] = e.rank();
    }
  });
  for (std::size_t m = 0; m < n; ++m) {
    if (m == victim) continue;
    INFO("member " << m << ": " << what[m]);
    CHECK(named[m] == victim);
    CHECK(what[m].find("failure policy is abort") != std::string::npos);
  }
}

TEST_CASE("table faults: members killed at random moments under delays; the survivors' totals are exact",
          "[table][fault]") {
  std::mt19937_64 rng(17);
  for (int run = 0; run < 6; ++run) {
    const std::size_t n = 4 + static_cast<std::size_t>(run % 3);
    std::vector<member_result> results(n);
    inproc::options io;
    io.max_random_delay = std::chrono::microseconds(100);
    io.wait_limit = std::chrono::seconds(60);
    // One or two members die between 2 and 40 ms after the start.
    const std::size_t kills = 1 + static_cast<std::size_t>(run % 2);
    for (std::size_t k = 0; k < kills; ++k)
      io.kill_at.emplace_back(1 + k * 2,
                              std::chrono::steady_clock::now() + std::chrono::milliseconds(2 + rng() % 38));
    const bool record = run % 2 == 0;
    if (run < 3)
      run_with_a_death<dml::consistency::bsp>(n, n, 0, 12, dml::table_options{}, record, results, io);
    else
      run_with_a_death<dml::consistency::ssp<2>>(n, n, 0, 12, dml::table_options{}, record, results, io);
    INFO("run " << run << ", n = " << n << ", " << kills << " kill(s)");
    CHECK(check_finished(results).size() >= n - kills);
  }
}

// keep_through_sync: every member syncs every third clock; members die at
// random clocks, before, inside or after their updates. After the survivors' last sync each row must hold all
// of every survivor's updates and, for each failed member, exactly its
// updates up to one of the syncs it took part in (all its updates of
// clocks 0..k-1 for a k that is a multiple of 3, the same k in every row):
// nothing of a completed sync is lost and nothing is counted twice.
TEST_CASE("table faults: keep_through_sync keeps a failed member's updates up to a sync, exactly",
          "[table][fault]") {
  std::mt19937_64 rng(23);
  int kept_some = 0;  // failed members that had completed a sync
  for (int run = 0; run < 8; ++run) {
    const std::size_t n = 3 + static_cast<std::size_t>(run % 4);
    const int rounds = 15;
    std::vector<member_result> results(n);
    std::vector<std::vector<std::int64_t>> kept(n);    // per survivor: the k it found for each member
    std::vector<std::atomic<std::int64_t>> synced(n);  // per member: clocks through its last completed sync
    std::mutex mutex;
    inproc::options io;
    io.max_random_delay = std::chrono::microseconds(run % 2 == 0 ? 0 : 100);
    io.wait_limit = std::chrono::seconds(60);
    // Members 1 (and 2) stop, as if their process died, at a random clock:
    // before its updates, halfway through them, or after its clock() or
    // sync() returned.
    const std::size_t kills = 1 + static_cast<std::size_t>(run % 2);
    std::vector<std::uint64_t> die_clock(n, rounds + 1);
    std::vector<int> die_phase(n, 0);
    for (std::size_t k = 0; k < kills; ++k) {
      die_clock[1 + k] = 1 + rng() % (rounds - 2);
      die_phase[1 + k] = static_cast<int>(rng() % 3);
    }
    dml::table_options opts;
    opts.keep_through_sync = true;
    const bool record = run % 3 == 0;
    inproc::run(
        n,
        [&](auto& c) {
          auto& res = results[c.rank()];
          const std::size_t rows = 2 * n + 3, len = n + 2, me = c.rank();
          auto t = dml::make_table<double>(c, rows, len, dml::consistency::ssp<1>{}, opts);
          std::vector<double> delta(len, 0.0);
          delta[me] = 1;
          delta[n] = 1;
          delta[n + 1] = 2;
          auto work = [&](std::uint64_t clock) {
            if (clock == die_clock[me] && die_phase[me] == 0) c.stop();
            for (std::size_t r = 0; r < rows; ++r) {
              if (clock == die_clock[me] && die_phase[me] == 1 && r == rows / 2) c.stop();
              for (int k = 0; k < f(me, r, clock); ++k) t.update(r, delta);
            }
            for (std::size_t r = 0; r < rows; ++r) (void)t.read(r);
          };
          if (record) {
            t.begin_recording(dml::recording::real_iteration);
            work(0);
            t.clock();
            t.end_recording();
          }
          const std::uint64_t first = record ? 1 : 0;
          for (std::uint64_t clock = first; clock < rounds; ++clock) {
            work(clock);
            if ((clock + 1) % 3 == 0) {
              t.sync();
              synced[me] = static_cast<std::int64_t>(clock + 1);
            } else {
              t.clock();
            }
            if (clock == die_clock[me] && die_phase[me] == 2) c.stop();
          }
          t.sync();
          const auto& live = c.view().live;
          std::vector<std::int64_t> mine(n, -2);
          for (std::size_t q = 0; q < n; ++q) {
            const bool alive = std::find(live.begin(), live.end(), q) != live.end();
            // The k with v[q] == total(q, r, 0, k) in every row (-1: none).
            std::int64_t found = -1;
            for (std::int64_t k = alive ? rounds : 0; k <= rounds; k += alive ? 1 : 3) {
              bool all_rows = true;
              for (std::size_t r = 0; r < rows && all_rows; ++r)
                all_rows = t.read(r)[q] == static_cast<double>(total(q, r, 0, static_cast<std::uint64_t>(k)));
              if (all_rows) {
                found = k;
                break;
              }
            }
            if (found < 0) res.fail("member " + std::to_string(q) + "'s updates match no sync");
            mine[q] = found;
          }
          for (std::size_t r = 0; r < rows; ++r) {
            const auto v = t.read(r);
            double all = 0;
            for (std::size_t q = 0; q < n; ++q) all += v[q];
            if (v[n] != all || v[n + 1] != 2 * all) res.fail("after sync: sums of row " + std::to_string(r));
          }
          {
            std::lock_guard lock(mutex);
            kept[me] = mine;
          }
          res.lost = t.stats().lost_updates;
          res.live = live;
          t.sync();
          res.finished = true;
        },
        io);
    INFO("run " << run << ", n = " << n << ", " << kills << " kill(s)");
    const auto finished = check_finished(results);
    CHECK(finished.size() >= n - kills);
    const std::vector<std::int64_t>* agreed = finished.empty() ? nullptr : &kept[finished[0]];
    for (std::size_t m : finished) CHECK(kept[m] == *agreed);  // every survivor sees the same table
    // A failed member's updates are kept through the last sync it completed
    // (the others completed it too), and through no later one but the sync
    // it may have died in.
    for (std::size_t q = 0; q < n && agreed != nullptr; ++q) {
      if (results[q].finished) continue;
      INFO("failed member " << q << " completed syncs through clock " << synced[q].load() << ", kept through "
                            << (*agreed)[q]);
      CHECK((*agreed)[q] >= synced[q].load());
      CHECK((*agreed)[q] <= synced[q].load() + 3);
      if (synced[q].load() > 0) ++kept_some;
    }
  }
  CHECK(kept_some >= 3);  // the kills fall after some syncs, not only before the first
}

TEST_CASE("table faults: a dead owner of placed rows; a second failure later", "[table][fault]") {
  constexpr std::size_t n = 5;
  std::vector<member_result> results(n);
  inproc::run(n, [&](auto& c) {
    auto& res = results[c.rank()];
    auto t = dml::make_table<double>(c, 30, 1, dml::consistency::ssp<1>{});
    auto iteration = [&](std::uint64_t clock) {
      for (std::size_t r = c.rank(); r < 30; r += n) {
        t.update(r, {1.0});
        t.update((r + 1) % 30, {1.0});
      }
      for (std::size_t r = 0; r < 30; ++r) (void)t.read(r);
      t.clock();
      if ((c.rank() == 1 && clock == 2) || (c.rank() == 3 && clock == 5)) c.stop();
    };
    t.begin_recording(dml::recording::virtual_iteration);
    iteration(99);
    t.end_recording();
    for (std::uint64_t k = 0; k < 8; ++k) iteration(k);
    t.sync();
    // Each survivor made 2 updates a clock to rows r and r + 1 of its own
    // residue class; the dead members' updates are gone.
    for (std::size_t r = 0; r < 30; ++r) {
      double want = 0;
      for (dml::member_id q : c.view().live) {
        if (r % n == q) want += 8;
        if ((r + n - 1) % 30 % n == q) want += 8;
      }
      if (t.read(r)[0] != want) res.fail("row " + std::to_string(r) + ": " + std::to_string(t.read(r)[0]));
    }
    res.epoch = c.view().epoch;
    res.rebuilds = t.stats().rebuilds;
    t.sync();
    res.finished = true;
  });
  for (std::size_t m : {0u, 2u, 4u}) {
    INFO("member " << m << ": " << results[m].first);
    CHECK(results[m].finished);
    CHECK(results[m].wrong == 0);
    CHECK(results[m].epoch == 2);
    CHECK(results[m].rebuilds == 2);
  }
}

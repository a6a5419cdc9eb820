// SPDX-License-Identifier: BSL-1.0
// Parameter tables beyond the laws: bad input, what each specialization does
// (counted, never timed), element types, large rows in small rings, moves,
// and tables next to vectors.
#include <dml/dml.hpp>
#include <dml/table.hpp>

#include "support/catch.hpp"

#include <atomic>
#include <cmath>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace inproc = dml::comm::inproc;

namespace {

// Every member's error message of one run (empty: no error).
struct errors {
  std::mutex mutex;
  std::vector<std::string> what;
  explicit errors(std::size_t n) : what(n) {}
  void set(std::size_t m, const std::string& w) {
    std::lock_guard lock(mutex);
    what[m] = w;
  }
};

template <class Fn>
std::vector<std::string> config_errors(std::size_t n, Fn&& fn) {
  errors e(n);
  inproc::run(n, [&](auto& c) {
    try {
      fn(c);
    } catch (const dml::config_error& x) {
      e.set(c.rank(), x.what());
    }
  });
  return e.what;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("table: a row out of range or a delta of the wrong length is a config_error naming it", "[table]") {
  inproc::run(2, [](auto& c) {
    auto t = dml::make_table<float>(c, 5, 3);
    const std::vector<float> ok(3, 1.0f), short_delta(2, 1.0f);
    try {
      (void)t.read(5);
      FAIL("no error");
    } catch (const dml::config_error& e) {
      CHECK(contains(e.what(), "row 5 is out of range (the table has 5 rows)"));
    }
    CHECK_THROWS_AS(t.update(7, ok), dml::config_error);
    CHECK_THROWS_AS((void)t.age(5), dml::config_error);
    CHECK_THROWS_AS((void)t.owner(9), dml::config_error);
    try {
      t.update(1, short_delta);
      FAIL("no error");
    } catch (const dml::config_error& e) {
      CHECK(contains(e.what(), "the delta has 2 elements; the rows have 3"));
    }
    // Nothing was applied by the failed calls.
    t.update(1, ok);
    t.sync();
    CHECK(t.read(1)[0] == 2.0f);
  });
}

TEST_CASE("table: members that disagree on shape, type, policy or options all get config_error", "[table]") {
  SECTION("rows") {
    const auto what =
        config_errors(3, [](auto& c) { auto t = dml::make_table<float>(c, c.rank() == 1 ? 9 : 8, 4); });
    for (const auto& w : what) CHECK(contains(w, "members disagree on the table"));
    CHECK(contains(what[0], "rows=9"));
  }
  SECTION("row length") {
    const auto what = config_errors(2, [](auto& c) { auto t = dml::make_table<float>(c, 8, 4 + c.rank()); });
    for (const auto& w : what) CHECK(contains(w, "row_length="));
  }
  SECTION("element type") {
    const auto what = config_errors(2, [](auto& c) {
      if (c.rank() == 0) {
        auto t = dml::make_table<float>(c, 8, 4);
      } else {
        auto t = dml::make_table<double>(c, 8, 4);
      }
    });
    for (const auto& w : what) CHECK(contains(w, "element="));
  }
  SECTION("policy") {
    const auto what = config_errors(2, [](auto& c) {
      if (c.rank() == 0) {
        auto t = dml::make_table<float>(c, 8, 4, dml::consistency::ssp<1>{});
      } else {
        auto t = dml::make_table<float>(c, 8, 4, dml::consistency::ssp<2>{});
      }
    });
    for (const auto& w : what) CHECK(contains(w, "consistency=ssp<"));
  }
  SECTION("options") {
    const auto what = config_errors(2, [](auto& c) {
      dml::table_options o;
      o.prefetch = c.rank() == 0;
      auto t = dml::make_table<float>(c, 8, 4, o);
    });
    for (const auto& w : what) CHECK(contains(w, "prefetch="));
  }
  SECTION("zero sizes") {
    for (const auto& w : config_errors(3, [](auto& c) { auto t = dml::make_table<float>(c, 0, 4); }))
      CHECK(contains(w, "0 rows"));
    for (const auto& w : config_errors(3, [](auto& c) { auto t = dml::make_table<float>(c, 4, 0); }))
      CHECK(contains(w, "row length 0"));
  }
  SECTION("one member's bad size is named to all") {
    const auto what =
        config_errors(3, [](auto& c) { auto t = dml::make_table<float>(c, c.rank() == 2 ? 0 : 4, 4); });
    for (const auto& w : what) CHECK(contains(w, "member 2 rejected the table: dml::make_table: 0 rows"));
  }
}

TEST_CASE("table: recording misuse is a config_error", "[table]") {
  inproc::run(2, [](auto& c) {
    auto t = dml::make_table<double>(c, 4, 2);
    CHECK_THROWS_AS(t.end_recording(), dml::config_error);
    t.begin_recording(dml::recording::virtual_iteration);
    CHECK_THROWS_AS(t.begin_recording(dml::recording::real_iteration), dml::config_error);
    CHECK_THROWS_AS(t.sync(), dml::config_error);
    CHECK(t.recording_now());
    t.end_recording();
    CHECK_FALSE(t.recording_now());
    CHECK(t.specialized());
  });
}

TEST_CASE("table: a virtual iteration reads zeros and changes nothing", "[table]") {
  inproc::run(3, [](auto& c) {
    auto t = dml::make_table<double>(c, 6, 2);
    t.update(c.rank(), {1.0, 1.0});
    t.clock();
    t.begin_recording(dml::recording::virtual_iteration);
    for (std::size_t r = 0; r < 6; ++r) {
      for (double x : t.read(r)) CHECK(x == 0.0);
      t.update(r, {100.0, 100.0});
    }
    t.clock();
    t.end_recording();
    CHECK(t.current_clock() == 1);
    CHECK(t.stats().updates == 1);
    t.sync();
    for (std::size_t r = 0; r < 6; ++r) CHECK(t.read(r)[0] == (r < 3 ? 1.0 : 0.0));
  });
}

TEST_CASE("table: reads see the caller's own updates at once, before any clock", "[table]") {
  // Under asp a read may also bring other members' updates (a member that
  // reached sync() has sent its own), so a second read shows at least the
  // caller's second update, and every update whole: each is (1, 2, 3), so a
  // row always holds k x (1, 2, 3).
  std::atomic<int> missing_own{0}, torn{0}, wrong_total{0};
  inproc::run(4, [&](auto& c) {
    auto t = dml::make_table<float>(c, 9, 3, dml::consistency::asp{});
    for (std::size_t r = 0; r < 9; ++r) {
      t.update(r, {1.0f, 2.0f, 3.0f});
      const std::vector<float> v(t.read(r).begin(), t.read(r).end());  // a span lives until the next call
      if (v[0] < 1.0f) ++missing_own;
      t.update(r, {1.0f, 2.0f, 3.0f});
      const auto w = t.read(r);
      if (w[0] - v[0] < 1.0f || w[1] - v[1] < 2.0f || w[2] - v[2] < 3.0f) ++missing_own;
      if (w[1] != 2.0f * w[0] || w[2] != 3.0f * w[0]) ++torn;
    }
    t.sync();
    for (std::size_t r = 0; r < 9; ++r)
      if (t.read(r)[2] != 24.0f) ++wrong_total;
  });
  CHECK(missing_own == 0);
  CHECK(torn == 0);
  CHECK(wrong_total == 0);
}

TEST_CASE("table: placement puts every row on a member that uses it", "[table]") {
  constexpr std::size_t n = 4, rows = 40;
  std::atomic<int> misplaced{0}, moved_reads{0};
  inproc::run(n, [&](auto& c) {
    auto t = dml::make_table<double>(c, rows, 2, dml::consistency::bsp{});
    // Member m uses rows r with r mod n == (m + 1) mod n (none of its cyclic rows).
    auto mine = [&](std::size_t r) { return r % n == (c.rank() + 1) % n; };
    auto iteration = [&] {
      for (std::size_t r = 0; r < rows; ++r)
        if (mine(r)) {
          t.update(r, {1.0, 0.0});
          (void)t.read(r);
        }
      t.clock();
    };
    t.begin_recording(dml::recording::virtual_iteration);
    iteration();
    t.end_recording();
    for (std::size_t r = 0; r < rows; ++r)
      if (mine(r) && t.owner(r) != c.rank()) misplaced.fetch_add(1);
    const auto before = t.stats().own_reads;
    for (int k = 0; k < 3; ++k) iteration();
    if (t.stats().own_reads - before != 3 * rows / n) moved_reads.fetch_add(1);
    t.sync();
    for (std::size_t r = 0; r < rows; ++r) CHECK(t.read(r)[0] == 3.0);
    CHECK(t.stats().migrations == 1);
  });
  CHECK(misplaced.load() == 0);
  CHECK(moved_reads.load() == 0);
}

TEST_CASE("table: rows move with their values when placed after real updates", "[table]") {
  inproc::run(3, [](auto& c) {
    auto t = dml::make_table<std::int64_t>(c, 12, 1, dml::consistency::ssp<1>{});
    for (std::size_t r = 0; r < 12; ++r) t.update(r, {static_cast<std::int64_t>(r * 10 + c.rank())});
    t.clock();
    t.begin_recording(dml::recording::real_iteration);
    for (std::size_t r = c.rank(); r < 12; r += 3) {
      t.update(r, {1});
      (void)t.read((r + 1) % 12);
    }
    t.clock();
    t.end_recording();
    t.sync();
    for (std::size_t r = 0; r < 12; ++r) CHECK(t.read(r)[0] == static_cast<std::int64_t>(30 * r + 3 + 1));
  });
}

// Counted in fetches, not gets: a fetch that waits for an owner polls it,
// so the number of gets depends on the machine's load (CI saw 2.5x).
TEST_CASE("table: prefetch fetches a clock's rows in fewer fetches", "[table]") {
  std::atomic<int> short_of_rows{0};  // checked outside the members' threads (Catch is not thread safe)
  auto fetches = [&](bool prefetch) {
    std::atomic<std::uint64_t> total{0};
    inproc::run(3, [&](auto& c) {
      dml::table_options o;
      o.prefetch = prefetch;
      o.place_rows = false;
      auto t = dml::make_table<float>(c, 60, 4, o);
      auto iteration = [&] {
        for (std::size_t r = 0; r < 60; ++r) (void)t.read(r);
        t.update(c.rank(), {1, 1, 1, 1});
        t.clock();
      };
      t.begin_recording(dml::recording::virtual_iteration);
      iteration();
      t.end_recording();
      const auto before = t.stats().fetches;
      for (int k = 0; k < 4; ++k) iteration();
      total += t.stats().fetches - before;
      if (t.stats().rows_fetched < 4 * 40)
        ++short_of_rows;  // every clock refreshes every row of others (bsp)
      t.sync();
    });
    return total.load();
  };
  const auto with = fetches(true), without = fetches(false);
  INFO("fetches with prefetch " << with << ", without " << without);
  CHECK(short_of_rows.load() == 0);
  CHECK(3 * with < without);
}

TEST_CASE("table: a static cache keeps the most read rows; LRU evicts", "[table]") {
  inproc::run(2, [](auto& c) {
    for (bool fixed : {true, false}) {
      dml::table_options o;
      o.static_cache = fixed;
      o.place_rows = false;
      o.prefetch = false;
      o.cache_rows = 3;
      auto t = dml::make_table<double>(c, 20, 1, dml::consistency::ssp<50>{}, o);
      // Rows of the other member (cyclic: odd rows for member 0), read 5, 4,
      // 3, 2, 1 times a clock, and one round of all of them.
      auto iteration = [&] {
        for (int k = 5; k >= 1; --k)
          for (std::size_t j = 0; j < static_cast<std::size_t>(k); ++j) (void)t.read(2 * j + 1 - c.rank());
        t.clock();
      };
      t.begin_recording(dml::recording::virtual_iteration);
      iteration();
      t.end_recording();
      for (int k = 0; k < 3; ++k) iteration();
      if (fixed) {
        CHECK(t.stats().evictions == 0);
        // The 3 most read rows are fetched once (slack 50) and hit after.
        CHECK(t.stats().rows_fetched == 3 + 3 * (2 + 1));
      } else {
        CHECK(t.stats().evictions > 0);
      }
      t.sync();
    }
  });
}

TEST_CASE("table: batches send one message per owner and clock; per-row messages one per row", "[table]") {
  inproc::run(3, [](auto& c) {
    for (bool batches : {true, false}) {
      dml::table_options o;
      o.batch_updates = batches;
      auto t = dml::make_table<float>(c, 30, 2, o);
      for (int k = 0; k < 4; ++k) {
        for (std::size_t r = 0; r < 30; ++r) t.update(r, {1, 1});
        t.clock();
      }
      // Two other owners, 10 rows each, 4 clocks.
      if (batches)
        CHECK(t.stats().messages_sent == 4 * 2);
      else
        CHECK(t.stats().messages_sent == 4 * 2 * (10 + 1));
      t.sync();
      CHECK(t.read(7)[1] == 12.0f);
    }
  });
}

TEST_CASE("table: rows larger than the rings are split, skip words wrap them, totals exact", "[table]") {
  inproc::options opts;
  opts.max_random_delay = std::chrono::microseconds(50);
  inproc::run(
      3,
      [](auto& c) {
        dml::table_options o;
        o.ring_words = 16;  // raised to two messages of one row
        auto t = dml::make_table<float>(c, 7, 1001, dml::consistency::ssp<2>{}, o);
        std::vector<float> delta(1001);
        for (std::size_t e = 0; e < delta.size(); ++e) delta[e] = static_cast<float>(e % 7);
        for (int k = 0; k < 5; ++k) {
          for (std::size_t r = 0; r < 7; ++r) t.update(r, delta);
          for (std::size_t r = 0; r < 7; ++r) {
            const auto v = t.read(r);
            // Updates arrive whole: every element is the same multiple of its delta.
            const float times = v[1];
            for (std::size_t e = 0; e < v.size(); e += 97) CHECK(v[e] == times * static_cast<float>(e % 7));
          }
          t.clock();
        }
        t.sync();
        for (std::size_t r = 0; r < 7; ++r) {
          const auto v = t.read(r);
          for (std::size_t e = 0; e < v.size(); ++e) REQUIRE(v[e] == 15.0f * static_cast<float>(e % 7));
        }
      },
      opts);
}

TEST_CASE("table: int32, int64 and double rows accumulate negative deltas exactly", "[table]") {
  inproc::run(4, [](auto& c) {
    auto a = dml::make_table<std::int32_t>(c, 5, 3, dml::consistency::asp{});
    auto b = dml::make_table<std::int64_t>(c, 5, 1);
    auto d = dml::make_table<double>(c, 5, 2, dml::consistency::ssp<1>{});
    for (int k = 0; k < 6; ++k) {
      for (std::size_t r = 0; r < 5; ++r) {
        a.update(r, {1, -1, static_cast<std::int32_t>(c.rank())});
        b.update(r, {std::int64_t{1} << 40});
        d.update(r, {-0.5, 0.25});
      }
      a.clock();
      b.clock();
      d.clock();
    }
    a.sync();
    b.sync();
    d.sync();
    for (std::size_t r = 0; r < 5; ++r) {
      CHECK(a.read(r)[1] == -24);
      CHECK(a.read(r)[2] == 6 * (0 + 1 + 2 + 3));
      CHECK(b.read(r)[0] == 24 * (std::int64_t{1} << 40));
      CHECK(d.read(r)[0] == -12.0);
    }
  });
}

TEST_CASE("table: a moved table keeps working, next to vectors in the same context", "[table]") {
  inproc::run(3, [](auto& c) {
    auto first = dml::make_table<float>(c, 6, 2);
    auto v = dml::make_vector<float>(c, 4);
    auto t = std::move(first);
    auto u = dml::make_table<float>(c, 3, 1, dml::consistency::asp{});
    u = dml::make_table<float>(c, 3, 1, dml::consistency::asp{});  // move assignment
    for (int k = 0; k < 3; ++k) {
      t.update(1, {1, 2});
      u.update(2, {1});
      t.clock();
      u.clock();
      v.span()[0] = 1;
      v.scatter();
      v.gather();
    }
    t.sync();
    u.sync();
    CHECK(t.read(1)[1] == 18.0f);
    CHECK(u.read(2)[0] == 9.0f);
  });
}

TEST_CASE("table: age is -1 without a copy, then the newest complete clock", "[table]") {
  inproc::run(2, [](auto& c) {
    auto t = dml::make_table<float>(c, 4, 1, dml::consistency::bsp{});
    const std::size_t other = c.rank() == 0 ? 1 : 0;  // a row of the other member (cyclic)
    const std::size_t own = c.rank();
    CHECK(t.age(other) == -1);
    CHECK(t.age(own) == -1);
    for (int k = 0; k < 3; ++k) {
      (void)t.read(other);
      CHECK(t.age(other) >= k - 1);
      t.clock();
    }
    t.sync();
    (void)t.read(other);
    CHECK(t.age(other) == 3);
    CHECK(t.age(own) == 3);
  });
}

// SPDX-License-Identifier: BSL-1.0
// The in-process transport on its own: collectives, one-sided operations,
// failure propagation and fault injection.
#include <dml/comm/inproc.hpp>

#include "support/catch.hpp"

#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <vector>

namespace inproc = dml::comm::inproc;

static_assert(dml::comm::transport<inproc::context>);
static_assert(dml::comm::segment<inproc::segment>);

namespace {
std::string message_of(const std::exception& e) { return e.what(); }
}  // namespace

TEST_CASE("run starts n ranks with distinct ids and the right size") {
  for (std::size_t n : {1u, 2u, 3u, 7u}) {
    std::vector<std::atomic<int>> seen(n);
    inproc::run(n, [&](inproc::context& c) {
      REQUIRE(c.size() == n);
      seen[c.rank()].fetch_add(1);
      REQUIRE(c.view().live.size() == n);
    });
    for (auto& s : seen) REQUIRE(s.load() == 1);
  }
}

TEST_CASE("run with no members is a config_error") {
  REQUIRE_THROWS_AS(inproc::run(0, [](inproc::context&) {}), dml::config_error);
}

TEST_CASE("exchange returns every member's record in member order") {
  inproc::run(5, [](inproc::context& c) {
    for (int round = 0; round < 20; ++round) {
      const std::string mine = std::to_string(c.rank() * 100 + round);
      const auto all = c.exchange(std::as_bytes(std::span(mine.data(), mine.size())));
      REQUIRE(all.size() == 5);
      for (std::size_t m = 0; m < 5; ++m) {
        const std::string got(reinterpret_cast<const char*>(all[m].data()), all[m].size());
        REQUIRE(got == std::to_string(m * 100 + round));
      }
    }
  });
}

TEST_CASE("barrier: nobody passes before everyone arrived") {
  std::atomic<int> arrived{0};
  std::atomic<int> early{0};
  inproc::run(4, [&](inproc::context& c) {
    for (int round = 1; round <= 10; ++round) {
      arrived.fetch_add(1);
      c.barrier();
      if (arrived.load() < 4 * round) early.fetch_add(1);
      c.barrier();
    }
  });
  REQUIRE(early.load() == 0);
}

TEST_CASE("segments: put, read, fetch_add across members") {
  inproc::run(3, [](inproc::context& c) {
    const auto me = c.rank();
    auto seg = c.create_segment(4 + me, 2);  // sizes may differ per member
    REQUIRE(seg.words(2) == 6);
    const auto next = (me + 1) % 3;
    const std::uint64_t value = 0x1111 * (me + 1);
    seg.put(next, 1, std::as_bytes(std::span(&value, 1)));
    const char tail[3] = {'a', 'b', 'c'};  // partial word is zero padded
    seg.put(next, 2, std::as_bytes(std::span(tail)));
    seg.flush(next);
    (void)seg.fetch_add(next, 1, 5);
    c.barrier();
    const auto prev = (me + 2) % 3;
    REQUIRE(seg.load(1) == 0x1111 * (prev + 1));
    char back[8];
    seg.read(2, std::as_writable_bytes(std::span(back)));
    REQUIRE(std::string(back, 3) == "abc");
    REQUIRE(back[3] == 0);
    REQUIRE(seg.load_control(1) == 5);
    REQUIRE(seg.load_control(0) == 0);
  });
}

TEST_CASE(
    "segments: put_exclusive writes what put writes, zero pads, checks ranges, loses writes to the dead") {
  inproc::run(3, [](inproc::context& c) {
    const auto me = c.rank();
    auto seg = c.create_segment(40, 1);
    const auto next = (me + 1) % 3;
    // a long run (vectorized copy) followed by a partial word, over stale words
    std::vector<std::uint64_t> stale(40, ~std::uint64_t{0});
    seg.put(next, 0, std::as_bytes(std::span(stale)));
    c.barrier();
    std::vector<float> values(37);  // 18.5 words
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(100 * me + i);
    seg.put_exclusive(next, 1, std::as_bytes(std::span(values)));
    c.barrier();  // orders the plain stores before the reads
    const auto prev = (me + 2) % 3;
    std::vector<float> back(37);
    seg.read(1, std::as_writable_bytes(std::span(back)));
    for (std::size_t i = 0; i < back.size(); ++i) REQUIRE(back[i] == static_cast<float>(100 * prev + i));
    REQUIRE(seg.load(0) == ~std::uint64_t{0});   // before the range: untouched
    REQUIRE((seg.load(19) >> 32) == 0);          // the partial last word's other half is zero
    REQUIRE(seg.load(20) == ~std::uint64_t{0});  // after the range: untouched
    REQUIRE_THROWS_AS(seg.put_exclusive(next, 39, std::as_bytes(std::span(values))), dml::comm_error);
    c.barrier();
    if (me == 2) c.stop();
    if (me == 1) {
      while (c.alive(2)) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      seg.put_exclusive(2, 0, std::as_bytes(std::span(values)));  // lost, as a put to a dead host
      REQUIRE_THROWS_AS(seg.flush(2), dml::peer_failure);
    }
  });
}

TEST_CASE("segments: get reads a peer's words, sees this member's earlier puts, fails on a dead peer") {
  std::atomic<int> wrong{0};
  inproc::run(4, [&](inproc::context& c) {
    const auto me = c.rank();
    const auto n = c.size();
    auto seg = c.create_segment(5 + me, 1);
    // Every member fills its own words (through a put to itself).
    std::vector<std::uint64_t> mine(5 + me);
    for (std::size_t w = 0; w < mine.size(); ++w) mine[w] = 1000 * (me + 1) + w;
    seg.put(me, 0, std::as_bytes(std::span(mine)));
    c.barrier();
    for (dml::member_id m = 0; m < n; ++m) {
      std::vector<std::uint64_t> got(5 + m);
      seg.get(m, 0, std::as_writable_bytes(std::span(got)));
      for (std::size_t w = 0; w < got.size(); ++w)
        if (got[w] != 1000 * (m + 1) + w) wrong.fetch_add(1);
      // A partial last word: only the bytes asked for are written.
      char three[3] = {'x', 'y', 'z'};
      seg.get(m, 1, std::as_writable_bytes(std::span(three)));
      std::uint64_t expect = 1000 * (m + 1) + 1;
      if (std::memcmp(three, &expect, 3) != 0) wrong.fetch_add(1);
    }
    c.barrier();
    // A get after this member's own put to a peer sees it (one writer per word).
    const auto next = (me + 1) % n;
    const std::uint64_t v = 77 + me;
    seg.put(next, 4, std::as_bytes(std::span(&v, 1)));
    std::uint64_t back = 0;
    seg.get(next, 4, std::as_writable_bytes(std::span(&back, 1)));
    if (back != v) wrong.fetch_add(1);
    // Out of range: an error, never a read past the end.
    std::uint64_t two[2];
    REQUIRE_THROWS_AS(seg.get(next, 4 + next, std::as_writable_bytes(std::span(two))), dml::comm_error);
    c.barrier();
    if (me == 3) c.stop();
    if (me == 0) {
      while (c.alive(3)) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      REQUIRE_THROWS_AS(seg.get(3, 0, std::as_writable_bytes(std::span(&back, 1))), dml::peer_failure);
    }
  });
  REQUIRE(wrong.load() == 0);
}

TEST_CASE("segments: out-of-range access is a comm_error, not a write past the end") {
  inproc::run(2, [](inproc::context& c) {
    auto seg = c.create_segment(2, 1);
    const std::uint64_t v[2] = {1, 2};
    REQUIRE_THROWS_AS(seg.put(1 - c.rank(), 1, std::as_bytes(std::span(v))), dml::comm_error);
    REQUIRE_THROWS_AS(seg.fetch_add(1 - c.rank(), 3, 1), dml::comm_error);
    c.barrier();
  });
}

TEST_CASE("segments: a word offset near the top of size_t is out of range, not wrapped around") {
  // word + length overflowed size_t and passed the range check: the read
  // went before the segment's memory instead of throwing.
  inproc::run(2, [](inproc::context& c) {
    auto seg = c.create_segment(2, 1);
    const std::size_t top = std::numeric_limits<std::size_t>::max();
    std::array<std::byte, 16> out{};
    REQUIRE_THROWS_WITH(seg.read(top, out), dml_test::contains("access of 16 bytes at word"));
    REQUIRE_THROWS_AS(seg.load(top), dml::comm_error);
    REQUIRE_THROWS_AS(seg.view(top, 1), dml::comm_error);
    REQUIRE_THROWS_AS(seg.get(1 - c.rank(), top, out), dml::comm_error);
    c.barrier();
  });
}

TEST_CASE("segments: a default-constructed segment is a comm_error, not a null dereference") {
  // As in mpi_rma, mpi and verbs: the inproc handle dereferenced a null context.
  inproc::segment seg;
  const std::uint64_t v = 1;
  std::array<std::byte, 8> out{};
  const auto empty = dml_test::contains("dml::comm::inproc: use of an empty (moved-from) segment");
  REQUIRE_THROWS_WITH(seg.put(0, 0, std::as_bytes(std::span(&v, 1))), empty);
  REQUIRE_THROWS_WITH(seg.get(0, 0, out), empty);
  REQUIRE_THROWS_WITH(seg.flush(0), empty);
  REQUIRE_THROWS_WITH(seg.fetch_add(0, 0, 1), empty);
  REQUIRE_THROWS_WITH(seg.load(0), empty);
  REQUIRE_THROWS_WITH(seg.load_control(0), empty);
  REQUIRE_THROWS_WITH(seg.read(0, out), empty);
  REQUIRE_THROWS_WITH(seg.view(0, 1), empty);
}

TEST_CASE("segments: flush and fetch_add to a member beyond the group name it") {
  // They looked the member's state up past the end of the group's table.
  inproc::run(2, [](inproc::context& c) {
    auto seg = c.create_segment(1, 1);
    try {
      seg.flush(7);
      FAIL("flush to member 7 did not throw");
    } catch (const dml::peer_failure& e) {
      REQUIRE(e.rank() == 7);
      REQUIRE(message_of(e).find("member 7 has no part in this segment") != std::string::npos);
    }
    REQUIRE_THROWS_AS(seg.fetch_add(7, 0, 1), dml::peer_failure);
    c.barrier();
  });
}

TEST_CASE("an exception in one rank is rethrown by run with the rank named") {
  try {
    inproc::run(4, [](inproc::context& c) {
      if (c.rank() == 2) throw dml::config_error("bad thing");
      c.barrier();  // the others would wait for rank 2 forever without failure propagation
    });
    FAIL("run did not throw");
  } catch (const dml::config_error& e) {
    REQUIRE(message_of(e).find("member 2: bad thing") != std::string::npos);
  }
}

TEST_CASE("a rank that returns early makes the others' barrier fail clearly") {
  try {
    inproc::run(3, [](inproc::context& c) {
      if (c.rank() == 0) return;
      c.barrier();
    });
    FAIL("run did not throw");
  } catch (const dml::config_error& e) {
    REQUIRE(message_of(e).find("returned from its function") != std::string::npos);
  }
}

TEST_CASE("stop: the member ends quietly and waiters get peer_failure naming it") {
  std::atomic<int> failures{0};
  inproc::run(3, [&](inproc::context& c) {
    if (c.rank() == 1) c.stop();
    try {
      c.barrier();
    } catch (const dml::peer_failure& e) {
      REQUIRE(e.rank() == 1);
      REQUIRE(message_of(e).find("member 1") != std::string::npos);
      failures.fetch_add(1);
    }
    REQUIRE_FALSE(c.alive(1));
  });
  REQUIRE(failures.load() == 2);
}

TEST_CASE("kill stops another member at its next operation") {
  std::atomic<long> puts_by_victim{0};
  inproc::run(2, [&](inproc::context& c) {
    auto seg = c.create_segment(1, 1);
    if (c.rank() == 0) {
      c.kill(1);
      REQUIRE_THROWS_AS(c.barrier(), dml::peer_failure);
      REQUIRE_THROWS_AS(seg.fetch_add(1, 0, 1), dml::peer_failure);
      REQUIRE_THROWS_AS(seg.flush(1), dml::peer_failure);
    } else {
      for (;;) {  // puts until the kill lands; run() must still return
        const std::uint64_t v = 1;
        seg.put(0, 0, std::as_bytes(std::span(&v, 1)));
        puts_by_victim.fetch_add(1);
      }
    }
  });
}

TEST_CASE("a wait past the limit is a timeout") {
  inproc::options o;
  o.wait_limit = std::chrono::milliseconds(50);
  try {
    inproc::run(
        2,
        [](inproc::context& c) {
          if (c.rank() == 1) std::this_thread::sleep_for(std::chrono::milliseconds(400));
          c.barrier();
        },
        o);
    FAIL("run did not throw");
  } catch (const dml::timeout& e) {
    REQUIRE(message_of(e).find("longer than 50 ms") != std::string::npos);
  } catch (const dml::error& e) {
    FAIL("wrong error: " << e.what());
  }
}

TEST_CASE("slow members are delayed on every operation") {
  inproc::options o;
  o.slow_members = {{1, std::chrono::microseconds(20'000)}};
  std::vector<double> seconds(2);
  inproc::run(
      2,
      [&](inproc::context& c) {
        auto seg = c.create_segment(1, 1);
        const auto start = std::chrono::steady_clock::now();
        const std::uint64_t v = 1;
        for (int i = 0; i < 5; ++i) seg.put(1 - c.rank(), 0, std::as_bytes(std::span(&v, 1)));
        seconds[c.rank()] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      },
      o);
  // Five delayed puts take at least five delays: a lower bound, not a speed claim.
  REQUIRE(seconds[1] >= 0.1);
}

// SPDX-License-Identifier: BSL-1.0
// The transport concept's laws (include/dml/comm/concepts.hpp), written once
// for any model: each law is the body one member runs, collectively, and
// reports what it found in an `outcome`. test/comm/laws.cpp runs them on
// in-process members at several group sizes; test/mpi runs the same bodies
// with one MPI process per member, on mpi_rma and on the two-sided mpi
// transport (and verbs, where a device exists).
#pragma once

#include <dml/comm/concepts.hpp>
#include <dml/comm/get_all.hpp>
#include <dml/error.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <vector>

namespace comm_laws {

// What one member found: the first broken law, and how many.
struct outcome {
  int broken = 0;
  std::string first;
  void check(bool ok, const std::string& what) {
    if (ok) return;
    if (first.empty()) first = what;
    ++broken;
  }
};

inline std::vector<std::byte> pattern(std::size_t bytes, unsigned seed) {
  std::vector<std::byte> p(bytes);
  for (std::size_t i = 0; i < bytes; ++i) p[i] = static_cast<std::byte>((i * 131 + seed * 17 + 1) % 251 + 1);
  return p;
}

// Identity: ids 0..size-1, the view lists every member ascending, every
// member is alive, nobody beyond the group is.
template <class Comm>
void identity(Comm& c, outcome& out) {
  const auto v = c.view();
  out.check(c.rank() < c.size(), "rank() < size()");
  out.check(v.live.size() == c.size(), "view() lists every member");
  out.check(std::is_sorted(v.live.begin(), v.live.end()), "view().live ascends");
  for (dml::member_id m = 0; m < c.size(); ++m) out.check(c.alive(m), "alive(" + std::to_string(m) + ")");
  out.check(!c.alive(c.size()), "alive() is false beyond the group");
  out.check(c.wait_limit().count() > 0, "a positive wait limit");
}

// exchange(): every member's record, of any length (empty ones too),
// indexed like view().live, the same on every member; repeatedly.
template <class Comm>
void exchange(Comm& c, outcome& out) {
  for (int repeat = 0; repeat < 3; ++repeat) {
    const std::vector<std::byte> mine(c.rank() % 3 == 0 ? 0 : c.rank() + 5 + repeat,
                                      static_cast<std::byte>(c.rank() + 1 + repeat));
    const auto all = c.exchange(mine);
    out.check(all.size() == c.size(), "exchange returns one record per member");
    for (dml::member_id m = 0; m < std::min(all.size(), c.size()); ++m) {
      out.check(all[m].size() == (m % 3 == 0 ? 0 : m + 5 + repeat),
                "record " + std::to_string(m) + "'s length");
      for (auto b : all[m])
        out.check(b == static_cast<std::byte>(m + 1 + repeat), "record " + std::to_string(m) + "'s bytes");
    }
  }
}

// barrier(): after it, every put a member flushed before it is visible to
// its target (nobody leaves the barrier before everyone entered).
template <class Comm>
void barrier_orders(Comm& c, outcome& out) {
  const auto n = c.size(), me = c.rank();
  auto s = c.create_segment(n, 1);
  for (int round = 1; round <= 5; ++round) {
    const std::uint64_t stamp = static_cast<std::uint64_t>(round) * 1000 + me;
    for (dml::member_id m = 0; m < n; ++m) s.put(m, me, std::as_bytes(std::span(&stamp, 1)));
    s.flush_all();
    c.barrier();
    s.sync();
    for (dml::member_id m = 0; m < n; ++m)
      out.check(
          s.load(m) == static_cast<std::uint64_t>(round) * 1000 + m,
          "after barrier " + std::to_string(round) + ", member " + std::to_string(m) + "'s put is visible");
    c.barrier();  // nobody overwrites before everyone looked
  }
}

// create_segment(): sizes may differ per member, every member knows every
// other's, data and control words start at zero; puts land at their word,
// a partial last word zero padded, order() keeps puts in order; fetch_add
// returns the previous value; reads, loads and view() see what landed;
// out-of-range access is a comm_error before anything is sent.
template <class Comm>
void segments(Comm& c, outcome& out) {
  const auto n = c.size(), me = c.rank();
  const auto next = (me + 1) % n, prev = (me + n - 1) % n;
  auto s = c.create_segment(4 + me, 2 + me);
  for (dml::member_id m = 0; m < n; ++m) out.check(s.words(m) == 4 + m, "words(" + std::to_string(m) + ")");
  for (std::size_t w = 0; w < s.words(me); ++w) out.check(s.load(w) == 0, "data starts at zero");
  for (std::size_t w = 0; w < 2 + me; ++w) out.check(s.load_control(w) == 0, "control starts at zero");
  c.barrier();  // before anyone writes

  // 16 bytes of 0xff, then 13 bytes over them: the last 3 bytes of the
  // second word must read as zero.
  const std::vector<std::byte> ones(16, std::byte{0xff});
  const auto p = pattern(13, static_cast<unsigned>(me));
  s.put(next, 1, ones);
  s.order(next);
  s.put(next, 1, p);
  s.flush(next);
  // One writer per control word: the old values are deterministic.
  out.check(s.fetch_add(next, 0, me + 1) == 0, "fetch_add returns the previous value (0)");
  out.check(s.fetch_add(next, 0, me + 1) == me + 1, "fetch_add returns the previous value");
  (void)s.fetch_add(0, 1, 1);  // everyone adds to member 0's word 1
  s.flush_all();
  c.barrier();

  s.sync();
  std::array<std::byte, 16> got{};
  s.read(1, got);
  const auto want = pattern(13, static_cast<unsigned>(prev));
  out.check(std::equal(want.begin(), want.end(), got.begin()), "the later put wins, whole");
  for (std::size_t i = 13; i < 16; ++i)
    out.check(got[i] == std::byte{0}, "a partial last word is zero padded");
  const auto view = s.view(1, 2);
  out.check(std::memcmp(view.data(), got.data(), 16) == 0, "view() shows what read() copies");
  out.check(s.load(0) == 0, "words nobody wrote stay zero");
  out.check(s.load_control(0) == 2 * (prev + 1), "both adds of the one writer landed");
  if (me == 0) out.check(s.load_control(1) == n, "every member's add landed");

  // Out of range: an error before anything is sent.
  const std::array<std::byte, 1> one{};
  auto throws = [](auto&& f) {
    try {
      f();
    } catch (const dml::comm_error&) {
      return true;
    }
    return false;
  };
  out.check(throws([&] { s.put(next, s.words(next), one); }),
            "a put past the target's words is a comm_error");
  out.check(throws([&] { s.put(next, 0, std::vector<std::byte>(8 * s.words(next) + 1)); }),
            "a put longer than the target's words is a comm_error");
  out.check(throws([&] { (void)s.fetch_add(next, 2 + next, 1); }),
            "a control word past the target's is a comm_error");
  out.check(throws([&] { s.read(s.words(me) - 1, std::span(got)); }),
            "a read past the own words is a comm_error");
  out.check(throws([&] { (void)s.load(s.words(me)); }), "a load past the own words is a comm_error");
  out.check(throws([&] { (void)s.load_control(2 + me); }),
            "a control load past the own words is a comm_error");
  out.check(throws([&] { (void)s.view(s.words(me), 1); }), "a view past the own words is a comm_error");
  // 8 x this count wraps around to 8 bytes: a check in bytes would pass it.
  out.check(throws([&] { (void)s.view(0, std::numeric_limits<std::size_t>::max() / 8 + 2); }),
            "a view whose size in bytes wraps around is a comm_error");
  c.barrier();
}

// Remote atomics from everyone at once: member 0's counter ends at the sum
// of every add, and each add saw a distinct previous value.
template <class Comm>
void concurrent_atomics(Comm& c, outcome& out) {
  const auto n = c.size(), me = c.rank();
  constexpr int adds = 50;
  auto s = c.create_segment(1, 1);
  c.barrier();
  std::vector<std::uint64_t> seen;
  for (int k = 0; k < adds; ++k) seen.push_back(s.fetch_add(0, 0, 1));
  out.check(
      std::is_sorted(seen.begin(), seen.end()) && std::adjacent_find(seen.begin(), seen.end()) == seen.end(),
      "one member's adds see increasing previous values");
  s.flush_all();
  c.barrier();
  if (me == 0) out.check(s.load_control(0) == n * adds, "every add landed exactly once");
  c.barrier();
}

// A put larger than any eager limit, with a partial last word.
template <class Comm>
void large_puts(Comm& c, outcome& out) {
  const auto n = c.size(), me = c.rank();
  const auto next = (me + 1) % n, prev = (me + n - 1) % n;
  constexpr std::size_t words = 40'000;
  auto s = c.create_segment(words, 1);
  const auto p = pattern(8 * words - 3, static_cast<unsigned>(me));
  s.put(next, 0, p);
  s.flush(next);
  c.barrier();
  std::vector<std::byte> got(8 * words);
  s.sync();
  s.read(0, got);
  const auto want = pattern(8 * words - 3, static_cast<unsigned>(prev));
  out.check(std::equal(want.begin(), want.end(), got.begin()), "a large put lands whole");
  out.check(got[8 * words - 1] == std::byte{0}, "a large put's partial last word is zero padded");
  c.barrier();
}

// get(): reads any member's words, a partial last word too, and sees this
// member's own earlier puts to that member without a flush in between;
// out-of-range reads are a comm_error.
template <class Comm>
void gets(Comm& c, outcome& out) {
  const auto n = c.size(), me = c.rank();
  const auto next = (me + 1) % n;
  {
    auto s = c.create_segment(6 + me, 1);
    std::vector<std::uint64_t> mine(6 + me);
    for (std::size_t w = 0; w < mine.size(); ++w) mine[w] = 1000 * (me + 1) + w;
    s.put(me, 0, std::as_bytes(std::span(mine)));
    s.flush(me);
    c.barrier();
    for (dml::member_id m = 0; m < n; ++m) {
      std::vector<std::uint64_t> got(6 + m);
      s.get(m, 0, std::as_writable_bytes(std::span(got)));
      for (std::size_t w = 0; w < got.size(); ++w)
        out.check(got[w] == 1000 * (m + 1) + w, "get() of member " + std::to_string(m) + "'s words");
      std::array<char, 5> five{};
      s.get(m, 2, std::as_writable_bytes(std::span(five)));
      const std::uint64_t expect = 1000 * (m + 1) + 2;
      out.check(std::memcmp(five.data(), &expect, 5) == 0, "get() of a partial word");
    }
    // get_all: several ranges (a partial word, an empty one, overlapping
    // ones) read as the gets of each range would read them.
    for (dml::member_id m = 0; m < n; ++m) {
      std::array<std::uint64_t, 2> first{};
      std::array<char, 13> partial{};
      std::uint64_t last = 0, again = 0;
      const std::array<dml::comm::get_range, 5> ranges{{
          {0, std::as_writable_bytes(std::span(first))},
          {1, std::as_writable_bytes(std::span(partial))},
          {3, {}},
          {5 + m, std::as_writable_bytes(std::span(&last, 1))},
          {0, std::as_writable_bytes(std::span(&again, 1))},
      }};
      dml::comm::get_all(s, m, std::span(ranges));
      const std::uint64_t base = 1000 * (m + 1);
      std::array<std::uint64_t, 2> w12{base + 1, base + 2};
      out.check(first[0] == base && first[1] == base + 1 && last == base + 5 + m && again == base &&
                    std::memcmp(partial.data(), w12.data(), partial.size()) == 0,
                "get_all() of member " + std::to_string(m) + "'s words reads each range as get() would");
    }
    {
      std::uint64_t a = 0, b = 0;
      const std::array<dml::comm::get_range, 2> bad{{
          {0, std::as_writable_bytes(std::span(&a, 1))},
          {6 + next, std::as_writable_bytes(std::span(&b, 1))},
      }};
      bool threw = false;
      try {
        dml::comm::get_all(s, next, std::span(bad));
      } catch (const dml::comm_error&) {
        threw = true;
      }
      out.check(threw, "a get_all() with one range past the source's words is a comm_error");
    }
    c.barrier();  // everyone has read before anyone overwrites
    // One writer per word: word 5 of next is written by this member alone.
    for (std::uint64_t round = 1; round <= 20; ++round) {
      const std::uint64_t v = round * 100 + me;
      s.put(next, 5, std::as_bytes(std::span(&v, 1)));
      std::uint64_t back = 0;
      s.get(next, 5, std::as_writable_bytes(std::span(&back, 1)));
      out.check(back == v, "get() sees the own earlier put without a flush");
      const std::uint64_t v2 = v + 1;
      s.put(next, 5, std::as_bytes(std::span(&v2, 1)));
      std::array<std::uint64_t, 2> both{};
      const std::array<dml::comm::get_range, 2> ranges{{
          {5, std::as_writable_bytes(std::span(&both[0], 1))},
          {5, std::as_writable_bytes(std::span(&both[1], 1))},
      }};
      dml::comm::get_all(s, next, std::span(ranges));
      out.check(both[0] == v2 && both[1] == v2, "get_all() sees the own earlier put without a flush");
    }
    std::array<std::uint64_t, 2> two{};
    bool threw = false;
    try {
      s.get(next, 5 + next, std::as_writable_bytes(std::span(two)));
    } catch (const dml::comm_error&) {
      threw = true;
    }
    out.check(threw, "a get() past the source's words is a comm_error");
    c.barrier();
  }
  {
    // Larger than any eager limit, with a partial last word.
    constexpr std::size_t words = 40'000;
    auto s = c.create_segment(words, 1);
    const auto p = pattern(8 * words, static_cast<unsigned>(me));
    s.put(me, 0, p);
    s.flush(me);
    c.barrier();
    std::vector<std::byte> got(8 * words - 3);
    s.get(next, 0, got);
    const auto want = pattern(8 * words, static_cast<unsigned>(next));
    out.check(std::equal(got.begin(), got.end(), want.begin()), "a large get() reads whole");
    c.barrier();
  }
}

// Every law, in order (collective).
template <class Comm>
void all(Comm& c, outcome& out) {
  identity(c, out);
  exchange(c, out);
  barrier_orders(c, out);
  segments(c, out);
  concurrent_atomics(c, out);
  large_puts(c, out);
  gets(c, out);
}

}  // namespace comm_laws

// SPDX-License-Identifier: BSL-1.0
// The laws every parameter table obeys, whatever its consistency policy,
// options and transport (dml/table/concepts.hpp states them). check_member
// is the body one member runs on any transport (test/table/mpi_laws.cpp runs
// it with one MPI process per member); check_law runs it on in-process
// members, with random delays and a straggler when asked.
//
// The workload: at clock c member q makes f(q, r, c) in {0, 1, 2} updates to
// row r, each adding 1 to element q, 1 to element n and 2 to element n + 1
// (n members). Everything the laws need follows from f, which every member
// can compute:
// - read-your-writes: element me is exactly this member's updates so far;
// - staleness: element q includes at least q's updates of clocks
//   0..T-s-1, and (bounded policies) at most those of clocks 0..T+s;
// - whole updates: element n is the sum of elements 0..n-1 and element
//   n + 1 twice element n, in every value ever read;
// - age: at least T-s-1, and element q includes q's updates of clocks
//   0..age;
// - after sync(): every element exactly its total.
//
// `batched`: each clock reads its rows with one read_rows() call instead of
// a read() per row (all rows, in an order that changes every clock, and row
// 0 a second time), and the same laws are checked on every row it returns.
#pragma once

#include <dml/comm/inproc.hpp>
#include <dml/table.hpp>

#include "support/catch.hpp"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace table_laws {

/// Updates member q makes to row r at clock c.
inline int f(std::size_t q, std::size_t r, std::uint64_t c) {
  std::uint64_t z =
      (q + 1) * 0x9e3779b97f4a7c15ULL ^ (r + 7) * 0xbf58476d1ce4e5b9ULL ^ (c + 3) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  z *= 0xd6e8feb86659fd93ULL;
  z ^= z >> 29;
  return static_cast<int>(z % 3);
}

/// Updates of q to r in clocks [from, to).
inline std::int64_t total(std::size_t q, std::size_t r, std::uint64_t from, std::uint64_t to) {
  std::int64_t s = 0;
  for (std::uint64_t c = from; c < to; ++c) s += f(q, r, c);
  return s;
}

/// What the options of one run are.
enum class variant {
  plain,         // no access pattern
  virtual_all,   // a virtual iteration, every specialization on
  real_all,      // the first real iteration recorded, every specialization on
  virtual_off,   // a virtual iteration, every specialization off
  tight,         // tiny rings, a cache of two rows (LRU), per-row messages
  tight_static,  // tiny rings, a static cache of two rows, batches
};

inline const char* name(variant v) {
  switch (v) {
    case variant::plain:
      return "plain";
    case variant::virtual_all:
      return "virtual iteration, all specializations";
    case variant::real_all:
      return "first real iteration, all specializations";
    case variant::virtual_off:
      return "virtual iteration, no specialization";
    case variant::tight:
      return "tiny rings, LRU cache of 2 rows, per-row messages";
    case variant::tight_static:
      return "tiny rings, static cache of 2 rows";
  }
  return "?";
}

inline dml::table_options options_for(variant v) {
  dml::table_options o;
  if (v == variant::virtual_off) {
    o.place_rows = o.batch_updates = o.prefetch = o.static_cache = false;
  } else if (v == variant::tight) {
    o.ring_words = 64;
    o.cache_rows = 2;
    o.static_cache = false;
    o.batch_updates = false;
  } else if (v == variant::tight_static) {
    o.ring_words = 64;
    o.cache_rows = 2;
  }
  return o;
}

struct outcome {
  int wrong = 0;
  std::string first_error;
  void fail(const std::string& what) {
    if (first_error.empty()) first_error = what;
    ++wrong;
  }
};

/// The laws on one member. Collective: every member of `comm` runs it with
/// the same arguments. `pause` (may be empty) is called between operations
/// to make stragglers.
/// `cons`: the policy (its default for the built-in ones; `any` holds one).
template <class Cons, class T, class Comm, class Pause>
void check_member(Comm& comm, variant v, outcome& out, int rounds, Pause&& pause, const Cons& cons = {},
                  bool batched = false) {
  const std::size_t n = comm.size(), me = comm.rank();
  const std::size_t rows = 2 * n + 3, len = n + 2;
  auto t = dml::make_table<T>(comm, rows, len, cons, options_for(v));
  const std::uint64_t s = dml::consistency::table_slack(cons);
  const bool bounded = s != dml::consistency::unbounded;
  std::vector<T> delta(len, T{});
  delta[me] = T{1};
  delta[n] = T{1};
  delta[n + 1] = T{2};
  auto where = [&](std::uint64_t clock, std::size_t r) {
    return "member " + std::to_string(me) + " of " + std::to_string(n) + " (" + name(v) + "), clock " +
           std::to_string(clock) + ", row " + std::to_string(r) + ": ";
  };
  // One clock's work; the laws are checked unless `check` is false (a
  // virtual iteration reads zeros).
  auto work = [&](std::uint64_t clock, bool check) {
    for (std::size_t r = 0; r < rows; ++r)
      for (int k = 0; k < f(me, r, clock); ++k) {
        t.update(r, delta);
        pause();
      }
    std::vector<std::size_t> order(rows);
    for (std::size_t i = 0; i < rows; ++i) order[i] = (i * 2 + clock) % rows;  // rows is odd: a permutation
    order.push_back(0);
    std::span<const T> all;
    if (batched) {
      all = t.read_rows(order);
      if (all.size() != order.size() * len)
        out.fail(where(clock, 0) + "read_rows returned " + std::to_string(all.size()) + " elements");
    }
    for (std::size_t i = 0; i < (batched ? order.size() : rows); ++i) {
      const std::size_t r = batched ? order[i] : i;
      const auto got = batched ? all.subspan(i * len, len) : t.read(r);
      pause();
      if (!check) continue;
      std::vector<std::int64_t> x(len);
      for (std::size_t e = 0; e < len; ++e)
        x[e] = static_cast<std::int64_t>(std::llround(static_cast<double>(got[e])));
      // After a batch read, age() speaks of the copy the table holds now: of
      // an own row, the owner's, which may have moved on after the batch
      // copied it; a row of others the cache had no room for has age -1.
      // Those rows are checked by the bounds alone.
      const std::int64_t age = t.age(r);
      const bool aged = !batched || (age >= 0 && t.owner(r) != me);
      std::int64_t sum = 0;
      for (std::size_t q = 0; q < n; ++q) sum += x[q];
      if (x[n] != sum || x[n + 1] != 2 * x[n]) {
        out.fail(where(clock, r) + "part of an update: element n = " + std::to_string(x[n]) +
                 ", sum = " + std::to_string(sum) + ", element n+1 = " + std::to_string(x[n + 1]));
        continue;
      }
      if (x[me] != total(me, r, 0, clock + 1)) {
        out.fail(where(clock, r) + "own updates " + std::to_string(x[me]) + ", made " +
                 std::to_string(total(me, r, 0, clock + 1)));
        continue;
      }
      if (bounded && aged && age < static_cast<std::int64_t>(clock) - static_cast<std::int64_t>(s) - 1) {
        out.fail(where(clock, r) + "age " + std::to_string(age) + " is below the bound");
        continue;
      }
      for (std::size_t q = 0; q < n; ++q) {
        if (q == me) continue;
        const std::uint64_t lower = bounded ? (clock > s ? clock - s : 0) : 0;
        const std::uint64_t by_age = aged && age >= 0 ? static_cast<std::uint64_t>(age) + 1 : 0;
        const std::int64_t least = total(q, r, 0, std::max(lower, by_age));
        if (x[q] < least) {
          out.fail(where(clock, r) + "member " + std::to_string(q) + "'s updates " + std::to_string(x[q]) +
                   ", at least " + std::to_string(least) + " expected (age " + std::to_string(age) + ")");
          break;
        }
        if (bounded && x[q] > total(q, r, 0, clock + s + 1)) {
          out.fail(where(clock, r) + "member " + std::to_string(q) + "'s updates " + std::to_string(x[q]) +
                   ", more than it can have sent (" + std::to_string(total(q, r, 0, clock + s + 1)) + ")");
          break;
        }
      }
    }
    t.clock();
    pause();
  };
  std::uint64_t clock = 0;
  if (v == variant::virtual_all || v == variant::virtual_off || v == variant::tight_static) {
    t.begin_recording(dml::recording::virtual_iteration);
    work(0, false);
    t.end_recording();
    if (t.current_clock() != 0) out.fail("a virtual iteration moved the clock");
  } else if (v == variant::real_all) {
    t.begin_recording(dml::recording::real_iteration);
    work(clock++, true);
    t.end_recording();
  }
  for (; clock < static_cast<std::uint64_t>(rounds); ++clock) work(clock, true);
  t.sync();
  for (std::size_t r = 0; r < rows; ++r) {
    const auto got = t.read(r);
    std::int64_t all = 0;
    for (std::size_t q = 0; q < n; ++q) {
      const std::int64_t want = total(q, r, 0, static_cast<std::uint64_t>(rounds));
      all += want;
      if (std::llround(static_cast<double>(got[q])) != want) {
        out.fail("member " + std::to_string(me) + " (" + name(v) + ") after sync, row " + std::to_string(r) +
                 ": member " + std::to_string(q) + "'s updates " +
                 std::to_string(static_cast<double>(got[q])) + ", made " + std::to_string(want));
        break;
      }
    }
    if (std::llround(static_cast<double>(got[n])) != all ||
        std::llround(static_cast<double>(got[n + 1])) != 2 * all)
      out.fail("member " + std::to_string(me) + " (" + name(v) + ") after sync, row " + std::to_string(r) +
               ": the sums are wrong");
    if (t.age(r) < rounds) out.fail("after sync the age is " + std::to_string(t.age(r)));
  }
  // The statistics count what happened.
  const auto& st = t.stats();
  std::uint64_t made = 0;
  for (std::size_t r = 0; r < rows; ++r) made += static_cast<std::uint64_t>(total(me, r, 0, rounds));
  if (st.updates != made)
    out.fail("stats: " + std::to_string(st.updates) + " updates, made " + std::to_string(made));
  if (st.clocks != static_cast<std::uint64_t>(rounds) + 1)
    out.fail("stats: " + std::to_string(st.clocks) + " clocks");
  const std::uint64_t real_rounds = static_cast<std::uint64_t>(rounds);
  const std::uint64_t per_round = batched ? rows + 1 : rows;
  if (st.reads != real_rounds * per_round + rows) out.fail("stats: " + std::to_string(st.reads) + " reads");
  if (st.cache_hits + st.own_reads > st.reads) out.fail("stats: more hits than reads");
  if (n > 1 && st.messages_sent == 0) out.fail("stats: no message sent");
  if (st.lost_updates != 0 || st.rebuilds != 0) out.fail("stats: a rebuild without a failure");
  t.sync();  // nobody leaves while others may still read its rows
}

template <class Cons, class T, class Comm>
void check_member(Comm& comm, variant v, outcome& out, int rounds) {
  check_member<Cons, T>(comm, v, out, rounds, [] {});
}

/// Runs the laws on n in-process members; `delays`: every member sleeps a
/// random time of up to 200 us before each transport operation and member
/// n-1 is a straggler (1 ms more).
template <class Cons, class T>
void check_law(std::size_t n, variant v, bool delays, int rounds = 6, const Cons& cons = {},
               bool batched = false) {
  std::vector<outcome> outs(n);
  dml::comm::inproc::options o;
  o.wait_limit = std::chrono::seconds(60);
  if (delays) {
    o.max_random_delay = std::chrono::microseconds(200);
    o.slow_members = {{n - 1, std::chrono::microseconds(1000)}};
  }
  dml::comm::inproc::run(
      n,
      [&](auto& comm) {
        check_member<Cons, T>(
            comm, v, outs[comm.rank()], rounds, [] {}, cons, batched);
      },
      o);
  int wrong = 0;
  std::string first;
  for (const auto& out : outs) {
    wrong += out.wrong;
    if (first.empty()) first = out.first_error;
  }
  INFO("n = " << n << ", " << name(v) << (delays ? ", random delays and a straggler" : "")
              << (batched ? ", batch reads" : ""));
  INFO(first);
  REQUIRE(wrong == 0);
}

using policies = std::tuple<dml::consistency::bsp, dml::consistency::ssp<1>, dml::consistency::ssp<3>,
                            dml::consistency::asp>;
inline constexpr variant all_variants[] = {variant::plain,       variant::virtual_all, variant::real_all,
                                           variant::virtual_off, variant::tight,       variant::tight_static};

}  // namespace table_laws

// SPDX-License-Identifier: BSL-1.0
// delta_vector: members exchange only what they changed, as index/value
// pairs, and merge everyone's changes into an agreed state. Under bsp and
// notify_ack over all, every member's agreed state is the same to the bit;
// changes beyond the capacity wait for later scatters and are never lost;
// bytes on the wire follow the pairs sent, not the length.
#include <dml/dml.hpp>
#include <dml/vector/delta_vector.hpp>
#include <dml/vector/filter.hpp>

#include "support/catch.hpp"

#include <atomic>
#include <cmath>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

namespace inproc = dml::comm::inproc;

namespace {

constexpr std::size_t length = 1u << 16;

// Member m's change in round r: a few coordinates, some shared with other
// members, some values that round when added.
struct change {
  std::uint32_t index;
  float value;
};
std::vector<change> changes_of(dml::member_id m, int round, int count) {
  std::mt19937 rng(static_cast<unsigned>(1000 * round + m));
  std::uniform_int_distribution<std::uint32_t> where(0, 511);  // overlaps between members
  std::uniform_real_distribution<float> what(-1.0f, 1.0f);
  std::vector<change> out;
  for (int k = 0; k < count; ++k)
    out.push_back({static_cast<std::uint32_t>(where(rng) * 97 % length), what(rng) / 3.0f});
  return out;
}

// Runs `rounds` rounds of (change, scatter, gather) on n members, then
// scatters until nothing is pending anywhere; returns every member's agreed
// state and statistics.
struct no_filter {};

// The same, each member scattering through the filter make_filter(rank)
// returns (no_filter: plain scatter()).
template <class MakeFilter, class... Policies>
void run_rounds_with(MakeFilter make_filter, std::size_t n, int rounds, int per_round, std::size_t capacity,
                     std::vector<std::vector<float>>& agreed, std::vector<dml::vector_stats>& stats,
                     std::vector<int>& flush_rounds, Policies... policies) {
  agreed.assign(n, {});
  stats.assign(n, {});
  flush_rounds.assign(n, 0);
  inproc::run(n, [&](inproc::context& c) {
    auto v = dml::make_delta_vector<float>(c, length, dml::sparse{capacity}, policies...);
    auto busy = dml::make_vector<double>(c, 1, dml::gather::sum{});
    auto filter = make_filter(c.rank());
    auto scatter = [&] {
      if constexpr (std::is_same_v<decltype(filter), no_filter>)
        v.scatter();
      else
        v.scatter(filter);
    };
    for (int r = 1; r <= rounds; ++r) {
      for (const auto& ch : changes_of(c.rank(), r, per_round)) {
        v.span()[ch.index] += ch.value;
        v.touch(ch.index);
      }
      scatter();
      v.gather();
    }
    for (;;) {  // until no member has changes left to send
      busy.span()[0] = static_cast<double>(v.pending());
      busy.scatter();
      busy.gather();
      if (busy.span()[0] == 0) break;
      scatter();
      v.gather();
      ++flush_rounds[c.rank()];
    }
    agreed[c.rank()].assign(v.agreed().begin(), v.agreed().end());
    for (std::size_t i = 0; i < length; ++i)
      if (v.span()[i] != v.agreed()[i]) agreed[c.rank()].clear();  // nothing pending: local == agreed
    stats[c.rank()] = v.stats();
  });
}

template <class... Policies>
void run_rounds(std::size_t n, int rounds, int per_round, std::size_t capacity,
                std::vector<std::vector<float>>& agreed, std::vector<dml::vector_stats>& stats,
                std::vector<int>& flush_rounds, Policies... policies) {
  run_rounds_with([](dml::member_id) { return no_filter{}; }, n, rounds, per_round, capacity, agreed, stats,
                  flush_rounds, policies...);
}

// The average of all members' changes, in double.
std::vector<double> expected_average(std::size_t n, int rounds, int per_round) {
  std::vector<double> want(length, 0.0);
  for (dml::member_id m = 0; m < n; ++m)
    for (int r = 1; r <= rounds; ++r)
      for (const auto& ch : changes_of(m, r, per_round)) want[ch.index] += ch.value;
  for (auto& x : want) x /= static_cast<double>(n);
  return want;
}

}  // namespace

TEST_CASE("delta_vector: under bsp and notify_ack over all every agreed state is the same to the bit") {
  for (const std::size_t n : {1u, 2u, 5u, 8u}) {
    for (int policy = 0; policy < 2; ++policy) {
      INFO("n = " << n << (policy == 0 ? ", bsp" : ", notify_ack"));
      std::vector<std::vector<float>> agreed;
      std::vector<dml::vector_stats> stats;
      std::vector<int> flushes;
      if (policy == 0)
        run_rounds(n, 12, 40, 64, agreed, stats, flushes, dml::consistency::bsp{});
      else
        run_rounds(n, 12, 40, 64, agreed, stats, flushes, dml::consistency::notify_ack{});
      for (std::size_t m = 0; m < n; ++m) {
        REQUIRE_FALSE(agreed[m].empty());  // local == agreed once nothing is pending
        REQUIRE(agreed[m] == agreed[0]);
      }
      // Nothing lost: the agreed state is the average of every change made.
      const auto want = expected_average(n, 12, 40);
      double worst = 0;
      for (std::size_t i = 0; i < length; ++i) worst = std::max(worst, std::abs(agreed[0][i] - want[i]));
      CHECK(worst < 1e-5);
    }
  }
}

TEST_CASE("delta_vector: changes beyond the capacity wait for later scatters and nothing is lost") {
  // 40 changes per round (up to 40 distinct coordinates) through a capacity
  // of 8: most go out in later rounds.
  std::vector<std::vector<float>> agreed;
  std::vector<dml::vector_stats> stats;
  std::vector<int> flushes;
  run_rounds(4, 6, 40, 8, agreed, stats, flushes, dml::consistency::bsp{});
  REQUIRE(flushes[0] > 0);  // the capacity really split the updates
  for (std::size_t m = 0; m < 4; ++m) REQUIRE(agreed[m] == agreed[0]);
  const auto want = expected_average(4, 6, 40);
  double worst = 0;
  for (std::size_t i = 0; i < length; ++i) worst = std::max(worst, std::abs(agreed[0][i] - want[i]));
  CHECK(worst < 1e-5);
}

TEST_CASE("delta_vector: a filter chooses what fits the capacity; replicas agree and nothing is lost") {
  const auto want = expected_average(4, 6, 40);
  auto check = [&](auto make_filter, const char* name) {
    INFO(name);
    std::vector<std::vector<float>> agreed;
    std::vector<dml::vector_stats> stats;
    std::vector<int> flushes;
    run_rounds_with(make_filter, 4, 6, 40, 8, agreed, stats, flushes, dml::consistency::bsp{});
    REQUIRE(flushes[0] > 0);  // the capacity really held changes back
    for (std::size_t m = 0; m < 4; ++m) {
      REQUIRE_FALSE(agreed[m].empty());
      REQUIRE(agreed[m] == agreed[0]);
    }
    double worst = 0;
    for (std::size_t i = 0; i < length; ++i) worst = std::max(worst, std::abs(agreed[0][i] - want[i]));
    CHECK(worst < 1e-5);
  };
  check([](dml::member_id) { return dml::filter::magnitude{}; }, "magnitude");
  check([](dml::member_id) { return dml::filter::relative{}; }, "relative");
  check([](dml::member_id m) { return dml::filter::random{m + 1}; }, "random");
  check([](dml::member_id) { return dml::filter::round_robin{}; }, "round_robin");
}

TEST_CASE("delta_vector: bytes sent follow the pairs sent, never the length") {
  // One member changes 3 coordinates, once; over all with n members each
  // scatter of it carries 3 pairs to n - 1 peers, the others send empty updates.
  std::atomic<int> right{0};
  inproc::run(4, [&](inproc::context& c) {
    auto v = dml::make_delta_vector<double>(c, length, dml::sparse{16});
    if (c.rank() == 2)
      for (std::uint32_t j : {5u, 700u, 65535u}) {
        v.span()[j] = 1.0;
        v.touch(j);
      }
    v.scatter();
    v.gather();
    const std::uint64_t header = 8 * 5, pair = 4 + 8;
    const std::uint64_t pairs = c.rank() == 2 ? 3 : 0;
    if (v.stats().bytes_sent == 3 * (header + pairs * pair) && v.agreed()[700] == 0.25 && v.pending() == 0)
      ++right;
  });
  REQUIRE(right.load() == 4);
}

TEST_CASE("delta_vector: scaled_sum{1} adds every change; the merge is part of what members compare") {
  std::atomic<int> added{0}, clear{0};
  inproc::run(3, [&](inproc::context& c) {
    auto v = dml::make_delta_vector<double>(c, 8, dml::sparse{4}, dml::gather::scaled_sum{1.0});
    v.span()[1] = 1.0 + static_cast<double>(c.rank());
    v.touch(1);
    v.scatter();
    v.gather();
    if (v.agreed()[1] == 6.0 && v.span()[1] == 6.0) ++added;
    try {  // members disagreeing on the merge
      auto w = c.rank() == 0
                   ? dml::make_delta_vector<double>(c, 8, dml::sparse{4}, dml::gather::scaled_sum{0.5})
                   : dml::make_delta_vector<double>(c, 8, dml::sparse{4}, dml::gather::scaled_sum{1.0});
    } catch (const dml::config_error& e) {
      if (std::string(e.what()).find("scaled_sum") != std::string::npos) ++clear;
    }
  });
  REQUIRE(added.load() == 3);
  REQUIRE(clear.load() == 3);
}

TEST_CASE("delta_vector: a policy that may skip updates is refused (a skipped change is lost)") {
  std::atomic<int> refused{0};
  inproc::run(2, [&](inproc::context& c) {
    try {
      auto v =
          dml::make_delta_vector<float>(c, 8, dml::sparse{4}, dml::consistency::any(dml::consistency::asp{}));
    } catch (const dml::config_error& e) {
      if (std::string(e.what()).find("asp") != std::string::npos) ++refused;
    }
  });
  REQUIRE(refused.load() == 2);
}

TEST_CASE("delta_vector over halton: agreed states close after a final averaging round") {
  std::vector<std::vector<float>> models(8);
  inproc::run(8, [&](inproc::context& c) {
    auto v = dml::make_delta_vector<float>(c, 1024, dml::sparse{256}, dml::topology::halton{});
    for (int r = 1; r <= 20; ++r) {
      for (const auto& ch : changes_of(c.rank(), r, 30)) {
        const std::uint32_t j = ch.index % 1024;
        v.span()[j] += ch.value;
        v.touch(j);
      }
      v.scatter();
      v.gather();
    }
    auto mean = dml::make_vector<float>(c, 1024);  // bsp over all, average: one exact round
    std::copy(v.span().begin(), v.span().end(), mean.span().begin());
    mean.scatter();
    mean.gather();
    models[c.rank()].assign(mean.span().begin(), mean.span().end());
  });
  for (std::size_t m = 1; m < 8; ++m)
    for (std::size_t i = 0; i < 1024; ++i) REQUIRE(std::abs(models[m][i] - models[0][i]) < 1e-6);
}

TEST_CASE("sparse scatter(indices, values): bad pairs are config_errors and nothing is sent") {
  std::atomic<int> errors{0}, received{0};
  inproc::run(2, [&](inproc::context& c) {
    auto v = dml::make_vector<float>(c, 10, dml::sparse{3}, dml::gather::sum{});
    const std::vector<std::uint32_t> unsorted{4, 2}, outside{1, 10}, too_many{1, 2, 3, 4};
    const std::vector<float> two{1, 1}, four{1, 1, 1, 1};
    for (auto [idx, val] : {std::pair{&unsorted, &two}, {&outside, &two}, {&too_many, &four}}) {
      try {
        v.scatter(*idx, *val);
      } catch (const dml::config_error&) {
        ++errors;
      }
    }
    const std::vector<std::uint32_t> good{0, 9};
    v.scatter(good, two);  // clock 1: the first update that went out
    v.gather();            // own buffer (zeros) + the other member's pairs
    if (v.clock() == 1 && v.span()[9] == 1.0f && v.span()[0] == 1.0f && v.span()[5] == 0.0f) ++received;
  });
  REQUIRE(errors.load() == 6);
  REQUIRE(received.load() == 2);
}

// SPDX-License-Identifier: BSL-1.0
// delta_tracker::publish under a byte quota with each filter: never more
// than the quota, ascending indices, the receiver's copy equal to the
// tracker's published copy, and every change sent eventually.
#include <dml/vector/delta.hpp>
#include <dml/vector/filter.hpp>

#include "support/catch.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace {

template <class Filter>
void hold_quota_and_feed_back(Filter filter, const char* name) {
  INFO(name);
  constexpr std::size_t n = 1000;
  constexpr std::size_t quota = 40 * 8;  // 40 float pairs
  std::mt19937 rng(7);
  std::uniform_int_distribution<std::size_t> coord(0, n - 1);
  std::normal_distribution<float> step(0.0f, 1.0f);
  std::vector<float> local(n, 0.0f), receiver(n, 0.0f);
  dml::delta_tracker<float> tracker(n);
  dml::delta_set<float> out;
  std::set<std::uint32_t> sent;
  // 20 rounds of training touch about 100 coordinates each, more than fit.
  for (int round = 0; round < 20; ++round) {
    for (int t = 0; t < 100; ++t) {
      const auto i = coord(rng);
      local[i] += step(rng);
      tracker.touch(i);
    }
    tracker.publish(local, out, dml::byte_quota{quota}, filter);
    REQUIRE(out.size() * 8 <= quota);
    REQUIRE(std::is_sorted(out.indices.begin(), out.indices.end()));
    REQUIRE(std::adjacent_find(out.indices.begin(), out.indices.end()) == out.indices.end());
    out.apply_to(receiver);
    sent.insert(out.indices.begin(), out.indices.end());
    REQUIRE(std::equal(receiver.begin(), receiver.end(), tracker.published().begin()));
  }
  // Training stops: publishing on drains what is pending, quota by quota.
  std::size_t pending = tracker.touched();
  REQUIRE(pending > 40);  // the quota really held changes back
  int publishes = 0;
  while (pending > 0) {
    pending = tracker.publish(local, out, dml::byte_quota{quota}, filter);
    REQUIRE(out.size() * 8 <= quota);
    REQUIRE(!out.empty());
    out.apply_to(receiver);
    REQUIRE(++publishes < 1000);
  }
  CHECK(receiver == local);  // every change arrived, to the bit
}

}  // namespace

TEST_CASE("filters: a quota is never exceeded and error feedback sends every change", "[delta][filter]") {
  hold_quota_and_feed_back(dml::filter::magnitude{}, "magnitude");
  hold_quota_and_feed_back(dml::filter::relative{}, "relative");
  hold_quota_and_feed_back(dml::filter::random{3}, "random");
  hold_quota_and_feed_back(dml::filter::round_robin{}, "round_robin");
}

TEST_CASE("filters: each chooses what it promises", "[delta][filter]") {
  // Ten changes, room for three (3 x 12 bytes for doubles).
  std::vector<double> local(10);
  for (std::size_t i = 0; i < 10; ++i) local[i] = (i % 2 == 0 ? 1.0 : -1.0) * static_cast<double>(i + 1);
  local[2] = 1000.0;  // the largest change
  auto fresh = [&] {
    dml::delta_tracker<double> t(std::vector<double>(10, 1.0));  // published: all ones
    t.diff(local, 0, 10);
    return t;
  };
  dml::delta_set<double> out;
  const dml::byte_quota three{3 * 12 + 5};

  auto t = fresh();
  dml::filter::magnitude mag;
  t.publish(local, out, three, mag);
  CHECK(out.indices == std::vector<std::uint32_t>{2, 7, 9});  // deltas 999, -9, -11: the largest |delta|
  CHECK(t.touched() == 6);

  // Relative to the weight: the change at 0 (1 -> 1: none) is gone; a
  // small weight with a small change beats a big one with a bigger change.
  std::vector<double> rel_local(10, 1.0);
  rel_local[1] = 0.01;    // delta -0.99 on a weight of 0.01: 99x
  rel_local[4] = 100.0;   // delta 99 on 100: 0.99x
  rel_local[7] = 3.0;     // delta 2 on 3: 0.67x
  rel_local[9] = -0.001;  // delta -1.001 on 0.001: 1001x
  dml::delta_tracker<double> r(std::vector<double>(10, 1.0));
  r.diff(rel_local, 0, 10);
  dml::filter::relative relf;
  r.publish(rel_local, out, dml::byte_quota{2 * 12}, relf);
  CHECK(out.indices == std::vector<std::uint32_t>{1, 9});

  // Round robin: 3 at a time in index order, wrapping.
  auto rr_t = fresh();
  dml::filter::round_robin rr;
  rr_t.publish(local, out, three, rr);
  CHECK(out.indices == std::vector<std::uint32_t>{1, 2, 3});  // 0 did not change (1 -> 1)
  rr_t.publish(local, out, three, rr);
  CHECK(out.indices == std::vector<std::uint32_t>{4, 5, 6});
  rr_t.publish(local, out, three, rr);
  CHECK(out.indices == std::vector<std::uint32_t>{7, 8, 9});
  CHECK(rr_t.touched() == 0);

  // Random: a seeded stream, three distinct coordinates.
  auto ra = fresh(), rb = fresh();
  dml::filter::random fa(11), fb(11);
  dml::delta_set<double> oa, ob;
  ra.publish(local, oa, three, fa);
  rb.publish(local, ob, three, fb);
  CHECK(oa.indices == ob.indices);
  CHECK(oa.size() == 3);
}

TEST_CASE("filters: a quota below one pair, and a filter that cheats, are errors", "[delta][filter]") {
  dml::delta_tracker<float> t(4);
  std::vector<float> local{1, 2, 3, 4};
  t.diff(local, 0, 4);
  dml::delta_set<float> out;
  dml::filter::magnitude mag;
  CHECK_THROWS_WITH(t.publish(local, out, dml::byte_quota{7}, mag),
                    "dml::delta_tracker::publish: a quota of 7 bytes cannot carry one delta (8 bytes)");
  struct greedy {
    void choose(std::span<const dml::delta_candidate<float>> c, std::size_t,
                std::vector<std::size_t>& chosen) {
      for (std::size_t p = 0; p < c.size(); ++p) chosen.push_back(p);
    }
  } g;
  CHECK_THROWS_WITH(t.publish(local, out, dml::byte_quota{16}, g),
                    "dml::delta_tracker::publish: the filter chose 4 changes where the quota allows 2");
}

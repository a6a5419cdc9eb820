// SPDX-License-Identifier: BSL-1.0
// delta_tracker: deltas applied to the published state give the local state
// bit for bit (or the tracker's published copy, with the rounding remainder
// still pending), in ascending index order, only for coordinates that
// changed; a capacity splits an update over several rounds without losing
// anything; the work follows the touched coordinates, not the length.
#include <dml/vector/delta.hpp>

#include "support/catch.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <span>
#include <unordered_map>
#include <vector>

namespace {

template <class T>
bool same_bits(std::span<const T> a, std::span<const T> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

struct lcg {  // deterministic test values
  std::uint64_t s;
  std::uint64_t next() {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return s >> 33;
  }
  std::size_t below(std::size_t n) { return static_cast<std::size_t>(next() % n); }
};

// A local buffer that is zero except where written, read through a
// function that counts the reads.
struct counting_reader {
  const std::unordered_map<std::size_t, float>* written;
  std::size_t* reads;
  float operator()(std::size_t i) const {
    ++*reads;
    const auto it = written->find(i);
    return it == written->end() ? 0.0f : it->second;
  }
};

bool ascending_unique(const std::vector<std::uint32_t>& v) {
  for (std::size_t k = 1; k < v.size(); ++k)
    if (v[k - 1] >= v[k]) return false;
  return true;
}

}  // namespace

TEMPLATE_TEST_CASE("delta_tracker round trip: the deltas turn the published state into the local one", "",
                   float, double) {
  constexpr std::size_t n = 1000;
  lcg rng{7};
  std::vector<TestType> local(n);
  for (auto& x : local) x = static_cast<TestType>(static_cast<int>(rng.below(2001)) - 1000) / 16;
  dml::delta_tracker<TestType> tracker{std::span<const TestType>(local)};
  std::vector<TestType> receiver = local;  // a peer that holds the published state
  dml::delta_set<TestType> out;
  for (int round = 0; round < 20; ++round) {
    for (int w = 0; w < 50; ++w) {  // a trainer's writes, marked as it makes them
      const std::size_t i = rng.below(n);
      local[i] += static_cast<TestType>(static_cast<int>(rng.below(64)) - 32) / 8;  // sometimes + 0
      tracker.touch(i);
    }
    REQUIRE(tracker.publish(local, out) == 0);
    REQUIRE(ascending_unique(out.indices));
    for (TestType d : out.values) REQUIRE(d != 0);  // only coordinates that changed
    out.apply_to(receiver);
    REQUIRE(same_bits<TestType>(receiver, local));
    REQUIRE(same_bits<TestType>(tracker.published(), local));
    REQUIRE(tracker.touched() == 0);
  }
}

TEST_CASE(
    "delta_tracker: a delta that rounds leaves the remainder pending, and the receiver equals the tracker") {
  // 1 - 1e8 is not a float: the first delta rounds, published + delta is 0,
  // and the remaining 1 goes out next time.
  std::vector<float> local(4, 0.0f);
  local[2] = 1e8f;
  dml::delta_tracker<float> tracker{std::span<const float>(local)};
  std::vector<float> receiver = local;
  local[2] = 1.0f;
  tracker.touch(2);
  dml::delta_set<float> out;
  REQUIRE(tracker.publish(local, out) == 1);  // still pending
  REQUIRE(out.size() == 1);
  out.apply_to(receiver);
  REQUIRE(same_bits<float>(receiver, tracker.published()));
  REQUIRE(receiver[2] != local[2]);
  REQUIRE(tracker.publish(local, out) == 0);
  out.apply_to(receiver);
  REQUIRE(same_bits<float>(receiver, local));

  // Random values over many magnitudes: the receiver always equals the
  // published copy, and once the writes stop a few rounds drain the rest.
  lcg rng{11};
  constexpr std::size_t n = 500;
  std::vector<float> x(n), peer(n);
  dml::delta_tracker<float> t(n);
  auto wild = [&] {
    const float mantissa = static_cast<float>(rng.below(1u << 20)) / float(1u << 20) - 0.5f;
    return std::ldexp(mantissa, static_cast<int>(rng.below(60)) - 30);
  };
  for (int round = 0; round < 30; ++round) {
    for (int w = 0; w < 40; ++w) {
      const std::size_t i = rng.below(n);
      x[i] = wild();
      t.touch(i);
    }
    t.publish(x, out);
    out.apply_to(peer);
    REQUIRE(same_bits<float>(peer, t.published()));
  }
  int extra = 0;
  while (t.touched() != 0 && extra < 10) {
    t.publish(x, out);
    out.apply_to(peer);
    ++extra;
  }
  REQUIRE(t.touched() == 0);
  REQUIRE(same_bits<float>(peer, x));
}

TEST_CASE("delta_tracker: changed() yields ascending deltas of changed coordinates and publishes nothing") {
  std::vector<double> local(100, 1.0);
  dml::delta_tracker<double> tracker{std::span<const double>(local)};
  for (std::size_t i : {90u, 10u, 50u, 10u, 30u}) tracker.touch(i);  // any order, 10 twice
  local[90] = 4.0;
  local[10] = -1.0;
  local[30] = 1.0;  // touched but unchanged
  tracker.touch(70);
  local[70] = 2.5;
  REQUIRE(tracker.touched() == 5);  // 10 counted once
  dml::delta_set<double> out;
  tracker.changed(local, out);
  REQUIRE(out.indices == std::vector<std::uint32_t>{10, 70, 90});
  REQUIRE(out.values == std::vector<double>{-2.0, 1.5, 3.0});
  REQUIRE(tracker.touched() == 3);  // 30 and 50 were unchanged: dropped
  REQUIRE(tracker.published()[90] == 1.0);
  dml::delta_set<double> again;
  tracker.changed(local, again);
  REQUIRE(again.indices == out.indices);
  REQUIRE(again.values == out.values);
  // A coordinate changed but not marked is not the tracker's business until diff() finds it.
  local[5] = 9.0;
  tracker.changed(local, out);
  REQUIRE(out.size() == 3);
  tracker.diff(local, 0, 20);
  tracker.changed(local, out);
  REQUIRE(out.indices == std::vector<std::uint32_t>{5, 10, 70, 90});
}

TEST_CASE("delta_tracker: a capacity splits an update over several publishes without losing anything") {
  constexpr std::size_t n = 5000, capacity = 64;
  lcg rng{3};
  std::vector<float> local(n, 0.0f), receiver(n, 0.0f);
  dml::delta_tracker<float> tracker(n);
  dml::delta_set<float> out;
  std::size_t largest = 0;
  for (int burst = 0; burst < 5; ++burst) {
    for (int w = 0; w < 700; ++w) {  // more than one round can carry
      const std::size_t i = rng.below(n);
      local[i] += static_cast<float>(rng.below(32) + 1) / 4;
      tracker.touch(i);
    }
    // One round per burst while writing goes on: the rest waits.
    tracker.publish(local, out, capacity);
    out.apply_to(receiver);
    largest = std::max(largest, out.size());
  }
  const std::size_t pending = tracker.touched();
  REQUIRE(pending > capacity);  // the split really happens
  dml::delta_set<float> before;
  tracker.changed(local, before);
  tracker.publish(local, out, capacity);
  REQUIRE(std::vector<std::uint32_t>(before.indices.begin(), before.indices.begin() + capacity) ==
          out.indices);  // the lowest indices go first
  out.apply_to(receiver);
  while (tracker.touched() != 0) {
    tracker.publish(local, out, capacity);
    REQUIRE(out.size() <= capacity);
    out.apply_to(receiver);
  }
  REQUIRE(largest == capacity);
  REQUIRE(same_bits<float>(receiver, local));  // nothing lost
  tracker.publish(local, out, capacity);
  REQUIRE(out.empty());
  REQUIRE(tracker.publish(local, out, 0) == 0);
}

TEST_CASE("delta_tracker reads only the touched coordinates of a 2^26-element buffer") {
  constexpr std::size_t n = std::size_t{1} << 26;
  // The local buffer is a function: every read is counted, so the test
  // proves which coordinates were read, not how fast.
  std::unordered_map<std::size_t, float> values;
  std::size_t reads = 0;
  const counting_reader local{&values, &reads};
  dml::delta_tracker<float> tracker(n);
  REQUIRE(tracker.size() == n);
  REQUIRE(tracker.touched() == 0);
  std::vector<std::uint32_t> written;
  for (std::uint32_t k = 0; k < 300; ++k) {
    const std::uint32_t i = (k * 2654435761u) % static_cast<std::uint32_t>(n);
    values[i] = static_cast<float>(k + 1);
    tracker.touch(i);
    written.push_back(i);
  }
  tracker.touch(n - 1);  // touched, unchanged
  REQUIRE(tracker.touched() == 301);
  dml::delta_set<float> out;
  tracker.changed(local, out);
  REQUIRE(reads == 301);
  REQUIRE(out.size() == 300);
  reads = 0;
  REQUIRE(tracker.publish(local, out, 100) == 200);
  REQUIRE(reads == 300);
  REQUIRE(out.size() == 100);
  reads = 0;
  REQUIRE(tracker.publish(local, out) == 0);
  REQUIRE(reads == 200);
  REQUIRE(tracker.touched() == 0);
  reads = 0;
  tracker.publish(local, out);
  REQUIRE(reads == 0);  // nothing touched: nothing read
  REQUIRE(out.empty());
  for (std::uint32_t i : written) REQUIRE(tracker.published()[i] == values[i]);
  reads = 0;
  tracker.diff(local, 1000, 4096);  // diff reads exactly its range
  REQUIRE(reads == 4096);
}

TEST_CASE("delta_tracker: mark_published and rebase") {
  std::vector<float> local(10, 0.0f);
  dml::delta_tracker<float> tracker(10);
  local[3] = 5.0f;
  local[4] = 6.0f;
  tracker.touch(3);
  tracker.mark_published(local);  // 3 went out some other way; 4 was never marked
  REQUIRE(tracker.published()[3] == 5.0f);
  REQUIRE(tracker.published()[4] == 0.0f);
  REQUIRE(tracker.touched() == 0);
  tracker.touch(4);
  tracker.rebase(local);  // a full exchange: everything published
  REQUIRE(same_bits<float>(tracker.published(), local));
  REQUIRE(tracker.touched() == 0);
  dml::delta_set<float> out;
  tracker.publish(local, out);
  REQUIRE(out.empty());
}

TEST_CASE("delta_tracker and delta_set refuse what does not fit") {
  REQUIRE_THROWS_AS(dml::delta_tracker<float>(0), dml::config_error);
  REQUIRE_THROWS_WITH(dml::delta_tracker<float>((std::size_t{1} << 32) + 1),
                      dml_test::contains("must be in [1, 2^32]"));
  dml::delta_tracker<float> tracker(8);
  REQUIRE_THROWS_WITH(tracker.touch(8), dml_test::contains("index 8 is outside a buffer of 8"));
  const std::vector<float> short_local(7), local(8);
  dml::delta_set<float> out;
  REQUIRE_THROWS_WITH(tracker.publish(short_local, out), dml_test::contains("local buffer of 7 elements"));
  REQUIRE_THROWS_WITH(tracker.diff(local, 5, 4), dml_test::contains("leaves a buffer of 8"));
  REQUIRE_THROWS_WITH(tracker.rebase(short_local), dml_test::contains("7 values for a buffer of 8"));
  dml::delta_set<float> bad;
  bad.indices = {1, 9};
  bad.values = {1.0f, 2.0f};
  std::vector<float> target(8, 0.0f);
  REQUIRE_THROWS_WITH(bad.apply_to(target), dml_test::contains("index 9 is outside a target of 8"));
  REQUIRE(target[1] == 0.0f);  // nothing applied
}

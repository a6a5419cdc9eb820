// SPDX-License-Identifier: BSL-1.0
// Torn-read detection: a writer scattering as fast as it can while readers
// gather under ASP must never hand a gather functor a mixed payload, and a
// slot whose footer never arrived must be rejected and counted.
#include <dml/dml.hpp>

#include "support/catch.hpp"

#include <atomic>
#include <cstdint>
#include <vector>

namespace inproc = dml::comm::inproc;

TEST_CASE("hammer: 10^5 gathers under ASP against a full-speed writer combine no torn payload") {
  constexpr std::size_t readers = 3;
  constexpr std::uint64_t target_gathers = 100'000;
  std::atomic<std::uint64_t> gathers{0};
  std::atomic<std::uint64_t> mixed{0};
  std::atomic<std::uint64_t> combined{0};
  std::atomic<std::uint64_t> torn{0};
  std::atomic<std::uint64_t> inputs_in_histograms{0};
  std::atomic<std::size_t> readers_done{0};
  constexpr std::uint64_t target_combined = 3'000;
  inproc::run(readers + 1, [&](inproc::context& c) {
    // Every element of an update equals its clock: a payload mixing two
    // updates shows up as an element that differs from the input's clock.
    auto check = [&](std::span<double>, std::span<const dml::gather::input<double>> inputs) {
      for (const auto& in : inputs) {
        ++combined;
        for (double x : in.values)
          if (x != static_cast<double>(in.clock)) {
            ++mixed;
            break;
          }
      }
    };
    auto v = dml::make_vector<double>(c, 512, dml::consistency::asp{}, dml::topology::star{}, check);
    if (c.rank() == 0) {
      while (readers_done.load() < readers) {
        for (auto& x : v.span()) x = static_cast<double>(v.clock() + 1);
        v.scatter();
      }
    } else {
      // Enough gathers, and enough of them finding a new update, that reads
      // really overlap writes.
      while (gathers.load(std::memory_order_relaxed) < target_gathers || combined.load() < target_combined) {
        v.gather();
        gathers.fetch_add(1, std::memory_order_relaxed);
      }
      torn += v.stats().torn_reads;
      inputs_in_histograms += v.stats().inputs_total();
      ++readers_done;
    }
  });
  REQUIRE(gathers.load() >= target_gathers);
  REQUIRE(mixed.load() == 0);
  REQUIRE(combined.load() >= target_combined);
  REQUIRE(inputs_in_histograms.load() == combined.load());
  WARN("torn reads detected and skipped: " << torn.load() << " (inputs combined: " << combined.load() << ")");
}

namespace {

// A transport that forwards to inproc but can lose the footer write of a
// slot, as when a writer dies between payload and footer.
struct footer_dropping {
  using policy_slot = dml::slot::transport;
  struct segment_type {
    inproc::segment inner;
    const std::atomic<bool>* drop = nullptr;
    [[nodiscard]] std::size_t words(dml::member_id m) const { return inner.words(m); }
    void put(dml::member_id m, std::size_t w, std::span<const std::byte> b) {
      if (b.size() == 8 && drop->load()) return;  // in this test only footers are 8 bytes
      inner.put(m, w, b);
    }
    void order(dml::member_id m) { inner.order(m); }
    void flush(dml::member_id m) { inner.flush(m); }
    void flush_all() { inner.flush_all(); }
    std::uint64_t fetch_add(dml::member_id m, std::size_t w, std::uint64_t v) {
      return inner.fetch_add(m, w, v);
    }
    [[nodiscard]] std::uint64_t load(std::size_t w) const { return inner.load(w); }
    [[nodiscard]] std::uint64_t load_control(std::size_t w) const { return inner.load_control(w); }
    void read(std::size_t w, std::span<std::byte> out) const { inner.read(w, out); }
    void get(dml::member_id m, std::size_t w, std::span<std::byte> out) { inner.get(m, w, out); }
    [[nodiscard]] std::span<const std::uint64_t> view(std::size_t w, std::size_t n) const {
      return inner.view(w, n);
    }
    void sync() { inner.sync(); }
  };
  inproc::context* c;
  const std::atomic<bool>* drop;
  [[nodiscard]] dml::member_id rank() const { return c->rank(); }
  [[nodiscard]] std::size_t size() const { return c->size(); }
  [[nodiscard]] dml::comm::membership_view view() const { return c->view(); }
  [[nodiscard]] bool alive(dml::member_id m) const { return c->alive(m); }
  [[nodiscard]] auto wait_limit() const { return c->wait_limit(); }
  void barrier() { c->barrier(); }
  std::vector<std::vector<std::byte>> exchange(std::span<const std::byte> r) { return c->exchange(r); }
  segment_type create_segment(std::size_t d, std::size_t k) { return {c->create_segment(d, k), drop}; }
};
static_assert(dml::comm::transport<footer_dropping>);

}  // namespace

TEST_CASE("a slot whose footer disagrees with its header is counted as torn and not combined") {
  std::atomic<bool> drop{false};
  std::vector<dml::vector_stats> stats(2);
  std::vector<float> after_torn(2), after_good(2);
  inproc::run(2, [&](inproc::context& c) {
    footer_dropping t{&c, &drop};
    auto v = dml::make_vector<float>(t, 4, dml::consistency::asp{}, dml::gather::replace{});
    // Round 1 completes normally; round 2 loses its footers.
    for (auto& x : v.span()) x = 1.0f + float(c.rank());
    v.scatter();
    c.barrier();
    v.gather();
    c.barrier();
    if (c.rank() == 0) drop = true;
    c.barrier();
    for (auto& x : v.span()) x = 10.0f + float(c.rank());
    v.scatter();
    c.barrier();
    v.gather();  // newest slot is torn: nothing new to combine
    after_torn[c.rank()] = v.span()[0];
    c.barrier();
    if (c.rank() == 0) drop = false;
    c.barrier();
    for (auto& x : v.span()) x = 20.0f + float(c.rank());
    v.scatter();
    c.barrier();
    v.gather();
    after_good[c.rank()] = v.span()[0];
    stats[c.rank()] = v.stats();
  });
  for (std::size_t r = 0; r < 2; ++r) {
    INFO("member " << r);
    REQUIRE(stats[r].torn_reads >= 1);
    REQUIRE(after_torn[r] == 10.0f + float(r));      // own value kept, torn update not applied
    REQUIRE(after_good[r] == 20.0f + float(1 - r));  // replaced by the neighbour's complete update
    REQUIRE(stats[r].inputs_combined[0] == 1);       // exactly the torn round combined nothing
  }
}

// SPDX-License-Identifier: BSL-1.0
// Consistency guarantees under stragglers, stopped members and slow members.
#include <dml/dml.hpp>

#include "support/catch.hpp"

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

namespace inproc = dml::comm::inproc;
using namespace std::chrono_literals;

namespace {

// Rounds of scatter + gather with random delays before every transport
// operation; returns (gathers, gathers that combined every in-neighbour,
// elements that differ from the exact average) summed over members.
template <class Cons, class Topo>
std::array<std::uint64_t, 3> straggle(std::size_t n, int rounds) {
  inproc::options o;
  o.max_random_delay = 300us;
  o.seed = 42 + n;
  std::atomic<std::uint64_t> gathers{0}, full{0}, wrong{0};
  inproc::run(
      n,
      [&](inproc::context& c) {
        auto v = dml::make_vector<double>(c, 16, Cons{}, Topo{});
        const auto in = v.in_neighbours();
        for (int r = 1; r <= rounds; ++r) {
          for (auto& x : v.span()) x = double(c.rank() * 1000 + r);
          v.scatter();
          v.gather();
          double want = double(c.rank() * 1000 + r);
          for (auto j : in) want += double(j * 1000 + r);
          want /= double(in.size() + 1);
          for (double x : v.span()) wrong += std::abs(x - want) > 1e-9 ? 1 : 0;
        }
        const auto& s = v.stats();
        gathers += s.gathers;
        full += s.inputs_combined.size() > in.size() ? s.inputs_combined[in.size()] : 0;
      },
      o);
  return {gathers.load(), full.load(), wrong.load()};
}

}  // namespace

TEST_CASE("notify_ack: every gather combines every in-neighbour despite stragglers") {
  for (std::size_t n : {3u, 5u, 8u}) {
    const auto [g, full, wrong] = straggle<dml::consistency::notify_ack, dml::topology::halton>(n, 40);
    REQUIRE(g == n * 40);
    REQUIRE(full == g);
    REQUIRE(wrong == 0);
  }
  const auto [g, full, wrong] = straggle<dml::consistency::notify_ack, dml::topology::root_expander>(7, 40);
  REQUIRE(full == g);
  REQUIRE(wrong == 0);
}

TEST_CASE("bsp: every gather combines every in-neighbour despite stragglers") {
  for (std::size_t n : {3u, 8u}) {
    const auto [g, full, wrong] = straggle<dml::consistency::bsp, dml::topology::ring>(n, 40);
    REQUIRE(g == n * 40);
    REQUIRE(full == g);
    REQUIRE(wrong == 0);
  }
}

TEST_CASE("asp: never blocks when a neighbour stops; the survivors rewire around it") {
  // Ring 0 -> 1 -> 2 -> 3 -> 0: member 2 hears only from member 1, which
  // stops. asp never waits, so nobody blocks; the survivors notice the dead
  // neighbour, agree on a view without it and rebuild the ring 0 -> 2 -> 3.
  std::atomic<int> finished{0};
  std::atomic<int> from_0_at_2{0};
  std::atomic<int> from_1_after_stop{0};
  inproc::options o;
  o.max_random_delay = 100us;  // members interleave instead of running their rounds in one time slice
  inproc::run(
      4,
      [&](inproc::context& c) {
        auto count = [&](std::span<float> own, std::span<const dml::gather::input<float>> inputs) {
          for (const auto& in : inputs) {
            if (c.rank() == 2 && in.sender == 0) ++from_0_at_2;
            if (in.sender == 1 && !c.alive(1) && c.view().epoch > 0) ++from_1_after_stop;
          }
          dml::gather::average{}(own, inputs);
        };
        auto v = dml::make_vector<float>(c, 8, dml::consistency::asp{}, dml::topology::ring{}, count);
        // Everyone goes on for 50 rounds in the new view (member 0 notices its
        // dead out-neighbour itself; the others join the view change it starts).
        for (int r = 1, after = 0; after < 50; ++r) {
          if (c.rank() == 1 && r == 5) c.stop();
          for (auto& x : v.span()) x = float(r);
          v.scatter();
          v.gather();
          if (v.epoch() == 1) ++after;
        }
        v.barrier();
        REQUIRE(v.epoch() == 1);
        REQUIRE(c.view().live == std::vector<dml::member_id>{0, 2, 3});
        ++finished;
      },
      o);
  REQUIRE(finished.load() == 3);
  REQUIRE(from_0_at_2.load() > 0);
  REQUIRE(from_1_after_stop.load() == 0);
}

TEST_CASE("asp: an update is combined at most once") {
  std::atomic<int> repeats{0};
  inproc::run(3, [&](inproc::context& c) {
    std::uint64_t last_seen[3] = {0, 0, 0};
    auto check = [&](std::span<float>, std::span<const dml::gather::input<float>> inputs) {
      for (const auto& in : inputs) {
        if (in.clock <= last_seen[in.sender]) ++repeats;
        last_seen[in.sender] = in.clock;
      }
    };
    auto v = dml::make_vector<float>(c, 4, dml::consistency::asp{}, check);
    for (int r = 0; r < 300; ++r) {
      v.scatter();
      v.gather();
      v.gather();  // a second gather finds nothing new
    }
  });
  REQUIRE(repeats.load() == 0);
}

TEST_CASE("ssp<S>: no gather combines an update older than t - S, with a slow member") {
  constexpr std::uint64_t S = 3;
  inproc::options o;
  o.slow_members = {{2, 500us}};
  std::atomic<int> too_old{0};
  std::atomic<std::uint64_t> combined{0};
  inproc::run(
      5,
      [&](inproc::context& c) {
        std::uint64_t now = 0;
        auto check = [&](std::span<double> own, std::span<const dml::gather::input<double>> inputs) {
          for (const auto& in : inputs) {
            if (in.clock + S < now) ++too_old;
            ++combined;
          }
          dml::gather::average{}(own, inputs);
        };
        auto v = dml::make_vector<double>(c, 32, dml::consistency::ssp<S>{}, dml::topology::halton{}, check);
        for (int r = 0; r < 60; ++r) {
          v.scatter();
          now = v.clock();
          v.gather();
        }
        v.barrier();
      },
      o);
  REQUIRE(too_old.load() == 0);
  REQUIRE(combined.load() > 0);
}

TEST_CASE("ssp<S>: a member blocks when its neighbour lags by more than S, and not before") {
  constexpr std::uint64_t S = 2;
  std::atomic<std::uint64_t> fast_gathered{0};  // clock of the fast member's last finished gather
  std::atomic<bool> slow_scattered_2{false};
  std::atomic<bool> saw_flag_too_early{false};
  std::atomic<bool> blocked_correctly{false};
  inproc::run(2, [&](inproc::context& c) {
    auto v = dml::make_vector<float>(c, 4, dml::consistency::ssp<S>{});
    if (c.rank() == 1) {  // slow: scatters clock 1, then waits
      v.scatter();
      // The fast member must get through gathers up to clock S + 1 on clock 1
      // alone (it would deadlock here if it blocked too early).
      while (fast_gathered.load() < S + 1) std::this_thread::yield();
      std::this_thread::sleep_for(50ms);  // give it every chance to run ahead wrongly
      slow_scattered_2 = true;
      v.scatter();
      v.gather();
      for (int r = 0; r < 5; ++r) {
        v.scatter();
        v.gather();
      }
    } else {
      for (std::uint64_t t = 1; t <= S + 4; ++t) {
        v.scatter();
        v.gather();
        if (t <= S + 1 && slow_scattered_2.load()) saw_flag_too_early = true;
        if (t == S + 2) blocked_correctly = slow_scattered_2.load();
        fast_gathered = t;
      }
    }
  });
  REQUIRE_FALSE(saw_flag_too_early.load());
  REQUIRE(blocked_correctly.load());
}

TEST_CASE("under the abort policy a dead in-neighbour is a peer_failure, not a hang") {
  auto run_with = [](auto cons) {
    inproc::run(3, [&](inproc::context& c) {
      dml::fault::set_policy(c, dml::fault::policy::abort);
      auto v = dml::make_vector<float>(c, 4, cons, dml::topology::ring{});
      for (int r = 0; r < 5; ++r) {  // ssp<1> notices once member 0 lags by more than 1
        if (c.rank() == 0 && r == 1) c.stop();
        v.scatter();
        v.gather();
      }
    });
  };
  REQUIRE_THROWS_AS(run_with(dml::consistency::bsp{}), dml::peer_failure);
  REQUIRE_THROWS_AS(run_with(dml::consistency::notify_ack{}), dml::peer_failure);
  REQUIRE_THROWS_AS(run_with(dml::consistency::ssp<1>{}), dml::peer_failure);
}

TEST_CASE("exact policies reject gather() before the first scatter()") {
  REQUIRE_THROWS_WITH(inproc::run(2,
                                  [](inproc::context& c) {
                                    auto v = dml::make_vector<float>(c, 4);
                                    v.gather();
                                  }),
                      dml_test::contains("before the first scatter()"));
}

TEST_CASE("waiting on a member that already returned fails at once, naming it") {
  inproc::options o;
  o.wait_limit = std::chrono::seconds(30);  // the error must come long before this
  REQUIRE_THROWS_WITH(inproc::run(
                          2,
                          [](inproc::context& c) {
                            auto v = dml::make_vector<float>(c, 4, dml::consistency::notify_ack{});
                            if (c.rank() == 1) return;
                            v.scatter();
                            v.gather();
                          },
                          o),
                      dml_test::contains("member 1, which returned from its function"));
}

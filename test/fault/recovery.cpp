// SPDX-License-Identifier: BSL-1.0
// Recovery from failed members with the in-process transport: the survivors
// agree on one view, rebuild every vector over it and keep training.
#include <dml/dml.hpp>

#include "support/catch.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace inproc = dml::comm::inproc;
using dml::member_id;
using namespace std::chrono_literals;

namespace {

constexpr std::size_t members = 8;
constexpr std::uint64_t last_round = 160;  // kills happen by round 40

// What one survivor saw by the end of a run.
struct outcome {
  member_id rank = 0;
  dml::comm::membership_view view;
  std::vector<std::vector<member_id>> changes;  // live set after each view change
  bool connected = false;
  bool epoch_matches = false;
  std::vector<double> value;
};

struct run_result {
  std::vector<outcome> survivors;
  std::vector<double> detection_seconds;
  std::vector<member_id> victims;
};

// Every member starts with its rank in every element and averages with its
// in-neighbours each round. Victims stop at random rounds: the even-numbered
// victim stops itself, the odd-numbered one is killed by a survivor (it then
// stops at its next transport operation, wherever it is).
template <class Consistency, class Topology>
run_result run_with_kills(std::size_t kills, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<member_id> candidates{1, 2, 3, 4, 5, 6, 7};
  std::shuffle(candidates.begin(), candidates.end(), rng);
  const std::vector<member_id> victims(candidates.begin(), candidates.begin() + static_cast<long>(kills));
  std::vector<int> at(kills);
  for (auto& r : at) r = std::uniform_int_distribution<int>(3, 40)(rng);

  run_result result;
  result.victims = victims;
  std::mutex mutex;
  inproc::options o;
  o.wait_limit = 20s;
  o.max_random_delay = 20us;
  o.seed = seed;
  inproc::run(
      members,
      [&](inproc::context& c) {
        auto v = dml::make_vector<double>(c, 4, Consistency{}, Topology{});
        for (auto& x : v.span()) x = static_cast<double>(c.rank());
        // Rounds are counted by the vector's clock, which a view change
        // keeps (a cut-short scatter is made again), so every survivor
        // makes the same number of rounds.
        for (int r = 0; v.clock() < last_round; ++r) {
          for (std::size_t i = 0; i < kills; ++i) {
            if (r != at[i]) continue;
            if (i % 2 == 0 && c.rank() == victims[i]) c.stop();
            if (i % 2 == 1 && c.rank() == 0) c.kill(victims[i]);
          }
          v.scatter();
          v.gather();
        }
        v.barrier();  // nobody leaves while others may still need it in a rebuild
        outcome out;
        out.rank = c.rank();
        out.view = c.view();
        for (const auto& ch : dml::fault::view_changes(c)) out.changes.push_back(ch.live);
        out.connected = dml::topology::is_strongly_connected(v.graph());
        out.epoch_matches = v.epoch() == c.view().epoch;
        out.value.assign(v.span().begin(), v.span().end());
        std::lock_guard lock(mutex);
        for (const auto& ch : dml::fault::view_changes(c))
          result.detection_seconds.push_back(ch.detection_seconds);
        result.survivors.push_back(std::move(out));
      },
      o);
  return result;
}

template <class Consistency, class Topology>
void check_recovery(const char* name, std::size_t kills, std::uint64_t seed) {
  INFO(name << ", " << kills << " of " << members << " killed, seed " << seed);
  const auto r = run_with_kills<Consistency, Topology>(kills, seed);
  // Every survivor finished.
  REQUIRE(r.survivors.size() == members - kills);
  std::vector<member_id> expected;
  for (member_id m = 0; m < members; ++m)
    if (std::find(r.victims.begin(), r.victims.end(), m) == r.victims.end()) expected.push_back(m);
  const auto& first = r.survivors.front();
  double lo = first.value[0];
  double hi = first.value[0];
  for (const auto& s : r.survivors) {
    INFO("survivor " << s.rank);
    // One view, the same on every survivor, reached through the same changes.
    REQUIRE(s.view.live == expected);
    REQUIRE(s.view == first.view);
    REQUIRE(s.changes == first.changes);
    REQUIRE(s.connected);
    REQUIRE(s.epoch_matches);
    for (double x : s.value) {
      lo = std::min(lo, x);
      hi = std::max(hi, x);
    }
  }
  REQUIRE(first.view.epoch >= 1);
  REQUIRE(first.view.epoch <= kills);
  // Averaging goes on over the new graph: the survivors agree on one value
  // (they start 0..7 apart).
  REQUIRE(hi - lo < 0.05);
  REQUIRE(!r.detection_seconds.empty());
}

template <class Consistency>
void matrix(const char* cname, std::uint64_t seed) {
  for (std::size_t kills : {1u, 2u}) {
    const std::string k = std::string(cname) + " over ";
    check_recovery<Consistency, dml::topology::halton>((k + "halton").c_str(), kills, seed + 1);
    check_recovery<Consistency, dml::topology::root_expander>((k + "root_expander").c_str(), kills, seed + 2);
    check_recovery<Consistency, dml::topology::ring>((k + "ring").c_str(), kills, seed + 3);
    check_recovery<Consistency, dml::topology::all>((k + "all").c_str(), kills, seed + 4);
    seed += 10;
  }
}

}  // namespace

TEST_CASE("kill 1 and 2 of 8 under bsp: one view on every survivor, training goes on") {
  matrix<dml::consistency::bsp>("bsp", 100);
}
TEST_CASE("kill 1 and 2 of 8 under notify_ack: one view on every survivor, training goes on") {
  matrix<dml::consistency::notify_ack>("notify_ack", 200);
}
TEST_CASE("kill 1 and 2 of 8 under ssp<2>: one view on every survivor, training goes on") {
  matrix<dml::consistency::ssp<2>>("ssp<2>", 300);
}
TEST_CASE("kill 1 and 2 of 8 under asp: one view on every survivor, training goes on") {
  matrix<dml::consistency::asp>("asp", 400);
}

TEST_CASE(
    "a view superseded before a member rebuilt in it is merged into the next: one history on every "
    "survivor") {
  // Member 4 dies; member 0 agrees on the view without it while members 1
  // and 2 are held back; member 3 then dies too, before anyone rebuilt in
  // that view. The holds make the order deterministic. Member 0 saw two agreements, members 1 and 2 one: all
  // three list the same single change removing 3 and 4. A minimum of 3
  // survivors, which the merged view meets, must not stop member 0: the
  // check reads the merged change (it once read the moved-from one: 0 live).
  constexpr std::size_t n = 5;
  std::atomic<bool> three_dead{false};
  std::atomic<int> at_five{0};
  std::mutex mutex;
  std::vector<std::pair<member_id, std::vector<dml::fault::view_change>>> seen;
  // A hold that cannot hang the test: 20 s without its condition fails it.
  const auto hold_until = [](auto&& done, const char* what) {
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline)
        throw std::runtime_error(std::string("test hold timed out: ") + what);
      std::this_thread::sleep_for(100us);
    }
  };
  inproc::options o;
  o.wait_limit = 20s;
  inproc::run(
      n,
      [&](inproc::context& c) {
        dml::fault::set_min_survivors(c, 3);
        auto v = dml::make_vector<double>(c, 4, dml::consistency::bsp{}, dml::topology::all{});
        for (int r = 0; r < 12; ++r) {
          if (r == 5) {
            // 4 dies once the others finished round 4 (they would meet its
            // death in that round's gather otherwise, 3 included).
            if (c.rank() != 4) ++at_five;
            if (c.rank() == 4) {
              hold_until([&] { return at_five.load() == 4; }, "the others reaching round 5");
              c.stop();
            }
            if (c.rank() == 3) {
              // Dies once some member has agreed on the view without 4.
              hold_until(
                  [&] {
                    try {
                      c.check_view();
                      return false;
                    } catch (const dml::peer_failure&) {
                      return true;
                    }
                  },
                  "a view without member 4");
              three_dead.store(true);
              c.stop();
            }
            if (c.rank() == 1 || c.rank() == 2)
              hold_until([&] { return three_dead.load(); }, "member 3's death");
          }
          v.scatter();
          v.gather();
        }
        v.barrier();
        std::lock_guard lock(mutex);
        seen.emplace_back(c.rank(), dml::fault::view_changes(c));
      },
      o);
  REQUIRE(seen.size() == 3);
  for (const auto& [rank, changes] : seen) {
    INFO("survivor " << rank);
    REQUIRE(changes.size() == 1);
    CHECK(changes[0].removed == std::vector<member_id>{3, 4});
    CHECK(changes[0].live == std::vector<member_id>{0, 1, 2});
    CHECK(changes[0].epoch == seen.front().second[0].epoch);
    CHECK(changes[0].recovery_seconds >= changes[0].detection_seconds);
  }
}

TEST_CASE("detection and recovery times are recorded for every view change") {
  std::vector<double> detect;
  std::vector<double> recover;
  std::mutex mutex;
  for (int trial = 0; trial < 10; ++trial) {
    inproc::run(members, [&](inproc::context& c) {
      auto v = dml::make_vector<float>(c, 1024, dml::consistency::notify_ack{}, dml::topology::halton{});
      for (int r = 0; r < 30; ++r) {
        if (c.rank() == 5 && r == 10) c.stop();
        v.scatter();
        v.gather();
      }
      v.barrier();
      REQUIRE(dml::fault::view_changes(c).size() == 1);
      const auto& ch = dml::fault::view_changes(c).front();
      REQUIRE(ch.removed == std::vector<member_id>{5});
      REQUIRE(ch.epoch == 1);
      REQUIRE(ch.detection_seconds >= 0);
      REQUIRE(ch.recovery_seconds >= ch.detection_seconds);
      std::lock_guard lock(mutex);
      detect.push_back(ch.detection_seconds);
      recover.push_back(ch.recovery_seconds);
    });
  }
  std::sort(detect.begin(), detect.end());
  std::sort(recover.begin(), recover.end());
  std::printf(
      "in-process, 8 members, notify_ack over halton, 1 killed, %zu survivor records: detection median %.1f "
      "us "
      "(max %.1f us), recovery median %.1f us (max %.1f us)\n",
      detect.size(), 1e6 * detect[detect.size() / 2], 1e6 * detect.back(), 1e6 * recover[recover.size() / 2],
      1e6 * recover.back());
  REQUIRE(detect.size() == 70);
}

TEST_CASE("several vectors on one context are all rebuilt, in the same order on every member") {
  std::atomic<int> finished{0};
  inproc::options o;
  o.max_random_delay = 20us;
  o.wait_limit = 20s;
  inproc::run(
      6,
      [&](inproc::context& c) {
        auto a = dml::make_vector<float>(c, 16, dml::consistency::notify_ack{}, dml::topology::ring{});
        auto b = dml::make_vector<double>(c, 3, dml::consistency::bsp{}, dml::topology::all{});
        auto s = dml::make_vector<float>(c, 64, dml::sparse{4}, dml::consistency::ssp<1>{},
                                         dml::topology::root_expander{}, dml::gather::sum{});
        for (int r = 0; r < 60; ++r) {
          if (c.rank() == 2 && r == 7) c.stop();
          for (auto& x : b.span()) x = 1.0;
          a.scatter();
          b.scatter();
          a.gather();
          b.gather();
          std::fill(s.span().begin(), s.span().end(), 0.0f);
          s.span()[c.rank()] = 1.0f;
          s.scatter();
          s.gather();
        }
        b.barrier();
        for (const auto* st : {&a.stats(), &s.stats()}) REQUIRE(st->rebuilds == 1);
        REQUIRE(b.stats().rebuilds == 1);
        REQUIRE(a.epoch() == 1);
        REQUIRE(b.epoch() == 1);
        REQUIRE(s.epoch() == 1);
        // bsp + all after the rebuild: every gather averages 5 ones.
        for (double x : b.span()) REQUIRE(x == 1.0);
        ++finished;
      },
      o);
  REQUIRE(finished.load() == 5);
}

TEST_CASE("exact policies skip, and count, the updates a view change lost") {
  // Ring 0 -> 1 -> 2 -> 3 -> 0 under notify_ack; member 1 dies. Member 2's
  // new in-neighbour is 0; in the round of the failure 0's update may already
  // be consumed by 1 and gone.
  std::atomic<std::uint64_t> lost{0};
  std::atomic<std::uint64_t> full_after{0};
  inproc::run(4, [&](inproc::context& c) {
    auto v = dml::make_vector<float>(c, 4, dml::consistency::notify_ack{}, dml::topology::ring{});
    for (int r = 0; r < 40; ++r) {
      if (c.rank() == 1 && r == 20) c.stop();
      v.scatter();
      v.gather();
    }
    v.barrier();
    lost += v.stats().lost_in_view_change;
    // After the failure every gather is full except the ones that lost an update.
    full_after += v.stats().gathers - v.stats().full_gathers;
  });
  REQUIRE(lost.load() <= 3);
  REQUIRE(full_after.load() == lost.load());
}

TEST_CASE("the abort policy: every survivor gets peer_failure naming the dead member") {
  for (member_id victim : {1u, 4u, 7u}) {
    std::atomic<int> named{0};
    std::atomic<int> other{0};
    inproc::run(members, [&](inproc::context& c) {
      dml::fault::set_policy(c, dml::fault::policy::abort);
      auto v = dml::make_vector<float>(c, 8, dml::consistency::notify_ack{}, dml::topology::halton{});
      try {
        for (int r = 0; r < 100; ++r) {
          if (c.rank() == victim && r == 10) c.stop();
          v.scatter();
          v.gather();
        }
        ++other;  // finished without noticing: wrong
      } catch (const dml::peer_failure& e) {
        const std::string what = e.what();
        if (e.rank() == victim && what.find("abort") != std::string::npos)
          ++named;
        else
          ++other;
      }
    });
    INFO("victim " << victim);
    REQUIRE(named.load() == static_cast<int>(members) - 1);
    REQUIRE(other.load() == 0);
  }
}

TEST_CASE("a topology that cannot be built over the survivors is a config_error on every survivor") {
  std::atomic<int> clear{0};
  inproc::run(4, [&](inproc::context& c) {
    auto v = dml::make_vector<float>(c, 4, dml::consistency::bsp{}, dml::topology::halton{3});
    try {
      for (int r = 0; r < 20; ++r) {
        if (c.rank() == 3 && r == 5) c.stop();
        v.scatter();
        v.gather();
      }
    } catch (const dml::config_error& e) {
      const std::string what = e.what();
      if (what.find("halton") != std::string::npos) ++clear;
    }
  });
  REQUIRE(clear.load() == 3);
}

TEST_CASE("fault::recover moves a context to the survivors' view; barriers then skip the dead") {
  std::atomic<int> done{0};
  inproc::run(5, [&](inproc::context& c) {
    if (c.rank() == 3) c.stop();
    for (;;) {
      try {
        c.barrier();
        break;
      } catch (const dml::peer_failure& e) {
        REQUIRE(e.rank() == 3);
        dml::fault::recover(c);
      }
    }
    REQUIRE(c.view().epoch == 1);
    REQUIRE(c.view().live == std::vector<member_id>{0, 1, 2, 4});
    c.barrier();
    dml::fault::recover(c);  // nothing new: returns at once
    REQUIRE(c.view().epoch == 1);
    const std::byte mine{static_cast<unsigned char>(c.rank())};
    const auto all = c.exchange(std::span(&mine, 1));
    REQUIRE(all.size() == 4);
    REQUIRE(all[3][0] == std::byte{4});  // indexed like view().live
    ++done;
  });
  REQUIRE(done.load() == 4);
}

TEST_CASE("min_survivors: a view below the minimum stops every survivor with peer_failure") {
  // 8 members, minimum 7: the first death is survived, the second is not.
  std::atomic<int> stopped_clearly{0};
  std::atomic<int> other{0};
  std::atomic<int> first_survived{0};
  inproc::run(members, [&](inproc::context& c) {
    dml::fault::set_min_survivors(c, 7);
    auto v = dml::make_vector<float>(c, 8, dml::consistency::bsp{}, dml::topology::all{});
    try {
      for (int r = 0; r < 100; ++r) {
        if (c.rank() == 2 && r == 10) c.stop();
        if (c.rank() == 5 && r == 30) c.stop();
        v.scatter();
        v.gather();
        if (r == 20 && c.view().live.size() == members - 1) ++first_survived;
      }
      ++other;  // went on below the minimum: wrong
    } catch (const dml::peer_failure& e) {
      const std::string what = e.what();
      if (e.rank() == 5 && what.find("fewer than the minimum of 7") != std::string::npos)
        ++stopped_clearly;
      else
        ++other;
    }
  });
  CHECK(first_survived.load() ==
        static_cast<int>(members) - 1);  // all but member 2 passed round 20 in view 1
  REQUIRE(stopped_clearly.load() == static_cast<int>(members) - 2);
  REQUIRE(other.load() == 0);
}

TEST_CASE("a member that dies before or while the others build a vector is survived") {
  // The victim dies at its first transport operation, inside the first
  // vector's construction (or before it, while "loading"): the others
  // build the vector over the survivors and train on.
  for (member_id victim : {0u, 3u, 7u}) {
    std::atomic<int> good{0};
    inproc::options o;
    o.kill_at.emplace_back(victim, std::chrono::steady_clock::now());
    inproc::run(
        members,
        [&](inproc::context& c) {
          auto v = dml::make_vector<double>(c, 4, dml::consistency::notify_ack{}, dml::topology::halton{});
          for (int r = 0; r < 20; ++r) {
            std::fill(v.span().begin(), v.span().end(), static_cast<double>(c.rank()));
            v.scatter();
            v.gather();
          }
          const auto live = c.view().live;
          if (live.size() == members - 1 && std::find(live.begin(), live.end(), victim) == live.end() &&
              v.graph().size() == members - 1)
            ++good;
        },
        o);
    INFO("victim " << victim);
    REQUIRE(good.load() == static_cast<int>(members) - 1);
  }
}

TEST_CASE("a barrier that some members passed before another died inside it counts as passed for all") {
  // MPI's half-completed collective, injected in-process: the victim dies
  // inside one of its barriers after every member entered it; the members
  // below it pass the barrier, those above it see the death first. The
  // loop is a trainer's: notify_ack rounds, then a report through a bsp
  // vector and a barrier. Unless the survivors settle the barrier in the
  // recovery, those that passed it go on to the next rounds while the
  // others wait in it again for them, until the wait limit.
  for (const member_id victim : {3u, 0u, 6u}) {
    for (const std::size_t kth : {3u, 4u}) {  // the bsp scatter's barrier, the report barrier
      inproc::options o;
      o.wait_limit = 10s;
      o.die_inside_barrier = {{victim, kth}};
      std::atomic<int> finished{0};
      std::atomic<std::uint64_t> lost{0};
      inproc::run(
          members,
          [&](inproc::context& c) {
            auto v = dml::make_vector<double>(c, 4, dml::consistency::notify_ack{}, dml::topology::halton{});
            auto mean = dml::make_vector<double>(c, 2);  // bsp over all, like the trainers' report vector
            for (int epoch = 0; epoch < 5; ++epoch) {
              for (int r = 0; r < 4; ++r) {
                std::fill(v.span().begin(), v.span().end(), static_cast<double>(c.rank()));
                v.scatter();
                v.gather();
              }
              mean.span()[0] = 1.0;
              mean.scatter();
              mean.gather();
              mean.barrier();
            }
            if (v.clock() == 20 && mean.clock() == 5 && c.view().live.size() == members - 1) ++finished;
            lost += v.stats().lost_in_view_change + mean.stats().lost_in_view_change;
          },
          o);
      INFO("victim " << victim << ", barrier " << kth);
      REQUIRE(finished.load() == static_cast<int>(members) - 1);
      CHECK(lost.load() <= members);
    }
  }
}

TEST_CASE("an interruption scope: the operation a failure cut short is abandoned, and so is its barrier") {
  // What the dynamic schedule engine relies on (dml/schedule/dynamic.hpp):
  // under an interruption scope the first recovery in a new view throws
  // fault::interrupted on every survivor before it rebuilds anything; the
  // owner drops its vectors, recovers again (rebuilding the rest) and goes
  // on from a point the survivors agree on. The victim dies inside its kth
  // barrier after every member entered it: members below it pass it, the
  // others have it pending when they are interrupted. Unless the pending
  // barrier is dropped with the abandoned scatter, those members take it
  // for the next scatter's and skip that one's barrier, while the others
  // wait in theirs until the wait limit.
  for (const member_id victim : {3u, 0u, 6u}) {
    for (const std::size_t kth : {3u, 5u}) {
      inproc::options o;
      o.wait_limit = 10s;
      o.die_inside_barrier = {{victim, kth}};
      std::atomic<int> finished{0}, interrupted_once{0};
      inproc::run(
          members,
          [&](inproc::context& c) {
            dml::fault::detail::interruption_scope scope(c);
            using vector_type = decltype(dml::make_vector<double>(c, 2));
            std::optional<vector_type> v;
            v.emplace(dml::make_vector<double>(c, 2));
            std::uint64_t round = 0;
            int interruptions = 0;
            double value = 0;
            while (round < 12) {
              try {
                if (!v) {
                  dml::fault::recover(c);
                  std::uint64_t agreed = round;  // the newest round any survivor completed
                  for (const auto& r : c.exchange(std::as_bytes(std::span(&round, 1)))) {
                    std::uint64_t theirs = 0;
                    std::memcpy(&theirs, r.data(), sizeof theirs);
                    agreed = std::max(agreed, theirs);
                  }
                  round = agreed;
                  v.emplace(dml::make_vector<double>(c, 2));
                }
                v->span()[0] = static_cast<double>(c.rank());
                v->scatter();
                v->gather();
                value = v->span()[0];
                ++round;
              } catch (const dml::fault::interrupted&) {
                ++interruptions;
                v.reset();
              }
            }
            double mean = 0;
            for (member_id m : c.view().live) mean += static_cast<double>(m);
            mean /= static_cast<double>(c.view().live.size());
            if (c.view().live.size() == members - 1 && std::abs(value - mean) < 1e-12) ++finished;
            if (interruptions == 1) ++interrupted_once;
          },
          o);
      INFO("victim " << victim << ", barrier " << kth);
      CHECK(finished.load() == static_cast<int>(members) - 1);
      CHECK(interrupted_once.load() == static_cast<int>(members) - 1);
    }
  }
}

TEST_CASE("bad fault settings in the environment are config_errors naming them") {
  for (const char* name : {"DML_FAILURE_POLICY", "DML_MIN_SURVIVORS"}) {
    INFO(name);
    ::setenv(name, "ignore", 1);
    std::atomic<int> named{0};
    inproc::run(2, [&](inproc::context& c) {
      try {
        (void)dml::fault::failure_policy(c);
      } catch (const dml::config_error& e) {
        if (std::string(e.what()).find(name) != std::string::npos) ++named;
      }
    });
    ::unsetenv(name);
    REQUIRE(named.load() == 2);
  }
  ::setenv("DML_MIN_SURVIVORS", "3", 1);
  std::atomic<int> read{0};
  inproc::run(4, [&](inproc::context& c) { read += dml::fault::min_survivors(c) == 3 ? 1 : 0; });
  ::unsetenv("DML_MIN_SURVIVORS");
  REQUIRE(read.load() == 4);
  inproc::run(2, [&](inproc::context& c) {
    REQUIRE_THROWS_AS(dml::fault::set_min_survivors(c, 3), dml::config_error);
  });
}

// SPDX-License-Identifier: BSL-1.0
// MALT's own SSP and ASP (EuroSys '15 §6.1): ssp_bounded stalls for a
// lagging neighbour for a bounded time and then goes on without it;
// asp_fresh never waits and skips updates older than its bound. Members
// record what each gather combined; the checks run on the main thread.
#include <dml/dml.hpp>

#include "support/catch.hpp"
#include "vector/recorder.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace inproc = dml::comm::inproc;
namespace c = dml::consistency;
using namespace std::chrono_literals;

namespace {

using dml_test::recorder;
using dml_test::seen;

double value_of(dml::member_id s, std::uint64_t t) {
  return 1000.0 * static_cast<double>(s) + static_cast<double>(t);
}

}  // namespace

TEST_CASE("ssp_bounded: a gather stops waiting for a stopped neighbour after the stall", "[vector][malt]") {
  // Member 1 scatters clock 1 and then stops until member 0 has finished
  // six rounds (or 20 s have passed: then the stall did not end the wait).
  // A 60 s wait limit: only the stall can end member 0's waits in time.
  // With slack 1 member 0's gathers 1 and 2 combine member 1's clock-1
  // update; gathers 3..6 wait 50 ms each, then combine nothing from it.
  constexpr std::uint64_t rounds = 6;
  std::vector<std::vector<seen>> log0;
  dml::vector_stats stats0;
  std::atomic<bool> done0{false};
  bool released_by_member0 = false;
  double slowest_gather = 0;
  std::string error;
  inproc::options o;
  o.wait_limit = 60s;
  inproc::run(
      2,
      [&](inproc::context& ctx) {
        std::vector<std::vector<seen>> log;
        try {
          auto v = dml::make_vector<double>(ctx, 3, c::ssp_bounded<1>{50ms}, recorder{&log});
          // Round 1 in step, so member 0's first gather finds member 1's update.
          std::fill(v.span().begin(), v.span().end(), value_of(ctx.rank(), 1));
          v.scatter();
          v.barrier();
          v.gather();
          if (ctx.rank() == 1) {
            const auto give_up = std::chrono::steady_clock::now() + 20s;
            while (!done0.load() && std::chrono::steady_clock::now() < give_up)
              std::this_thread::sleep_for(1ms);
            released_by_member0 = done0.load();
            for (std::uint64_t t = 2; t <= rounds; ++t) {  // catch up: member 0 is ahead, nothing waits
              std::fill(v.span().begin(), v.span().end(), value_of(1, t));
              v.scatter();
              v.gather();
            }
          } else {
            for (std::uint64_t t = 2; t <= rounds; ++t) {
              std::fill(v.span().begin(), v.span().end(), value_of(0, t));
              v.scatter();
              const auto start = std::chrono::steady_clock::now();
              v.gather();
              slowest_gather =
                  std::max(slowest_gather,
                           std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
            }
            stats0 = v.stats();
            log0 = log;
            done0 = true;
          }
          v.barrier();  // nobody leaves while the other may still read its slots
        } catch (const std::exception& e) {
          error = e.what();
          done0 = true;
        }
      },
      o);
  REQUIRE(error.empty());
  REQUIRE(released_by_member0);  // member 0 finished while member 1 was stopped
  REQUIRE(log0.size() == rounds);
  for (std::size_t g = 0; g < rounds; ++g) {
    INFO("gather " << g + 1);
    if (g < 2) {
      REQUIRE(log0[g].size() == 1);
      CHECK(log0[g][0].clock == 1);
      CHECK(log0[g][0].value == value_of(1, 1));
    } else {
      CHECK(log0[g].empty());  // member 1's update is older than t - 1
    }
  }
  CHECK(stats0.stalls_expired == rounds - 2);
  CHECK(stats0.laggards_left_out == rounds - 2);
  CHECK(stats0.full_gathers == 2);
  // Each stall lasted its bound (a lower bound, safe however loaded the
  // machine), and none waited for member 1 (20 s) instead.
  CHECK(stats0.wait_seconds >= 0.9 * 0.05 * (rounds - 2));
  CHECK(slowest_gather < 10.0);
}

TEST_CASE("ssp_bounded: a neighbour that keeps up within the stall is waited for, as under ssp",
          "[vector][malt]") {
  // Slack 0 and a 20 s stall: member 1 sleeps 20 ms before each scatter,
  // member 0 must wait for every update and combine each one.
  constexpr std::uint64_t rounds = 5;
  std::vector<std::vector<seen>> log0;
  dml::vector_stats stats0;
  std::string error;
  inproc::run(2, [&](inproc::context& ctx) {
    std::vector<std::vector<seen>> log;
    try {
      auto v = dml::make_vector<double>(ctx, 3, c::ssp_bounded<0>{20s}, recorder{&log});
      for (std::uint64_t t = 1; t <= rounds; ++t) {
        if (ctx.rank() == 1) std::this_thread::sleep_for(20ms);
        std::fill(v.span().begin(), v.span().end(), value_of(ctx.rank(), t));
        v.scatter();
        v.gather();
      }
      v.barrier();
      if (ctx.rank() == 0) {
        stats0 = v.stats();
        log0 = log;
      }
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  REQUIRE(error.empty());
  REQUIRE(log0.size() == rounds);
  for (std::size_t g = 0; g < rounds; ++g) {
    INFO("gather " << g + 1);
    REQUIRE(log0[g].size() == 1);
    CHECK(log0[g][0].clock >= g + 1);
    CHECK(log0[g][0].value == value_of(1, log0[g][0].clock));
  }
  CHECK(stats0.stalls_expired == 0);
  CHECK(stats0.laggards_left_out == 0);
  CHECK(stats0.full_gathers == rounds);
}

TEST_CASE("ssp_bounded: a dead neighbour is not waited for, the survivors rebuild", "[vector][malt][fault]") {
  // A 20 s stall: waiting it out for the dead member would be visible.
  // Member 2 of 4 stops in round 3; the others finish every round without
  // an expired stall (the failure ends the wait, the group shrinks).
  constexpr int rounds = 30;
  inproc::options o;
  o.max_random_delay = 100us;
  o.wait_limit = 60s;
  std::vector<dml::vector_stats> stats(4);
  std::vector<std::string> errors(4);
  std::vector<int> done(4, 0);
  const auto start = std::chrono::steady_clock::now();
  inproc::run(
      4,
      [&](inproc::context& ctx) {
        try {
          auto v = dml::make_vector<double>(ctx, 8, c::any::ssp_bounded(1, 20s), dml::topology::ring{});
          for (int r = 1; r <= rounds; ++r) {
            if (ctx.rank() == 2 && r == 3) ctx.stop();
            std::fill(v.span().begin(), v.span().end(), double(r));
            v.scatter();
            v.gather();
            done[ctx.rank()] = r;
          }
          v.barrier();
          stats[ctx.rank()] = v.stats();
        } catch (const std::exception& e) {
          errors[ctx.rank()] = e.what();
        }
      },
      o);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (dml::member_id m : {0u, 1u, 3u}) {
    INFO("member " << m << ": " << errors[m]);
    CHECK(errors[m].empty());
    CHECK(done[m] == rounds);
    CHECK(stats[m].rebuilds == 1);
    CHECK(stats[m].stalls_expired == 0);
  }
  CHECK(seconds < 15.0);
}

TEST_CASE("asp_fresh: an unconsumed update older than t - B is skipped, once", "[vector][malt]") {
  // Lock-stepped by barriers, B = 1. Member 0 runs rounds 1..3 before
  // member 1 scatters clock 1; member 0's gather 4 (oldest clock 3) skips
  // it. Member 1 then scatters clock 2; gather 5 skips that. Then member 1
  // catches up to clock 6 and gather 6 combines its clock-6 update.
  std::vector<std::vector<seen>> log0;
  dml::vector_stats stats0;
  std::string error;
  inproc::run(2, [&](inproc::context& ctx) {
    std::vector<std::vector<seen>> log;
    try {
      auto v = dml::make_vector<double>(ctx, 3, c::asp_fresh<1>{}, recorder{&log});
      const auto me = ctx.rank();
      std::uint64_t t = 0;
      auto round = [&](bool gather) {
        ++t;
        std::fill(v.span().begin(), v.span().end(), value_of(me, t));
        v.scatter();
        if (gather) v.gather();
      };
      if (me == 0)
        for (int k = 0; k < 3; ++k) round(true);
      v.barrier();
      if (me == 1) round(false);  // clock 1
      v.barrier();
      if (me == 0) round(true);  // gather 4 skips clock 1
      v.barrier();
      if (me == 1) round(false);  // clock 2
      v.barrier();
      if (me == 0) round(true);  // gather 5 skips clock 2
      v.barrier();
      if (me == 1)
        while (t < 6) round(false);
      v.barrier();
      if (me == 0) round(true);  // gather 6 combines clock 6
      v.barrier();
      if (me == 0) {
        stats0 = v.stats();
        log0 = log;
      }
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  REQUIRE(error.empty());
  REQUIRE(log0.size() == 6);
  for (std::size_t g = 0; g < 5; ++g) {
    INFO("gather " << g + 1);
    CHECK(log0[g].empty());
  }
  REQUIRE(log0[5].size() == 1);
  CHECK(log0[5][0].clock == 6);
  CHECK(log0[5][0].value == value_of(1, 6));
  CHECK(stats0.too_old_skipped == 2);
  CHECK(stats0.stale_skipped >= 2);
}

TEST_CASE("asp_fresh: under random delays no gather combines an update older than t - B", "[vector][malt]") {
  // Member 2 is slow. Half the members hold asp_fresh<B> itself, half
  // through any::asp_fresh(B): they build the same vector.
  constexpr std::uint64_t B = 2;
  constexpr std::size_t n = 5;
  constexpr std::uint64_t rounds = 60;
  inproc::options o;
  o.max_random_delay = 200us;
  o.slow_members = {{2, 400us}};
  o.seed = 11;
  std::vector<std::vector<std::vector<seen>>> logs(n);
  std::vector<dml::vector_stats> stats(n);
  std::vector<std::string> errors(n);
  inproc::run(
      n,
      [&](inproc::context& ctx) {
        auto& log = logs[ctx.rank()];
        auto run = [&](auto policy) {
          auto v = dml::make_vector<double>(ctx, 4, policy, dml::topology::halton{}, recorder{&log});
          for (std::uint64_t t = 1; t <= rounds; ++t) {
            std::fill(v.span().begin(), v.span().end(), value_of(ctx.rank(), t));
            v.scatter();
            v.gather();
          }
          v.barrier();
          stats[ctx.rank()] = v.stats();
        };
        try {
          if (ctx.rank() % 2 == 0)
            run(c::asp_fresh<B>{});
          else
            run(c::any::asp_fresh(B));
        } catch (const std::exception& e) {
          errors[ctx.rank()] = e.what();
        }
      },
      o);
  std::uint64_t combined = 0;
  std::string problem;
  for (dml::member_id r = 0; r < n; ++r) {
    if (!errors[r].empty()) problem = "member " + std::to_string(r) + ": " + errors[r];
    std::vector<std::uint64_t> last(n, 0);
    for (std::size_t g = 0; g < logs[r].size() && problem.empty(); ++g) {
      const std::uint64_t t = g + 1;
      for (const auto& s : logs[r][g]) {
        const std::string what = "member " + std::to_string(r) + " gather " + std::to_string(t) +
                                 " input from " + std::to_string(s.sender) + " clock " +
                                 std::to_string(s.clock);
        if (s.clock + B < t) problem = what + ": older than t - B";
        if (s.clock <= last[s.sender]) problem = what + ": combined before";
        if (s.value != value_of(s.sender, s.clock)) problem = what + ": wrong value";
        last[s.sender] = s.clock;
        ++combined;
      }
    }
    if (problem.empty() && stats[r].gathers != rounds) problem = "member " + std::to_string(r) + ": gathers";
  }
  INFO(problem);
  CHECK(problem.empty());
  CHECK(combined > 0);
}

TEST_CASE("ssp_bounded and asp_fresh through consistency::any name themselves as the policies",
          "[vector][malt]") {
  CHECK(c::ssp_bounded<2>{50ms}.name() == "ssp_bounded<2,50ms>");
  CHECK(c::any::ssp_bounded(2, 50ms).name() == "ssp_bounded<2,50ms>");
  CHECK(c::any(c::ssp_bounded<2>{50ms}).name() == "ssp_bounded<2,50ms>");
  CHECK(c::ssp_bounded<3>{}.stall() == c::ssp_bounded<3>::default_stall);
  CHECK(c::asp_fresh<4>::name() == "asp_fresh<4>");
  CHECK(c::any::asp_fresh(4).name() == "asp_fresh<4>");
  CHECK(c::any(c::asp_fresh<4>{}).name() == "asp_fresh<4>");
  CHECK(c::any::ssp_bounded(2, 50ms).held() == c::any::kind::ssp_bounded);
  CHECK(c::any::ssp_bounded(2, 50ms).slack() == 2);
  CHECK(c::any::ssp_bounded(2, 50ms).stall() == 50ms);
  CHECK(c::any::asp_fresh(4).held() == c::any::kind::asp_fresh);
  CHECK(c::any::asp_fresh(4).slack() == 4);
  REQUIRE_THROWS_AS(c::ssp_bounded<1>{-1ms}, dml::config_error);
  REQUIRE_THROWS_WITH(c::any::ssp_bounded(1, -5ms), dml_test::contains("stall -5 ms is negative"));
}

TEST_CASE("members disagreeing on ssp_bounded's stall or asp_fresh's bound all get config_error",
          "[vector][malt]") {
  auto errors_of = [](auto make) {
    std::vector<std::string> errors(3);
    inproc::run(3, [&](inproc::context& ctx) {
      try {
        auto v = dml::make_vector<float>(ctx, 4, make(ctx.rank()));
      } catch (const dml::config_error& e) {
        errors[ctx.rank()] = e.what();
      }
    });
    return errors;
  };
  const auto stall = errors_of([](dml::member_id m) { return c::any::ssp_bounded(1, m == 2 ? 60ms : 50ms); });
  const auto bound = errors_of([](dml::member_id m) { return c::any::asp_fresh(m == 0 ? 1 : 2); });
  const auto mixed = errors_of(
      [](dml::member_id m) { return m == 1 ? c::any(c::asp_fresh<1>{}) : c::any(c::ssp_bounded<1>{0ms}); });
  for (const auto* errors : {&stall, &bound, &mixed}) {
    for (const auto& e : *errors) {
      INFO(e);
      CHECK(e.find("disagree") != std::string::npos);
    }
  }
  CHECK(stall[0].find("ssp_bounded<1,60ms>") != std::string::npos);
  CHECK(bound[0].find("asp_fresh<1>") != std::string::npos);
}

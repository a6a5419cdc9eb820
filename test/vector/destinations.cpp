// SPDX-License-Identifier: BSL-1.0
// Per-call destinations: scatter(dml::to{ids}) under every consistency
// policy, with random delays. Each member records what every gather
// combined; the checks run after the members have finished.
#include <dml/dml.hpp>

#include "support/catch.hpp"
#include "vector/recorder.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace inproc = dml::comm::inproc;
using namespace std::chrono_literals;

namespace {

using dml_test::recorder;
using dml_test::seen;

// Whether s sends its clock-c update to r: every pair is left out now and
// then, and some pairs always (so a receiver must not wait on them).
bool sends(dml::member_id s, dml::member_id r, std::uint64_t c) {
  return (s + r + c) % 3 != 0 && (s * 7 + r) % 5 != 1;
}

double value_of(dml::member_id s, std::uint64_t c) { return static_cast<double>(s * 1000 + c); }

struct member_log {
  std::vector<dml::member_id> in;
  std::vector<std::vector<seen>> gathers;
  dml::vector_stats stats;
  std::string error;
};

constexpr int rounds = 24;

std::vector<member_log> run_subsets(std::size_t n, const dml::consistency::any& cons,
                                    const dml::topology::any& topo, inproc::options o = {}) {
  o.max_random_delay = 150us;
  o.seed = 7 + n;
  std::vector<member_log> logs(n);
  inproc::run(
      n,
      [&](inproc::context& c) {
        auto& mine = logs[c.rank()];
        try {
          auto v = dml::make_vector<double>(c, 9, cons, topo, recorder{&mine.gathers});
          mine.in.assign(v.in_neighbours().begin(), v.in_neighbours().end());
          for (int t = 1; t <= rounds; ++t) {
            std::fill(v.span().begin(), v.span().end(), value_of(c.rank(), static_cast<std::uint64_t>(t)));
            std::vector<dml::member_id> ids;
            for (auto m : v.out_neighbours())
              if (sends(c.rank(), m, static_cast<std::uint64_t>(t))) ids.push_back(m);
            v.scatter(dml::to{ids});
            v.gather();
          }
          v.barrier();  // nobody leaves while another may still read its slots
          mine.stats = v.stats();
        } catch (const std::exception& e) {
          mine.error = e.what();
        }
      },
      o);
  return logs;
}

// Checks every gather of every member against the policy's promise;
// returns the first violation, empty when none.
std::string check(const std::vector<member_log>& logs, const dml::consistency::any& cons) {
  using kind = dml::consistency::any::kind;
  const bool exact = cons.held() == kind::bsp || cons.held() == kind::notify_ack;
  for (dml::member_id r = 0; r < logs.size(); ++r) {
    const auto& m = logs[r];
    const std::string who = "member " + std::to_string(r) + ": ";
    if (!m.error.empty()) return who + m.error;
    if (m.gathers.size() != rounds) return who + std::to_string(m.gathers.size()) + " gathers";
    std::vector<std::uint64_t> last(logs.size(), 0);
    std::uint64_t expected_markers = 0;
    for (std::size_t g = 0; g < m.gathers.size(); ++g) {
      const std::uint64_t t = g + 1;
      const auto& inputs = m.gathers[g];
      for (const auto& s : inputs) {
        const std::string what = who + "gather " + std::to_string(t) + " input from " +
                                 std::to_string(s.sender) + " clock " + std::to_string(s.clock);
        if (!std::binary_search(m.in.begin(), m.in.end(), s.sender)) return what + ": not an in-neighbour";
        if (!sends(s.sender, r, s.clock)) return what + ": was never sent here";
        if (s.value != value_of(s.sender, s.clock) || !s.uniform) return what + ": wrong values";
        if (exact && s.clock != t) return what + ": not this round's";
        const bool bounded =
            cons.held() == kind::ssp || cons.held() == kind::ssp_bounded || cons.held() == kind::asp_fresh;
        if (bounded && s.clock + cons.slack() < t) return what + ": older than the slack";
        if ((cons.held() == kind::asp || cons.held() == kind::asp_fresh) && s.clock <= last[s.sender])
          return what + ": combined before";
        last[s.sender] = s.clock;
      }
      if (exact) {
        for (auto q : m.in) {
          const bool got =
              std::any_of(inputs.begin(), inputs.end(), [&](const seen& s) { return s.sender == q; });
          if (got != sends(q, r, t))
            return who + "gather " + std::to_string(t) + (got ? " combined " : " missed ") +
                   std::to_string(q);
          expected_markers += got ? 0 : 1;
        }
      }
    }
    if (exact) {
      // Every gather heard from every in-neighbour: an update or a marker.
      if (m.stats.full_gathers != rounds) return who + "full_gathers " + std::to_string(m.stats.full_gathers);
      if (m.stats.markers_received != expected_markers)
        return who + "markers_received " + std::to_string(m.stats.markers_received) + ", want " +
               std::to_string(expected_markers);
    }
  }
  return {};
}

}  // namespace

TEST_CASE("scatter(to{...}) sends to a subset under every policy", "[vector][to]") {
  const std::vector<dml::consistency::any> policies{dml::consistency::bsp{},
                                                    dml::consistency::notify_ack{},
                                                    dml::consistency::any::ssp(1),
                                                    dml::consistency::any::ssp(0),
                                                    dml::consistency::asp{},
                                                    dml::consistency::any::ssp_bounded(1, 50ms),
                                                    dml::consistency::any::asp_fresh(2)};
  const std::vector<dml::topology::any> topologies{dml::topology::all{}, dml::topology::halton{}};
  for (const auto& cons : policies) {
    for (const auto& topo : topologies) {
      for (std::size_t n : {3u, 5u}) {
        const auto logs = run_subsets(n, cons, topo);
        const std::string problem = check(logs, cons);
        INFO(cons.name() << " over " << topo.name() << " n=" << n << ": " << problem);
        CHECK(problem.empty());
      }
    }
  }
}

TEST_CASE("scatter(to{...}) markers cost a header and a footer", "[vector][to]") {
  std::vector<dml::vector_stats> stats(3);
  inproc::run(3, [&](inproc::context& c) {
    auto v = dml::make_vector<double>(c, 100);  // all, bsp, average
    v.scatter(dml::to{});                       // nobody gets the update
    v.gather();                                 // combines nothing: own kept
    stats[c.rank()] = v.stats();
  });
  for (const auto& s : stats) {
    CHECK(s.markers_sent == 2);
    CHECK(s.markers_received == 2);
    CHECK(s.bytes_sent == 2 * 8 * 5);
    CHECK(s.payload_bytes_sent == 0);
    CHECK(s.full_gathers == 1);
    REQUIRE(s.inputs_combined.size() == 1);  // the one gather combined 0 inputs
  }
}

TEST_CASE("scatter(to{...}) rejects an id that is not an out-neighbour", "[vector][to]") {
  std::vector<std::string> errors(4);
  std::vector<std::uint64_t> clocks(4);
  std::vector<double> after(4);
  inproc::run(4, [&](inproc::context& c) {
    auto v = dml::make_vector<double>(c, 3, dml::topology::ring{});  // i -> i + 1
    try {
      v.scatter(dml::to{static_cast<dml::member_id>((c.rank() + 2) % 4)});
    } catch (const dml::config_error& e) {
      errors[c.rank()] = e.what();
    }
    clocks[c.rank()] = v.clock();  // nothing was sent
    std::fill(v.span().begin(), v.span().end(), double(c.rank()));
    v.scatter(dml::to{static_cast<dml::member_id>((c.rank() + 1) % 4)});  // the one out-neighbour
    v.gather();
    after[c.rank()] = v.span()[0];
  });
  for (dml::member_id m = 0; m < 4; ++m) {
    INFO(errors[m]);
    CHECK(errors[m].find("member " + std::to_string((m + 2) % 4) + " is not an out-neighbour of member " +
                         std::to_string(m)) != std::string::npos);
    CHECK(clocks[m] == 0);
    CHECK(after[m] == (double(m) + double((m + 3) % 4)) / 2);
  }
}

TEST_CASE("scatter(to{...}) under ssp: the neighbour keeps the older update within the slack",
          "[vector][to]") {
  // Two members, lock-stepped by barriers so the outcome is certain: member
  // 0 sends at clock 1 only and leaves member 1 out at clocks 2..6.
  std::vector<std::vector<seen>> log1;
  dml::vector_stats stats1;
  std::string error;
  inproc::run(2, [&](inproc::context& c) {
    std::vector<std::vector<seen>> log;
    try {
      auto v =
          dml::make_vector<double>(c, 4, dml::consistency::any::ssp(3), dml::topology::any(), recorder{&log});
      for (std::uint64_t t = 1; t <= 6; ++t) {
        std::fill(v.span().begin(), v.span().end(), value_of(c.rank(), t));
        if (c.rank() == 0 && t > 1)
          v.scatter(dml::to{});
        else
          v.scatter();
        v.barrier();
        v.gather();
        v.barrier();
      }
      if (c.rank() == 1) stats1 = v.stats();
    } catch (const std::exception& e) {
      error = e.what();
    }
    if (c.rank() == 1) log1 = std::move(log);
  });
  REQUIRE(error.empty());
  REQUIRE(log1.size() == 6);
  // Gathers 1..4 (oldest allowed clock max(t - 3, 1) <= 1) combine the clock-1
  // update, kept beside the markers; gathers 5 and 6 find only markers.
  for (std::size_t g = 0; g < 6; ++g) {
    INFO("gather " << g + 1);
    if (g < 4) {
      REQUIRE(log1[g].size() == 1);
      CHECK(log1[g][0].clock == 1);
      CHECK(log1[g][0].value == value_of(0, 1));
    } else {
      CHECK(log1[g].empty());
    }
  }
  CHECK(stats1.markers_received == 2);
  CHECK(stats1.full_gathers == 6);
}

TEST_CASE("scatter(to{...}) under a time-varying topology: this round's peer only", "[vector][to]") {
  // one_peer_exponential over 4 members: one peer per round; the union of a
  // period has two. Member m sends to its round's peer when m + clock is
  // even and to nobody otherwise; naming the union's other out-neighbour is
  // an error.
  constexpr std::size_t n = 4;
  constexpr std::uint64_t rounds = 6;
  const dml::topology::one_peer_exponential topo;
  std::vector<std::string> errors(n), wrong(n);
  inproc::options o;
  o.max_random_delay = 100us;
  inproc::run(
      n,
      [&](inproc::context& c) {
        const auto me = c.rank();
        try {
          auto v = dml::make_vector<double>(c, 3, topo, dml::gather::sum{});  // bsp
          for (std::uint64_t t = 1; t <= rounds; ++t) {
            const auto round = dml::topology::build_round(topo, n, t - 1);
            const dml::member_id peer = round.out(me)[0];
            if (t == 1) {
              for (auto m : v.out_neighbours()) {
                if (m == peer) continue;
                try {
                  v.scatter(dml::to{m});
                } catch (const dml::config_error& e) {
                  errors[me] = e.what();
                }
              }
            }
            std::fill(v.span().begin(), v.span().end(), value_of(me, t));
            if ((me + t) % 2 == 0)
              v.scatter(dml::to{peer});
            else
              v.scatter(dml::to{});
            v.gather();
            double want = value_of(me, t);
            for (auto s : round.in(me))
              if ((s + t) % 2 == 0) want += value_of(s, t);
            if (v.span()[0] != want && wrong[me].empty())
              wrong[me] = "member " + std::to_string(me) + " clock " + std::to_string(t) + ": got " +
                          std::to_string(v.span()[0]) + ", want " + std::to_string(want);
          }
          if (v.stats().full_gathers != rounds && wrong[me].empty()) wrong[me] = "not every gather was full";
        } catch (const std::exception& e) {
          wrong[me] = e.what();
        }
      },
      o);
  for (dml::member_id m = 0; m < n; ++m) {
    INFO(errors[m]);
    CHECK(errors[m].find("is not an out-neighbour of member " + std::to_string(m) + " at clock 1") !=
          std::string::npos);
    INFO(wrong[m]);
    CHECK(wrong[m].empty());
  }
}

TEST_CASE("scatter(to{...}) survives a member's failure under every policy", "[vector][to][fault]") {
  // Member 2 of 6 dies at some moment of the run; the survivors rebuild and
  // go on choosing destinations among their new out-neighbours. Whatever
  // the moment, every input combined was sent to its receiver, with its
  // sender's values, and under the exact policies is the round's own.
  using kind = dml::consistency::any::kind;
  const std::vector<dml::consistency::any> policies{dml::consistency::bsp{},
                                                    dml::consistency::notify_ack{},
                                                    dml::consistency::any::ssp(1),
                                                    dml::consistency::asp{},
                                                    dml::consistency::any::ssp_bounded(1, 50ms),
                                                    dml::consistency::any::asp_fresh(2)};
  for (const auto& cons : policies) {
    inproc::options o;
    o.kill_at.emplace_back(2, std::chrono::steady_clock::now() + 3ms);
    o.wait_limit = 20s;
    const auto logs = run_subsets(6, cons, dml::topology::halton{}, o);
    const bool exact = cons.held() == kind::bsp || cons.held() == kind::notify_ack;
    std::string problem;
    for (dml::member_id r = 0; r < logs.size() && problem.empty(); ++r) {
      if (r == 2) continue;
      const auto& m = logs[r];
      const std::string who = "member " + std::to_string(r) + ": ";
      if (!m.error.empty())
        problem = who + m.error;
      else if (m.gathers.size() != rounds)
        problem = who + std::to_string(m.gathers.size()) + " gathers";
      for (std::size_t g = 0; g < m.gathers.size() && problem.empty(); ++g)
        for (const auto& s : m.gathers[g])
          if (!sends(s.sender, r, s.clock) || s.value != value_of(s.sender, s.clock) || !s.uniform ||
              (exact && s.clock != g + 1))
            problem = who + "gather " + std::to_string(g + 1) + " input from " + std::to_string(s.sender) +
                      " clock " + std::to_string(s.clock);
    }
    INFO(cons.name() << ": " << problem);
    CHECK(problem.empty());
  }
}

// SPDX-License-Identifier: BSL-1.0
// A vector over a time-varying topology: under bsp, each round writes only
// to the round's peer and waits only for the round's sender, and
// gather::average with the round's weights gives every member the mean
// after R(n) rounds, on in-process ranks.
#include "check.hpp"
#include "support/catch.hpp"

#include <dml/dml.hpp>
#include <dml/topology/one_peer_exponential.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace topo = dml::topology;

namespace {

struct member_result {
  std::vector<double> after_r;     // the vector after R(n) rounds
  std::vector<double> after_more;  // and after another two periods
  std::size_t most_inputs = 0;     // the most inputs one gather combined
  std::uint64_t bytes_sent = 0;
  std::string error;
};

double start_value(std::size_t rank, std::size_t n) {
  // Distinct, irregular values: no two members agree by accident.
  return std::sin(static_cast<double>(rank * 7 + n)) * 100.0 + static_cast<double>(rank);
}

}  // namespace

TEST_CASE("one_peer_exponential: bsp + gather::average give every member the mean after R(n) rounds",
          "[topology][vector]") {
  const topo::one_peer_exponential gen;
  for (std::size_t n = 2; n <= 40; ++n) {
    INFO("n = " << n);
    const std::size_t rounds = gen.exact_after_rounds(n);
    std::vector<member_result> results(n);
    dml::comm::inproc::run(n, [&](dml::comm::inproc::context& c) {
      auto& mine = results[c.rank()];
      try {
        auto v = dml::make_vector<double>(c, 3, gen, dml::consistency::bsp{}, dml::gather::average{});
        const double x = start_value(c.rank(), n);
        v.span()[0] = x;
        v.span()[1] = -2 * x;
        v.span()[2] = static_cast<double>(c.rank());
        for (std::size_t r = 0; r < rounds; ++r) {
          v.scatter();
          v.gather();
        }
        mine.after_r.assign(v.span().begin(), v.span().end());
        for (std::size_t r = 0; r < 2 * gen.period(n); ++r) {
          v.scatter();
          v.gather();
        }
        mine.after_more.assign(v.span().begin(), v.span().end());
        const auto& hist = v.stats().inputs_combined;
        for (std::size_t k = 0; k < hist.size(); ++k)
          if (hist[k] != 0) mine.most_inputs = k;
        mine.bytes_sent = v.stats().bytes_sent;
      } catch (const std::exception& e) {
        mine.error = e.what();
      }
    });
    std::vector<double> mean(3, 0.0);
    for (std::size_t i = 0; i < n; ++i) {
      mean[0] += start_value(i, n);
      mean[1] += -2 * start_value(i, n);
      mean[2] += static_cast<double>(i);
    }
    for (auto& m : mean) m /= static_cast<double>(n);
    for (std::size_t i = 0; i < n; ++i) {
      INFO("member " << i);
      const auto& r = results[i];
      REQUIRE(r.error.empty());
      REQUIRE(r.after_r.size() == 3);
      for (std::size_t e = 0; e < 3; ++e) {
        CHECK(std::abs(r.after_r[e] - mean[e]) <= 1e-12);
        CHECK(std::abs(r.after_more[e] - mean[e]) <= 1e-12);
      }
      CHECK(r.most_inputs <= 1);  // one peer per round
    }
  }
}

TEST_CASE("one_peer_exponential: a vector sends only to the round's peer", "[topology][vector]") {
  // n = 8: every member sends once per round, so 3 rounds send 3 updates,
  // although each member has 3 out-neighbours in the union graph.
  std::vector<std::uint64_t> sent(8), per_update(8);
  std::vector<std::size_t> out_degree(8);
  dml::comm::inproc::run(8, [&](dml::comm::inproc::context& c) {
    auto v = dml::make_vector<double>(c, 16, topo::one_peer_exponential{}, dml::consistency::bsp{});
    out_degree[c.rank()] = v.out_neighbours().size();
    v.scatter();
    v.gather();
    per_update[c.rank()] = v.stats().bytes_sent;
    v.scatter();
    v.gather();
    v.scatter();
    v.gather();
    sent[c.rank()] = v.stats().bytes_sent;
  });
  for (std::size_t i = 0; i < 8; ++i) {
    CHECK(out_degree[i] == 3);
    CHECK(per_update[i] > 0);
    CHECK(sent[i] == 3 * per_update[i]);
  }
}

// SPDX-License-Identifier: BSL-1.0
// The Lasso program of examples/lasso against serial coordinate descent
// run to convergence: the same objective (within 1e-4 relative) and the
// same support, also after members died mid-run (the survivors take over
// their rows); and its errors.
#include <dml/comm/inproc.hpp>
#include <dml/fault/membership.hpp>
#include <dml/schedule.hpp>

#include <catch2/catch.hpp>

#include "lasso/lasso.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <span>
#include <utility>
#include <vector>

namespace {

namespace sch = dml::schedule;
using dml::comm::inproc::run;

lasso::generated test_data() {
  lasso::generator_settings g;
  g.rows = 600;
  g.features = 200;
  g.block = 10;
  g.support = 15;
  g.rho = 0.7;
  g.density = 0.2;
  g.noise = 0.3;
  g.seed = 21;
  return lasso::generate(g);
}

std::vector<std::size_t> support(const std::vector<double>& b) {
  std::vector<std::size_t> s;
  for (std::size_t a = 0; a < b.size(); ++a)
    if (b[a] != 0) s.push_back(a);
  return s;
}

// One run of the dynamic engine per setup, each checked against the
// serial reference: every member's coefficients identical, the objective
// within 1e-4 relative, the same support.
struct setup {
  lasso::schedule_kind kind;
  std::size_t ranks, depth, set_size;
};

void check_against_serial(const lasso::dataset& d, double lambda, lasso::loss kind,
                          const lasso::serial_result& ref, std::initializer_list<setup> setups,
                          std::size_t coordinate_updates) {
  for (const auto& c : setups) {
    std::vector<std::vector<double>> betas(c.ranks);
    std::vector<double> objectives(c.ranks);
    run(c.ranks, [&](auto& comm) {
      lasso::settings s;
      s.kind = kind;
      s.lambda = lambda;
      s.schedule = c.kind;
      s.set_size = c.set_size;
      s.tau = 0.3;
      s.report_every = 1000000;
      lasso::program prog(d, comm.rank(), c.ranks, s);
      (void)sch::run(comm, prog, sch::dynamic{.depth = c.depth, .seed = 4}, coordinate_updates / c.set_size);
      betas[comm.rank()] = prog.beta();
      objectives[comm.rank()] = lasso::objective(d, prog.beta(), lambda, kind);
    });
    INFO(lasso::name(c.kind) << ", " << c.ranks << " ranks, depth " << c.depth);
    for (std::size_t q = 1; q < c.ranks; ++q) CHECK(betas[q] == betas[0]);
    CHECK(std::abs(objectives[0] - ref.objective) <= 1e-4 * ref.objective);
    CHECK(support(betas[0]) == support(ref.beta));
  }
}

TEST_CASE("the serial reference converges and its planted columns survive") {
  const auto data = test_data();
  const double lambda = 0.05 * lasso::lambda_max(data.data);
  const auto ref = lasso::serial_cd(data.data, lambda);
  CHECK(ref.sweeps < 100000);
  CHECK(ref.objective < lasso::objective(data.data, std::vector<double>(200, 0.0), lambda));
  std::size_t found = 0;
  for (std::size_t a = 0; a < 200; ++a)
    if (data.truth[a] != 0 && ref.beta[a] != 0) ++found;
  CHECK(found >= 12);  // of 15
}

TEST_CASE("Lasso with every schedule matches serial coordinate descent") {
  const auto data = test_data();
  const double lambda = 0.05 * lasso::lambda_max(data.data);
  const auto ref = lasso::serial_cd(data.data, lambda);
  check_against_serial(
      data.data, lambda, lasso::loss::squared, ref,
      {setup{lasso::schedule_kind::smp, 4, 1, 8}, setup{lasso::schedule_kind::smp, 3, 3, 8},
       setup{lasso::schedule_kind::priority, 2, 1, 4}, setup{lasso::schedule_kind::random, 4, 2, 2}},
      30000);
}

lasso::generated logistic_data() {
  lasso::generator_settings g;
  g.kind = lasso::loss::logistic;
  g.rows = 600;
  g.features = 200;
  g.block = 10;
  g.support = 15;
  g.rho = 0.7;
  g.density = 0.2;
  g.seed = 21;
  return lasso::generate(g);
}

TEST_CASE("sparse logistic regression matches serial coordinate descent") {
  const auto data = logistic_data();
  for (double y : data.data.y) REQUIRE((y == 1 || y == -1));
  const auto kind = lasso::loss::logistic;
  const double lambda = 0.1 * lasso::lambda_max(data.data, kind);
  const auto ref = lasso::serial_cd(data.data, lambda, 1e-12, 100000, kind);
  CHECK(ref.sweeps < 100000);
  CHECK(ref.objective < lasso::objective(data.data, std::vector<double>(200, 0.0), lambda, kind));
  std::size_t found = 0;
  for (std::size_t a = 0; a < 200; ++a)
    if (data.truth[a] != 0 && ref.beta[a] != 0) ++found;
  CHECK(found >= 10);  // of 15
  check_against_serial(data.data, lambda, kind, ref,
                       {setup{lasso::schedule_kind::smp, 3, 1, 8}, setup{lasso::schedule_kind::smp, 4, 2, 8},
                        setup{lasso::schedule_kind::random, 3, 1, 4}},
                       40000);
}

// A Lasso program whose member stops (as if its process died) inside
// update() of iteration `at`.
struct dying_program : lasso::program {
  using lasso::program::program;
  std::function<void()> die;
  std::uint64_t at = 0;
  void update(const sch::step& s, std::span<double> out) {
    if (die && s.iteration == at) die();
    lasso::program::update(s, out);
  }
};
static_assert(sch::reshardable_program<dying_program>);

TEST_CASE("Lasso goes on over the survivors of dead members and still matches serial coordinate descent") {
  const auto data = test_data();
  const double lambda = 0.05 * lasso::lambda_max(data.data);
  const auto ref = lasso::serial_cd(data.data, lambda);
  struct death {
    std::size_t member;
    std::uint64_t iteration;
  };
  struct scenario {
    std::size_t ranks, depth;
    std::vector<death> deaths;
  };
  // Iteration 0 dies inside the first schedule's sums of column norms (the
  // program's and dyn_regr's); depth 3 keeps three iterations in flight;
  // two deaths in one run.
  const std::vector<scenario> scenarios{
      {3, 1, {{1, 40}}}, {3, 3, {{2, 25}}}, {3, 1, {{1, 0}}}, {4, 2, {{1, 30}, {3, 90}}}};
  for (const auto& c : scenarios) {
    std::vector<std::vector<double>> betas(c.ranks);
    std::vector<sch::run_stats> stats(c.ranks);
    std::vector<char> finished(c.ranks, 0);
    run(c.ranks, [&](auto& comm) {
      lasso::settings s;
      s.lambda = lambda;
      s.schedule = lasso::schedule_kind::smp;
      s.set_size = 8;
      s.tau = 0.3;
      s.report_every = 1000000;
      dying_program prog(data.data, comm.rank(), c.ranks, s);
      for (const auto& d : c.deaths)
        if (d.member == comm.rank()) {
          prog.at = d.iteration;
          prog.die = [&] { comm.stop(); };
        }
      stats[comm.rank()] = sch::run(comm, prog, sch::dynamic{.depth = c.depth, .seed = 4}, 30000 / 8);
      betas[comm.rank()] = prog.beta();
      finished[comm.rank()] = 1;
    });
    INFO(c.ranks << " ranks, depth " << c.depth << ", " << c.deaths.size()
                 << " death(s), the first in iteration " << c.deaths[0].iteration);
    std::vector<std::size_t> survivors;
    for (std::size_t q = 0; q < c.ranks; ++q)
      if (std::none_of(c.deaths.begin(), c.deaths.end(), [&](const death& d) { return d.member == q; }))
        survivors.push_back(q);
    for (std::size_t q : survivors) {
      REQUIRE(finished[q]);
      CHECK(betas[q] == betas[survivors[0]]);  // the same model on every survivor, to the bit
      CHECK(stats[q].failures_survived >= 1);
      CHECK(stats[q].iterations == 30000 / 8);  // every iteration applied once
    }
    const auto& beta = betas[survivors[0]];
    CHECK(std::abs(lasso::objective(data.data, beta, lambda) - ref.objective) <= 1e-4 * ref.objective);
    CHECK(support(beta) == support(ref.beta));
  }
}

TEST_CASE("under the abort policy a dead member still ends the Lasso run with an error naming it") {
  const auto data = test_data();
  const double lambda = 0.05 * lasso::lambda_max(data.data);
  std::size_t named = 99;
  try {
    run(3, [&](auto& comm) {
      dml::fault::set_policy(comm, dml::fault::policy::abort);
      lasso::settings s;
      s.lambda = lambda;
      s.set_size = 8;
      s.report_every = 1000000;
      dying_program prog(data.data, comm.rank(), 3, s);
      if (comm.rank() == 1) {
        prog.at = 20;
        prog.die = [&] { comm.stop(); };
      }
      (void)sch::run(comm, prog, sch::dynamic{.depth = 2, .seed = 4}, 1000000);
    });
  } catch (const dml::peer_failure& e) {
    named = e.rank();
  }
  CHECK(named == 1);
}

TEST_CASE("logistic labels are +-1 or 0/1") {
  lasso::dataset d;
  const std::vector<std::pair<lasso::parameter, double>> row{{0, 1.0}};
  d.add_row(0, row);
  d.add_row(1, row);
  CHECK(lasso::logistic_labels(d).y == std::vector<double>{-1, 1});
  d.add_row(2.5, row);
  CHECK_THROWS_WITH(lasso::logistic_labels(d), Catch::Contains("row 3 has 2.5"));
}

TEST_CASE("the Lasso program refuses bad input with clear errors") {
  const auto data = test_data();
  lasso::settings s;
  s.lambda = -1;
  CHECK_THROWS_WITH(lasso::program(data.data, 0, 1, s),
                    Catch::Contains("lambda must be a finite number >= 0"));
  s.lambda = 1;
  CHECK_THROWS_WITH(lasso::program(lasso::dataset{}, 0, 1, s), Catch::Contains("the data set has no rows"));
  s.tau = 2;
  CHECK_THROWS_WITH(lasso::program(data.data, 0, 1, s), Catch::Contains("tau must be in [0, 1]"));
  lasso::generator_settings g;
  g.rho = 1;
  CHECK_THROWS_WITH(lasso::generate(g), Catch::Contains("rho must be in [0, 1)"));
}

}  // namespace

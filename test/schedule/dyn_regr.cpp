// SPDX-License-Identifier: BSL-1.0
// dyn_regr (SMPFRAME Algorithm 2): every member computes the same
// schedule; kept sets respect tau; the variants; bad settings.
#include <dml/comm/inproc.hpp>
#include <dml/schedule.hpp>

#include <catch2/catch.hpp>

#include "lasso/lasso.hpp"

#include <cmath>
#include <cstddef>
#include <set>
#include <vector>

namespace {

namespace sch = dml::schedule;
using dml::comm::inproc::run;

lasso::generated small_data() {
  lasso::generator_settings g;
  g.rows = 400;
  g.features = 120;
  g.block = 10;
  g.support = 12;
  g.rho = 0.7;
  g.density = 0.3;
  g.seed = 5;
  return lasso::generate(g);
}

// |correlation| of two columns over all rows.
double correlation(const lasso::columns& c, sch::parameter a, sch::parameter b) {
  const double na = c.local_norm2(a), nb = c.local_norm2(b);
  return na > 0 && nb > 0 ? std::abs(c.local_dot(a, b)) / std::sqrt(na * nb) : 0.0;
}

// Records the jobs of a Lasso run on every member.
struct recording : lasso::program {
  using lasso::program::program;
  std::vector<sch::job> jobs;
  sch::job schedule(sch::context& ctx) {
    jobs.push_back(lasso::program::schedule(ctx));
    return jobs.back();
  }
};

TEST_CASE("dyn_regr computes the same schedule on every member") {
  const auto data = small_data();
  const lasso::columns all(data.data, 0, 1);
  for (auto kind : {lasso::schedule_kind::random, lasso::schedule_kind::priority, lasso::schedule_kind::smp})
    for (std::size_t depth : {1u, 3u}) {
      const std::size_t p = 4;
      std::vector<std::vector<sch::job>> jobs(p);
      std::vector<std::vector<double>> betas(p);
      run(p, [&](auto& comm) {
        lasso::settings s;
        s.lambda = 5;
        s.schedule = kind;
        s.set_size = 8;
        recording prog(data.data, comm.rank(), p, s);
        (void)sch::run(comm, prog, sch::dynamic{.depth = depth, .seed = 3}, 60);
        jobs[comm.rank()] = prog.jobs;
        betas[comm.rank()] = prog.beta();
      });
      INFO(lasso::name(kind) << ", depth " << depth);
      REQUIRE(jobs[0].size() == 60);
      for (std::size_t q = 1; q < p; ++q) {
        CHECK(jobs[q] == jobs[0]);
        CHECK(betas[q] == betas[0]);  // the same bits: aggregate adds in member order
      }
      // no parameter twice in a set, and (depth 3) none that is still in flight
      for (std::size_t t = 0; t < jobs[0].size(); ++t) {
        const std::set<sch::parameter> unique(jobs[0][t].begin(), jobs[0][t].end());
        CHECK(unique.size() == jobs[0][t].size());
        for (std::size_t back = 1; back < depth && back <= t; ++back)
          for (auto a : jobs[0][t - back]) {
            CHECK(unique.count(a) == 0);
            // smp: nothing correlated above tau with a parameter still in flight
            if (kind == lasso::schedule_kind::smp)
              for (auto b : jobs[0][t]) CHECK(correlation(all, a, b) <= 0.2 + 1e-12);
          }
      }
    }
}

TEST_CASE("dyn_regr's sets respect tau; random sets do not") {
  const auto data = small_data();
  const lasso::columns all(data.data, 0, 1);
  for (double tau : {0.05, 0.3, 0.6}) {
    std::vector<sch::job> jobs;
    std::uint64_t conflicts = 0;
    run(3, [&](auto& comm) {
      lasso::settings s;
      s.lambda = 5;
      s.schedule = lasso::schedule_kind::smp;
      s.set_size = 10;
      s.tau = tau;
      recording prog(data.data, comm.rank(), 3, s);
      (void)sch::run(comm, prog, sch::dynamic{.seed = 9}, 50);
      if (comm.rank() == 0) {
        jobs = prog.jobs;
        conflicts = prog.scheduler().conflicts();
      }
    });
    INFO("tau " << tau);
    CHECK(conflicts > 0);  // blocks of 10 columns correlated by about 0.7: the check must drop some
    for (const auto& j : jobs)
      for (std::size_t i = 0; i < j.size(); ++i)
        for (std::size_t k = i + 1; k < j.size(); ++k) CHECK(correlation(all, j[i], j[k]) <= tau + 1e-12);
  }
  // Without the check, correlated pairs are scheduled together.
  std::vector<sch::job> jobs;
  run(2, [&](auto& comm) {
    lasso::settings s;
    s.lambda = 5;
    s.schedule = lasso::schedule_kind::random;
    s.set_size = 10;
    recording prog(data.data, comm.rank(), 2, s);
    (void)sch::run(comm, prog, sch::dynamic{.seed = 9}, 50);
    if (comm.rank() == 0) jobs = prog.jobs;
  });
  bool correlated = false;
  for (const auto& j : jobs)
    for (std::size_t i = 0; i < j.size(); ++i)
      for (std::size_t k = i + 1; k < j.size(); ++k)
        correlated = correlated || correlation(all, j[i], j[k]) > 0.3;
  CHECK(correlated);
}

TEST_CASE("dyn_regr refuses bad settings with clear errors") {
  auto with = [](auto change) {
    sch::dyn_regr_options o;
    change(o);
    return o;
  };
  CHECK_THROWS_WITH(sch::dyn_regr(10, with([](auto& o) { o.tau = -0.1; })),
                    Catch::Contains("tau must be in [0, 1], got -0.1"));
  CHECK_THROWS_WITH(sch::dyn_regr(10, with([](auto& o) { o.tau = 1.5; })),
                    Catch::Contains("tau must be in [0, 1]"));
  CHECK_THROWS_WITH(sch::dyn_regr(10, with([](auto& o) { o.tau = std::nan(""); })),
                    Catch::Contains("tau must be in [0, 1]"));
  CHECK_THROWS_WITH(sch::dyn_regr(10, with([](auto& o) { o.set_size = 0; })),
                    Catch::Contains("set_size must be >= 1"));
  CHECK_THROWS_WITH(sch::dyn_regr(10, with([](auto& o) { o.candidates = 3; })),
                    Catch::Contains("candidates (3) must be at least set_size (8)"));
  CHECK_THROWS_WITH(sch::dyn_regr(10, with([](auto& o) { o.floor = -1; })), Catch::Contains("floor must be"));
  CHECK_THROWS_WITH(sch::dyn_regr(0, sch::dyn_regr_options{}),
                    Catch::Contains("the model has no parameters"));
  sch::dyn_regr ok(10, sch::dyn_regr_options{});
  CHECK_THROWS_WITH(ok.record(10, 1.0), Catch::Contains("parameter 10 of 10"));
  CHECK(ok.options().candidates == 16);
}

}  // namespace

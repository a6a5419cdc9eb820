// SPDX-License-Identifier: BSL-1.0
// dml-cocoa's math (cocoa.hpp) without communication: serial SDCA ends at
// a point that satisfies the elastic net's optimality conditions with a
// duality gap near 0, and one CoCoA round with either merge, simulated
// over K local solvers, never lowers the dual.
#include "cocoa.hpp"

#include "support/catch.hpp"

#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

namespace {

// n rows of d features (about half zero), two outputs with planted weights
// and noise; deterministic.
cocoa::problem planted(std::size_t n, std::size_t d, double lambda, double l1_ratio) {
  cocoa::problem p;
  p.x.d = d + 1;
  p.outputs = 2;
  p.lambda = lambda;
  p.l1_ratio = l1_ratio;
  std::uint64_t seed = 12345;
  auto uniform = [&seed] {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(seed >> 11) / 9007199254740992.0;  // [0, 1)
  };
  std::vector<std::pair<std::size_t, double>> row;
  for (std::size_t i = 0; i < n; ++i) {
    row.clear();
    double z0 = 0.3, z1 = -0.2;
    for (std::size_t j = 0; j < d; ++j) {
      if (uniform() < 0.5) continue;
      const double x = 2 * uniform() - 1;
      row.emplace_back(j, x);
      z0 += (j < 3 ? 1.5 : 0.0) * x;
      z1 += (j % 4 == 1 ? -1.0 : 0.0) * x;
    }
    p.x.add(row);
    p.y.push_back(z0 + 0.1 * (uniform() - 0.5));
    p.y.push_back(z1 + 0.1 * (uniform() - 0.5));
  }
  return p;
}

// The dual at the duals `a` of the samples `shards` (one block per member).
double dual_of(const cocoa::problem& p, const std::vector<cocoa::local_solver>& members) {
  std::vector<double> v(p.width(), 0.0);
  double linear = 0;
  for (const auto& m : members) cocoa::add_dual_sums(p, m.shard(), m.duals(), linear, v);
  return cocoa::dual(p, linear, v);
}

}  // namespace

TEST_CASE("serial SDCA ends at the elastic net's optimum", "[cocoa]") {
  const cocoa::problem p = planted(200, 12, 0.05, 0.6);
  const cocoa::serial_result r = cocoa::serial_sdca(p, 400, p.x.n, 7);
  std::vector<double> w;
  cocoa::weights_of(p, r.v, w);
  const double gap = cocoa::primal(p, w) - cocoa::dual(p, r.linear, r.v);
  CHECK(gap >= -1e-12);
  CHECK(gap < 1e-10);
  // Optimality: g_j = 1/n sum_i (x_i . w_c - y_ic) x_ij + l2 w_jc; for a
  // nonzero weight g_j = -l1 sign(w_jc), for a zero one |g_j| <= l1.
  const std::size_t C = p.outputs;
  std::vector<double> g(p.width(), 0.0), z(C);
  for (std::size_t i = 0; i < p.x.n; ++i) {
    cocoa::predict(p.x, C, w, i, z.data());
    for (std::size_t e = p.x.start[i]; e < p.x.start[i + 1]; ++e)
      for (std::size_t c = 0; c < C; ++c)
        g[p.x.col[e] * C + c] += (z[c] - p.y[i * C + c]) * p.x.val[e] / static_cast<double>(p.x.n);
  }
  std::size_t zeros = 0;
  for (std::size_t q = 0; q < g.size(); ++q) {
    g[q] += p.l2() * w[q];
    if (w[q] != 0) {
      CHECK(std::fabs(g[q] + p.l1() * (w[q] > 0 ? 1 : -1)) < 1e-6);
    } else {
      ++zeros;
      CHECK(std::fabs(g[q]) <= p.l1() + 1e-6);
    }
  }
  CHECK(zeros > 0);  // the L1 part selects: the planted model is sparse
}

TEST_CASE("a CoCoA round never lowers the dual, averaging or adding", "[cocoa]") {
  const cocoa::problem p = planted(240, 12, 0.02, 0.5);
  for (const bool adding : {false, true}) {
    const std::size_t K = 4;
    const double gamma = adding ? 1.0 : 1.0 / K, sigma = adding ? static_cast<double>(K) : 1.0;
    std::vector<cocoa::local_solver> members;
    for (std::size_t k = 0; k < K; ++k) members.emplace_back(p, cocoa::shard_of(p.x.n, k, K, 3), 3, k);
    std::vector<double> v(p.width(), 0.0), local;
    std::vector<double> changes(p.width());
    double previous = dual_of(p, members), first = previous;
    bool never_lower = true;
    for (std::size_t round = 0; round < 30; ++round) {
      std::fill(changes.begin(), changes.end(), 0.0);
      for (auto& m : members) {
        local = v;
        m.solve(v, sigma, 40, local, [](std::size_t) {});
        for (std::size_t j = 0; j < v.size(); ++j) changes[j] += local[j] - v[j];
      }
      for (std::size_t j = 0; j < v.size(); ++j) v[j] += gamma * changes[j];
      for (auto& m : members) m.commit(gamma);
      const double now = dual_of(p, members);
      never_lower = never_lower && now >= previous - 1e-12;
      previous = now;
    }
    CHECK(never_lower);
    CHECK(previous > first);
  }
}

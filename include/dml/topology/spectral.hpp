// SPDX-License-Identifier: BSL-1.0
/// @file
/// The spectral gap of a communication graph (ASAP, appendix A): how fast
/// repeated averaging over the graph mixes. Kept apart from graph.hpp: only
/// programs that analyse graphs need it.
#pragma once

#include <dml/fwd.hpp>
#include <dml/topology/graph.hpp>
#include <dml/version.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>
#include <vector>

DML_BEGIN_NAMESPACE
// In dml::detail, not dml::topology::detail: a topology::detail namespace
// would hide dml::detail from the generators' unqualified detail:: calls in
// every header included after this one.
namespace detail {

/// The second-largest singular value of the n x n matrix whose columns are
/// the rows of `cols` (one-sided Jacobi, Hestenes: rotate pairs of columns
/// until all are orthogonal; the singular values are then the column norms,
/// accurate to rounding relative to the largest one, also when they are 0).
[[nodiscard]] inline double second_singular_value(std::vector<double> cols, std::size_t n) {
  constexpr double eps = 1e-15;
  auto dot = [&](std::size_t p, std::size_t q) {
    const double* x = cols.data() + p * n;
    const double* y = cols.data() + q * n;
    double s = 0;
    for (std::size_t k = 0; k < n; ++k) s += x[k] * y[k];
    return s;
  };
  std::vector<double> norm2(n);
  for (std::size_t p = 0; p < n; ++p) norm2[p] = dot(p, p);
  for (int sweep = 0; sweep < 60; ++sweep) {
    bool rotated = false;
    for (std::size_t p = 0; p + 1 < n; ++p) {
      for (std::size_t q = p + 1; q < n; ++q) {
        const double alpha = norm2[p], beta = norm2[q];
        const double gamma = dot(p, q);
        if (gamma == 0 || std::abs(gamma) <= eps * std::sqrt(alpha * beta)) continue;
        rotated = true;
        const double zeta = (beta - alpha) / (2 * gamma);
        const double t = (zeta >= 0 ? 1.0 : -1.0) / (std::abs(zeta) + std::sqrt(1 + zeta * zeta));
        const double c = 1 / std::sqrt(1 + t * t), s = c * t;
        double* x = cols.data() + p * n;
        double* y = cols.data() + q * n;
        for (std::size_t k = 0; k < n; ++k) {
          const double xp = x[k], yq = y[k];
          x[k] = c * xp - s * yq;
          y[k] = s * xp + c * yq;
        }
        norm2[p] = dot(p, p);
        norm2[q] = dot(q, q);
      }
    }
    if (!rotated) break;
  }
  std::sort(norm2.begin(), norm2.end(), std::greater<>());
  return std::sqrt(std::max(norm2[1], 0.0));
}

}  // namespace detail

namespace topology {

/// The spectral gap 1 - sigma_2(P) of the averaging matrix P of g, as ASAP
/// (Kadav and Kruus, appendix A) defines it:
///
/// - A is the n x n adjacency matrix with self-loops: A[i][j] = 1 when member
///   j sends to member i, and A[i][i] = 1 (a member averages in its own value);
/// - P = D^-1 A with D = diag(in-degree + 1), so row i of P averages what
///   member i holds after a gather; P is row-stochastic;
/// - sigma_2 is the second-largest singular value of P.
///
/// Rows and columns follow ascending member ids. The larger the gap, the
/// fewer rounds of averaging it takes for all members to agree; a complete
/// graph has gap 1 (P has rank one). A graph that is not strongly connected
/// has gap <= 0, but the converse does not hold: when in-degrees differ, P is
/// not doubly stochastic and singular values above 1 appear (a two-way chain
/// of 64 members has gap -0.0017 although it is connected), so compare gaps
/// mainly between regular graphs. For a single member there is nothing to mix
/// and the gap is defined as 1.
///
/// A graph with mixing weights (`graph::has_weights`) uses them instead of
/// the ones: A[i][i] = self_weight(i), A[i][j] = the weight i gives j, and
/// D = diag(row sums of A), so P = D^-1 A is the matrix gather::average
/// applies (a row-stochastic W is used as given). Without weights the
/// computation is the one above, unchanged. Costs O(n^3) time per sweep of a one-sided
/// Jacobi SVD (a handful of sweeps; about a second at n = 256) and O(n^2)
/// memory.
[[nodiscard]] inline double spectral_gap(const graph& g) {
  const std::size_t n = g.size();
  if (n == 1) return 1.0;
  const auto members = g.members();
  // The columns of P are the rows of `a`: a[j * n + i] = P[i][j].
  std::vector<double> a(n * n, 0.0);
  if (g.has_weights()) {
    for (std::size_t i = 0; i < n; ++i) {
      const auto senders = g.in(members[i]);
      const auto weights = g.in_weights(members[i]);
      double total = g.self_weight(members[i]);
      for (const double w : weights) total += w;
      a[i * n + i] = g.self_weight(members[i]) / total;
      for (std::size_t e = 0; e < senders.size(); ++e) a[g.index_of(senders[e]) * n + i] = weights[e] / total;
    }
    return 1.0 - detail::second_singular_value(a, n);
  }
  for (std::size_t i = 0; i < n; ++i) {
    const auto senders = g.in(members[i]);
    const double weight = 1.0 / static_cast<double>(senders.size() + 1);
    a[i * n + i] = weight;
    for (const member_id j : senders) a[g.index_of(j) * n + i] = weight;
  }
  return 1.0 - detail::second_singular_value(a, n);
}

}  // namespace topology
DML_END_NAMESPACE

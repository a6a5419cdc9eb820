// SPDX-License-Identifier: BSL-1.0
/// @file
/// The spectral gap of a communication graph (ASAP, appendix A): how fast
/// repeated averaging over the graph mixes. Kept apart from graph.hpp because
/// it needs Eigen's SVD, which is slow to compile.
#pragma once

#include <dml/fwd.hpp>
#include <dml/topology/graph.hpp>
#include <dml/version.hpp>

#include <Eigen/Core>
#include <Eigen/SVD>

#include <cstddef>

DML_BEGIN_NAMESPACE
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
/// and the gap is defined as 1. Costs O(n^3) time and O(n^2) memory (a dense
/// SVD).
/// @tparam Matrix the dense matrix type used; a template parameter only so
///         that the SVD is instantiated in translation units that call this
///         function, not in every one that includes the header.
template <class Matrix = Eigen::MatrixXd>
[[nodiscard]] double spectral_gap(const graph& g) {
  const std::size_t n = g.size();
  if (n == 1) return 1.0;
  const auto members = g.members();
  const auto size = static_cast<Eigen::Index>(n);
  Matrix p = Matrix::Zero(size, size);
  for (std::size_t i = 0; i < n; ++i) {
    const auto senders = g.in(members[i]);
    const double weight = 1.0 / static_cast<double>(senders.size() + 1);
    const auto row = static_cast<Eigen::Index>(i);
    p(row, row) = weight;
    for (const member_id j : senders) p(row, static_cast<Eigen::Index>(g.index_of(j))) = weight;
  }
  // Singular values only (no U, V); BDCSVD hands small matrices to Jacobi.
  const Eigen::BDCSVD<Matrix> svd(p);
  return 1.0 - svd.singularValues()(1);
}

}  // namespace topology
DML_END_NAMESPACE

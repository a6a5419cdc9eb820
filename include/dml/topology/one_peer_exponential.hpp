// SPDX-License-Identifier: BSL-1.0
/// @file
/// A time-varying topology: at every round each member sends to at most one
/// peer, and after R(n) rounds of weighted averaging every member holds
/// exactly the mean of the starting values.
#pragma once

#include <dml/error.hpp>
#include <dml/fwd.hpp>
#include <dml/topology/concepts.hpp>
#include <dml/topology/detail/common.hpp>
#include <dml/topology/graph.hpp>
#include <dml/topology/time_varying.hpp>
#include <dml/version.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <type_traits>
#include <vector>

DML_BEGIN_NAMESPACE
namespace topology {

/// One-peer exponential graph with finite-time exact averaging for every n.
///
/// **n a power of two** (n = 2^p): in round t member i sends to
/// i + 2^(t mod p) (mod n), and every member averages its value with the
/// one it received, weights 1/2 and 1/2 (the one-peer exponential graph of
/// Ying et al., 2021). After round t member i holds the mean of the 2^(t+1)
/// starting values i - 2^(t+1) + 1 .. i, so after p rounds every member
/// holds the mean of all: R(n) = p.
///
/// **Any other n** (2^p < n < 2^(p+1), r = n - 2^p): members 0..2^p - 1 form
/// the core, members 2^p + j (j < r) are extras, each paired with core member
/// j. The schedule has p + 2 rounds:
///
/// 1. fold: extra 2^p + j sends to j, which averages the two (1/2, 1/2); core
///    member j now stands for c_j = 2 members (j < r), the others for 1;
/// 2. p rounds of the one-peer exponential graph on the core, t = 0..p-1:
///    member i receives from s = i - 2^t (mod 2^p) and weighs its value and
///    s's by the number of members each stands for: before the round, i holds
///    the mean over the window i - 2^t + 1 .. i of the core, standing for
///    C_i = sum of c over that window, and s for C_s over the window before
///    it, so the weights are C_i / (C_i + C_s) and C_s / (C_i + C_s), and
///    after the round i holds the mean over a window twice as long. After p
///    rounds each window is the whole core, which stands for all n members:
///    every core member holds the mean;
/// 3. unfold: core member j sends to extra 2^p + j, which takes the value
///    (self weight 0, weight 1 for j).
///
/// So R(n) = p + 2 = ceil(log2 n) + 1. No schedule in which each member
/// hears at most one peer per round can do better than ceil(log2 n) rounds
/// (a starting value reaches at most 2^t members in t rounds); at n = 3 that
/// bound cannot be met (member 0's value must reach two members in the
/// second round through one sender), so R(3) = 3 is the least possible.
/// This fold / one-peer exponential / unfold schedule is derived here for
/// one peer per round (the Base-(k+1) graphs of Takezawa et al., 2023, also
/// reach the exact mean in finitely many rounds for every n, with their own
/// construction). Weights are not plain averages: the core weighs by the
/// window counts and the unfold copies.
///
/// Every round's graph has out-degree and in-degree at most 1; its mixing
/// rows are row-stochastic and the product of one period's matrices is the
/// averaging matrix (1/n) 1 1^T. `out_lists(n)` is the union over a period:
/// the exponential graph over n for n = 2^p, the exponential graph over the
/// core plus j <-> 2^p + j otherwise.
struct one_peer_exponential {
  using policy_slot = slot::topology;

  /// R(n): after this many rounds, starting from round 0, every member
  /// holds exactly (up to rounding) the mean. 0 for n = 1.
  /// @throws dml::config_error when n = 0.
  [[nodiscard]] DML_DECL std::size_t exact_after_rounds(std::size_t n) const;

  /// Rounds before the schedule repeats: R(n), and 1 for n = 1.
  /// @throws dml::config_error when n = 0.
  [[nodiscard]] DML_DECL std::size_t period(std::size_t n) const;

  /// Out-lists of round t over members 0..n-1: at most one peer each.
  /// @throws dml::config_error when n = 0.
  [[nodiscard]] DML_DECL std::vector<std::vector<member_id>> round_out_lists(std::size_t n,
                                                                             std::uint64_t t) const;

  /// Mixing rows of round t: one per member, its self weight and the weight
  /// of the one member it hears, if any.
  /// @throws dml::config_error when n = 0.
  [[nodiscard]] DML_DECL std::vector<mixing_row> round_mixing(std::size_t n, std::uint64_t t) const;

  /// The union of the out-lists over one period.
  /// @throws dml::config_error when n = 0.
  [[nodiscard]] DML_DECL std::vector<std::vector<member_id>> out_lists(std::size_t n) const;

  [[nodiscard]] constexpr std::string_view name() const noexcept { return "one_peer_exponential"; }

  friend constexpr bool operator==(const one_peer_exponential&,
                                   const one_peer_exponential&) noexcept = default;

 private:
  struct edge {
    member_id from, to;
    double self_weight, weight;  // the receiver's row: its own weight and from's
  };

  DML_DECL static std::size_t floor_log2(std::size_t n) noexcept;

  // The edges of round t mod period(n), with the receivers' weights.
  [[nodiscard]] DML_DECL std::vector<edge> round_edges(std::size_t n, std::uint64_t t) const;
};

}  // namespace topology
DML_END_NAMESPACE

#if !defined(DML_SEPARATE_COMPILATION)
#include <dml/topology/impl/one_peer_exponential.ipp>
#endif

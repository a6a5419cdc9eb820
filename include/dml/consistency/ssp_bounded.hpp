// SPDX-License-Identifier: BSL-1.0
/// @file
/// Stale-synchronous with a bounded stall (MALT's SSP, EuroSys '15 §6.1):
/// wait for a lagging neighbour for a fixed time, then go on without it.
#pragma once

#include <dml/error.hpp>
#include <dml/fwd.hpp>

#include <chrono>
#include <cstdint>
#include <string>

DML_BEGIN_NAMESPACE
namespace detail {
/// ssp_bounded's gather with slack `s` and stall `stall` (also used by
/// consistency::any).
template <class P>
void ssp_bounded_gather(P& p, std::uint64_t s, std::chrono::milliseconds stall) {
  const std::uint64_t t = p.clock();
  const std::uint64_t oldest = t > s ? t - s : 1;
  const bool all = t <= s || p.wait_newest_at_least_for(oldest, stall);
  p.combine_newest(oldest, !all);
}
inline std::chrono::milliseconds checked_stall(std::chrono::milliseconds stall) {
  if (stall.count() < 0)
    throw config_error(
        "dml::consistency::ssp_bounded: stall " + std::to_string(stall.count()) +
        " ms is negative (give how long a gather may wait for a lagging neighbour, e.g. 50ms)");
  return stall;
}
inline std::string ssp_bounded_name(std::uint64_t s, std::chrono::milliseconds stall) {
  return "ssp_bounded<" + std::to_string(s) + "," + std::to_string(stall.count()) + "ms>";
}
}  // namespace detail

namespace consistency {

/// scatter: write, no waiting (as ssp<S>). gather at clock t: wait until
/// every live in-neighbour's newest complete update has clock ≥ t − S, as
/// ssp<S> does, but for at most `stall()` in all; then combine the newest
/// complete update of each in-neighbour with clock ≥ t − S. A neighbour
/// still lagging when the stall runs out contributes nothing to that
/// gather, so no gather ever combines an update older than t − S (MALT
/// merges only updates within the range of iteration counts, §6.1); what
/// is given up is ssp's bound on how far members drift apart. A stall that
/// ran out is counted in stats().stalls_expired, the neighbours it left
/// out in stats().laggards_left_out. A failed neighbour is not waited for
/// (dml::peer_failure at once, as under ssp<S>). A scatter with
/// dml::to{...} behaves as under ssp<S>.
///
/// The stall is part of the policy's name ("ssp_bounded<2,50ms>"), which
/// members compare when they build a vector: members given different
/// stalls get dml::config_error, as for different slacks.
/// @tparam S the slack: how many clocks an input may lag behind.
template <std::uint64_t S>
class ssp_bounded {
 public:
  using policy_slot = slot::consistency;
  static constexpr std::uint64_t slack = S;
  /// The stall when none is given.
  static constexpr std::chrono::milliseconds default_stall{100};

  /// `stall`: how long one gather may wait, in all, for lagging
  /// neighbours; dml::config_error when negative. 0 never waits.
  explicit ssp_bounded(std::chrono::milliseconds stall = default_stall)
      : stall_(detail::checked_stall(stall)) {}

  [[nodiscard]] std::chrono::milliseconds stall() const noexcept { return stall_; }
  [[nodiscard]] std::string name() const { return detail::ssp_bounded_name(S, stall_); }
  template <class P>
  void scatter(P& p) const {
    p.write_all_keeping_newest();
  }
  template <class P>
  void gather(P& p) const {
    detail::ssp_bounded_gather(p, S, stall_);
  }

 private:
  std::chrono::milliseconds stall_;
};

}  // namespace consistency
DML_END_NAMESPACE

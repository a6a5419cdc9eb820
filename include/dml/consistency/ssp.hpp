// SPDX-License-Identifier: BSL-1.0
/// @file
/// Stale-synchronous: bounded staleness with slack S.
#pragma once

#include <dml/fwd.hpp>

#include <cstdint>
#include <string>
#include <string_view>

DML_BEGIN_NAMESPACE
namespace detail {
/// ssp's gather with slack `s` (also used by consistency::any).
template <class P>
void ssp_gather(P& p, std::uint64_t s) {
  const std::uint64_t t = p.clock();
  const std::uint64_t oldest = t > s ? t - s : 1;
  if (t > s) p.wait_newest_at_least(oldest);
  p.combine_newest(oldest);
}
}  // namespace detail

namespace consistency {

/// scatter: write, no waiting. gather at clock t: wait until every live
/// in-neighbour's newest complete update has clock ≥ t − S, then combine the
/// newest complete update of each in-neighbour with clock ≥ t − S. No gather
/// ever combines an update older than t − S; a member whose neighbour lags
/// by more than S blocks until it catches up. A scatter with dml::to{...}
/// leaves a marker with the out-neighbours it leaves out, beside the newest
/// update it sent them: the marker's clock counts for the wait (the sender
/// has got that far), and the gather combines that older update if it is
/// still within the slack, or nothing from that sender.
/// @tparam S the slack: how many clocks an input may lag behind.
template <std::uint64_t S>
struct ssp {
  using policy_slot = slot::consistency;
  static constexpr std::uint64_t slack = S;
  [[nodiscard]] static std::string name() { return "ssp<" + std::to_string(S) + ">"; }
  template <class P>
  void scatter(P& p) const {
    p.write_all_keeping_newest();
  }
  template <class P>
  void gather(P& p) const {
    detail::ssp_gather(p, S);
  }
};

}  // namespace consistency
DML_END_NAMESPACE

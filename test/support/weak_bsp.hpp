// SPDX-License-Identifier: BSL-1.0
// For tests and benchmarks only, never for training: the barrier-only BSP
// that ASAP §4 and §6.2 (Fig. 8) measure, whose reduces combine torn or
// missing updates. It is here to show what dml's consistency::bsp prevents.
#pragma once

#include <dml/fwd.hpp>

#include <string_view>

namespace dml_test {

/// BSP as a barrier alone: ASAP's BSP sends, enters the barrier and
/// reduces, but never waits for its writes to land (no flush, no ack), so
/// a write may reach its receiver after the barrier, while the receiver
/// already reads. dml's in-process transport completes a put before it
/// returns, so a missing flush alone changes nothing there; this policy
/// plays the late arrival out by writing after the barrier. Its gather
/// never waits, checks each slot's header against its footer, and combines
/// what is complete and not combined before (as ASAP's consistency check
/// does): torn slots are counted (vector_stats::torn_reads) and skipped,
/// slots still holding the previous round are skipped or, if they were
/// missed then, combined a round late.
///
/// dml::consistency::bsp differs in the two places that matter: it flushes
/// its writes before the barrier, and its gather takes exactly the current
/// round's update of every in-neighbour.
struct weak_bsp {
  using policy_slot = dml::slot::consistency;
  [[nodiscard]] static constexpr std::string_view name() noexcept { return "weak_bsp"; }
  template <class P>
  void scatter(P& p) const {
    p.barrier();
    p.write_all();
  }
  template <class P>
  void gather(P& p) const {
    p.combine_unconsumed();
  }
};

}  // namespace dml_test

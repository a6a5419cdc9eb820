// SPDX-License-Identifier: BSL-1.0
/// @file
/// Bulk-synchronous: every gather combines exactly the current round's update
/// of every in-neighbour.
#pragma once

#include <dml/fwd.hpp>

#include <string_view>

DML_BEGIN_NAMESPACE
namespace consistency {

/// scatter: write slot t mod 2 of every out-neighbour, flush, barrier of the
/// live members. gather: combine exactly the clock-t update of every
/// in-neighbour (the barrier guarantees all of them are complete). A
/// scatter with dml::to{...} writes a marker (no payload) to the
/// out-neighbours it leaves out; their gather counts it as heard from and
/// combines only the updates sent to them.
struct bsp {
  using policy_slot = slot::consistency;
  [[nodiscard]] static constexpr std::string_view name() noexcept { return "bsp"; }
  template <class P>
  void scatter(P& p) const {
    p.write_all_exclusive();  // read only after the barrier, rewritten after the next
    p.flush_all();
    p.barrier();
  }
  template <class P>
  void gather(P& p) const {
    p.combine_exact(p.clock());
  }
};

}  // namespace consistency
DML_END_NAMESPACE

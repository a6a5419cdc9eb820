// SPDX-License-Identifier: BSL-1.0
/// @file
/// ASAP's NOTIFY-ACK: per-edge flow control without a global barrier.
#pragma once

#include <dml/fwd.hpp>

#include <string_view>

DML_BEGIN_NAMESPACE
namespace consistency {

/// scatter at round t: wait until every live out-neighbour acknowledged round
/// t − 1, write, flush, notify each out-neighbour. gather: wait for the
/// round-t notify of every live in-neighbour, combine exactly those updates,
/// then acknowledge each. Every gather combines every live in-neighbour, and
/// a sender is never more than one round ahead of its receivers. A scatter
/// with dml::to{...} writes a marker to the out-neighbours it leaves out and
/// notifies them all the same; they acknowledge the marker, so the waits
/// stay per edge and exact.
struct notify_ack {
  using policy_slot = slot::consistency;
  [[nodiscard]] static constexpr std::string_view name() noexcept { return "notify_ack"; }
  template <class P>
  void scatter(P& p) const {
    p.wait_acks(p.clock() - 1);
    p.write_all_exclusive();  // read only after the notification, rewritten after the ack
    p.flush_all();
    p.notify_all();
  }
  template <class P>
  void gather(P& p) const {
    p.wait_notifies(p.clock());
    p.combine_exact(p.clock());
    p.ack_all();
  }
};

}  // namespace consistency
DML_END_NAMESPACE

// SPDX-License-Identifier: BSL-1.0
/// @file
/// The consistency slot: who waits for what. A consistency policy is a type
/// that opts in with `using policy_slot = dml::slot::consistency;`, has a
/// `name()`, and two member templates the vector calls with its protocol
/// object `p`:
///
///     template <class P> void scatter(P& p) const;  // after the clock ticks
///     template <class P> void gather(P& p) const;   // combine inputs
///
/// The protocol offers the steps the built-in policies are made of:
/// `p.clock()`, `p.write_all()`, `p.write_all_exclusive()` (bsp,
/// notify_ack: nobody reads a slot while it is written),
/// `p.write_all_keeping_newest()`,
/// `p.write_destinations()`, `p.flush_all()`, `p.barrier()`,
/// `p.notify_all()`, `p.ack_all()`, `p.wait_acks(round)`,
/// `p.wait_notifies(round)`, `p.wait_newest_at_least(clock)`,
/// `p.wait_newest_at_least_for(clock, duration)`,
/// `p.combine_exact(clock)`, `p.combine_newest(min_clock[, count_left_out])`,
/// `p.combine_unconsumed([min_clock])`, and for policies whose members must agree on
/// something, the collective `p.exchange(record)` (with `p.live()`,
/// `p.rank()` and `p.stats()`).
/// See docs/vectors.md for what each guarantees.
#pragma once

#include <dml/detail/policy.hpp>
#include <dml/fwd.hpp>

#include <concepts>
#include <string_view>

DML_BEGIN_NAMESPACE
namespace consistency {

template <class C>
concept consistency_policy = detail::fills_slot_v<C, slot::consistency> && requires(const C& c) {
  { c.name() } -> std::convertible_to<std::string_view>;
};

}  // namespace consistency
DML_END_NAMESPACE

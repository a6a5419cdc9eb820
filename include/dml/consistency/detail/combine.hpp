// SPDX-License-Identifier: BSL-1.0
// Internal: what the built-in consistency policies combine, written once
// against the receiving side of a vector (its protocol). The policies call
// these through `p.combine_exact(c)`, `p.combine_newest(min)` and
// `p.combine_unconsumed()`; docs/vectors.md states the guarantees.
//
// The receiver R offers, for in-neighbour q and slot depth d:
//   in_count(), sender(q), skipped_through(q), consumed(q),
//   sends_in(q, c)               whether q sends in the round of clock c
//                                (false only under a time-varying topology)
//   wait(q, what, ready)         wait until ready() (peer failures, limits)
//   sync()                       make remote writes visible
//   complete_clock(q, d)         clock of the complete update, 0 if none
//   header_clock(q, d)           the header's clock (possibly mid-write)
//   take_in_place(q, d, c)       stage slot (q, d), holding clock c, as q's
//                                input read in place: slot_read::ok, ::marker
//                                (q sent nothing to this member at c) or
//                                ::torn (not valid)
//   take_copy(q, d)              stage a copy of slot (q, d) as q's input,
//                                with torn-write detection:
//                                slot_read::{ok, empty, torn, marker}
//   input_clock(q)               clock of q's staged input
//   add(q)                       combine q's staged input in this gather
//   begin(), apply()             start collecting inputs, then combine them
//   skip_too_old(q, c)           q's update of clock c is too old: never
//                                combine it (counted once)
//   count_lost(), count_stale(),
//   count_marker()               statistics
#pragma once

#include <dml/error.hpp>
#include <dml/fwd.hpp>
#include <dml/vector/detail/slots.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

DML_BEGIN_NAMESPACE
namespace detail {

/// Exactly the clock-c update of every in-neighbour, waiting for each one
/// that is not complete yet; read in place (nobody rewrites a slot before
/// the receiver let its writer go on: bsp's barrier, notify_ack's ack). A
/// clock-c marker completes the wait for its sender and adds no input.
/// `policy_name()` names the policy in the error for a gather before any
/// scatter.
template <class R, class Name>
void combine_exact(R& r, std::uint64_t c, Name&& policy_name) {
  if (c == 0)
    throw config_error("dml::dist_vector::gather: called before the first scatter() under " + policy_name() +
                       ", which combines the current round's updates");
  r.begin();
  const std::size_t d = c % slot_depth;
  for (std::size_t q = 0; q < r.in_count(); ++q) {
    if (!r.sends_in(q, c)) continue;  // not this round's peer (time-varying topology)
    if (c <= r.skipped_through(q)) {  // lost when the group shrank
      r.count_lost();
      continue;
    }
    slot_read read = slot_read::torn;
    r.wait(q, "its update", [&] {
      r.sync();
      const std::uint64_t got = r.complete_clock(q, d);
      if (got > c)
        throw config_error("dml::dist_vector::gather: member " + std::to_string(r.sender(q)) +
                           " overwrote its clock-" + std::to_string(c) + " update with clock " +
                           std::to_string(got) + " before it was combined (members called scatter() and " +
                           "gather() a different number of times?)");
      if (got != c) return false;
      read = r.take_in_place(q, d, c);
      return read != slot_read::torn;
    });
    if (read == slot_read::marker)
      r.count_marker();
    else
      r.add(q);
  }
  r.apply();
}

/// The newest complete update of every in-neighbour whose clock is at
/// least `min_clock`, waiting while one is only being written; copied out
/// with torn-write detection (the sender may be rewriting the other slot).
/// A marker is passed over for the update in the other slot; when that one
/// is too old the neighbour adds no input (the marker said the sender had
/// nothing newer for this member).
/// Returns how many in-neighbours it heard nothing from (no update that
/// recent and no marker).
template <class R>
std::size_t combine_newest(R& r, std::uint64_t min_clock) {
  std::size_t missing = 0;
  r.begin();
  for (std::size_t q = 0; q < r.in_count(); ++q) {
    bool have = false;
    bool marker = false;
    r.wait(q, "an update recent enough", [&] {
      r.sync();
      const std::array<std::uint64_t, slot_depth> clocks{r.complete_clock(q, 0), r.complete_clock(q, 1)};
      const std::size_t newer = clocks[1] > clocks[0] ? 1 : 0;
      bool torn = false;
      marker = false;
      for (std::size_t d : {newer, 1 - newer}) {
        const std::uint64_t c = clocks[d];
        if (c == 0 || c < min_clock) continue;
        const slot_read got = r.take_copy(q, d);
        if (got == slot_read::marker) {
          marker = true;
        } else if (got == slot_read::ok && r.input_clock(q) >= min_clock) {
          have = true;
          return true;
        } else {
          torn = true;
        }
      }
      return !torn;  // nothing recent enough, or only a marker: no input from this neighbour
    });
    if (have) {
      r.add(q);
    } else if (marker) {
      r.count_marker();
    } else {
      ++missing;
      r.sync();
      if (r.complete_clock(q, 0) != 0 || r.complete_clock(q, 1) != 0) r.count_stale();
    }
  }
  r.apply();
  return missing;
}

/// The newest complete update of each in-neighbour not combined before;
/// never waits: torn or in-flight updates are skipped (and counted). One
/// older than `min_clock` is skipped too, and marked as if combined so it
/// is counted once (skip_too_old); so is the older slot behind it.
template <class R>
void combine_unconsumed(R& r, std::uint64_t min_clock = 0) {
  r.begin();
  r.sync();
  for (std::size_t q = 0; q < r.in_count(); ++q) {
    // Newest header first; a slot mid-write is read, found torn, counted.
    const std::array<std::uint64_t, slot_depth> clocks{r.header_clock(q, 0), r.header_clock(q, 1)};
    const std::size_t newer = clocks[1] > clocks[0] ? 1 : 0;
    bool have = false;
    bool stale = false;
    bool marker = false;
    bool too_old = false;
    for (std::size_t d : {newer, 1 - newer}) {
      const std::uint64_t c = clocks[d];
      if (c == 0) continue;
      if (c <= r.consumed(q)) {
        stale = true;
        continue;
      }
      if (c < min_clock) {  // the header's clock: a write in progress would carry a newer one
        r.skip_too_old(q, c);
        too_old = true;
        break;  // the other slot is older still, or already combined
      }
      const slot_read got = r.take_copy(q, d);
      if (got == slot_read::marker) {
        marker = true;  // the older slot may still hold an update not combined yet
        continue;
      }
      if (got == slot_read::ok && r.input_clock(q) > r.consumed(q)) {
        have = true;
        break;
      }
    }
    if (have)
      r.add(q);
    else if (marker)
      r.count_marker();
    else if (stale && !too_old)
      r.count_stale();
  }
  r.apply();
}

}  // namespace detail
DML_END_NAMESPACE

// SPDX-License-Identifier: BSL-1.0
/// @file
/// Internal: an engine's run loop around failures.
#pragma once

#include <dml/error.hpp>
#include <dml/fault/membership.hpp>
#include <dml/fwd.hpp>

DML_BEGIN_NAMESPACE
namespace schedule::detail {

/// Calls build() (collective: the engine's vectors), then go() until it
/// returns. A failure ends the operation each survivor is in with
/// fault::interrupted: rethrown when the run cannot survive it, otherwise
/// resync() agrees with the survivors and builds anew, and go() goes on.
/// build() is never made again after a resync, whether the failure cut the
/// first build short or not: survivors may have been cut short in different
/// places, and every one of them must make the same collective calls.
template <bool Survives, class Build, class Go, class Resync>
void run_surviving(Build&& build, Go&& go, Resync&& resync) {
  bool built = false;
  for (;;) {
    try {
      if (!built) build();
      built = true;
      go();
      return;
    } catch (const fault::interrupted&) {
      if constexpr (!Survives) {
        throw;  // nobody asked for it: not ours
      } else {
        resync();
        built = true;
      }
    }
  }
}

/// After a failure: drop() the engine's vectors (survivors may disagree on
/// which exist: a failure may cut one's construction short), recover over
/// the survivors, then restart() (agree with them, reshard, build anew).
/// Made again while members fail meanwhile: the recovery agrees again.
/// Under fault::policy::abort, and past the wait limit, the recovery throws.
template <class Transport, class Drop, class Restart>
void resync_surviving(Transport& comm, Drop&& drop, Restart&& restart) {
  for (;;) {
    drop();
    try {
      fault::recover(comm);
    } catch (const fault::interrupted&) {
      continue;  // another member failed meanwhile
    }
    try {
      restart();
      return;
    } catch (const fault::interrupted&) {
      continue;  // another member failed meanwhile: agree again
    } catch (const peer_failure&) {
      continue;  // the agreement's exchange met a member that failed meanwhile
    }
  }
}

}  // namespace schedule::detail
DML_END_NAMESPACE

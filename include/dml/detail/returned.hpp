// SPDX-License-Identifier: BSL-1.0
// Internal: what a wait does before it blames a peer that returned from its
// function. The peer may have left because of a failure this member has not
// seen yet: the survivors agreed on a view without a failed member (the
// in-process agreement never waits for anyone), and under fault::policy::
// abort, or a caller's catch, the peer then returned. The wait checked the
// view before it saw the peer return; checking again names the failure, the
// root cause, instead of a mismatch of calls that did not happen.
#pragma once

#include <dml/fwd.hpp>

DML_BEGIN_NAMESPACE
namespace detail {

/// Throws dml::peer_failure when the group agreed on a newer view than
/// `comm`'s (transports without views: nothing).
template <class Comm>
void check_view_before_blaming(Comm& comm) {
  if constexpr (requires { comm.check_view(); }) comm.check_view();
}

}  // namespace detail
DML_END_NAMESPACE

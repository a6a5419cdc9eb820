// SPDX-License-Identifier: BSL-1.0
// Internal: the one wait loop every blocking step of a vector uses. It never
// waits forever: a failed peer ends it with dml::peer_failure and the
// transport's wait limit with dml::timeout; a bounded stall also ends it.
#pragma once

#include <dml/detail/backoff.hpp>
#include <dml/detail/returned.hpp>
#include <dml/error.hpp>
#include <dml/fwd.hpp>

#include <chrono>
#include <string>
#include <utility>

DML_BEGIN_NAMESPACE
namespace detail {

/// Waits until ready(), or until `stop` (a bounded stall, consistency::
/// ssp_bounded): returns false when `stop` passed first. Failures and the
/// transport's wait limit end it as they end wait_until.
template <class Comm, class Ready>
bool wait_until_or(Comm& comm, member_id peer, const char* what, Ready&& ready, double& wait_seconds,
                   std::chrono::steady_clock::time_point stop) {
  if (ready()) return true;
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + comm.wait_limit();
  bool got = true;
  backoff pause;
  for (;;) {
    // The others agreed on a new view: leave, so this member can join them.
    if constexpr (requires { comm.check_view(); }) comm.check_view();
    if (!comm.alive(peer)) {
      if (ready()) break;  // its last write may still have landed
      throw peer_failure(peer, "dml: member " + std::to_string(comm.rank()) + " waited for " + what +
                                   " from member " + std::to_string(peer) + ", which has failed");
    }
    // A member that returned from its work will never write again.
    if constexpr (requires { comm.finished(peer); }) {
      if (comm.finished(peer)) {
        if (ready()) break;
        check_view_before_blaming(comm);
        throw config_error("dml: member " + std::to_string(comm.rank()) + " waits for " + what +
                           " from member " + std::to_string(peer) +
                           ", which returned from its function without sending it "
                           "(members called scatter()/gather() a different number of times?)");
      }
    }
    if constexpr (requires { comm.poll(); }) comm.poll();
    const auto now = std::chrono::steady_clock::now();
    if (now >= stop) {
      got = ready();
      break;
    }
    if (now > deadline)
      throw timeout("dml: member " + std::to_string(comm.rank()) + " waited " +
                    std::to_string(std::chrono::duration<double>(now - start).count()) + " s for " + what +
                    " from member " + std::to_string(peer));
    pause.pause();
    if (ready()) break;
  }
  wait_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return got;
}

template <class Comm, class Ready>
void wait_until(Comm& comm, member_id peer, const char* what, Ready&& ready, double& wait_seconds) {
  (void)wait_until_or(comm, peer, what, std::forward<Ready>(ready), wait_seconds,
                      std::chrono::steady_clock::time_point::max());
}

}  // namespace detail
DML_END_NAMESPACE

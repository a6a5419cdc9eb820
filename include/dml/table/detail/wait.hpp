// SPDX-License-Identifier: BSL-1.0
// Internal: the wait loop of every blocking step of a table. `step()` tries
// once and returns nothing when done, or the member it still waits for
// (whose failure then ends the wait with dml::peer_failure). Never waits
// forever: the transport's wait limit ends it with dml::timeout.
#pragma once

#include <dml/detail/backoff.hpp>
#include <dml/detail/returned.hpp>
#include <dml/error.hpp>
#include <dml/fwd.hpp>

#include <chrono>
#include <optional>
#include <string>

DML_BEGIN_NAMESPACE
namespace detail {

template <class Comm, class Step>
bool table_wait(Comm& comm, const char* what, Step&& step, double& wait_seconds) {
  std::optional<member_id> blame = step();
  if (!blame) return false;
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + comm.wait_limit();
  backoff pause({.spin = 32, .yield = 256, .short_sleeps = 2048});
  for (;;) {
    if constexpr (requires { comm.check_view(); }) comm.check_view();
    // A step that blames a dead or finished member is tried once more (its
    // last writes may have landed). It may then blame another member: one
    // that is merely slower (a member passes a barrier once every other has
    // arrived in its own segment, and arrivals land in the segments one by
    // one), which is waited for like any other.
    if (!comm.alive(*blame)) {
      blame = step();
      if (!blame) break;
      if (!comm.alive(*blame))
        throw peer_failure(*blame, "dml::table: member " + std::to_string(comm.rank()) + " waited for " +
                                       what + " from member " + std::to_string(*blame) +
                                       ", which has failed");
    }
    if constexpr (requires { comm.finished(*blame); }) {
      if (comm.finished(*blame)) {
        blame = step();
        if (!blame) break;
        if (comm.finished(*blame)) {
          check_view_before_blaming(comm);
          throw config_error("dml::table: member " + std::to_string(comm.rank()) + " waits for " + what +
                             " from member " + std::to_string(*blame) +
                             ", which returned from its function (members called clock()/sync() a different "
                             "number of times?)");
        }
      }
    }
    if constexpr (requires { comm.poll(); }) comm.poll();
    const auto now = std::chrono::steady_clock::now();
    if (now > deadline)
      throw timeout("dml::table: member " + std::to_string(comm.rank()) + " waited " +
                    std::to_string(std::chrono::duration<double>(now - start).count()) + " s for " + what +
                    " from member " + std::to_string(*blame));
    pause.pause();
    blame = step();
    if (!blame) break;
  }
  wait_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return true;
}

}  // namespace detail
DML_END_NAMESPACE

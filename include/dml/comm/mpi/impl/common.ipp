// SPDX-License-Identifier: BSL-1.0
/// @file
/// Out-of-line definitions for <dml/comm/mpi/common.hpp> (see <dml/version.hpp>, DML_DECL).
#pragma once

#include <dml/comm/mpi/common.hpp>

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

DML_BEGIN_NAMESPACE
namespace detail::mpi_impl {

DML_DECL process_record& process() {
  static process_record r;
  return r;
}

DML_DECL std::string error_string(int code) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<std::size_t>(length));
}

DML_DECL void throw_mpi_error(int rc, const char* who, const char* call) {
  std::string m(who);
  m.append(": ");
  m.append(call);
  m.append(" failed: ");
  m.append(error_string(rc));
  throw comm_error(m);
}

DML_DECL void throw_peer_error(int rc, const char* who, const char* call, member_id peer) {
  mark_broken();
  std::string m(who);
  m.append(": ");
  m.append(call);
  m.append(" to member ");
  m.append(std::to_string(peer));
  m.append(" failed: ");
  m.append(error_string(rc));
  throw peer_failure(peer, m);
}

DML_DECL std::chrono::milliseconds heartbeat_timeout_from_env(const char* who) {
  return std::chrono::milliseconds(
      number_from_env("DML_HEARTBEAT_TIMEOUT_MS", 1000, 10, 3'600'000, who, "milliseconds"));
}

DML_DECL environment::environment(const char* who) : who_(who) {
  if (!initialized() || finalized())
    throw config_error(std::string(who) +
                       ": MPI is not initialized (or already finalized); construct the context from "
                       "(argc, argv), or call MPI_Init before passing a communicator");
  ++process().contexts;
}

DML_DECL environment::environment(int& argc, char**& argv, const char* who,
                                  std::chrono::steady_clock::duration limit)
    : who_(who), limit_(limit) {
  start(&argc, &argv);
}

DML_DECL environment::environment(int argc, const char* const* argv, const char* who,
                                  std::chrono::steady_clock::duration limit)
    : who_(who), limit_(limit) {
  if (argc < 0)
    throw config_error(std::string(who) + ": argc is " + std::to_string(argc) + "; it cannot be negative");
  if (argc > 0 && argv == nullptr)
    throw config_error(std::string(who) + ": argc is " + std::to_string(argc) + " but argv is null");
  if (argv == nullptr) {
    start(nullptr, nullptr);
    return;
  }
  std::vector<char*> copy;
  copy.reserve(static_cast<std::size_t>(argc) + 1);
  // MPI's signature takes char*** for historical reasons; it does not write
  // to the strings.
  for (int i = 0; i < argc; ++i) copy.push_back(const_cast<char*>(argv[i]));
  copy.push_back(nullptr);  // argv[argc] is null, as MPI implementations expect
  int count = argc;
  char** pointers = copy.data();
  start(&count, &pointers);
}

DML_DECL environment::environment(std::nullptr_t, const char* who, std::chrono::steady_clock::duration limit)
    : who_(who), limit_(limit) {
  start(nullptr, nullptr);
}

DML_DECL environment::~environment() {
  auto& p = process();
  if (--p.contexts > 0 || !p.initialized_by_dml || finalized()) return;
  // After a peer failure MPI_Finalize would wait for the dead process
  // forever (Open MPI 4.1 runs a fence in it); the process then ends
  // without finalizing, which mpiexec --enable-recovery tolerates.
  if (p.broken) {
    leave_beacon();
    return;
  }
  // Every context passed its closing barrier, so all members are here; one
  // that dies right now would still keep the others in the fence forever:
  // on one node the shut-down beacon (group::shutdown) names it within the
  // heartbeat timeout, elsewhere the limit bounds the wait.
  {
    watchdog::scope guard(who_, "MPI_Finalize (shut-down)", limit_);
    MPI_Finalize();
  }
  leave_beacon();
}

DML_DECL void environment::start(int* argc, char*** argv) {
  const char* who = who_;
  auto limit = limit_;
  if (finalized())
    throw config_error(std::string(who) + ": MPI was already finalized in this process; it cannot restart");
  if (!initialized()) {
    int provided = 0;
    int rc = MPI_SUCCESS;
    // No member can be named yet (there are no heartbeats before MPI runs):
    // the bound is time alone, DML_STARTUP_TIMEOUT_MS when set.
    limit = std::chrono::milliseconds(number_from_env(
        "DML_STARTUP_TIMEOUT_MS", std::chrono::duration_cast<std::chrono::milliseconds>(limit).count(), 100,
        86'400'000, who, "milliseconds"));
    // On one node the beacon names a member that dies meanwhile, within
    // the heartbeat timeout; the fault monitor takes over after start-up.
    auto& startup = process().startup;
    if (startup.start(heartbeat_timeout_from_env(who))) {
      watchdog::instance().set_probe([&startup] { return startup.stale_member(); }, startup.rank());
      watchdog::instance().set_before_exit([&startup] { startup.remove(); });
    }
    {
      watchdog::scope guard(who, "MPI_Init_thread (start-up)", limit);
      rc = MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided);
    }
    check(rc, who, "MPI_Init_thread");
    process().initialized_by_dml = true;
  }
  ++process().contexts;
}

DML_DECL void environment::leave_beacon() noexcept {
  auto& b = process().startup;
  if (!b.running()) return;
  watchdog::instance().clear_probe();
  watchdog::instance().set_before_exit(nullptr);
  b.stop(true);
}

DML_DECL void require_not_broken(const char* who, const char* what) {
  if (broken())
    throw comm_error(std::string(who) + ": " + what +
                     " refused: an earlier peer failure or timeout left this group unable to complete "
                     "collective operations (recovery is not available on this transport)");
}

}  // namespace detail::mpi_impl
DML_END_NAMESPACE

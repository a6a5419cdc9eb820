// SPDX-License-Identifier: BSL-1.0
// Internal: what both MPI transports share. MPI start-up and shut-down
// bookkeeping, the mapping of MPI error codes onto dml's exceptions, and the
// bounded polling loop every blocking step of dml runs instead of a blocking
// MPI call, so a member that never arrives ends in dml::timeout, not a hang.
#pragma once

#include <dml/comm/mpi/beacon.hpp>
#include <dml/comm/mpi/watchdog.hpp>
#include <dml/detail/backoff.hpp>
#include <dml/detail/env.hpp>
#include <dml/error.hpp>
#include <dml/fwd.hpp>

// dml uses MPI's C API only. The MPI-2 C++ bindings (removed in MPI-3) would
// come with <mpi.h> otherwise and do not compile warning-free.
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

DML_BEGIN_NAMESPACE
namespace detail::mpi_impl {

/// Process-wide MPI bookkeeping. MPI can be initialized once per process, so
/// this is one record for the process, shared by every dml context in it.
struct process_record {
  int contexts = 0;                 ///< dml contexts alive now
  bool initialized_by_dml = false;  ///< MPI_Init_thread was called by dml
  bool broken = false;              ///< a peer failed or a collective timed out
  beacon startup;                   ///< heartbeats until the fault monitor's run (beacon.hpp)
};

/// The process's record (a function-local static).
DML_DECL process_record& process();

/// Marks the process's MPI state as broken: some member is gone or stuck, so
/// collectives (window free, MPI_Finalize) could block forever.
inline void mark_broken() { process().broken = true; }
[[nodiscard]] inline bool broken() { return process().broken; }

[[nodiscard]] inline bool initialized() {
  int flag = 0;
  MPI_Initialized(&flag);
  return flag != 0;
}

[[nodiscard]] inline bool finalized() {
  int flag = 0;
  MPI_Finalized(&flag);
  return flag != 0;
}

/// Whether MPI allows calls from several threads, one at a time.
[[nodiscard]] inline bool serialized_threads() {
  int level = MPI_THREAD_SINGLE;
  return MPI_Query_thread(&level) == MPI_SUCCESS && level >= MPI_THREAD_SERIALIZED;
}

/// The text MPI gives for an error code.
[[nodiscard]] DML_DECL std::string error_string(int code);

/// Throws dml::comm_error for the failed MPI call `call` (check's slow path).
[[noreturn]] DML_DECL void throw_mpi_error(int rc, const char* who, const char* call);

/// Marks the process broken and throws dml::peer_failure naming `peer`
/// (check_peer's slow path).
[[noreturn]] DML_DECL void throw_peer_error(int rc, const char* who, const char* call, member_id peer);

/// Throws dml::comm_error for a failed MPI call that involved no single peer.
inline void check(int rc, const char* who, const char* call) {
  if (rc != MPI_SUCCESS) throw_mpi_error(rc, who, call);
}

/// Throws dml::peer_failure naming `peer` for a failed MPI call aimed at it.
/// The process is marked broken: the group cannot complete collectives.
inline void check_peer(int rc, const char* who, const char* call, member_id peer) {
  if (rc != MPI_SUCCESS) throw_peer_error(rc, who, call, peer);
}

using dml::detail::number_from_env;

/// The heartbeat timeout: DML_HEARTBEAT_TIMEOUT_MS when set, else 1 s.
DML_DECL std::chrono::milliseconds heartbeat_timeout_from_env(const char* who);

/// Starts MPI when nobody has, counts the dml contexts using it and finalizes
/// after the last one when dml started it. A context holds one of these as
/// its first member, so it is torn down after everything else.
class environment {
 public:
  /// For contexts built on an existing communicator: MPI must be running.
  DML_DECL explicit environment(const char* who);
  /// For contexts built from the program's (argc, argv): starts MPI if it
  /// is not running, letting MPI remove its own arguments from them.
  /// MPI_Init_thread waits for every process of the job; past `limit` (one
  /// of them died while starting) the watchdog ends this process.
  DML_DECL environment(int& argc, char**& argv, const char* who,
                       std::chrono::steady_clock::duration limit = std::chrono::seconds(60));
  /// For contexts built from a copy of the arguments, or read-only ones
  /// (`const char**`): MPI sees a copy of the pointer array (it may reorder
  /// pointers, never the strings), and the caller's arguments stay as they
  /// are.
  DML_DECL environment(int argc, const char* const* argv, const char* who,
                       std::chrono::steady_clock::duration limit = std::chrono::seconds(60));
  /// For contexts built without the program's arguments:
  /// MPI_Init_thread(nullptr, nullptr, ...), which MPI allows.
  DML_DECL environment(std::nullptr_t, const char* who,
                       std::chrono::steady_clock::duration limit = std::chrono::seconds(60));
  environment(const environment&) = delete;
  environment& operator=(const environment&) = delete;
  DML_DECL ~environment();

 private:
  // Starts MPI unless it runs already; argc and argv may both be null.
  DML_DECL void start(int* argc, char*** argv);

  // This process is done with MPI: its shut-down beacon says so (the others
  // may still be in MPI_Finalize's fence and must not take it for dead).
  DML_DECL static void leave_beacon() noexcept;

  const char* who_ = "dml";
  std::chrono::steady_clock::duration limit_ = std::chrono::seconds(60);
};

/// Spin, then yield, then sleep (dml/detail/backoff.hpp).
using dml::detail::backoff;

/// Polls `request` with MPI_Test until it completes, calling `progress()`
/// between tests (the two-sided transport serves incoming messages there).
/// Throws dml::timeout past `limit` and dml::comm_error when MPI reports an
/// error, and passes on what `progress()` throws (a failed member); all of
/// them mark the process broken, because the collective the request belongs
/// to can no longer complete on every member.
template <class Progress>
void wait_request(MPI_Request& request, std::chrono::steady_clock::duration limit, const char* who,
                  const char* what, Progress&& progress) {
  const auto start = std::chrono::steady_clock::now();
  backoff b;
  for (;;) {
    int done = 0;
    const int rc = MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) {
      mark_broken();
      check(rc, who, what);
    }
    if (done) return;
    try {
      progress();  // may throw: a member failed, or a view change started
    } catch (...) {
      mark_broken();  // the request stays pending: this communicator is unusable now
      throw;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now - start > limit) {
      mark_broken();  // the request stays pending: this communicator is unusable now
      throw timeout(std::string(who) + ": " + what + " did not complete within " +
                    std::to_string(std::chrono::duration<double>(limit).count()) +
                    " s: some member did not enter it (it may have failed or be stuck elsewhere)");
    }
    b.pause();
  }
}

/// Keeps `buffers` for the rest of the process: MPI may still read or write
/// them. A nonblocking collective cannot be cancelled, and a point-to-point
/// request in a communicator nobody reads any more never completes; left
/// pending after a failed wait, either may still move bytes inside a later
/// MPI call of the survivors (Open MPI's MPI_Comm_create_group did, into
/// freed memory). Leaked on purpose, so that memory is never reused. A
/// unique_ptr is released as it is (MPI may hold the addresses of the
/// object's own members); other objects are moved onto the heap, which
/// keeps the storage of the containers in them where it is.
template <class T>
void keep_for_mpi(std::unique_ptr<T>& buffers) noexcept {
  (void)buffers.release();
}
template <class T>
void keep_for_mpi(T&& buffers) {
  (void)new std::remove_cvref_t<T>(std::forward<T>(buffers));
}

/// Where records of `counts` bytes start when laid end to end in one buffer
/// (MPI's displacements), and how many bytes that buffer holds.
struct record_layout {
  std::vector<int> displs;
  std::size_t total = 0;
};

/// The most bytes a record of an exchange may have unless its caller says
/// less: what MPI's int counts address.
inline constexpr std::size_t most_record_bytes = static_cast<std::size_t>(std::numeric_limits<int>::max());

/// The layout of records whose sizes came from the other members (one count
/// per rank). They are not trusted: a negative count, a count above
/// `max_record` (what the caller expects of one record), or records that
/// add up to more than MPI's int displacements address (2 GiB), throw
/// dml::comm_error naming the first rank at fault, before anything is
/// allocated.
inline record_layout lay_out_records(std::span<const int> counts, const char* who,
                                     std::size_t max_record = most_record_bytes) {
  constexpr auto most = most_record_bytes;
  record_layout out;
  out.displs.reserve(counts.size());
  for (std::size_t rank = 0; rank < counts.size(); ++rank) {
    if (counts[rank] < 0)
      throw comm_error(std::string(who) + ": rank " + std::to_string(rank) + " declared a record of " +
                       std::to_string(counts[rank]) + " bytes");
    if (static_cast<std::size_t>(counts[rank]) > max_record)
      throw comm_error(std::string(who) + ": rank " + std::to_string(rank) + " declared a record of " +
                       std::to_string(counts[rank]) + " bytes, more than the " + std::to_string(max_record) +
                       " this exchange allows");
    if (static_cast<std::size_t>(counts[rank]) > most - out.total)
      throw comm_error(std::string(who) + ": the records add up to more than 2 GiB at rank " +
                       std::to_string(rank) + " (" + std::to_string(counts[rank]) + " bytes after " +
                       std::to_string(out.total) + ")");
    out.displs.push_back(static_cast<int>(out.total));
    out.total += static_cast<std::size_t>(counts[rank]);
  }
  return out;
}

/// Waits for `r` as wait_request does; when the wait fails, the request
/// stays pending and `buffers` are kept for MPI (keep_for_mpi).
template <class T, class Progress>
void wait_keeping(std::unique_ptr<T>& buffers, MPI_Request& r, std::chrono::steady_clock::duration limit,
                  const char* who, const char* what, Progress&& progress) {
  try {
    wait_request(r, limit, who, what, progress);
  } catch (...) {
    keep_for_mpi(buffers);
    throw;
  }
}

/// Throws dml::comm_error for a failed call that started a collective
/// (the process is marked broken: the others may have started it).
inline void check_started(int rc, const char* who, const char* call) {
  if (rc != MPI_SUCCESS) {
    mark_broken();
    throw_mpi_error(rc, who, call);
  }
}

/// Cuts `all` into the records `layout` describes, one per rank.
inline std::vector<std::vector<std::byte>> split_records(const std::vector<std::byte>& all,
                                                         std::span<const int> counts,
                                                         const record_layout& layout) {
  std::vector<std::vector<std::byte>> out(counts.size());
  for (std::size_t i = 0; i < counts.size(); ++i) {
    const auto* first = all.data() + layout.displs[i];
    out[i].assign(first, first + counts[i]);
  }
  return out;
}

/// Collective exchange of byte records with nonblocking MPI collectives
/// (sizes, then the bytes), progressing through `progress()` while waiting.
/// Result indexed by rank. A wait that fails (a member died, the limit
/// passed) throws and keeps every buffer MPI was given (keep_for_mpi).
/// `max_record` bounds what each member may declare (lay_out_records).
template <class Progress>
std::vector<std::vector<std::byte>> all_gather_bytes(MPI_Comm comm, std::span<const std::byte> record,
                                                     std::chrono::steady_clock::duration limit,
                                                     const char* who, Progress&& progress,
                                                     std::size_t max_record = most_record_bytes) {
  int size = 0;
  check(MPI_Comm_size(comm, &size), who, "MPI_Comm_size");
  if (record.size() > most_record_bytes)
    throw config_error(std::string(who) + ": exchange record of " + std::to_string(record.size()) +
                       " bytes is larger than MPI's int counts allow");
  // Everything MPI reads or writes while the collectives run, in one block
  // (the caller's record is copied: the caller frees it when this throws).
  struct buffers {
    std::vector<std::byte> record;
    int mine = 0;
    std::vector<int> counts;
    record_layout layout;
    std::vector<std::byte> all;
  };
  auto b = std::make_unique<buffers>();
  b->record.assign(record.begin(), record.end());
  b->mine = static_cast<int>(record.size());
  b->counts.assign(static_cast<std::size_t>(size), 0);
  MPI_Request r = MPI_REQUEST_NULL;
  check_started(MPI_Iallgather(&b->mine, 1, MPI_INT, b->counts.data(), 1, MPI_INT, comm, &r), who,
                "MPI_Iallgather");
  wait_keeping(b, r, limit, who, "exchange (MPI_Iallgather of record sizes)", progress);
  // Every member sees the same counts: a lie makes every member throw here,
  // and no collective is left pending.
  b->layout = lay_out_records(b->counts, who, max_record);
  b->all.resize(b->layout.total);
  check_started(MPI_Iallgatherv(b->record.data(), b->mine, MPI_BYTE, b->all.data(), b->counts.data(),
                                b->layout.displs.data(), MPI_BYTE, comm, &r),
                who, "MPI_Iallgatherv");
  wait_keeping(b, r, limit, who, "exchange (MPI_Iallgatherv of records)", progress);
  return split_records(b->all, b->counts, b->layout);
}

/// Collective: member r passes `to_each[m]`, the record meant for member m,
/// and receives what each member meant for r, indexed by sender. Sizes,
/// then the bytes, with nonblocking all-to-all collectives; failures and
/// `max_record` as in all_gather_bytes.
template <class Progress>
std::vector<std::vector<std::byte>> all_to_all_bytes(MPI_Comm comm,
                                                     const std::vector<std::vector<std::byte>>& to_each,
                                                     std::chrono::steady_clock::duration limit,
                                                     const char* who, Progress&& progress,
                                                     std::size_t max_record = most_record_bytes) {
  int size = 0;
  check(MPI_Comm_size(comm, &size), who, "MPI_Comm_size");
  const auto n = static_cast<std::size_t>(size);
  if (to_each.size() != n)
    throw config_error(std::string(who) + ": " + std::to_string(to_each.size()) + " records for a group of " +
                       std::to_string(n) + " members (one per member, including the caller)");
  struct buffers {
    std::vector<int> send_counts, recv_counts;
    record_layout out_layout, in_layout;
    std::vector<std::byte> out, in;
  };
  auto b = std::make_unique<buffers>();
  constexpr auto most = most_record_bytes;
  for (const auto& rec : to_each) {
    if (rec.size() > most - b->out_layout.total)
      throw config_error(std::string(who) + ": the records add up to more than 2 GiB");
    b->send_counts.push_back(static_cast<int>(rec.size()));
    b->out_layout.displs.push_back(static_cast<int>(b->out_layout.total));
    b->out_layout.total += rec.size();
  }
  b->out.reserve(b->out_layout.total);
  for (const auto& rec : to_each) b->out.insert(b->out.end(), rec.begin(), rec.end());
  b->recv_counts.assign(n, 0);
  MPI_Request r = MPI_REQUEST_NULL;
  check_started(MPI_Ialltoall(b->send_counts.data(), 1, MPI_INT, b->recv_counts.data(), 1, MPI_INT, comm, &r),
                who, "MPI_Ialltoall");
  wait_keeping(b, r, limit, who, "pairwise exchange (MPI_Ialltoall of record sizes)", progress);
  try {
    b->in_layout = lay_out_records(b->recv_counts, who, max_record);
  } catch (...) {
    mark_broken();  // each member sees its own counts: the others may be waiting in the next collective
    throw;
  }
  b->in.resize(b->in_layout.total);
  check_started(
      MPI_Ialltoallv(b->out.data(), b->send_counts.data(), b->out_layout.displs.data(), MPI_BYTE,
                     b->in.data(), b->recv_counts.data(), b->in_layout.displs.data(), MPI_BYTE, comm, &r),
      who, "MPI_Ialltoallv");
  wait_keeping(b, r, limit, who, "pairwise exchange (MPI_Ialltoallv of records)", progress);
  return split_records(b->in, b->recv_counts, b->in_layout);
}

/// Collective barrier with MPI_Ibarrier, progressing while waiting.
template <class Progress>
void barrier(MPI_Comm comm, std::chrono::steady_clock::duration limit, const char* who, Progress&& progress) {
  MPI_Request r = MPI_REQUEST_NULL;
  if (const int rc = MPI_Ibarrier(comm, &r); rc != MPI_SUCCESS) {
    mark_broken();
    check(rc, who, "MPI_Ibarrier");
  }
  wait_request(r, limit, who, "barrier", progress);
}

/// Throws dml::comm_error once the process is broken: a collective started
/// now would pair up with the one left pending and never complete.
DML_DECL void require_not_broken(const char* who, const char* what);

}  // namespace detail::mpi_impl
DML_END_NAMESPACE

#if !defined(DML_SEPARATE_COMPILATION)
#include <dml/comm/mpi/impl/common.ipp>
#endif

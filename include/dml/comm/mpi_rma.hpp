// SPDX-License-Identifier: BSL-1.0
/// @file
/// The one-sided MPI transport: every segment is an MPI-3 window, a scatter
/// is MPI_Put into each out-neighbour's receive slot, notify and ack are
/// MPI_Fetch_and_op. On one node Open MPI's osc/sm turns puts into stores to
/// shared memory; on InfiniBand/RoCE its osc/ucx and osc/rdma turn them into
/// RDMA writes. Link dml::mpi.
#pragma once

#include <dml/comm/attributes.hpp>
#include <dml/comm/concepts.hpp>
#include <dml/comm/detail/segment_base.hpp>
#include <dml/comm/mpi/common.hpp>
#include <dml/comm/mpi/group.hpp>
#include <dml/error.hpp>
#include <dml/fwd.hpp>

#include <mpi.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

DML_BEGIN_NAMESPACE
namespace comm {

/// A transport context over MPI-3 one-sided communication; one per process.
///
/// Each dml segment is a window (displacement unit 8 bytes: data words, then
/// control words) that stays in a passive-target `MPI_Win_lock_all` epoch for
/// its whole life. When every member runs on one node the window comes from
/// `MPI_Win_allocate_shared`, which makes Open MPI use osc/sm (puts are
/// stores to shared memory, flushes are memory barriers); otherwise, or with
/// the environment variable `DML_RMA_WINDOW=allocate`, from
/// `MPI_Win_allocate`, served by osc/rdma or osc/ucx (RDMA across nodes).
/// Open MPI 4.1 ranks osc/rdma above osc/sm even on one node, and there its
/// flushes wait for the target to enter MPI: a trainer ran 10x slower.
///
/// - put: `MPI_Put` of the bytes, then `MPI_Win_flush_local`, so the caller
///   may reuse its buffer at once (the vector passes stack buffers);
/// - order and flush: `MPI_Win_flush` (remote completion);
/// - fetch_add: `MPI_Win_flush` of earlier puts, `MPI_Fetch_and_op` with
///   `MPI_SUM`, `MPI_Win_flush`;
/// - get: `MPI_Win_flush` of earlier puts, `MPI_Get`, `MPI_Win_flush`;
/// - local data reads: `MPI_Win_sync`, then `std::atomic_ref` loads of the
///   window memory (the vector detects torn slots itself);
/// - local control reads: `MPI_Fetch_and_op` with `MPI_NO_OP` on the own
///   rank, which MPI guarantees to be atomic with respect to the remote
///   `MPI_SUM`s, whether the osc component applies those with CPU atomics,
///   a lock, or network atomics that a CPU load need not observe whole.
///
/// Errors never abort: the communicator and every window use
/// `MPI_ERRORS_RETURN`, and a failed call becomes `dml::peer_failure` (naming
/// the target) or `dml::comm_error`. Barrier, exchange and segment creation
/// use nonblocking collectives polled up to `wait_limit()`, then throw
/// `dml::timeout`.
///
/// Collective operations, including the destruction of a segment (that is,
/// of a vector), must happen in the same order on every member; vectors
/// scoped the same way on every member are. After a peer failure or a
/// timeout the group cannot run collectives any more: segments are then
/// released without `MPI_Win_free` and MPI is not finalized, because both
/// would wait for the failed member forever.
///
/// Progress: with osc/sm (one node) puts need no help from the target. With
/// osc/pt2pt, and with osc/rdma or osc/ucx where the network cannot complete
/// an operation alone, the target applies incoming operations only when it
/// is inside MPI. Every wait of a vector calls `poll()` (an `MPI_Iprobe`,
/// which runs Open MPI's progress engine), and every barrier and exchange
/// polls `MPI_Test`, so a member that waits also lets others' writes land. A
/// member busy computing delays the flushes aimed at it until its next dml
/// call.
///
/// Failures: a fault monitor (a small window per member plus a heartbeat
/// thread that makes no MPI calls) suspects a member whose heartbeat stalls
/// past the heartbeat timeout (`DML_HEARTBEAT_TIMEOUT_MS`, default 1000) or
/// whose operations fail. `agree_on_survivors()` (called by
/// `dml::fault::recover`, which applies the failure policy and rebuilds the
/// vectors) agrees on a new view one-sidedly and builds a communicator of
/// the survivors with `MPI_Comm_create_group`.
/// Open MPI ends the whole job when a process dies unless mpiexec runs with
/// `--enable-recovery`.
///
/// Use from one thread at a time (MPI is started with MPI_THREAD_SERIALIZED).
class mpi_rma {
 public:
  using policy_slot = slot::transport;
  class segment;
  using segment_type = segment;

  static constexpr std::chrono::milliseconds default_wait_limit{60'000};

  /// Starts MPI with MPI_Init_thread unless it is running already; MPI is
  /// finalized after the last dml context only if dml started it. The group
  /// is MPI_COMM_WORLD. MPI may remove its own arguments from main's
  /// (argc, argv).
  DML_DECL mpi_rma(int& argc, char**& argv, std::chrono::milliseconds wait_limit = default_wait_limit);
  /// As above, from arguments passed by value or read-only (`const char**`,
  /// a copy of argc): MPI sees a copy and the caller's stay unchanged. argv
  /// may be null when argc is 0.
  DML_DECL mpi_rma(int argc, const char* const* argv,
                   std::chrono::milliseconds wait_limit = default_wait_limit);
  /// As above, without the program's arguments (MPI_Init_thread(nullptr,
  /// nullptr, ...)): for a library or a test that has no argv to pass.
  DML_DECL explicit mpi_rma(std::chrono::milliseconds wait_limit = default_wait_limit);
  /// A context over (a duplicate of) `comm`. MPI must be initialized. A
  /// Boost.MPI communicator converts to its MPI_Comm, so
  /// `mpi_rma ctx{boost::mpi::communicator()}` works too; this header does
  /// not include Boost.MPI (a translation unit pays for it only if it uses
  /// it).
  DML_DECL explicit mpi_rma(MPI_Comm comm, std::chrono::milliseconds wait_limit = default_wait_limit);

  mpi_rma(const mpi_rma&) = delete;
  mpi_rma& operator=(const mpi_rma&) = delete;
  /// Meets the others and frees the communicators and the monitor window
  /// (skipped after a failure). Every vector built on this context must be
  /// destroyed before it.
  DML_DECL ~mpi_rma();

  [[nodiscard]] member_id rank() const noexcept { return group_.rank(); }
  [[nodiscard]] std::size_t size() const noexcept { return group_.size(); }
  /// The node each member runs on, named by the lowest member id on it
  /// (from MPI_Comm_split_type with MPI_COMM_TYPE_SHARED at start-up), one
  /// label per original member. `dml::comm::node_groups` reads it.
  [[nodiscard]] const std::vector<std::size_t>& node_labels() const noexcept { return group_.node_labels(); }
  /// The view this member works in (epoch and live set, original ranks).
  [[nodiscard]] const membership_view& view() const noexcept { return group_.view(); }
  /// False once an operation aimed at m failed, or m's heartbeat stalled
  /// past the heartbeat timeout.
  [[nodiscard]] bool alive(member_id m) const { return group_.alive(m); }
  /// How long a member's heartbeat may stall before it is suspected.
  void set_heartbeat_timeout(std::chrono::steady_clock::duration t) { group_.set_heartbeat_timeout(t); }
  [[nodiscard]] std::chrono::steady_clock::duration heartbeat_timeout() const noexcept {
    return group_.heartbeat_timeout();
  }

  /// Throws `dml::peer_failure` when another member has started a view
  /// change that this member has not joined (one local load).
  void check_view() const { group_.check_view(); }

  /// The agreement primitive (see `comm::shrinkable_transport`): agrees with
  /// the other survivors on a view without the failed members and switches
  /// to their communicator. Returns the current view at once when no
  /// failure is known. `dml::fault::recover` calls it.
  DML_DECL comm::agreement agree_on_survivors(std::chrono::steady_clock::time_point deadline);
  /// Whether another thread may make this context's MPI calls while the
  /// thread that made the context does not (vectors' scatter_async()):
  /// when MPI runs at MPI_THREAD_SERIALIZED or above.
  [[nodiscard]] bool background_calls() const { return detail::mpi_impl::serialized_threads(); }
  /// Storage for the layers above the transport (dml/comm/attributes.hpp).
  [[nodiscard]] comm::attributes& attributes() noexcept { return group_.attributes(); }
  [[nodiscard]] const comm::attributes& attributes() const noexcept { return group_.attributes(); }

  [[nodiscard]] std::chrono::steady_clock::duration wait_limit() const noexcept { return wait_limit_; }
  /// Longest any blocking step (barrier, exchange, segment creation, a
  /// vector's wait) may take before it throws dml::timeout.
  void set_wait_limit(std::chrono::steady_clock::duration limit) noexcept { wait_limit_ = limit; }
  /// The communicator of the current view (for diagnostics; do not free it).
  [[nodiscard]] MPI_Comm native() const noexcept { return group_.current(); }
  /// Whether windows come from MPI_Win_allocate_shared (all members on one
  /// node, and DML_RMA_WINDOW is not 'allocate').
  [[nodiscard]] bool shared_windows() const noexcept { return group_.shared_windows(); }

  /// Waits (MPI_Ibarrier, polled) until every member entered the barrier.
  DML_DECL void barrier();

  /// Collective: every member's record, indexed like `view().live`.
  DML_DECL std::vector<std::vector<std::byte>> exchange(std::span<const std::byte> record);

  /// Collective: allocates a window of data_words + control_words 64-bit
  /// words on this member (sizes may differ between members), zeroed, in a
  /// lock_all epoch. Returns once every member's window is ready.
  DML_DECL segment create_segment(std::size_t data_words, std::size_t control_words);

  /// Drives MPI's progress engine once: called from every wait loop of a
  /// vector so that operations aimed at this member complete while it waits.
  void poll() {
    int flag = 0;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, group_.current(), &flag, MPI_STATUS_IGNORE);
  }

 private:
  static constexpr const char* who = "dml::comm::mpi_rma";

  // Called while a collective waits: a failed member or a view change
  // started elsewhere ends the wait.
  void watch() { group_.watch("a collective"); }

  friend class segment;
  detail::mpi_impl::environment env_;  // first: outlives the group
  std::chrono::steady_clock::duration wait_limit_;
  detail::mpi_impl::group group_{who};
};

/// One member's handle on a window; see mpi_rma. Move-only; destruction is
/// collective (MPI_Win_free) and must happen in the same order everywhere.
class mpi_rma::segment : detail::segment_impl::segment_base<mpi_rma::segment, mpi_rma> {
  using handle_base = detail::segment_impl::segment_base<segment, mpi_rma>;

 public:
  segment() = default;
  segment(segment&& o) noexcept : handle_base(std::move(o)) { take(o); }
  segment& operator=(segment&& o) noexcept { return move_assign(o); }
  ~segment() { release(); }

  using handle_base::control_words;
  using handle_base::words;

  /// MPI_Put of `bytes` into target's data words from `word` on (a partial
  /// last word is zero padded), locally complete on return.
  void put(member_id target, std::size_t word, std::span<const std::byte> bytes) {
    check_range(target, word, bytes.size());
    if (bytes.empty() || !ctx_->alive(target)) return;  // lost like a write to a dead host; flush reports it
    const int t = rank_of(target);
    const std::size_t full = bytes.size() / 8 * 8;
    constexpr std::size_t chunk = std::size_t{1} << 30;  // MPI counts are int
    for (std::size_t off = 0; off < full; off += chunk) {
      const int n = static_cast<int>(std::min(chunk, full - off));
      peer_call(MPI_Put(bytes.data() + off, n, MPI_BYTE, t, disp(word + off / 8), n, MPI_BYTE, win_), target,
                "MPI_Put");
    }
    if (const std::size_t tail = bytes.size() - full; tail != 0) {
      tail_word_ = 0;
      std::memcpy(&tail_word_, bytes.data() + full, tail);
      peer_call(MPI_Put(&tail_word_, 8, MPI_BYTE, t, disp(word + full / 8), 8, MPI_BYTE, win_), target,
                "MPI_Put");
    }
    peer_call(MPI_Win_flush_local(t, win_), target, "MPI_Win_flush_local");
  }

  /// Write fence: every earlier put to target lands before any later one.
  void order(member_id target) { flush(target); }

  /// Remote completion of every earlier put to target.
  void flush(member_id target) {
    require_alive(target, "flush");
    peer_call(MPI_Win_flush(rank_of(target), win_), target, "MPI_Win_flush");
  }

  /// Remote completion of every earlier put.
  void flush_all() {
    const int rc = MPI_Win_flush_all(win_);
    if (rc != MPI_SUCCESS) detail::mpi_impl::mark_broken();
    detail::mpi_impl::check(rc, who, "MPI_Win_flush_all");
  }

  /// Atomic add on target's control word; returns the previous value. Puts
  /// issued before it are flushed first, so they land before the add.
  std::uint64_t fetch_add(member_id target, std::size_t control_word, std::uint64_t value) {
    require_alive(target, "remote atomic");
    check_control(target, control_word);
    const int t = rank_of(target);
    std::uint64_t old = 0;
    peer_call(MPI_Win_flush(t, win_), target, "MPI_Win_flush");
    peer_call(MPI_Fetch_and_op(&value, &old, MPI_UINT64_T, t, disp(data_words_[target] + control_word),
                               MPI_SUM, win_),
              target, "MPI_Fetch_and_op");
    peer_call(MPI_Win_flush(t, win_), target, "MPI_Win_flush");
    return old;
  }

  /// MPI_Get of source's data words from `word` on into `out`, complete on
  /// return (MPI_Win_flush). Earlier puts to source are flushed first, so
  /// the read sees them.
  void get(member_id source, std::size_t word, std::span<std::byte> out) {
    check_range(source, word, out.size());
    require_alive(source, "get");
    if (out.empty()) return;
    const int t = rank_of(source);
    peer_call(MPI_Win_flush(t, win_), source, "MPI_Win_flush");
    const std::size_t full = out.size() / 8 * 8;
    constexpr std::size_t chunk = std::size_t{1} << 30;  // MPI counts are int
    for (std::size_t off = 0; off < full; off += chunk) {
      const int n = static_cast<int>(std::min(chunk, full - off));
      peer_call(MPI_Get(out.data() + off, n, MPI_BYTE, t, disp(word + off / 8), n, MPI_BYTE, win_), source,
                "MPI_Get");
    }
    std::uint64_t tail = 0;
    const std::size_t rest = out.size() - full;
    if (rest != 0)
      peer_call(MPI_Get(&tail, 8, MPI_BYTE, t, disp(word + full / 8), 8, MPI_BYTE, win_), source, "MPI_Get");
    peer_call(MPI_Win_flush(t, win_), source, "MPI_Win_flush");
    if (rest != 0) std::memcpy(out.data() + full, &tail, rest);
  }

  /// Acquire load of one of the own data words (call sync() first to see
  /// remote writes).
  [[nodiscard]] std::uint64_t load(std::size_t word) const {
    check_own_range(word, 8);
    return std::atomic_ref<std::uint64_t>(base_[word]).load(std::memory_order_acquire);
  }

  /// Atomic read of one of the own control words (MPI_Fetch_and_op with
  /// MPI_NO_OP on the own rank; see the class comment of mpi_rma).
  [[nodiscard]] std::uint64_t load_control(std::size_t word) const {
    check_own_control(word);
    const int me = rank_of(own());
    std::uint64_t ignored = 0, value = 0;
    detail::mpi_impl::check(MPI_Fetch_and_op(&ignored, &value, MPI_UINT64_T, me,
                                             disp(data_words_[own()] + word), MPI_NO_OP, win_),
                            who, "MPI_Fetch_and_op (local read)");
    detail::mpi_impl::check(MPI_Win_flush_local(me, win_), who, "MPI_Win_flush_local");
    return value;
  }

  /// Copies own data words from `word` on into `out` (word-wise atomic
  /// loads; no consistency across words: callers detect tearing).
  void read(std::size_t word, std::span<std::byte> out) const {
    check_own_range(word, out.size());
    detail::segment_impl::atomic_copy_out(out, base_ + word);
  }

  /// MPI_Win_sync: makes remote writes that completed visible to the loads
  /// above (a memory barrier in the unified model).
  /// Own data words in place (see comm::segment for when that is safe).
  [[nodiscard]] std::span<const std::uint64_t> view(std::size_t word, std::size_t words) const {
    check_own_words(word, words);
    return {base_ + word, words};
  }

  void sync() { detail::mpi_impl::check(MPI_Win_sync(win_), who, "MPI_Win_sync"); }

 private:
  friend class mpi_rma;
  friend handle_base;
  static constexpr const char* who = "dml::comm::mpi_rma";

  [[nodiscard]] member_id own() const noexcept { return ctx_->group_.rank(); }
  // The rank of member m in the communicator of this segment's window.
  [[nodiscard]] int rank_of(member_id m) const {
    const int r = m < ranks_.size() ? ranks_[m] : -1;
    if (r < 0)
      throw peer_failure(m, std::string(who) + ": member " + std::to_string(m) +
                                " is not in the view this segment was created in");
    return r;
  }
  [[nodiscard]] static MPI_Aint disp(std::size_t word) noexcept { return static_cast<MPI_Aint>(word); }

  void peer_call(int rc, member_id target, const char* call) {
    if (rc == MPI_SUCCESS) return;
    ctx_->group_.mark_failed(target);
    detail::mpi_impl::check_peer(rc, who, call, target);
  }

  // The move of what the base does not hold (see segment_base).
  void take(segment& o) noexcept {
    comm_ = std::exchange(o.comm_, MPI_COMM_NULL);
    win_ = std::exchange(o.win_, MPI_WIN_NULL);
    base_ = std::exchange(o.base_, nullptr);
    ranks_ = std::move(o.ranks_);
  }

  // Collective: completes own operations, waits (bounded) until every
  // member is here, then frees the window. After a failure the window is
  // left allocated: MPI_Win_free would wait for the failed member forever.
  DML_DECL void release() noexcept;

  MPI_Comm comm_ = MPI_COMM_NULL;  // the communicator the window was created over
  MPI_Win win_ = MPI_WIN_NULL;
  std::uint64_t* base_ = nullptr;
  std::vector<int> ranks_;       // member id -> rank in the window's communicator, -1 when absent
  std::uint64_t tail_word_ = 0;  // staging for a partial last word, reusable after flush_local
};

}  // namespace comm
DML_END_NAMESPACE

#if !defined(DML_SEPARATE_COMPILATION)
#include <dml/comm/impl/mpi_rma.ipp>
#endif

#if defined(DML_SEPARATE_COMPILATION)
// Separate compilation: the vector's core over this transport is compiled
// once, by <dml/src_mpi.hpp>; here it is declared extern (see
// <dml/detail/instantiations.hpp>).
#include <dml/detail/instantiations.hpp>
#if !defined(DML_DETAIL_KEYWORD)
#define DML_DETAIL_KEYWORD extern
DML_BEGIN_NAMESPACE
DML_DETAIL_INSTANTIATE_TRANSPORT(comm::mpi_rma)
DML_END_NAMESPACE
#undef DML_DETAIL_KEYWORD
#endif
#endif

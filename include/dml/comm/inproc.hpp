// SPDX-License-Identifier: BSL-1.0
/// @file
/// The in-process transport: ranks are threads of one process sharing memory.
/// It is the embedded default, the test bed, and the place for fault and
/// straggler injection.
#pragma once

#include <dml/comm/attributes.hpp>
#include <dml/comm/concepts.hpp>
#include <dml/comm/detail/segment_base.hpp>
#include <dml/detail/members.hpp>
#include <dml/error.hpp>
#include <dml/fwd.hpp>
#include <dml/random.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

DML_BEGIN_NAMESPACE
namespace comm::inproc {

/// Settings of one `run`.
struct options {
  /// Longest any wait (barrier, collective, gather) may take before it
  /// throws `dml::timeout`. Waits on a member that has stopped or thrown end
  /// at once with `dml::peer_failure` instead.
  std::chrono::milliseconds wait_limit{60'000};
  /// Straggler injection: before every transport operation each rank sleeps
  /// a uniformly random time in [0, max_random_delay].
  std::chrono::microseconds max_random_delay{0};
  /// Straggler injection: these members sleep the given time before every
  /// transport operation.
  std::vector<std::pair<member_id, std::chrono::microseconds>> slow_members{};
  /// Fault injection: member m stops, as if its process had died, at its
  /// first transport operation or wait at or after the given time (a thread
  /// cannot be stopped from outside at an arbitrary instruction). The kill
  /// drivers use it to kill at a random moment of a run.
  std::vector<std::pair<member_id, std::chrono::steady_clock::time_point>> kill_at{};
  /// Fault injection: member m dies inside its k-th call of the context's
  /// barrier() (k counts from 1) once every member has entered it, and the
  /// barrier's completion reaches only the members with a lower id; the
  /// others see the death first and never learn that it completed, as MPI
  /// members can when a member dies inside a collective. Tests use it to
  /// check that such a half-completed barrier is settled by the recovery.
  std::vector<std::pair<member_id, std::size_t>> die_inside_barrier{};
  /// Seed of the per-rank random delay generators.
  std::uint64_t seed = 0x5eed;
  /// The node each member runs on, one label per member, as the MPI
  /// transports report theirs (`context::node_labels()`); empty: every
  /// member on one node, labelled 0. Threads share one machine, so this only
  /// lets a test or a simulation group members as if by node.
  std::vector<std::size_t> nodes{};
  // What vectors do when a member fails is not a transport setting: see
  // dml::fault::set_policy and dml::fault::set_min_survivors
  // (dml/fault/membership.hpp).
};

/// Thrown inside a rank that was stopped by `context::stop()` or
/// `context::kill()`; `run` treats it as that rank's end, not as an error.
class stopped : public std::exception {
 public:
  [[nodiscard]] const char* what() const noexcept override {
    return "dml::comm::inproc: this member was stopped";
  }
};

namespace detail {

enum class state : int { running, finished, stopped, failed };

DML_DECL const char* describe(state s);

// One member's part of a segment. Every access goes through std::atomic_ref
// so concurrent one-sided writes and local reads are not data races.
struct memory {
  std::vector<std::uint64_t> data;
  std::vector<std::uint64_t> control;
};

struct world {
  DML_DECL explicit world(std::size_t n, options o);

  std::size_t size;
  options opts;
  std::vector<std::atomic<state>> states;
  std::vector<std::atomic<bool>> killed;  // set by kill(): stop at the next operation

  std::mutex mutex;
  std::condition_variable cv;
  // Rendezvous of collective operations (barrier, exchange, segment creation).
  std::uint64_t generation = 0;
  std::vector<bool> arrived;
  std::vector<std::vector<std::byte>> records;
  std::shared_ptr<const std::vector<std::vector<std::byte>>> result;
  // options::die_inside_barrier: the generation a member dies in (0: none),
  // and, per completed generation, the member that died inside it.
  std::vector<std::uint64_t> dying_in;
  std::map<std::uint64_t, member_id> died_inside;
  // Segments being created: (view epoch, n-th segment in that view) ->
  // every member's part, until each member of the view has picked it up.
  struct pending_segment {
    std::vector<std::shared_ptr<memory>> parts;
    std::size_t picked = 0;
  };
  std::map<std::pair<std::uint64_t, std::size_t>, pending_segment> segments;
  // Membership. The in-process failure detector is perfect: a member that
  // stopped or threw is dead, and the survivors' agreement is a decision
  // taken once under `mutex` that every survivor then adopts.
  std::atomic<std::uint64_t> epoch{0};  // == current.epoch, readable without the lock
  comm::membership_view current;
  // detection[e]: seconds from the first failure to the agreement on view e + 1.
  std::vector<double> detection;
  std::vector<std::chrono::steady_clock::time_point> failed_at;

  // Sets a final state; a failure is time-stamped for the detection figures
  // (once: a stopped member's state is set again when its thread ends).
  DML_DECL void finish(member_id m, state s);

  // Under `mutex`: installs a new view without the dead members of the
  // current one, if there are any. Returns whether it did.
  DML_DECL bool agree_locked();

  [[nodiscard]] bool alive(member_id m) const {
    const auto s = states[m].load(std::memory_order_acquire);
    return s == state::running || s == state::finished;
  }

  void notify() {
    { std::lock_guard lock(mutex); }
    cv.notify_all();
  }
};

DML_DECL void copy_in(std::uint64_t* dst, std::span<const std::byte> src);
// As copy_in with plain stores (for words nobody accesses concurrently).
DML_DECL void copy_in_exclusive(std::uint64_t* dst, std::span<const std::byte> src);

}  // namespace detail

class context;

/// One member's view of an in-process segment. Move-only, like the other
/// transports' segments (the memory is shared and freed with the last part).
class segment : ::dml::detail::segment_impl::segment_base<segment, context> {
  using handle_base = ::dml::detail::segment_impl::segment_base<segment, context>;

 public:
  segment() = default;
  segment(segment&& o) noexcept : handle_base(std::move(o)) { take(o); }
  segment& operator=(segment&& o) noexcept { return move_assign(o); }
  ~segment() { release(); }

  /// Number of data words member m holds in this segment.
  [[nodiscard]] std::size_t words(member_id m) const { return part(m).data.size(); }
  [[nodiscard]] std::size_t control_words(member_id m) const { return part(m).control.size(); }

  DML_DECL void put(member_id target, std::size_t word, std::span<const std::byte> bytes);
  /// put() with plain stores (memcpy, vectorized) instead of word-wise
  /// atomic ones, for words nobody reads or writes concurrently: the caller
  /// guarantees that every read of them is ordered after this put by a
  /// later synchronization (a barrier, or an acquire load that sees a word
  /// stored after it) and that no reader of an earlier write is still
  /// reading them. The optional transport operation behind
  /// `slot_access::exclusive` (comm/concepts.hpp).
  DML_DECL void put_exclusive(member_id target, std::size_t word, std::span<const std::byte> bytes);
  void order(member_id) {}  // every store is a release store: program order is visibility order
  DML_DECL void flush(member_id target);
  void flush_all() {}
  DML_DECL std::uint64_t fetch_add(member_id target, std::size_t control_word, std::uint64_t value);
  /// One-sided read of source's data words (word-wise acquire loads).
  DML_DECL void get(member_id source, std::size_t word, std::span<std::byte> out);

  [[nodiscard]] std::uint64_t load(std::size_t word) const {
    check_own_range(word, 8);
    return std::atomic_ref<std::uint64_t>(own_part().data[word]).load(std::memory_order_acquire);
  }
  [[nodiscard]] std::uint64_t load_control(std::size_t word) const {
    check_own_control(word);
    return std::atomic_ref<std::uint64_t>(own_part().control[word]).load(std::memory_order_acquire);
  }
  void read(std::size_t word, std::span<std::byte> out) const {
    check_own_range(word, out.size());
    ::dml::detail::segment_impl::atomic_copy_out(out, own_part().data.data() + word);
  }
  [[nodiscard]] std::span<const std::uint64_t> view(std::size_t word, std::size_t words) const {
    check_own_words(word, words);
    return {own_part().data.data() + word, words};
  }
  void sync() {}

 private:
  friend class context;
  friend handle_base;
  static constexpr const char* who = "dml::comm::inproc";

  DML_DECL segment(context* ctx, std::vector<std::shared_ptr<detail::memory>> parts, member_id own);

  [[nodiscard]] member_id own() const noexcept { return own_; }
  [[nodiscard]] detail::memory& own_part() const { return *parts_[own_]; }
  // A member outside the view the segment was created in has no part.
  [[nodiscard]] DML_DECL detail::memory& part(member_id m) const;
  // Before a member's part is looked up: one without a part is named.
  void check_member(member_id m) const { (void)part(m); }

  // The move of what the base does not hold (see segment_base).
  void take(segment& o) noexcept {
    parts_ = std::move(o.parts_);
    own_ = o.own_;
  }
  void release() noexcept {}  // the parts are shared: the last handle frees them

  std::vector<std::shared_ptr<detail::memory>> parts_;
  member_id own_ = 0;
};

/// A member of an in-process group; `run` hands one to each rank's function.
class context {
 public:
  using policy_slot = slot::transport;
  using segment_type = segment;

  DML_DECL context(std::shared_ptr<detail::world> w, member_id rank);
  context(const context&) = delete;
  context& operator=(const context&) = delete;

  [[nodiscard]] member_id rank() const noexcept { return rank_; }
  [[nodiscard]] std::size_t size() const noexcept { return world_->size; }
  /// The view this member works in: epoch and live set. It changes only
  /// in `agree_on_survivors()` (which `dml::fault::recover` calls); until then failures show as `alive(m) ==
  /// false` and as peer failures in waits.
  [[nodiscard]] const membership_view& view() const noexcept { return view_; }
  /// Throws `dml::peer_failure` when the other members have agreed on a
  /// newer view than this member's (`dml::fault::recover` moves it to the survivors).
  /// Cheap: one atomic load when nothing changed. Vectors call it before
  /// each operation and while they wait.
  void check_view() const {
    if (world_->epoch.load(std::memory_order_acquire) == view_.epoch) return;
    std::lock_guard lock(world_->mutex);
    throw_stale_locked();
  }

  /// The agreement primitive (see `comm::shrinkable_transport`): adopts the
  /// view without the members that have failed, deciding it first if no
  /// other survivor has. The in-process failure detector is perfect and the
  /// decision is taken once under the group's lock, so this never waits.
  /// Returns the current view when nothing failed.
  DML_DECL comm::agreement agree_on_survivors(std::chrono::steady_clock::time_point /*deadline*/);

  /// Whether a background thread of this member may use the context while
  /// its own thread does not (vectors' scatter_async()): yes.
  [[nodiscard]] bool background_calls() const noexcept { return true; }
  /// Storage for the layers above the transport (dml/comm/attributes.hpp).
  [[nodiscard]] comm::attributes& attributes() noexcept { return attributes_; }
  [[nodiscard]] const comm::attributes& attributes() const noexcept { return attributes_; }

  [[nodiscard]] bool alive(member_id m) const { return m < world_->size && world_->alive(m); }
  /// Longest any wait of this member may take (options::wait_limit until
  /// set_wait_limit() changes it for this member).
  [[nodiscard]] std::chrono::steady_clock::duration wait_limit() const { return wait_limit_; }
  /// Changes this member's wait limit (the adaptive timeout of
  /// dml/fault/timeout.hpp does); other members keep theirs.
  void set_wait_limit(std::chrono::steady_clock::duration limit) noexcept { wait_limit_ = limit; }
  [[nodiscard]] const options& settings() const noexcept { return world_->opts; }
  /// The node of every member (options::nodes; all 0 when it was empty).
  [[nodiscard]] const std::vector<std::size_t>& node_labels() const noexcept { return world_->opts.nodes; }

  /// Waits until every live member has entered the barrier.
  void barrier() {
    ++barriers_entered_;
    (void)rendezvous({}, "barrier");
  }

  /// Collective: every member's record, indexed by member id.
  std::vector<std::vector<std::byte>> exchange(std::span<const std::byte> record) {
    return rendezvous(record, "exchange");
  }

  /// Collective: allocates this member's part (zeroed) and returns a handle
  /// reaching every member's part.
  DML_DECL segment create_segment(std::size_t data_words, std::size_t control_words);

  /// Fault injection: this member stops abruptly, as if its process died.
  /// Never returns. Others see it as failed from now on.
  [[noreturn]] void stop() {
    world_->finish(rank_, detail::state::stopped);
    throw stopped{};
  }

  /// Fault injection from another member: m stops at its next transport
  /// operation (a thread cannot be killed from outside at an arbitrary
  /// instruction). Others see it as failed from then on.
  DML_DECL void kill(member_id m);

  /// Straggler injection at a chosen point: sleeps and then acts as an
  /// ordinary transport operation (a stop requested meanwhile takes effect).
  void delay(std::chrono::microseconds d) {
    std::this_thread::sleep_for(d);
    before_operation();
  }

  /// Called before every transport operation: applies kills and delays.
  DML_DECL void before_operation();

  /// True once member m returned normally from its function (it is not
  /// failed, but will never write again).
  [[nodiscard]] bool finished(member_id m) const {
    return m < world_->size && world_->states[m].load(std::memory_order_acquire) == detail::state::finished;
  }

  /// Called from wait loops: a member asked to stop stops here too.
  void poll() {
    if (kill_due()) stop();
  }

  /// Throws `dml::peer_failure` if member m has failed; for wait loops.
  DML_DECL void require_alive(member_id m, const char* waiting_for) const;

 private:
  // Under the world's mutex, with this member's view older than the group's.
  [[noreturn]] DML_DECL void throw_stale_locked() const;

  DML_DECL std::vector<std::vector<std::byte>> rendezvous(std::span<const std::byte> record,
                                                          const char* what);

  // The result of the rendezvous of generation `gen`, as this member sees
  // it: with options::die_inside_barrier the member that died inside it
  // stops, and the members above it see its death instead of the result.
  DML_DECL std::vector<std::vector<std::byte>> completed_locked(std::unique_lock<std::mutex>& lock,
                                                                std::uint64_t gen, const char* what);

  friend class segment;
  std::shared_ptr<detail::world> world_;
  member_id rank_;
  splitmix64 rng_;
  std::chrono::microseconds slow_{0};
  std::chrono::steady_clock::duration wait_limit_{world_->opts.wait_limit};
  std::chrono::steady_clock::time_point kill_at_ = std::chrono::steady_clock::time_point::max();

  // kill() was called for this member, or its planned kill time has come.
  [[nodiscard]] bool kill_due() const {
    return world_->killed[rank_].load(std::memory_order_acquire) ||
           (kill_at_ != std::chrono::steady_clock::time_point::max() &&
            std::chrono::steady_clock::now() >= kill_at_);
  }
  std::size_t segments_created_ = 0;  // in the current view
  std::size_t barriers_entered_ = 0;  // calls of barrier(), for options::die_inside_barrier
  membership_view view_;
  comm::attributes attributes_;
};

namespace detail {
// The body of run(): fn is called through `call`, so the threads, the world
// and the error handling are compiled once (in separate compilation mode,
// once per program), not once per caller's function.
DML_DECL void run_members(std::size_t n, void (*call)(void*, context&), void* fn, options opts);
}  // namespace detail

/// Starts n ranks as threads, runs fn(context&) on each and joins them. If
/// any rank throws, the first exception thrown is rethrown here; dml's own
/// exceptions get "member r: " prepended to their message. A rank that was
/// stopped (fault injection) ends quietly. Members that wait for a rank that
/// threw or stopped get `dml::peer_failure` instead of hanging.
template <class Fn>
void run(std::size_t n, Fn&& fn, options opts = {}) {
  using F = std::remove_reference_t<Fn>;
  detail::run_members(
      n, [](void* f, context& ctx) { (*static_cast<F*>(f))(ctx); },
      const_cast<void*>(static_cast<const void*>(std::addressof(fn))), std::move(opts));
}

}  // namespace comm::inproc
DML_END_NAMESPACE

#if !defined(DML_SEPARATE_COMPILATION)
#include <dml/comm/impl/inproc.ipp>
#endif

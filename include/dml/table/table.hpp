// SPDX-License-Identifier: BSL-1.0
/// @file
/// The parameter table: rows x row_length elements that every member reads
/// and updates with deltas that accumulate (`row += delta`), read with the
/// parameter-server meaning of stale synchronous consistency.
///
/// Inside (docs/tables.md has the whole story): every row has an owner
/// that holds its master copy in its segment, under a version word, with
/// the number of clocks of every member it has applied. A member's updates
/// of one clock are batched per owner and written into a receive ring the
/// owner keeps for it; the owner applies a member's clock whole when its end
/// marker arrives, during its own table calls. Readers fetch rows with
/// one-sided gets (version, applied clocks, rows, version again) when their
/// cached copy is too stale for the consistency policy, and add their own
/// updates the owner has not applied yet. The access pattern a member
/// records (`begin_recording` / `end_recording`) drives IterStore's
/// specializations: placement, pre-marshalled batches, prefetch, a static
/// cache (dml/table/options.hpp).
#pragma once

#include <dml/comm/concepts.hpp>
#include <dml/comm/get_all.hpp>
#include <dml/consistency/concepts.hpp>
#include <dml/error.hpp>
#include <dml/fault/membership.hpp>
#include <dml/fwd.hpp>
#include <dml/table/concepts.hpp>
#include <dml/table/detail/batch.hpp>
#include <dml/table/detail/cache.hpp>
#include <dml/table/detail/ownership.hpp>
#include <dml/table/detail/pattern.hpp>
#include <dml/table/detail/wait.hpp>
#include <dml/table/detail/wire.hpp>
#include <dml/table/options.hpp>
#include <dml/table/stats.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <initializer_list>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <unordered_set>
#include <utility>
#include <vector>

DML_BEGIN_NAMESPACE

/// A parameter table of `rows()` rows of `row_length()` elements of T.
///
/// Semantics (the same for every policy; s is the policy's slack: 0 for
/// bsp, S for ssp<S>, no bound for asp):
/// - a member's clock starts at 0 and `clock()` ends it; updates a member
///   makes while at clock c belong to clock c;
/// - `read(row)` by a member at clock T returns a value that includes every
///   member's updates of clocks 0..T-s-1 and all of the caller's own
///   updates so far, and each update whole or not at all; it waits until
///   that holds;
/// - `sync()` (collective) ends the clock; afterwards every read includes
///   every update made before it.
///
/// Rows start at zero. An owner applies what others sent it during its own
/// table calls, so a member that computes for a long time without calling
/// the table delays readers of its rows (until its next call).
///
/// Failures (transports that can shrink their group): the survivors agree on
/// a view, the table is rebuilt over them from every survivor's own
/// updates, and the failed members' updates are withdrawn (counted in
/// `stats().lost_updates` as far as they had arrived); under
/// `fault::policy::abort` every survivor throws `dml::peer_failure` instead.
///
/// @tparam T           element type (arithmetic, not bool)
/// @tparam Transport   transport context type, e.g. `dml::comm::inproc::context`
/// @tparam Consistency `dml::consistency::bsp`, `ssp<S>`, `asp`, or `any` holding one of them
///         (the slack chosen at run time: one instantiation serves every slack)
template <class T, class Transport, class Consistency>
class table {
  static_assert(
      std::is_arithmetic_v<T> && !std::is_same_v<T, bool>,
      "dml::table<T, ...>: T must be an arithmetic type other than bool (float, double, int32_t, ...)");
  static_assert(comm::transport<Transport>,
                "dml::table: the Transport needs a type modelling dml::comm::transport (policy_slot = "
                "dml::slot::transport, rank(), size(), view(), barrier(), exchange(), create_segment())");
  static_assert(consistency::table_consistency<Consistency>,
                "dml::table: the consistency policy of a table must be dml::consistency::bsp, ssp<S> or asp "
                "(notify_ack has no meaning for tables)");

  static constexpr std::uint64_t unbounded_slack = consistency::unbounded;
  static constexpr bool recoverable = comm::shrinkable_transport<Transport>;
  using segment_type = typename Transport::segment_type;

 public:
  using value_type = T;
  using transport_type = Transport;
  using consistency_type = Consistency;

  /// Collective: every live member must build its table with the same
  /// shape, policy and options, in the same order relative to other tables
  /// and vectors. Throws `dml::config_error` on every member when they
  /// disagree or when a size is zero or too large. A member that fails
  /// meanwhile is survived as in read().
  table(Transport& comm, std::size_t rows, std::size_t row_length, Consistency cons = {},
        table_options opts = {})
      : comm_(&comm), rows_(rows), len_(row_length), cons_(std::move(cons)), opts_(opts) {
    if (row_length != 0 && row_length <= max_row_length) {
      rw_ = (row_length * sizeof(T) + 7) / 8;
      stride_ = rw_ * 8 / sizeof(T);
      ring_ = std::max<std::size_t>(opts_.ring_words, 2 * detail::table_wire::message_words(1, rw_) + 2);
    }
    cache_.configure(stride_, opts_.cache_rows);
    for (;;) {
      try {
        build(source::none);
        break;
      } catch (const peer_failure&) {
        recover_or_rethrow();
      }
    }
    if constexpr (recoverable)
      subscription_ =
          fault::subscription(comm, this, [](void* self) { static_cast<table*>(self)->rebuild(); });
  }

  table(const table&) = delete;
  table& operator=(const table&) = delete;
  /// Moves keep the subscription to the transport's view changes.
  table(table&& o) noexcept { move_from(o); }
  table& operator=(table&& o) noexcept {
    if (this != &o) {
      this->~table();
      ::new (static_cast<void*>(this)) table(std::move(o));
    }
    return *this;
  }
  ~table() = default;

  /// Row `row` as this member may see it now (see the class comment); waits
  /// as the consistency policy requires. The span stays valid until this
  /// member's next call of the table. Inside a virtual iteration: zeros.
  [[nodiscard]] std::span<const T> read(std::size_t row) {
    check_row(row, "read");
    if (recording_) {
      pattern_.note_read(row);
      if (*recording_ == recording::virtual_iteration) {
        zeros_.assign(len_, T{});
        return zeros_;
      }
    }
    for (;;) {
      try {
        return read_once(row);
      } catch (const peer_failure&) {
        recover_or_rethrow();
      }
    }
  }

  /// Rows `rows`, in the order given (duplicates allowed, empty is fine),
  /// each as read() would return it now: the same waits, bounds and
  /// read-your-writes. The result holds rows.size() x row_length()
  /// elements, row i at [i * row_length(), (i + 1) * row_length()), and stays
  /// valid until this member's next call of the table. The rows of other
  /// members that are not fresh enough in the cache are fetched with one
  /// fetch per owner, in contiguous runs as the prefetch does, instead of one
  /// per row. A row out of range anywhere in the list throws
  /// `dml::config_error` naming it, before anything happens. Inside a
  /// virtual iteration: zeros (the reads are noted).
  [[nodiscard]] std::span<const T> read_rows(std::span<const std::size_t> rows) {
    for (std::size_t r : rows) check_row(r, "read_rows");
    if (rows.size() > std::numeric_limits<std::size_t>::max() / sizeof(T) / len_)
      throw config_error("dml::table::read_rows: " + std::to_string(rows.size()) + " rows of " +
                         std::to_string(len_) + " elements do not fit in memory");
    if (recording_) {
      for (std::size_t r : rows) pattern_.note_read(r);
      if (*recording_ == recording::virtual_iteration) {
        zeros_.assign(rows.size() * len_, T{});
        return zeros_;
      }
    }
    for (;;) {
      try {
        return read_rows_once(rows);
      } catch (const peer_failure&) {
        recover_or_rethrow();
      }
    }
  }

  /// row += delta, as an update of this member's current clock. Local: it
  /// is sent to the row's owner when the clock ends. `delta` must have
  /// row_length() elements. Inside a virtual iteration only noted.
  void update(std::size_t row, std::span<const T> delta) {
    check_row(row, "update");
    if (delta.size() != len_)
      throw config_error("dml::table::update: the delta has " + std::to_string(delta.size()) +
                         " elements; the rows have " + std::to_string(len_));
    if (recording_) {
      ++pattern_.updates[row];
      if (*recording_ == recording::virtual_iteration) return;
    }
    const member_id o = layout_.owner(row);
    T* dst = builders_[o].at(row, slot(row));
    for (std::size_t e = 0; e < len_; ++e) dst[e] += delta[e];
    if (o != comm_->rank())
      if (auto* c = cache_.find(row)) {
        auto v = cache_.values(*c);
        for (std::size_t e = 0; e < len_; ++e) v[e] += delta[e];
      }
    ++stats_.updates;
    if (++since_progress_ >= progress_every) {
      since_progress_ = 0;
      guarded([&] { progress(); });
    }
  }
  /// A delta of another element type is refused at compile time (no
  /// silent conversion of every element).
  template <class U>
  requires(!std::is_same_v<std::remove_const_t<U>, T>) void update(std::size_t, std::span<U>) {
    static_assert(std::is_same_v<std::remove_const_t<U>, T>,
                  "dml::table::update: the delta must be a span of the table's element type T");
  }
  /// Convenience: update(row, {delta.begin(), delta.end()}).
  void update(std::size_t row, std::initializer_list<T> delta) {
    update(row, std::span<const T>(delta.begin(), delta.size()));
  }

  /// Ends this member's current clock: its updates of the clock leave for
  /// their owners (without waiting for them to arrive).
  void clock() {
    if (recording_) {
      ++pattern_.clocks;
      if (*recording_ == recording::virtual_iteration) return;
    }
    commit();
    guarded([&] {
      check_peers();
      (void)pump();
      progress();
    });
  }

  /// Collective: ends the current clock (as clock() does), waits until every
  /// owner has applied every update every member made before, and drops
  /// every cached row: afterwards every read includes all those updates.
  void sync() {
    if (recording_ && *recording_ == recording::virtual_iteration)
      throw config_error("dml::table::sync: not inside a virtual iteration (call end_recording() first)");
    clock();
    collective([&] { quiesce(); });
    if (contributions_kept() && opts_.keep_through_sync) collective([&] { take_snapshot(); });
    invalidate();
  }

  /// With `table_options::keep_through_sync`: how many sync()s the rows
  /// rest on for good, failed members' updates included (after a rebuild,
  /// the newest sync every survivor had completed; a later failure never
  /// takes them back). 0 without the option. An application that re-adds
  /// what a failed member had written (dml-mf's initial values) checks it.
  [[nodiscard]] std::uint64_t kept_syncs() const noexcept { return snap_generation_; }

  /// The newest clock c such that the copy of `row` this member holds (the
  /// one read() returned last, or the owner's when this member owns it)
  /// includes every member's updates of clocks 0..c; -1 when it holds none.
  [[nodiscard]] std::int64_t age(std::size_t row) const {
    check_row(row, "age");
    if (layout_.owner(row) == comm_->rank()) return static_cast<std::int64_t>(own_complete()) - 1;
    const auto* it = cache_.find(row);
    if (it != nullptr && it->generation == generation_) return static_cast<std::int64_t>(it->complete) - 1;
    if (row == scratch_row_ && scratch_generation_ == generation_)
      return static_cast<std::int64_t>(scratch_complete_) - 1;
    return -1;
  }

  /// Starts recording the access pattern (IterStore §3.2.1): either a
  /// virtual iteration (reads return zeros; updates and clocks are only
  /// noted) or a real one. Local; end it with end_recording().
  ///
  /// The recording may span several clocks: its period is the number of
  /// clock() calls (sync() included) made during it, 1 when there were
  /// none, and the pattern notes which rows each of those clocks reads
  /// (reads after the last clock() count as the first clock's). Prefetch
  /// then refreshes at clock c only the rows of the pattern's clock
  /// (c - c0) mod period, c0 being the clock at begin_recording(); when the
  /// first row a clock reads is not one that pattern clock reads, the next
  /// pattern clock that reads it is taken, and the count goes on from
  /// there (an extra clock, a sync() for instance, shifts the phases).
  void begin_recording(recording mode) {
    if (recording_)
      throw config_error("dml::table::begin_recording: already recording (call end_recording() first)");
    recording_ = mode;
    pattern_.clear();
    recording_start_ = clock_;
  }

  /// Collective: ends the recording and applies the specializations the
  /// options enable: the rows move to members that use them (place_rows),
  /// batches get their fixed layout (batch_updates), the static cache and
  /// the prefetch lists (one per clock of the period) are chosen. Values and
  /// semantics do not change.
  void end_recording() {
    if (!recording_) throw config_error("dml::table::end_recording: no recording was begun");
    recording_.reset();
    pattern_.fold();
    phase_anchor_ = recording_start_ % pattern_.period();
    collective([&] { specialize(); });
  }

  /// Whether a recording is under way.
  [[nodiscard]] bool recording_now() const noexcept { return recording_.has_value(); }
  /// Whether an access pattern drives the specializations.
  [[nodiscard]] bool specialized() const noexcept { return have_pattern_; }

  /// This member's clock: the number of clocks it has ended.
  [[nodiscard]] std::uint64_t current_clock() const noexcept { return clock_; }
  [[nodiscard]] std::size_t rows() const noexcept { return rows_; }
  [[nodiscard]] std::size_t row_length() const noexcept { return len_; }
  /// The member that owns `row`.
  [[nodiscard]] member_id owner(std::size_t row) const {
    check_row(row, "owner");
    return layout_.owner(row);
  }
  /// Rows this member owns.
  [[nodiscard]] std::size_t owned_rows() const { return layout_.owned(comm_->rank()); }
  [[nodiscard]] const table_stats& stats() const noexcept { return stats_; }
  [[nodiscard]] const table_options& options() const noexcept { return opts_; }
  [[nodiscard]] const Consistency& consistency() const noexcept { return cons_; }
  /// The slack of the policy (consistency::unbounded for asp).
  [[nodiscard]] std::uint64_t staleness() const noexcept { return slack_; }
  [[nodiscard]] member_id rank() const { return comm_->rank(); }
  /// Epoch of the membership view the table was (re)built for.
  [[nodiscard]] std::uint64_t epoch() const noexcept { return epoch_; }
  /// One line naming shape, element type, policy and options (what members compare).
  [[nodiscard]] const std::string& description() const noexcept { return description_; }

 private:
  // ---- types and constants -----------------------------------------------------
  enum class source { none, contributions, migration };
  static constexpr std::size_t max_row_length = (std::size_t{1} << 32) / sizeof(T);
  static constexpr std::size_t max_rows = 0xffff'fff0u;  // row owners are kept in 32 bits
  static constexpr std::uint64_t progress_every = 64;    // updates between two progress() calls
  static constexpr std::size_t max_gap_rows = 4;         // fetched needlessly to join two runs
  static constexpr std::uint64_t end_flag = 0x100;       // in the kind word: the last message of a batch
  static constexpr std::uint64_t never = std::numeric_limits<std::uint64_t>::max();

  // An owner's view of one sender's ring.
  struct receiver {
    std::size_t base = 0;            // the ring's first word in the own segment
    std::uint64_t tail = 0;          // words consumed, ever
    std::uint64_t expect = 1;        // next message's sequence number
    std::uint64_t credit = 0;        // consumed words not yet reported to the sender
    std::vector<std::uint64_t> ids;  // a clock's rows staged until its end marker
    std::vector<T> values;
    bool ended = false;  // end of values seen (rebuilds)
  };

  // ---- the operations, once ----------------------------------------------------
  std::span<const T> read_once(std::size_t row);
  std::span<const T> read_rows_once(std::span<const std::size_t> rows);

  // Moves the current clock's updates into the outboxes (own rows: applied
  // at once) and ends the clock. Local: cannot fail half-way.
  void commit();

  // Everything every member sent before is applied and published by its
  // owner. Collective.
  void quiesce();

  // ---- the owner's side ----------------------------------------------------------
  // Applies what arrived in the rings, publishes, reports consumed words to
  // the senders and writes queued messages. Never waits.
  void progress();

  // Consumes the complete messages in m's ring. Returns whether any row changed.
  bool poll_ring(member_id m);

  void consume(member_id m, receiver& r, std::uint64_t kind, std::uint64_t clock, std::size_t count,
               std::size_t at, bool& changed);

  // master[row] += values[i] for the count rows id(i); checked when they
  // come from another member.
  template <class Id>
  void apply_rows(std::size_t count, Id&& id, const T* values, bool check);

  void mark_dirty(std::size_t local) {
    if (!is_dirty_[local]) {
      is_dirty_[local] = 1;
      dirty_.push_back(local);
    }
  }

  // Rewrites the changed rows and the applied clocks in the own segment
  // under the version word (odd while rewriting).
  void publish();

  [[noreturn]] void malformed(member_id m, const std::string& why) const {
    throw comm_error("dml::table: member " + std::to_string(comm_->rank()) +
                     " got a malformed message from member " + std::to_string(m) + ": " + why);
  }

  // ---- the sender's side -----------------------------------------------------------
  // Writes queued messages while their owners' rings have room; returns
  // whether everything queued is written.
  bool pump();

  bool write_some(member_id o, detail::sent_batch<T>& b);

  // Room for a message of `words` in o's ring (after a skip word if it does
  // not fit before the ring's end); writes the skip word.
  bool reserve(member_id o, std::size_t words);

  // Drops batches their owners have applied (the owner consumed their end
  // marker, so its published rows include them).
  void prune_all();

  [[nodiscard]] member_id first_unwritten() const {
    for (member_id o : comm_->view().live)
      for (const auto& b : outbox_[o])
        if (!b.complete) return o;
    return comm_->rank();
  }

  // ---- the reader's side -------------------------------------------------------------
  // Clocks of every member a read at the current clock must include.
  [[nodiscard]] std::uint64_t need_now() const noexcept {
    if (slack_ == unbounded_slack) return 0;
    return clock_ > slack_ ? clock_ - slack_ : 0;
  }

  [[nodiscard]] bool fresh(const typename detail::row_cache<T>::entry& e, std::uint64_t need) const {
    if (e.generation != generation_ || e.complete < need) return false;
    if (slack_ == unbounded_slack) return e.fetched == clock_;  // refreshed once per clock
    return true;
  }

  // Clocks of every live member this member's own rows include.
  [[nodiscard]] std::uint64_t own_complete() const {
    std::uint64_t c = never;
    for (member_id m : comm_->view().live) c = std::min(c, applied_[m]);
    return c;
  }

  void wait_own(std::uint64_t need);

  // The live member with the fewest applied clocks.
  [[nodiscard]] member_id laggard(std::span<const std::uint64_t> applied) const {
    member_id who = comm_->rank();
    std::uint64_t least = never;
    for (member_id m : comm_->view().live)
      if (applied[m] < least) {
        least = applied[m];
        who = m;
      }
    return who;
  }

  std::span<const T> own_value(std::size_t row);

  // At the first read of a clock (of `row`, if any): refreshes every stale
  // row of the prefetch lists of the clock's phase, owner by owner.
  void maybe_prefetch(std::uint64_t need, std::optional<std::uint64_t> row);
  // The pattern clock the current clock is, given the first row it reads.
  std::size_t phase_now(std::optional<std::uint64_t> row);

  // Fetches `rows` (ascending by their place at o) from owner o once o's
  // rows include `need` clocks of every member, under one version check,
  // and stores them (in the cache, or the last one in scratch_) with this
  // member's updates o had not applied.
  // `dests` (empty, or one per row): where each row's value is copied as well.
  void fetch(member_id o, std::span<const std::uint64_t> rows, std::uint64_t need,
             std::span<T* const> dests = {});

  void invalidate() {
    ++generation_;
    prefetched_ = 0;
  }

  // ---- collective steps ----------------------------------------------------------------
  // A barrier over the live members built on the table's own counters, so
  // that every member keeps serving its rings while it waits (a member
  // blocked in the transport's barrier would not, and a sender waiting for
  // room in its ring could never arrive).
  void table_barrier();

  // Collective over the current view: checks that members agree, computes
  // who owns what, makes the segment and (when a table is rebuilt or its
  // rows move) streams the rows' values to their new owners.
  void build(source src);

  // The segment and every role's state for the current view and layout.
  void install(const comm::membership_view& view);

  void stream_contributions();

  void stream_old_rows(const detail::ownership& old, const std::vector<T>& old_master);

  void queue_values(std::vector<detail::row_batch<T>>& out);

  // Writes the queued values and waits for every live member's end marker.
  void finish_streaming();

  // Called by dml::fault::recover over a new view: counts what the failed
  // members had sent, then rebuilds the table from the survivors' updates.
  void rebuild();

  void count_lost();

  // keep_through_sync: every member's owned rows all-gathered into snap_
  // (collective, right after a sync's quiesce); this member's contributions
  // start again from it.
  void take_snapshot();
  // In a rebuild, when the newest snapshot did not complete on every
  // survivor: go back to the one before (the generations differ by one).
  void back_to_previous_snapshot();

  // end_recording(): agree, move rows (place_rows), fix the layouts.
  void specialize();

  // The pattern's shape for the current layout: the fixed rows of each
  // owner's batch, the cache policy, the prefetch lists.
  void choose_statics();

  [[nodiscard]] std::shared_ptr<const std::vector<std::uint64_t>> static_ids_for(member_id o) const {
    return o < static_ids_.size() ? static_ids_[o] : nullptr;
  }
  [[nodiscard]] std::uint32_t slot(std::size_t row) const noexcept {
    return static_slot_.empty() ? detail::no_slot : static_slot_[row];
  }

  // ---- contributions: this member's updates of ended clocks (to rebuild from) ----
  [[nodiscard]] static constexpr bool contributions_kept() noexcept { return recoverable; }

  // Adds a committed batch for owner o to the contributions.
  void add_contribution(const detail::row_batch<T>& b, member_id o);
  // The position of row's contribution, made (zero) on first use.
  std::uint32_t contribution_slot(std::uint64_t row);

  // ---- membership ----------------------------------------------------------------
  void check_view() {
    if constexpr (recoverable) comm_->check_view();
  }
  // Before a clock's messages leave: has a member failed? (asp never waits
  // and would not notice otherwise.)
  void check_peers() {
    if constexpr (recoverable) {
      comm_->check_view();
      for (member_id m : comm_->view().live)
        if (!comm_->alive(m))
          throw peer_failure(m, "dml::table: member " + std::to_string(comm_->rank()) + "'s peer " +
                                    std::to_string(m) + " has failed");
    }
  }

  template <class F>
  void guarded(F&& f) {
    for (;;) {
      try {
        f();
        return;
      } catch (const peer_failure&) {
        recover_or_rethrow();
      }
    }
  }

  // A collective step (sync, end_recording) that a failure may cut short.
  // Steps are numbered in program order. When some survivor had completed
  // the step before the failure, the others count it as done: the rebuild
  // leaves the table as the step would (every survivor's updates applied,
  // everyone past a barrier), and the survivors that completed it would not
  // join it again. Otherwise nobody completed it and every survivor makes
  // it (again) over the new view.
  template <class F>
  void collective(F&& f) {
    const std::uint64_t id = collectives_done_ + 1;
    for (;;) {
      try {
        f();
        break;
      } catch (const peer_failure&) {
        recover_or_rethrow();
        if (collectives_done_ >= id) break;
      }
    }
    collectives_done_ = std::max(collectives_done_, id);
  }

  // After a peer failure inside an operation: agree on the survivors and
  // rebuild (every table and vector of the context), or rethrow when the
  // transport cannot shrink its group or nothing new was agreed.
  void recover_or_rethrow() {
    if constexpr (recoverable) {
      const auto before = comm_->view().epoch;
      fault::recover(*comm_);  // throws under fault::policy::abort
      if (comm_->view().epoch != before || epoch_ != comm_->view().epoch) return;
    }
    throw;
  }

  // ---- checks and descriptions --------------------------------------------------
  void check_row(std::size_t row, const char* what) const {
    if (row >= rows_)
      throw config_error(std::string("dml::table::") + what + ": row " + std::to_string(row) +
                         " is out of range (the table has " + std::to_string(rows_) + " rows)");
  }

  void validate_local() {
    slack_ = consistency::table_slack(cons_);
    if (rows_ == 0) throw config_error("dml::make_table: 0 rows (a table needs at least one row)");
    if (len_ == 0) throw config_error("dml::make_table: row length 0 (a row needs at least one element)");
    if (rows_ > max_rows)
      throw config_error("dml::make_table: " + std::to_string(rows_) + " rows is more than the " +
                         std::to_string(max_rows) + " a table can hold");
    if (len_ > max_row_length)
      throw config_error("dml::make_table: row length " + std::to_string(len_) + " exceeds 4 GiB per row");
    if (opts_.ring_words > (std::size_t{1} << 32))
      throw config_error("dml::table_options: ring_words " + std::to_string(opts_.ring_words) +
                         " is more than 2^32 words");
  }

  [[nodiscard]] static std::string element_name() {
    if constexpr (std::is_same_v<T, float>)
      return "float";
    else if constexpr (std::is_same_v<T, double>)
      return "double";
    else if constexpr (std::is_same_v<T, std::int32_t>)
      return "int32";
    else if constexpr (std::is_same_v<T, std::int64_t>)
      return "int64";
    else
      return std::string(typeid(T).name()) + "/" + std::to_string(sizeof(T));
  }

  [[nodiscard]] std::string describe() const {
    return "table rows=" + std::to_string(rows_) + " row_length=" + std::to_string(len_) +
           " element=" + element_name() + " consistency=" + std::string(cons_.name()) + " " +
           opts_.describe();
  }

  void check_agreement(const std::vector<std::string>& recs, const comm::membership_view& view) const {
    auto id = [&](std::size_t i) { return i < view.live.size() ? view.live[i] : i; };
    for (std::size_t i = 0; i < recs.size(); ++i)
      if (!recs[i].empty() && recs[i][0] == '!')
        throw config_error("dml::make_table: member " + std::to_string(id(i)) +
                           " rejected the table: " + recs[i].substr(1));
    for (std::size_t i = 1; i < recs.size(); ++i)
      if (recs[i] != recs[0])
        throw config_error("dml::make_table: members disagree on the table: member " + std::to_string(id(0)) +
                           " has '" + recs[0] + "'; member " + std::to_string(id(i)) + " has '" + recs[i] +
                           "'");
  }

  void move_from(table& o) noexcept {
    comm_ = o.comm_;
    rows_ = o.rows_;
    len_ = o.len_;
    rw_ = o.rw_;
    stride_ = o.stride_;
    ring_ = o.ring_;
    cons_ = std::move(o.cons_);
    slack_ = o.slack_;
    opts_ = o.opts_;
    layout_ = std::move(o.layout_);
    next_layout_ = std::move(o.next_layout_);
    lay_ = o.lay_;
    seg_ = std::move(o.seg_);
    description_ = std::move(o.description_);
    epoch_ = o.epoch_;
    clock_ = o.clock_;
    master_ = std::move(o.master_);
    is_dirty_ = std::move(o.is_dirty_);
    dirty_ = std::move(o.dirty_);
    applied_ = std::move(o.applied_);
    recv_ = std::move(o.recv_);
    received_from_ = std::move(o.received_from_);
    version_ = o.version_;
    builders_ = std::move(o.builders_);
    outbox_ = std::move(o.outbox_);
    head_ = std::move(o.head_);
    seq_ = std::move(o.seq_);
    credit_ = std::move(o.credit_);
    pruned_ = std::move(o.pruned_);
    at_ = std::move(o.at_);
    cache_ = std::move(o.cache_);
    generation_ = o.generation_;
    prefetched_ = o.prefetched_;
    scratch_ = std::move(o.scratch_);
    scratch_row_ = o.scratch_row_;
    scratch_complete_ = o.scratch_complete_;
    scratch_generation_ = o.scratch_generation_;
    zeros_ = std::move(o.zeros_);
    fetched_ = std::move(o.fetched_);
    batch_ = std::move(o.batch_);
    applied_buf_ = std::move(o.applied_buf_);
    runs_ = std::move(o.runs_);
    ranges_ = std::move(o.ranges_);
    barriers_ = o.barriers_;
    since_progress_ = o.since_progress_;
    recording_ = o.recording_;
    pattern_ = std::move(o.pattern_);
    have_pattern_ = o.have_pattern_;
    placements_ = o.placements_;
    collectives_done_ = o.collectives_done_;
    static_ids_ = std::move(o.static_ids_);
    static_slot_ = std::move(o.static_slot_);
    prefetch_ = std::move(o.prefetch_);
    recording_start_ = o.recording_start_;
    phase_anchor_ = o.phase_anchor_;
    contrib_index_ = std::move(o.contrib_index_);
    contrib_values_ = std::move(o.contrib_values_);
    contrib_static_ = std::move(o.contrib_static_);
    snap_ = std::move(o.snap_);
    snap_prev_ = std::move(o.snap_prev_);
    snap_generation_ = o.snap_generation_;
    contrib_prev_index_ = std::move(o.contrib_prev_index_);
    contrib_prev_values_ = std::move(o.contrib_prev_values_);
    received_at_snap_ = std::move(o.received_at_snap_);
    received_at_prev_snap_ = std::move(o.received_at_prev_snap_);
    lost_since_snap_ = o.lost_since_snap_;
    lost_since_prev_snap_ = o.lost_since_prev_snap_;
    lost_counted_ = o.lost_counted_;
    stats_ = o.stats_;
    subscription_ = std::move(o.subscription_);
    subscription_.set_owner(this);
  }

  // ---- state ---------------------------------------------------------------------
  Transport* comm_ = nullptr;
  std::size_t rows_ = 0, len_ = 0;
  std::size_t rw_ = 0;      // words per row
  std::size_t stride_ = 0;  // elements per row, padded to whole words
  std::size_t ring_ = 0;    // words per receive ring
  Consistency cons_{};
  std::uint64_t slack_ = 0;  // the policy's (set by validate_local; unbounded_slack for asp)
  table_options opts_{};
  detail::ownership layout_, next_layout_;
  detail::table_wire::layout lay_{};
  segment_type seg_{};
  std::string description_;
  std::uint64_t epoch_ = 0;
  std::uint64_t clock_ = 0;
  // Owner.
  std::vector<T> master_;  // owned rows, stride_ apart
  std::vector<char> is_dirty_;
  std::vector<std::size_t> dirty_;
  std::vector<std::uint64_t> applied_;  // per member: clocks applied here (never: not in the view)
  std::vector<receiver> recv_;
  std::vector<std::uint64_t> received_from_;  // row updates received per member (for lost_updates)
  std::uint64_t version_ = 0;
  // Sender.
  std::vector<detail::row_batch<T>> builders_;               // per owner: the current clock's updates
  std::vector<std::deque<detail::sent_batch<T>>> outbox_;    // per owner: committed, not yet applied
  std::vector<std::uint64_t> head_, seq_, credit_, pruned_;  // per owner (ring words, messages, ...)
  std::vector<std::size_t> at_;                              // per owner: this member's ring there
  // Reader.
  detail::row_cache<T> cache_;
  std::uint64_t generation_ = 1;
  std::uint64_t prefetched_ = 0;                      // clock + 1 of the last prefetch
  std::vector<T> scratch_, zeros_, fetched_, batch_;  // batch_: what read_rows returned
  std::size_t scratch_row_ = 0;  // the uncached row scratch_ holds, its age + 1 and generation
  std::uint64_t scratch_complete_ = 0, scratch_generation_ = 0;
  std::vector<std::uint64_t> applied_buf_;
  std::vector<std::pair<std::size_t, std::size_t>> runs_;
  std::vector<comm::get_range> ranges_;  // what one fetch reads (comm::get_all)
  std::uint64_t barriers_ = 0;
  std::uint64_t since_progress_ = 0;
  // Access pattern.
  std::optional<recording> recording_;
  detail::access_pattern pattern_;
  bool have_pattern_ = false;
  std::uint64_t placements_ = 0;        // layouts installed by placement (members compare them in a rebuild)
  std::uint64_t collectives_done_ = 0;  // sync and end_recording steps completed, in program order
  std::vector<std::shared_ptr<const std::vector<std::uint64_t>>> static_ids_;
  std::vector<std::uint32_t> static_slot_;
  std::vector<std::vector<std::vector<std::uint64_t>>> prefetch_;  // per phase, per owner: rows to refresh
  std::uint64_t recording_start_ = 0;                              // clock_ at begin_recording()
  std::uint64_t phase_anchor_ = 0;                                 // a clock (mod the period) that is phase 0
  // Contributions.
  detail::flat_index contrib_index_;
  std::vector<T> contrib_values_;
  // Per owner: the contribution positions of its batches' static rows,
  // looked up once per layout instead of once per row and clock (a
  // position never changes: contributions are never erased).
  struct static_positions {
    std::shared_ptr<const std::vector<std::uint64_t>> ids;
    std::vector<std::uint32_t> at;
  };
  std::vector<static_positions> contrib_static_;
  // keep_through_sync: the whole table (rows_ rows, stride_ apart) as of the
  // newest snapshot (number snap_generation_, 0: none) and the one before;
  // the contributions above are this member's updates since the newest,
  // these since the one before up to the newest.
  std::vector<T> snap_, snap_prev_;
  std::uint64_t snap_generation_ = 0;
  detail::flat_index contrib_prev_index_;
  std::vector<T> contrib_prev_values_;
  // received_from_ at the two snapshots, and what count_lost() found the
  // failed members had sent since each (the rebuild adds the one it uses).
  std::vector<std::uint64_t> received_at_snap_, received_at_prev_snap_;
  std::uint64_t lost_since_snap_ = 0, lost_since_prev_snap_ = 0;
  // count_lost() ran since the last install(): a rebuild that another
  // failure cut short (possibly before install() made the new segment,
  // leaving none) does not count again.
  bool lost_counted_ = false;
  table_stats stats_;
  fault::subscription subscription_;
};

DML_END_NAMESPACE

// The member functions, by concern.
#include <dml/table/detail/table_read.hpp>
#include <dml/table/detail/table_rebuild.hpp>
#include <dml/table/detail/table_update.hpp>

// SPDX-License-Identifier: BSL-1.0
/// @file
/// Membership and recovery: the one place where a member's failure is
/// turned into a decision. Transports detect failures and offer one
/// agreement primitive (`comm::shrinkable_transport`: agree on the
/// survivors, switch to their group); this header owns what is done with
/// it: the failure policy (tolerate, with an optional minimum of survivors,
/// or abort), the history of view changes, the subscriptions through which
/// vectors (and later tables and schedules) rebuild over the survivors, the
/// recover loop, and barriers that survive a failure in the middle.
///
/// The state is kept per transport context, in the context's attributes
/// (dml/comm/attributes.hpp), and made on first use with the defaults from
/// the environment: `DML_FAILURE_POLICY` (`tolerate` or `abort`) and
/// `DML_MIN_SURVIVORS`.
#pragma once

#include <dml/comm/attributes.hpp>
#include <dml/comm/concepts.hpp>
#include <dml/detail/env.hpp>
#include <dml/detail/members.hpp>
#include <dml/error.hpp>
#include <dml/fault/timeout.hpp>
#include <dml/fwd.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

DML_BEGIN_NAMESPACE
namespace fault {

/// What vectors do when a member of their group fails.
enum class policy {
  /// The survivors agree on a new view without the dead, every vector
  /// rebuilds its graph and receive slots over them, and training goes on.
  tolerate,
  /// The survivors agree on who died, then every vector operation on every
  /// survivor throws `dml::peer_failure` naming the dead member.
  abort,
};

[[nodiscard]] inline const char* name(policy p) noexcept {
  return p == policy::tolerate ? "tolerate" : "abort";
}

/// One view change as a member saw it. A view that was agreed but
/// superseded before this member's vectors were rebuilt in it is not listed
/// on its own: it is merged into the next (its removed members added, its
/// detection time kept), so survivors that worked in the same views list the
/// same changes.
struct view_change {
  std::uint64_t epoch = 0;         ///< epoch of the new view
  std::vector<member_id> removed;  ///< members in the old view but not the new one
  std::vector<member_id> live;     ///< the new view's live set
  double detection_seconds = 0;    ///< from the first removed member's failure to the agreed view
  double recovery_seconds = 0;     ///< from that failure to this member's rebuilt vectors
  /// This member's wait limit when it joined the agreement (with the
  /// adaptive timeout of dml/fault/timeout.hpp: the one it had adapted to).
  double wait_limit_seconds = 0;
  /// Its heartbeat timeout then (0 on transports without heartbeats).
  double heartbeat_timeout_seconds = 0;
};

/// Human-readable list "3, 5".
[[nodiscard]] inline std::string list(const std::vector<member_id>& ms) {
  return dml::detail::member_list(ms);
}

/// Thrown by `recover` on every survivor, once the survivors agreed on a
/// new view and before anything is rebuilt in it, while an interruption
/// scope is open on the transport (detail::interruption_scope): the
/// operation that met the failure is abandoned instead of being made again
/// over the survivors, and the scope's owner (the dynamic schedule engine)
/// goes on from a point every survivor agrees on. It is thrown once per
/// view: the owner then drops what it built on the transport and calls
/// `recover` again, which rebuilds everything else. Thrown before any
/// rebuild because the survivors may disagree on what the owner had built
/// (one finished building a vector that another was still building when
/// the failure cut it short). Not a dml::error and not a
/// std::exception, so that code between the owner and the operation (a
/// program's schedule() calling context::sum) does not take it for an
/// error of its own; such code must leave its state consistent when an
/// exception passes (assign results after the collective call).
struct interrupted {
  std::uint64_t epoch = 0;  ///< the view the survivors agreed on
};

namespace detail {

/// A subscriber's entry: how to rebuild it over a new view.
struct subscriber {
  void* owner = nullptr;
  void (*rebuild)(void*) = nullptr;
};

/// The fault tolerance state of one context.
struct state {
  policy on_failure = policy::tolerate;
  std::size_t min_survivors = 0;
  std::vector<view_change> changes;
  /// In construction order: vectors are built collectively in the same
  /// order on every member, so rebuilding them in this order keeps the
  /// collective steps of a rebuild matched.
  std::vector<subscriber*> subscribers;
  bool rebuild_due = false;             // the subscribers are not all rebuilt for the current view
  std::size_t interrupters = 0;         // open interruption scopes (recover() throws fault::interrupted)
  std::uint64_t interrupted_epoch = 0;  // the view recover() last threw fault::interrupted in
  bool abandoned = false;               // operations were abandoned (fault::interrupted): see recover()
  std::optional<peer_failure> stopped;  // abort or too few survivors: every later recovery throws this
  std::chrono::steady_clock::time_point decided_at{};
  // Barriers in program order (see fault::barrier): the number of the
  // newest one this member knows completed somewhere, and the one this
  // member is in (0: none).
  std::uint64_t barriers_issued = 0;
  std::uint64_t barriers_completed = 0;
  std::uint64_t barrier_pending = 0;
};

DML_DECL policy policy_from_env(const char* who);

/// Sets `comm`'s wait limit to `limit` while it lives (when that is
/// longer and the context lets it be changed), then puts the previous one
/// back.
template <class Comm>
class wait_limit_scope {
 public:
  wait_limit_scope(Comm& comm, std::chrono::steady_clock::duration limit)
      : comm_(comm), before_(comm.wait_limit()) {
    if constexpr (adaptable_transport<Comm>)
      if (limit > before_) comm_.set_wait_limit(limit);
  }
  wait_limit_scope(const wait_limit_scope&) = delete;
  wait_limit_scope& operator=(const wait_limit_scope&) = delete;
  ~wait_limit_scope() {
    if constexpr (adaptable_transport<Comm>) comm_.set_wait_limit(before_);
  }

 private:
  Comm& comm_;
  std::chrono::steady_clock::duration before_;
};

/// A new state with the environment's defaults, for a group of
/// `group_size` members.
[[nodiscard]] DML_DECL std::shared_ptr<state> make_state(std::size_t group_size);

/// The state of `comm`, made on first use with the environment's defaults.
template <comm::shrinkable_transport Comm>
std::shared_ptr<state> state_of(Comm& comm) {
  return comm.attributes().template get_or_create<state>([&] { return make_state(comm.size()); });
}

/// While one is open on a transport, the first recover() in each new view
/// throws fault::interrupted on this member before it rebuilds anything
/// (and, as every survivor opens the same scope, on every survivor).
class interruption_scope {
 public:
  interruption_scope() = default;
  template <comm::shrinkable_transport Comm>
  explicit interruption_scope(Comm& comm) : state_(state_of(comm)) {
    ++state_->interrupters;
    state_->interrupted_epoch = comm.view().epoch;  // not for a view this member already worked in
  }
  interruption_scope(const interruption_scope&) = delete;
  interruption_scope& operator=(const interruption_scope&) = delete;
  ~interruption_scope() {
    if (state_) --state_->interrupters;
  }

 private:
  std::shared_ptr<state> state_;
};

/// What the abort policy throws on member `rank` once the survivors agreed.
[[nodiscard]] DML_DECL peer_failure abort_failure(member_id rank, const std::vector<member_id>& removed,
                                                  std::uint64_t epoch);

/// What every survivor throws when a view change leaves fewer members than
/// the tolerate policy's minimum (a guard against going on as a small
/// partition of the group).
[[nodiscard]] DML_DECL peer_failure too_few_survivors(member_id rank, const std::vector<member_id>& removed,
                                                      std::uint64_t epoch, std::size_t survivors,
                                                      std::size_t minimum);

/// `recover` on member `rank` adopted the view of `a`, which replaced one
/// whose live set was `before`: records the view change in `s` and, under
/// the abort policy or with too few survivors, sets `s.stopped`.
DML_DECL void record_view_change(state& s, member_id rank, const std::vector<member_id>& before,
                                 const comm::agreement& a, const timeout_report& adapted);

// A barrier whose completion reached some members and not others (one
// died inside it) counts as completed for all: every member had entered
// it. The survivors learn the newest barrier any of them completed.
template <class Comm>
void settle_barriers(Comm& comm, state& s) {
  const std::uint64_t mine = s.barriers_completed;
  const auto all = comm.exchange(std::as_bytes(std::span(&mine, 1)));
  for (const auto& r : all) {
    if (r.size() != sizeof mine) throw comm_error("dml::fault: malformed barrier record in a recovery");
    std::uint64_t theirs = 0;
    std::memcpy(&theirs, r.data(), sizeof theirs);
    s.barriers_completed = std::max(s.barriers_completed, theirs);
  }
}

/// One barrier of the program's sequence of barriers on `comm`. When a
/// failure cuts it short it stays pending: the next call (after recovery)
/// resumes it, and returns at once if another member completed it.
template <class Comm>
void counted_barrier(Comm& comm) {
  if constexpr (comm::shrinkable_transport<Comm>) {
    const auto s = state_of(comm);
    if (s->barrier_pending == 0) s->barrier_pending = ++s->barriers_issued;
    if (s->barrier_pending > s->barriers_completed) comm.barrier();  // throws: stays pending
    s->barriers_completed = std::max(s->barriers_completed, s->barrier_pending);
    s->barrier_pending = 0;
  } else {
    comm.barrier();
  }
}

}  // namespace detail

/// The failure policy of `comm` (the environment's `DML_FAILURE_POLICY`
/// until set).
template <comm::shrinkable_transport Comm>
[[nodiscard]] policy failure_policy(Comm& comm) {
  return detail::state_of(comm)->on_failure;
}

/// Sets what the vectors built on `comm` do when a member fails. Every
/// member must set the same policy.
template <comm::shrinkable_transport Comm>
void set_policy(Comm& comm, policy p) {
  detail::state_of(comm)->on_failure = p;
}

/// Under `tolerate`: a view change that leaves fewer members than `n` makes
/// every survivor throw `dml::peer_failure` (MALT's guard against training
/// on as a partition); 0, the default, lets any number go on. At most the
/// group's size.
template <comm::shrinkable_transport Comm>
void set_min_survivors(Comm& comm, std::size_t n) {
  if (n > comm.size())
    throw config_error("dml::fault::set_min_survivors: " + std::to_string(n) + " exceeds the group of " +
                       std::to_string(comm.size()) + " members");
  detail::state_of(comm)->min_survivors = n;
}

/// The minimum number of survivors (see set_min_survivors).
template <comm::shrinkable_transport Comm>
[[nodiscard]] std::size_t min_survivors(Comm& comm) {
  return detail::state_of(comm)->min_survivors;
}

/// The view changes this member took part in, oldest first (empty for a
/// transport that cannot shrink its group).
template <class Comm>
[[nodiscard]] const std::vector<view_change>& view_changes(const Comm& comm) {
  static const std::vector<view_change> none;
  if constexpr (comm::shrinkable_transport<Comm>) {
    if (const auto s = comm.attributes().template find<detail::state>()) return s->changes;
  }
  return none;
}

/// Collective over the survivors: agrees on the view without the members
/// that have failed, moves `comm` to it and rebuilds everything subscribed
/// to it (every vector built on it) over the new live set. Returns at once
/// when no failure is known. With `policy::abort` the agreement still runs,
/// then this throws `dml::peer_failure` naming the dead member (and does so
/// again on every later call); likewise under `tolerate` when fewer than
/// `min_survivors` are left. A member that fails meanwhile makes the
/// survivors agree again; the whole is bounded by the transport's wait
/// limit (with the adaptive timeout of dml/fault/timeout.hpp: by its
/// ceiling, if that is longer). Vectors call it themselves when one of
/// their operations meets a failed member.
template <comm::shrinkable_transport Comm>
void recover(Comm& comm) {
  using clock = std::chrono::steady_clock;
  const auto s = detail::state_of(comm);
  if (s->stopped) throw *s->stopped;
  // With the adaptive timeout the wait limit may be short (its floor); a
  // recovery waits for members still computing and allocates anew, so it
  // runs under the ceiling and the adapted limit comes back afterwards.
  timeout_report adapted;
  adapted.wait_limit = comm.wait_limit();
  auto limit = adapted.wait_limit;
  if constexpr (adaptable_transport<Comm>) {
    adapted = timeouts(comm);
    limit = recovery_limit(comm);
  }
  detail::wait_limit_scope<Comm> raised(comm, limit);
  const auto deadline = clock::now() + comm.wait_limit();
  for (;;) {
    const comm::membership_view before = comm.view();
    const comm::agreement a = comm.agree_on_survivors(deadline);
    if (a.view.epoch != before.epoch) {
      detail::record_view_change(*s, comm.rank(), before.live, a, adapted);
      if (s->stopped) throw *s->stopped;
    }
    if (!s->rebuild_due) return;
    if (s->interrupters > 0 && s->interrupted_epoch != comm.view().epoch) {
      s->interrupted_epoch = comm.view().epoch;
      s->abandoned = true;
      throw interrupted{comm.view().epoch};
    }
    try {
      detail::settle_barriers(comm, *s);
      if (s->abandoned) {
        // The operations the failure cut short are not made again, so a
        // barrier one of them left pending must not be taken for the next
        // operation's (on a member that had it pending, that one would skip
        // its barrier while the others enter theirs). Every survivor numbers
        // its barriers on from the newest any of them completed.
        s->barrier_pending = 0;
        s->barriers_issued = s->barriers_completed;
        s->abandoned = false;
      }
      const auto subscribers = s->subscribers;  // a rebuild never subscribes anyone, but be safe
      for (auto* e : subscribers) e->rebuild(e->owner);
    } catch (const peer_failure&) {
      if (clock::now() > deadline) throw;
      continue;  // another member failed meanwhile: agree again
    }
    s->rebuild_due = false;
    auto& last = s->changes.back();
    last.recovery_seconds =
        last.detection_seconds + std::chrono::duration<double>(clock::now() - s->decided_at).count();
    return;
  }
}

/// A barrier over the live members that survives failures: a member that
/// fails before or inside it is recovered from (`recover`) and the barrier
/// completes over the survivors. A barrier that some members completed
/// before another one died inside it is not made again: the survivors
/// agree it is done. For a transport that cannot shrink its group this is
/// the transport's barrier.
template <class Comm>
void barrier(Comm& comm) {
  if constexpr (comm::shrinkable_transport<Comm>) {
    for (;;) {
      try {
        comm.check_view();
        detail::counted_barrier(comm);
        return;
      } catch (const peer_failure&) {
        const auto before = comm.view().epoch;
        recover(comm);
        if (comm.view().epoch == before) throw;  // nothing the survivors could agree on
      }
    }
  } else {
    comm.barrier();
  }
}

/// A subscription to a context's view changes: `rebuild(owner)` runs,
/// collectively, on every survivor in `recover`, in subscription order.
/// Move-only; the owner's address can be updated when it moves.
class subscription {
 public:
  subscription() = default;
  template <comm::shrinkable_transport Comm>
  subscription(Comm& comm, void* owner, void (*rebuild)(void*))
      : state_(detail::state_of(comm)), entry_(std::make_unique<detail::subscriber>()) {
    entry_->owner = owner;
    entry_->rebuild = rebuild;
    state_->subscribers.push_back(entry_.get());
  }
  subscription(subscription&&) noexcept = default;
  DML_DECL subscription& operator=(subscription&& o) noexcept;
  subscription(const subscription&) = delete;
  subscription& operator=(const subscription&) = delete;
  ~subscription() { reset(); }

  /// The owner moved: rebuild it where it lives now.
  void set_owner(void* owner) noexcept {
    if (entry_) entry_->owner = owner;
  }
  [[nodiscard]] bool active() const noexcept { return entry_ != nullptr; }

 private:
  DML_DECL void reset() noexcept;
  std::shared_ptr<detail::state> state_;  // outlives the context if need be
  std::unique_ptr<detail::subscriber> entry_;
};

}  // namespace fault
DML_END_NAMESPACE

#if !defined(DML_SEPARATE_COMPILATION)
#include <dml/fault/impl/membership.ipp>
#endif

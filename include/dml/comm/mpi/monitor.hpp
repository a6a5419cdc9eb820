// SPDX-License-Identifier: BSL-1.0
// Internal: the fault monitor of the MPI one-sided transport. Every member
// owns a small window over the original group holding
//
//   [0] heartbeat   bumped by a background thread of the owner (no MPI call)
//   [1] alarm       the newest epoch others started a view change for (MPI_MAX)
//   [2] seq_begin           the owner's view record, written with a
//   [3] decided epoch       sequence number at each end so readers can
//   [4 .. 4+W) decided set  tell a torn copy: the last view it decided
//   [4+W] proposed epoch    (epoch + dead set) and the view it proposes
//   [5+W .. 5+2W) proposed  now (epoch + dead set), W words of bitmask
//   [5+2W] seq_end          each
//
// A member is suspected when its heartbeat has not moved for the timeout or
// an operation aimed at it failed. The survivors agree by flooding: each
// proposes epoch e + 1 with the union of every dead set it has seen, and
// decides once every member it believes alive proposes the same set; a
// member that sees anyone's decision for epoch e + 1 or later adopts it.
// Before the view is used, every member of it must have published the same
// decision (a confirmation round), because MPI_Comm_create_group over a
// group that contains a dead process never returns.
#pragma once

#include <dml/comm/concepts.hpp>
#include <dml/comm/mpi/common.hpp>
#include <dml/comm/mpi/watchdog.hpp>
#include <dml/detail/ticker.hpp>
#include <dml/error.hpp>
#include <dml/fwd.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

DML_BEGIN_NAMESPACE
namespace detail::mpi_impl {

/// Until the fault monitor runs there are no heartbeats, so the start-up
/// collectives (all members arrive within moments of each other, right
/// after MPI_Init) are bounded by time alone: max(4x heartbeat, 10 s), at
/// most the wait limit.
inline std::chrono::steady_clock::duration startup_limit(std::chrono::steady_clock::duration heartbeat,
                                                         std::chrono::steady_clock::duration wait_limit) {
  return std::min<std::chrono::steady_clock::duration>(
      wait_limit, std::max<std::chrono::steady_clock::duration>(4 * heartbeat, std::chrono::seconds(10)));
}

/// Whether every member of `comm` shares memory with every other (one node)
/// and DML_RMA_WINDOW does not ask for MPI_Win_allocate: then windows come
/// from MPI_Win_allocate_shared. Sets `nodes` to the node of every rank of
/// `comm`, named by the lowest rank on it. Collective (MPI_Comm_split_type,
/// then a reduction on the node and a gather over `comm`).
DML_DECL bool one_node(MPI_Comm comm, const char* who, std::chrono::steady_clock::duration limit,
                       std::vector<std::size_t>& nodes);

class monitor {
 public:
  using clock = std::chrono::steady_clock;

  monitor() = default;
  monitor(const monitor&) = delete;
  monitor& operator=(const monitor&) = delete;
  ~monitor() { stop(); }

  /// Collective over `world` (every original member): allocates the
  /// monitor window and starts the heartbeat thread.
  DML_DECL void start(MPI_Comm world, member_id rank, std::size_t size, bool shared,
                      clock::duration heartbeat_timeout, clock::duration limit, const char* who);

  /// Stops the heartbeat (the window is left to MPI: freeing it is
  /// collective over the original group).
  DML_DECL void stop();

  [[nodiscard]] bool started() const noexcept { return base_ != nullptr; }
  [[nodiscard]] clock::duration heartbeat_timeout() const noexcept { return timeout_; }
  /// Changes the timeout this member judges the others' heartbeats by. Its
  /// own heartbeat then beats at least every tenth of it (from its next
  /// beat on), and never less often than before: the others judge this
  /// member by their own timeouts, which may be shorter than this one's
  /// now (the adaptive timeout sets each member's own).
  DML_DECL void set_heartbeat_timeout(clock::duration t);

  /// Whether m is known dead or its heartbeat has stalled past the timeout.
  /// Reads m's heartbeat at most a few times per timeout.
  bool suspect(member_id m) {
    if (m >= size_ || m == rank_) return false;
    if (dead_[m]) return true;
    const auto now = clock::now();
    if (now - last_check_[m] < timeout_ / 8) return false;
    last_check_[m] = now;
    std::uint64_t beat = 0;
    if (!get(m, 0, &beat, 1)) {
      declare(m);
      return true;
    }
    if (beat != last_beat_[m]) {
      last_beat_[m] = beat;
      last_change_[m] = now;
      return false;
    }
    if (now - last_change_[m] > timeout_) {
      declare(m);
      return true;
    }
    return false;
  }
  /// Records m as dead (an operation aimed at it failed).
  void declare(member_id m) {
    if (m < size_ && m != rank_) dead_[m] = 1;
  }
  [[nodiscard]] bool known_dead(member_id m) const { return m < size_ && dead_[m] != 0; }

  /// Whether another member has started a view change to an epoch after
  /// `epoch` that this member has not joined yet (one local load). Alarms
  /// for epochs this member has reached are stale and ignored.
  [[nodiscard]] bool alarmed(std::uint64_t epoch) const {
    return std::atomic_ref<std::uint64_t>(base_[1]).load(std::memory_order_acquire) >
           std::max(epoch, answered_);
  }

  /// Runs the agreement for a view newer than `current` among its live
  /// members. Returns the decided view, confirmed by every member of it.
  /// Throws dml::peer_failure when this member was excluded, dml::timeout
  /// past `limit`. `progress` runs while it waits: a member still waiting
  /// for an answer from this one (the two-sided transport's requests) gets
  /// it, and can then notice the view change and join the agreement.
  template <class Progress>
  comm::membership_view agree(const comm::membership_view& current, clock::duration limit,
                              Progress&& progress) {
    const auto v = agree_once(current, limit, progress);
    answered_ = std::max(answered_, current.epoch + 1);  // even when nothing changed
    return v;
  }

  /// Seconds since m's heartbeat last moved (as this member saw it).
  [[nodiscard]] double silent_seconds(member_id m) const {
    return m < size_ ? std::chrono::duration<double>(clock::now() - last_change_[m]).count() : 0.0;
  }

  /// The window (for the transport's own diagnostics).
  [[nodiscard]] MPI_Win window() const noexcept { return win_; }

 private:
  // The heartbeat period for a timeout: a tenth of it, at least 1 ms.
  static std::int64_t period_of(clock::duration timeout) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::max<clock::duration>(timeout / 10, std::chrono::milliseconds(1)))
        .count();
  }

  template <class Progress>
  comm::membership_view agree_once(const comm::membership_view& current, clock::duration limit,
                                   Progress& progress) {
    const auto deadline = clock::now() + limit;
    std::uint64_t target = current.epoch + 1;
    std::vector<char> dead = dead_;
    for (member_id m = 0; m < size_; ++m)
      if (!current.contains(m)) dead[m] = 1;
    bool alarmed_others = false;
    backoff pause;
    for (;;) {
      if (clock::now() > deadline) {
        not_excluded(current, target);
        throw timeout(std::string(who_) + ": member " + std::to_string(rank_) +
                      " could not agree on a new view with the other survivors within " +
                      std::to_string(std::chrono::duration<double>(limit).count()) + " s");
      }
      publish_proposal(target, dead);
      progress();
      if (!alarmed_others) {
        for (member_id m : current.live)
          if (m != rank_ && !dead[m]) (void)alarm(m, target);
        alarmed_others = true;
      }
      bool grew = false;
      bool all_agree = true;
      for (member_id m : current.live) {
        if (m == rank_ || dead[m]) continue;
        if (suspect(m)) {
          dead[m] = 1;
          grew = true;
          continue;
        }
        record r;
        if (!read(m, r)) {
          all_agree = false;
          continue;
        }
        if (r.decided >= target) {  // someone decided already: adopt (views only ever shrink)
          if (r.decided_dead[rank_]) throw excluded(r.decided);
          return confirm(r.decided, r.decided_dead, deadline, progress);
        }
        if (r.proposed == target) {
          for (member_id x = 0; x < size_; ++x)
            if (r.proposed_dead[x] && !dead[x] && x != rank_) {
              dead[x] = 1;
              grew = true;
            }
          if (r.proposed_dead[rank_]) throw excluded(target);
          if (r.proposed_dead != dead) all_agree = false;
        } else {
          all_agree = false;  // has not joined yet
        }
      }
      if (grew) {
        alarmed_others = false;  // tell the others about the larger set
        continue;
      }
      if (all_agree) {
        bool change = false;
        for (member_id m : current.live) change = change || dead[m];
        if (!change) return current;  // the alarm was about nothing new: everyone stays
        not_excluded(current, target);
        return confirm(target, dead, deadline, progress);
      }
      pause.pause();
    }
  }

  // Shared windows: every member's heartbeat is plain shared memory, so the
  // watchdog thread can read it without MPI while the main thread is stuck
  // in an MPI call that waits for a dead member.
  DML_DECL void install_probe(member_id rank);
  DML_DECL void watch_members(const std::vector<member_id>& live);
  // Runs on the watchdog thread (under its lock): the first watched member
  // whose heartbeat has not moved for the heartbeat timeout.
  DML_DECL std::string stale_member();

  struct record {
    std::uint64_t decided = 0;
    std::vector<char> decided_dead;
    std::uint64_t proposed = 0;
    std::vector<char> proposed_dead;
  };

  [[nodiscard]] std::size_t decided_at() const noexcept { return 3; }
  [[nodiscard]] std::size_t proposed_at() const noexcept { return 4 + bitmask_words_; }
  [[nodiscard]] std::size_t record_end() const noexcept { return 5 + 2 * bitmask_words_; }

  DML_DECL peer_failure excluded(std::uint64_t epoch) const;

  void store(std::size_t word, std::uint64_t v) {
    std::atomic_ref<std::uint64_t>(base_[word]).store(v, std::memory_order_release);
  }
  DML_DECL void store_mask(std::size_t at, const std::vector<char>& set);
  DML_DECL std::vector<char> load_mask(const std::vector<std::uint64_t>& words, std::size_t at) const;

  DML_DECL void write_record();
  DML_DECL void publish_proposal(std::uint64_t epoch, const std::vector<char>& dead);
  DML_DECL void publish_decision(std::uint64_t epoch, const std::vector<char>& dead);

  // One-sided read of `count` words of m's monitor; false when MPI fails.
  DML_DECL bool get(member_id m, std::size_t word, std::uint64_t* out, std::size_t count);
  DML_DECL bool alarm(member_id m, std::uint64_t epoch);
  // m's record; false when torn (being rewritten) or unreadable.
  DML_DECL bool read(member_id m, record& r);

  // Throws excluded() when any other member of `current` decided a view of
  // epoch `target` or later without this one. Asks the members this one
  // wrote off as well: the others may have excluded it, decided, and gone
  // (their heartbeats then stop too), and a member that decides alone or
  // gives up without looking would carry on as a group of one, or report a
  // timeout instead of what happened. A decided record is never withdrawn.
  DML_DECL void not_excluded(const comm::membership_view& current, std::uint64_t target);

  // Every member of the decided view must publish the same decision before
  // anyone uses it; a newer decision seen meanwhile is adopted instead.
  template <class Progress>
  comm::membership_view confirm(std::uint64_t epoch, std::vector<char> dead, clock::time_point deadline,
                                Progress& progress) {
    for (;;) {
      publish_decision(epoch, dead);
      bool all = true;
      backoff pause;
      for (;;) {
        progress();
        all = true;
        bool restart = false;
        for (member_id m = 0; m < size_ && !restart; ++m) {
          if (m == rank_ || dead[m]) continue;
          record r;
          if (!read(m, r)) {
            all = false;
            continue;
          }
          if (r.decided > epoch) {
            if (r.decided_dead[rank_]) throw excluded(r.decided);
            epoch = r.decided;
            dead = r.decided_dead;
            restart = true;
          } else if (r.decided == epoch && r.decided_dead != dead) {
            if (r.decided_dead[rank_]) throw excluded(epoch);
            throw comm_error(std::string(who_) + ": members " + std::to_string(rank_) + " and " +
                             std::to_string(m) + " decided different views for epoch " +
                             std::to_string(epoch) +
                             " (a member was suspected by some survivors only); the group cannot go on");
          } else if (r.decided < epoch) {
            all = false;
            if (suspect(m))
              throw peer_failure(m, std::string(who_) + ": member " + std::to_string(m) +
                                        " failed while the survivors were agreeing on view " +
                                        std::to_string(epoch));
          }
        }
        if (restart) break;
        if (all) {
          comm::membership_view v;
          v.epoch = epoch;
          for (member_id m = 0; m < size_; ++m)
            if (!dead[m]) v.live.push_back(m);
          for (member_id m = 0; m < size_; ++m)
            if (dead[m]) dead_[m] = 1;
          watch_members(v.live);
          return v;
        }
        if (clock::now() > deadline)
          throw timeout(std::string(who_) + ": member " + std::to_string(rank_) +
                        " timed out confirming view " + std::to_string(epoch) + " with the other survivors");
        pause.pause();
      }
    }
  }

  const char* who_ = "";
  member_id rank_ = 0;
  std::size_t size_ = 0;
  std::size_t bitmask_words_ = 1;
  clock::duration timeout_ = std::chrono::seconds(1);
  MPI_Win win_ = MPI_WIN_NULL;
  std::uint64_t* base_ = nullptr;
  std::atomic<std::int64_t> period_ns_{100'000'000};  // between two heartbeats
  std::vector<char> dead_;
  std::vector<std::uint64_t> last_beat_;
  std::vector<clock::time_point> last_change_;
  std::vector<clock::time_point> last_check_;
  std::vector<std::uint64_t*> peer_beats_;  // shared windows: each member's heartbeat word
  std::mutex probe_mutex_;                  // guards watched_ and the probe's own records
  std::vector<member_id> watched_;
  std::vector<std::uint64_t> probe_seen_;
  std::vector<clock::time_point> probe_changed_;
  clock::duration probe_timeout_ = std::chrono::seconds(1);
  bool probe_installed_ = false;
  std::uint64_t answered_ = 0;  // alarms up to this epoch were answered
  std::uint64_t seq_ = 0;
  std::uint64_t decided_ = 0;
  std::vector<char> decided_dead_;
  std::uint64_t proposed_ = 0;
  std::vector<char> proposed_dead_;
  detail::ticker beater_;  // last: stopped before the members its ticks use go
};

}  // namespace detail::mpi_impl
DML_END_NAMESPACE

#if !defined(DML_SEPARATE_COMPILATION)
#include <dml/comm/mpi/impl/monitor.ipp>
#endif

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
#include <thread>
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
inline bool one_node(MPI_Comm comm, const char* who, std::chrono::steady_clock::duration limit,
                     std::vector<std::size_t>& nodes) {
  int n = 0, r = 0;
  check(MPI_Comm_size(comm, &n), who, "MPI_Comm_size");
  check(MPI_Comm_rank(comm, &r), who, "MPI_Comm_rank");
  MPI_Comm node = MPI_COMM_NULL;
  int on_node = 0;
  std::vector<int> lowest(static_cast<std::size_t>(n));
  {
    watchdog::scope guard(who, "MPI_Comm_split_type (start-up)", limit);
    check(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node), who,
          "MPI_Comm_split_type");
    check(MPI_Comm_size(node, &on_node), who, "MPI_Comm_size");
    int mine = r;
    const int reduced = MPI_Allreduce(MPI_IN_PLACE, &mine, 1, MPI_INT, MPI_MIN, node);
    MPI_Comm_free(&node);
    check(reduced, who, "MPI_Allreduce (the node's lowest rank)");
    check(MPI_Allgather(&mine, 1, MPI_INT, lowest.data(), 1, MPI_INT, comm), who,
          "MPI_Allgather (every rank's node)");
  }
  nodes.assign(lowest.begin(), lowest.end());
  const char* choice = std::getenv("DML_RMA_WINDOW");
  const std::string window = choice ? choice : "";
  if (window != "" && window != "shared" && window != "allocate")
    throw config_error(std::string(who) + ": DML_RMA_WINDOW is '" + window +
                       "'; use 'shared' (the default on one node) or 'allocate'");
  return on_node == n && window != "allocate";
}

class monitor {
 public:
  using clock = std::chrono::steady_clock;

  monitor() = default;
  monitor(const monitor&) = delete;
  monitor& operator=(const monitor&) = delete;
  ~monitor() { stop(); }

  /// Collective over `world` (every original member): allocates the
  /// monitor window and starts the heartbeat thread.
  void start(MPI_Comm world, member_id rank, std::size_t size, bool shared, clock::duration heartbeat_timeout,
             clock::duration limit, const char* who) {
    who_ = who;
    rank_ = rank;
    size_ = size;
    timeout_ = heartbeat_timeout;
    probe_timeout_ = heartbeat_timeout;
    bitmask_words_ = (size + 63) / 64;
    const std::size_t words = record_end() + 1;
    void* base = nullptr;
    int rc = MPI_SUCCESS;
    {
      // No heartbeats exist yet: only the time limit bounds this call.
      watchdog::scope guard(who, "MPI_Win_allocate (fault monitor)", limit);
      if (shared)
        rc = MPI_Win_allocate_shared(static_cast<MPI_Aint>(8 * words), 8, MPI_INFO_NULL, world, &base, &win_);
      else
        rc = MPI_Win_allocate(static_cast<MPI_Aint>(8 * words), 8, MPI_INFO_NULL, world, &base, &win_);
    }
    check(rc, who, "MPI_Win_allocate (fault monitor)");
    check(MPI_Win_set_errhandler(win_, MPI_ERRORS_RETURN), who, "MPI_Win_set_errhandler");
    base_ = static_cast<std::uint64_t*>(base);
    std::memset(base_, 0, 8 * words);
    check(MPI_Win_lock_all(MPI_MODE_NOCHECK, win_), who, "MPI_Win_lock_all (fault monitor)");
    check(MPI_Win_sync(win_), who, "MPI_Win_sync");
    barrier(world, limit, who, [] {});
    dead_.assign(size, 0);
    last_beat_.assign(size, ~std::uint64_t{0});
    last_change_.assign(size, clock::now());
    last_check_.assign(size, clock::time_point{});
    if (shared) install_probe(rank);
    running_.store(true);
    period_ns_.store(period_of(timeout_));
    beater_ = std::thread([this] {
      while (running_.load(std::memory_order_acquire)) {
        std::atomic_ref<std::uint64_t>(base_[0]).fetch_add(1, std::memory_order_release);
        std::this_thread::sleep_for(std::chrono::nanoseconds(period_ns_.load(std::memory_order_relaxed)));
      }
    });
  }

  /// Stops the heartbeat (the window is left to MPI: freeing it is
  /// collective over the original group).
  void stop() {
    if (probe_installed_) {
      watchdog::instance().clear_probe();
      probe_installed_ = false;
    }
    if (beater_.joinable()) {
      running_.store(false);
      beater_.join();
    }
  }

  [[nodiscard]] bool started() const noexcept { return base_ != nullptr; }
  [[nodiscard]] clock::duration heartbeat_timeout() const noexcept { return timeout_; }
  /// Changes the timeout this member judges the others' heartbeats by. Its
  /// own heartbeat then beats at least every tenth of it (from its next
  /// beat on), and never less often than before: the others judge this
  /// member by their own timeouts, which may be shorter than this one's
  /// now (the adaptive timeout sets each member's own).
  void set_heartbeat_timeout(clock::duration t) {
    timeout_ = t;
    period_ns_.store(std::min(period_ns_.load(), period_of(t)));
    std::lock_guard lock(probe_mutex_);
    probe_timeout_ = t;
  }

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
  void install_probe(member_id rank) {
    peer_beats_.assign(size_, nullptr);
    for (member_id m = 0; m < size_; ++m) {
      MPI_Aint bytes = 0;
      int unit = 0;
      void* at = nullptr;
      if (MPI_Win_shared_query(win_, static_cast<int>(m), &bytes, &unit, &at) != MPI_SUCCESS) return;
      peer_beats_[m] = static_cast<std::uint64_t*>(at);
    }
    std::vector<member_id> all;
    for (member_id m = 0; m < size_; ++m) all.push_back(m);
    watch_members(all);
    probe_seen_.assign(size_, ~std::uint64_t{0});
    probe_changed_.assign(size_, clock::now());
    watchdog::instance().set_probe([this] { return stale_member(); }, static_cast<long>(rank));
    probe_installed_ = true;
  }
  void watch_members(const std::vector<member_id>& live) {
    std::lock_guard lock(probe_mutex_);
    watched_.clear();
    for (member_id m : live)
      if (m != rank_) watched_.push_back(m);
  }
  // Runs on the watchdog thread (under its lock): the first watched member
  // whose heartbeat has not moved for the heartbeat timeout.
  std::string stale_member() {
    std::lock_guard lock(probe_mutex_);
    const auto now = clock::now();
    for (member_id m : watched_) {
      if (m >= peer_beats_.size() || peer_beats_[m] == nullptr) continue;
      const std::uint64_t beat =
          std::atomic_ref<std::uint64_t>(*peer_beats_[m]).load(std::memory_order_acquire);
      if (beat != probe_seen_[m]) {
        probe_seen_[m] = beat;
        probe_changed_[m] = now;
        continue;
      }
      const auto silent = now - probe_changed_[m];
      if (silent > probe_timeout_)
        return "member " + std::to_string(m) + " has failed (heartbeat silent for " +
               std::to_string(std::chrono::duration<double>(silent).count()) + " s)";
    }
    return {};
  }

  struct record {
    std::uint64_t decided = 0;
    std::vector<char> decided_dead;
    std::uint64_t proposed = 0;
    std::vector<char> proposed_dead;
  };

  [[nodiscard]] std::size_t decided_at() const noexcept { return 3; }
  [[nodiscard]] std::size_t proposed_at() const noexcept { return 4 + bitmask_words_; }
  [[nodiscard]] std::size_t record_end() const noexcept { return 5 + 2 * bitmask_words_; }

  peer_failure excluded(std::uint64_t epoch) const {
    return peer_failure(rank_, std::string(who_) + ": member " + std::to_string(rank_) +
                                   " was declared failed by the other members (view " +
                                   std::to_string(epoch) +
                                   "); it stops (was it stalled longer than the heartbeat timeout?)");
  }

  void store(std::size_t word, std::uint64_t v) {
    std::atomic_ref<std::uint64_t>(base_[word]).store(v, std::memory_order_release);
  }
  void store_mask(std::size_t at, const std::vector<char>& set) {
    for (std::size_t w = 0; w < bitmask_words_; ++w) {
      std::uint64_t bits = 0;
      for (std::size_t b = 0; b < 64 && 64 * w + b < size_; ++b)
        if (set[64 * w + b]) bits |= std::uint64_t{1} << b;
      store(at + w, bits);
    }
  }
  std::vector<char> load_mask(const std::vector<std::uint64_t>& words, std::size_t at) const {
    std::vector<char> set(size_, 0);
    for (std::size_t m = 0; m < size_; ++m) set[m] = (words[at + m / 64] >> (m % 64)) & 1 ? 1 : 0;
    return set;
  }

  void write_record() {
    const std::uint64_t seq = ++seq_;
    store(2, seq);
    store(decided_at(), decided_);
    store_mask(decided_at() + 1, decided_dead_.empty() ? std::vector<char>(size_, 0) : decided_dead_);
    store(proposed_at(), proposed_);
    store_mask(proposed_at() + 1, proposed_dead_.empty() ? std::vector<char>(size_, 0) : proposed_dead_);
    store(record_end(), seq);
    MPI_Win_sync(win_);
  }
  void publish_proposal(std::uint64_t epoch, const std::vector<char>& dead) {
    if (proposed_ == epoch && proposed_dead_ == dead) return;
    proposed_ = epoch;
    proposed_dead_ = dead;
    write_record();
  }
  void publish_decision(std::uint64_t epoch, const std::vector<char>& dead) {
    decided_ = epoch;
    decided_dead_ = dead;
    proposed_ = epoch;
    proposed_dead_ = dead;
    write_record();
  }

  // One-sided read of `count` words of m's monitor; false when MPI fails.
  bool get(member_id m, std::size_t word, std::uint64_t* out, std::size_t count) {
    const int t = static_cast<int>(m);
    if (MPI_Get(out, static_cast<int>(8 * count), MPI_BYTE, t, static_cast<MPI_Aint>(word),
                static_cast<int>(8 * count), MPI_BYTE, win_) != MPI_SUCCESS)
      return false;
    return MPI_Win_flush(t, win_) == MPI_SUCCESS;
  }
  bool alarm(member_id m, std::uint64_t epoch) {
    std::uint64_t old = 0;
    const int t = static_cast<int>(m);
    if (MPI_Fetch_and_op(&epoch, &old, MPI_UINT64_T, t, 1, MPI_MAX, win_) != MPI_SUCCESS) return false;
    return MPI_Win_flush(t, win_) == MPI_SUCCESS;
  }
  // m's record; false when torn (being rewritten) or unreadable.
  bool read(member_id m, record& r) {
    std::vector<std::uint64_t> words(record_end() + 1, 0);
    for (int attempt = 0; attempt < 4; ++attempt) {
      if (!get(m, 2, words.data() + 2, record_end() - 1)) {
        declare(m);
        return false;
      }
      if (words[2] != words[record_end()]) continue;
      r.decided = words[decided_at()];
      r.decided_dead = load_mask(words, decided_at() + 1);
      r.proposed = words[proposed_at()];
      r.proposed_dead = load_mask(words, proposed_at() + 1);
      return true;
    }
    return false;
  }

  // Throws excluded() when any other member of `current` decided a view of
  // epoch `target` or later without this one. Asks the members this one
  // wrote off as well: the others may have excluded it, decided, and gone
  // (their heartbeats then stop too), and a member that decides alone or
  // gives up without looking would carry on as a group of one, or report a
  // timeout instead of what happened. A decided record is never withdrawn.
  void not_excluded(const comm::membership_view& current, std::uint64_t target) {
    for (member_id m : current.live) {
      if (m == rank_) continue;
      record r;
      if (read(m, r) && r.decided >= target && r.decided_dead[rank_]) throw excluded(r.decided);
    }
  }

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
  std::thread beater_;
  std::atomic<bool> running_{false};
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
};

}  // namespace detail::mpi_impl
DML_END_NAMESPACE

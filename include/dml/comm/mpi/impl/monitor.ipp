// SPDX-License-Identifier: BSL-1.0
/// @file
/// Out-of-line definitions for <dml/comm/mpi/monitor.hpp> (see <dml/version.hpp>, DML_DECL).
#pragma once

#include <dml/comm/mpi/monitor.hpp>

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

DML_DECL bool one_node(MPI_Comm comm, const char* who, std::chrono::steady_clock::duration limit,
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

DML_DECL void monitor::start(MPI_Comm world, member_id rank, std::size_t size, bool shared,
                             clock::duration heartbeat_timeout, clock::duration limit, const char* who) {
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
  period_ns_.store(period_of(timeout_));
  beater_.start([this] { std::atomic_ref<std::uint64_t>(base_[0]).fetch_add(1, std::memory_order_release); },
                [this] { return std::chrono::nanoseconds(period_ns_.load(std::memory_order_relaxed)); });
}

DML_DECL void monitor::stop() {
  if (probe_installed_) {
    watchdog::instance().clear_probe();
    probe_installed_ = false;
  }
  beater_.stop();
}

DML_DECL void monitor::set_heartbeat_timeout(clock::duration t) {
  timeout_ = t;
  period_ns_.store(std::min(period_ns_.load(), period_of(t)));
  std::lock_guard lock(probe_mutex_);
  probe_timeout_ = t;
}

DML_DECL void monitor::install_probe(member_id rank) {
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

DML_DECL void monitor::watch_members(const std::vector<member_id>& live) {
  std::lock_guard lock(probe_mutex_);
  watched_.clear();
  for (member_id m : live)
    if (m != rank_) watched_.push_back(m);
}

DML_DECL std::string monitor::stale_member() {
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

DML_DECL peer_failure monitor::excluded(std::uint64_t epoch) const {
  return peer_failure(rank_, std::string(who_) + ": member " + std::to_string(rank_) +
                                 " was declared failed by the other members (view " + std::to_string(epoch) +
                                 "); it stops (was it stalled longer than the heartbeat timeout?)");
}

DML_DECL void monitor::store_mask(std::size_t at, const std::vector<char>& set) {
  for (std::size_t w = 0; w < bitmask_words_; ++w) {
    std::uint64_t bits = 0;
    for (std::size_t b = 0; b < 64 && 64 * w + b < size_; ++b)
      if (set[64 * w + b]) bits |= std::uint64_t{1} << b;
    store(at + w, bits);
  }
}

DML_DECL std::vector<char> monitor::load_mask(const std::vector<std::uint64_t>& words, std::size_t at) const {
  std::vector<char> set(size_, 0);
  for (std::size_t m = 0; m < size_; ++m) set[m] = (words[at + m / 64] >> (m % 64)) & 1 ? 1 : 0;
  return set;
}

DML_DECL void monitor::write_record() {
  const std::uint64_t seq = ++seq_;
  store(2, seq);
  store(decided_at(), decided_);
  store_mask(decided_at() + 1, decided_dead_.empty() ? std::vector<char>(size_, 0) : decided_dead_);
  store(proposed_at(), proposed_);
  store_mask(proposed_at() + 1, proposed_dead_.empty() ? std::vector<char>(size_, 0) : proposed_dead_);
  store(record_end(), seq);
  MPI_Win_sync(win_);
}

DML_DECL void monitor::publish_proposal(std::uint64_t epoch, const std::vector<char>& dead) {
  if (proposed_ == epoch && proposed_dead_ == dead) return;
  proposed_ = epoch;
  proposed_dead_ = dead;
  write_record();
}

DML_DECL void monitor::publish_decision(std::uint64_t epoch, const std::vector<char>& dead) {
  decided_ = epoch;
  decided_dead_ = dead;
  proposed_ = epoch;
  proposed_dead_ = dead;
  write_record();
}

DML_DECL bool monitor::get(member_id m, std::size_t word, std::uint64_t* out, std::size_t count) {
  const int t = static_cast<int>(m);
  if (MPI_Get(out, static_cast<int>(8 * count), MPI_BYTE, t, static_cast<MPI_Aint>(word),
              static_cast<int>(8 * count), MPI_BYTE, win_) != MPI_SUCCESS)
    return false;
  return MPI_Win_flush(t, win_) == MPI_SUCCESS;
}

DML_DECL bool monitor::alarm(member_id m, std::uint64_t epoch) {
  std::uint64_t old = 0;
  const int t = static_cast<int>(m);
  if (MPI_Fetch_and_op(&epoch, &old, MPI_UINT64_T, t, 1, MPI_MAX, win_) != MPI_SUCCESS) return false;
  return MPI_Win_flush(t, win_) == MPI_SUCCESS;
}

DML_DECL bool monitor::read(member_id m, record& r) {
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

DML_DECL void monitor::not_excluded(const comm::membership_view& current, std::uint64_t target) {
  for (member_id m : current.live) {
    if (m == rank_) continue;
    record r;
    if (read(m, r) && r.decided >= target && r.decided_dead[rank_]) throw excluded(r.decided);
  }
}

}  // namespace detail::mpi_impl
DML_END_NAMESPACE

// SPDX-License-Identifier: BSL-1.0
/// @file
/// The reader's side of dml::table: reads, the prefetch and fetches from owners.
/// Member functions of the class in dml/table/table.hpp, which includes this file
/// after the class.
#pragma once

#include <dml/table/table.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

DML_BEGIN_NAMESPACE

template <class T, class Transport, class Consistency>
std::span<const T> table<T, Transport, Consistency>::read_once(std::size_t row) {
  check_view();
  progress();
  ++stats_.reads;
  const std::uint64_t need = need_now();
  const member_id me = comm_->rank();
  const member_id o = layout_.owner(row);
  if (o == me) {
    ++stats_.own_reads;
    wait_own(need);
    return own_value(row);
  }
  maybe_prefetch(need, row);
  if (auto* e = cache_.find(row); e != nullptr && fresh(*e, need)) {
    ++stats_.cache_hits;
    cache_.touch(*e);
    return cache_.values(*e).first(len_);
  }
  const std::uint64_t r = row;
  fetch(o, std::span<const std::uint64_t>(&r, 1), need);
  if (auto* e = cache_.find(row); e != nullptr && e->generation == generation_)
    return cache_.values(*e).first(len_);
  return std::span<const T>(scratch_.data(), len_);
}

// read_rows(): the own rows as read() returns them, the fresh cached rows
// of others, and one fetch per owner for the rest. Later places of a row
// that appears more than once copy its first place (counted as cache hits).
template <class T, class Transport, class Consistency>
std::span<const T> table<T, Transport, Consistency>::read_rows_once(std::span<const std::size_t> rows) {
  check_view();
  progress();
  const std::size_t count = rows.size();
  batch_.assign(count * len_, T{});
  stats_.reads += count;
  const std::uint64_t need = need_now();
  const member_id me = comm_->rank();
  std::unordered_map<std::size_t, std::size_t> first;  // row -> its first place in `rows`
  first.reserve(count);
  bool own = false;
  for (std::size_t i = 0; i < count; ++i) {
    first.try_emplace(rows[i], i);
    own = own || layout_.owner(rows[i]) == me;
  }
  if (own) wait_own(need);
  maybe_prefetch(need, count == 0 ? std::nullopt : std::optional<std::uint64_t>(rows[0]));
  // Per owner: (place at the owner, place in `rows`) of each row to fetch.
  std::vector<std::vector<std::pair<std::size_t, std::size_t>>> stale(comm_->size());
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t row = rows[i];
    T* dst = batch_.data() + i * len_;
    const member_id o = layout_.owner(row);
    if (o == me) {
      ++stats_.own_reads;
      const auto v = own_value(row);
      std::copy(v.begin(), v.end(), dst);
    } else if (first.find(row)->second != i) {
      continue;  // a later place of the row: copied below
    } else if (auto* e = cache_.find(row); e != nullptr && fresh(*e, need)) {
      ++stats_.cache_hits;
      cache_.touch(*e);
      const auto v = cache_.values(*e).first(len_);
      std::copy(v.begin(), v.end(), dst);
    } else {
      stale[o].emplace_back(layout_.local(row), i);
    }
  }
  std::vector<std::uint64_t> ids;
  std::vector<T*> dests;
  for (member_id o : comm_->view().live) {
    auto& list = stale[o];
    if (list.empty()) continue;
    std::sort(list.begin(), list.end());
    ids.clear();
    dests.clear();
    for (const auto& entry : list) {
      ids.push_back(rows[entry.second]);
      dests.push_back(batch_.data() + entry.second * len_);
    }
    fetch(o, ids, need, dests);
  }
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t j = first.find(rows[i])->second;
    if (j == i || layout_.owner(rows[i]) == me) continue;
    ++stats_.cache_hits;
    std::copy(batch_.data() + j * len_, batch_.data() + (j + 1) * len_, batch_.data() + i * len_);
  }
  return {batch_.data(), count * len_};
}

template <class T, class Transport, class Consistency>
void table<T, Transport, Consistency>::wait_own(std::uint64_t need) {
  const bool waited = detail::table_wait(
      *comm_, "its updates of a clock (to rows this member owns)",
      [&]() -> std::optional<member_id> {
        progress();
        if (own_complete() >= need) return std::nullopt;
        return laggard(applied_);
      },
      stats_.wait_seconds);
  if (waited) ++stats_.reads_waited;
}

template <class T, class Transport, class Consistency>
std::span<const T> table<T, Transport, Consistency>::own_value(std::size_t row) {
  const T* master = master_.data() + layout_.local(row) * stride_;
  const T* mine = builders_[comm_->rank()].find(row, slot(row));
  if (mine == nullptr) return {master, len_};
  scratch_.resize(stride_);
  for (std::size_t e = 0; e < len_; ++e) scratch_[e] = master[e] + mine[e];
  return {scratch_.data(), len_};
}

template <class T, class Transport, class Consistency>
std::size_t table<T, Transport, Consistency>::phase_now(std::optional<std::uint64_t> row) {
  const std::uint64_t p = prefetch_.size();
  if (p <= 1) return 0;
  const auto phase = static_cast<std::size_t>((clock_ % p + p - phase_anchor_ % p) % p);
  if (!row || pattern_.phase_reads_row(phase, *row)) return phase;
  for (std::size_t d = 1; d < p; ++d) {
    const std::size_t q = (phase + d) % p;
    if (pattern_.phase_reads_row(q, *row)) {
      phase_anchor_ = (clock_ % p + p - q) % p;  // clock_ is phase q from now on
      return q;
    }
  }
  return phase;  // a row outside the pattern: it is fetched when read
}

template <class T, class Transport, class Consistency>
void table<T, Transport, Consistency>::maybe_prefetch(std::uint64_t need, std::optional<std::uint64_t> row) {
  if (!have_pattern_ || !opts_.prefetch || prefetched_ == clock_ + 1 || prefetch_.empty()) return;
  prefetched_ = clock_ + 1;
  const auto& lists = prefetch_[phase_now(row)];
  const member_id me = comm_->rank();
  std::vector<std::uint64_t> stale;
  for (member_id o : comm_->view().live) {
    if (o == me || lists[o].empty()) continue;
    stale.clear();
    for (std::uint64_t r : lists[o]) {
      const auto* e = cache_.find(r);
      if (e == nullptr || !fresh(*e, need)) stale.push_back(r);
    }
    if (!stale.empty()) fetch(o, stale, need);
  }
}

template <class T, class Transport, class Consistency>
void table<T, Transport, Consistency>::fetch(member_id o, std::span<const std::uint64_t> rows,
                                             std::uint64_t need, std::span<T* const> dests) {
  ++stats_.fetches;
  const std::size_t n = comm_->size();
  applied_buf_.resize(n);
  // Runs of local rows, joined across small gaps.
  runs_.clear();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const std::size_t l = layout_.local(static_cast<std::size_t>(rows[i]));
    if (!runs_.empty() && l >= runs_.back().first &&
        l <= runs_.back().first + runs_.back().second + max_gap_rows)
      runs_.back().second = std::max(runs_.back().second, l - runs_.back().first + 1);
    else
      runs_.emplace_back(l, 1);
  }
  std::size_t total = 0;
  for (const auto& [first, count] : runs_) total += count;
  fetched_.resize(total * stride_);
  // One round trip where a get is a message (comm::get_all): the version
  // word, every member's applied clock, the rows, the version word again.
  // While the owner is behind, only the first two are polled.
  std::uint64_t v1 = 0, v2 = 0;
  auto& ranges = ranges_;
  const auto add_rows = [&] {
    std::size_t off = 0;
    for (const auto& [first, count] : runs_) {
      ranges.push_back({lay_.row(first),
                        std::as_writable_bytes(std::span(fetched_.data() + off * stride_, count * stride_))});
      off += count;
    }
    ranges.push_back({0, std::as_writable_bytes(std::span(&v2, 1))});
  };
  const auto read = [&] {
    comm::get_all(seg_, o, ranges);
    stats_.gets += ranges.size();
  };
  bool with_rows = true;
  const auto attempt = [&]() -> std::optional<member_id> {
    progress();
    ranges.clear();
    ranges.push_back({0, std::as_writable_bytes(std::span(&v1, 1))});
    ranges.push_back({lay_.applied(0), std::as_writable_bytes(std::span(applied_buf_))});
    if (with_rows) add_rows();
    read();
    if (v1 % 2 != 0) return o;
    std::uint64_t complete = never;
    for (member_id m : comm_->view().live) complete = std::min(complete, applied_buf_[m]);
    if (complete < need) {
      with_rows = false;
      const member_id who = laggard(applied_buf_);
      return who == comm_->rank() ? o : who;  // o has not applied this member's batch yet
    }
    if (!with_rows) {
      ranges.clear();
      add_rows();
      read();
      with_rows = true;
    }
    if (v2 != v1 || applied_buf_[comm_->rank()] < pruned_[o]) {
      ++stats_.torn_fetches;
      return o;
    }
    return std::nullopt;
  };
  if (detail::table_wait(*comm_, "rows recent enough", attempt, stats_.wait_seconds)) ++stats_.reads_waited;
  stats_.bytes_received += 8 * (2 + n + total * rw_);
  stats_.rows_fetched += rows.size();
  std::uint64_t complete = never;
  for (member_id m : comm_->view().live) complete = std::min(complete, applied_buf_[m]);
  const std::uint64_t own = applied_buf_[comm_->rank()];
  // Store each row: the owner's value, plus this member's batches the
  // owner had not applied, plus the current clock's updates.
  std::size_t run = 0, base = 0, k = 0;
  for (std::uint64_t r : rows) {
    const std::size_t l = layout_.local(static_cast<std::size_t>(r));
    while (l >= runs_[run].first + runs_[run].second) base += runs_[run++].second;
    const T* src = fetched_.data() + (base + l - runs_[run].first) * stride_;
    auto* e = cache_.find(r);
    if (e == nullptr) e = cache_.insert(r, stats_.evictions);
    T* dst;
    if (e != nullptr) {
      e->complete = complete;
      e->own_applied = own;
      e->generation = generation_;
      e->fetched = clock_;
      cache_.touch(*e);
      dst = cache_.values(*e).data();
    } else {
      scratch_.resize(stride_);
      dst = scratch_.data();
      scratch_row_ = static_cast<std::size_t>(r);
      scratch_complete_ = complete;
      scratch_generation_ = generation_;
    }
    std::copy(src, src + stride_, dst);
    const std::uint32_t s = slot(static_cast<std::size_t>(r));
    for (const auto& b : outbox_[o])
      if (b.kind == detail::table_wire::updates && b.clock >= own)
        if (const T* p = b.rows.find(r, s))
          for (std::size_t e2 = 0; e2 < len_; ++e2) dst[e2] += p[e2];
    if (const T* p = builders_[o].find(r, s))
      for (std::size_t e2 = 0; e2 < len_; ++e2) dst[e2] += p[e2];
    if (!dests.empty()) std::copy(dst, dst + len_, dests[k]);
    ++k;
  }
}

DML_END_NAMESPACE

// SPDX-License-Identifier: BSL-1.0
/// @file
/// Building and rebuilding dml::table: agreement, the segment, the barrier, recovery
/// from a failure and the specializations end_recording() applies.
/// Member functions of the class in dml/table/table.hpp, which includes this file
/// after the class.
#pragma once

#include <dml/table/table.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

DML_BEGIN_NAMESPACE

template <class T, class Transport, class Consistency>
void table<T, Transport, Consistency>::table_barrier() {
  const auto& live = comm_->view().live;
  const member_id me = comm_->rank();
  ++barriers_;
  for (member_id m : live) (void)seg_.fetch_add(m, lay_.arrivals(me), 1);
  detail::table_wait(
      *comm_, "the table's barrier",
      [&]() -> std::optional<member_id> {
        progress();
        for (member_id m : live)
          if (seg_.load_control(lay_.arrivals(m)) < barriers_) return m;
        return std::nullopt;
      },
      stats_.wait_seconds);
}

template <class T, class Transport, class Consistency>
void table<T, Transport, Consistency>::build(source src) {
  const auto view = comm_->view();
  const member_id me = comm_->rank();
  const std::size_t n = comm_->size();
  std::string problem;
  try {
    validate_local();
  } catch (const config_error& e) {
    problem = e.what();
  }
  description_ = describe();
  const std::uint64_t mine[4] = {clock_, placements_, collectives_done_, snap_generation_};
  std::string record(sizeof mine, '\0');
  std::memcpy(record.data(), mine, sizeof mine);
  record += problem.empty() ? description_ : "!" + problem;
  const auto all = comm_->exchange(std::as_bytes(std::span<const char>(record.data(), record.size())));
  if (all.size() != view.live.size()) throw comm_error("dml::table: malformed build records");
  std::vector<std::uint64_t> clocks(n, 0);
  std::vector<std::string> texts;
  bool same_layout = true;
  std::uint64_t placements = 0, done = 0, oldest_snapshot = snap_generation_;
  for (std::size_t i = 0; i < all.size(); ++i) {
    std::uint64_t theirs[4] = {0, 0, 0, 0};
    if (all[i].size() < sizeof theirs)
      throw comm_error("dml::table: malformed build record from member " + std::to_string(view.live[i]));
    std::memcpy(theirs, all[i].data(), sizeof theirs);
    clocks[view.live[i]] = theirs[0];
    same_layout = same_layout && theirs[1] == placements_;
    placements = std::max(placements, theirs[1]);
    done = std::max(done, theirs[2]);
    oldest_snapshot = std::min(oldest_snapshot, theirs[3]);
    texts.emplace_back(reinterpret_cast<const char*>(all[i].data()) + sizeof theirs,
                       all[i].size() - sizeof theirs);
  }
  check_agreement(texts, view);
  if (src == source::contributions) {
    // keep_through_sync: every survivor starts from the newest snapshot they
    // all completed (a failure inside a sync's all-gather can leave some a
    // generation ahead), and withdraws what the failed members sent since.
    if (snap_generation_ > oldest_snapshot + 1)
      throw comm_error("dml::table: snapshot generations " + std::to_string(snap_generation_) + " and " +
                       std::to_string(oldest_snapshot) + " differ by more than one in a rebuild");
    const bool back = snap_generation_ > oldest_snapshot;
    if (back) back_to_previous_snapshot();
    stats_.lost_updates += back ? lost_since_prev_snap_ : lost_since_snap_;
    lost_since_snap_ = lost_since_prev_snap_ = 0;
  }
  epoch_ = view.epoch;
  collectives_done_ = done;  // a step some survivor completed counts as done for all
  // Values to carry over: every survivor's own updates after a failure,
  // or the owners' rows when they move.
  std::vector<T> old_master;
  detail::ownership old_layout;
  if (src == source::migration) {
    old_master = std::move(master_);
    old_layout = layout_;
    layout_ = std::move(next_layout_);
    ++placements_;
  } else if (layout_.rows() == rows_ && same_layout) {
    layout_ = layout_.over(view.live, n);
  } else {
    // A failure cut a placement short on some members: every survivor
    // falls back to the cyclic layout (its rows are rebuilt anyway).
    layout_ = detail::ownership::cyclic(rows_, view.live, n);
    placements_ = placements + 1;
  }
  install(view);
  bool resumed = src == source::migration || (src == source::contributions && snap_generation_ > 0);
  for (member_id m : view.live) resumed = resumed || clocks[m] != 0;
  if (resumed) {
    if (src == source::migration) {
      stream_old_rows(old_layout, old_master);
    } else {
      if (snap_generation_ > 0) {  // the rows this member owns now, as of the snapshot
        for (std::size_t l = 0; l < layout_.owned(me); ++l) {
          const std::uint64_t row = layout_.global(me, l);
          apply_rows(
              1, [&](std::size_t) { return row; }, snap_.data() + row * stride_, false);
        }
      }
      stream_contributions();
    }
    finish_streaming();
  }
  for (member_id m : view.live) applied_[m] = clocks[m];
  if (resumed) {
    publish();
    table_barrier();
  }
  (void)me;
}

template <class T, class Transport, class Consistency>
void table<T, Transport, Consistency>::install(const comm::membership_view& view) {
  const member_id me = comm_->rank();
  const std::size_t n = comm_->size();
  lay_ = detail::table_wire::layout{n, rw_, ring_};
  const std::size_t owned = layout_.owned(me);
  seg_ = segment_type{};  // the old view's segment is released first
  seg_ = comm_->create_segment(lay_.data_words(owned, view.live.size()), lay_.control_words());
  lost_counted_ = false;
  std::vector<std::size_t> position(n, 0);
  for (std::size_t i = 0; i < view.live.size(); ++i) position[view.live[i]] = i;
  // Owner.
  master_.assign(owned * stride_, T{});
  is_dirty_.assign(owned, 0);
  dirty_.clear();
  applied_.assign(n, never);
  for (member_id m : view.live) applied_[m] = 0;
  recv_.assign(n, receiver{});
  for (member_id m : view.live) recv_[m].base = lay_.ring_of(owned, position[m]);
  received_from_.assign(n, 0);
  received_at_snap_.assign(n, 0);
  received_at_prev_snap_.assign(n, 0);
  version_ = 0;
  // Sender: the current clock's updates move to their new owners.
  std::vector<std::pair<std::uint64_t, std::vector<T>>> pending;
  for (auto& b : builders_)
    if (b.touched)
      for (std::size_t i = 0; i < b.count(); ++i)
        pending.emplace_back(
            b.id(i), std::vector<T>(b.values.begin() + static_cast<std::ptrdiff_t>(i * stride_),
                                    b.values.begin() + static_cast<std::ptrdiff_t>((i + 1) * stride_)));
  if (have_pattern_) choose_statics();
  builders_.assign(n, detail::row_batch<T>{});
  for (member_id o = 0; o < n; ++o) builders_[o].reset(static_ids_for(o), stride_);
  for (const auto& [row, values] : pending) {
    T* dst =
        builders_[layout_.owner(static_cast<std::size_t>(row))].at(row, slot(static_cast<std::size_t>(row)));
    for (std::size_t e = 0; e < stride_; ++e) dst[e] += values[e];
  }
  outbox_.assign(n, {});
  head_.assign(n, 0);
  seq_.assign(n, 0);
  credit_.assign(n, 0);
  pruned_.assign(n, 0);
  at_.assign(n, 0);
  for (member_id o : view.live) at_[o] = lay_.ring_of(layout_.owned(o), position[me]);
  // Reader.
  cache_.clear();
  invalidate();
  barriers_ = 0;
  scratch_.assign(stride_, T{});
}

template <class T, class Transport, class Consistency>
void table<T, Transport, Consistency>::stream_contributions() {
  const member_id me = comm_->rank();
  std::vector<detail::row_batch<T>> out(comm_->size());
  for (auto& b : out) b.reset(nullptr, stride_);
  contrib_index_.for_each([&](std::uint64_t row, std::uint32_t at) {
    const T* src = contrib_values_.data() + std::size_t{at} * stride_;
    const member_id o = layout_.owner(static_cast<std::size_t>(row));
    if (o == me) {
      apply_rows(
          1, [&](std::size_t) { return row; }, src, false);
    } else {
      T* dst = out[o].at(row, detail::no_slot);
      std::copy(src, src + stride_, dst);
    }
  });
  queue_values(out);
}

template <class T, class Transport, class Consistency>
void table<T, Transport, Consistency>::stream_old_rows(const detail::ownership& old,
                                                       const std::vector<T>& old_master) {
  const member_id me = comm_->rank();
  std::vector<detail::row_batch<T>> out(comm_->size());
  for (auto& b : out) b.reset(nullptr, stride_);
  const std::size_t owned = old.owned(me);
  for (std::size_t l = 0; l < owned; ++l) {
    const T* src = old_master.data() + l * stride_;
    if (std::all_of(src, src + len_, [](T x) { return x == T{}; })) continue;
    const std::size_t row = old.global(me, l);
    const member_id o = layout_.owner(row);
    if (o == me) {
      apply_rows(
          1, [&](std::size_t) { return std::uint64_t{row}; }, src, false);
    } else {
      T* dst = out[o].at(row, detail::no_slot);
      std::copy(src, src + stride_, dst);
    }
  }
  queue_values(out);
}

template <class T, class Transport, class Consistency>
void table<T, Transport, Consistency>::queue_values(std::vector<detail::row_batch<T>>& out) {
  const member_id me = comm_->rank();
  for (member_id o : comm_->view().live) {
    if (o == me) continue;
    detail::sent_batch<T> s;
    s.kind = detail::table_wire::values;
    s.rows = std::move(out[o]);
    outbox_[o].push_back(std::move(s));
  }
}

template <class T, class Transport, class Consistency>
void table<T, Transport, Consistency>::finish_streaming() {
  const member_id me = comm_->rank();
  detail::table_wait(
      *comm_, "rows while the table is rebuilt",
      [&]() -> std::optional<member_id> {
        progress();
        if (!pump()) return first_unwritten();
        for (member_id m : comm_->view().live)
          if (m != me && !recv_[m].ended) return m;
        return std::nullopt;
      },
      stats_.wait_seconds);
  for (auto& q : outbox_) q.clear();
}

template <class T, class Transport, class Consistency>
void table<T, Transport, Consistency>::rebuild() {
  count_lost();
  ++stats_.rebuilds;
  build(source::contributions);
}

template <class T, class Transport, class Consistency>
void table<T, Transport, Consistency>::count_lost() {
  namespace w = detail::table_wire;
  if (lost_counted_) return;  // counted by a rebuild that another failure cut short
  lost_counted_ = true;
  const auto& live = comm_->view().live;
  std::uint64_t lost = 0, before_snap = 0, before_prev_snap = 0;
  for (member_id m = 0; m < recv_.size(); ++m) {
    if (std::binary_search(live.begin(), live.end(), m) || applied_[m] == never) continue;
    lost += received_from_[m];
    if (m < received_at_snap_.size()) before_snap += received_at_snap_[m];
    if (m < received_at_prev_snap_.size()) before_prev_snap += received_at_prev_snap_[m];
    // Complete messages still in the ring.
    auto& r = recv_[m];
    std::uint64_t tail = r.tail, expect = r.expect;
    for (std::size_t guard = 0; guard < ring_; ++guard) {
      const std::size_t pos = static_cast<std::size_t>(tail % ring_);
      const std::uint64_t t = w::tag(expect);
      const std::uint64_t first = seg_.load(r.base + pos);
      if (first == (t ^ w::skip_mask)) {
        tail += ring_ - pos;
        ++expect;
        continue;
      }
      if (first != t) break;
      const std::uint64_t count = seg_.load(r.base + pos + 3);
      if (count > ring_) break;
      const std::size_t words = w::message_words(static_cast<std::size_t>(count), rw_);
      if (pos + words > ring_ || seg_.load(r.base + pos + words - 1) != t) break;
      if ((seg_.load(r.base + pos + 1) & ~end_flag) == w::updates) lost += count;
      tail += words;
      ++expect;
    }
  }
  // Added by the rebuild, which knows the snapshot the survivors start from
  // (without keep_through_sync there is none and everything is lost).
  lost_since_snap_ = lost - before_snap;
  lost_since_prev_snap_ = lost - before_prev_snap;
}

template <class T, class Transport, class Consistency>
void table<T, Transport, Consistency>::take_snapshot() {
  check_view();
  const auto& live = comm_->view().live;
  const member_id me = comm_->rank();
  if (master_.size() != layout_.owned(me) * stride_) throw comm_error("dml::table: owned rows out of step");
  const auto all = comm_->exchange(std::as_bytes(std::span<const T>(master_)));
  if (all.size() != live.size()) throw comm_error("dml::table: malformed snapshot records");
  std::vector<T> rows(rows_ * stride_, T{});
  for (std::size_t i = 0; i < all.size(); ++i) {
    const member_id o = live[i];
    const std::size_t owned = layout_.owned(o);
    if (all[i].size() != owned * stride_ * sizeof(T))
      throw comm_error("dml::table: malformed snapshot record from member " + std::to_string(o) + " (" +
                       std::to_string(all[i].size()) + " bytes for " + std::to_string(owned) + " rows)");
    for (std::size_t l = 0; l < owned; ++l)
      std::memcpy(rows.data() + layout_.global(o, l) * stride_, all[i].data() + l * stride_ * sizeof(T),
                  stride_ * sizeof(T));
  }
  // Nothing below throws: the snapshot and the contributions move together.
  snap_prev_ = std::move(snap_);
  snap_ = std::move(rows);
  ++snap_generation_;
  contrib_prev_index_ = std::move(contrib_index_);
  contrib_prev_values_ = std::move(contrib_values_);
  contrib_index_ = detail::flat_index{};
  contrib_values_.clear();
  contrib_static_.clear();  // positions in the index just emptied
  received_at_prev_snap_ = std::move(received_at_snap_);
  received_at_snap_ = received_from_;
}

template <class T, class Transport, class Consistency>
void table<T, Transport, Consistency>::back_to_previous_snapshot() {
  snap_ = std::move(snap_prev_);
  snap_prev_.clear();
  --snap_generation_;
  contrib_static_.clear();
  contrib_prev_index_.for_each([&](std::uint64_t row, std::uint32_t at) {
    const std::uint32_t to = contribution_slot(row);
    const T* src = contrib_prev_values_.data() + std::size_t{at} * stride_;
    T* dst = contrib_values_.data() + std::size_t{to} * stride_;
    for (std::size_t e = 0; e < len_; ++e) dst[e] += src[e];
  });
  contrib_prev_index_ = detail::flat_index{};
  contrib_prev_values_.clear();
}

template <class T, class Transport, class Consistency>
void table<T, Transport, Consistency>::specialize() {
  check_view();
  quiesce();
  const auto& live = comm_->view().live;
  const std::vector<std::uint64_t> accessed =
      opts_.place_rows ? pattern_.accessed() : std::vector<std::uint64_t>{};
  const auto all = comm_->exchange(std::as_bytes(std::span(accessed)));
  if (all.size() != live.size()) throw comm_error("dml::table: malformed access records");
  have_pattern_ = true;
  if (opts_.place_rows) {
    std::vector<std::vector<std::uint64_t>> lists(live.size());
    for (std::size_t i = 0; i < all.size(); ++i) {
      if (all[i].size() % 8 != 0) throw comm_error("dml::table: malformed access record");
      lists[i].resize(all[i].size() / 8);
      if (!all[i].empty())
        std::memcpy(lists[i].data(), all[i].data(), all[i].size());  // never memcpy(nullptr)
    }
    next_layout_ = detail::ownership::placed(detail::place_rows(rows_, live, lists), live, comm_->size());
    ++stats_.migrations;
    build(source::migration);
  } else {
    // The layout stays; batches and caches take the pattern's shape.
    choose_statics();
    for (member_id o : live) {
      auto& b = builders_[o];
      std::vector<std::pair<std::uint64_t, std::vector<T>>> pending;
      if (b.touched)
        for (std::size_t i = 0; i < b.count(); ++i)
          pending.emplace_back(
              b.id(i), std::vector<T>(b.values.begin() + static_cast<std::ptrdiff_t>(i * stride_),
                                      b.values.begin() + static_cast<std::ptrdiff_t>((i + 1) * stride_)));
      b.reset(static_ids_for(o), stride_);
      for (const auto& [row, values] : pending) {
        T* dst = b.at(row, slot(static_cast<std::size_t>(row)));
        for (std::size_t e = 0; e < stride_; ++e) dst[e] += values[e];
      }
    }
    cache_.clear();
    invalidate();
  }
}

template <class T, class Transport, class Consistency>
void table<T, Transport, Consistency>::choose_statics() {
  const member_id me = comm_->rank();
  const std::size_t n = comm_->size();
  static_ids_.assign(n, nullptr);
  static_slot_.clear();
  if (opts_.batch_updates && !pattern_.updates.empty()) {
    static_slot_.assign(rows_, detail::no_slot);
    std::vector<std::vector<std::uint64_t>> ids(n);
    for (const auto& [row, k] : pattern_.updates)
      ids[layout_.owner(static_cast<std::size_t>(row))].push_back(row);
    for (member_id o = 0; o < n; ++o) {
      std::sort(ids[o].begin(), ids[o].end());
      for (std::size_t i = 0; i < ids[o].size(); ++i)
        static_slot_[static_cast<std::size_t>(ids[o][i])] = static_cast<std::uint32_t>(i);
      if (!ids[o].empty())
        static_ids_[o] = std::make_shared<const std::vector<std::uint64_t>>(std::move(ids[o]));
    }
  }
  // Rows of others this member reads, most read first.
  std::vector<std::uint64_t> ranked;
  for (std::uint64_t r : pattern_.most_read(0))
    if (layout_.owner(static_cast<std::size_t>(r)) != me) ranked.push_back(r);
  if (opts_.cache_rows != 0 && ranked.size() > opts_.cache_rows) ranked.resize(opts_.cache_rows);
  cache_.configure(stride_, opts_.cache_rows);
  if (opts_.static_cache) cache_.make_static(std::unordered_set<std::uint64_t>(ranked.begin(), ranked.end()));
  // Per clock of the period: the rows of others that clock reads, most
  // read first, only those of the static cache when there is one, at most
  // cache_rows of them. With a period of one clock: `ranked`.
  prefetch_.clear();
  if (opts_.prefetch) {
    const std::unordered_set<std::uint64_t> cached(ranked.begin(), ranked.end());
    prefetch_.assign(pattern_.period(), std::vector<std::vector<std::uint64_t>>(n));
    for (std::size_t k = 0; k < prefetch_.size() && k < pattern_.phase_reads.size(); ++k) {
      std::size_t taken = 0;
      for (std::uint64_t r : detail::access_pattern::most_read(pattern_.phase_reads[k], 0)) {
        if (opts_.cache_rows != 0 && taken == opts_.cache_rows) break;
        if (layout_.owner(static_cast<std::size_t>(r)) == me || (opts_.static_cache && !cached.contains(r)))
          continue;
        prefetch_[k][layout_.owner(static_cast<std::size_t>(r))].push_back(r);
        ++taken;
      }
      for (auto& list : prefetch_[k])
        std::sort(list.begin(), list.end(), [&](std::uint64_t a, std::uint64_t b) {
          return layout_.local(static_cast<std::size_t>(a)) < layout_.local(static_cast<std::size_t>(b));
        });
    }
  }
}

template <class T, class Transport, class Consistency>
std::uint32_t table<T, Transport, Consistency>::contribution_slot(std::uint64_t row) {
  const auto [at, fresh] = contrib_index_.try_emplace(row, static_cast<std::uint32_t>(contrib_index_.size()));
  if (fresh) contrib_values_.resize(contrib_values_.size() + stride_, T{});
  return at;
}

template <class T, class Transport, class Consistency>
void table<T, Transport, Consistency>::add_contribution(const detail::row_batch<T>& b, member_id o) {
  auto add = [&](std::uint32_t at, std::size_t i) {
    T* dst = contrib_values_.data() + std::size_t{at} * stride_;
    const T* src = b.values.data() + i * stride_;
    for (std::size_t e = 0; e < len_; ++e) dst[e] += src[e];
  };
  std::size_t i = 0;
  if (b.static_count != 0) {
    if (contrib_static_.size() <= o) contrib_static_.resize(o + 1);
    auto& known = contrib_static_[o];
    if (known.ids != b.static_ids) {  // a new layout: look its rows up once
      known.ids = b.static_ids;
      known.at.resize(b.static_count);
      for (std::size_t k = 0; k < b.static_count; ++k) known.at[k] = contribution_slot((*b.static_ids)[k]);
    }
    for (; i < b.static_count; ++i) add(known.at[i], i);
  }
  for (; i < b.count(); ++i) add(contribution_slot(b.id(i)), i);
}

DML_END_NAMESPACE

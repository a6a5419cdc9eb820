// SPDX-License-Identifier: BSL-1.0
/// @file
/// The update path of dml::table: a clock's updates leave as batches written into
/// the owners' rings (the sender's side) and are applied and published there (the owner's side).
/// Member functions of the class in dml/table/table.hpp, which includes this file
/// after the class.
#pragma once

#include <dml/table/table.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

DML_BEGIN_NAMESPACE

template <class T, class Transport, class Consistency>
void table<T, Transport, Consistency>::commit() {
  const member_id me = comm_->rank();
  for (member_id o : comm_->view().live) {
    auto& b = builders_[o];
    if (b.touched && contributions_kept()) add_contribution(b, o);
    if (o == me) {
      if (b.touched)
        apply_rows(
            b.count(), [&](std::size_t i) { return b.id(i); }, b.values.data(), false);
    } else {
      detail::sent_batch<T> s;
      s.kind = detail::table_wire::updates;
      s.clock = clock_;
      if (b.touched) {
        s.rows = std::move(b);
      } else {
        s.rows.stride = stride_;
      }
      outbox_[o].push_back(std::move(s));
    }
    b.reset(static_ids_for(o), stride_);
  }
  applied_[me] = clock_ + 1;
  ++clock_;
  ++stats_.clocks;
  publish();
}

template <class T, class Transport, class Consistency>
void table<T, Transport, Consistency>::quiesce() {
  check_view();
  detail::table_wait(
      *comm_, "room in a ring for the last batches",
      [&]() -> std::optional<member_id> {
        progress();
        return pump() ? std::nullopt : std::optional<member_id>(first_unwritten());
      },
      stats_.wait_seconds);
  table_barrier();  // every member's messages to this one have landed
  progress();       // ... and are applied now
  table_barrier();  // every owner has applied and published
  prune_all();
}

template <class T, class Transport, class Consistency>
void table<T, Transport, Consistency>::progress() {
  const auto& live = comm_->view().live;
  const member_id me = comm_->rank();
  seg_.sync();
  bool changed = false;
  for (member_id m : live)
    if (m != me) changed = poll_ring(m) || changed;
  if (changed || !dirty_.empty()) publish();
  for (member_id m : live) {
    auto& r = recv_[m];
    if (m != me && r.credit != 0) {
      (void)seg_.fetch_add(m, me, r.credit);
      r.credit = 0;
    }
  }
  (void)pump();
  prune_all();
}

template <class T, class Transport, class Consistency>
bool table<T, Transport, Consistency>::poll_ring(member_id m) {
  namespace w = detail::table_wire;
  auto& r = recv_[m];
  bool changed = false;
  for (;;) {
    const std::size_t pos = static_cast<std::size_t>(r.tail % ring_);
    const std::uint64_t t = w::tag(r.expect);
    const std::uint64_t first = seg_.load(r.base + pos);
    if (first == (t ^ w::skip_mask)) {
      r.tail += ring_ - pos;
      r.credit += ring_ - pos;
      ++r.expect;
      continue;
    }
    if (first != t) break;
    const std::uint64_t count = seg_.load(r.base + pos + 3);
    if (count > ring_) break;  // the header has not landed whole
    const std::size_t words = w::message_words(static_cast<std::size_t>(count), rw_);
    if (pos + words > ring_ || seg_.load(r.base + pos + words - 1) != t) break;
    const std::uint64_t kind = seg_.load(r.base + pos + 1);
    const std::uint64_t clock = seg_.load(r.base + pos + 2);
    if (seg_.load(r.base + pos + 3) != count) malformed(m, "its row count changed");
    consume(m, r, kind, clock, static_cast<std::size_t>(count), r.base + pos + w::header_words, changed);
    r.tail += words;
    r.credit += words;
    ++r.expect;
  }
  return changed;
}

template <class T, class Transport, class Consistency>
void table<T, Transport, Consistency>::consume(member_id m, receiver& r, std::uint64_t kind,
                                               std::uint64_t clock, std::size_t count, std::size_t at,
                                               bool& changed) {
  namespace w = detail::table_wire;
  const std::size_t old = r.ids.size();
  r.ids.resize(old + count);
  r.values.resize((old + count) * stride_);
  if (count != 0) {
    seg_.read(at, std::as_writable_bytes(std::span(r.ids.data() + old, count)));
    seg_.read(at + count,
              std::as_writable_bytes(std::span(r.values.data() + old * stride_, count * stride_)));
  }
  const bool end = (kind & end_flag) != 0;
  switch (kind & ~end_flag) {
    case w::updates:
      received_from_[m] += count;
      if (!end) return;
      if (clock != applied_[m])
        malformed(m, "its batch of clock " + std::to_string(clock) + " arrived, but " +
                         std::to_string(applied_[m]) + " of its clocks are applied");
      apply_rows(
          r.ids.size(), [&](std::size_t i) { return r.ids[i]; }, r.values.data(), true);
      ++applied_[m];
      ++stats_.batches_applied;
      changed = true;
      break;
    case w::values:
      apply_rows(
          r.ids.size(), [&](std::size_t i) { return r.ids[i]; }, r.values.data(), true);
      changed = changed || !r.ids.empty();
      if (end) r.ended = true;
      break;
    default:
      malformed(m, "unknown message kind " + std::to_string(kind));
  }
  r.ids.clear();
  r.values.clear();
}

template <class T, class Transport, class Consistency>
template <class Id>
void table<T, Transport, Consistency>::apply_rows(std::size_t count, Id&& id, const T* values, bool check) {
  const member_id me = comm_->rank();
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint64_t row = id(i);
    if (check && (row >= rows_ || layout_.owner(static_cast<std::size_t>(row)) != me))
      throw comm_error("dml::table: member " + std::to_string(me) + " received row " + std::to_string(row) +
                       ", which it does not own");
    const std::size_t l = layout_.local(static_cast<std::size_t>(row));
    T* dst = master_.data() + l * stride_;
    const T* src = values + i * stride_;
    for (std::size_t e = 0; e < len_; ++e) dst[e] += src[e];
    mark_dirty(l);
  }
}

template <class T, class Transport, class Consistency>
void table<T, Transport, Consistency>::publish() {
  const member_id me = comm_->rank();
  std::uint64_t odd = version_ + 1;
  seg_.put(me, 0, std::as_bytes(std::span(&odd, 1)));
  seg_.order(me);
  std::sort(dirty_.begin(), dirty_.end());
  for (std::size_t i = 0; i < dirty_.size();) {
    std::size_t j = i + 1;
    while (j < dirty_.size() && dirty_[j] == dirty_[j - 1] + 1) ++j;
    const std::size_t first = dirty_[i], n = j - i;
    seg_.put(me, lay_.row(first), std::as_bytes(std::span(master_.data() + first * stride_, n * stride_)));
    for (std::size_t k = i; k < j; ++k) is_dirty_[dirty_[k]] = 0;
    i = j;
  }
  dirty_.clear();
  seg_.put(me, lay_.applied(0), std::as_bytes(std::span(applied_)));
  seg_.order(me);
  version_ += 2;
  seg_.put(me, 0, std::as_bytes(std::span(&version_, 1)));
  seg_.flush(me);
}

template <class T, class Transport, class Consistency>
bool table<T, Transport, Consistency>::pump() {
  const member_id me = comm_->rank();
  bool all = true;
  for (member_id o : comm_->view().live) {
    if (o == me) continue;
    for (auto& b : outbox_[o]) {
      if (b.complete) continue;
      if (!write_some(o, b)) {
        all = false;
        break;  // a batch's messages and batches stay in order
      }
    }
  }
  return all;
}

template <class T, class Transport, class Consistency>
bool table<T, Transport, Consistency>::write_some(member_id o, detail::sent_batch<T>& b) {
  namespace w = detail::table_wire;
  const std::size_t per_message = (ring_ / 2 - w::header_words - w::footer_words) / (1 + rw_);
  const bool per_row = b.kind == w::updates && !opts_.batch_updates;
  for (;;) {
    const std::size_t count = b.rows.count();
    const std::size_t k = std::min(count - b.written, per_row ? std::size_t{1} : per_message);
    // With one message per row the end marker is a message of its own.
    const bool end = b.written + k == count && !(per_row && k != 0);
    const std::size_t words = w::message_words(k, rw_);
    if (!reserve(o, words)) return false;
    const std::uint64_t seq = ++seq_[o];
    const std::uint64_t t = w::tag(seq);
    const std::size_t at = at_[o] + static_cast<std::size_t>(head_[o] % ring_);
    const std::uint64_t head[w::header_words] = {t, b.kind | (end ? end_flag : 0), b.clock, k};
    seg_.put(o, at, std::as_bytes(std::span(head)));
    if (k != 0) {
      const std::size_t s = b.written, sc = b.rows.static_count;
      if (s < sc) {
        const std::size_t n = std::min(k, sc - s);
        seg_.put(o, at + w::header_words, std::as_bytes(std::span(b.rows.static_ids->data() + s, n)));
      }
      if (s + k > sc) {
        const std::size_t from = std::max(s, sc);
        seg_.put(o, at + w::header_words + (from - s),
                 std::as_bytes(std::span(b.rows.extra_ids.data() + (from - sc), s + k - from)));
      }
      seg_.put(o, at + w::header_words + k,
               std::as_bytes(std::span(b.rows.values.data() + s * stride_, k * stride_)));
    }
    seg_.order(o);
    seg_.put(o, at + words - 1, std::as_bytes(std::span(&t, 1)));
    head_[o] += words;
    b.written += k;
    ++stats_.messages_sent;
    stats_.bytes_sent += 8 * words;
    if (end) {
      b.complete = true;
      b.end = head_[o];
      return true;
    }
  }
}

template <class T, class Transport, class Consistency>
bool table<T, Transport, Consistency>::reserve(member_id o, std::size_t words) {
  const std::size_t pos = static_cast<std::size_t>(head_[o] % ring_);
  const std::size_t waste = pos + words > ring_ ? ring_ - pos : 0;
  const auto room = [&] { return head_[o] + waste + words - credit_[o] <= ring_; };
  if (!room()) {
    credit_[o] = seg_.load_control(o);
    if (!room()) return false;
  }
  if (waste != 0) {
    const std::uint64_t skip = detail::table_wire::tag(++seq_[o]) ^ detail::table_wire::skip_mask;
    seg_.put(o, at_[o] + pos, std::as_bytes(std::span(&skip, 1)));
    head_[o] += waste;
  }
  return true;
}

template <class T, class Transport, class Consistency>
void table<T, Transport, Consistency>::prune_all() {
  const member_id me = comm_->rank();
  for (member_id o : comm_->view().live) {
    if (o == me) continue;
    auto& q = outbox_[o];
    if (q.empty() || !q.front().complete) continue;
    if (q.front().end > credit_[o]) credit_[o] = seg_.load_control(o);
    while (!q.empty() && q.front().complete && q.front().end <= credit_[o]) {
      if (q.front().kind == detail::table_wire::updates) pruned_[o] = q.front().clock + 1;
      q.pop_front();
    }
  }
}

DML_END_NAMESPACE

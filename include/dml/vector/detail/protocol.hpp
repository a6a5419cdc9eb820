// SPDX-License-Identifier: BSL-1.0
// Internal: the steps consistency policies are made of. A policy's
// scatter(p) and gather(p) receive a vector_protocol; see
// dml/consistency/concepts.hpp for the list and docs/vectors.md for what
// each step guarantees. It is also the receiving side the combine
// algorithms of consistency/detail/combine.hpp are written against.
#pragma once

#include <dml/consistency/detail/combine.hpp>
#include <dml/fault/membership.hpp>
#include <dml/fwd.hpp>
#include <dml/vector/detail/core.hpp>
#include <dml/vector/detail/names.hpp>
#include <dml/vector/detail/slots.hpp>
#include <dml/vector/detail/wait.hpp>
#include <dml/vector/stats.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

DML_BEGIN_NAMESPACE
namespace detail {

template <class Core>
class vector_protocol {
 public:
  using value_type = typename Core::value_type;
  /// `policy`: the consistency policy (its name goes into messages);
  /// `gather`: the functor combine steps apply.
  template <class Policy>
  vector_protocol(Core& core, const Policy& policy, gather_call<value_type> gather)
      : v_(core),
        policy_(&policy),
        policy_name_([](const void* p) { return policy_name(*static_cast<const Policy*>(p)); }),
        gather_(gather) {}

  /// The vector's clock: the number of scatters so far.
  [[nodiscard]] std::uint64_t clock() const noexcept { return v_.clock_; }

  /// Writes the current update (clock()) into slot clock() mod 2 of every
  /// out-neighbour: header, payload, footer, in that order. Out-neighbours
  /// a scatter(dml::to{...}) left out get a marker in that slot instead (no
  /// payload), so a receiver that waits for clock() is never left waiting
  /// (bsp, notify_ack).
  void write_all() { v_.write_all(skipped_write::marker); }
  /// As write_all(), for policies under which nobody reads a slot while it
  /// is written: readers read it only after a synchronization that follows
  /// the write (bsp's barrier, notify_ack's notification), and the writer
  /// writes it again only after every reader finished with it (the next
  /// barrier, the acknowledgement). A transport may then copy the payload
  /// with plain, vectorized stores instead of word-wise atomic ones (inproc's
  /// put_exclusive).
  void write_all_exclusive() { v_.write_all(skipped_write::marker, slot_access::exclusive); }
  /// As write_all(), but an out-neighbour left out gets its marker in the
  /// slot that does not hold the newest update sent to it, which it keeps
  /// (ssp: the marker tells the receiver how far the sender has got). That
  /// may be the slot of clock() - 1: only for policies whose combines read
  /// either slot (combine_newest, combine_unconsumed), never combine_exact.
  void write_all_keeping_newest() { v_.write_all(skipped_write::marker_aside); }
  /// As write_all(), but an out-neighbour left out gets nothing (asp: its
  /// receiver never waits).
  void write_destinations() { v_.write_all(skipped_write::nothing); }
  /// Waits for remote completion of every write.
  void flush_all();
  /// Barrier over the live members. A failure inside it propagates to the
  /// operation that called it (which undoes itself and is made again over
  /// the survivors); made again, the barrier resumes, and counts as passed
  /// when another member completed it before the failure (see
  /// dml::fault::barrier).
  void barrier();
  /// Collective over the live members: every member's record, indexed like
  /// the transport's view().live (the transport's exchange; the time is
  /// counted as waiting, as it lasts until the last member arrives).
  /// Policies that must agree on something use it (consistency::adaptive).
  std::vector<std::vector<std::byte>> exchange(std::span<const std::byte> record);
  /// The live members, in the order exchange() returns their records.
  [[nodiscard]] std::vector<member_id> live() const { return v_.comm_->view().live; }
  /// This member's id.
  [[nodiscard]] member_id rank() const { return v_.comm_->rank(); }
  /// The vector's statistics so far.
  [[nodiscard]] const vector_stats& stats() const noexcept { return v_.stats_; }
  /// Adds one to this member's notify counter on every out-neighbour.
  void notify_all();
  /// Adds one to this member's ack counter on every in-neighbour.
  void ack_all();
  /// Waits until every live out-neighbour has acknowledged `round` rounds.
  void wait_acks(std::uint64_t round);
  /// Waits until every live in-neighbour has notified `round` rounds.
  void wait_notifies(std::uint64_t round);
  /// Waits until every live in-neighbour's newest complete update has
  /// clock ≥ c.
  void wait_newest_at_least(std::uint64_t c);
  /// As wait_newest_at_least(c), but for at most `bound` in all (the
  /// bounded stall of consistency::ssp_bounded). Returns true when every
  /// live in-neighbour got there; false when the bound ran out first, which
  /// stats().stalls_expired counts. A failed in-neighbour still ends the
  /// wait at once with dml::peer_failure.
  bool wait_newest_at_least_for(std::uint64_t c, std::chrono::nanoseconds bound);
  /// Combines exactly the clock-c update of every in-neighbour, waiting for
  /// any that is not complete yet; the updates are read in place.
  void combine_exact(std::uint64_t c);
  /// Combines the newest complete update of every in-neighbour whose clock
  /// is ≥ min_clock, retrying reads torn by a concurrent write. With
  /// `count_left_out` (after a bounded stall ran out), in-neighbours it
  /// hears nothing from (no update that recent, no marker) are counted in
  /// stats().laggards_left_out.
  void combine_newest(std::uint64_t min_clock, bool count_left_out = false);
  /// Combines the newest complete update of each in-neighbour not combined
  /// before, if its clock is ≥ min_clock; torn or in-flight updates are
  /// skipped, and so are older ones (counted in stats().too_old_skipped,
  /// each once). Never blocks.
  void combine_unconsumed(std::uint64_t min_clock = 0);

  // ---- the receiving side (consistency/detail/combine.hpp) ----
  [[nodiscard]] std::size_t in_count() const { return v_.in_neighbours().size(); }
  [[nodiscard]] member_id sender(std::size_t q) const { return v_.in_neighbours()[q]; }
  [[nodiscard]] std::uint64_t skipped_through(std::size_t q) const { return v_.skip_through_[q]; }
  [[nodiscard]] bool sends_in(std::size_t q, std::uint64_t c) const { return v_.in_active(q, c); }
  [[nodiscard]] std::uint64_t consumed(std::size_t q) const { return v_.consumed_[q]; }
  template <class Ready>
  void wait(std::size_t q, const char* what, Ready&& ready) {
    v_.wait_until(sender(q), what, std::forward<Ready>(ready));
  }
  void sync() { v_.seg_.sync(); }
  [[nodiscard]] std::uint64_t complete_clock(std::size_t q, std::size_t d) {
    return detail::complete_clock(v_.seg_, v_.layout_, q, d);
  }
  [[nodiscard]] std::uint64_t header_clock(std::size_t q, std::size_t d) {
    return v_.seg_.load(v_.layout_.base(q, d));
  }
  slot_read take_in_place(std::size_t q, std::size_t d, std::uint64_t c) { return v_.take_in_place(q, d, c); }
  slot_read take_copy(std::size_t q, std::size_t d) { return v_.take_copy(q, d); }
  [[nodiscard]] std::uint64_t input_clock(std::size_t q) const { return v_.staged_[q].clock; }
  void add(std::size_t q) { v_.add_input(q); }
  void count_marker() { v_.count_marker(); }
  void begin() {
    v_.inputs_.clear();
    v_.markers_ = 0;
  }
  void apply() { v_.apply(gather_); }
  void count_lost() { ++v_.stats_.lost_in_view_change; }
  void count_stale() { ++v_.stats_.stale_skipped; }
  /// q's update of clock c is not combined, now or later: too old.
  void skip_too_old(std::size_t q, std::uint64_t c) {
    v_.consumed_[q] = std::max(v_.consumed_[q], c);
    ++v_.stats_.too_old_skipped;
    ++v_.stats_.stale_skipped;
  }

 private:
  Core& v_;
  const void* policy_;
  std::string (*policy_name_)(const void*);
  gather_call<value_type> gather_;
};

template <class Core>
void vector_protocol<Core>::flush_all() {
  for (member_id m : v_.out_neighbours()) v_.seg_.flush(m);
}

template <class Core>
void vector_protocol<Core>::barrier() {
  const auto start = std::chrono::steady_clock::now();
  fault::detail::counted_barrier(*v_.comm_);
  v_.stats_.wait_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

template <class Core>
std::vector<std::vector<std::byte>> vector_protocol<Core>::exchange(std::span<const std::byte> record) {
  const auto start = std::chrono::steady_clock::now();
  auto all = v_.comm_->exchange(record);
  v_.stats_.wait_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return all;
}

template <class Core>
void vector_protocol<Core>::notify_all() {
  const auto out = v_.out_neighbours();
  for (std::size_t k = 0; k < out.size(); ++k) (void)v_.seg_.fetch_add(out[k], v_.out_pos_[k], 1);
}

template <class Core>
void vector_protocol<Core>::ack_all() {
  const auto in = v_.in_neighbours();
  for (std::size_t q = 0; q < in.size(); ++q) (void)v_.seg_.fetch_add(in[q], v_.ack_word_[q], 1);
}

template <class Core>
void vector_protocol<Core>::wait_acks(std::uint64_t round) {
  const auto out = v_.out_neighbours();
  const std::size_t base = v_.in_neighbours().size();
  for (std::size_t k = 0; k < out.size(); ++k)
    v_.wait_until(out[k], "acknowledgement", [&] { return v_.seg_.load_control(base + k) >= round; });
}

template <class Core>
void vector_protocol<Core>::wait_notifies(std::uint64_t round) {
  const auto in = v_.in_neighbours();
  for (std::size_t q = 0; q < in.size(); ++q)
    v_.wait_until(in[q], "notify", [&] { return v_.seg_.load_control(q) >= round; });
}

template <class Core>
void vector_protocol<Core>::wait_newest_at_least(std::uint64_t c) {
  for (std::size_t q = 0; q < in_count(); ++q)
    wait(q, "an update recent enough", [&] {
      sync();
      return std::max(complete_clock(q, 0), complete_clock(q, 1)) >= c || skipped_through(q) >= c;
    });
}

template <class Core>
bool vector_protocol<Core>::wait_newest_at_least_for(std::uint64_t c, std::chrono::nanoseconds bound) {
  const auto stop = std::chrono::steady_clock::now() + bound;
  bool all = true;
  for (std::size_t q = 0; q < in_count(); ++q)
    all = detail::wait_until_or(
              *v_.comm_, sender(q), "an update recent enough",
              [&] {
                sync();
                return std::max(complete_clock(q, 0), complete_clock(q, 1)) >= c || skipped_through(q) >= c;
              },
              v_.stats_.wait_seconds, stop) &&
          all;
  if (!all) ++v_.stats_.stalls_expired;
  return all;
}

template <class Core>
void vector_protocol<Core>::combine_exact(std::uint64_t c) {
  detail::combine_exact(*this, c, [this] { return policy_name_(policy_); });
}

template <class Core>
void vector_protocol<Core>::combine_newest(std::uint64_t min_clock, bool count_left_out) {
  const std::size_t missing = detail::combine_newest(*this, min_clock);
  if (count_left_out) v_.stats_.laggards_left_out += missing;
}

template <class Core>
void vector_protocol<Core>::combine_unconsumed(std::uint64_t min_clock) {
  detail::combine_unconsumed(*this, min_clock);
}

}  // namespace detail
DML_END_NAMESPACE

// SPDX-License-Identifier: BSL-1.0
/// @file
/// The transport concept: what a distributed vector needs from the layer that
/// moves bytes. The seam is deliberately narrow and byte-level (segments of
/// 64-bit words, one-sided puts, remote atomic adds) so that the typed front
/// end is compiled once per element type, not once per transport detail.
#pragma once

#include <dml/comm/attributes.hpp>
#include <dml/detail/policy.hpp>
#include <dml/fwd.hpp>

#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

DML_BEGIN_NAMESPACE
namespace comm {

/// Who is in the group right now. `epoch` grows by one each time the
/// survivors agree on a new live set after a failure.
struct membership_view {
  std::uint64_t epoch = 0;
  std::vector<member_id> live;  ///< ascending original ids

  [[nodiscard]] bool contains(member_id m) const noexcept {
    for (auto x : live)
      if (x == m) return true;
    return false;
  }
  friend bool operator==(const membership_view&, const membership_view&) = default;
};

/// A segment models registered memory that exists on every member: `words`
/// 64-bit data words plus `control` 64-bit control words, sized per member.
/// Operations on a peer's segment are one-sided.
///
/// - `put(target, word_offset, bytes)` copies bytes into the target's data
///   words starting at a word boundary (a partial last word is zero padded).
///   Puts to one target are not ordered with respect to each other unless
///   `order(target)` separates them.
/// - optional: `put_exclusive(target, word_offset, bytes)`, a put for words
///   nobody reads or writes concurrently (every read is ordered after it by
///   a later synchronization, and no reader of an earlier write is still
///   reading them): a transport may copy them with plain, vectorized stores.
///   The vectors use it for the payloads bsp and notify_ack write
///   (`write_all_exclusive`, slot_access::exclusive); inproc has it, the
///   others' put already is a plain copy on the target's side, and
///   `comm::any` forwards it (to put where the wrapped segment has none).
/// - `order(target)` makes every earlier put to target visible there before
///   any later one (a write fence).
/// - `flush(target)` / `flush_all()` wait for remote completion.
/// - `fetch_add(target, control_word, value)` is a remote atomic add that
///   returns the previous value and orders after earlier puts to target.
/// - `get(source, word_offset, out)` copies source's data words from a word
///   boundary into `out` (a one-sided read) and returns once they are there.
///   It sees every put this member made to source before it; it is not
///   atomic across words (callers detect tearing themselves, e.g. with a
///   version word read before and after). Tables read their owners' rows
///   with it, several ranges at once through `comm::get_all`
///   (dml/comm/get_all.hpp), which uses an optional member
///   `get_all(source, ranges)` where a segment has one (one round trip where
///   a get is a message to the peer).
/// - `load(word)` / `load_control(word)` read the own segment with acquire
///   semantics; `read(word_offset, out)` copies own data words (relaxed:
///   callers detect tearing themselves); `sync()` makes remote writes
///   visible to local reads (a no-op where memory is coherent).
/// - `view(word_offset, words)` is the own data words in place, without a
///   copy, valid while the segment lives. Reading it is only safe where a
///   protocol guarantees that no peer writes those words meanwhile (after a
///   `load` that observed the writer's completed update, and until the
///   reader lets the writer reuse them); vectors read in place under bsp and
///   notify_ack, and copy under asp and ssp.
template <class S>
concept segment = requires(S& s, const S& cs, member_id m, std::size_t w, std::uint64_t v,
                           std::span<const std::byte> in, std::span<std::byte> out) {
  { cs.words(m) } -> std::convertible_to<std::size_t>;
  {s.put(m, w, in)};
  {s.order(m)};
  {s.flush(m)};
  {s.flush_all()};
  { s.fetch_add(m, w, v) } -> std::same_as<std::uint64_t>;
  { s.load(w) } -> std::same_as<std::uint64_t>;
  { s.load_control(w) } -> std::same_as<std::uint64_t>;
  {s.read(w, out)};
  {s.get(m, w, out)};
  { cs.view(w, w) } -> std::same_as<std::span<const std::uint64_t>>;
  {s.sync()};
};

/// A transport context: one per member. Opt in with
/// `using policy_slot = dml::slot::transport;`.
///
/// - `rank()`, `size()`: this member's id and the size of the original group.
/// - `view()`: the current membership view.
/// - `alive(m)`: false once member m is known to have failed.
/// - `barrier()`: waits for every live member; throws `dml::peer_failure`
///   when a member it waits for has failed and `dml::timeout` past
///   `wait_limit()`.
/// - `exchange(record)`: collective; returns every live member's record,
///   indexed like `view().live`. Used to check that members agree.
/// - `create_segment(data_words, control_words)`: collective; sizes may
///   differ between members.
template <class C>
concept transport = detail::fills_slot_v<C, slot::transport> && segment<typename C::segment_type> &&
    requires(C& c, const C& cc, member_id m, std::size_t n, std::span<const std::byte> rec) {
  { cc.rank() } -> std::convertible_to<member_id>;
  { cc.size() } -> std::convertible_to<std::size_t>;
  { cc.view() } -> std::convertible_to<membership_view>;
  { cc.alive(m) } -> std::same_as<bool>;
  { cc.wait_limit() } -> std::convertible_to<std::chrono::steady_clock::duration>;
  {c.barrier()};
  { c.exchange(rec) } -> std::same_as<std::vector<std::vector<std::byte>>>;
  { c.create_segment(n, n) } -> std::same_as<typename C::segment_type>;
};

/// What `agree_on_survivors` reports: the view the survivors agreed on and
/// switched to, and how long the failure took to detect.
struct agreement {
  membership_view view;
  /// From the failure of the first member removed (as well as the transport
  /// can tell: the death of a thread, or the last heartbeat seen) to the
  /// agreed view; 0 when nothing changed.
  double detection_seconds = 0;
};

/// A transport whose group can shrink: besides moving bytes it detects
/// failures and offers one agreement primitive. Everything else about
/// failures (the policy, the view history, rebuilding vectors, the recover
/// loop) lives in dml/fault/membership.hpp.
///
/// - `check_view()`: throws `dml::peer_failure` when other members started
///   agreeing on a newer view (cheap: vectors call it in every wait).
/// - `agree_on_survivors(deadline)`: collective over the live members of
///   the current view; agrees with them on the view without every member
///   known or suspected to have failed, switches this context to it (new
///   group, segments of the old view left to die with it) and returns it.
///   Returns the current view at once when no failure is known. Throws
///   `dml::peer_failure` when this member was excluded and `dml::timeout`
///   past the deadline.
/// - `attributes()`: storage for the layers above (fault tolerance).
template <class C>
concept shrinkable_transport = transport<C> &&
    requires(C& c, const C& cc, std::chrono::steady_clock::time_point deadline) {
  {cc.check_view()};
  { c.agree_on_survivors(deadline) } -> std::same_as<agreement>;
  { c.attributes() } -> std::same_as<attributes&>;
  { cc.attributes() } -> std::same_as<const attributes&>;
};

}  // namespace comm
DML_END_NAMESPACE

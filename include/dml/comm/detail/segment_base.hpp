// SPDX-License-Identifier: BSL-1.0
/// @file
/// What every transport's segment handle shares: the move-only ownership of
/// one member's part, the shape of every member's part (data and control
/// words), and the checks of an access against them, with one wording of
/// their errors. Internal: the transports' `segment` classes derive from it.
#pragma once

#include <dml/error.hpp>
#include <dml/fwd.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <utility>
#include <vector>

DML_BEGIN_NAMESPACE
namespace detail::segment_impl {

/// Base of a transport's segment handle (CRTP, inherited privately).
///
/// @tparam Derived the segment; it befriends this base and provides
///   `static constexpr const char* who` (the transport's name in errors),
///   `member_id own() const` (this member's id), `void release() noexcept`
///   (frees what the handle holds; the destructor calls it) and
///   `void take(Derived&) noexcept` (moves its own members, the base's are
///   moved already). It may hide `check_member(m)`, called before member m's
///   part is looked up, to name a member that has none.
/// @tparam Context the transport context the handle points to (null: empty).
///
/// Everything here is non-virtual and inline: the checks cost what they
/// cost when each transport spelt them out.
template <class Derived, class Context>
class segment_base {
 public:
  segment_base(const segment_base&) = delete;
  segment_base& operator=(const segment_base&) = delete;

  /// Number of data words member m holds in this segment.
  [[nodiscard]] std::size_t words(member_id m) const { return data_words_.at(m); }
  /// Number of control words member m holds in this segment.
  [[nodiscard]] std::size_t control_words(member_id m) const { return control_words_.at(m); }

 protected:
  segment_base() = default;
  segment_base(segment_base&& o) noexcept
      : ctx_(std::exchange(o.ctx_, nullptr)),
        data_words_(std::move(o.data_words_)),
        control_words_(std::move(o.control_words_)) {}
  segment_base& operator=(segment_base&& o) noexcept {
    ctx_ = std::exchange(o.ctx_, nullptr);
    data_words_ = std::move(o.data_words_);
    control_words_ = std::move(o.control_words_);
    return *this;
  }
  ~segment_base() = default;

  /// The derived move assignment: releases what this handle holds, then
  /// takes o's (nothing on self-assignment).
  Derived& move_assign(Derived& o) noexcept {
    Derived& self = derived();
    if (&self != &o) {
      self.release();
      static_cast<segment_base&>(self) = std::move(static_cast<segment_base&>(o));
      self.take(o);
    }
    return self;
  }

  /// Throws `comm_error` unless the handle holds a segment.
  void require_handle() const {
    if (ctx_ == nullptr)
      throw comm_error(std::string(Derived::who) + ": use of an empty (moved-from) segment");
  }

  /// Throws `comm_error` unless `bytes` bytes from data word `word` on
  /// (a partial last word counts whole) lie in member m's part; never
  /// overflows, whatever word and bytes are.
  void check_range(member_id m, std::size_t word, std::size_t bytes) const {
    require_handle();
    derived().check_member(m);
    const std::size_t have = data_words_.at(m);
    // bytes / 8 rounded up without bytes + 7, which wraps near SIZE_MAX.
    if (word > have || bytes / 8 + (bytes % 8 != 0) > have - word) outside(m, word, bytes, "bytes", have);
  }

  /// check_range on this member's own part; an empty handle is refused
  /// before its context is asked for this member's id.
  void check_own_range(std::size_t word, std::size_t bytes) const {
    require_handle();
    check_range(derived().own(), word, bytes);
  }

  /// Throws `comm_error` unless `words` whole data words from `word` lie in
  /// this member's own part (view()): counted in words, so a huge count
  /// cannot wrap around as its size in bytes would.
  void check_own_words(std::size_t word, std::size_t words) const {
    require_handle();
    const member_id m = derived().own();
    const std::size_t have = data_words_.at(m);
    if (word > have || words > have - word) outside(m, word, words, "words", have);
  }

  /// Throws `comm_error` unless target holds control word `word`.
  void check_control(member_id target, std::size_t word) const {
    const std::size_t have = control_words_.at(target);
    if (word >= have)
      throw comm_error(std::string(Derived::who) + ": control word " + std::to_string(word) +
                       " is outside member " + std::to_string(target) + "'s " + std::to_string(have) +
                       " control words");
  }

  /// Throws `comm_error` unless this member holds control word `word`.
  void check_own_control(std::size_t word) const {
    require_handle();
    const std::size_t have = control_words_.at(derived().own());
    if (word >= have)
      throw comm_error(std::string(Derived::who) + ": control word " + std::to_string(word) +
                       " is outside the own " + std::to_string(have) + " control words");
  }

  /// Throws `peer_failure` naming target when the context holds it failed
  /// (`what` names the operation).
  void require_alive(member_id target, const char* what) const {
    require_handle();
    if (!ctx_->alive(target))
      throw peer_failure(target, std::string(Derived::who) + ": " + what + " to member " +
                                     std::to_string(target) + ", which has failed");
  }

  /// The default: every member id below the group size has a part.
  void check_member(member_id) const noexcept {}

  Context* ctx_ = nullptr;
  std::vector<std::size_t> data_words_;     // per member id; 0 for a member without a part
  std::vector<std::size_t> control_words_;  // per member id

 private:
  [[noreturn]] static void outside(member_id m, std::size_t word, std::size_t count, const char* unit,
                                   std::size_t have) {
    throw comm_error(std::string(Derived::who) + ": access of " + std::to_string(count) + " " + unit +
                     " at word " + std::to_string(word) + " is outside member " + std::to_string(m) +
                     "'s segment of " + std::to_string(have) + " words");
  }

  [[nodiscard]] Derived& derived() noexcept { return static_cast<Derived&>(*this); }
  [[nodiscard]] const Derived& derived() const noexcept { return static_cast<const Derived&>(*this); }
};

/// Copies `out.size()` bytes from the words at `src` with word-wise acquire
/// loads (a partial last word is cut): the local read of a segment whose
/// words others write concurrently. No consistency across words: callers
/// detect tearing.
inline void atomic_copy_out(std::span<std::byte> out, std::uint64_t* src) {
  const std::size_t full = out.size() / 8;
  for (std::size_t i = 0; i < full; ++i) {
    const std::uint64_t w = std::atomic_ref<std::uint64_t>(src[i]).load(std::memory_order_acquire);
    std::memcpy(out.data() + 8 * i, &w, 8);
  }
  if (const std::size_t tail = out.size() % 8; tail != 0) {
    const std::uint64_t w = std::atomic_ref<std::uint64_t>(src[full]).load(std::memory_order_acquire);
    std::memcpy(out.data() + 8 * full, &w, tail);
  }
}

}  // namespace detail::segment_impl
DML_END_NAMESPACE

// SPDX-License-Identifier: BSL-1.0
/// @file
/// A consistency policy chosen at run time among the built-in ones. A
/// program that picks the policy from its command line or a configuration
/// file builds one vector type instead of one per policy (each is a separate
/// instantiation of its training loop), at the cost of one branch per
/// scatter and gather.
#pragma once

#include <dml/consistency/adaptive.hpp>
#include <dml/consistency/asp.hpp>
#include <dml/consistency/asp_fresh.hpp>
#include <dml/consistency/bsp.hpp>
#include <dml/consistency/notify_ack.hpp>
#include <dml/consistency/ssp.hpp>
#include <dml/consistency/ssp_bounded.hpp>
#include <dml/fwd.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

DML_BEGIN_NAMESPACE
namespace consistency {

/// bsp, asp, ssp with a slack given at run time, notify_ack, MALT's
/// ssp_bounded (slack and stall) and asp_fresh (bound), or an adaptive policy (whose settings change during
/// the run, see consistency/adaptive.hpp), fixed for the life of the vector it is given to. It behaves
/// exactly as the policy it holds and names itself as that policy does ("ssp<2>"), so members that hold a
/// policy directly or through `any` agree when they build a vector.
///
///     dml::consistency::any c = slack == 0 ? dml::consistency::any(dml::consistency::bsp{})
///                                          : dml::consistency::any::ssp(slack);
class any {
 public:
  using policy_slot = slot::consistency;
  /// Which built-in policy is held.
  enum class kind { bsp, asp, ssp, notify_ack, adaptive, ssp_bounded, asp_fresh };

  /// Holds bsp, the vectors' default.
  any() noexcept = default;
  any(consistency::bsp) noexcept : kind_(kind::bsp) {}                // NOLINT(google-explicit-constructor)
  any(consistency::asp) noexcept : kind_(kind::asp) {}                // NOLINT(google-explicit-constructor)
  any(consistency::notify_ack) noexcept : kind_(kind::notify_ack) {}  // NOLINT(google-explicit-constructor)
  /// Holds an adaptive policy (a copy: each copy owns its state, so the
  /// vector's is read through `v.consistency().held_adaptive()`).
  any(consistency::adaptive a)  // NOLINT(google-explicit-constructor)
      : kind_(kind::adaptive), adaptive_(std::move(a)) {}
  template <std::uint64_t S>
  any(consistency::ssp<S>) noexcept : kind_(kind::ssp), slack_(S) {}  // NOLINT(google-explicit-constructor)
  template <std::uint64_t S>
  any(const consistency::ssp_bounded<S>& c) noexcept  // NOLINT(google-explicit-constructor)
      : kind_(kind::ssp_bounded), slack_(S), stall_(c.stall()) {}
  template <std::uint64_t B>
  // NOLINTNEXTLINE(google-explicit-constructor)
  any(consistency::asp_fresh<B>) noexcept : kind_(kind::asp_fresh), slack_(B) {}
  /// ssp with slack `s`, chosen at run time.
  [[nodiscard]] static any ssp(std::uint64_t s) noexcept {
    any a;
    a.kind_ = kind::ssp;
    a.slack_ = s;
    return a;
  }
  /// ssp_bounded with slack `s` and stall `stall`, chosen at run time
  /// (dml::config_error for a negative stall).
  [[nodiscard]] static any ssp_bounded(std::uint64_t s, std::chrono::milliseconds stall) {
    any a;
    a.kind_ = kind::ssp_bounded;
    a.slack_ = s;
    a.stall_ = detail::checked_stall(stall);
    return a;
  }
  /// asp_fresh with bound `b`, chosen at run time.
  [[nodiscard]] static any asp_fresh(std::uint64_t b) noexcept {
    any a;
    a.kind_ = kind::asp_fresh;
    a.slack_ = b;
    return a;
  }

  [[nodiscard]] kind held() const noexcept { return kind_; }
  /// The adaptive policy held, or nullptr.
  [[nodiscard]] const consistency::adaptive* held_adaptive() const noexcept {
    return adaptive_ ? &*adaptive_ : nullptr;
  }
  /// How many clocks an input may lag behind: the slack of ssp and
  /// ssp_bounded, the bound of asp_fresh; 0 for the others.
  [[nodiscard]] std::uint64_t slack() const noexcept { return slack_; }
  /// ssp_bounded's stall (0 for the others).
  [[nodiscard]] std::chrono::milliseconds stall() const noexcept { return stall_; }
  /// The held policy's name: "bsp", "asp", "ssp<S>", "notify_ack",
  /// "ssp_bounded<S,Nms>", "asp_fresh<B>" or the adaptive policy's.
  [[nodiscard]] DML_DECL std::string name() const;

  template <class P>
  void scatter(P& p) const {
    switch (kind_) {
      case kind::asp:
        return consistency::asp{}.scatter(p);
      case kind::ssp:
        return p.write_all_keeping_newest();  // as ssp<S>: write, no waiting
      case kind::notify_ack:
        return consistency::notify_ack{}.scatter(p);
      case kind::adaptive:
        return adaptive_->scatter(p);
      case kind::ssp_bounded:
        return p.write_all_keeping_newest();  // as ssp_bounded<S>
      case kind::asp_fresh:
        return p.write_destinations();  // as asp_fresh<B>
      case kind::bsp:
        break;
    }
    consistency::bsp{}.scatter(p);
  }
  template <class P>
  void gather(P& p) const {
    switch (kind_) {
      case kind::asp:
        return consistency::asp{}.gather(p);
      case kind::ssp:
        return detail::ssp_gather(p, slack_);
      case kind::notify_ack:
        return consistency::notify_ack{}.gather(p);
      case kind::adaptive:
        return adaptive_->gather(p);
      case kind::ssp_bounded:
        return detail::ssp_bounded_gather(p, slack_, stall_);
      case kind::asp_fresh:
        return detail::asp_fresh_gather(p, slack_);
      case kind::bsp:
        break;
    }
    consistency::bsp{}.gather(p);
  }

 private:
  kind kind_ = kind::bsp;
  std::uint64_t slack_ = 0;  // ssp, ssp_bounded: the slack; asp_fresh: the bound
  std::chrono::milliseconds stall_{0};
  std::optional<consistency::adaptive> adaptive_;
};

}  // namespace consistency
DML_END_NAMESPACE

#if !defined(DML_SEPARATE_COMPILATION)
#include <dml/consistency/impl/any.ipp>
#endif

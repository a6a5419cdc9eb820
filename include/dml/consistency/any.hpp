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
#include <dml/consistency/bsp.hpp>
#include <dml/consistency/notify_ack.hpp>
#include <dml/consistency/ssp.hpp>
#include <dml/fwd.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

DML_BEGIN_NAMESPACE
namespace consistency {

/// bsp, asp, ssp with a slack given at run time, notify_ack, or an
/// adaptive policy (whose settings change during the run, see
/// consistency/adaptive.hpp), fixed for the life of the vector it is given to. It behaves exactly as the
/// policy it holds and names itself as that policy does ("ssp<2>"), so members that hold a policy directly or
/// through `any` agree when they build a vector.
///
///     dml::consistency::any c = slack == 0 ? dml::consistency::any(dml::consistency::bsp{})
///                                          : dml::consistency::any::ssp(slack);
class any {
 public:
  using policy_slot = slot::consistency;
  /// Which built-in policy is held.
  enum class kind { bsp, asp, ssp, notify_ack, adaptive };

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
  /// ssp with slack `s`, chosen at run time.
  [[nodiscard]] static any ssp(std::uint64_t s) noexcept {
    any a;
    a.kind_ = kind::ssp;
    a.slack_ = s;
    return a;
  }

  [[nodiscard]] kind held() const noexcept { return kind_; }
  /// The adaptive policy held, or nullptr.
  [[nodiscard]] const consistency::adaptive* held_adaptive() const noexcept {
    return adaptive_ ? &*adaptive_ : nullptr;
  }
  /// The slack (0 unless ssp is held).
  [[nodiscard]] std::uint64_t slack() const noexcept { return slack_; }
  /// The held policy's name: "bsp", "asp", "ssp<S>" or "notify_ack".
  [[nodiscard]] std::string name() const {
    switch (kind_) {
      case kind::asp:
        return std::string(consistency::asp::name());
      case kind::ssp:
        return "ssp<" + std::to_string(slack_) + ">";
      case kind::notify_ack:
        return std::string(consistency::notify_ack::name());
      case kind::adaptive:
        return adaptive_->name();
      case kind::bsp:
        break;
    }
    return std::string(consistency::bsp::name());
  }

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
      case kind::bsp:
        break;
    }
    consistency::bsp{}.gather(p);
  }

 private:
  kind kind_ = kind::bsp;
  std::uint64_t slack_ = 0;
  std::optional<consistency::adaptive> adaptive_;
};

}  // namespace consistency
DML_END_NAMESPACE

// SPDX-License-Identifier: BSL-1.0
/// @file
/// How far the built-in consistency policies let a member's clock run
/// ahead of an in-neighbour's (dist_vector::join needs it to end every
/// member on the same clock).
#pragma once

#include <dml/consistency/any.hpp>
#include <dml/fwd.hpp>

#include <cstdint>
#include <optional>

DML_BEGIN_NAMESPACE
namespace detail {

/// `of(policy)`: the slack S of a policy whose gather waits for updates at
/// most S clocks old (0 for bsp and notify_ack), or nothing for a policy
/// that never waits (asp). `known` is false for policies not listed here.
template <class Consistency>
struct join_slack {
  static constexpr bool known = false;
};
template <>
struct join_slack<consistency::bsp> {
  static constexpr bool known = true;
  static std::optional<std::uint64_t> of(const consistency::bsp&) { return 0; }
};
template <>
struct join_slack<consistency::notify_ack> {
  static constexpr bool known = true;
  static std::optional<std::uint64_t> of(const consistency::notify_ack&) { return 0; }
};
template <std::uint64_t S>
struct join_slack<consistency::ssp<S>> {
  static constexpr bool known = true;
  static std::optional<std::uint64_t> of(const consistency::ssp<S>&) { return S; }
};
template <>
struct join_slack<consistency::asp> {
  static constexpr bool known = true;
  static std::optional<std::uint64_t> of(const consistency::asp&) { return std::nullopt; }
};
// ssp_bounded: a stall that runs out lets a member run ahead of a lagging
// neighbour without bound, and asp_fresh never waits: join takes asp's path.
template <std::uint64_t S>
struct join_slack<consistency::ssp_bounded<S>> {
  static constexpr bool known = true;
  static std::optional<std::uint64_t> of(const consistency::ssp_bounded<S>&) { return std::nullopt; }
};
template <std::uint64_t B>
struct join_slack<consistency::asp_fresh<B>> {
  static constexpr bool known = true;
  static std::optional<std::uint64_t> of(const consistency::asp_fresh<B>&) { return std::nullopt; }
};
// adaptive: its agreement every `every` clocks keeps members within that
// many clocks even under asp, and its members must go on scattering (the
// agreement is collective), so join takes the path of the slack policies.
template <>
struct join_slack<consistency::adaptive> {
  static constexpr bool known = true;
  static std::optional<std::uint64_t> of(const consistency::adaptive& c) { return c.drift_bound(); }
};
template <>
struct join_slack<consistency::any> {
  static constexpr bool known = true;
  static std::optional<std::uint64_t> of(const consistency::any& c) {
    if (const auto* a = c.held_adaptive()) return a->drift_bound();
    using kind = consistency::any::kind;
    if (c.held() == kind::asp || c.held() == kind::ssp_bounded || c.held() == kind::asp_fresh)
      return std::nullopt;
    return c.slack();
  }
};

}  // namespace detail
DML_END_NAMESPACE

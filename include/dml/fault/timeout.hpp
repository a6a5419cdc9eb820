// SPDX-License-Identifier: BSL-1.0
/// @file
/// The adaptive timeout: a context's wait limit (and, over MPI, its
/// heartbeat timeout) follows the measured time of a training round instead
/// of staying at a fixed value, after the dynamic timeout of ASAP §5. Off
/// by default; `set_adaptive_timeout(comm, settings)` or the environment
/// variable `DML_ADAPTIVE_TIMEOUT` turns it on for one context.
///
/// The rule: every vector built on the context reports, after each gather,
/// the time since its previous gather ended (one round: the caller's
/// computation plus scatter and gather). The estimate is the largest of the
/// last `window` such times, and the timeout is
///
///     T = clamp(factor x estimate, floor, ceiling)
///
/// (the ceiling while nothing is measured yet). T becomes the context's
/// wait limit; on transports with heartbeats, T / 2 becomes the heartbeat
/// timeout, so that a silent member is suspected (a failure the recovery
/// handles) well before a wait on it gives up with `dml::timeout` (which it
/// does not). The whole recovery (agreement plus rebuild) stays bounded by
/// the ceiling.
///
/// The state lives in the context's attributes (dml/comm/attributes.hpp),
/// one per context, fed by every vector of it: the wait limit and the
/// heartbeat belong to the context, and a member's rounds take the same
/// time whichever vector measures them.
#pragma once

#include <dml/comm/attributes.hpp>
#include <dml/error.hpp>
#include <dml/fwd.hpp>

#include <algorithm>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

DML_BEGIN_NAMESPACE
namespace fault {

/// A transport context whose timeouts can adapt: it keeps attributes (the
/// estimator lives there) and lets its wait limit be changed (inproc,
/// mpi_rma, mpi, comm::any; verbs has no attributes).
template <class Comm>
concept adaptable_transport = requires(Comm& c, std::chrono::steady_clock::duration d) {
  { c.attributes() } -> std::same_as<comm::attributes&>;
  { c.wait_limit() } -> std::convertible_to<std::chrono::steady_clock::duration>;
  c.set_wait_limit(d);
};

/// Settings of the adaptive timeout (see the file comment for the rule).
struct adaptive_timeout {
  /// T = factor x estimate before clamping: how many times the longest
  /// recent round a wait may take. At least 1.
  double factor = 10;
  /// The shortest T: protects against false suspicion when rounds are very
  /// fast (scheduling pauses, a page fault, a loaded machine).
  std::chrono::milliseconds floor{1000};
  /// The longest T: bounds how long a dead or hung member can go unnoticed,
  /// and bounds a whole recovery. Also T before anything is measured.
  std::chrono::milliseconds ceiling{60'000};
  /// Rounds the estimate remembers: it is the longest of the last `window`
  /// round times, so it rises at once and falls only when a slow phase has
  /// passed for that many rounds.
  std::size_t window = 32;

  /// Throws `dml::config_error` naming the bad setting.
  DML_DECL void validate(const char* who = "dml::fault::adaptive_timeout") const;
};

/// The estimator alone, without a context: feed it round times with
/// `observe`, read the timeout with `timeout()`. Whatever it is fed, the
/// timeout stays in [floor, ceiling]: a zero, negative or NaN time counts
/// as nothing measured (zero), an infinite or huge one gives the ceiling.
class timeout_estimator {
 public:
  using duration = std::chrono::steady_clock::duration;

  DML_DECL explicit timeout_estimator(adaptive_timeout s = {});

  /// One round took `seconds`.
  DML_DECL void observe(double seconds);

  /// The estimate in seconds: the longest of the last `window` rounds (0
  /// before the first).
  [[nodiscard]] double estimate() const noexcept {
    double m = 0;
    for (double x : recent_) m = std::max(m, x);
    return m;
  }
  /// Rounds observed so far.
  [[nodiscard]] std::uint64_t samples() const noexcept { return samples_; }
  /// T = clamp(factor x estimate, floor, ceiling); the ceiling before the
  /// first round.
  [[nodiscard]] DML_DECL duration timeout() const;
  [[nodiscard]] const adaptive_timeout& settings() const noexcept { return s_; }

 private:
  adaptive_timeout s_;
  std::vector<double> recent_;  // a ring of the last `window` round times
  std::size_t next_ = 0;
  std::uint64_t samples_ = 0;
};

/// What `timeouts(comm)` reports: the timeouts in force and, when the
/// adaptive timeout is on, what they came from.
struct timeout_report {
  bool adaptive = false;                             ///< the adaptive timeout is on for this context
  double estimate_seconds = 0;                       ///< the longest recent round (adaptive only)
  std::uint64_t samples = 0;                         ///< rounds measured (adaptive only)
  std::chrono::steady_clock::duration wait_limit{};  ///< the context's wait limit now
  /// The heartbeat timeout now; zero on transports without heartbeats
  /// (in-process, verbs).
  std::chrono::steady_clock::duration heartbeat_timeout{};
};

namespace detail {

/// The per-context state (in the context's attributes).
struct timeout_state {
  std::optional<timeout_estimator> estimator;     // empty: fixed timeouts
  std::chrono::steady_clock::duration applied{};  // the T last given to the context
};

/// DML_ADAPTIVE_TIMEOUT: unset, empty or "off": fixed timeouts; "on": the
/// default settings; "FLOOR_MS:CEILING_MS" or "FLOOR_MS:CEILING_MS:FACTOR".
DML_DECL std::optional<adaptive_timeout> adaptive_timeout_from_env(const char* who);

// Turning it on: the heartbeat timeout may come down to floor / 2 on any
// member, so this member's heartbeat beats often enough for that from now
// on (the monitor keeps the shortest period it was given).
template <adaptable_transport Comm>
void prepare_heartbeat(Comm& comm, const adaptive_timeout& s) {
  if constexpr (requires { comm.set_heartbeat_timeout(s.floor); }) comm.set_heartbeat_timeout(s.floor / 2);
}

template <adaptable_transport Comm>
void apply_timeout(Comm& comm, std::chrono::steady_clock::duration t) {
  comm.set_wait_limit(t);
  if constexpr (requires { comm.set_heartbeat_timeout(t); }) comm.set_heartbeat_timeout(t / 2);
}

/// The state of `comm`, made on first use (from DML_ADAPTIVE_TIMEOUT).
template <adaptable_transport Comm>
std::shared_ptr<timeout_state> timeout_state_of(Comm& comm) {
  if (auto s = comm.attributes().template find<timeout_state>()) return s;
  auto made = comm.attributes().template get_or_create<timeout_state>(
      [] { return std::make_shared<timeout_state>(); });
  if (auto s = adaptive_timeout_from_env("dml::fault")) {
    made->estimator.emplace(*s);
    prepare_heartbeat(comm, *s);
    made->applied = made->estimator->timeout();
    apply_timeout(comm, made->applied);
  }
  return made;
}

}  // namespace detail

/// Turns the adaptive timeout on for `comm` (this member only: each member
/// measures and sets its own timeouts; turn it on everywhere for the same
/// behaviour everywhere). Starts at the ceiling, with nothing measured.
/// Bad settings are a `dml::config_error`.
template <adaptable_transport Comm>
void set_adaptive_timeout(Comm& comm, const adaptive_timeout& settings) {
  settings.validate("dml::fault::set_adaptive_timeout");
  auto s = detail::timeout_state_of(comm);
  s->estimator.emplace(settings);
  detail::prepare_heartbeat(comm, settings);
  s->applied = s->estimator->timeout();
  detail::apply_timeout(comm, s->applied);
}

/// Turns the adaptive timeout off: the timeouts now in force stay until
/// the caller sets others (`set_wait_limit`, `set_heartbeat_timeout`).
template <adaptable_transport Comm>
void set_fixed_timeout(Comm& comm) {
  detail::timeout_state_of(comm)->estimator.reset();
}

/// The adaptive timeout's settings on `comm`, or nothing when it is off.
template <adaptable_transport Comm>
[[nodiscard]] std::optional<adaptive_timeout> adaptive_timeout_of(Comm& comm) {
  const auto s = detail::timeout_state_of(comm);
  if (!s->estimator) return std::nullopt;
  return s->estimator->settings();
}

/// One round of this member took `seconds`: vectors call it after each
/// gather; a loop without vectors (tables, schedules) may call it itself.
/// Nothing happens while the adaptive timeout is off.
template <adaptable_transport Comm>
void observe_round(Comm& comm, double seconds) {
  const auto s = detail::timeout_state_of(comm);
  if (!s->estimator) return;
  s->estimator->observe(seconds);
  const auto t = s->estimator->timeout();
  if (t != s->applied) {
    s->applied = t;
    detail::apply_timeout(comm, t);
  }
}

/// The timeouts in force on `comm` and, when adaptive, the estimate.
template <adaptable_transport Comm>
[[nodiscard]] timeout_report timeouts(Comm& comm) {
  timeout_report r;
  const auto s = detail::timeout_state_of(comm);
  if (s->estimator) {
    r.adaptive = true;
    r.estimate_seconds = s->estimator->estimate();
    r.samples = s->estimator->samples();
  }
  r.wait_limit = comm.wait_limit();
  if constexpr (requires { comm.heartbeat_timeout(); }) r.heartbeat_timeout = comm.heartbeat_timeout();
  return r;
}

/// How long a whole recovery (agreement plus rebuild) may take on `comm`:
/// the wait limit, or the adaptive timeout's ceiling if that is longer (a
/// recovery is rare and waits for members still computing).
template <adaptable_transport Comm>
[[nodiscard]] std::chrono::steady_clock::duration recovery_limit(Comm& comm) {
  const auto s = detail::timeout_state_of(comm);
  const std::chrono::steady_clock::duration limit = comm.wait_limit();
  if (!s->estimator) return limit;
  return std::max<std::chrono::steady_clock::duration>(limit, s->estimator->settings().ceiling);
}

}  // namespace fault
DML_END_NAMESPACE

#if !defined(DML_SEPARATE_COMPILATION)
#include <dml/fault/impl/timeout.ipp>
#endif

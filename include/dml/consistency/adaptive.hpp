// SPDX-License-Identifier: BSL-1.0
/// @file
/// A consistency policy whose mode (bsp, ssp with a slack, asp) and
/// communication period change during the run, switched by every member at
/// the same agreed clock. docs/adaptive.md describes the agreement, what it
/// costs and the controller that drives it.
#pragma once

#include <dml/consistency/asp.hpp>
#include <dml/consistency/bsp.hpp>
#include <dml/consistency/controller.hpp>
#include <dml/consistency/ssp.hpp>
#include <dml/error.hpp>
#include <dml/fwd.hpp>
#include <dml/vector/stats.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

DML_BEGIN_NAMESPACE
namespace consistency {

/// What an adaptive policy is built with; all of it is part of its name,
/// which members compare when they build a vector.
struct adaptive_options {
  /// Clocks per decision window: the members agree at the scatter of clocks
  /// every + 1, 2 every + 1, ...; the decision holds from that clock on.
  std::uint64_t every = 16;
  /// When not 0, the first windows are shorter, so that the first decisions
  /// come early: the first window (a warm-up: it holds the construction,
  /// and the controller decides nothing from it) and the next one hold
  /// `first_window` clocks, each next one twice as many, up to `every` (1
  /// and 8: agreements at clocks 2, 3, 5, 9, 17, 25, ...).
  std::uint64_t first_window = 0;
  /// The settings of the first window.
  adaptive_settings start{};
  /// The rule's thresholds (used when `rule` is empty).
  controller_options control{};
  /// A rule of the caller's instead of the controller: the next settings
  /// from every member's observation and the current settings. It must be
  /// deterministic (every member evaluates it on the same input), and
  /// `rule_name` must name it (it goes into the policy's name).
  std::function<adaptive_settings(std::span<const window_observation>, const adaptive_settings&)> rule{};
  std::string rule_name{};
};

/// The run-time switchable sibling of consistency::any: bsp, ssp(s) or asp,
/// and a communication period, changed during the run by a controller (or
/// by proposals of the caller's), every member switching at the same clock.
///
/// Agreement: at the scatter of every clock t = k x every + 1 (k >= 1),
/// before anything of clock t is written, every member runs one collective
/// exchange over the transport with the settings it holds, its observation
/// of the window (deltas of its vector_stats and the mean loss its trainer
/// reported) and its proposal, if any. Every member then evaluates the same
/// deterministic rule on the same records: the proposal of the lowest live
/// member that made one, else the controller's decision. The result governs
/// the scatters and gathers of clocks t .. t + every - 1 on every member, so
/// no gather combines under different rules on different members for the
/// same clock: the clock-t update is written only after the exchange, and
/// every member finished its gather of clock t - 1 before entering it.
/// Members that disagree on the settings they hold (which the agreement
/// rules out) or on the clock throw `dml::comm_error` instead of going on.
///
/// Cost: the exchange waits for every live member, so it is a barrier every
/// `every` clocks, also while the mode is asp (whose members then drift at
/// most `every` clocks apart instead of without bound). A member that fails
/// during it makes the transport's exchange throw `dml::peer_failure`,
/// which the vector handles as in any other step: the survivors agree on a
/// new view and the scatter is made again, agreement included (with
/// `fault::policy::abort` the peer_failure reaches the caller).
///
/// Each copy of the policy owns its state (copies do not share it), so the
/// state the caller reads and drives is the vector's own: `v.consistency()`.
/// The agreement runs inside scatter(); after scatter_async() read or drive
/// the state only once wait() or gather() returned.
///
///     auto v = dml::make_vector<float>(comm, n, dml::consistency::adaptive{});
///     ...
///     v.consistency().report_loss(loss);       // optional: the trainer's loss
///     auto period = v.consistency().period();  // steps between exchanges
class adaptive {
 public:
  using policy_slot = slot::consistency;

  /// One change of the settings: effective from the scatter of `clock`.
  struct change {
    std::uint64_t clock;
    adaptive_settings settings;
    friend bool operator==(const change&, const change&) = default;
  };

  /// The settings of each gather, when tracing is on (set_trace).
  struct traced_gather {
    std::uint64_t clock;
    adaptive_settings settings;
    friend bool operator==(const traced_gather&, const traced_gather&) = default;
  };

  /// Starts in bsp, agrees every 16 clocks, the controller's default rule.
  adaptive() : adaptive(adaptive_options{}) {}
  DML_DECL explicit adaptive(adaptive_options o);
  DML_DECL adaptive(const adaptive& o);
  DML_DECL adaptive& operator=(const adaptive& o);
  adaptive(adaptive&&) noexcept = default;
  adaptive& operator=(adaptive&&) noexcept = default;
  ~adaptive() = default;

  /// What members compare: the window, the first settings and the rule;
  /// never the current settings.
  [[nodiscard]] DML_DECL std::string name() const;
  [[nodiscard]] const adaptive_options& options() const noexcept { return s_->opts; }

  /// The settings in effect (for the clock of the last scatter).
  [[nodiscard]] adaptive_settings current() const noexcept { return s_->current; }
  /// This member's period: how many local steps to take between two
  /// exchanges (current().period, times the member's share when the
  /// settings are balanced).
  [[nodiscard]] std::uint64_t period() const noexcept { return s_->my_period; }
  /// Whether the members agree at the scatter of clock t (t > 1).
  [[nodiscard]] DML_DECL bool agrees_at(std::uint64_t t) const noexcept;
  /// Every change so far, in clock order.
  [[nodiscard]] const std::vector<change>& changes() const noexcept { return s_->changes; }
  /// Proposes settings for the next agreement (the lowest live member's
  /// proposal wins; proposals override the controller). Consumed by it.
  DML_DECL void propose(adaptive_settings s) const;
  /// The trainer's loss, averaged over the window (optional; the controller
  /// tightens the mode when it rises).
  DML_DECL void report_loss(double loss) const;
  /// Records the settings of every gather (for tests).
  void set_trace(bool on) const { s_->trace = on; }
  [[nodiscard]] const std::vector<traced_gather>& trace() const noexcept { return s_->traced; }
  /// The slack that bounds how far members drift apart (dist_vector::join):
  /// an agreement every `every` clocks bounds it even under asp.
  [[nodiscard]] std::uint64_t drift_bound() const noexcept {
    return std::max(s_->opts.every, std::max(s_->opts.control.max_slack, s_->current.slack));
  }

  template <class P>
  void scatter(P& p) const {
    const std::uint64_t t = p.clock();
    if (s_->agreed_at != t && agrees_at(t)) agree(p, t);
    switch (s_->current.mode) {
      case adaptive_mode::bsp:
        return consistency::bsp{}.scatter(p);
      case adaptive_mode::ssp:
      case adaptive_mode::asp:
        break;
    }
    p.write_all();
  }
  template <class P>
  void gather(P& p) const {
    const adaptive_settings& now = s_->current;
    if (s_->trace) s_->traced.push_back({p.clock(), now});
    switch (now.mode) {
      case adaptive_mode::asp:
        return consistency::asp{}.gather(p);
      case adaptive_mode::ssp:
        return detail::ssp_gather(p, now.slack);
      case adaptive_mode::bsp:
        break;
    }
    consistency::bsp{}.gather(p);
  }

 private:
  struct state {
    adaptive_options opts;
    std::optional<controller> brain;
    adaptive_settings current;
    std::uint64_t my_period = 1;  // current.period times this member's share
    std::optional<adaptive_settings> proposal;
    std::uint64_t agreed_at = 0;  // the clock of the last agreement (a scatter made again skips it)
    // vector_stats at the start of the window
    double compute0 = 0, exchange0 = 0, wait0 = 0;
    std::uint64_t gathers0 = 0, full0 = 0;
    double loss_sum = 0;
    std::uint64_t loss_count = 0;
    std::vector<change> changes;
    bool trace = false;
    std::vector<traced_gather> traced;
  };

  // The agreement record, sent as bytes.
  struct record {
    std::uint64_t clock;
    std::uint64_t mode, slack, period, balanced;  // the settings held
    std::uint64_t proposed;                       // 1: a proposal follows
    std::uint64_t p_mode, p_slack, p_period, p_balanced;
    std::uint64_t clocks, full_gathers, steps;
    double compute, exchange, wait, loss;
  };

  DML_DECL static adaptive_settings normal(adaptive_settings s);
  DML_DECL static adaptive_settings settings_of(std::uint64_t mode, std::uint64_t slack, std::uint64_t period,
                                                std::uint64_t balanced);
  // This member's record for the agreement at clock t.
  DML_DECL record record_of(const vector_stats& st, std::uint64_t t) const;
  // Every member's record in (in `live` order): checks that all hold the
  // same settings at the same clock, takes the decision and opens the next
  // window. `wait_before` is the wait time before the agreement's exchange.
  DML_DECL void conclude(const std::vector<std::vector<std::byte>>& all, const std::vector<member_id>& live,
                         member_id me, std::uint64_t t, const record& mine, const vector_stats& st,
                         double wait_before) const;

  template <class P>
  void agree(P& p, std::uint64_t t) const {
    const vector_stats& st = p.stats();
    const record mine = record_of(st, t);
    const double wait_before = st.wait_seconds;  // the agreement's wait belongs to the new window
    const auto all =
        p.exchange(std::as_bytes(std::span(&mine, 1)));  // may throw peer_failure: nothing changed
    conclude(all, p.live(), p.rank(), t, mine, st, wait_before);
  }

  std::shared_ptr<state> s_;
};

}  // namespace consistency
DML_END_NAMESPACE

#if !defined(DML_SEPARATE_COMPILATION)
#include <dml/consistency/impl/adaptive.ipp>
#endif

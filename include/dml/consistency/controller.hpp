// SPDX-License-Identifier: BSL-1.0
/// @file
/// The rule that drives consistency::adaptive: from what every member
/// measured over the last decision window (its vector's statistics and the
/// loss its trainer reported) to the mode, slack and communication period
/// of the next window. A pure function of its inputs and of the controller's
/// own memory, so every member that evaluates it on the same records takes
/// the same decision. docs/adaptive.md explains the rule and its reasons.
#pragma once

#include <dml/fwd.hpp>

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

DML_BEGIN_NAMESPACE
namespace consistency {

/// How members of an adaptive vector wait for each other.
enum class adaptive_mode : std::uint8_t { bsp = 0, ssp = 1, asp = 2 };

/// The values an adaptive vector may change during its run. `slack` matters
/// under ssp only; `period` is advice to the trainer: how many local steps
/// to take between two exchanges (the vector does not enforce it).
/// `balanced`: members take local steps in proportion to their speed
/// between two exchanges -- each member's period is `period` times its
/// share (controller::shares), so a member k times faster than the slowest
/// takes about k times its steps and nobody waits for the slowest at each
/// clock. Only for programs whose members may do unequal amounts of work
/// (training for a time budget); the shares are computed by every member
/// from the same agreement records.
struct adaptive_settings {
  adaptive_mode mode = adaptive_mode::bsp;
  std::uint64_t slack = 0;
  std::uint64_t period = 1;
  bool balanced = false;
  friend bool operator==(const adaptive_settings&, const adaptive_settings&) = default;
  /// "bsp", "ssp(2)" or "asp", then "/period 3" when the period is not 1
  /// and "/balanced" when it is balanced.
  [[nodiscard]] DML_DECL std::string text() const;
};

/// What one member measured over one decision window: deltas of its
/// vector_stats, and the mean loss its trainer reported (NaN: none).
struct window_observation {
  double compute_seconds = 0;   ///< the caller's own work between exchanges
  double exchange_seconds = 0;  ///< inside scatter/gather (waits included)
  double wait_seconds = 0;      ///< blocked in barriers, waits and the agreement
  std::uint64_t clocks = 0;     ///< gathers in the window
  std::uint64_t full_gathers = 0;
  /// Local steps in the window: clocks x the member's own period (0: not
  /// known, taken as clocks x the settings' period).
  std::uint64_t steps = 0;
  double loss = std::numeric_limits<double>::quiet_NaN();
};

/// The thresholds of the rule (docs/adaptive.md). Every member must use the
/// same; adaptive puts them into its name, which members compare.
struct controller_options {
  /// A member whose compute time per clock is this many times the median's
  /// is a straggler: the slack widens.
  double straggler_ratio = 1.5;
  /// Below this ratio the group is balanced again: the slack narrows (when
  /// nobody waits much either).
  double balanced_ratio = 1.2;
  /// The median member waiting (barriers, waits, the agreement) for more
  /// than this share of its time also widens the slack: stragglers that
  /// change from step to step raise no member's mean compute time, but
  /// under bsp everybody waits for whoever is slow at each clock.
  double wait_high = 0.25;
  /// Below this waiting share (and the balanced ratio) the slack narrows.
  double wait_low = 0.05;
  /// The reported loss rising by more than this fraction from one window
  /// to the next means the replicas drift apart: the mode tightens.
  double loss_rise = 0.1;
  /// Exchanging (scatter and gather, waits included) above this share of
  /// the median member's time lengthens the period (doubles it); below
  /// `comm_low` shortens it (halves it).
  double comm_high = 0.5;
  double comm_low = 0.15;
  /// A relaxation (a longer period, a wider slack) is a trial: kept when
  /// the median member's time per local step in its first window is at
  /// least this fraction below the window before, else reverted, and no
  /// relaxation is tried again for `hold_windows` windows.
  double min_gain = 0.05;
  std::uint64_t hold_windows = 4;
  std::uint64_t max_slack = 8;
  std::uint64_t max_period = 8;
  /// Whether the rule may choose asp (a straggler beyond what max_slack
  /// covers); off by default: bounded staleness keeps accuracy.
  bool allow_asp = false;
  /// Whether the rule may balance the periods (adaptive_settings::balanced)
  /// when one member's compute time per local step is `straggler_ratio`
  /// times the median's. Only for programs whose members may take unequal
  /// numbers of local steps (a time budget, not a fixed share of the data
  /// per epoch): off by default.
  bool balance = false;
  /// The largest share a balanced member gets (its period is at most this
  /// many times the settings' period), also when a caller's rule chose the
  /// balanced settings.
  std::uint64_t max_share = 8;

  /// The options as text, for the policy's name.
  [[nodiscard]] DML_DECL std::string text() const;
};

/// The rule. `decide` is called once per window with every live member's
/// observation (in the same order on every member) and the settings that
/// were in effect; it returns the settings of the next window. The only
/// state it keeps is the previous window's loss.
class controller {
 public:
  controller() = default;
  explicit controller(controller_options o) : o_(o) {}
  [[nodiscard]] const controller_options& options() const noexcept { return o_; }

  /// Compute time per local step of the slowest member over the median's (1
  /// when nobody measured anything). `period`: the settings' period, for
  /// observations that do not carry their steps.
  [[nodiscard]] DML_DECL static double imbalance(std::span<const window_observation> obs,
                                                 std::uint64_t period = 1);
  /// Compute time per clock of the slowest member over the median's: what
  /// a member waits for at each clock (equal to imbalance() when every
  /// member takes the same steps per clock; near 1 once balanced).
  [[nodiscard]] DML_DECL static double clock_imbalance(std::span<const window_observation> obs);
  /// Every member's share under balanced settings, in the observations'
  /// order: the slowest member's compute time per local step over the
  /// member's, rounded, from 1 to `max_share` (1 for a member that
  /// measured nothing).
  [[nodiscard]] DML_DECL static std::vector<std::uint64_t> shares(std::span<const window_observation> obs,
                                                                  std::uint64_t period,
                                                                  std::uint64_t max_share);
  /// The median member's share of time spent exchanging, waits included
  /// (exchange / (exchange + compute), as vector_stats::communication_share).
  [[nodiscard]] DML_DECL static double exchange_share(std::span<const window_observation> obs);
  /// The median member's share of time spent waiting (wait / (exchange +
  /// compute)).
  [[nodiscard]] DML_DECL static double wait_share(std::span<const window_observation> obs);
  /// The mean of the reported losses (NaN when nobody reported one).
  [[nodiscard]] DML_DECL static double mean_loss(std::span<const window_observation> obs);
  /// The median member's time per clock (its compute and exchange time,
  /// waits included, over its clocks).
  [[nodiscard]] DML_DECL static double time_per_clock(std::span<const window_observation> obs);
  /// The median member's time per local step (its compute and exchange
  /// time, waits included, over its steps): what a relaxation should lower.
  [[nodiscard]] DML_DECL static double time_per_step(std::span<const window_observation> obs,
                                                     std::uint64_t period);

  /// The settings of the next window.
  [[nodiscard]] DML_DECL adaptive_settings decide(std::span<const window_observation> obs,
                                                  adaptive_settings now);

 private:
  struct trial {
    double per_step;  // the median member's time per local step, in the window before
    adaptive_settings before;
  };
  DML_DECL static std::uint64_t max_clocks(std::span<const window_observation> obs);
  // Whether b waits less than a (a larger slack, or asp) or exchanges less
  // often.
  DML_DECL static bool relaxes(const adaptive_settings& a, const adaptive_settings& b);
  // Enough slack that the others need not block inside a window.
  DML_DECL adaptive_settings wider(adaptive_settings now, double ratio, double waiting,
                                   std::uint64_t clocks) const;
  // One step towards bsp: asp -> ssp(max_slack), ssp(s) -> ssp(s / 2), ssp(1) -> bsp.
  DML_DECL adaptive_settings tighter(adaptive_settings s) const;

  controller_options o_;
  double last_loss_ = std::numeric_limits<double>::quiet_NaN();
  std::optional<trial> trial_;  // the mode was relaxed at the last decision
  std::uint64_t hold_ = 0;      // windows left before the mode may relax again
  bool warm_ = false;           // the first window was seen
};

}  // namespace consistency
DML_END_NAMESPACE

#if !defined(DML_SEPARATE_COMPILATION)
#include <dml/consistency/impl/controller.ipp>
#endif

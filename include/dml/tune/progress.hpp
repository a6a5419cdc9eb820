// SPDX-License-Identifier: BSL-1.0
/// @file
/// The progress summarizer of online tuning: it reads a branch's loss trace
/// (one loss per clock, with the time each was taken) and says how fast and
/// how steadily the loss falls.
///
/// The trace is cut into K equal windows (K = 10 by default) and each
/// window is replaced by the mean of its points, which averages away the
/// minibatch noise of single losses. From the K window means x_1..x_K at
/// mean times t_1..t_K:
///
///     range = x_K - x_1                  (negative when the loss fell)
///     noise = max(0, max_i x_{i+1} - x_i)  (the largest rise between windows)
///     speed = max(0, (-range - noise) / (t_K - t_1))
///
/// and the label is
/// - `diverged` when any loss or time is NaN or infinite (an overflowed
///   model),
/// - `converging` when range < 0 and noise < epsilon x |range| (epsilon =
///   1/K by default: no window rises by more than a straight descent would
///   fall per window),
/// - `unstable` otherwise: the trial may be too short to tell, or the
///   setting makes no progress.
///
/// The summary is a pure function of the trace, so members that summarize
/// the same (agreed) trace reach the same label and speed to the bit.
#pragma once

#include <dml/error.hpp>
#include <dml/fwd.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

DML_BEGIN_NAMESPACE
namespace tune {

/// What the summarizer says of a branch.
enum class label { converging, unstable, diverged };

/// "converging", "unstable" or "diverged".
[[nodiscard]] constexpr std::string_view to_string(label l) noexcept {
  switch (l) {
    case label::converging:
      return "converging";
    case label::diverged:
      return "diverged";
    case label::unstable:
      break;
  }
  return "unstable";
}

/// The summarizer's two knobs.
struct summarizer_options {
  /// Windows the trace is cut into (K >= 2). A trace of fewer points than K
  /// uses one window per point.
  std::size_t windows = 10;
  /// A converging trace rises between two windows by less than epsilon x
  /// |range|; 0 means 1 / windows.
  double epsilon = 0;
};

/// The summary of one trace.
struct summary {
  tune::label verdict = tune::label::unstable;
  /// (-range - noise) / elapsed, at least 0; 0 for a diverged trace.
  double speed = 0;
  /// Last window's mean minus the first's.
  double range = 0;
  /// Largest rise from one window to the next, at least 0.
  double noise = 0;
  /// Time from the first window's mean time to the last's.
  double elapsed = 0;
  /// Mean loss of the last window (the branch's current loss).
  double last = 0;
};

/// Summarizes the trace `loss[i]` taken at `time[i]` (times ascending, in
/// any unit; speeds are per that unit). Throws `dml::config_error` when the
/// two spans differ in length or the options are out of range. A trace of
/// fewer than two points is `unstable` with speed 0 (too short to tell),
/// unless a value in it is not finite.
[[nodiscard]] inline summary summarize(std::span<const double> loss, std::span<const double> time,
                                       const summarizer_options& o = {});

/// Summarizes a branch's trace from the point it was forked at: as
/// `summarize`, but with the loss `origin` at time `origin_time` as an extra
/// window x_0 in front of the K windows of the trace. The range is then
/// x_K - origin, the noise counts a rise from the origin to the first
/// window too, and the speed is the fall per unit of time since the fork.
///
/// Branches forked from the same state share the origin, so a setting that
/// drops the loss within its first window keeps that drop in its range
/// (measured from the first window, it would be lost, and a slowly falling
/// trace would rank above one that already reached a lower loss).
[[nodiscard]] inline summary summarize_from(double origin, double origin_time, std::span<const double> loss,
                                            std::span<const double> time, const summarizer_options& o = {}) {
  summary s = summarize(loss, time, o);
  if (s.verdict == label::diverged) return s;
  if (!std::isfinite(origin) || !std::isfinite(origin_time)) {
    s = {};
    s.verdict = label::diverged;
    return s;
  }
  if (loss.empty()) return s;
  s.verdict = label::unstable;
  s.speed = 0;
  // The first window's mean (the same cut as summarize's).
  const std::size_t n = loss.size(), k = std::min(o.windows, n), first_end = n / k;
  double x1 = 0;
  for (std::size_t i = 0; i < first_end; ++i) x1 += loss[i];
  x1 /= static_cast<double>(first_end);
  s.noise = std::max(s.noise, x1 - origin);
  s.range = s.last - origin;
  // The last window's mean time: elapsed (first to last) plus the first's.
  double t1 = 0;
  for (std::size_t i = 0; i < first_end; ++i) t1 += time[i];
  t1 /= static_cast<double>(first_end);
  s.elapsed = (n >= 2 ? s.elapsed + t1 : t1) - origin_time;
  if (s.elapsed > 0) s.speed = std::max(0.0, (-s.range - s.noise) / s.elapsed);
  const double epsilon = o.epsilon > 0 ? o.epsilon : 1.0 / static_cast<double>(o.windows);
  if (s.range < 0 && s.noise < epsilon * -s.range && s.elapsed > 0) s.verdict = label::converging;
  return s;
}

inline summary summarize(std::span<const double> loss, std::span<const double> time,
                         const summarizer_options& o) {
  if (loss.size() != time.size())
    throw config_error("dml::tune::summarize: " + std::to_string(loss.size()) + " losses but " +
                       std::to_string(time.size()) + " times; every loss needs the time it was taken");
  if (o.windows < 2)
    throw config_error("dml::tune::summarize: needs at least 2 windows, got " + std::to_string(o.windows));
  if (!(o.epsilon >= 0) || !std::isfinite(o.epsilon))
    throw config_error("dml::tune::summarize: epsilon must be finite and >= 0");
  summary s;
  for (std::size_t i = 0; i < loss.size(); ++i)
    if (!std::isfinite(loss[i]) || !std::isfinite(time[i])) {
      s.verdict = label::diverged;
      return s;
    }
  const std::size_t n = loss.size();
  if (n < 2) {
    if (n == 1) s.last = loss[0];
    return s;
  }
  const std::size_t k = std::min(o.windows, n);
  std::vector<double> x(k, 0.0), t(k, 0.0);
  for (std::size_t w = 0; w < k; ++w) {
    const std::size_t first = w * n / k, end = (w + 1) * n / k;  // non-empty: k <= n
    for (std::size_t i = first; i < end; ++i) {
      x[w] += loss[i];
      t[w] += time[i];
    }
    x[w] /= static_cast<double>(end - first);
    t[w] /= static_cast<double>(end - first);
  }
  s.range = x[k - 1] - x[0];
  for (std::size_t w = 1; w < k; ++w) s.noise = std::max(s.noise, x[w] - x[w - 1]);
  s.elapsed = t[k - 1] - t[0];
  s.last = x[k - 1];
  if (s.elapsed > 0) s.speed = std::max(0.0, (-s.range - s.noise) / s.elapsed);
  const double epsilon = o.epsilon > 0 ? o.epsilon : 1.0 / static_cast<double>(o.windows);
  if (s.range < 0 && s.noise < epsilon * -s.range && s.elapsed > 0) s.verdict = label::converging;
  return s;
}

}  // namespace tune
DML_END_NAMESPACE

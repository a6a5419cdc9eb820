// SPDX-License-Identifier: BSL-1.0
/// @file
/// Search spaces and searchers of online tuning. A `space` declares the
/// tunables (a continuous range on a linear or logarithmic scale, or a list
/// of choices); a searcher proposes settings from it, one value per
/// tunable in declaration order:
/// - `random_searcher` draws each value uniformly (in log10 for a log
///   range) from its own seeded generator, so members with the same seed
///   propose the same settings without talking;
/// - `grid_searcher` proposes every point of a grid (`points` per
///   continuous range, every choice of a list), in a fixed order, then ends;
/// - `list_searcher` proposes the settings it was given, in order, then ends.
///
/// A searcher is any type with `std::optional<setting> next()` (nullopt: no
/// more proposals) and `void report(const setting&, double speed)` (what
/// the proposal achieved; model-based searchers learn from it, these
/// ignore it). See dml/tune/tuner.hpp for the loop that drives them.
#pragma once

#include <dml/error.hpp>
#include <dml/fwd.hpp>
#include <dml/random.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

DML_BEGIN_NAMESPACE
namespace tune {

/// One value per tunable of a space, in declaration order.
using setting = std::vector<double>;

/// How a continuous tunable is searched.
enum class scale { linear, log };

/// One tunable: a range [low, high] (`choices` empty) or a list of choices.
struct tunable {
  std::string name;
  double low = 0, high = 0;
  tune::scale scale = tune::scale::linear;
  std::vector<double> choices;
};

/// The tunables of a search, in order.
class space {
 public:
  /// Adds a continuous tunable on [low, high]; a log scale needs 0 < low.
  /// Throws `dml::config_error` for an empty or reversed range, a log range
  /// that is not positive, or a name used before.
  space& range(std::string name, double low, double high, tune::scale s = tune::scale::linear) {
    check_name(name);
    if (!std::isfinite(low) || !std::isfinite(high) || !(low <= high))
      throw config_error("dml::tune::space: tunable '" + name + "' needs finite low <= high");
    if (s == tune::scale::log && !(low > 0))
      throw config_error("dml::tune::space: tunable '" + name + "' is searched on a log scale, so low (" +
                         std::to_string(low) + ") must be > 0");
    tunables_.push_back(tunable{std::move(name), low, high, s, {}});
    return *this;
  }
  /// Adds a tunable taking one of `values` (at least one, all finite).
  space& choice(std::string name, std::vector<double> values) {
    check_name(name);
    if (values.empty())
      throw config_error("dml::tune::space: tunable '" + name + "' needs at least one choice");
    for (double v : values)
      if (!std::isfinite(v))
        throw config_error("dml::tune::space: tunable '" + name + "' has a non-finite choice");
    tunables_.push_back(tunable{std::move(name), 0, 0, tune::scale::linear, std::move(values)});
    return *this;
  }

  [[nodiscard]] std::size_t size() const noexcept { return tunables_.size(); }
  [[nodiscard]] const tunable& operator[](std::size_t i) const { return tunables_.at(i); }
  /// The position of the tunable called `name`; `dml::config_error` when
  /// there is none.
  [[nodiscard]] std::size_t index(const std::string& name) const {
    for (std::size_t i = 0; i < tunables_.size(); ++i)
      if (tunables_[i].name == name) return i;
    throw config_error("dml::tune::space: no tunable is called '" + name + "'");
  }
  /// The value of tunable `name` in `s`.
  [[nodiscard]] double get(const setting& s, const std::string& name) const { return s.at(index(name)); }
  /// True when s has one value per tunable, each inside its range or among
  /// its choices.
  [[nodiscard]] bool contains(const setting& s) const {
    if (s.size() != tunables_.size()) return false;
    for (std::size_t i = 0; i < s.size(); ++i) {
      const tunable& t = tunables_[i];
      if (t.choices.empty() ? !(s[i] >= t.low && s[i] <= t.high)
                            : std::find_if(t.choices.begin(), t.choices.end(),
                                           [&](double c) { return c == s[i]; }) == t.choices.end())
        return false;
    }
    return true;
  }
  /// "name=value ..." for progress lines.
  [[nodiscard]] std::string describe(const setting& s) const {
    std::string out;
    for (std::size_t i = 0; i < tunables_.size() && i < s.size(); ++i) {
      char v[32];
      std::snprintf(v, sizeof v, "%g", s[i]);
      out += (i ? " " : "") + tunables_[i].name + "=" + v;
    }
    return out;
  }

 private:
  void check_name(const std::string& name) const {
    if (name.empty()) throw config_error("dml::tune::space: a tunable needs a name");
    for (const auto& t : tunables_)
      if (t.name == name) throw config_error("dml::tune::space: tunable '" + name + "' is declared twice");
  }
  std::vector<tunable> tunables_;
};

/// Draws settings uniformly from a space (log10-uniformly on log ranges),
/// without end; the same seed gives the same sequence everywhere.
class random_searcher {
 public:
  random_searcher(space sp, std::uint64_t seed) : space_(std::move(sp)), gen_(seed) {
    if (space_.size() == 0) throw config_error("dml::tune::random_searcher: the space has no tunables");
  }
  [[nodiscard]] std::optional<setting> next() {
    setting s(space_.size());
    for (std::size_t i = 0; i < space_.size(); ++i) {
      const tunable& t = space_[i];
      const double u = gen_.unit();
      if (!t.choices.empty()) {
        const auto k = static_cast<std::size_t>(u * static_cast<double>(t.choices.size()));
        s[i] = t.choices[std::min(k, t.choices.size() - 1)];
      } else if (t.scale == scale::log) {
        const double lo = std::log10(t.low), hi = std::log10(t.high);
        s[i] = std::clamp(std::pow(10.0, lo + u * (hi - lo)), t.low, t.high);
      } else {
        s[i] = t.low + u * (t.high - t.low);
      }
    }
    return s;
  }
  void report(const setting&, double) noexcept {}
  [[nodiscard]] const tune::space& search_space() const noexcept { return space_; }

 private:
  tune::space space_;
  splitmix64 gen_;
};

/// Proposes every point of a grid once, the last tunable varying fastest:
/// `points` values per range (both ends included; evenly spaced in log10
/// on log ranges; the midpoint when points is 1) and every choice of a
/// list. Ends (nullopt) after the last point.
class grid_searcher {
 public:
  grid_searcher(space sp, std::size_t points) : space_(std::move(sp)), axes_(space_.size()) {
    if (space_.size() == 0) throw config_error("dml::tune::grid_searcher: the space has no tunables");
    if (points == 0) throw config_error("dml::tune::grid_searcher: needs at least 1 point per range");
    for (std::size_t i = 0; i < space_.size(); ++i) {
      const tunable& t = space_[i];
      if (!t.choices.empty()) {
        axes_[i] = t.choices;
        continue;
      }
      const bool log = t.scale == scale::log;
      const double lo = log ? std::log10(t.low) : t.low, hi = log ? std::log10(t.high) : t.high;
      for (std::size_t k = 0; k < points; ++k) {
        const double f = points == 1 ? 0.5 : static_cast<double>(k) / static_cast<double>(points - 1);
        const double v = lo + f * (hi - lo);
        axes_[i].push_back(std::clamp(log ? std::pow(10.0, v) : v, t.low, t.high));
      }
    }
    at_.assign(space_.size(), 0);
  }
  [[nodiscard]] std::optional<setting> next() {
    if (done_) return std::nullopt;
    setting s(space_.size());
    for (std::size_t i = 0; i < s.size(); ++i) s[i] = axes_[i][at_[i]];
    // odometer step, the last axis fastest
    std::size_t i = at_.size();
    for (; i > 0; --i) {
      if (++at_[i - 1] < axes_[i - 1].size()) break;
      at_[i - 1] = 0;
    }
    done_ = i == 0;
    return s;
  }
  /// How many settings the grid has.
  [[nodiscard]] std::size_t size() const noexcept {
    std::size_t n = 1;
    for (const auto& a : axes_) n *= a.size();
    return n;
  }
  void report(const setting&, double) noexcept {}
  [[nodiscard]] const tune::space& search_space() const noexcept { return space_; }

 private:
  tune::space space_;
  std::vector<std::vector<double>> axes_;
  std::vector<std::size_t> at_;
  bool done_ = false;
};

/// Proposes the given settings in order, then ends: a plan the caller
/// builds (e.g. a log grid of learning rates around the user's, or the
/// neighbours of the best setting so far). Throws `dml::config_error` when
/// a setting lies outside the space.
class list_searcher {
 public:
  list_searcher(space sp, std::vector<setting> plan) : space_(std::move(sp)), plan_(std::move(plan)) {
    for (const auto& s : plan_)
      if (!space_.contains(s))
        throw config_error("dml::tune::list_searcher: the setting " + space_.describe(s) +
                           " lies outside the space");
  }
  [[nodiscard]] std::optional<setting> next() {
    if (at_ == plan_.size()) return std::nullopt;
    return plan_[at_++];
  }
  void report(const setting&, double) noexcept {}
  [[nodiscard]] std::size_t size() const noexcept { return plan_.size(); }
  [[nodiscard]] const tune::space& search_space() const noexcept { return space_; }

 private:
  tune::space space_;
  std::vector<setting> plan_;
  std::size_t at_ = 0;
};

}  // namespace tune
DML_END_NAMESPACE

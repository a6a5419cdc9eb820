// SPDX-License-Identifier: BSL-1.0
/// @file
/// Out-of-line definitions for <dml/fault/timeout.hpp> (see <dml/version.hpp>, DML_DECL).
#pragma once

#include <dml/fault/timeout.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <optional>
#include <string>

DML_BEGIN_NAMESPACE
namespace fault {

DML_DECL void adaptive_timeout::validate(const char* who) const {
  const std::string w(who);
  if (!(factor >= 1) || !std::isfinite(factor))
    throw config_error(w + ": factor is " + std::to_string(factor) + "; give a finite number >= 1");
  if (floor.count() <= 0)
    throw config_error(w + ": floor is " + std::to_string(floor.count()) + " ms; give a positive duration");
  if (ceiling < floor)
    throw config_error(w + ": ceiling (" + std::to_string(ceiling.count()) + " ms) is below the floor (" +
                       std::to_string(floor.count()) + " ms)");
  if (window == 0) throw config_error(w + ": window is 0; the estimate needs at least one round");
}

DML_DECL timeout_estimator::timeout_estimator(adaptive_timeout s) : s_(s) {
  s_.validate();
  recent_.reserve(std::min<std::size_t>(s_.window, 1024));
}

DML_DECL void timeout_estimator::observe(double seconds) {
  if (!(seconds > 0)) seconds = 0;  // negative and NaN
  if (recent_.size() < s_.window)
    recent_.push_back(seconds);
  else
    recent_[next_] = seconds;
  next_ = (next_ + 1) % s_.window;
  ++samples_;
}

DML_DECL timeout_estimator::duration timeout_estimator::timeout() const {
  if (samples_ == 0) return s_.ceiling;
  const double t = s_.factor * estimate();  // seconds; may be inf
  const double lo = std::chrono::duration<double>(s_.floor).count();
  const double hi = std::chrono::duration<double>(s_.ceiling).count();
  if (!(t < hi)) return s_.ceiling;
  if (t <= lo) return s_.floor;
  return std::chrono::duration_cast<duration>(std::chrono::duration<double>(t));
}

namespace detail {

DML_DECL std::optional<adaptive_timeout> adaptive_timeout_from_env(const char* who) {
  const char* p = std::getenv("DML_ADAPTIVE_TIMEOUT");
  const std::string v = p ? p : "";
  if (v.empty() || v == "off") return std::nullopt;
  adaptive_timeout s;
  if (v == "on") return s;
  const auto bad = [&] {
    return config_error(std::string(who) + ": DML_ADAPTIVE_TIMEOUT is '" + v +
                        "'; use 'on', 'off', 'FLOOR_MS:CEILING_MS' or 'FLOOR_MS:CEILING_MS:FACTOR'");
  };
  const char* at = v.c_str();
  char* end = nullptr;
  const long long floor_ms = std::strtoll(at, &end, 10);
  if (end == at || *end != ':') throw bad();
  at = end + 1;
  const long long ceiling_ms = std::strtoll(at, &end, 10);
  if (end == at || (*end != '\0' && *end != ':')) throw bad();
  if (*end == ':') {
    at = end + 1;
    s.factor = std::strtod(at, &end);
    if (end == at || *end != '\0') throw bad();
  }
  s.floor = std::chrono::milliseconds(floor_ms);
  s.ceiling = std::chrono::milliseconds(ceiling_ms);
  s.validate((std::string(who) + ": DML_ADAPTIVE_TIMEOUT").c_str());
  return s;
}

}  // namespace detail

}  // namespace fault
DML_END_NAMESPACE

// SPDX-License-Identifier: BSL-1.0
/// @file
/// Out-of-line definitions for <dml/vector/advice.hpp> (see <dml/version.hpp>, DML_DECL).
#pragma once

#include <dml/vector/advice.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

DML_BEGIN_NAMESPACE

DML_DECL exchange_advice advise(const vector_stats& s, double target) {
  exchange_advice a;
  a.share = s.communication_share();
  a.seconds_per_exchange = s.seconds_per_exchange();
  a.compute_seconds = s.compute_seconds_per_exchange();
  a.dominates = a.share > 0.5;
  if (a.share > target && a.compute_seconds > 0) {
    const double f = a.seconds_per_exchange * (1 - target) / (target * a.compute_seconds);
    a.interval_factor = std::exp2(std::ceil(std::log2(std::max(f, 1.0))));
  }
  if (a.share > target) {
    char line[400];
    std::snprintf(
        line, sizeof line,
        "communication takes %.0f%% of the time (%.3g ms per exchange against %.3g ms of computation "
        "between two): exchange about %.0fx less often to bring it near %.0f%%, or use a topology with "
        "fewer neighbours (docs/exchange-cost.md)",
        100 * a.share, 1e3 * a.seconds_per_exchange, 1e3 * a.compute_seconds, a.interval_factor,
        100 * target);
    a.text = line;
  }
  return a;
}

namespace detail {
DML_DECL std::atomic<int>& advice_switch() {
  static std::atomic<int> on{[] {
    const char* v = std::getenv("DML_ADVICE");
    return v && std::string(v) == "0" ? 0 : 1;
  }()};
  return on;
}
}  // namespace detail

DML_END_NAMESPACE

// SPDX-License-Identifier: BSL-1.0
// Internal: reading dml's settings from the environment, with errors that
// name the variable.
#pragma once

#include <dml/error.hpp>
#include <dml/fwd.hpp>

#include <cstdlib>
#include <string>

DML_BEGIN_NAMESPACE
namespace detail {

/// The whole number in environment variable `name`, or `fallback` when it
/// is unset. Anything but a whole number in [min, max] is a config_error
/// naming the variable and the range (`unit` says what is counted).
inline long number_from_env(const char* name, long fallback, long min, long max, const char* who,
                            const char* unit) {
  const char* p = std::getenv(name);
  if (p == nullptr) return fallback;
  char* end = nullptr;
  const long v = std::strtol(p, &end, 10);
  if (end == p || *end != '\0' || v < min || v > max)
    throw config_error(std::string(who) + ": " + name + " is '" + p + "'; give " + unit + " between " +
                       std::to_string(min) + " and " + std::to_string(max));
  return v;
}

}  // namespace detail
DML_END_NAMESPACE

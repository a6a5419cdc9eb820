// SPDX-License-Identifier: BSL-1.0
/// @file
/// Out-of-line definitions for <dml/detail/env.hpp> (see <dml/version.hpp>, DML_DECL).
#pragma once

#include <dml/detail/env.hpp>
#include <dml/error.hpp>

#include <cstdlib>
#include <string>

DML_BEGIN_NAMESPACE
namespace detail {

DML_DECL long number_from_env(const char* name, long fallback, long min, long max, const char* who,
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

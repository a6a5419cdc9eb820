// SPDX-License-Identifier: BSL-1.0
// Internal: reading dml's settings from the environment, with errors that
// name the variable.
#pragma once

#include <dml/fwd.hpp>

DML_BEGIN_NAMESPACE
namespace detail {

/// The whole number in environment variable `name`, or `fallback` when it
/// is unset. Anything but a whole number in [min, max] is a config_error
/// naming the variable and the range (`unit` says what is counted).
[[nodiscard]] DML_DECL long number_from_env(const char* name, long fallback, long min, long max,
                                            const char* who, const char* unit);

}  // namespace detail
DML_END_NAMESPACE

#if !defined(DML_SEPARATE_COMPILATION)
#include <dml/detail/impl/env.ipp>
#endif

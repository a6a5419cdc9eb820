// SPDX-License-Identifier: BSL-1.0
/// @file
/// Version macros and the versioned inline namespace of dml.
#pragma once

#define DML_VERSION_MAJOR 0
#define DML_VERSION_MINOR 1
#define DML_VERSION_PATCH 0
/// Single integer for comparisons: major * 10000 + minor * 100 + patch.
#define DML_VERSION (DML_VERSION_MAJOR * 10000 + DML_VERSION_MINOR * 100 + DML_VERSION_PATCH)
#define DML_VERSION_STRING "0.1.0"

// Everything public lives in dml::v0 and is reachable as dml::. A future
// incompatible major version gets a new inline namespace so two versions in
// one program fail at link time instead of mixing silently.
#define DML_BEGIN_NAMESPACE \
  namespace dml {           \
  inline namespace v0 {
#define DML_END_NAMESPACE \
  }                       \
  }

// Separate compilation (docs/getting-started.md#separate-compilation): with
// DML_SEPARATE_COMPILATION defined, the non-template functions that dml
// defines out of line (in impl/*.ipp files next to their headers) are only
// declared by the headers and compiled once by <dml/src.hpp>; without it
// the headers include those files and the functions are inline.
#if defined(DML_SEPARATE_COMPILATION)
#define DML_DECL
#else
#define DML_DECL inline
#endif

// SPDX-License-Identifier: BSL-1.0
// The one place the tests meet Catch2: v3 where installed, v2.13 otherwise.
#pragma once

#if __has_include(<catch2/catch_all.hpp>)
#include <catch2/catch_all.hpp>
#define DML_CATCH_V3 1
#else
#include <catch2/catch.hpp>
#define DML_CATCH_V3 0
#endif

#include <string>

namespace dml_test {
/// Substring matcher for REQUIRE_THROWS_WITH / REQUIRE_THAT in either version.
inline auto contains(const std::string& s) {
#if DML_CATCH_V3
  return Catch::Matchers::ContainsSubstring(s);
#else
  return Catch::Matchers::Contains(s);
#endif
}
}  // namespace dml_test

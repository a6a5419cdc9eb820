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

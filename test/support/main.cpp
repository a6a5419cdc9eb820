// SPDX-License-Identifier: BSL-1.0
// Catch2 v2 needs one translation unit that provides main(); v3 links
// Catch2::Catch2WithMain instead and never compiles this file.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <cstddef>
#include <vector>

// Averages `rounds` times over `members` in-process members, each starting
// from its rank; returns every member's final first element.
std::vector<double> average_ranks(std::size_t members, int rounds);

// SPDX-License-Identifier: BSL-1.0
/// @file
/// Output from a group of members: the leader, whole lines, member prefixes.
#pragma once

#include <dml/io/print.hpp>

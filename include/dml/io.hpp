// SPDX-License-Identifier: BSL-1.0
/// @file
/// Input and output for a group of members: agreeing on an input before
/// training (io/agree.hpp), and output from the leader or from every member
/// in whole lines (io/print.hpp).
#pragma once

#include <dml/io/agree.hpp>
#include <dml/io/print.hpp>

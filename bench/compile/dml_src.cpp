// SPDX-License-Identifier: BSL-1.0
// Build-cost probe (bench/run times its compilation; never run): the one
// translation unit a program compiles in separate compilation mode
// (compiled with DML_SEPARATE_COMPILATION; see docs/getting-started.md).
#include <dml/src.hpp>

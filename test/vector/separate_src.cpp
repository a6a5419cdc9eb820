// SPDX-License-Identifier: BSL-1.0
// The one translation unit of test_separate that compiles dml's
// out-of-line code and common instantiations (DML_SEPARATE_COMPILATION).
#include <dml/src.hpp>

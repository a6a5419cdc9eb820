// SPDX-License-Identifier: BSL-1.0
// The test executables' one translation unit of <dml/src.hpp> (built with
// DML_SEPARATE_COMPILATION; cmake/dmlDevelopment.cmake, dml_test_src).
#include <dml/src.hpp>

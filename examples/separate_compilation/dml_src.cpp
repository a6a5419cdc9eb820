// SPDX-License-Identifier: BSL-1.0
// The one translation unit that compiles dml's out-of-line code and common
// instantiations; built with DML_SEPARATE_COMPILATION like the others.
#include <dml/src.hpp>

// SPDX-License-Identifier: BSL-1.0
// The vector law for ssp over every topology x gather x representation at
// n = 1, 2, 3, 5, 8 (one translation unit per policy keeps builds parallel).
#include "laws.hpp"

TEMPLATE_LIST_TEST_CASE("law: ssp", "[law]", laws::combinations) {
  laws::check_combination<dml::consistency::ssp<2>, TestType>();
}

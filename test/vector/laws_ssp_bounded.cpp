// SPDX-License-Identifier: BSL-1.0
// The vector law for ssp_bounded (MALT's SSP: a bounded stall) over every topology x gather x
// representation at n = 1, 2, 3, 5, 8 (one translation unit per policy keeps
// builds parallel).
#include "laws.hpp"

TEMPLATE_LIST_TEST_CASE("law: ssp_bounded", "[law]", laws::combinations) {
  laws::check_combination<dml::consistency::ssp_bounded<2>, TestType>();
}

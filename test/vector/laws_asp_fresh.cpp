// SPDX-License-Identifier: BSL-1.0
// The vector law for asp_fresh (MALT's ASP: stale updates skipped) over every topology x gather x
// representation at n = 1, 2, 3, 5, 8 (one translation unit per policy keeps
// builds parallel).
#include "laws.hpp"

TEMPLATE_LIST_TEST_CASE("law: asp_fresh", "[law]", laws::combinations) {
  laws::check_combination<dml::consistency::asp_fresh<2>, TestType>();
}

// SPDX-License-Identifier: BSL-1.0
// The table laws (laws.hpp) for asp: every variant of the options at n = 1, 2,
// 5, 8, then with random delays and a straggler (one translation unit per
// policy keeps builds parallel).
#include "laws.hpp"

#include <tuple>

using asp_policies = std::tuple<dml::consistency::asp>;

TEMPLATE_LIST_TEST_CASE("table law: asp", "[table][law]", asp_policies) {
  for (auto v : table_laws::all_variants)
    for (std::size_t n : {1u, 2u, 5u, 8u}) table_laws::check_law<TestType, double>(n, v, false);
}

TEMPLATE_LIST_TEST_CASE("table law: asp under random delays and a straggler", "[table][law]", asp_policies) {
  for (auto v : {table_laws::variant::plain, table_laws::variant::virtual_all, table_laws::variant::tight})
    for (std::size_t n : {2u, 5u, 8u}) table_laws::check_law<TestType, float>(n, v, true, 5);
}

TEMPLATE_LIST_TEST_CASE("table law: asp with batch reads (read_rows)", "[table][law]", asp_policies) {
  for (auto v : table_laws::all_variants)
    for (std::size_t n : {2u, 5u}) table_laws::check_law<TestType, double>(n, v, false, 6, {}, true);
  table_laws::check_law<TestType, float>(5, table_laws::variant::plain, true, 5, {}, true);
}

// SPDX-License-Identifier: BSL-1.0
// The vector law under the exact policies (bsp, notify_ack) on an MPI
// transport; see laws.hpp for the combinations.
#include "mpi/laws.hpp"

TEMPLATE_LIST_TEST_CASE("law: bsp", "[law]", mpi_test::law_combinations) {
  mpi_test::check_law<dml::consistency::bsp, TestType>();
}

TEMPLATE_LIST_TEST_CASE("law: notify_ack", "[law]", mpi_test::law_combinations) {
  mpi_test::check_law<dml::consistency::notify_ack, TestType>();
}

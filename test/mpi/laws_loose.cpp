// SPDX-License-Identifier: BSL-1.0
// The vector law under the policies that do not wait for every input (asp,
// ssp) on an MPI transport; see laws.hpp for the combinations.
#include "mpi/laws.hpp"

TEMPLATE_LIST_TEST_CASE("law: asp", "[law]", mpi_test::law_combinations) {
  mpi_test::check_law<dml::consistency::asp, TestType>();
}

TEMPLATE_LIST_TEST_CASE("law: ssp", "[law]", mpi_test::law_combinations) {
  mpi_test::check_law<dml::consistency::ssp<2>, TestType>();
}

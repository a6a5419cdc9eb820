// SPDX-License-Identifier: BSL-1.0
// The law suite of test/vector/laws.hpp on an MPI transport: the same
// per-member body (laws::check_member), one MPI process per member, the group
// size given by mpiexec -n.
//
// Combinations: every consistency policy x {all, halton, root_expander,
// ring} x {average, replace} x {dense, sparse} (64 per transport instead of
// the 160 the in-process suite runs). The transport sees topology (who
// writes where, how many slots and counters), consistency (puts, flushes,
// barriers, atomics and waits) and representation (payload sizes, partial
// words); the gather functor only runs on data already read, so two of them
// suffice: average (every input counts) and replace (inputs' senders and
// clocks count). The other gathers are covered by the in-process suite.
#pragma once

#include "mpi/support.hpp"
#include "vector/laws.hpp"

#include <exception>
#include <string>
#include <tuple>

namespace mpi_test {

using law_combinations = laws::product_t<std::tuple<dml::gather::average, dml::gather::replace>,
                                         std::tuple<dml::dense, dml::sparse>>;
static_assert(std::tuple_size_v<law_combinations> == 4);

template <class Cons, class Combination>
void check_law(const dml::topology::any& topo) {
  using Gather = std::tuple_element_t<0, Combination>;
  using Repr = std::tuple_element_t<1, Combination>;
  auto& comm = world();
  laws::outcome out;
  std::string thrown;
  try {
    laws::check_member<Cons, Gather, Repr>(comm, topo, out);
  } catch (const std::exception& e) {  // reported by every rank below
    thrown = e.what();
  }
  const int wrong = out.wrong + (thrown.empty() ? 0 : 1);
  int total_wrong = 0, total_not_full = 0;
  for (int w : all_values(comm, wrong)) total_wrong += w;
  for (int f : all_values(comm, out.not_full)) total_not_full += f;
  INFO(topo.name() << ", n = " << comm.size());
  INFO(first_message(comm, thrown.empty() ? out.first_error : "threw: " + thrown));
  REQUIRE(total_wrong == 0);
  REQUIRE(total_not_full == 0);
}

// The law for one combination over every topology on the world group
// (check_law(topo): one topology); every rank asserts the merged outcome of
// all ranks.
template <class Cons, class Combination>
void check_law() {
  for (const auto& topo : laws::topologies()) check_law<Cons, Combination>(topo);
}

}  // namespace mpi_test

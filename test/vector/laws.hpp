// SPDX-License-Identifier: BSL-1.0
// The law every (consistency × topology × gather × representation)
// combination obeys on a transport: after each round of scatter + gather,
// every member holds exactly what the gather functor makes of its own vector
// and the inputs the consistency policy promises. The expected value is
// computed here independently of the library's functors, from the
// topology's in-lists. check_member is the body one member runs, on any
// transport (test/mpi runs it with one MPI process per member); check_law
// runs it on in-process members.
#pragma once

#include <dml/dml.hpp>

#include "support/catch.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

namespace laws {

// Distinct for every member, round and element, exactly representable.
inline double fill(dml::member_id m, int round, std::size_t i) {
  return 1.0 + static_cast<double>(m) + 16.0 * round + 0.25 * static_cast<double>(i % 8);
}

template <class Gather>
double expected(dml::member_id me, std::span<const dml::member_id> in, int round, std::size_t i) {
  const double own = fill(me, round, i);
  const auto k = static_cast<double>(in.size());
  double sum = 0, mx = own;
  for (auto j : in) {
    sum += fill(j, round, i);
    mx = std::max(mx, fill(j, round, i));
  }
  if constexpr (std::is_same_v<Gather, dml::gather::average>)
    return (own + sum) / (1 + k);
  else if constexpr (std::is_same_v<Gather, dml::gather::average_received>)
    return in.empty() ? own : sum / k;
  else if constexpr (std::is_same_v<Gather, dml::gather::sum>)
    return own + sum;
  else if constexpr (std::is_same_v<Gather, dml::gather::max>)
    return mx;
  else {  // replace: all inputs carry the same clock; the lowest sender wins the tie
    static_assert(std::is_same_v<Gather, dml::gather::replace>);
    return in.empty() ? own : fill(*std::min_element(in.begin(), in.end()), round, i);
  }
}

template <class C>
constexpr bool is_exact =
    std::is_same_v<C, dml::consistency::bsp> || std::is_same_v<C, dml::consistency::notify_ack>;

// What one member found while checking the law.
struct outcome {
  int wrong = 0;     // rounds in which some element differed from the law
  int not_full = 0;  // statistics that do not prove every input was combined
  std::string first_error;
};

// The per-member body of the law, on any transport: `rounds` rounds of
// scatter + gather, checking every element after every gather, plus the
// statistics that prove the inputs. Collective: every member of `comm` runs
// it with the same template arguments and topology. The topology is a
// run-time value (topology::any; it builds exactly its generator's graphs,
// test/topology/any.cpp): the vector's code does not depend on it, and one
// instantiation per policy, gather and representation keeps the suite's
// build short.
template <class Cons, class Gather, class Repr, class Comm>
void check_member(Comm& comm, const dml::topology::any& topo, outcome& out, int rounds = 3) {
  static constexpr std::size_t length = 37;  // odd: exercises partial words
  auto repr = [] {
    if constexpr (std::is_same_v<Repr, dml::sparse>)
      return dml::sparse{length};
    else
      return dml::dense{};
  }();
  auto v = dml::make_vector<double>(comm, length, Cons{}, Gather{}, topo, repr);
  const auto me = comm.rank();
  const auto in = v.in_neighbours();
  for (int round = 1; round <= rounds; ++round) {
    for (std::size_t i = 0; i < length; ++i) v.span()[i] = fill(me, round, i);
    v.scatter();
    // Without a barrier ASP and SSP may legitimately combine older updates;
    // the law for them is stated for a member whose neighbours all wrote.
    if constexpr (!is_exact<Cons>) v.barrier();
    v.gather();
    for (std::size_t i = 0; i < length; ++i) {
      const double want = expected<Gather>(me, in, round, i);
      if (std::abs(v.span()[i] - want) > 1e-12 * std::max(1.0, std::abs(want))) {
        if (out.first_error.empty())
          out.first_error = "member " + std::to_string(me) + " round " + std::to_string(round) + " element " +
                            std::to_string(i) + ": got " + std::to_string(v.span()[i]) + ", want " +
                            std::to_string(want);
        ++out.wrong;
        break;
      }
    }
    if constexpr (!is_exact<Cons>) v.barrier();  // nobody overwrites before all gathered
  }
  const auto& s = v.stats();
  if (s.full_gathers != static_cast<std::uint64_t>(rounds) ||
      s.gathers != static_cast<std::uint64_t>(rounds) || s.inputs_combined.size() != in.size() + 1 ||
      s.inputs_combined[in.size()] != static_cast<std::uint64_t>(rounds))
    ++out.not_full;
  const std::uint64_t per_update = 8 * 5 + (std::is_same_v<Repr, dml::sparse> ? 12 : 8) * length;
  if (s.bytes_sent != rounds * v.out_neighbours().size() * per_update) ++out.not_full;
  if (s.bytes_received != rounds * in.size() * per_update) ++out.not_full;
}

// Runs the law on n in-process members (threads) and requires it held on
// every one of them.
template <class Cons, class Gather, class Repr>
void check_law(std::size_t n, const dml::topology::any& topo, int rounds = 3) {
  std::vector<outcome> outs(n);  // one per member: no sharing between threads
  dml::comm::inproc::run(
      n, [&](auto& comm) { check_member<Cons, Gather, Repr>(comm, topo, outs[comm.rank()], rounds); });
  int wrong = 0, not_full = 0;
  std::string first_error;
  for (const auto& o : outs) {
    wrong += o.wrong;
    not_full += o.not_full;
    if (first_error.empty()) first_error = o.first_error;
  }
  INFO(first_error);
  REQUIRE(wrong == 0);
  REQUIRE(not_full == 0);
}

/// The topologies every law runs over.
inline std::vector<dml::topology::any> topologies() {
  return {dml::topology::all{}, dml::topology::halton{}, dml::topology::root_expander{},
          dml::topology::ring{}};
}
using gathers = std::tuple<dml::gather::average, dml::gather::average_received, dml::gather::sum,
                           dml::gather::max, dml::gather::replace>;
using representations = std::tuple<dml::dense, dml::sparse>;

// The cartesian product Gathers x Reprs as a tuple of std::tuple<Gather,
// Repr>, for TEMPLATE_LIST_TEST_CASE.
template <class... Ts>
struct concat;
template <class... A>
struct concat<std::tuple<A...>> {
  using type = std::tuple<A...>;
};
template <class... A, class... B, class... Rest>
struct concat<std::tuple<A...>, std::tuple<B...>, Rest...> {
  using type = typename concat<std::tuple<A..., B...>, Rest...>::type;
};
template <class Gather, class Reprs>
struct with_reprs;
template <class Gather, class... R>
struct with_reprs<Gather, std::tuple<R...>> {
  using type = std::tuple<std::tuple<Gather, R>...>;
};
template <class Gathers, class Reprs>
struct product;
template <class... G, class Reprs>
struct product<std::tuple<G...>, Reprs> {
  using type = typename concat<std::tuple<>, typename with_reprs<G, Reprs>::type...>::type;
};
template <class Gathers, class Reprs>
using product_t = typename product<Gathers, Reprs>::type;
using combinations = product_t<gathers, representations>;
static_assert(std::tuple_size_v<combinations> == 10);

// The law for one combination over every topology at every group size of
// the suite.
template <class Cons, class Combination>
void check_combination() {
  using Gather = std::tuple_element_t<0, Combination>;
  using Repr = std::tuple_element_t<1, Combination>;
  for (const auto& topo : topologies()) {
    for (std::size_t n : {1u, 2u, 3u, 5u, 8u}) {
      INFO(topo.name() << ", n = " << n);
      check_law<Cons, Gather, Repr>(n, topo);
    }
  }
}

}  // namespace laws

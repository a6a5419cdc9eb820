// SPDX-License-Identifier: BSL-1.0
// Static checks: which types model the table concepts, and the twins of the
// compile-fail cases in compile_fail/ (the same calls, made right), so that
// a compile-fail test proves its error is the one intended.
#include <dml/comm/inproc.hpp>
#include <dml/table.hpp>

#include "support/catch.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace c = dml::consistency;
using ctx = dml::comm::inproc::context;

// Policies with a table meaning, and their slack.
static_assert(c::table_consistency<c::bsp> && c::table_staleness<c::bsp>::value == 0);
static_assert(c::table_consistency<c::ssp<3>> && c::table_staleness<c::ssp<3>>::value == 3);
static_assert(c::table_consistency<c::asp> && c::table_staleness<c::asp>::value == c::unbounded);
static_assert(!c::table_consistency<c::notify_ack>);
static_assert(c::table_consistency<c::any>);  // the slack is read at run time
static_assert(!c::table_consistency<int>);

// Tables model parameter_table; vectors and other types do not.
static_assert(dml::parameter_table<dml::table<float, ctx>>);
static_assert(dml::parameter_table<dml::table<double, ctx, c::ssp<1>>>);
static_assert(dml::parameter_table<dml::table<std::int64_t, ctx, c::asp>>);
static_assert(!dml::parameter_table<dml::dist_vector<float, ctx>>);
static_assert(!dml::parameter_table<std::vector<float>>);
static_assert(std::is_same_v<dml::table<float, ctx>::consistency_type, c::bsp>);  // the default
static_assert(!std::is_copy_constructible_v<dml::table<float, ctx>>);
static_assert(std::is_nothrow_move_constructible_v<dml::table<float, ctx>>);

// Every member function compiles, for each policy.
template class dml::table<float, ctx, c::bsp>;
template class dml::table<double, ctx, c::ssp<2>>;
template class dml::table<std::int64_t, ctx, c::asp>;
template class dml::table<float, ctx, c::any>;

// The twins: make_table with each kind of argument, in any order.
TEST_CASE("static: make_table takes a policy and options in any order", "[table]") {
  dml::comm::inproc::run(2, [](ctx& comm) {
    auto a = dml::make_table<float>(comm, 4, 2, c::ssp<1>{});                     // notify_ack_table
    auto b = dml::make_table<float>(comm, 4, 2, c::bsp{}, dml::table_options{});  // duplicate_*
    auto d = dml::make_table<float>(comm, 4, 2, dml::table_options{}, c::asp{});  // unknown_table_argument
    auto e = dml::make_table<float>(comm, 4, 2);                                  // bad_table_transport
    static_assert(std::is_same_v<decltype(a), dml::table<float, ctx, c::ssp<1>>>);
    static_assert(std::is_same_v<decltype(b), dml::table<float, ctx, c::bsp>>);
    static_assert(std::is_same_v<decltype(d), dml::table<float, ctx, c::asp>>);
    static_assert(std::is_same_v<decltype(e), dml::table<float, ctx, c::bsp>>);
    using ok = dml::table<std::int32_t, ctx>;  // bool_table_element
    static_assert(sizeof(ok) > 0);
    std::vector<float> d2(2, 1.0f);  // wrong_delta_type
    e.update(0, std::span<const float>(d2));
    e.update(0, std::span<float>(d2));
    e.update(0, d2);
    e.sync();
    CHECK(e.read(0)[1] == 6.0f);
  });
}

TEST_CASE("static: staleness() is the held policy's slack, for any as for the fixed policies", "[table]") {
  std::vector<std::uint64_t> got(2 * 5);
  dml::comm::inproc::run(2, [&](ctx& comm) {
    std::uint64_t* out = &got[5 * comm.rank()];
    out[0] = dml::make_table<float>(comm, 4, 2, c::ssp<2>{}).staleness();
    out[1] = dml::make_table<float>(comm, 4, 2, c::any::ssp(2)).staleness();
    out[2] = dml::make_table<float>(comm, 4, 2, c::any(c::bsp{})).staleness();
    out[3] = dml::make_table<float>(comm, 4, 2, c::any(c::asp{})).staleness();
    out[4] = dml::make_table<float>(comm, 4, 2, c::asp{}).staleness();
  });
  for (std::size_t m = 0; m < 2; ++m) {
    CHECK(got[5 * m + 0] == 2);
    CHECK(got[5 * m + 1] == 2);
    CHECK(got[5 * m + 2] == 0);
    CHECK(got[5 * m + 3] == c::unbounded);
    CHECK(got[5 * m + 4] == c::unbounded);
  }
}

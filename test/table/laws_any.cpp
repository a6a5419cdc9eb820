// SPDX-License-Identifier: BSL-1.0
// The table laws (laws.hpp) for dml::consistency::any, the policy chosen at
// run time: holding bsp, ssp(2) and asp it must behave exactly as those
// policies do, and members holding a policy directly or through `any`
// build one table together.
#include "laws.hpp"

#include <dml/consistency/any.hpp>

#include <string>
#include <vector>

namespace c = dml::consistency;

TEST_CASE("table law: any holding bsp, ssp(2) and asp", "[table][law]") {
  for (const c::any& held : {c::any(c::bsp{}), c::any::ssp(2), c::any(c::asp{})}) {
    INFO(held.name());
    for (auto v : {table_laws::variant::plain, table_laws::variant::tight, table_laws::variant::virtual_all})
      for (std::size_t n : {1u, 2u, 5u}) table_laws::check_law<c::any, double>(n, v, false, 6, held);
    table_laws::check_law<c::any, float>(5, table_laws::variant::plain, true, 5, held);
  }
}

TEST_CASE("table law: members holding ssp<2> directly and through any build one table", "[table][law]") {
  constexpr std::size_t n = 4;
  std::vector<table_laws::outcome> outs(n);
  dml::comm::inproc::run(n, [&](auto& comm) {
    auto& out = outs[comm.rank()];
    if (comm.rank() % 2 == 0)
      table_laws::check_member<c::ssp<2>, double>(comm, table_laws::variant::plain, out, 6);
    else
      table_laws::check_member<c::any, double>(
          comm, table_laws::variant::plain, out, 6, [] {}, c::any::ssp(2));
  });
  for (const auto& out : outs) {
    INFO(out.first_error);
    CHECK(out.wrong == 0);
  }
}

TEST_CASE("a table refuses any holding notify_ack on every member", "[table]") {
  constexpr std::size_t n = 3;
  std::vector<std::string> errors(n);
  dml::comm::inproc::run(n, [&](auto& comm) {
    try {
      // Only member 1 holds notify_ack: the others must learn of it too.
      if (comm.rank() == 1) {
        auto t = dml::make_table<float>(comm, 4, 2, c::any(c::notify_ack{}));
      } else {
        auto t = dml::make_table<float>(comm, 4, 2, c::any(c::bsp{}));
      }
    } catch (const dml::config_error& e) {
      errors[comm.rank()] = e.what();
    }
  });
  for (std::size_t m = 0; m < n; ++m) {
    INFO("member " << m << ": " << errors[m]);
    CHECK(errors[m].find("notify_ack") != std::string::npos);
  }
}

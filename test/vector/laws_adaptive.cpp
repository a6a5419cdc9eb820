// SPDX-License-Identifier: BSL-1.0
// The vector law for consistency::adaptive, switching mode every clock
// (bsp, then ssp(1), then asp, then bsp again) through its agreement step.
#include "laws.hpp"

namespace {

// adaptive with an agreement every clock and a rule that cycles the modes.
struct cycling : dml::consistency::adaptive {
  cycling() : adaptive(options()) {}
  static dml::consistency::adaptive_options options() {
    namespace c = dml::consistency;
    c::adaptive_options o;
    o.every = 1;
    o.rule_name = "cycle";
    o.rule = [](std::span<const c::window_observation>, const c::adaptive_settings& now) {
      c::adaptive_settings next;
      if (now.mode == c::adaptive_mode::bsp) {
        next.mode = c::adaptive_mode::ssp;
        next.slack = 1;
      } else if (now.mode == c::adaptive_mode::ssp) {
        next.mode = c::adaptive_mode::asp;
      }
      return next;
    };
    return o;
  }
};

}  // namespace

TEMPLATE_LIST_TEST_CASE("law: adaptive", "[law]", laws::combinations) {
  laws::check_combination<cycling, TestType>();
}

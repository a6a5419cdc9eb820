// SPDX-License-Identifier: BSL-1.0
// Must not compile: see the REGEX in test/vector/CMakeLists.txt.
#include <dml/dml.hpp>

#include <string_view>

// A policy dml does not know: how far may its members drift apart?
struct every_other_round {
  using policy_slot = dml::slot::consistency;
  [[nodiscard]] static constexpr std::string_view name() noexcept { return "every_other_round"; }
  template <class P>
  void scatter(P& p) const {
    p.write_all();
  }
  template <class P>
  void gather(P& p) const {
    p.combine_unconsumed();
  }
};

void f(dml::comm::inproc::context& c) {
  auto v = dml::make_vector<float>(c, 16, every_other_round{});
  (void)v.join();
}

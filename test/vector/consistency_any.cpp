// SPDX-License-Identifier: BSL-1.0
// consistency::any behaves exactly as the policy it holds: members that hold
// a policy directly and members that hold it through `any` build the same
// vector and exchange with each other; under the exact policies the results
// are the law's, and under ssp the slack given at run time bounds staleness.
#include <dml/dml.hpp>

#include "support/catch.hpp"

#include <atomic>
#include <cstdint>
#include <string>

namespace inproc = dml::comm::inproc;
namespace c = dml::consistency;

namespace {

// Half the members hold the policy directly, half through `any`; bsp and
// notify_ack over `all` must give every member the exact mean every round.
template <class Policy>
void mixed_members_average_exactly(Policy direct) {
  std::atomic<int> exact{0};
  inproc::run(6, [&](inproc::context& ctx) {
    auto run = [&](auto policy) {
      auto v = dml::make_vector<double>(ctx, 4, policy);
      bool ok = true;
      for (int r = 1; r <= 20; ++r) {
        for (auto& x : v.span()) x = static_cast<double>(ctx.rank() + r);
        v.scatter();
        v.gather();
        ok = ok && v.span()[0] == 2.5 + r;  // mean of rank + r over 6 members
      }
      if (ok && v.stats().full_gathers == 20) ++exact;
    };
    if (ctx.rank() % 2 == 0)
      run(c::any(direct));
    else
      run(direct);
  });
  REQUIRE(exact.load() == 6);
}

}  // namespace

TEST_CASE("consistency::any names itself as the policy it holds") {
  CHECK(c::any().name() == "bsp");
  CHECK(c::any(c::asp{}).name() == "asp");
  CHECK(c::any(c::notify_ack{}).name() == "notify_ack");
  CHECK(c::any(c::ssp<3>{}).name() == c::ssp<3>::name());
  CHECK(c::any::ssp(7).name() == "ssp<7>");
  CHECK(c::any::ssp(7).slack() == 7);
  CHECK(c::any(c::asp{}).held() == c::any::kind::asp);
}

TEST_CASE(
    "consistency::any(bsp) and any(notify_ack) exchange exactly with members holding the policy itself") {
  mixed_members_average_exactly(c::bsp{});
  mixed_members_average_exactly(c::notify_ack{});
}

TEST_CASE("consistency::any::ssp(s): a run-time slack bounds staleness like ssp<s>") {
  // Member 0 is slow; with slack 2 no gather may combine an update older
  // than its own clock minus 2, and members holding ssp<2> directly agree.
  std::atomic<int> bounded{0};
  inproc::options o;
  o.slow_members = {{0, std::chrono::microseconds(300)}};
  inproc::run(
      4,
      [&](inproc::context& ctx) {
        std::uint64_t oldest_seen = ~std::uint64_t{0};
        bool ok = true;
        auto check = [&](std::span<double>, std::span<const dml::gather::input<double>> inputs) {
          for (const auto& in : inputs) oldest_seen = std::min(oldest_seen, in.clock);
        };
        auto run = [&](auto policy) {
          auto v = dml::make_vector<double>(ctx, 2, policy, dml::topology::ring{}, check);
          for (int r = 1; r <= 30; ++r) {
            v.scatter();
            oldest_seen = ~std::uint64_t{0};
            v.gather();
            if (oldest_seen != ~std::uint64_t{0} && oldest_seen + 2 < v.clock()) ok = false;
          }
        };
        if (ctx.rank() % 2 == 0)
          run(c::any::ssp(2));
        else
          run(c::ssp<2>{});
        if (ok) ++bounded;
      },
      o);
  REQUIRE(bounded.load() == 4);
}

TEST_CASE("members holding different policies through any disagree with a config_error") {
  std::atomic<int> clear{0};
  inproc::run(2, [&](inproc::context& ctx) {
    try {
      auto v = dml::make_vector<double>(ctx, 2, ctx.rank() == 0 ? c::any::ssp(1) : c::any::ssp(2));
    } catch (const dml::config_error& e) {
      const std::string what = e.what();
      if (what.find("ssp<1>") != std::string::npos && what.find("ssp<2>") != std::string::npos) ++clear;
    }
  });
  REQUIRE(clear.load() == 2);
}

// SPDX-License-Identifier: BSL-1.0
/// @file
/// Internal: the gather functor behind `dml::schedule::exact_sum`.
#pragma once

#include <dml/fwd.hpp>
#include <dml/vector/gather.hpp>

#include <algorithm>
#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

DML_BEGIN_NAMESPACE
namespace schedule::detail {

/// own[i] <- x_0[i] + x_1[i] + ... over every member's update in ascending
/// member id, this member's own buffer at its place. `gather::sum` adds the
/// inputs to own, so each member adds in another order and the totals can
/// differ in the last bit from member to member; a schedule computed from
/// them could then differ too. Adding in one order on every member makes
/// the totals, and everything computed from them, the same to the bit.
struct ordered_sum {
  using policy_slot = slot::gather;
  member_id self = 0;

  [[nodiscard]] static constexpr std::string_view name() noexcept { return "ordered_sum"; }

  template <class T>
  void operator()(std::span<T> own, std::span<const gather::input<T>> inputs) const {
    // (sender, values) in ascending sender order; own values at self.
    std::vector<std::pair<member_id, const T*>> order;
    order.reserve(inputs.size() + 1);
    std::vector<T> mine(own.begin(), own.end());
    order.emplace_back(self, mine.data());
    for (const auto& in : inputs) order.emplace_back(in.sender, in.values.data());
    std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (std::size_t i = 0; i < own.size(); ++i) {
      T total{};
      for (const auto& [sender, values] : order) total += values[i];
      own[i] = total;
    }
  }
};

}  // namespace schedule::detail
DML_END_NAMESPACE

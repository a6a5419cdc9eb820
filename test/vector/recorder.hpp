// SPDX-License-Identifier: BSL-1.0
// Test-only gather functor that records what every gather combined (one
// list per gather, the sender, clock and first element of each input) and
// keeps the own buffer unchanged. The checks run on the recorded lists after
// the members have finished.
#pragma once

#include <dml/dml.hpp>

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace dml_test {

// What one gather saw of one input.
struct seen {
  dml::member_id sender;
  std::uint64_t clock;
  double value;  // element 0 (-1 for an empty input)
  bool uniform;  // every element equal to element 0
};

struct recorder {
  using policy_slot = dml::slot::gather;
  std::vector<std::vector<seen>>* log = nullptr;
  [[nodiscard]] static constexpr std::string_view name() noexcept { return "recorder"; }
  void operator()(std::span<double> /*own*/, std::span<const dml::gather::input<double>> inputs) const {
    auto& round = log->emplace_back();
    for (const auto& in : inputs) {
      bool uniform = true;
      for (double x : in.values) uniform = uniform && x == in.values[0];
      round.push_back(seen{in.sender, in.clock, in.values.empty() ? -1.0 : in.values[0], uniform});
    }
  }
};

}  // namespace dml_test

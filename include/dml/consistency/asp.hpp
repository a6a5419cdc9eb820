// SPDX-License-Identifier: BSL-1.0
/// @file
/// Asynchronous: nobody ever waits.
#pragma once

#include <dml/fwd.hpp>

#include <string_view>

DML_BEGIN_NAMESPACE
namespace consistency {

/// scatter: write, no waiting. gather: combine the newest complete update of
/// each in-neighbour that was not combined before; updates being written
/// (torn or in flight) are skipped and counted. Never blocks, even when a
/// neighbour has stopped. A scatter with dml::to{...} writes nothing to the
/// out-neighbours it leaves out: they keep the update they had.
struct asp {
  using policy_slot = slot::consistency;
  [[nodiscard]] static constexpr std::string_view name() noexcept { return "asp"; }
  template <class P>
  void scatter(P& p) const {
    p.write_destinations();
  }
  template <class P>
  void gather(P& p) const {
    p.combine_unconsumed();
  }
};

}  // namespace consistency
DML_END_NAMESPACE

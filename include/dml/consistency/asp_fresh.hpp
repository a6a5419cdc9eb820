// SPDX-License-Identifier: BSL-1.0
/// @file
/// Asynchronous, skipping stale updates (MALT's ASP, EuroSys '15 §6.1):
/// nobody ever waits, and an update older than a bound is never combined.
#pragma once

#include <dml/fwd.hpp>

#include <cstdint>
#include <string>

DML_BEGIN_NAMESPACE
namespace detail {
/// asp_fresh's gather with bound `b` (also used by consistency::any).
template <class P>
void asp_fresh_gather(P& p, std::uint64_t b) {
  const std::uint64_t t = p.clock();
  p.combine_unconsumed(t > b ? t - b : 0);
}
inline std::string asp_fresh_name(std::uint64_t b) { return "asp_fresh<" + std::to_string(b) + ">"; }
}  // namespace detail

namespace consistency {

/// scatter: write, no waiting (as asp). gather at clock t: combine the
/// newest complete update of each in-neighbour that was not combined
/// before, if its clock is ≥ t − B; never blocks. An unconsumed update
/// older than that (a straggler's) is skipped for good and counted in
/// stats().too_old_skipped; a torn or in-flight one is skipped as under
/// asp. What asp gives up in staleness this gives up in inputs: a
/// straggler that lags by more than B contributes nothing. A scatter with
/// dml::to{...} writes nothing to the out-neighbours it leaves out, as
/// under asp: they keep the older update, combined if still within B.
/// @tparam B the bound: how many clocks an input may lag behind.
template <std::uint64_t B>
struct asp_fresh {
  using policy_slot = slot::consistency;
  static constexpr std::uint64_t bound = B;
  [[nodiscard]] static std::string name() { return detail::asp_fresh_name(B); }
  template <class P>
  void scatter(P& p) const {
    p.write_destinations();
  }
  template <class P>
  void gather(P& p) const {
    detail::asp_fresh_gather(p, B);
  }
};

}  // namespace consistency
DML_END_NAMESPACE

// SPDX-License-Identifier: BSL-1.0
/// @file
/// What a scheduled model-parallel program provides (SMPFRAME's Table 1:
/// schedule, update, aggregate) for each engine, and what an engine is.
#pragma once

#include <dml/detail/policy.hpp>
#include <dml/fwd.hpp>
#include <dml/schedule/context.hpp>

#include <concepts>
#include <cstddef>
#include <span>

DML_BEGIN_NAMESPACE
namespace schedule {

/// A program for the dynamic engine (`dml::schedule::dynamic`):
///
/// - `schedule(context&) -> job`: the parameters every member updates in
///   this iteration. Computed on every member; it must come out the same
///   everywhere (read only the context, the agreed model and totals from
///   `context::sum`);
/// - `update(const step&, std::span<double> out)`: this member's partial
///   result for each parameter of `step.job`, from its own data and the
///   model (`out` arrives zeroed, one element per parameter);
/// - `aggregate(const step&, std::span<const double> total)`: `total` is
///   the sum of every member's partial results; apply it to the model. It
///   runs on every member with the same totals, so the replicas stay equal.
///
/// Optional: `progress(context&)` returning bool (false stops the run on
/// every member; it may call `context::sum`), called after each aggregate.
/// In a run that survives failures, when some survivor did not finish the
/// progress() of the newest applied iteration (a failure cut it short, or
/// it caught up on that iteration after the failure), every survivor calls
/// it again with the same `context::iteration()`: report by that, once.
template <class P>
concept dynamic_program = requires(P& p, context& c, const step& s, std::span<double> out,
                                   std::span<const double> in) {
  { p.schedule(c) } -> std::convertible_to<job>;
  p.update(s, out);
  p.aggregate(s, in);
};

/// A program for the static rotation engine (`dml::schedule::static_rotation`):
///
/// - `parameters() -> std::size_t`: M; the engine cuts [0, M) into P
///   contiguous blocks and rotates them (that is the schedule);
/// - `update(const step&, std::span<double> out)`: update the block's
///   parameters in `step.job` in order, from this member's data, and write
///   their new values to `out` (one element per parameter);
/// - `aggregate(const step&, std::span<const double> values)`: `values` are
///   the new values of `step.job`'s parameters computed by member
///   `step.member`; store them in this member's model.
///
/// Optional: `width() -> std::size_t`, values per parameter (a row of a
/// factor matrix: `out` and `values` then hold width() values per
/// parameter, in job order; default 1); `weight(parameter) -> double`, the work a parameter costs on
/// this member (heaviest first dispatch); `progress(context&)` returning
/// bool, called after each full rotation, when every replica is complete.
/// In a run that survives failures, a rotation whose progress() a failure
/// cut short on some survivor is reported again on every survivor, with
/// the same `context::iteration()`: count rotations by that, not by calls.
/// A dynamic program that can go on over the survivors of a failure:
/// `reshard(member, members)` makes this member's share of the data the
/// `member`-th of `members` from the next iteration on, rebuilds from the
/// model (the same on every survivor) whatever it keeps per row of its
/// share, and drops whatever it kept from a `context::sum` (column norms,
/// correlations: dyn_regr::forget_sums), to sum it again. The failure may
/// have cut such a sum short on some survivors and not on others; were the
/// others to keep it, the next schedules would make different collective
/// calls on different members. Both engines also call it at the start of a
/// run when fewer members are live than the group has (members died
/// before the run): a program built over the whole group then takes its
/// share of the live ones.
template <class P>
concept reshardable_program = requires(P& p, std::size_t member, std::size_t members) {
  p.reshard(member, members);
};

template <class P>
concept rotation_program = requires(P& p, const P& cp, const step& s, std::span<double> out,
                                    std::span<const double> in) {
  { cp.parameters() } -> std::convertible_to<std::size_t>;
  p.update(s, out);
  p.aggregate(s, in);
};

/// A rotation program that can go on over the survivors of a failure
/// (`dml::schedule::static_rotation`): a `reshardable_program` (its rows
/// dealt out again over the survivors, whatever it keeps per row rebuilt
/// from the model) that also reads its model back: `values(job, out)`
/// writes the current values of `job`'s parameters to `out` (width() per
/// parameter, in job order), the inverse of aggregate(). The engine keeps
/// the model of the last full rotation with it and restores that through
/// aggregate() before reshard().
template <class P>
concept restartable_rotation_program = rotation_program<P> && reshardable_program<P> &&
    requires(const P& cp, std::span<const parameter> job, std::span<double> out) {
  cp.values(job, out);
};

/// An engine runs a program over a transport. Engines opt in with
/// `using policy_slot = dml::slot::engine;`.
template <class E>
concept engine = dml::detail::fills_slot_v<E, slot::engine>;

namespace detail {

// Calls p.progress(c) when the program has it; true: go on.
template <class P>
bool call_progress(P& p, context& c) {
  if constexpr (requires {
                  { p.progress(c) } -> std::convertible_to<bool>;
                }) {
    return static_cast<bool>(p.progress(c));
  } else if constexpr (requires { p.progress(c); }) {
    p.progress(c);
    return true;
  } else {
    (void)p;
    (void)c;
    return true;
  }
}

}  // namespace detail
}  // namespace schedule
DML_END_NAMESPACE

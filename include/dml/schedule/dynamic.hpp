// SPDX-License-Identifier: BSL-1.0
/// @file
/// The dynamic engine: every member applies the same scheduled set of
/// parameters to its own data, partial results are summed over the members,
/// and iterations are pipelined to a depth s (SMPFRAME §3.3.2, Eq. 3).
#pragma once

#include <dml/comm/concepts.hpp>
#include <dml/consistency/bsp.hpp>
#include <dml/error.hpp>
#include <dml/fwd.hpp>
#include <dml/schedule/concepts.hpp>
#include <dml/schedule/context.hpp>
#include <dml/schedule/detail/members.hpp>
#include <dml/schedule/detail/ordered_sum.hpp>
#include <dml/schedule/exact_sum.hpp>
#include <dml/schedule/stats.hpp>
#include <dml/topology/all.hpp>
#include <dml/vector/dist_vector.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

DML_BEGIN_NAMESPACE
namespace schedule {

/// The dynamic engine, for schedules that change with the model (SMPFRAME
/// §3.3.2): each iteration t every member
///
///  1. computes `schedule(context)` -- the same job J_t on every member;
///  2. computes its partial results `update(step, out)` for J_t from its
///     own data (data parallel within the set, SMPFRAME Algorithm 2);
///  3. sends them; the sum over the members reaches every member, which
///     applies it with `aggregate(step, total)`.
///
/// Pipelining (Eq. 3): with depth s the results of iteration t are applied
/// only before iteration t + s is scheduled, so iteration t is scheduled and
/// computed on the model of iteration t - s: A(t) = A(t-1) + sum_p
/// Delta_p(A(t-s)). Depth 1 is the serial order. The results travel in
/// distributed vectors over `topology::all` under `consistency::bsp`, one
/// per pipeline slot, whose gather adds in member order (exact_sum), so
/// every member applies the same totals to the bit and the replicas of the
/// model never drift apart. With s > 1 the exchange of iteration t runs in
/// the background (`scatter_async`) while the member computes iteration
/// t + 1. A transport context runs one background operation at a time, so
/// depths beyond 2 add staleness but no further overlap.
///
/// `context::in_flight()` lists the jobs whose results are not applied yet,
/// so a schedule can keep them out of the next set (dyn_regr does).
///
/// The engine's vectors are internal: they never print the vectors' advice
/// to exchange less often (dist_vector::set_advice), which its user could
/// not follow.
///
/// Failures: when a member dies, every survivor's run ends with
/// `dml::peer_failure` naming it (at the exchange that noticed, or at the
/// next one: a member waiting on one that has ended is released by the
/// transport), never a hang. Going on over the survivors would silently
/// drop the dead member's share of the data from every sum.
struct dynamic {
  using policy_slot = slot::engine;

  /// Pipeline depth s >= 1 (at most 64).
  std::size_t depth = 1;
  /// Seed of the schedule's random stream (context::random), the same on
  /// every member.
  std::uint64_t seed = 0;

  [[nodiscard]] static constexpr std::string_view name() noexcept { return "dynamic"; }

  /// Throws config_error for a depth outside 1..64.
  void validate() const {
    if (depth < 1 || depth > 64)
      throw config_error("dml::schedule::dynamic: the pipeline depth must be 1..64, got " +
                         std::to_string(depth));
  }

  /// Collective: runs `iterations` iterations of `program` (fewer when its
  /// progress() returns false) over the live members of `comm`. Every
  /// member calls it with the same engine settings and iteration count.
  template <class Transport, class Program>
  run_stats run(Transport& comm, Program& program, std::uint64_t iterations) const {
    static_assert(comm::transport<Transport>,
                  "dml::schedule::dynamic::run: the first argument must be a transport context "
                  "(dml::comm::transport)");
    static_assert(dynamic_program<Program>,
                  "dml::schedule::dynamic::run: the program must provide schedule(context&) -> job, "
                  "update(const step&, std::span<double>) and aggregate(const step&, std::span<const "
                  "double>) (see dml/schedule/concepts.hpp)");
    validate();
    using clock = std::chrono::steady_clock;
    using vector_type =
        dist_vector<double, Transport, dense, topology::all, consistency::bsp, detail::ordered_sum>;
    const auto start = clock::now();
    run_stats stats;
    const auto placed = detail::place(comm, "dml::schedule::dynamic::run");
    // (named variables, not a structured binding: lambdas below use them, and
    // clang before 16 cannot capture structured bindings)
    const std::size_t members = placed.first;
    const std::size_t position = placed.second;
    const auto started_with = comm.view().live;

    exact_sum<double, Transport> reducer(comm);
    context ctx(seed, members, position, comm.rank(), [&](std::span<double> v) {
      const auto before = reducer.exchanges();
      reducer(v);
      stats.sums += reducer.exchanges() - before;
    });
    // One result vector per pipeline slot: iteration t uses slot t mod s,
    // whose previous iteration (t - s) was applied before t was scheduled.
    std::vector<std::optional<vector_type>> slots(depth);
    auto ensure = [&](std::size_t k, std::size_t n) {
      std::size_t want = std::max<std::size_t>(n, 64);
      if (slots[k]) {
        if (slots[k]->size() >= n) return;
        want = std::max(n, 2 * slots[k]->size());
      }
      // Collective: every member schedules the same job, so all reach it here.
      slots[k].reset();
      slots[k].emplace(comm, want, dense{}, topology::all{}, consistency::bsp{},
                       detail::ordered_sum{comm.rank()});
      slots[k]->set_advice(false);  // one exchange per iteration is the engine's design
    };
    for (std::size_t k = 0; k < depth; ++k) ensure(k, 64);

    struct flight {
      std::uint64_t t;
      job set;
    };
    std::deque<flight> flights;
    std::vector<job> pending;  // the jobs of flights, for context::in_flight
    bool stop = false;
    auto complete_front = [&] {
      flight f = std::move(flights.front());
      flights.pop_front();
      const auto t0 = clock::now();
      auto& v = *slots[f.t % depth];
      v.gather();
      detail::require_members(comm, started_with, f.t, "dml::schedule::dynamic");
      const step s{f.t, position, members, f.set};
      program.aggregate(s, std::span<const double>(v.span().data(), f.set.size()));
      ++stats.iterations;
      if (!stop) {
        ctx.set_iteration(f.t);
        ctx.set_in_flight({});
        stop = !detail::call_progress(program, ctx);
      }
      stats.aggregate_seconds += std::chrono::duration<double>(clock::now() - t0).count();
    };

    for (std::uint64_t t = 0; t < iterations && !stop; ++t) {
      pending.clear();
      for (const auto& f : flights) pending.push_back(f.set);
      ctx.set_iteration(t);
      ctx.set_in_flight(pending);
      auto t0 = clock::now();
      job set = program.schedule(ctx);
      stats.schedule_seconds += std::chrono::duration<double>(clock::now() - t0).count();
      if (set.size() > std::size_t{std::numeric_limits<std::uint32_t>::max()})
        throw config_error("dml::schedule::dynamic: a job of " + std::to_string(set.size()) +
                           " parameters (at most 2^32 - 1)");
      const std::size_t k = t % depth;
      ensure(k, set.size());
      auto buffer = slots[k]->span();
      std::fill(buffer.begin(), buffer.end(), 0.0);
      t0 = clock::now();
      program.update(step{t, position, members, set}, buffer.first(set.size()));
      stats.update_seconds += std::chrono::duration<double>(clock::now() - t0).count();
      stats.updates += set.size();
      // Apply what the next schedule needs (results up to t + 1 - s) before
      // sending this iteration's: their exchange ran while this one computed.
      while (!flights.empty() && flights.front().t + depth <= t + 1) complete_front();
      if (depth == 1)
        slots[k]->scatter();
      else
        slots[k]->scatter_async();
      ++stats.exchanges;
      flights.push_back(flight{t, std::move(set)});
      if (depth == 1) complete_front();
    }
    while (!flights.empty()) complete_front();  // every member sent them: all apply them
    stats.stopped = stop;
    stats.seconds = std::chrono::duration<double>(clock::now() - start).count();
    return stats;
  }
};

}  // namespace schedule
DML_END_NAMESPACE

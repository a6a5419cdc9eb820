// SPDX-License-Identifier: BSL-1.0
/// @file
/// The dynamic engine: every member applies the same scheduled set of
/// parameters to its own data, partial results are summed over the members,
/// and iterations are pipelined to a depth s (SMPFRAME §3.3.2, Eq. 3).
#pragma once

#include <dml/comm/concepts.hpp>
#include <dml/consistency/bsp.hpp>
#include <dml/error.hpp>
#include <dml/fault/membership.hpp>
#include <dml/fwd.hpp>
#include <dml/schedule/concepts.hpp>
#include <dml/schedule/context.hpp>
#include <dml/schedule/detail/members.hpp>
#include <dml/schedule/detail/ordered_sum.hpp>
#include <dml/schedule/detail/survive.hpp>
#include <dml/schedule/exact_sum.hpp>
#include <dml/schedule/stats.hpp>
#include <dml/topology/all.hpp>
#include <dml/vector/dist_vector.hpp>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
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
/// Failures: with a program that can reshard (`reshardable_program`:
/// `reshard(member, members)` takes over a new share of the data and
/// rebuilds its per-row state from the model) on a transport that can
/// shrink its group, the run goes on over the survivors. The failure ends
/// whatever operation each survivor is in (`fault::interrupted`, thrown by
/// the recovery on every survivor at the same point, also out of a
/// context::sum inside schedule() or progress()); the survivors then agree
/// on the newest iteration any of them applied, the ones behind apply its
/// results from a survivor that has them (every member holds the same
/// totals, to the bit), every survivor reshards, and the iterations after
/// it are scheduled and computed again over the survivors (stats:
/// failures_survived, iterations_redone). What the dead member computed for
/// them is lost; nothing it contributed to an applied iteration is. When
/// some survivor had not finished progress() for the newest applied
/// iteration, every survivor calls it for that iteration once more, so it
/// is reported (progress() of the older iterations a survivor caught up on
/// is not called there). Under
/// `fault::policy::abort`, and with a program without reshard(), every
/// survivor's run ends with `dml::peer_failure` naming the dead member
/// instead (at the exchange that noticed, or at the next one), never a
/// hang: going on would silently drop the dead member's share of the data
/// from every sum.
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
    constexpr bool survives = comm::shrinkable_transport<Transport> && reshardable_program<Program>;
    using clock = std::chrono::steady_clock;
    using vector_type =
        dist_vector<double, Transport, dense, topology::all, consistency::bsp, detail::ordered_sum>;
    const auto start = clock::now();
    run_stats stats;
    auto placed = detail::place(comm, "dml::schedule::dynamic::run");
    // (named variables, not a structured binding: lambdas below use them, and
    // clang before 16 cannot capture structured bindings)
    std::size_t members = placed.first;
    std::size_t position = placed.second;
    const auto started_with = comm.view().live;  // checked only by programs that cannot reshard

    // A failure ends every survivor's current operation (see Failures
    // above); opened before the engine builds its vectors, so that a failure
    // while they are built is survived the same way.
    std::optional<fault::detail::interruption_scope> interruptible;
    if constexpr (survives) interruptible.emplace(comm);

    std::optional<exact_sum<double, Transport>> reducer;
    context ctx(seed, members, position, comm.rank(), [&](std::span<double> v) {
      const auto before = reducer->exchanges();
      (*reducer)(v);
      stats.sums += reducer->exchanges() - before;
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
    bool starting = true;
    auto build = [&] {  // collective
      if constexpr (survives)
        if (std::exchange(starting, false)) detail::reshard_at_start(comm, program, members, position);
      reducer.reset();
      reducer.emplace(comm);
      for (auto& v : slots) v.reset();
      for (std::size_t k = 0; k < depth; ++k) ensure(k, 64);
    };

    struct flight {
      std::uint64_t t;
      job set;
    };
    std::deque<flight> flights;
    std::vector<job> pending;      // the jobs of flights, for context::in_flight
    std::uint64_t t = 0;           // the next iteration to schedule
    std::uint64_t applied = 0;     // iterations whose results were applied (0 .. applied - 1)
    std::uint64_t progressed = 0;  // iterations up to which progress() has returned here
    bool stop = false;
    // The totals of the last `depth` iterations applied: what a survivor
    // behind may need after a failure.
    std::deque<std::pair<std::uint64_t, std::vector<double>>> recent;

    // Applies the oldest flight's totals (its exchange complete, or the
    // totals another survivor had after a failure); returns its iteration.
    auto apply_front = [&](std::span<const double> total) {
      const flight& f = flights.front();
      program.aggregate(step{f.t, position, members, f.set}, total);
      if constexpr (survives) {
        recent.emplace_back(f.t, std::vector<double>(total.begin(), total.end()));
        if (recent.size() > depth) recent.pop_front();
      }
      const std::uint64_t done = f.t;
      flights.pop_front();
      ++applied;
      ++stats.iterations;
      return done;
    };

    auto complete_front = [&] {
      const flight& f = flights.front();
      const auto t0 = clock::now();
      auto& v = *slots[f.t % depth];
      v.gather();
      if constexpr (!survives) detail::require_members(comm, started_with, f.t, "dml::schedule::dynamic");
      const std::uint64_t done = apply_front(std::span<const double>(v.span().data(), f.set.size()));
      if (!stop) {
        ctx.set_iteration(done);
        ctx.set_in_flight({});
        stop = !detail::call_progress(program, ctx);
        progressed = done + 1;
      }
      stats.aggregate_seconds += std::chrono::duration<double>(clock::now() - t0).count();
    };

    // Until the last iteration is applied, or until a failure interrupts.
    auto go = [&] {
      for (;;) {
        if (t < iterations && !stop) {
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
          ++t;
          if (depth == 1) complete_front();
        } else if (!flights.empty()) {
          complete_front();  // every member sent them: all apply them
        } else {
          // The end, agreed (see static_rotation): a failure here interrupts
          // every survivor, none has left the run.
          if constexpr (survives) slots[0]->barrier();
          return;
        }
      }
    };

    // After a failure (survives only): agree on the newest iteration applied
    // anywhere and on whether progress() stopped the run there, catch up to
    // it, take the new share of the data, build the engine's vectors anew
    // over the survivors. Made again when another member fails meanwhile.
    auto resync = [&] {
      if constexpr (survives) {
        auto drop = [&] {  // the recovery rebuilds everything else; build() makes these anew
          reducer.reset();
          for (auto& v : slots) v.reset();
        };
        detail::resync_surviving(comm, drop, [&] {
          const auto agreed = agree_after_failure(comm, applied, stop, progressed, recent);
          while (applied < agreed.applied) {
            if (flights.empty() || flights.front().t != applied)
              throw comm_error("dml::schedule::dynamic: after a failure member " +
                               std::to_string(comm.rank()) + " cannot catch up to iteration " +
                               std::to_string(agreed.applied - 1) + ": iteration " + std::to_string(applied) +
                               " is not in flight here");
            const auto it = agreed.totals.find(applied);
            if (it == agreed.totals.end() || it->second.size() != flights.front().set.size())
              throw comm_error("dml::schedule::dynamic: after a failure the results of iteration " +
                               std::to_string(applied) + " are missing or of the wrong size");
            (void)apply_front(it->second);
          }
          stats.iterations_redone += t - applied;
          flights.clear();
          t = applied;
          stop = agreed.stop;
          placed = detail::place(comm, "dml::schedule::dynamic::run");
          members = placed.first;
          position = placed.second;
          program.reshard(position, members);
          ctx.set_members(members, position);
          build();
          // The newest applied iteration's progress() was cut short on some
          // survivor, or never called there (it caught up above): every
          // survivor calls it (again) for that iteration, so that it is
          // reported (the same context::iteration() as the first call).
          if (!stop && applied > 0 && agreed.progressed < applied) {
            ctx.set_iteration(applied - 1);
            ctx.set_in_flight({});
            stop = !detail::call_progress(program, ctx);
            progressed = applied;
          }
          ++stats.failures_survived;
        });
      }
    };

    detail::run_surviving<survives>(build, go, resync);
    stats.stopped = stop;
    stats.seconds = std::chrono::duration<double>(clock::now() - start).count();
    return stats;
  }

 private:
  struct agreement {
    std::uint64_t applied = 0;     // the newest iteration any survivor applied, plus one
    bool stop = false;             // progress() stopped the run there
    std::uint64_t progressed = 0;  // the fewest iterations any survivor's progress() returned for
    std::map<std::uint64_t, std::vector<double>> totals;  // the results of the last iterations up to it
  };

  // Collective over the survivors: every member's (applied, stop,
  // progressed, recent totals); the newest is agreed, with its totals, and
  // the fewest iterations reported by progress().
  template <class Transport>
  static agreement agree_after_failure(
      Transport& comm, std::uint64_t applied, bool stop, std::uint64_t progressed,
      const std::deque<std::pair<std::uint64_t, std::vector<double>>>& recent) {
    std::vector<std::uint64_t> words{applied, stop ? 1u : 0u, progressed, recent.size()};
    for (const auto& [t, values] : recent) {
      words.push_back(t);
      words.push_back(values.size());
      for (double x : values) words.push_back(std::bit_cast<std::uint64_t>(x));
    }
    const auto all = comm.exchange(std::as_bytes(std::span<const std::uint64_t>(words)));
    auto malformed = [] {
      return comm_error("dml::schedule::dynamic: a malformed record in the agreement after a failure");
    };
    agreement best;
    bool first = true;
    std::uint64_t fewest = ~std::uint64_t{0};
    for (const auto& record : all) {
      if (record.size() % 8 != 0 || record.size() < 32) throw malformed();
      std::vector<std::uint64_t> w(record.size() / 8);
      std::memcpy(w.data(), record.data(), record.size());
      fewest = std::min(fewest, w[2]);
      if (!first && w[0] <= best.applied) continue;
      first = false;
      agreement a;
      a.applied = w[0];
      a.stop = w[1] != 0;
      std::size_t at = 4;
      for (std::uint64_t i = 0; i < w[3]; ++i) {
        if (at + 2 > w.size() || w[at + 1] > w.size() - at - 2) throw malformed();
        auto& values = a.totals[w[at]];
        values.resize(static_cast<std::size_t>(w[at + 1]));
        for (std::size_t j = 0; j < values.size(); ++j) values[j] = std::bit_cast<double>(w[at + 2 + j]);
        at += 2 + values.size();
      }
      best = std::move(a);
    }
    best.progressed = fewest;
    return best;
  }
};

}  // namespace schedule
DML_END_NAMESPACE

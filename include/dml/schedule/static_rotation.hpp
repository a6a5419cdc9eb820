// SPDX-License-Identifier: BSL-1.0
/// @file
/// The static engine: P contiguous parameter blocks rotated among the P
/// members every iteration, results passed along a ring, a barrier only
/// after a full rotation (macro synchronization), heaviest jobs first
/// (SMPFRAME §3.3.1, §4.2, Fig. 8 and 9).
#pragma once

#include <dml/comm/concepts.hpp>
#include <dml/consistency/bsp.hpp>
#include <dml/consistency/notify_ack.hpp>
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
#include <dml/topology/ring.hpp>
#include <dml/vector/dist_vector.hpp>
#include <dml/vector/gather.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <limits>
#include <mutex>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

DML_BEGIN_NAMESPACE
namespace schedule {

/// Block b of P over M parameters: [first, last), contiguous, sizes
/// differing by at most one (the first M mod P blocks are one longer).
[[nodiscard]] constexpr std::pair<std::size_t, std::size_t> rotation_block(std::size_t parameters,
                                                                           std::size_t members,
                                                                           std::size_t block) noexcept {
  const std::size_t base = parameters / members, extra = parameters % members;
  const std::size_t first = block * base + std::min(block, extra);
  return {first, first + base + (block < extra ? 1 : 0)};
}

/// SMPFRAME's scheduleStaticRota: the block that the member at `position`
/// works on in iteration t -- (position - t) mod P. Every block visits
/// every member once in P iterations, no two members hold the same block
/// at once, and the block a member holds next is the one its predecessor
/// (position - 1) holds now, so results travel one step along the ring.
[[nodiscard]] constexpr std::size_t rotation_assignment(std::size_t position, std::uint64_t iteration,
                                                        std::size_t members) noexcept {
  return static_cast<std::size_t>((position + members - iteration % members) % members);
}

/// The static rotation engine, for schedules fixed in advance (SMPFRAME
/// §3.3.1): the model's M parameters are cut into P contiguous blocks; in
/// iteration t the member at position p updates block (p - t) mod P with
/// its own data, sequentially within the block, and passes the block's new
/// values to its ring successor, which holds that block next. Blocks are
/// disjoint, so concurrent updates never touch the same parameter.
///
/// - Macro synchronization (`macro_sync`, the default): members wait only
///   for their ring predecessor's values (`consistency::notify_ack` over
///   `topology::ring`); after each full rotation (every P iterations) the
///   blocks are all-gathered, so every replica is complete, and progress()
///   runs. Without it (micro synchronization) every iteration also ends
///   with a barrier of all members.
/// - Heaviest first (`heaviest_first`, with a program `weight(parameter)`):
///   a block's parameters are dispatched in decreasing weight; with
///   `executors` > 1 threads per member they are taken from one queue in
///   that order (longest jobs first balances the threads), and update()
///   must then be safe to call concurrently for different parameters of a
///   block (each call then gets a job of one parameter).
///
/// Failures: with a program that can go on over the survivors
/// (`restartable_rotation_program`: `reshard(member, members)` and
/// `values(job, out)`) on a transport that can shrink its group, the
/// survivors of a dead member go back to the model of the last full
/// rotation (every replica was complete and equal there; the engine keeps a
/// copy, read with values()), the newest such model any survivor holds
/// wins, every survivor restores it through aggregate(), takes its new
/// share of the data with reshard(), and the rotation goes on from that
/// iteration over P - 1 blocks (run_stats: failures_survived,
/// iterations_redone). Rotations are counted from there: the next
/// progress() comes after P - 1 iterations, every block having visited
/// every survivor. What the dead member and the others computed since
/// that rotation is computed again. Otherwise (under
/// `fault::policy::abort`, or a program without those functions) every
/// survivor's run ends with `dml::peer_failure` naming the dead member.
struct static_rotation {
  using policy_slot = slot::engine;

  bool macro_sync = true;
  bool heaviest_first = true;
  /// Threads per member running update() (>= 1, at most 256).
  std::size_t executors = 1;
  /// Seed of context::random (progress() may use it).
  std::uint64_t seed = 0;

  [[nodiscard]] static constexpr std::string_view name() noexcept { return "static_rotation"; }

  /// Throws config_error for executors outside 1..256.
  void validate() const {
    if (executors < 1 || executors > 256)
      throw config_error("dml::schedule::static_rotation: executors must be 1..256, got " +
                         std::to_string(executors));
  }

  /// Collective: runs `iterations` iterations of `program` over the live
  /// members of `comm` (fewer when progress() returns false at the end of a
  /// rotation). Ends with every replica complete.
  template <class Transport, class Program>
  run_stats run(Transport& comm, Program& program, std::uint64_t iterations) const {
    static_assert(comm::transport<Transport>,
                  "dml::schedule::static_rotation::run: the first argument must be a transport context "
                  "(dml::comm::transport)");
    static_assert(rotation_program<Program>,
                  "dml::schedule::static_rotation::run: the program must provide parameters(), "
                  "update(const step&, std::span<double>) and aggregate(const step&, std::span<const "
                  "double>) (see dml/schedule/concepts.hpp)");
    validate();
    constexpr bool survives = comm::shrinkable_transport<Transport> && restartable_rotation_program<Program>;
    using clock = std::chrono::steady_clock;
    using ring_vector =
        dist_vector<double, Transport, dense, topology::ring, consistency::notify_ack, gather::replace>;
    using all_vector =
        dist_vector<double, Transport, dense, topology::all, consistency::bsp, detail::ordered_sum>;
    const auto start = clock::now();
    run_stats stats;
    auto placed = detail::place(comm, "dml::schedule::static_rotation::run");
    // (named variables, not a structured binding: lambdas below use them, and
    // clang before 16 cannot capture structured bindings)
    std::size_t members = placed.first;
    std::size_t position = placed.second;
    const auto started_with = comm.view().live;  // checked only when the run cannot go on without a member
    const std::size_t m = static_cast<std::size_t>(program.parameters());
    if (m == 0) throw config_error("dml::schedule::static_rotation: the program has no parameters");
    if (m > std::size_t{std::numeric_limits<parameter>::max()})
      throw config_error("dml::schedule::static_rotation: " + std::to_string(m) +
                         " parameters (at most 2^32 - 1)");
    std::size_t w = 1;  // values per parameter
    if constexpr (requires(const Program& p) {
                    { p.width() } -> std::convertible_to<std::size_t>;
                  }) {
      w = static_cast<std::size_t>(program.width());
      if (w == 0) throw config_error("dml::schedule::static_rotation: the program's width() is 0");
    }
    std::size_t widest = 0;  // values of a longest block (block 0), per parameter

    // A failure ends every survivor's current operation (fault::interrupted,
    // as in the dynamic engine); opened before the vectors are built, so that
    // a failure while they are built is survived the same way.
    std::optional<fault::detail::interruption_scope> interruptible;
    if constexpr (survives) interruptible.emplace(comm);

    std::optional<exact_sum<double, Transport>> reducer;
    context ctx(seed, members, position, comm.rank(), [&](std::span<double> v) {
      const auto before = reducer->exchanges();
      (*reducer)(v);
      stats.sums += reducer->exchanges() - before;
    });
    std::optional<ring_vector> ring;
    std::optional<all_vector> all;
    bool starting = true;
    auto build = [&] {  // collective
      if constexpr (survives)
        if (std::exchange(starting, false)) detail::reshard_at_start(comm, program, members, position);
      ring.reset();
      all.reset();
      reducer.reset();
      widest = rotation_block(m, members, 0).second;
      reducer.emplace(comm);
      ring.emplace(comm, widest * w);
      all.emplace(comm, widest * w * members, dense{}, topology::all{}, consistency::bsp{},
                  detail::ordered_sum{comm.rank()});
      ring->set_advice(false);  // internal vectors: their exchange rate is the engine's design
      all->set_advice(false);
    };

    job order, canonical, everything;
    std::vector<double> out;
    std::vector<double> held;  // values of the block this member holds next
    std::size_t held_block = position;
    bool synced = true;  // every replica complete
    bool stop = false;   // progress() returned false
    std::uint64_t t = 0;
    // The model at the last full rotation (survives only): iteration
    // `kept_at` starts from it.
    std::vector<double> kept;
    std::uint64_t kept_at = 0;
    // Whether `kept_at` ends a full rotation, where progress() is due (not
    // the start, a recovery, or the run's last partial rotation).
    bool kept_due = false;
    // The iteration the present members' rotations started at: 0, or the
    // kept model the survivors of the last failure went on from. A full
    // rotation is `members` iterations from there, so that after a failure
    // the survivors' first progress() also comes after every block visited
    // every member.
    std::uint64_t rotations_from = 0;
    // The iteration count of the last rotation whose progress() returned on
    // this member: after a failure inside progress() some survivors have
    // reported the kept rotation and some have not; all report it again.
    std::uint64_t progressed_at = 0;
    auto keep = [&](std::uint64_t at) {
      if constexpr (survives) {
        kept.assign(m * w, 0.0);
        program.values(std::span<const parameter>(everything), std::span<double>(kept));
        kept_at = at;
      } else {
        (void)at;
      }
    };
    auto block_job = [&](std::size_t b, job& j) {
      const auto [first, last] = rotation_block(m, members, b);
      j.resize(last - first);
      std::iota(j.begin(), j.end(), static_cast<parameter>(first));
    };
    auto check_members = [&](std::uint64_t at) {
      if constexpr (!survives)
        detail::require_members(comm, started_with, at, "dml::schedule::static_rotation");
    };
    // Every member writes the block it holds; all receive every block.
    auto all_gather = [&](std::uint64_t at, bool due) {
      auto buffer = all->span();
      std::fill(buffer.begin(), buffer.end(), 0.0);
      std::copy(held.begin(), held.end(),
                buffer.begin() + static_cast<std::ptrdiff_t>(held_block * widest * w));
      all->scatter();
      all->gather();
      check_members(at);
      ++stats.exchanges;
      for (std::size_t b = 0; b < members; ++b) {
        if (b == held_block) continue;
        block_job(b, canonical);
        // Computed in iteration `at` by the member at (b + at) mod P.
        const std::size_t by = static_cast<std::size_t>((b + at % members) % members);
        program.aggregate(step{at, by, members, canonical},
                          std::span<const double>(buffer.data() + b * widest * w, canonical.size() * w));
      }
      synced = true;
      keep(at + 1);
      kept_due = due;
    };

    // Until the last iteration, or until a failure interrupts.
    auto go = [&] {
      for (; t < iterations && !stop; ++t) {
        const std::size_t b = rotation_assignment(position, t, members);
        block_job(b, order);
        if constexpr (requires(const Program& p, parameter a) {
                        { p.weight(a) } -> std::convertible_to<double>;
                      }) {
          if (heaviest_first) {
            std::vector<std::pair<double, parameter>> by_weight;
            by_weight.reserve(order.size());
            for (parameter a : order) by_weight.emplace_back(static_cast<double>(program.weight(a)), a);
            std::stable_sort(by_weight.begin(), by_weight.end(),
                             [](const auto& x, const auto& y) { return x.first > y.first; });
            for (std::size_t i = 0; i < by_weight.size(); ++i) order[i] = by_weight[i].second;
          }
        }
        out.assign(order.size() * w, 0.0);
        auto t0 = clock::now();
        dispatch(program, step{t, position, members, order}, out, w);
        stats.update_seconds += std::chrono::duration<double>(clock::now() - t0).count();
        stats.updates += order.size();
        // Send the block's values in parameter order to the ring successor.
        const std::size_t first = rotation_block(m, members, b).first;
        auto buffer = ring->span();
        std::fill(buffer.begin(), buffer.end(), 0.0);
        for (std::size_t k = 0; k < order.size(); ++k)
          std::copy_n(out.begin() + static_cast<std::ptrdiff_t>(k * w), w,
                      buffer.begin() + static_cast<std::ptrdiff_t>((order[k] - first) * w));
        t0 = clock::now();
        ring->scatter();
        ring->gather();
        check_members(t);
        ++stats.exchanges;
        // From the predecessor: the block this member holds in iteration t + 1.
        const std::size_t from = (position + members - 1) % members;
        held_block = (b + members - 1) % members;
        block_job(held_block, canonical);
        held.assign(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(canonical.size() * w));
        program.aggregate(step{t, from, members, canonical}, std::span<const double>(held));
        ++stats.iterations;
        synced = false;
        if (!macro_sync) ring->barrier();
        if ((t + 1 - rotations_from) % members == 0) {
          all_gather(t, true);
          ctx.set_iteration(t);
          stop = !detail::call_progress(program, ctx);
          progressed_at = t + 1;
          if (stop) stats.stopped = t + 1 < iterations;
        }
        stats.aggregate_seconds += std::chrono::duration<double>(clock::now() - t0).count();
      }
      if (!synced) all_gather(t - 1, false);
      // The end, agreed: a member that finished its last exchange would
      // otherwise leave the run while another, which learned of a failure in
      // that exchange, goes back to the kept model and waits for it in the
      // agreement (seen: the leaver's next collective, in the trainer, met
      // a view it was not in). Here a failure interrupts every survivor.
      if constexpr (survives) ring->barrier();
    };

    // After a failure (survives only): agree on the newest kept model, restore
    // it, take the new share of the data and go on from there over the
    // survivors. Made again when another member fails meanwhile.
    auto resync = [&] {
      if constexpr (survives) {
        auto drop = [&] {  // the recovery rebuilds everything else; build() makes these anew
          ring.reset();
          all.reset();
          reducer.reset();
        };
        detail::resync_surviving(comm, drop, [&] {
          const agreement agreed = agree_on_kept(comm, kept_at, kept_due, stop, progressed_at, kept);
          const std::uint64_t at = agreed.at;
          placed = detail::place(comm, "dml::schedule::static_rotation::run");
          members = placed.first;
          position = placed.second;
          program.aggregate(step{at, position, members, everything}, std::span<const double>(kept));
          stats.iterations_redone += stats.iterations > at ? stats.iterations - at : 0;
          t = at;
          rotations_from = at;
          kept_at = at;
          kept_due = agreed.due;  // and still due when another failure cuts the report below short
          stats.iterations = at;
          stop = agreed.stop;
          stats.stopped = stop && at < iterations;
          program.reshard(position, members);
          ctx.set_members(members, position);
          held.clear();
          held_block = rotation_assignment(position, t, members);
          synced = true;
          build();
          if (agreed.report_again) {  // the kept rotation's progress(), which the failure cut short somewhere
            ctx.set_iteration(at - 1);
            stop = !detail::call_progress(program, ctx);
            stats.stopped = stop && at < iterations;
          }
          progressed_at = at;
          ++stats.failures_survived;
        });
      }
    };

    if constexpr (survives) {  // the job that reads and restores the whole model
      everything.resize(m);
      std::iota(everything.begin(), everything.end(), parameter{0});
    }
    keep(0);  // local, before anything a failure can interrupt
    detail::run_surviving<survives>(build, go, resync);
    stats.seconds = std::chrono::duration<double>(clock::now() - start).count();
    return stats;
  }

 private:
  // What the survivors of a failure agree on: the newest kept model's
  // iteration `at`; whether progress() is due there (`due`: it ends a full
  // rotation); whether progress() had stopped the run there; and whether
  // progress() is due there but some survivor did not finish it
  // (`report_again`: every survivor calls it again).
  struct agreement {
    std::uint64_t at = 0;
    bool due = false, stop = false, report_again = false;
  };

  // Collective over the survivors: the newest kept model. Round one: every
  // member's (iteration it was kept at, whether progress() is due there,
  // stop, iteration of its last progress()); round two: the first member
  // holding the newest sends it, the others nothing. `kept` becomes that
  // model. Members holding the same iteration share its history, so the
  // holder's `due` is theirs.
  template <class Transport>
  static agreement agree_on_kept(Transport& comm, std::uint64_t kept_at, bool kept_due, bool stopped,
                                 std::uint64_t progressed_at, std::vector<double>& kept) {
    const std::uint64_t mine[4] = {kept_at, kept_due ? 1u : 0u, stopped ? 1u : 0u, progressed_at};
    const auto heads = comm.exchange(std::as_bytes(std::span<const std::uint64_t>(mine)));
    agreement a;
    std::uint64_t least_progressed = ~std::uint64_t{0};
    std::size_t holder = heads.size();
    for (std::size_t i = 0; i < heads.size(); ++i) {
      if (heads[i].size() != sizeof mine)
        throw comm_error(
            "dml::schedule::static_rotation: a malformed record in the agreement after a failure");
      std::uint64_t head[4];
      std::memcpy(head, heads[i].data(), sizeof head);
      least_progressed = std::min(least_progressed, head[3]);
      if (holder == heads.size() || head[0] > a.at) {
        a.at = head[0];
        a.due = head[1] != 0;
        holder = i;
        a.stop = false;
      }
      if (head[0] == a.at && head[2] != 0) a.stop = true;
    }
    const std::uint64_t newest = a.at;
    const auto view = comm.view();
    const bool sends = holder < view.live.size() && view.live[holder] == comm.rank();
    const auto models =
        comm.exchange(sends ? std::as_bytes(std::span<const double>(kept)) : std::span<const std::byte>{});
    if (kept.empty() || holder >= models.size() || models[holder].size() != kept.size() * sizeof(double))
      throw comm_error("dml::schedule::static_rotation: the model kept at iteration " +
                       std::to_string(newest) + " is missing or of the wrong size after a failure");
    std::memcpy(kept.data(), models[holder].data(), models[holder].size());
    a.report_again = a.due && least_progressed < newest;
    if (a.report_again) a.stop = false;  // progress() decides again
    return a;
  }

  // update() over the job: in one call, or parameter by parameter from
  // `executors` threads taking the next heaviest from one queue.
  template <class Program>
  void dispatch(Program& program, const step& s, std::vector<double>& out, std::size_t w) const {
    const std::size_t threads = std::min(executors, s.job.size());
    if (threads <= 1) {
      program.update(s, std::span<double>(out));
      return;
    }
    std::atomic<std::size_t> next{0};
    std::exception_ptr error;
    std::mutex error_mutex;
    auto work = [&] {
      try {
        for (std::size_t k; (k = next.fetch_add(1)) < s.job.size();)
          program.update(step{s.iteration, s.member, s.members, s.job.subspan(k, 1)},
                         std::span<double>(out).subspan(k * w, w));
      } catch (...) {
        const std::lock_guard lock(error_mutex);
        if (!error) error = std::current_exception();
        next.store(s.job.size());
      }
    };
    std::vector<std::thread> pool;
    pool.reserve(threads - 1);
    for (std::size_t i = 1; i < threads; ++i) pool.emplace_back(work);
    work();
    for (auto& th : pool) th.join();
    if (error) std::rethrow_exception(error);
  }
};

}  // namespace schedule
DML_END_NAMESPACE

// SPDX-License-Identifier: BSL-1.0
/// @file
/// The typed distributed vector: a local buffer that members exchange with
/// one-sided writes into per-sender receive slots. This is the front end,
/// which knows the topology, consistency policy and gather functor; the
/// rest depends only on the element type, transport and representation
/// and lives in vector/detail/core.hpp (compiled once per such triple).
/// The slot wire format is vector/detail/slots.hpp, the payload codecs
/// vector/detail/codec.hpp, the steps consistency policies are made of
/// vector/detail/protocol.hpp, and what the built-in policies combine
/// consistency/detail/combine.hpp.
#pragma once

#include <dml/comm/concepts.hpp>
#include <dml/consistency/concepts.hpp>
#include <dml/consistency/detail/drift.hpp>
#include <dml/detail/backoff.hpp>
#include <dml/detail/policy.hpp>
#include <dml/detail/returned.hpp>
#include <dml/error.hpp>
#include <dml/fault/membership.hpp>
#include <dml/fwd.hpp>
#include <dml/topology/concepts.hpp>
#include <dml/topology/graph.hpp>
#include <dml/topology/time_varying.hpp>
#include <dml/vector/advice.hpp>
#include <dml/vector/detail/background.hpp>
#include <dml/vector/detail/core.hpp>
#include <dml/vector/detail/names.hpp>
#include <dml/vector/detail/protocol.hpp>
#include <dml/vector/gather.hpp>
#include <dml/vector/representation.hpp>
#include <dml/vector/stats.hpp>
#include <dml/vector/to.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

DML_BEGIN_NAMESPACE

/// Fallback that explains how to get Eigen views; the real overload is in
/// <dml/vector/eigen.hpp>.
template <class V>
void eigen_view(V&, detail::priority<0>) {
  static_assert(detail::dependent_false_v<V>,
                "dml::dist_vector::eigen() needs #include <dml/vector/eigen.hpp> (and Eigen installed)");
}

/// Fallback that explains how to get xtensor views; the real overload is in
/// <dml/vector/xtensor.hpp>.
template <class V>
void xtensor_view(V&, detail::priority<0>) {
  static_assert(detail::dependent_false_v<V>,
                "dml::dist_vector::xtensor() needs #include <dml/vector/xtensor.hpp> (and xtensor installed; "
                "link dml::xtensor)");
}

/// A typed distributed vector.
///
/// Every member holds a dense local buffer of `size()` elements. `scatter()`
/// writes it (or, with `sparse`, its nonzeros) into a receive slot on each
/// out-neighbour of the topology; `gather()` waits as the consistency policy
/// says and rewrites the local buffer with the gather functor from itself
/// and the received updates. Construction is collective.
///
/// @tparam T           element type (arithmetic)
/// @tparam Transport   transport context type, e.g. `dml::comm::inproc::context`
/// @tparam Repr        `dml::dense` or `dml::sparse`
/// @tparam Topology    a `dml::topology::topology_generator`
/// @tparam Consistency a `dml::consistency::consistency_policy`
/// @tparam Gather      a gather functor for T (see dml/vector/gather.hpp)
template <class T, class Transport, class Repr, class Topology, class Consistency, class Gather>
class dist_vector {
  static_assert(std::is_arithmetic_v<T>,
                "dml::dist_vector<T, ...>: T must be an arithmetic type (float, double, ...)");
  static_assert(comm::transport<Transport>,
                "dml::dist_vector: the Transport slot needs a type modelling dml::comm::transport "
                "(policy_slot = dml::slot::transport, rank(), size(), view(), barrier(), exchange(), "
                "create_segment())");
  static_assert(std::is_same_v<Repr, dense> || std::is_same_v<Repr, sparse>,
                "dml::dist_vector: the representation slot takes dml::dense or dml::sparse");
  static_assert(topology::topology_generator<Topology>,
                "dml::dist_vector: the Topology slot needs a dml::topology::topology_generator");
  static_assert(!topology::time_varying_generator<Topology> || std::is_same_v<Consistency, consistency::bsp>,
                "dml::dist_vector: a time-varying topology (e.g. dml::topology::one_peer_exponential) needs "
                "dml::consistency::bsp, which combines exactly each round's update from each round's peer");
  static_assert(consistency::consistency_policy<Consistency>,
                "dml::dist_vector: the Consistency slot needs a dml::consistency::consistency_policy");
  static_assert(gather::gather_functor<Gather, T>,
                "dml::dist_vector: the Gather slot needs a callable f(std::span<T>, "
                "std::span<const dml::gather::input<T>>)");

  using core_type = detail::vector_core<T, Transport, Repr>;

 public:
  using value_type = T;
  using transport_type = Transport;
  using representation_type = Repr;
  using topology_type = Topology;
  using consistency_type = Consistency;
  using gather_type = Gather;
  /// The steps consistency policies are made of; a policy's scatter(p) and
  /// gather(p) receive one of these (see dml/vector/detail/protocol.hpp).
  using protocol = detail::vector_protocol<core_type>;

  /// Collective: every live member must construct its vector with the same
  /// length and policies, in the same order relative to other vectors.
  /// Throws `dml::config_error` on every member when they disagree, when the
  /// length is zero, when a sparse capacity is zero or exceeds the length, or
  /// when the topology over the live members is not strongly connected.
  /// A member that fails meanwhile is survived as in scatter(): the others
  /// build the vector over a view without it (with `fault::policy::abort`
  /// they throw `dml::peer_failure` naming it).
  dist_vector(Transport& comm, std::size_t length, Repr repr = {}, Topology topo = {}, Consistency cons = {},
              Gather gather = {})
      : core_(comm, length, std::move(repr)),
        topo_(std::move(topo)),
        cons_(std::move(cons)),
        gather_(std::move(gather)) {
    core_.carry_weights(gather::carries_weights_v<Gather>);
    detail::settle_background(comm);  // another vector's scatter_async() finishes first
    for (;;) {
      try {
        build();
        break;
      } catch (const peer_failure&) {
        core_.recover_or_rethrow();
      }
    }
    if constexpr (core_type::recoverable)
      subscription_ =
          fault::subscription(comm, this, [](void* self) { static_cast<dist_vector*>(self)->rebuild(); });
  }

  dist_vector(const dist_vector&) = delete;
  dist_vector& operator=(const dist_vector&) = delete;
  /// Moves keep the subscription to the transport's view changes (the
  /// vector is rebuilt where it now lives).
  dist_vector(dist_vector&& o) noexcept
      : deferred_(o.settle_quietly()),
        last_gather_(o.last_gather_),
        rebuilds_seen_(o.rebuilds_seen_),
        advised_(o.advised_),
        quiet_(o.quiet_),
        core_(std::move(o.core_)),
        topo_(std::move(o.topo_)),
        cons_(std::move(o.cons_)),
        gather_(std::move(o.gather_)),
        subscription_(std::move(o.subscription_)) {
    subscription_.set_owner(this);
  }
  dist_vector& operator=(dist_vector&& o) noexcept {
    if (this != &o) {
      (void)settle_quietly();
      deferred_ = o.settle_quietly();
      last_gather_ = o.last_gather_;
      rebuilds_seen_ = o.rebuilds_seen_;
      advised_ = o.advised_;
      quiet_ = o.quiet_;
      core_ = std::move(o.core_);
      topo_ = std::move(o.topo_);
      cons_ = std::move(o.cons_);
      gather_ = std::move(o.gather_);
      subscription_ = std::move(o.subscription_);
      subscription_.set_owner(this);
    }
    return *this;
  }
  /// Waits for a scatter still under way (scatter_async()).
  ~dist_vector() { (void)settle_quietly(); }

  /// Number of elements.
  [[nodiscard]] std::size_t size() const noexcept { return core_.size(); }
  /// The local buffer.
  [[nodiscard]] std::span<T> span() noexcept { return core_.span(); }
  [[nodiscard]] std::span<const T> span() const noexcept { return core_.span(); }
  [[nodiscard]] T* data() noexcept { return core_.span().data(); }
  [[nodiscard]] const T* data() const noexcept { return core_.span().data(); }
  /// The local buffer as an Eigen column vector (no copy); needs
  /// <dml/vector/eigen.hpp>.
  template <class Self = dist_vector>
  [[nodiscard]] auto eigen() {
    return eigen_view(static_cast<Self&>(*this), detail::priority<1>{});
  }
  template <class Self = dist_vector>
  [[nodiscard]] auto eigen() const {
    return eigen_view(static_cast<const Self&>(*this), detail::priority<1>{});
  }
  /// The local buffer as an xtensor adaptor (no copy); needs
  /// <dml/vector/xtensor.hpp>.
  template <class Self = dist_vector>
  [[nodiscard]] auto xtensor() {
    return xtensor_view(static_cast<Self&>(*this), detail::priority<1>{});
  }

  /// Sends the local buffer to the out-neighbours as the update of the next
  /// clock, as the consistency policy prescribes.
  ///
  /// When a member fails meanwhile and the transport can shrink its group,
  /// the survivors agree on a new view, every vector is rebuilt over them,
  /// and the scatter is made again on the new graph; with
  /// `fault::policy::abort` it throws `dml::peer_failure` instead.
  void scatter() {
    const exchange_clock clock(*this, true);
    settle();
    core_.encode();  // may throw (sparse capacity) before anything is sent
    send();
  }

  /// Sends the local buffer as the update of the next clock to the listed
  /// out-neighbours only (see dml::to). The consistency policy stays exact
  /// about who waits for whom: under bsp and notify_ack every out-neighbour
  /// left out receives a marker (header and footer, no payload), so its
  /// gather completes and combines only the updates sent to it; under ssp
  /// the marker goes beside the newest update sent to that neighbour, which
  /// the neighbour keeps and may still combine within the slack; under asp
  /// those left out receive nothing. Throws `dml::config_error` naming the
  /// first id that is not an out-neighbour of this member in this round;
  /// nothing is sent then. After a view change the scatter is made again on
  /// the new graph, to the listed ids that are still out-neighbours.
  void scatter(const to& destinations) {
    const exchange_clock timing(*this, true);
    settle();
    const std::uint64_t next = core_.clock() + 1;
    std::vector<member_id> ids = destinations.ids;
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    const auto out = core_.out_neighbours();
    for (const member_id m : ids) {
      if (!std::binary_search(out.begin(), out.end(), m) || !core_.out_active(m, next)) {
        std::string list;
        for (const member_id o : out)
          if (core_.out_active(o, next)) list += (list.empty() ? "" : ", ") + std::to_string(o);
        throw config_error("dml::dist_vector::scatter(dml::to{...}): member " + std::to_string(m) +
                           " is not an out-neighbour of member " + std::to_string(rank()) + " at clock " +
                           std::to_string(next) + " (its out-neighbours: " + (list.empty() ? "none" : list) +
                           ")");
      }
    }
    core_.encode();
    core_.set_destinations(std::move(ids));
    send();
  }

  /// The weight the following scatters carry (kept until changed), for a
  /// gather that uses weights (dml::gather::weighted_average): e.g. this
  /// member's shard size, or the samples it processed since the last
  /// exchange. Finite and ≥ 0; 1 until set. The weight of an update is
  /// fixed when it is scattered.
  /// @throws dml::config_error when `w` is negative or not finite.
  template <class G = Gather>
  void set_weight(double w) {
    static_assert(gather::carries_weights_v<G>,
                  "dml::dist_vector::set_weight: the gather functor does not use weights (use "
                  "dml::gather::weighted_average)");
    if (!std::isfinite(w) || w < 0)
      throw config_error("dml::dist_vector::set_weight: the weight must be finite and >= 0, got " +
                         std::to_string(w));
    core_.set_weight(w);
  }
  /// The weight the next scatter carries.
  [[nodiscard]] double weight() const noexcept { return core_.weight(); }

  /// The non-blocking scatter: packs the local buffer (so the caller may
  /// change it right away) and returns; the writes, flushes and the
  /// policy's waits (bsp's barrier, notify_ack's acknowledgements) run on
  /// the context's background thread while the caller computes. It is
  /// complete when wait() returns, and every operation of any vector on
  /// this context waits for it first; until then do not use the transport
  /// context directly. Errors, and recoveries from a member's failure,
  /// happen as in scatter() and reach the caller at that point. Where the
  /// transport cannot be used from another thread (MPI started below
  /// MPI_THREAD_SERIALIZED; verbs) it is scatter().
  void scatter_async() {
    const exchange_clock clock(*this, true);
    settle();
    detail::background* b = background();
    if (b == nullptr) return scatter();
    core_.encode_copy();  // the caller may change the local buffer right away
    b->launch([this] { send(); });
  }

  /// Waits for a scatter_async() to complete; rethrows what it threw.
  void wait() {
    const exchange_clock clock(*this, false);
    settle();
  }

  /// Sparse vectors: sends the given index/value pairs (strictly ascending
  /// indices below size(), at most the capacity) as the update of the next
  /// clock instead of the local buffer's nonzeros, in time proportional to
  /// the pairs, not the length. Bad pairs are a `dml::config_error` and
  /// nothing is sent. Otherwise as scatter().
  void scatter(std::span<const std::uint32_t> indices,
               std::span<const T> values) requires std::is_same_v<Repr, sparse> {
    const exchange_clock clock(*this, true);
    settle();
    core_.encode_pairs(indices, values);
    send();
  }

  /// Waits as the consistency policy prescribes, then combines the local
  /// buffer with the received updates using the gather functor. After a
  /// view change (see scatter()), updates the survivors can no longer send
  /// for this round are left out and counted in
  /// `stats().lost_in_view_change`.
  void gather() {
    {
      const exchange_clock clock(*this, false);
      settle();
      for (;;) {
        core_.begin_gather();
        try {
          core_.check_view();
          protocol p = make_protocol();
          cons_.gather(p);
          break;
        } catch (const peer_failure&) {
          core_.recover_or_rethrow();
          if (core_.applied()) break;  // only the acknowledgements were cut short
        }
      }
      ++core_.stats().gathers;
    }
    const auto now = std::chrono::steady_clock::now();
    observe_round(now);
    last_gather_ = now;
    maybe_advise();
  }

  /// For uneven inputs: this member has no more data of its own. It keeps
  /// taking part in the exchange, without the caller's loop, until every
  /// live member has called join(), so the others never wait for a
  /// scatter that would not come; then it returns. Every member calls it
  /// once, after its last own scatter()/gather(); each contributes its
  /// last value meanwhile (under an averaging gather, as a member with no
  /// gradient would). Returns the latest clock at which a member joined.
  ///
  /// Under bsp, notify_ack and ssp a joined member goes on with scatter()
  /// and gather() of its local buffer (whose gather still combines what
  /// the others send); once it sees every member joined, it stops at the
  /// latest join clock plus (slack + 1) x (diameter + 1) clocks, a number
  /// every member computes alike and no member can be past when it learns
  /// of the last join, so all of them end on the same clock. Under asp,
  /// ssp_bounded and asp_fresh (whose members may drift apart without
  /// bound) a joined member only waits (without a wait limit, watching for
  /// failures) while the others read its last update; under ssp_bounded
  /// they stall for it at most the stall per gather.
  /// A member that fails meanwhile is left out as in scatter().
  std::uint64_t join() {
    settle();
    static_assert(detail::join_slack<Consistency>::known,
                  "dml::dist_vector::join: supported for bsp, asp, ssp<S>, notify_ack, ssp_bounded<S>, "
                  "asp_fresh<B> and consistency::any; "
                  "a custom policy must say how far its members may drift apart");
    std::uint64_t announced = ~std::uint64_t{0};  // the epoch this member's join word was written in
    const std::uint64_t joined_at = clock();
    const auto slack = detail::join_slack<Consistency>::of(cons_);
    auto announce = [&] {
      if (announced == core_.epoch()) return;
      for (;;) {
        try {
          core_.announce_join(joined_at);
          break;
        } catch (const peer_failure&) {
          core_.recover_or_rethrow();
        }
      }
      announced = core_.epoch();
    };
    if (slack) {
      std::optional<std::uint64_t> latest, stop;
      for (;;) {
        announce();
        if (!stop) {
          latest = core_.last_join();
          if (latest)
            stop =
                *latest + (*slack + 1) * (static_cast<std::uint64_t>(topology::diameter(core_.graph())) + 1);
        }
        if (stop && clock() >= *stop) return *latest;
        scatter();
        gather();
      }
    }
    auto& comm = core_.comm();
    // The others may train for hours: yield briefly, then sleep.
    detail::backoff pause({.spin = 0,
                           .yield = 64,
                           .short_sleeps = 1024,
                           .short_sleep = std::chrono::microseconds(50),
                           .long_sleep = std::chrono::microseconds(1000)});
    for (;;) {
      announce();
      try {
        core_.check_view();
        if (const auto last = core_.last_join()) return *last;
        for (member_id m : comm.view().live) {
          if (!comm.alive(m))
            throw peer_failure(m, "dml::dist_vector::join: member " + std::to_string(m) + " has failed");
          if constexpr (requires { comm.finished(m); }) {
            if (comm.finished(m) && !core_.has_joined(m)) {
              detail::check_view_before_blaming(comm);
              throw config_error("dml::dist_vector::join: member " + std::to_string(m) +
                                 " returned from its function without calling join()");
            }
          }
        }
        if constexpr (requires { comm.poll(); }) comm.poll();
      } catch (const peer_failure&) {
        core_.recover_or_rethrow();
      }
      pause.pause();
    }
  }

  /// Barrier over the live members (over the survivors after a failure;
  /// see dml::fault::barrier).
  void barrier() {
    settle();
    const auto start = std::chrono::steady_clock::now();
    fault::barrier(core_.comm());
    core_.stats().wait_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  /// Number of scatters so far; the clock of the last update sent.
  [[nodiscard]] std::uint64_t clock() const noexcept { return core_.clock(); }
  [[nodiscard]] const vector_stats& stats() const noexcept { return core_.stats(); }

  /// Whether this vector may print the one-line advice to exchange less
  /// often (dml/vector/advice.hpp) when communication dominates its time.
  /// On by default; `set_advice(false)` silences this vector only, where
  /// the process-wide dml::set_advice(false) silences all. For vectors
  /// whose exchange rate their user does not choose: a library's internal
  /// vectors (the schedule engines' are silenced this way).
  void set_advice(bool on) noexcept { quiet_ = !on; }
  [[nodiscard]] bool advice() const noexcept { return !quiet_; }
  [[nodiscard]] const topology::graph& graph() const noexcept { return core_.graph(); }
  [[nodiscard]] member_id rank() const { return core_.comm().rank(); }
  /// Epoch of the membership view the vector's graph and slots were built
  /// for (0 until a member fails).
  [[nodiscard]] std::uint64_t epoch() const noexcept { return core_.epoch(); }
  [[nodiscard]] std::span<const member_id> in_neighbours() const { return core_.in_neighbours(); }
  [[nodiscard]] std::span<const member_id> out_neighbours() const { return core_.out_neighbours(); }
  [[nodiscard]] const Repr& representation() const noexcept { return core_.representation(); }
  [[nodiscard]] const Topology& topology() const noexcept { return topo_; }
  [[nodiscard]] const Consistency& consistency() const noexcept { return cons_; }
  [[nodiscard]] Gather& gather_functor() noexcept { return gather_; }
  /// One line naming length, element type and policies (what members compare).
  [[nodiscard]] const std::string& description() const noexcept { return core_.description(); }

 private:
  // Times an exchange call into stats().exchange_seconds; a scatter also
  // books the time since the last gather as the caller's computation.
  class exchange_clock {
   public:
    exchange_clock(dist_vector& v, bool starts_round) : v_(v), start_(std::chrono::steady_clock::now()) {
      if (starts_round && v_.last_gather_ != std::chrono::steady_clock::time_point{})
        v_.core_.stats().compute_seconds += std::chrono::duration<double>(start_ - v_.last_gather_).count();
    }
    exchange_clock(const exchange_clock&) = delete;
    exchange_clock& operator=(const exchange_clock&) = delete;
    ~exchange_clock() {
      v_.core_.stats().exchange_seconds +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    }

   private:
    dist_vector& v_;
    std::chrono::steady_clock::time_point start_;
  };

  // Feeds the adaptive timeout (dml/fault/timeout.hpp) one round: from the
  // end of the previous gather to the end of this one. A round that held a
  // recovery says nothing about how long rounds take and is left out.
  void observe_round(std::chrono::steady_clock::time_point now) {
    if constexpr (fault::adaptable_transport<Transport>) {
      const std::uint64_t rebuilds = core_.stats().rebuilds;
      if (last_gather_ != std::chrono::steady_clock::time_point{} && rebuilds == rebuilds_seen_)
        fault::observe_round(core_.comm(), std::chrono::duration<double>(now - last_gather_).count());
      rebuilds_seen_ = rebuilds;
    }
  }

  // Once per vector, after enough rounds to judge: one line on the lowest
  // live member when communication takes more than half of the time.
  void maybe_advise() {
    if (advised_ || quiet_ || core_.stats().gathers < 64 || !advice_enabled()) return;
    advised_ = true;
    const auto view = core_.comm().view();
    if (view.live.empty() || view.live.front() != core_.comm().rank()) return;
    const auto a = advise(core_.stats());
    if (!a.dominates) return;
    std::fprintf(stderr, "dml: advice for a vector of %zu elements: %s\n", core_.size(), a.text.c_str());
    std::fflush(stderr);
  }

  // The context's background thread, when the transport may be used from
  // another thread.
  detail::background* background() {
    if constexpr (requires(const Transport& t) {
                    { t.background_calls() } -> std::convertible_to<bool>;
                  }) {
      if (core_.comm().background_calls()) return detail::background_of(core_.comm());
    }
    return nullptr;
  }
  // Waits for the context's background operation; rethrows its error.
  void settle() {
    if (deferred_) std::rethrow_exception(std::exchange(deferred_, nullptr));
    detail::settle_background(core_.comm());
  }
  // settle() for destructors and moves: the error is returned, not thrown.
  std::exception_ptr settle_quietly() noexcept {
    try {
      settle();
    } catch (...) {
      return std::current_exception();
    }
    return nullptr;
  }

  // The clock ticks and the policy's scatter steps run; a failure meanwhile
  // is recovered from and the scatter made again over the survivors.
  void send() {
    for (;;) {
      try {
        core_.check_view();
        core_.begin_scatter();
        protocol p = make_protocol();
        cons_.scatter(p);
        core_.end_scatter();
        return;
      } catch (const peer_failure&) {
        core_.undo_scatter();  // made again on the new graph
        core_.recover_or_rethrow();
      }
    }
  }

  protocol make_protocol() { return protocol(core_, cons_, detail::gather_call<T>::of(gather_)); }

  // Called by dml::fault::recover over a new view.
  void rebuild() {
    build();
    ++core_.stats().rebuilds;
  }

  // The graph over the current view and the description members compare;
  // the core does the collective part.
  void build() {
    const auto view = core_.comm().view();
    std::string problem;
    topology::graph graph{std::vector<std::vector<member_id>>(1)};
    std::vector<detail::round_plan> schedule;
    try {
      core_.validate_local();
      graph = topology::build(topo_, std::span<const member_id>(view.live));
      topology::require_strongly_connected(graph, topo_.name());
      if constexpr (topology::time_varying_generator<Topology>) schedule = plan_rounds(graph, view.live);
    } catch (const config_error& e) {
      problem = e.what();
    }
    std::string description = describe(graph);
    core_.build(std::move(graph), std::move(description), problem, std::move(schedule));
  }

  // A time-varying topology: each round of its period over the live
  // members, as this member sees it against the union graph `graph` (whose
  // neighbours have the receive slots).
  // (Constrained, so an explicit instantiation of a vector over a static
  // topology does not instantiate it.)
  std::vector<detail::round_plan> plan_rounds(
      const topology::graph& graph,
      const std::vector<member_id>& live) const requires topology::time_varying_generator<Topology> {
    const member_id me = core_.comm().rank();
    const auto out = graph.out(me);
    const auto in = graph.in(me);
    std::vector<detail::round_plan> plans(topo_.period(live.size()));
    for (std::size_t t = 0; t < plans.size(); ++t) {
      const auto round = topology::build_round(topo_, std::span<const member_id>(live), t);
      auto& p = plans[t];
      p.self = round.self_weight(me);
      for (const member_id m : out) p.out_active.push_back(round.has_edge(me, m));
      for (const member_id m : in) {
        p.in_active.push_back(round.has_edge(m, me));
        p.in_weights.push_back(round.weight(m, me));
      }
      for (const member_id m : round.out(me))  // a round's edge outside the union would have no slot
        if (!graph.has_edge(me, m))
          throw config_error("topology '" + std::string(topo_.name()) + "': round " + std::to_string(t) +
                             " has edge " + std::to_string(me) + " -> " + std::to_string(m) +
                             ", which out_lists() (the union over a period) does not");
    }
    return plans;
  }

  [[nodiscard]] std::string describe(const topology::graph& graph) const {
    return detail::describe_vector(
        {core_.size(), detail::element_name<T>(), detail::policy_name(core_.representation()),
         detail::policy_name(topo_), detail::policy_name(cons_), detail::policy_name(gather_),
         gather::carries_weights_v<Gather>},
        graph);
  }

  std::exception_ptr deferred_;  // from a background scatter, rethrown by the next operation
  std::chrono::steady_clock::time_point last_gather_{};  // end of the last gather (stats().compute_seconds)
  std::uint64_t rebuilds_seen_ = 0;                      // stats().rebuilds at the last gather's end
  bool advised_ = false;                                 // the advice line was considered
  bool quiet_ = false;                                   // set_advice(false)
  core_type core_;
  Topology topo_;
  Consistency cons_;
  Gather gather_;
  fault::subscription subscription_;  // rebuilds over the survivors (transports that can shrink)
};

DML_END_NAMESPACE

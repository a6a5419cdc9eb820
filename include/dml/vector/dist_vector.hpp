// SPDX-License-Identifier: BSL-1.0
/// @file
/// The typed distributed vector: a local buffer that members exchange with
/// one-sided writes into per-sender receive slots.
#pragma once

#include <dml/comm/concepts.hpp>
#include <dml/consistency/bsp.hpp>
#include <dml/consistency/concepts.hpp>
#include <dml/detail/policy.hpp>
#include <dml/error.hpp>
#include <dml/fault/membership.hpp>
#include <dml/fwd.hpp>
#include <dml/topology/all.hpp>
#include <dml/topology/concepts.hpp>
#include <dml/topology/graph.hpp>
#include <dml/vector/detail/wait.hpp>
#include <dml/vector/gather.hpp>
#include <dml/vector/representation.hpp>
#include <dml/vector/stats.hpp>

#include <Eigen/Core>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

DML_BEGIN_NAMESPACE

namespace detail {

template <int N>
struct priority : priority<N - 1> {};
template <>
struct priority<0> {};

template <class T>
std::string element_name() {
  if constexpr (std::is_same_v<T, float>)
    return "float";
  else if constexpr (std::is_same_v<T, double>)
    return "double";
  else if constexpr (std::is_same_v<T, std::int32_t>)
    return "int32";
  else if constexpr (std::is_same_v<T, std::int64_t>)
    return "int64";
  else if constexpr (std::is_same_v<T, std::uint32_t>)
    return "uint32";
  else if constexpr (std::is_same_v<T, std::uint64_t>)
    return "uint64";
  else
    return std::string(typeid(T).name()) + "/" + std::to_string(sizeof(T));
}

template <class P>
std::string policy_name(const P& p) {
  if constexpr (requires { p.describe(); })
    return std::string(p.describe());
  else if constexpr (requires { p.name(); })
    return std::string(p.name());
  else
    return std::string("user type ") + typeid(P).name();
}

inline std::uint64_t fnv1a(std::uint64_t h, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) {
    h ^= (v >> (8 * i)) & 0xff;
    h *= 0x100000001b3ULL;
  }
  return h;
}

// A receive slot is header{seq, clock, length, epoch} · payload · footer{seq},
// all in 64-bit words. seq is the sender's clock, so 0 means "never written".
inline constexpr std::size_t header_words = 4;
inline constexpr std::size_t footer_words = 1;
inline constexpr std::size_t slot_depth = 2;

inline std::size_t words_for(std::size_t bytes) { return (bytes + 7) / 8; }

}  // namespace detail

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
  static_assert(consistency::consistency_policy<Consistency>,
                "dml::dist_vector: the Consistency slot needs a dml::consistency::consistency_policy");
  static_assert(gather::gather_functor<Gather, T>,
                "dml::dist_vector: the Gather slot needs a callable f(std::span<T>, "
                "std::span<const dml::gather::input<T>>)");

  static constexpr bool is_sparse = std::is_same_v<Repr, sparse>;
  static constexpr bool recoverable = comm::shrinkable_transport<Transport>;
  using segment_type = typename Transport::segment_type;

 public:
  using value_type = T;
  using transport_type = Transport;
  using representation_type = Repr;
  using topology_type = Topology;
  using consistency_type = Consistency;
  using gather_type = Gather;
  class protocol;

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
      : comm_(&comm),
        n_(length),
        repr_(std::move(repr)),
        topo_(std::move(topo)),
        cons_(std::move(cons)),
        gather_(std::move(gather)),
        local_(length, T{}) {
    // A member that fails before or while the others build the vector (still
    // loading its data, say) is handled like a failure in scatter(): the
    // survivors agree on a view without it and build the vector over that
    // view, or all throw under fault::policy::abort.
    for (;;) {
      try {
        build();
        break;
      } catch (const peer_failure&) {
        recover_or_rethrow();
      }
    }
    if constexpr (recoverable)
      subscription_ =
          fault::subscription(comm, this, [](void* self) { static_cast<dist_vector*>(self)->rebuild(); });
  }

  dist_vector(const dist_vector&) = delete;
  dist_vector& operator=(const dist_vector&) = delete;
  /// Moves keep the registration with the transport (the context rebuilds
  /// the vector where it now lives after a view change).
  dist_vector(dist_vector&& o) noexcept
      : comm_(o.comm_),
        n_(o.n_),
        repr_(std::move(o.repr_)),
        topo_(std::move(o.topo_)),
        cons_(std::move(o.cons_)),
        gather_(std::move(o.gather_)),
        local_(std::move(o.local_)),
        graph_(std::move(o.graph_)),
        seg_(std::move(o.seg_)),
        description_(std::move(o.description_)),
        slot_words_(o.slot_words_),
        clock_(o.clock_),
        send_len_(o.send_len_),
        in_len_(o.in_len_),
        epoch_(o.epoch_),
        pending_(o.pending_),
        in_scatter_(o.in_scatter_),
        applied_(o.applied_),
        out_pos_(std::move(o.out_pos_)),
        ack_word_(std::move(o.ack_word_)),
        consumed_(std::move(o.consumed_)),
        in_clock_(std::move(o.in_clock_)),
        skip_through_(std::move(o.skip_through_)),
        in_values_(std::move(o.in_values_)),
        in_indices_(std::move(o.in_indices_)),
        send_words_(std::move(o.send_words_)),
        inputs_(std::move(o.inputs_)),
        stats_(std::move(o.stats_)),
        subscription_(std::move(o.subscription_)) {
    subscription_.set_owner(this);
  }
  dist_vector& operator=(dist_vector&& o) noexcept {
    if (this != &o) {
      this->~dist_vector();
      ::new (static_cast<void*>(this)) dist_vector(std::move(o));
    }
    return *this;
  }
  ~dist_vector() = default;

  /// Number of elements.
  [[nodiscard]] std::size_t size() const noexcept { return n_; }
  /// The local buffer.
  [[nodiscard]] std::span<T> span() noexcept { return local_; }
  [[nodiscard]] std::span<const T> span() const noexcept { return local_; }
  [[nodiscard]] T* data() noexcept { return local_.data(); }
  [[nodiscard]] const T* data() const noexcept { return local_.data(); }
  /// The local buffer as an Eigen column vector (no copy).
  [[nodiscard]] Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, 1>> eigen() noexcept {
    return {local_.data(), static_cast<Eigen::Index>(n_)};
  }
  [[nodiscard]] Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, 1>> eigen() const noexcept {
    return {local_.data(), static_cast<Eigen::Index>(n_)};
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
  /// When a member fails meanwhile and the transport can shrink its group
  /// (the in-process and `mpi_rma` transports), the survivors agree on a
  /// new view, every vector is rebuilt over them, and the scatter is made
  /// again on the new graph; with `fault::policy::abort` it throws
  /// `dml::peer_failure` instead.
  void scatter() {
    encode();  // may throw (sparse capacity) before anything is sent
    for (;;) {
      try {
        check_view();
        pending_ = false;
        in_scatter_ = true;
        ++clock_;
        protocol p(*this);
        cons_.scatter(p);
        in_scatter_ = false;
        pending_ = true;
        ++stats_.scatters;
        return;
      } catch (const peer_failure&) {
        if (in_scatter_) {  // undone: made again on the new graph
          in_scatter_ = false;
          --clock_;
        }
        recover_or_rethrow();
      }
    }
  }

  /// Waits as the consistency policy prescribes, then combines the local
  /// buffer with the received updates using the gather functor. After a
  /// view change (see scatter()), updates the survivors can no longer send
  /// for this round are left out and counted in
  /// `stats().lost_in_view_change`.
  void gather() {
    for (;;) {
      applied_ = false;
      try {
        check_view();
        protocol p(*this);
        cons_.gather(p);
        ++stats_.gathers;
        return;
      } catch (const peer_failure&) {
        recover_or_rethrow();
        if (applied_) {  // only the acknowledgements were cut short
          ++stats_.gathers;
          return;
        }
      }
    }
  }

  /// Barrier over the live members (over the survivors after a failure;
  /// see dml::fault::barrier).
  void barrier() {
    const auto start = std::chrono::steady_clock::now();
    fault::barrier(*comm_);
    stats_.wait_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  /// Number of scatters so far; the clock of the last update sent.
  [[nodiscard]] std::uint64_t clock() const noexcept { return clock_; }
  [[nodiscard]] const vector_stats& stats() const noexcept { return stats_; }
  [[nodiscard]] const topology::graph& graph() const noexcept { return graph_; }
  [[nodiscard]] member_id rank() const { return comm_->rank(); }
  /// Epoch of the membership view the vector's graph and slots were built
  /// for (0 until a member fails).
  [[nodiscard]] std::uint64_t epoch() const noexcept { return epoch_; }
  [[nodiscard]] std::span<const member_id> in_neighbours() const { return graph_.in(comm_->rank()); }
  [[nodiscard]] std::span<const member_id> out_neighbours() const { return graph_.out(comm_->rank()); }
  [[nodiscard]] const Repr& representation() const noexcept { return repr_; }
  [[nodiscard]] const Topology& topology() const noexcept { return topo_; }
  [[nodiscard]] const Consistency& consistency() const noexcept { return cons_; }
  [[nodiscard]] Gather& gather_functor() noexcept { return gather_; }
  /// One line naming length, element type and policies (what members compare).
  [[nodiscard]] const std::string& description() const noexcept { return description_; }

  /// The steps consistency policies are made of. A policy's scatter(p) and
  /// gather(p) receive one of these.
  class protocol {
   public:
    explicit protocol(dist_vector& v) : v_(v) {}

    /// The vector's clock: the number of scatters so far.
    [[nodiscard]] std::uint64_t clock() const noexcept { return v_.clock_; }

    /// Writes the current update (clock()) into slot clock() mod 2 of every
    /// out-neighbour: header, payload, footer, in that order.
    void write_all() { v_.write_all(); }
    /// Waits for remote completion of every write.
    void flush_all() {
      for (member_id m : v_.out_neighbours()) v_.seg_.flush(m);
    }
    /// Barrier over the live members. A failure inside it propagates to the
    /// operation that called it (which undoes itself and is made again over
    /// the survivors); made again, the barrier resumes, and counts as passed
    /// when another member completed it before the failure (see
    /// dml::fault::barrier).
    void barrier() {
      const auto start = std::chrono::steady_clock::now();
      fault::detail::counted_barrier(*v_.comm_);
      v_.stats_.wait_seconds +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    /// Adds one to this member's notify counter on every out-neighbour.
    void notify_all() {
      const auto out = v_.out_neighbours();
      for (std::size_t k = 0; k < out.size(); ++k) (void)v_.seg_.fetch_add(out[k], v_.out_pos_[k], 1);
    }
    /// Adds one to this member's ack counter on every in-neighbour.
    void ack_all() {
      const auto in = v_.in_neighbours();
      for (std::size_t q = 0; q < in.size(); ++q) (void)v_.seg_.fetch_add(in[q], v_.ack_word_[q], 1);
    }
    /// Waits until every live out-neighbour has acknowledged `round` rounds.
    void wait_acks(std::uint64_t round) {
      const auto out = v_.out_neighbours();
      const std::size_t base = v_.in_neighbours().size();
      for (std::size_t k = 0; k < out.size(); ++k)
        v_.wait_until(out[k], "acknowledgement", [&] { return v_.seg_.load_control(base + k) >= round; });
    }
    /// Waits until every live in-neighbour has notified `round` rounds.
    void wait_notifies(std::uint64_t round) {
      const auto in = v_.in_neighbours();
      for (std::size_t q = 0; q < in.size(); ++q)
        v_.wait_until(in[q], "notify", [&] { return v_.seg_.load_control(q) >= round; });
    }
    /// Waits until every live in-neighbour's newest complete update has
    /// clock ≥ c.
    void wait_newest_at_least(std::uint64_t c) {
      const auto in = v_.in_neighbours();
      for (std::size_t q = 0; q < in.size(); ++q)
        v_.wait_until(in[q], "an update recent enough",
                      [&] { return v_.newest_complete(q) >= c || v_.skip_through_[q] >= c; });
    }
    /// Combines exactly the clock-c update of every in-neighbour, waiting for
    /// any that is not complete yet.
    void combine_exact(std::uint64_t c) { v_.combine_exact(c); }
    /// Combines the newest complete update of every in-neighbour whose clock
    /// is ≥ min_clock, retrying reads torn by a concurrent write.
    void combine_newest(std::uint64_t min_clock) { v_.combine_newest(min_clock); }
    /// Combines the newest complete update of each in-neighbour not combined
    /// before; torn or in-flight updates are skipped. Never blocks.
    void combine_unconsumed() { v_.combine_unconsumed(); }

   private:
    dist_vector& v_;
  };

 private:
  enum class read_result { ok, empty, torn };

  // ---- construction ---------------------------------------------------------
  // ---- membership ------------------------------------------------------------
  // Before each operation: has the group moved on, or has a neighbour died
  // (policies that never wait, like asp, would not notice otherwise)?
  void check_view() {
    if constexpr (recoverable) {
      comm_->check_view();
      for (const auto list : {in_neighbours(), out_neighbours()})
        for (member_id m : list)
          if (!comm_->alive(m))
            throw peer_failure(m, "dml::dist_vector: member " + std::to_string(comm_->rank()) +
                                      "'s neighbour " + std::to_string(m) + " has failed");
    }
  }

  // After a peer failure inside an operation: agree on the survivors and
  // rebuild (every vector of the context), or rethrow when the transport
  // cannot shrink its group or nothing new was agreed.
  void recover_or_rethrow() {
    if constexpr (recoverable) {
      const auto before = comm_->view().epoch;
      fault::recover(*comm_);  // throws under fault::policy::abort
      if (comm_->view().epoch != before || epoch_ != comm_->view().epoch) return;
    }
    throw;
  }

  struct member_state {
    std::uint64_t clock;
    std::uint64_t pending;  // 1 when the clock's update is sent and not yet combined by its sender
  };

  // Called by dml::fault::recover over a new view.
  void rebuild() {
    build();
    ++stats_.rebuilds;
  }

  // Collective over the current view; builds the vector at construction and
  // rebuilds it after a view change, so a member whose construction was cut
  // short by a failure meets, in the same steps, the others rebuilding the
  // vector they finished. Every member learns every other's configuration
  // and problem, so all of them throw the same config_error instead of some
  // waiting forever; and its clock, so the rebuilt slots and counters let an
  // interrupted round finish: each member's own segment gets the notify and
  // ack counts its new neighbours have reached, every update that is still
  // pending is written again, and rounds a new neighbour has already moved
  // past are skipped (their updates are gone).
  void build() {
    const auto view = comm_->view();
    epoch_ = view.epoch;
    std::string problem;
    try {
      validate_local();
      graph_ = topology::build(topo_, std::span<const member_id>(view.live));
      topology::require_strongly_connected(graph_, topo_.name());
    } catch (const config_error& e) {
      problem = e.what();
    }
    description_ = describe();
    const member_state mine{clock_, pending_ ? 1u : 0u};
    std::string record(sizeof mine, '\0');
    std::memcpy(record.data(), &mine, sizeof mine);
    record += problem.empty() ? description_ : "!" + problem;
    const auto all = comm_->exchange(std::as_bytes(std::span<const char>(record.data(), record.size())));
    std::vector<member_state> states(comm_->size(), member_state{0, 0});
    std::vector<std::string> texts;
    texts.reserve(all.size());
    for (std::size_t i = 0; i < all.size(); ++i) {
      if (all[i].size() < sizeof(member_state) || all.size() != view.live.size())
        throw comm_error("dml::dist_vector: malformed build record from member " +
                         std::to_string(i < view.live.size() ? view.live[i] : i));
      std::memcpy(&states[view.live[i]], all[i].data(), sizeof(member_state));
      texts.emplace_back(reinterpret_cast<const char*>(all[i].data()) + sizeof(member_state),
                         all[i].size() - sizeof(member_state));
    }
    check_agreement(texts, view);
    allocate();
    bool resumed = false;
    for (member_id m : view.live) resumed = resumed || states[m].clock != 0;
    if (!resumed) return;  // a new vector: nothing to carry over
    const auto me = comm_->rank();
    const auto in = graph_.in(me);
    const auto out = graph_.out(me);
    for (std::size_t q = 0; q < in.size(); ++q) {
      const auto& s = states[in[q]];
      if (s.clock != 0) (void)seg_.fetch_add(me, q, s.clock);
      skip_through_[q] = s.clock - s.pending;
    }
    for (std::size_t k = 0; k < out.size(); ++k) {
      const auto& s = states[out[k]];
      if (const auto acked = s.clock - s.pending; acked != 0) (void)seg_.fetch_add(me, in.size() + k, acked);
    }
    comm_->barrier();  // counters are set before anyone adds to them
    if (pending_) {
      write_all();
      for (member_id m : out) seg_.flush(m);
    }
  }

  // Slot layout, inboxes and the segment for the current graph.
  void allocate() {
    const auto me = comm_->rank();
    const auto in = graph_.in(me);
    const auto out = graph_.out(me);
    slot_words_ = detail::header_words + payload_words() + detail::footer_words;
    out_pos_.resize(out.size());
    for (std::size_t k = 0; k < out.size(); ++k) out_pos_[k] = position(graph_.in(out[k]), me);
    ack_word_.resize(in.size());
    for (std::size_t q = 0; q < in.size(); ++q)
      ack_word_[q] = graph_.in(in[q]).size() + position(graph_.out(in[q]), me);
    consumed_.assign(in.size(), 0);
    skip_through_.assign(in.size(), 0);
    in_values_.resize(in.size());
    in_indices_.resize(in.size());
    in_clock_.assign(in.size(), 0);
    for (std::size_t q = 0; q < in.size(); ++q) {
      in_values_[q].assign(is_sparse ? repr_capacity() : n_, T{});
      if constexpr (is_sparse) in_indices_[q].assign(repr_capacity(), 0);
    }
    if constexpr (is_sparse) {
      send_words_.assign(payload_words(), 0);
    }
    inputs_.reserve(in.size());
    seg_ = segment_type{};  // the old view's slots are released first
    seg_ = comm_->create_segment(in.size() * detail::slot_depth * slot_words_, in.size() + out.size());
  }

  void validate_local() const {
    if (n_ == 0) throw config_error("dml::dist_vector: length 0 (a vector needs at least one element)");
    if constexpr (is_sparse) {
      if (repr_.capacity == 0)
        throw config_error(
            "dml::sparse: capacity 0 (give the most nonzeros a scatter may send, e.g. sparse{64})");
      if (repr_.capacity > n_)
        throw config_error("dml::sparse: capacity " + std::to_string(repr_.capacity) +
                           " exceeds the length " + std::to_string(n_) + " (use dml::dense)");
      if (n_ > std::size_t{0xffffffffu})
        throw config_error("dml::sparse: length " + std::to_string(n_) + " does not fit 32-bit indices");
    }
  }

  [[nodiscard]] std::string describe() const {
    std::uint64_t h = 0xcbf29ce484222325ULL;
    for (member_id m : graph_.members()) {
      for (member_id o : graph_.out(m)) h = detail::fnv1a(h, (m << 32) ^ o);
    }
    return "length=" + std::to_string(n_) + " element=" + detail::element_name<T>() +
           " representation=" + detail::policy_name(repr_) + " topology=" + detail::policy_name(topo_) +
           " (edges " + std::to_string(graph_.edge_count()) + ", hash " + std::to_string(h % 1000000007ULL) +
           ") consistency=" + detail::policy_name(cons_) + " gather=" + detail::policy_name(gather_);
  }

  void check_agreement(const std::vector<std::string>& recs, const comm::membership_view& view) const {
    auto id = [&](std::size_t i) { return i < view.live.size() ? view.live[i] : i; };
    for (std::size_t i = 0; i < recs.size(); ++i) {
      if (!recs[i].empty() && recs[i][0] == '!')
        throw config_error("dml::make_vector: member " + std::to_string(id(i)) +
                           " rejected the vector: " + recs[i].substr(1));
    }
    for (std::size_t i = 1; i < recs.size(); ++i) {
      if (recs[i] != recs[0])
        throw config_error("dml::make_vector: members disagree on the vector's configuration: member " +
                           std::to_string(id(0)) + " has " + recs[0] + "; member " + std::to_string(id(i)) +
                           " has " + recs[i]);
    }
  }

  static std::size_t position(std::span<const member_id> list, member_id m) {
    const auto it = std::lower_bound(list.begin(), list.end(), m);
    return static_cast<std::size_t>(it - list.begin());
  }

  [[nodiscard]] std::size_t repr_capacity() const {
    if constexpr (is_sparse)
      return repr_.capacity;
    else
      return n_;
  }
  [[nodiscard]] std::size_t index_words() const {
    return is_sparse ? detail::words_for(repr_capacity() * sizeof(std::uint32_t)) : 0;
  }
  [[nodiscard]] std::size_t payload_words() const {
    return index_words() + detail::words_for(repr_capacity() * sizeof(T));
  }

  // ---- scatter ----------------------------------------------------------------
  void encode() {
    if constexpr (is_sparse) {
      std::size_t nnz = 0;
      for (const T& x : local_) nnz += x != T{} ? 1 : 0;
      if (nnz > repr_.capacity)
        throw config_error("dml::sparse: scatter of " + std::to_string(nnz) +
                           " nonzeros exceeds the capacity " + std::to_string(repr_.capacity) +
                           " (nothing was sent)");
      auto* idx = reinterpret_cast<std::byte*>(send_words_.data());
      auto* val = idx + 8 * index_words();
      std::size_t k = 0;
      for (std::size_t i = 0; i < n_; ++i) {
        if (local_[i] == T{}) continue;
        const auto i32 = static_cast<std::uint32_t>(i);
        std::memcpy(idx + k * sizeof(std::uint32_t), &i32, sizeof i32);
        std::memcpy(val + k * sizeof(T), &local_[i], sizeof(T));
        ++k;
      }
      send_len_ = nnz;
    } else {
      send_len_ = n_;
    }
  }

  void write_all() {
    const std::uint64_t t = clock_;
    const std::array<std::uint64_t, detail::header_words> header{t, t, send_len_, epoch_};
    const std::uint64_t footer = t;
    const auto out = out_neighbours();
    for (std::size_t k = 0; k < out.size(); ++k) {
      const member_id target = out[k];
      const std::size_t base = (out_pos_[k] * detail::slot_depth + t % detail::slot_depth) * slot_words_;
      seg_.put(target, base, std::as_bytes(std::span(header)));
      seg_.order(target);
      std::size_t payload_bytes = 0;
      if constexpr (is_sparse) {
        const auto* bytes = reinterpret_cast<const std::byte*>(send_words_.data());
        seg_.put(target, base + detail::header_words, std::span(bytes, 4 * send_len_));
        seg_.put(target, base + detail::header_words + index_words(),
                 std::span(bytes + 8 * index_words(), sizeof(T) * send_len_));
        payload_bytes = (4 + sizeof(T)) * send_len_;
      } else {
        seg_.put(target, base + detail::header_words, std::as_bytes(std::span<const T>(local_)));
        payload_bytes = sizeof(T) * n_;
      }
      seg_.order(target);
      seg_.put(target, base + detail::header_words + payload_words(), std::as_bytes(std::span(&footer, 1)));
      stats_.bytes_sent += payload_bytes + 8 * (detail::header_words + detail::footer_words);
    }
  }

  // ---- reading own slots --------------------------------------------------------
  [[nodiscard]] std::size_t slot_base(std::size_t q, std::size_t d) const {
    return (q * detail::slot_depth + d) * slot_words_;
  }
  // Clock of the complete update in slot (q, d), 0 when empty or mid-write.
  [[nodiscard]] std::uint64_t complete_clock(std::size_t q, std::size_t d) {
    const std::size_t base = slot_base(q, d);
    const std::uint64_t f = seg_.load(base + detail::header_words + payload_words());
    const std::uint64_t h = seg_.load(base);
    return h == f ? h : 0;
  }
  [[nodiscard]] std::uint64_t newest_complete(std::size_t q) {
    seg_.sync();
    std::uint64_t c = 0;
    for (std::size_t d = 0; d < detail::slot_depth; ++d) c = std::max(c, complete_clock(q, d));
    return c;
  }

  // Copies slot (q, d) into in-neighbour q's inbox: footer, header, payload,
  // header again. Accepted only when all three sequence numbers agree.
  read_result read_slot(std::size_t q, std::size_t d) {
    seg_.sync();
    const std::size_t base = slot_base(q, d);
    const std::uint64_t f0 = seg_.load(base + detail::header_words + payload_words());
    const std::uint64_t h0 = seg_.load(base);
    if (h0 == 0 && f0 == 0) return read_result::empty;
    if (h0 != f0) {
      ++stats_.torn_reads;
      return read_result::torn;
    }
    if (seg_.load(base + 3) != epoch_) return read_result::empty;  // a late write from an older view
    const std::uint64_t len = seg_.load(base + 2);
    if (len > repr_capacity() || (!is_sparse && len != n_)) {
      ++stats_.torn_reads;
      return read_result::torn;
    }
    auto& vals = in_values_[q];
    if constexpr (is_sparse) {
      seg_.read(base + detail::header_words,
                std::as_writable_bytes(std::span(in_indices_[q].data(), static_cast<std::size_t>(len))));
      seg_.read(base + detail::header_words + index_words(),
                std::as_writable_bytes(std::span(vals.data(), static_cast<std::size_t>(len))));
    } else {
      seg_.read(base + detail::header_words, std::as_writable_bytes(std::span(vals.data(), n_)));
    }
    const std::uint64_t h1 = seg_.load(base);
    if (h1 != h0) {
      ++stats_.torn_reads;
      return read_result::torn;
    }
    if constexpr (is_sparse) {
      for (std::size_t k = 0; k < len; ++k)
        if (in_indices_[q][k] >= n_) {  // cannot come from a well-formed writer
          ++stats_.torn_reads;
          return read_result::torn;
        }
    }
    in_clock_[q] = h0;
    in_len_ = len;
    stats_.bytes_received += (is_sparse ? (4 + sizeof(T)) * len : sizeof(T) * n_) +
                             8 * (detail::header_words + detail::footer_words);
    return read_result::ok;
  }

  void add_input(std::size_t q, std::size_t len) {
    gather::input<T> in;
    in.sender = in_neighbours()[q];
    in.clock = in_clock_[q];
    in.values = std::span<const T>(in_values_[q].data(), len);
    if constexpr (is_sparse) {
      in.indices = std::span<const std::uint32_t>(in_indices_[q].data(), len);
      in.sparse_values = true;
    }
    inputs_.push_back(in);
    consumed_[q] = std::max(consumed_[q], in_clock_[q]);
  }

  void combine_exact(std::uint64_t c) {
    if (c == 0)
      throw config_error("dml::dist_vector::gather: called before the first scatter() under " +
                         detail::policy_name(cons_) + ", which combines the current round's updates");
    inputs_.clear();
    const auto in = in_neighbours();
    const std::size_t d = c % detail::slot_depth;
    for (std::size_t q = 0; q < in.size(); ++q) {
      if (c <= skip_through_[q]) {  // lost when the group shrank
        ++stats_.lost_in_view_change;
        continue;
      }
      wait_until(in[q], "its update", [&] {
        seg_.sync();
        const std::uint64_t got = complete_clock(q, d);
        if (got > c)
          throw config_error("dml::dist_vector::gather: member " + std::to_string(in[q]) +
                             " overwrote its clock-" + std::to_string(c) + " update with clock " +
                             std::to_string(got) + " before it was combined (members called scatter() and " +
                             "gather() a different number of times?)");
        return got == c && read_slot(q, d) == read_result::ok && in_clock_[q] == c;
      });
      add_input(q, in_len_);
    }
    apply();
  }

  void combine_newest(std::uint64_t min_clock) {
    inputs_.clear();
    const auto in = in_neighbours();
    for (std::size_t q = 0; q < in.size(); ++q) {
      bool have = false;
      wait_until(in[q], "an update recent enough", [&] {
        seg_.sync();
        const std::array<std::uint64_t, detail::slot_depth> clocks{complete_clock(q, 0),
                                                                   complete_clock(q, 1)};
        const std::size_t newer = clocks[1] > clocks[0] ? 1 : 0;
        bool any_recent = false;
        for (std::size_t d : {newer, 1 - newer}) {
          const std::uint64_t c = clocks[d];
          if (c == 0 || c < min_clock) continue;
          any_recent = true;
          if (read_slot(q, d) == read_result::ok && in_clock_[q] >= min_clock) {
            have = true;
            return true;
          }
        }
        return !any_recent;  // nothing recent enough at all: skip this neighbour
      });
      if (have)
        add_input(q, in_len_);
      else if (newest_complete(q) != 0)
        ++stats_.stale_skipped;
    }
    apply();
  }

  void combine_unconsumed() {
    inputs_.clear();
    const auto in = in_neighbours();
    seg_.sync();
    for (std::size_t q = 0; q < in.size(); ++q) {
      // Newest header first; a slot mid-write is read, found torn, counted.
      const std::array<std::uint64_t, detail::slot_depth> clocks{seg_.load(slot_base(q, 0)),
                                                                 seg_.load(slot_base(q, 1))};
      const std::size_t newer = clocks[1] > clocks[0] ? 1 : 0;
      bool have = false;
      bool stale = false;
      for (std::size_t d : {newer, 1 - newer}) {
        const std::uint64_t c = clocks[d];
        if (c == 0) continue;
        if (c <= consumed_[q]) {
          stale = true;
          continue;
        }
        if (read_slot(q, d) == read_result::ok && in_clock_[q] > consumed_[q]) {
          have = true;
          break;
        }
      }
      if (have)
        add_input(q, in_len_);
      else if (stale)
        ++stats_.stale_skipped;
    }
    apply();
  }

  void apply() {
    const std::size_t k = inputs_.size();
    if (stats_.inputs_combined.size() <= k) stats_.inputs_combined.resize(k + 1, 0);
    ++stats_.inputs_combined[k];
    std::size_t live = 0;
    for (member_id m : in_neighbours()) live += comm_->alive(m) ? 1 : 0;
    if (k >= live) ++stats_.full_gathers;
    gather_(std::span<T>(local_), std::span<const gather::input<T>>(inputs_));
    applied_ = true;
    pending_ = false;
  }

  template <class Ready>
  void wait_until(member_id peer, const char* what, Ready&& ready) {
    detail::wait_until(*comm_, peer, what, std::forward<Ready>(ready), stats_.wait_seconds);
  }

  Transport* comm_;
  std::size_t n_;
  Repr repr_;
  Topology topo_;
  Consistency cons_;
  Gather gather_;
  std::vector<T> local_;
  topology::graph graph_{std::vector<std::vector<member_id>>(1)};  // replaced in setup()
  segment_type seg_{};
  std::string description_;
  std::size_t slot_words_ = 0;
  std::uint64_t clock_ = 0;
  std::uint64_t send_len_ = 0;
  std::size_t in_len_ = 0;
  std::uint64_t epoch_ = 0;            // view epoch of graph_ and seg_
  bool pending_ = false;               // local_ is the update of clock_, sent and not yet combined here
  bool in_scatter_ = false;            // a scatter is under way (undone when a failure cuts it short)
  bool applied_ = false;               // the current gather has rewritten local_
  std::vector<std::size_t> out_pos_;   // my index in each out-neighbour's in-list
  std::vector<std::size_t> ack_word_;  // my ack counter's word on each in-neighbour
  std::vector<std::uint64_t> consumed_;
  std::vector<std::uint64_t> in_clock_;
  std::vector<std::uint64_t> skip_through_;  // rounds <= this from in-neighbour q were lost in a view change
  std::vector<std::vector<T>> in_values_;
  std::vector<std::vector<std::uint32_t>> in_indices_;
  std::vector<std::uint64_t> send_words_;
  std::vector<gather::input<T>> inputs_;
  vector_stats stats_;
  fault::subscription subscription_;  // rebuilds over the survivors (transports that can shrink)
};

DML_END_NAMESPACE

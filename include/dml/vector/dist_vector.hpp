// SPDX-License-Identifier: BSL-1.0
/// @file
/// The typed distributed vector: a local buffer that members exchange with
/// one-sided writes into per-sender receive slots. This is the front end;
/// the slot wire format is vector/detail/slots.hpp, the payload codecs
/// vector/detail/codec.hpp, the steps consistency policies are made of
/// vector/detail/protocol.hpp, and what the built-in policies combine
/// consistency/detail/combine.hpp.
#pragma once

#include <dml/comm/concepts.hpp>
#include <dml/consistency/concepts.hpp>
#include <dml/detail/policy.hpp>
#include <dml/error.hpp>
#include <dml/fault/membership.hpp>
#include <dml/fwd.hpp>
#include <dml/topology/concepts.hpp>
#include <dml/topology/graph.hpp>
#include <dml/vector/detail/codec.hpp>
#include <dml/vector/detail/names.hpp>
#include <dml/vector/detail/protocol.hpp>
#include <dml/vector/detail/slots.hpp>
#include <dml/vector/detail/wait.hpp>
#include <dml/vector/gather.hpp>
#include <dml/vector/representation.hpp>
#include <dml/vector/stats.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <span>
#include <string>
#include <type_traits>
#include <typeinfo>
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
  static_assert(consistency::consistency_policy<Consistency>,
                "dml::dist_vector: the Consistency slot needs a dml::consistency::consistency_policy");
  static_assert(gather::gather_functor<Gather, T>,
                "dml::dist_vector: the Gather slot needs a callable f(std::span<T>, "
                "std::span<const dml::gather::input<T>>)");

  static constexpr bool is_sparse = std::is_same_v<Repr, sparse>;
  static constexpr bool recoverable = comm::shrinkable_transport<Transport>;
  using segment_type = typename Transport::segment_type;
  using codec_type = std::conditional_t<is_sparse, detail::sparse_codec<T>, detail::dense_codec<T>>;
  friend class detail::vector_protocol<dist_vector>;

 public:
  using value_type = T;
  using transport_type = Transport;
  using representation_type = Repr;
  using topology_type = Topology;
  using consistency_type = Consistency;
  using gather_type = Gather;
  /// The steps consistency policies are made of; a policy's scatter(p) and
  /// gather(p) receive one of these (see dml/vector/detail/protocol.hpp).
  using protocol = detail::vector_protocol<dist_vector>;

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
        local_(length, T{}),
        codec_(length, capacity()) {
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
  /// Moves keep the subscription to the transport's view changes (the
  /// vector is rebuilt where it now lives).
  dist_vector(dist_vector&& o) noexcept
      : comm_(o.comm_),
        n_(o.n_),
        repr_(std::move(o.repr_)),
        topo_(std::move(o.topo_)),
        cons_(std::move(o.cons_)),
        gather_(std::move(o.gather_)),
        local_(std::move(o.local_)),
        codec_(std::move(o.codec_)),
        graph_(std::move(o.graph_)),
        seg_(std::move(o.seg_)),
        description_(std::move(o.description_)),
        layout_(o.layout_),
        clock_(o.clock_),
        send_len_(o.send_len_),
        epoch_(o.epoch_),
        pending_(o.pending_),
        in_scatter_(o.in_scatter_),
        applied_(o.applied_),
        out_pos_(std::move(o.out_pos_)),
        ack_word_(std::move(o.ack_word_)),
        consumed_(std::move(o.consumed_)),
        skip_through_(std::move(o.skip_through_)),
        staged_(std::move(o.staged_)),
        inboxes_(std::move(o.inboxes_)),
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
    send_len_ = codec_.encode(local_);  // may throw (sparse capacity) before anything is sent
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

 private:
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

  // Slot layout, per-neighbour state and the segment for the current graph.
  void allocate() {
    const auto me = comm_->rank();
    const auto in = graph_.in(me);
    const auto out = graph_.out(me);
    layout_.payload_words = codec_.payload_words();
    out_pos_.resize(out.size());
    for (std::size_t k = 0; k < out.size(); ++k) out_pos_[k] = position(graph_.in(out[k]), me);
    ack_word_.resize(in.size());
    for (std::size_t q = 0; q < in.size(); ++q)
      ack_word_[q] = graph_.in(in[q]).size() + position(graph_.out(in[q]), me);
    consumed_.assign(in.size(), 0);
    skip_through_.assign(in.size(), 0);
    staged_.assign(in.size(), gather::input<T>{});
    inboxes_.clear();  // made on first use: only policies that copy need them
    inputs_.reserve(in.size());
    seg_ = segment_type{};  // the old view's slots are released first
    seg_ = comm_->create_segment(layout_.words(in.size()), in.size() + out.size());
  }

  [[nodiscard]] std::size_t capacity() const noexcept {
    if constexpr (is_sparse)
      return repr_.capacity;
    else
      return n_;
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

  // ---- the steps the protocol is made of --------------------------------------
  // Writes the current update into slot clock mod depth of every out-neighbour.
  void write_all() {
    const auto out = out_neighbours();
    const auto parts = codec_.parts(send_len_);
    for (std::size_t k = 0; k < out.size(); ++k) {
      const std::size_t base = layout_.base(out_pos_[k], clock_ % detail::slot_depth);
      stats_.bytes_sent +=
          detail::write_slot(seg_, out[k], base, layout_.payload_words, clock_, send_len_, epoch_, parts);
    }
  }

  // q's update in slot (q, d), holding clock c, staged in place.
  bool take_in_place(std::size_t q, std::size_t d, std::uint64_t c) {
    const std::size_t base = layout_.base(q, d);
    if (seg_.load(base + 3) != epoch_) return false;  // a late write from an older view
    const std::uint64_t len = seg_.load(base + 2);
    auto& in = staged_[q];
    in = gather::input<T>{};
    if (!codec_.valid_length(len) || !codec_.view(seg_, layout_.payload(q, d), len, in)) {
      ++stats_.torn_reads;
      return false;
    }
    in.sender = in_neighbours()[q];
    in.clock = c;
    stats_.bytes_received += codec_.payload_bytes(len) + 8 * (detail::header_words + detail::footer_words);
    return true;
  }

  // A copy of slot (q, d) staged as q's input: footer, header, payload,
  // header again; accepted only when all three sequence numbers agree.
  detail::slot_read take_copy(std::size_t q, std::size_t d) {
    seg_.sync();
    const std::size_t base = layout_.base(q, d);
    const std::uint64_t f0 = seg_.load(layout_.footer(q, d));
    const std::uint64_t h0 = seg_.load(base);
    if (h0 == 0 && f0 == 0) return detail::slot_read::empty;
    if (h0 != f0) {
      ++stats_.torn_reads;
      return detail::slot_read::torn;
    }
    if (seg_.load(base + 3) != epoch_) return detail::slot_read::empty;  // a late write from an older view
    const std::uint64_t len = seg_.load(base + 2);
    if (!codec_.valid_length(len)) {
      ++stats_.torn_reads;
      return detail::slot_read::torn;
    }
    if (inboxes_.size() != staged_.size()) inboxes_.resize(staged_.size());
    auto& in = staged_[q];
    in = gather::input<T>{};
    const bool valid = codec_.copy(seg_, layout_.payload(q, d), len, inboxes_[q], in);
    if (seg_.load(base) != h0 || !valid) {
      ++stats_.torn_reads;
      return detail::slot_read::torn;
    }
    in.sender = in_neighbours()[q];
    in.clock = h0;
    stats_.bytes_received += codec_.payload_bytes(len) + 8 * (detail::header_words + detail::footer_words);
    return detail::slot_read::ok;
  }

  void add_input(std::size_t q) {
    inputs_.push_back(staged_[q]);
    consumed_[q] = std::max(consumed_[q], staged_[q].clock);
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
  codec_type codec_;
  topology::graph graph_{std::vector<std::vector<member_id>>(1)};  // replaced in build()
  segment_type seg_{};
  std::string description_;
  detail::slot_layout layout_;
  std::uint64_t clock_ = 0;
  std::uint64_t send_len_ = 0;
  std::uint64_t epoch_ = 0;            // view epoch of graph_ and seg_
  bool pending_ = false;               // local_ is the update of clock_, sent and not yet combined here
  bool in_scatter_ = false;            // a scatter is under way (undone when a failure cuts it short)
  bool applied_ = false;               // the current gather has rewritten local_
  std::vector<std::size_t> out_pos_;   // my index in each out-neighbour's in-list
  std::vector<std::size_t> ack_word_;  // my ack counter's word on each in-neighbour
  std::vector<std::uint64_t> consumed_;
  std::vector<std::uint64_t> skip_through_;  // rounds <= this from in-neighbour q were lost in a view change
  std::vector<gather::input<T>> staged_;     // per in-neighbour: the update read last
  std::vector<detail::inbox<T>> inboxes_;    // per in-neighbour: copies (asp, ssp)
  std::vector<gather::input<T>> inputs_;
  vector_stats stats_;
  fault::subscription subscription_;  // rebuilds over the survivors (transports that can shrink)
};

DML_END_NAMESPACE

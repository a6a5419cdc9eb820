// SPDX-License-Identifier: BSL-1.0
// Internal: the part of a distributed vector that depends only on its
// element type, transport and representation: the local buffer, the slots,
// the per-neighbour state, the collective build and rebuild, writing and
// reading updates, and the statistics. dist_vector<T, Transport, Repr,
// Topology, Consistency, Gather> is a thin front end over one of these, so
// the heavy code is compiled once per (T, Transport, Repr) however many
// topologies, consistency policies and gather functors a program combines
// (a trainer that picks them at run time instantiates dozens of vectors).
#pragma once

#include <dml/comm/concepts.hpp>
#include <dml/error.hpp>
#include <dml/fault/membership.hpp>
#include <dml/fwd.hpp>
#include <dml/topology/graph.hpp>
#include <dml/vector/detail/codec.hpp>
#include <dml/vector/detail/slots.hpp>
#include <dml/vector/detail/wait.hpp>
#include <dml/vector/gather.hpp>
#include <dml/vector/representation.hpp>
#include <dml/vector/stats.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

DML_BEGIN_NAMESPACE
namespace detail {

template <class Core>
class vector_protocol;

/// The gather functor as the core calls it: a function and the functor it
/// applies (type-erased, so the core does not depend on the functor's type).
/// A functor that takes the receiver's mixing weights as a third argument
/// gets them; the others are called as f(own, inputs).
template <class T>
struct gather_call {
  void (*fn)(void* functor, std::span<T> own, std::span<const gather::input<T>> inputs,
             const gather::mixing& m) = nullptr;
  void* functor = nullptr;
  template <class G>
  static gather_call of(G& g) noexcept {
    return {[](void* f, std::span<T> own, std::span<const gather::input<T>> in, const gather::mixing& m) {
              if constexpr (std::is_invocable_v<G&, std::span<T>, std::span<const gather::input<T>>,
                                                const gather::mixing&>)
                (*static_cast<G*>(f))(own, in, m);
              else
                (*static_cast<G*>(f))(own, in);
            },
            &g};
  }
  void operator()(std::span<T> own, std::span<const gather::input<T>> inputs, const gather::mixing& m) const {
    fn(functor, own, inputs, m);
  }
};

/// What a scatter that leaves some out-neighbours out (dml::to) writes to
/// them; the consistency policy chooses (see docs/vectors.md).
enum class skipped_write {
  marker,        ///< a marker in slot clock mod depth (exact policies read that slot)
  marker_aside,  ///< a marker in the slot not holding the newest update sent there
  nothing,       ///< no write: the receiver keeps what it has (it never waits)
};

/// One round of a time-varying topology, seen from one member against the
/// union graph its slots are laid out for: which out- and in-neighbours
/// take part in the round, and the round's mixing weights.
struct round_plan {
  std::vector<bool> out_active;    // per out-neighbour of the union graph
  std::vector<bool> in_active;     // per in-neighbour of the union graph
  std::vector<double> in_weights;  // per in-neighbour (those not active: unused)
  double self = 1;
};

template <class T, class Transport, class Repr>
class vector_core {
 public:
  static constexpr bool is_sparse = std::is_same_v<Repr, sparse>;
  static constexpr bool recoverable = comm::shrinkable_transport<Transport>;
  using segment_type = typename Transport::segment_type;
  using codec_type = std::conditional_t<is_sparse, sparse_codec<T>, dense_codec<T>>;
  using value_type = T;

  vector_core(Transport& comm, std::size_t length, Repr repr)
      : comm_(&comm), n_(length), repr_(std::move(repr)), local_(length, T{}), codec_(length, capacity()) {}
  // Declared here, defined below the class: an implicit destructor would be
  // compiled in every translation unit, even in separate compilation mode.
  ~vector_core();
  vector_core(vector_core&&) noexcept = default;
  vector_core& operator=(vector_core&&) noexcept = default;

  // ---- what the front end reads ----------------------------------------------
  [[nodiscard]] std::size_t size() const noexcept { return n_; }
  [[nodiscard]] std::span<T> span() noexcept { return local_; }
  [[nodiscard]] std::span<const T> span() const noexcept { return local_; }
  [[nodiscard]] Transport& comm() const noexcept { return *comm_; }
  [[nodiscard]] const Repr& representation() const noexcept { return repr_; }
  [[nodiscard]] std::uint64_t clock() const noexcept { return clock_; }
  [[nodiscard]] std::uint64_t epoch() const noexcept { return epoch_; }
  [[nodiscard]] const vector_stats& stats() const noexcept { return stats_; }
  [[nodiscard]] vector_stats& stats() noexcept { return stats_; }
  [[nodiscard]] const topology::graph& graph() const noexcept { return graph_; }
  [[nodiscard]] const std::string& description() const noexcept { return description_; }
  [[nodiscard]] std::span<const member_id> in_neighbours() const { return graph_.in(comm_->rank()); }
  [[nodiscard]] std::span<const member_id> out_neighbours() const { return graph_.out(comm_->rank()); }

  /// What a member checks about its own arguments before the others hear
  /// of them (the length, a sparse capacity).
  void validate_local() const;

  // ---- operations --------------------------------------------------------------
  /// Before each operation: has the group moved on, or has a neighbour died
  /// (policies that never wait, like asp, would not notice otherwise)?
  void check_view();

  // ---- leaving the exchange (dist_vector::join) -------------------------------
  // After the notify and acknowledgement counters every member's segment
  // has one join word per member of the group: 1 + the clock at which that
  // member called join(), 0 before. A rebuild over the survivors clears
  // them; joined members write theirs again (see dist_vector::join).
  [[nodiscard]] std::size_t join_word(member_id target, member_id joiner) const {
    return graph_.in(target).size() + graph_.out(target).size() + joiner;
  }
  /// Writes this member's join word on every live member.
  void announce_join(std::uint64_t at_clock);
  /// Whether m's join word has arrived here.
  [[nodiscard]] bool has_joined(member_id m) const {
    return seg_.load_control(join_word(comm_->rank(), m)) != 0;
  }
  /// The latest clock at which a live member joined, once every live member
  /// has; nothing before. A failed member counts as not joined until the
  /// survivors' view leaves it out.
  [[nodiscard]] std::optional<std::uint64_t> last_join() const;

  /// After a peer failure inside an operation (call from its catch block):
  /// agree on the survivors and rebuild (every vector of the context), or
  /// rethrow when the transport cannot shrink its group or nothing new was
  /// agreed.
  void recover_or_rethrow();

  /// Packs the local buffer for the next scatter (may throw: sparse capacity).
  void encode();
  /// The same from a copy, for a scatter that runs in the background.
  void encode_copy();
  /// Packs given index/value pairs for the next scatter (sparse only).
  // (The body is discarded for dense vectors as well as constrained: clang
  // instantiates it in an explicit instantiation of a dense vector_core.)
  void encode_pairs(std::span<const std::uint32_t> indices, std::span<const T> values) requires is_sparse {
    if constexpr (is_sparse) send_len_ = codec_.encode_pairs(indices, values);
    sent_weight_ = weight_;
    clear_destinations();
  }

  /// Whether each slot carries the sender's weight (a gather that uses
  /// them); set before the vector is built, the same on every member.
  void carry_weights(bool on) noexcept { weighted_ = on; }
  [[nodiscard]] bool carries_weights() const noexcept { return weighted_; }
  /// The weight the following scatters carry (kept until changed).
  void set_weight(double w) noexcept { weight_ = w; }
  [[nodiscard]] double weight() const noexcept { return weight_; }

  /// The out-neighbours the next writes go to (ascending member ids);
  /// `all` when every out-neighbour gets the update.
  void set_destinations(std::vector<member_id> ids) {
    dests_ = std::move(ids);
    all_dests_ = false;
  }
  void clear_destinations() noexcept {
    dests_.clear();
    all_dests_ = true;
  }
  /// Whether out-neighbour m is active in the round of clock c (always,
  /// for a static graph).
  [[nodiscard]] bool out_active(member_id m, std::uint64_t c) const;

  /// Scatter bookkeeping: the clock ticks before the policy's steps; a
  /// scatter cut short by a failure is undone and made again.
  void begin_scatter() {
    pending_ = false;
    in_scatter_ = true;
    ++clock_;
  }
  void end_scatter() {
    in_scatter_ = false;
    pending_ = true;
    ++stats_.scatters;
  }
  void undo_scatter() {
    if (in_scatter_) {
      in_scatter_ = false;
      --clock_;
    }
  }
  void begin_gather() { applied_ = false; }
  /// Whether the gather cut short had already combined (only its
  /// acknowledgements were lost).
  [[nodiscard]] bool applied() const noexcept { return applied_; }

  /// Collective over the current view: builds the vector at construction
  /// and rebuilds it after a view change over `graph` (built by the front
  /// end from its topology; `problem` is its own config error, if any), so a
  /// member whose construction was cut short by a failure meets, in the
  /// same steps, the others rebuilding the vector they finished. Every
  /// member learns every other's configuration and problem, so all of them
  /// throw the same config_error instead of some waiting forever; and its
  /// clock, so the rebuilt slots and counters let an interrupted round
  /// finish: each member's own segment gets the notify and ack counts its
  /// new neighbours have reached, every update that is still pending is
  /// written again, and rounds a new neighbour has already moved past are
  /// skipped (their updates are gone).
  /// `schedule`: for a time-varying topology, one plan per round of its
  /// period (round t = clock - 1, taken mod the period); empty otherwise.
  void build(topology::graph graph, std::string description, const std::string& problem,
             std::vector<round_plan> schedule = {});

 private:
  template <class Core>
  friend class vector_protocol;

  struct member_state {
    std::uint64_t clock;
    std::uint64_t pending;  // 1 when the clock's update is sent and not yet combined by its sender
  };

  // Slot layout, per-neighbour state and the segment for the current graph.
  void allocate();

  [[nodiscard]] std::size_t capacity() const noexcept {
    if constexpr (is_sparse)
      return repr_.capacity;
    else
      return n_;
  }

  void check_agreement(const std::vector<std::string>& recs, const comm::membership_view& view) const;

  static std::size_t position(std::span<const member_id> list, member_id m) {
    const auto it = std::lower_bound(list.begin(), list.end(), m);
    return static_cast<std::size_t>(it - list.begin());
  }

  // ---- the steps the protocol is made of --------------------------------------
  // The plan of the round clock c belongs to; nullptr for a static graph.
  [[nodiscard]] const round_plan* plan(std::uint64_t c) const noexcept {
    if (schedule_.empty() || c == 0) return nullptr;
    return &schedule_[static_cast<std::size_t>((c - 1) % schedule_.size())];
  }

  // Whether in-neighbour q sends in the round of clock c (always, for a
  // static graph).
  [[nodiscard]] bool in_active(std::size_t q, std::uint64_t c) const noexcept {
    const round_plan* r = plan(c);
    return r == nullptr || r->in_active[q];
  }

  // The weight this member gives in-neighbour q's update of clock c.
  [[nodiscard]] double in_weight(std::size_t q, std::uint64_t c) const noexcept {
    if (const round_plan* r = plan(c)) return r->in_weights[q];
    return in_weights_.empty() ? 1.0 : in_weights_[q];
  }

  // Writes the current update into slot clock mod depth of every
  // destination among the out-neighbours (of this round's, under a
  // time-varying topology); the others get what `skipped` says. The mode
  // is kept for the rewrite of a pending update after a view change.
  // `access`: whether nobody reads a slot while it is written (bsp,
  // notify_ack: slots.hpp).
  void write_all(skipped_write skipped, slot_access access = slot_access::shared);
  void write_all();

  // The sender's weight in slot (q, d) (1 when slots carry no weights).
  [[nodiscard]] double slot_weight(std::size_t q, std::size_t d) const;

  // q's update in slot (q, d), holding clock c, staged in place: ok, a
  // marker (nothing staged), or torn (not valid yet).
  slot_read take_in_place(std::size_t q, std::size_t d, std::uint64_t c);

  // A copy of slot (q, d) staged as q's input: footer, header, payload,
  // header again; accepted only when all three sequence numbers agree.
  slot_read take_copy(std::size_t q, std::size_t d);

  void count_marker() {
    ++markers_;
    ++stats_.markers_received;
  }

  void add_input(std::size_t q) {
    inputs_.push_back(staged_[q]);
    consumed_[q] = std::max(consumed_[q], staged_[q].clock);
  }

  void apply(const gather_call<T>& gather);

  template <class Ready>
  void wait_until(member_id peer, const char* what, Ready&& ready) {
    detail::wait_until(*comm_, peer, what, std::forward<Ready>(ready), stats_.wait_seconds);
  }

  Transport* comm_;
  std::size_t n_;
  Repr repr_;
  std::vector<T> local_;
  codec_type codec_;
  topology::graph graph_{std::vector<std::vector<member_id>>(1)};  // replaced in build()
  segment_type seg_{};
  std::string description_;
  slot_layout layout_;
  std::uint64_t clock_ = 0;
  std::uint64_t send_len_ = 0;
  std::uint64_t epoch_ = 0;       // view epoch of graph_ and seg_
  bool pending_ = false;          // local_ is the update of clock_, sent and not yet combined here
  bool in_scatter_ = false;       // a scatter is under way (undone when a failure cuts it short)
  bool applied_ = false;          // the current gather has rewritten local_
  bool weighted_ = false;         // slots carry the sender's weight
  double weight_ = 1;             // set_weight(): carried by the following scatters
  double sent_weight_ = 1;        // the weight of the update of clock_ (written with it)
  bool all_dests_ = true;         // the current scatter goes to every out-neighbour
  std::vector<member_id> dests_;  // otherwise to these (ascending)
  skipped_write skipped_ = skipped_write::marker;  // what out-neighbours left out get
  slot_access access_ = slot_access::shared;       // of the current scatter's writes
  std::vector<std::uint8_t> last_real_;  // per out-neighbour: 1 + slot of the newest update sent, 0: none
  std::size_t markers_ = 0;              // markers read in the current gather
  std::vector<std::size_t> out_pos_;     // my index in each out-neighbour's in-list
  std::vector<std::size_t> ack_word_;    // my ack counter's word on each in-neighbour
  std::vector<std::uint64_t> consumed_;
  std::vector<std::uint64_t> skip_through_;  // rounds <= this from in-neighbour q were lost in a view change
  std::vector<gather::input<T>> staged_;     // per in-neighbour: the update read last
  std::vector<inbox<T>> inboxes_;            // per in-neighbour: copies (asp, ssp)
  std::vector<gather::input<T>> inputs_;
  std::vector<double> in_weights_;    // the graph's weight per in-neighbour; empty without weights
  gather::mixing mixing_;             // this member's self weight, for gathers that take it
  std::vector<round_plan> schedule_;  // per round of a time-varying topology's period; empty: static
  vector_stats stats_;
};

template <class T, class Transport, class Repr>
vector_core<T, Transport, Repr>::~vector_core() = default;

template <class T, class Transport, class Repr>
void vector_core<T, Transport, Repr>::validate_local() const {
  if (n_ == 0) throw config_error("dml::dist_vector: length 0 (a vector needs at least one element)");
  if constexpr (is_sparse) {
    if (repr_.capacity == 0)
      throw config_error(
          "dml::sparse: capacity 0 (give the most nonzeros a scatter may send, e.g. sparse{64})");
    if (repr_.capacity > n_)
      throw config_error("dml::sparse: capacity " + std::to_string(repr_.capacity) + " exceeds the length " +
                         std::to_string(n_) + " (use dml::dense)");
    if (n_ > std::size_t{0xffffffffu})
      throw config_error("dml::sparse: length " + std::to_string(n_) + " does not fit 32-bit indices");
  }
}

template <class T, class Transport, class Repr>
void vector_core<T, Transport, Repr>::check_view() {
  if constexpr (recoverable) {
    comm_->check_view();
    for (const auto list : {in_neighbours(), out_neighbours()})
      for (member_id m : list)
        if (!comm_->alive(m))
          throw peer_failure(m, "dml::dist_vector: member " + std::to_string(comm_->rank()) +
                                    "'s neighbour " + std::to_string(m) + " has failed");
  }
}

template <class T, class Transport, class Repr>
void vector_core<T, Transport, Repr>::announce_join(std::uint64_t at_clock) {
  const auto me = comm_->rank();
  for (member_id m : comm_->view().live) (void)seg_.fetch_add(m, join_word(m, me), at_clock + 1);
}

template <class T, class Transport, class Repr>
std::optional<std::uint64_t> vector_core<T, Transport, Repr>::last_join() const {
  const auto me = comm_->rank();
  std::uint64_t latest = 0;
  for (member_id m : comm_->view().live) {
    const std::uint64_t w = seg_.load_control(join_word(me, m));
    if (w == 0) return std::nullopt;
    latest = std::max(latest, w - 1);
  }
  return latest;
}

template <class T, class Transport, class Repr>
void vector_core<T, Transport, Repr>::recover_or_rethrow() {
  if constexpr (recoverable) {
    const auto before = comm_->view().epoch;
    fault::recover(*comm_);  // throws under fault::policy::abort
    if (comm_->view().epoch != before || epoch_ != comm_->view().epoch) return;
  }
  throw;
}

template <class T, class Transport, class Repr>
void vector_core<T, Transport, Repr>::encode() {
  send_len_ = codec_.encode(local_);
  sent_weight_ = weight_;
  clear_destinations();
}

template <class T, class Transport, class Repr>
void vector_core<T, Transport, Repr>::encode_copy() {
  send_len_ = codec_.encode_copy(local_);
  sent_weight_ = weight_;
  clear_destinations();
}

template <class T, class Transport, class Repr>
bool vector_core<T, Transport, Repr>::out_active(member_id m, std::uint64_t c) const {
  const round_plan* r = plan(c);
  if (r == nullptr) return true;
  const auto out = out_neighbours();
  const auto it = std::lower_bound(out.begin(), out.end(), m);
  return it != out.end() && *it == m && r->out_active[static_cast<std::size_t>(it - out.begin())];
}

template <class T, class Transport, class Repr>
void vector_core<T, Transport, Repr>::build(topology::graph graph, std::string description,
                                            const std::string& problem, std::vector<round_plan> schedule) {
  const auto view = comm_->view();
  epoch_ = view.epoch;
  graph_ = std::move(graph);
  schedule_ = std::move(schedule);
  description_ = std::move(description);
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
    access_ = slot_access::shared;  // the new view's readers: no ordering argument made for them
    // The view is built on every member once that barrier passed, and the
    // others may already work in it. A neighbour that failed since is not
    // this build's failure: the next operation meets it and the survivors
    // agree again (and rewrite what is pending). Failing here instead would
    // make only this member merge the view into the next one, and its list
    // of view changes would differ from the others'.
    try {
      write_all();
      for (member_id m : out) seg_.flush(m);
    } catch (const peer_failure&) {
    }
  }
}

template <class T, class Transport, class Repr>
void vector_core<T, Transport, Repr>::allocate() {
  const auto me = comm_->rank();
  const auto in = graph_.in(me);
  const auto out = graph_.out(me);
  layout_.payload_words = codec_.payload_words() + (weighted_ ? 1 : 0);
  out_pos_.resize(out.size());
  for (std::size_t k = 0; k < out.size(); ++k) out_pos_[k] = position(graph_.in(out[k]), me);
  last_real_.assign(out.size(), 0);
  ack_word_.resize(in.size());
  for (std::size_t q = 0; q < in.size(); ++q)
    ack_word_[q] = graph_.in(in[q]).size() + position(graph_.out(in[q]), me);
  const auto weights = graph_.in_weights(me);
  in_weights_.assign(weights.begin(), weights.end());
  mixing_ = gather::mixing{graph_.self_weight(me), graph_.has_weights()};
  consumed_.assign(in.size(), 0);
  skip_through_.assign(in.size(), 0);
  staged_.assign(in.size(), gather::input<T>{});
  inboxes_.clear();  // made on first use: only policies that copy need them
  inputs_.reserve(in.size());
  seg_ = segment_type{};  // the old view's slots are released first
  seg_ = comm_->create_segment(layout_.words(in.size()), in.size() + out.size() + comm_->size());
}

template <class T, class Transport, class Repr>
void vector_core<T, Transport, Repr>::check_agreement(const std::vector<std::string>& recs,
                                                      const comm::membership_view& view) const {
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

template <class T, class Transport, class Repr>
void vector_core<T, Transport, Repr>::write_all(skipped_write skipped, slot_access access) {
  skipped_ = skipped;
  access_ = access;
  write_all();
}

template <class T, class Transport, class Repr>
void vector_core<T, Transport, Repr>::write_all() {
  const auto out = out_neighbours();
  const auto codec_parts = codec_.parts(send_len_);
  std::array<payload_part, std::tuple_size_v<decltype(codec_parts)> + 1> parts{};
  std::copy(codec_parts.begin(), codec_parts.end(), parts.begin());
  if (weighted_)
    parts.back() = payload_part{codec_.payload_words(), std::as_bytes(std::span(&sent_weight_, 1))};
  const round_plan* round = plan(clock_);
  for (std::size_t k = 0; k < out.size(); ++k) {
    if (round != nullptr && !round->out_active[k]) continue;
    if (all_dests_ || std::binary_search(dests_.begin(), dests_.end(), out[k])) {
      const std::size_t d = clock_ % slot_depth;
      const std::size_t written =
          write_slot(seg_, out[k], layout_.base(out_pos_[k], d), layout_.payload_words, clock_, send_len_,
                     epoch_, parts, access_);
      last_real_[k] = static_cast<std::uint8_t>(d + 1);
      stats_.bytes_sent += written;
      stats_.payload_bytes_sent += written - 8 * (header_words + footer_words);
      continue;
    }
    if (skipped_ == skipped_write::nothing) continue;
    std::size_t d = clock_ % slot_depth;
    if (skipped_ == skipped_write::marker_aside && last_real_[k] != 0) d = slot_depth - last_real_[k];
    stats_.bytes_sent += write_slot(seg_, out[k], layout_.base(out_pos_[k], d), layout_.payload_words, clock_,
                                    no_update, epoch_, std::array<payload_part, 0>{});
    ++stats_.markers_sent;
  }
}

template <class T, class Transport, class Repr>
double vector_core<T, Transport, Repr>::slot_weight(std::size_t q, std::size_t d) const {
  if (!weighted_) return 1;
  const std::uint64_t bits = seg_.load(layout_.payload(q, d) + codec_.payload_words());
  double w = 0;
  std::memcpy(&w, &bits, sizeof w);
  return w;
}

template <class T, class Transport, class Repr>
slot_read vector_core<T, Transport, Repr>::take_in_place(std::size_t q, std::size_t d, std::uint64_t c) {
  const std::size_t base = layout_.base(q, d);
  if (seg_.load(base + 3) != epoch_) return slot_read::torn;  // a late write from an older view
  const std::uint64_t len = seg_.load(base + 2);
  if (len == no_update) return slot_read::marker;
  auto& in = staged_[q];
  in = gather::input<T>{};
  if (!codec_.valid_length(len) || !codec_.view(seg_, layout_.payload(q, d), len, in)) {
    ++stats_.torn_reads;
    return slot_read::torn;
  }
  in.sender = in_neighbours()[q];
  in.clock = c;
  in.weight = in_weight(q, c);
  in.sender_weight = slot_weight(q, d);
  stats_.bytes_received += codec_.payload_bytes(len) + 8 * (header_words + footer_words);
  return slot_read::ok;
}

template <class T, class Transport, class Repr>
slot_read vector_core<T, Transport, Repr>::take_copy(std::size_t q, std::size_t d) {
  seg_.sync();
  const std::size_t base = layout_.base(q, d);
  const std::uint64_t f0 = seg_.load(layout_.footer(q, d));
  const std::uint64_t h0 = seg_.load(base);
  if (h0 == 0 && f0 == 0) return slot_read::empty;
  if (h0 != f0) {
    ++stats_.torn_reads;
    return slot_read::torn;
  }
  if (seg_.load(base + 3) != epoch_) return slot_read::empty;  // a late write from an older view
  const std::uint64_t len = seg_.load(base + 2);
  if (len == no_update) {  // a marker, unless a new write began after the first header read
    if (seg_.load(base) == h0) return slot_read::marker;
    ++stats_.torn_reads;
    return slot_read::torn;
  }
  if (!codec_.valid_length(len)) {
    ++stats_.torn_reads;
    return slot_read::torn;
  }
  if (inboxes_.size() != staged_.size()) inboxes_.resize(staged_.size());
  auto& in = staged_[q];
  in = gather::input<T>{};
  const bool valid = codec_.copy(seg_, layout_.payload(q, d), len, inboxes_[q], in);
  const double sender_weight = slot_weight(q, d);
  if (seg_.load(base) != h0 || !valid) {
    ++stats_.torn_reads;
    return slot_read::torn;
  }
  in.sender = in_neighbours()[q];
  in.clock = h0;
  in.weight = in_weight(q, h0);
  in.sender_weight = sender_weight;
  stats_.bytes_received += codec_.payload_bytes(len) + 8 * (header_words + footer_words);
  return slot_read::ok;
}

template <class T, class Transport, class Repr>
void vector_core<T, Transport, Repr>::apply(const gather_call<T>& gather) {
  const std::size_t k = inputs_.size();
  if (stats_.inputs_combined.size() <= k) stats_.inputs_combined.resize(k + 1, 0);
  ++stats_.inputs_combined[k];
  std::size_t live = 0;
  const auto in = in_neighbours();
  for (std::size_t q = 0; q < in.size(); ++q) live += comm_->alive(in[q]) && in_active(q, clock_) ? 1 : 0;
  if (k + markers_ >= live) ++stats_.full_gathers;  // every live in-neighbour was heard from
  gather::mixing m = mixing_;
  if (const round_plan* round = plan(clock_)) m = gather::mixing{round->self, true};
  m.own_weight = sent_weight_;
  gather(std::span<T>(local_), std::span<const gather::input<T>>(inputs_), m);
  applied_ = true;
  pending_ = false;
}

}  // namespace detail
DML_END_NAMESPACE

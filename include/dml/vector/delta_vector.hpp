// SPDX-License-Identifier: BSL-1.0
/// @file
/// Exchanging changes instead of states: a `delta_vector` is a model that
/// members keep in agreement by sending only the coordinates they changed
/// since their last scatter, as index/value pairs, and merging everyone's
/// changes into an agreed state: agreed += γ Σ (every member's change),
/// CoCoA's combination (γ = 1/(members) averages, γ = 1 adds). A trainer on
/// sparse data that touched 300 of 2^24 weights sends 300 pairs; the
/// receive slots are sized by the capacity, never by the length.
///
///     auto w = dml::make_delta_vector<float>(comm, dim, dml::sparse{4096});
///     for (...) {
///       for (auto j : features_of(sample)) { w.span()[j] += step(j); w.touch(j); }
///       w.scatter();   // sends up to 4096 changed coordinates; the rest wait
///       w.gather();    // agreed += γ Σ changes; w = agreed + what is still pending
///     }
///
/// Under bsp or notify_ack over `topology::all` every member applies the
/// same changes in the same order (member order), so the agreed states of
/// all members are equal to the bit. Over a sparse topology each member
/// merges its neighbourhood's changes (γ = 1 / (1 + inputs) by default) and
/// the agreed states drift apart: finish with a round of plain model
/// averaging (a dense vector with `gather::average`) to bring them together.
#pragma once

#include <dml/comm/concepts.hpp>
#include <dml/consistency/any.hpp>
#include <dml/consistency/bsp.hpp>
#include <dml/consistency/notify_ack.hpp>
#include <dml/error.hpp>
#include <dml/fwd.hpp>
#include <dml/topology/all.hpp>
#include <dml/vector/delta.hpp>
#include <dml/vector/dist_vector.hpp>
#include <dml/vector/gather.hpp>
#include <dml/vector/representation.hpp>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

DML_BEGIN_NAMESPACE

/// A delta vector's default merge: γ = 1 / (1 + number of inputs) at each
/// gather, the average of the changes of the member and its in-neighbours
/// (over `topology::all`: of all members, which makes the agreed state the
/// average of the members' models). `gather::scaled_sum{γ}` fixes γ instead.
struct delta_average {
  [[nodiscard]] static constexpr std::string_view name() noexcept { return "delta_average"; }
};

namespace detail {

template <class T>
struct delta_state {
  explicit delta_state(std::size_t n, member_id me) : tracker(n), me(me), marks((n + 63) / 64, 0) {}
  delta_tracker<T> tracker;  // touched coordinates; published copy = the agreed state
  member_id me;
  std::size_t capacity = 0;
  delta_set<T> pending;               // everything changed (scatter), of which
  delta_set<T> sent;                  // the first `capacity` pairs went out
  std::vector<std::uint32_t> coords;  // gather scratch: every coordinate changed by anyone
  std::vector<T> rest;                // gather scratch: local − agreed − own change sent, per coordinate
  std::vector<std::uint64_t> marks;   // gather scratch: one bit per coordinate, all clear between gathers

  // `coords` (with duplicates) made ascending and unique: sorted when
  // short, read off a bitset when sorting would cost more than scanning it.
  void unique_coords() {
    const std::size_t m = coords.size();
    if (m < 2) return;
    if (m * static_cast<std::size_t>(std::bit_width(m)) < marks.size()) {
      std::sort(coords.begin(), coords.end());
      coords.erase(std::unique(coords.begin(), coords.end()), coords.end());
      return;
    }
    for (const std::uint32_t c : coords) marks[c / 64] |= std::uint64_t{1} << (c % 64);
    coords.clear();
    for (std::size_t w = 0; w < marks.size(); ++w) {
      for (std::uint64_t word = marks[w]; word != 0; word &= word - 1)
        coords.push_back(
            static_cast<std::uint32_t>(64 * w + static_cast<std::size_t>(std::countr_zero(word))));
      marks[w] = 0;
    }
  }
};

// The inner vector's gather functor: merges every member's change into the
// agreed state in member order, then rebuilds the local buffer on it.
template <class T, class Merge>
struct delta_merge {
  using policy_slot = slot::gather;
  delta_state<T>* state = nullptr;
  Merge merge{};

  [[nodiscard]] static constexpr std::string_view name() noexcept { return "delta_merge"; }
  [[nodiscard]] std::string describe() const {
    if constexpr (requires { merge.describe(); })
      return "delta_merge(" + std::string(merge.describe()) + ")";
    else
      return "delta_merge(" + std::string(merge.name()) + ")";
  }

  void operator()(std::span<T> local, std::span<const gather::input<T>> inputs) const {
    auto& st = *state;
    const auto agreed = st.tracker.published();
    // Every coordinate anybody changed, ascending.
    st.coords.assign(st.sent.indices.begin(), st.sent.indices.end());
    for (const auto& in : inputs) st.coords.insert(st.coords.end(), in.indices.begin(), in.indices.end());
    st.unique_coords();
    // What this member changed and has not sent yet stays its own.
    st.rest.resize(st.coords.size());
    std::size_t s = 0;
    for (std::size_t k = 0; k < st.coords.size(); ++k) {
      const std::uint32_t c = st.coords[k];
      T mine = static_cast<T>(local[c] - agreed[c]);
      while (s < st.sent.indices.size() && st.sent.indices[s] < c) ++s;
      if (s < st.sent.indices.size() && st.sent.indices[s] == c)
        mine = static_cast<T>(mine - st.sent.values[s]);
      st.rest[k] = mine;
    }
    T gamma;
    if constexpr (std::is_same_v<Merge, delta_average>)
      gamma = static_cast<T>(T{1} / static_cast<T>(inputs.size() + 1));
    else
      gamma = static_cast<T>(merge.gamma);
    // Member order, own change at its place: every replica adds the same
    // products in the same order.
    bool own_done = false;
    auto own = [&] { st.tracker.add_to_published(st.sent.indices, st.sent.values, gamma); };
    for (const auto& in : inputs) {
      if (!own_done && in.sender > st.me) {
        own();
        own_done = true;
      }
      st.tracker.add_to_published(in.indices, in.values, gamma);
    }
    if (!own_done) own();
    for (std::size_t k = 0; k < st.coords.size(); ++k) {
      const std::uint32_t c = st.coords[k];
      local[c] = static_cast<T>(agreed[c] + st.rest[k]);
    }
  }
};

template <class C>
void require_exact(const C& c) {
  if constexpr (std::is_same_v<C, consistency::any>) {
    if (c.held() != consistency::any::kind::bsp && c.held() != consistency::any::kind::notify_ack)
      throw config_error("dml::delta_vector: consistency " + c.name() +
                         " may skip updates, and a skipped change is lost for good; use bsp or notify_ack");
  } else {
    static_assert(std::is_same_v<C, consistency::bsp> || std::is_same_v<C, consistency::notify_ack>,
                  "dml::delta_vector: the consistency policy must combine every update (bsp or notify_ack): "
                  "a change that asp or ssp skips is lost for good");
  }
}

}  // namespace detail

/// A model kept in agreement by exchanging changes; see the file comment.
///
/// @tparam T           a floating-point element type
/// @tparam Transport   transport context type
/// @tparam Topology    a topology generator
/// @tparam Consistency `consistency::bsp`, `consistency::notify_ack`, or
///                     `consistency::any` holding one of them
/// @tparam Merge       `delta_average` or `gather::scaled_sum`
template <class T, class Transport, class Topology = topology::all, class Consistency = consistency::bsp,
          class Merge = delta_average>
class delta_vector {
  static_assert(std::is_floating_point_v<T>, "dml::delta_vector<T>: T must be a floating-point type");
  static_assert(std::is_same_v<Merge, delta_average> || std::is_same_v<Merge, gather::scaled_sum>,
                "dml::delta_vector: the merge is dml::delta_average or dml::gather::scaled_sum{gamma}");
  using merge_type = detail::delta_merge<T, Merge>;
  using inner_type = dist_vector<T, Transport, sparse, Topology, Consistency, merge_type>;

 public:
  using value_type = T;

  /// Collective, like a vector's construction: `capacity.capacity` is the
  /// most pairs one scatter sends (changes beyond it wait for the next one).
  /// Local and agreed state start at zero on every member.
  delta_vector(Transport& comm, std::size_t length, sparse capacity, Topology topo = {},
               Consistency cons = {}, Merge merge = {})
      : state_(std::make_unique<detail::delta_state<T>>(check_length(length), comm.rank())),
        inner_(comm, length, capacity, std::move(topo), (detail::require_exact(cons), std::move(cons)),
               merge_type{state_.get(), std::move(merge)}) {
    state_->capacity = capacity.capacity;
  }

  /// Number of elements.
  [[nodiscard]] std::size_t size() const noexcept { return inner_.size(); }
  /// The local model: the agreed state plus this member's changes not yet
  /// merged. Mark what you change with touch() (or diff()).
  [[nodiscard]] std::span<T> span() noexcept { return inner_.span(); }
  [[nodiscard]] std::span<const T> span() const noexcept { return inner_.span(); }
  /// The agreed state: every change merged so far.
  [[nodiscard]] std::span<const T> agreed() const noexcept { return state_->tracker.published(); }

  /// Marks coordinate i as changed. O(1).
  void touch(std::size_t i) { state_->tracker.touch(i); }
  /// Marks the coordinates of [first, first + count) whose local value
  /// differs from the agreed one. O(count).
  void diff(std::size_t first, std::size_t count) { state_->tracker.diff(span(), first, count); }
  /// Changed coordinates not sent yet (they go out with the next scatters).
  [[nodiscard]] std::size_t pending() const noexcept { return state_->tracker.touched(); }
  /// The coordinates the last gather may have changed in span() and
  /// agreed() (ascending): every coordinate some member sent. A trainer
  /// that keeps its own copy of the model updates just these.
  [[nodiscard]] std::span<const std::uint32_t> last_changed() const noexcept { return state_->coords; }

  /// Sets local and agreed state to `state` (every member must pass the
  /// same, e.g. an initial model), forgetting pending changes. O(length).
  void assign(std::span<const T> state) {
    if (state.size() != size())
      throw config_error("dml::delta_vector::assign: " + std::to_string(state.size()) +
                         " values for a vector of " + std::to_string(size()));
    std::copy(state.begin(), state.end(), span().begin());
    state_->tracker.rebase(state);
  }

  /// Multiplies local and agreed state by `factor` (every member by the
  /// same; e.g. folding a scale into the weights), keeping what is pending
  /// pending. O(length).
  void scale(T factor) {
    for (T& x : span()) x = static_cast<T>(x * factor);
    std::vector<T> agreed_copy(agreed().begin(), agreed().end());
    for (T& x : agreed_copy) x = static_cast<T>(x * factor);
    const std::vector<T> local_copy(span().begin(), span().end());
    state_->tracker.rebase(agreed_copy);
    state_->tracker.diff(local_copy, 0, local_copy.size());
  }

  /// Sends this member's changes (local − agreed of the touched
  /// coordinates that differ, lowest indices first, at most the capacity)
  /// to the out-neighbours. O(touched · log touched).
  void scatter() {
    auto& st = *state_;
    st.tracker.changed(span(), st.pending);
    const std::size_t count = std::min(st.capacity, st.pending.size());
    st.sent.indices.assign(st.pending.indices.begin(),
                           st.pending.indices.begin() + static_cast<std::ptrdiff_t>(count));
    st.sent.values.assign(st.pending.values.begin(),
                          st.pending.values.begin() + static_cast<std::ptrdiff_t>(count));
    inner_.scatter(st.sent.indices, st.sent.values);
  }

  /// Like scatter(), but when more coordinates changed than the capacity
  /// lets out, `filter` chooses which (dml/vector/filter.hpp: magnitude,
  /// relative, random, round_robin); the others stay pending and compete
  /// again at the next scatter, so nothing is lost.
  /// @throws dml::config_error when the filter chooses more than the
  /// capacity or a change twice (nothing is sent).
  template <delta_filter<T> Filter>
  void scatter(Filter& filter) {
    auto& st = *state_;
    st.tracker.changed(span(), st.pending);
    if (st.pending.size() <= st.capacity) {
      st.sent.indices = st.pending.indices;
      st.sent.values = st.pending.values;
    } else {
      const auto local = span();
      std::vector<delta_candidate<T>> candidates(st.pending.size());
      for (std::size_t k = 0; k < candidates.size(); ++k)
        candidates[k] = {st.pending.indices[k], st.pending.values[k], local[st.pending.indices[k]]};
      std::vector<std::size_t> chosen;
      filter.choose(std::span<const delta_candidate<T>>(candidates), st.capacity, chosen);
      detail::check_choice("dml::delta_vector::scatter", chosen, st.capacity, candidates.size());
      st.sent.clear();
      for (const std::size_t c : chosen) {
        st.sent.indices.push_back(candidates[c].index);
        st.sent.values.push_back(candidates[c].delta);
      }
    }
    inner_.scatter(st.sent.indices, st.sent.values);
  }

  /// Merges the changes of this member and its in-neighbours into the
  /// agreed state (agreed += γ Σ, in member order) and rebuilds the local
  /// model on it, keeping the changes not sent yet. O(pairs received).
  void gather() {
    inner_.gather();
    state_->sent.clear();
    // Coordinates whose change went out whole now equal the agreed state:
    // drop them, so pending() counts what really waits.
    state_->tracker.changed(span(), state_->pending);
  }

  /// Barrier over the live members.
  void barrier() { inner_.barrier(); }
  [[nodiscard]] std::uint64_t clock() const noexcept { return inner_.clock(); }
  [[nodiscard]] const vector_stats& stats() const noexcept { return inner_.stats(); }
  [[nodiscard]] std::span<const member_id> in_neighbours() const { return inner_.in_neighbours(); }
  [[nodiscard]] const std::string& description() const noexcept { return inner_.description(); }

 private:
  static std::size_t check_length(std::size_t n) {
    if (n == 0) throw config_error("dml::delta_vector: length 0 (a vector needs at least one element)");
    return n;
  }

  std::unique_ptr<detail::delta_state<T>> state_;  // stable address: the merge functor points at it
  inner_type inner_;
};

namespace detail {

template <class P>
inline constexpr bool is_delta_merge_v =
    std::is_same_v<P, delta_average> || std::is_same_v<P, gather::scaled_sum>;

// The first of P... for which Pick<P> holds, or Default.
template <template <class> class Pick, class Default, class... P>
struct first_where {
  using type = Default;
};
template <template <class> class Pick, class Default, class P, class... Rest>
struct first_where<Pick, Default, P, Rest...> {
  using type = std::conditional_t<Pick<P>::value, P, typename first_where<Pick, Default, Rest...>::type>;
};
template <class P>
struct is_topology_arg : std::bool_constant<fills_slot_v<P, slot::topology>> {};
template <class P>
struct is_consistency_arg : std::bool_constant<fills_slot_v<P, slot::consistency>> {};
template <class P>
struct is_merge_arg : std::bool_constant<is_delta_merge_v<P>> {};

// The argument of type W, or make() when there is none.
template <class W, class Make>
W take_or(Make make) {
  return make();
}
template <class W, class Make, class First, class... Rest>
W take_or(Make make, First&& first, Rest&&... rest) {
  if constexpr (std::is_same_v<std::remove_cvref_t<First>, W>)
    return std::forward<First>(first);
  else
    return take_or<W>(make, std::forward<Rest>(rest)...);
}

}  // namespace detail

/// Builds a delta_vector of n elements; `capacity` bounds the pairs one
/// scatter sends. Topology, consistency (bsp or notify_ack, or
/// consistency::any holding one) and merge (`delta_average`, the default,
/// or `gather::scaled_sum{γ}`) come in any order after it; missing ones
/// are `topology::all` and `consistency::bsp`. Collective.
template <class T, class Transport, class... Policies>
auto make_delta_vector(Transport& comm, std::size_t n, sparse capacity, Policies&&... policies) {
  static_assert(
      ((detail::fills_slot_v<Policies, slot::topology> || detail::fills_slot_v<Policies, slot::consistency> ||
        detail::is_delta_merge_v<std::remove_cvref_t<Policies>>)&&...),
      "dml::make_delta_vector: after the capacity come a topology, a consistency policy and a merge "
      "(dml::delta_average or dml::gather::scaled_sum), each at most once");
  using topology_t = typename detail::first_where<detail::is_topology_arg, topology::all,
                                                  std::remove_cvref_t<Policies>...>::type;
  using consistency_t = typename detail::first_where<detail::is_consistency_arg, consistency::bsp,
                                                     std::remove_cvref_t<Policies>...>::type;
  using merge_t = typename detail::first_where<detail::is_merge_arg, delta_average,
                                               std::remove_cvref_t<Policies>...>::type;
  return delta_vector<T, Transport, topology_t, consistency_t, merge_t>(
      comm, n, capacity, detail::take_or<topology_t>([] { return topology_t{}; }, policies...),
      detail::take_or<consistency_t>([] { return consistency_t{}; }, policies...),
      detail::take_or<merge_t>([] { return delta_average{}; }, policies...));
}

DML_END_NAMESPACE

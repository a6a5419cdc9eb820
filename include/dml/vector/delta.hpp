// SPDX-License-Identifier: BSL-1.0
/// @file
/// Sending changes instead of states: `delta_tracker<T>` keeps the last
/// published copy of a buffer and the set of coordinates touched since, and
/// turns them into index/value deltas (local − published) in ascending index
/// order. Its cost follows the touched coordinates, not the length: a
/// trainer that changed 300 of 2^24 weights pays for 300.
///
///     dml::delta_tracker<float> tracker(w.size());   // published: all zeros
///     dml::delta_set<float> out;
///     for (...) {
///       for (auto j : features_of(sample)) { w[j] += step(j); tracker.touch(j); }
///       tracker.publish(w, out, capacity);   // at most `capacity` deltas; the rest wait
///       send(out);                           // e.g. through a dml::sparse vector
///     }
///
/// The published copy is what a receiver holds that applied every delta set
/// so far (`delta_set::apply_to`, or `gather::scaled_sum{1}`): publish()
/// computes d = local − published and then published + d in T, exactly as
/// the receiver does, so the two stay equal bit for bit. When that
/// subtraction rounds (floating point, values far apart), published + d is
/// not quite local; the coordinate then stays pending and its remainder goes
/// out with the next publish. Nothing is lost either way (error feedback).
#pragma once

#include <dml/error.hpp>
#include <dml/fwd.hpp>

#include <algorithm>
#include <bit>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

DML_BEGIN_NAMESPACE

/// Index/value pairs, in ascending index order as delta_tracker produces
/// them: `values[k]` belongs to coordinate `indices[k]`.
template <class T>
struct delta_set {
  std::vector<std::uint32_t> indices;
  std::vector<T> values;

  [[nodiscard]] std::size_t size() const noexcept { return indices.size(); }
  [[nodiscard]] bool empty() const noexcept { return indices.empty(); }
  void clear() noexcept {
    indices.clear();
    values.clear();
  }
  /// target[indices[k]] += values[k] for every pair: what a receiver of
  /// these deltas does, and what the tracker did to its published copy.
  /// @throws dml::config_error when an index is outside the target.
  /// @throws dml::config_error (before changing anything) when an index
  /// is outside the target or the two vectors differ in length.
  void apply_to(std::span<T> target) const {
    if (values.size() != indices.size())
      throw config_error("dml::delta_set::apply_to: " + std::to_string(indices.size()) + " indices but " +
                         std::to_string(values.size()) + " values");
    if (const auto top = std::max_element(indices.begin(), indices.end());
        top != indices.end() && *top >= target.size())
      throw config_error("dml::delta_set::apply_to: index " + std::to_string(*top) +
                         " is outside a target of " + std::to_string(target.size()) + " elements");
    for (std::size_t k = 0; k < indices.size(); ++k) target[indices[k]] += values[k];
  }
};

/// One pending change, as a filter sees it (delta_tracker::publish with a
/// quota): the coordinate, its delta local − published, and its local value.
template <class T>
struct delta_candidate {
  std::uint32_t index;
  T delta;
  T value;
};

/// A budget per publish, in bytes of index/value pairs (4 + sizeof(T) each:
/// what a dml::sparse vector sends per nonzero).
struct byte_quota {
  std::size_t bytes;
};

/// A filter chooses which pending changes go out when they do not all fit
/// the quota: `f.choose(candidates, k, chosen)` appends at most k distinct
/// positions into `candidates` (ascending by index) to `chosen`. The rest
/// stay pending for a later publish (error feedback). dml/vector/filter.hpp
/// has magnitude, relative, random and round_robin.
template <class F, class T>
concept delta_filter = requires(F& f, std::span<const delta_candidate<T>> c, std::size_t k,
                                std::vector<std::size_t>& chosen) {
  f.choose(c, k, chosen);
};

namespace detail {

// The local values a tracker reads: a callable f(index) -> T, or anything
// indexable with operator[] (std::span, std::vector, an Eigen vector).
template <class L, class T>
concept delta_source = std::is_invocable_r_v<T, const L&, std::size_t> ||
    requires(const L& l, std::size_t i) {
  { l[i] } -> std::convertible_to<T>;
};

template <class T, class L>
T read_local(const L& local, std::size_t i) {
  if constexpr (std::is_invocable_r_v<T, const L&, std::size_t>)
    return static_cast<T>(local(i));
  else
    return static_cast<T>(local[i]);
}

// A filter's choice: at most k distinct positions below n, sorted here.
inline void check_choice(const char* who, std::vector<std::size_t>& chosen, std::size_t k, std::size_t n) {
  if (chosen.size() > k)
    throw config_error(std::string(who) + ": the filter chose " + std::to_string(chosen.size()) +
                       " changes where the quota allows " + std::to_string(k));
  std::sort(chosen.begin(), chosen.end());
  if (std::adjacent_find(chosen.begin(), chosen.end()) != chosen.end() ||
      (!chosen.empty() && chosen.back() >= n))
    throw config_error(std::string(who) + ": the filter chose a change twice or one that does not exist");
}

struct free_deleter {
  void operator()(void* p) const noexcept { std::free(p); }
};

}  // namespace detail

/// Tracks which coordinates of a buffer of `size()` elements changed since
/// they were last published, and what was published.
///
/// Coordinates become *touched* by touch(i) (the trainer marks what it
/// writes) or by diff(local, first, count) (the tracker compares a range).
/// changed() and publish() read the local values of touched coordinates
/// only, once each, and work in O(t log t) for t touched coordinates (the
/// sort that yields ascending indices); nothing is proportional to the
/// length except the published copy itself (zero pages until written when
/// built from a length) and one bit per coordinate.
///
/// Not thread safe: one tracker per member (or per thread).
/// A coordinate whose local value is NaN never equals its published copy,
/// so it is sent by every publish() until it is finite again.
/// @tparam T a floating-point element type (float, double)
template <class T>
class delta_tracker {
  static_assert(std::is_floating_point_v<T>,
                "dml::delta_tracker<T>: T must be a floating-point type (float, double, ...)");

 public:
  using value_type = T;

  /// A buffer of `length` elements whose published copy is all zeros (the
  /// state a zero-initialized model starts from on every member). Costs no
  /// resident memory until coordinates are published.
  /// @throws dml::config_error when length is 0 or beyond 2^32 (deltas
  /// travel with 32-bit indices).
  explicit delta_tracker(std::size_t length) : n_(check_length(length)), bits_((length + 63) / 64) {
    published_.reset(static_cast<T*>(std::calloc(length, sizeof(T))));
    if (!published_) throw std::bad_alloc();
  }

  /// A buffer whose published copy is `published` (copied).
  /// @throws dml::config_error as the other constructor.
  explicit delta_tracker(std::span<const T> published) : delta_tracker(published.size()) {
    std::copy(published.begin(), published.end(), published_.get());
  }

  delta_tracker(delta_tracker&&) noexcept = default;
  delta_tracker& operator=(delta_tracker&&) noexcept = default;

  /// The length of the tracked buffer.
  [[nodiscard]] std::size_t size() const noexcept { return n_; }

  /// Coordinates touched and not yet published (a coordinate counts once
  /// however often it was touched; one whose value turns out unchanged is
  /// dropped by the next changed() or publish()).
  [[nodiscard]] std::size_t touched() const noexcept { return list_.size(); }

  /// The published copy: what a receiver of every delta set so far holds.
  [[nodiscard]] std::span<const T> published() const noexcept { return {published_.get(), n_}; }

  /// Marks coordinate i as (possibly) changed. O(1).
  /// @throws dml::config_error when i >= size().
  void touch(std::size_t i) {
    if (i >= n_)
      throw config_error("dml::delta_tracker::touch: index " + std::to_string(i) +
                         " is outside a buffer of " + std::to_string(n_) + " elements");
    mark(i);
  }

  /// Marks every coordinate of `indices`.
  template <std::integral I>
  void touch(std::span<const I> indices) {
    for (const I i : indices) touch(static_cast<std::size_t>(i));
  }

  /// Compares local[first, first + count) with the published copy and
  /// marks the coordinates that differ: for code that does not say what it
  /// wrote. O(count); reads each local value of the range once.
  /// @throws dml::config_error when the range leaves the buffer.
  template <detail::delta_source<T> Local>
  void diff(const Local& local, std::size_t first, std::size_t count) {
    check_local(local);
    if (first > n_ || count > n_ - first)
      throw config_error("dml::delta_tracker::diff: range [" + std::to_string(first) + ", " +
                         std::to_string(first) + " + " + std::to_string(count) + ") leaves a buffer of " +
                         std::to_string(n_) + " elements");
    for (std::size_t i = first; i < first + count; ++i)
      if (!(detail::read_local<T>(local, i) == published_[i])) mark(i);
  }

  /// The deltas local − published of the touched coordinates whose value
  /// differs, ascending by index, into `out` (replaced). Publishes nothing;
  /// drops touched coordinates whose value equals the published one.
  template <detail::delta_source<T> Local>
  void changed(const Local& local, delta_set<T>& out) {
    collect(local, out, std::numeric_limits<std::size_t>::max(), false);
  }

  /// Like changed(), but at most `capacity` deltas (the lowest indices),
  /// and those become published: published[i] += delta, as a receiver
  /// adds them. Coordinates left out stay pending for the next call, and so
  /// does a coordinate whose published value still differs from local
  /// after the addition (rounding), with the remainder as its next delta.
  /// Returns the number of coordinates still pending: 0 when everything
  /// went out.
  template <detail::delta_source<T> Local>
  std::size_t publish(const Local& local, delta_set<T>& out,
                      std::size_t capacity = std::numeric_limits<std::size_t>::max()) {
    collect(local, out, capacity, true);
    return list_.size();
  }

  /// Like publish(), but what goes out fits `quota` (at most
  /// quota.bytes / (4 + sizeof(T)) pairs) and, when the changes do not all
  /// fit, `filter` chooses which (largest magnitude, a random subset, ...;
  /// dml/vector/filter.hpp). The others stay pending with their whole
  /// delta, so nothing is lost: a later publish sends them. `out` is in
  /// ascending index order. Returns the number of coordinates still
  /// pending. O(t log t) for t pending changes, plus the filter's choice.
  /// @throws dml::config_error when the quota cannot carry one pair, or
  /// when the filter chooses more than allowed or a position twice.
  template <detail::delta_source<T> Local, delta_filter<T> Filter>
  std::size_t publish(const Local& local, delta_set<T>& out, byte_quota quota, Filter& filter) {
    constexpr std::size_t pair_bytes = sizeof(std::uint32_t) + sizeof(T);
    const std::size_t k = quota.bytes / pair_bytes;
    if (k == 0)
      throw config_error("dml::delta_tracker::publish: a quota of " + std::to_string(quota.bytes) +
                         " bytes cannot carry one delta (" + std::to_string(pair_bytes) + " bytes)");
    check_local(local);
    out.clear();
    sort_touched();
    candidates_.clear();
    std::size_t kept = 0;
    for (const std::uint32_t i : list_) {
      const T value = detail::read_local<T>(local, i);
      if (value == published_[i]) {
        clear_bit(i);
        continue;
      }
      candidates_.push_back({i, static_cast<T>(value - published_[i]), value});
      list_[kept++] = i;
    }
    list_.resize(kept);
    chosen_.clear();
    if (candidates_.size() <= k) {
      for (std::size_t c = 0; c < candidates_.size(); ++c) chosen_.push_back(c);
    } else {
      filter.choose(std::span<const delta_candidate<T>>(candidates_), k, chosen_);
      detail::check_choice("dml::delta_tracker::publish", chosen_, k, candidates_.size());
    }
    // Candidates and list_ are both ascending: walk them together.
    kept = 0;
    std::size_t next = 0;
    for (std::size_t c = 0; c < candidates_.size(); ++c) {
      const auto& cand = candidates_[c];
      if (next < chosen_.size() && chosen_[next] == c) {
        ++next;
        out.indices.push_back(cand.index);
        out.values.push_back(cand.delta);
        published_[cand.index] = static_cast<T>(published_[cand.index] + cand.delta);
        if (published_[cand.index] == cand.value) {
          clear_bit(cand.index);
          continue;
        }
      }
      list_[kept++] = cand.index;
    }
    list_.resize(kept);
    return list_.size();
  }

  /// Makes the current local values of the touched coordinates the
  /// published ones without producing deltas (they reached the receivers
  /// some other way), and clears the touched set. O(touched).
  template <detail::delta_source<T> Local>
  void mark_published(const Local& local) {
    check_local(local);
    for (const std::uint32_t i : list_) {
      published_[i] = detail::read_local<T>(local, i);
      clear_bit(i);
    }
    list_.clear();
  }

  /// published[indices[k]] += scale * values[k] for every pair, each
  /// product rounded to T, pairs in the given order: what a receiver of
  /// these deltas scaled by `scale` computes (delta_vector applies every
  /// member's deltas this way, in member order, so all replicas compute the
  /// same). Touched coordinates stay touched. O(pairs).
  /// @throws dml::config_error (before changing anything) when an index is
  /// outside the buffer or the spans differ in length.
  void add_to_published(std::span<const std::uint32_t> indices, std::span<const T> values, T scale) {
    if (indices.size() != values.size())
      throw config_error("dml::delta_tracker::add_to_published: " + std::to_string(indices.size()) +
                         " indices but " + std::to_string(values.size()) + " values");
    for (const std::uint32_t i : indices)
      if (i >= n_)
        throw config_error("dml::delta_tracker::add_to_published: index " + std::to_string(i) +
                           " is outside a buffer of " + std::to_string(n_) + " elements");
    for (std::size_t k = 0; k < indices.size(); ++k)
      published_[indices[k]] = static_cast<T>(published_[indices[k]] + static_cast<T>(scale * values[k]));
  }

  /// Replaces the whole published copy (after an exchange of full states,
  /// say) and clears the touched set. O(length).
  /// @throws dml::config_error when the length differs.
  void rebase(std::span<const T> published) {
    if (published.size() != n_)
      throw config_error("dml::delta_tracker::rebase: " + std::to_string(published.size()) +
                         " values for a buffer of " + std::to_string(n_) + " elements");
    std::copy(published.begin(), published.end(), published_.get());
    for (const std::uint32_t i : list_) clear_bit(i);
    list_.clear();
  }

 private:
  static std::size_t check_length(std::size_t length) {
    if (length == 0 || length - 1 > std::numeric_limits<std::uint32_t>::max())
      throw config_error("dml::delta_tracker: length " + std::to_string(length) +
                         " must be in [1, 2^32] (deltas carry 32-bit indices)");
    return length;
  }

  template <class Local>
  void check_local(const Local& local) const {
    if constexpr (requires { local.size(); })
      if (static_cast<std::size_t>(local.size()) != n_)
        throw config_error("dml::delta_tracker: local buffer of " + std::to_string(local.size()) +
                           " elements for a tracker of " + std::to_string(n_));
  }

  void mark(std::size_t i) {
    std::uint64_t& word = bits_[i / 64];
    const std::uint64_t bit = std::uint64_t{1} << (i % 64);
    if (word & bit) return;
    word |= bit;
    list_.push_back(static_cast<std::uint32_t>(i));
  }
  void clear_bit(std::size_t i) noexcept { bits_[i / 64] &= ~(std::uint64_t{1} << (i % 64)); }

  // The touched list in ascending order: sorted when it is short, read off
  // the bitset when sorting would cost more than scanning it.
  void sort_touched() {
    const std::size_t t = list_.size();
    if (t < 2) return;
    const std::size_t log_t = static_cast<std::size_t>(std::bit_width(t));
    if (t * log_t < bits_.size()) {
      std::sort(list_.begin(), list_.end());
      return;
    }
    list_.clear();
    for (std::size_t w = 0; w < bits_.size(); ++w)
      for (std::uint64_t word = bits_[w]; word != 0; word &= word - 1)
        list_.push_back(
            static_cast<std::uint32_t>(64 * w + static_cast<std::size_t>(std::countr_zero(word))));
  }

  // One pass over the touched coordinates in ascending order: each local
  // value is read once; `list_` keeps the ones still pending.
  template <class Local>
  void collect(const Local& local, delta_set<T>& out, std::size_t capacity, bool publish) {
    check_local(local);
    out.clear();
    sort_touched();
    std::size_t kept = 0;
    for (const std::uint32_t i : list_) {
      const T value = detail::read_local<T>(local, i);
      const T old = published_[i];
      if (value == old) {  // touched but unchanged: nothing to send
        clear_bit(i);
        continue;
      }
      if (out.size() == capacity) {  // no room this time: stays pending
        list_[kept++] = i;
        continue;
      }
      const T d = static_cast<T>(value - old);
      out.indices.push_back(i);
      out.values.push_back(d);
      if (!publish) {
        list_[kept++] = i;
        continue;
      }
      published_[i] = static_cast<T>(old + d);  // exactly what a receiver computes
      if (published_[i] == value)
        clear_bit(i);
      else
        list_[kept++] = i;  // the rounding remainder goes out next time
    }
    list_.resize(kept);
  }

  std::size_t n_;
  std::unique_ptr<T[], detail::free_deleter> published_;
  std::vector<std::uint64_t> bits_;             // touched coordinates, one bit each
  std::vector<std::uint32_t> list_;             // the same coordinates, as a list
  std::vector<delta_candidate<T>> candidates_;  // publish with a quota: the pending changes
  std::vector<std::size_t> chosen_;             // and the filter's choice among them
};

DML_END_NAMESPACE

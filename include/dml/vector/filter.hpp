// SPDX-License-Identifier: BSL-1.0
/// @file
/// Which changes go out when a quota does not let them all: filters for
/// `delta_tracker::publish(local, out, byte_quota{b}, filter)`. Each picks
/// at most k of the pending changes; the rest stay pending with their
/// whole delta and compete again at the next publish (error feedback), so
/// every change is sent eventually once the trainer stops making new ones.
///
///     dml::filter::magnitude largest;
///     tracker.publish(w, out, dml::byte_quota{4096}, largest);   // at most 512 float pairs
///
/// - `magnitude`: the largest |delta| (ties: the lower index);
/// - `relative`: the largest |delta| / max(|value|, floor): changes that
///   matter relative to the weight they change;
/// - `random`: a uniformly random subset (seeded; one stream per member);
/// - `round_robin`: in index order from where the last publish stopped,
///   wrapping around, so every coordinate gets its turn.
#pragma once

#include <dml/fwd.hpp>
#include <dml/random.hpp>
#include <dml/vector/delta.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

DML_BEGIN_NAMESPACE
namespace filter {

namespace detail {
// The k positions with the largest key (ties: the lower position, which is
// the lower index), appended to chosen.
template <class T, class Key>
void largest(std::span<const delta_candidate<T>> c, std::size_t k, std::vector<std::size_t>& chosen,
             Key key) {
  std::vector<std::size_t> pos(c.size());
  for (std::size_t p = 0; p < pos.size(); ++p) pos[p] = p;
  auto before = [&](std::size_t a, std::size_t b) {
    const double ka = key(c[a]), kb = key(c[b]);
    return ka > kb || (ka == kb && a < b);
  };
  std::nth_element(pos.begin(), pos.begin() + static_cast<std::ptrdiff_t>(k), pos.end(), before);
  chosen.insert(chosen.end(), pos.begin(), pos.begin() + static_cast<std::ptrdiff_t>(k));
}
// NaN sorts first: a NaN change is never starved.
inline double magnitude_key(double x) { return std::isnan(x) ? HUGE_VAL : std::fabs(x); }
}  // namespace detail

/// The changes of largest magnitude |delta|.
struct magnitude {
  template <class T>
  void choose(std::span<const delta_candidate<T>> c, std::size_t k, std::vector<std::size_t>& chosen) const {
    detail::largest<T>(c, k, chosen, [](const delta_candidate<T>& x) {
      return detail::magnitude_key(static_cast<double>(x.delta));
    });
  }
};

/// The changes largest relative to their weight: |delta| / max(|value|, floor).
struct relative {
  double floor = 1e-8;  ///< below this a weight counts as this large (no division by zero)
  template <class T>
  void choose(std::span<const delta_candidate<T>> c, std::size_t k, std::vector<std::size_t>& chosen) const {
    detail::largest<T>(c, k, chosen, [this](const delta_candidate<T>& x) {
      return detail::magnitude_key(static_cast<double>(x.delta)) /
             std::max(std::fabs(static_cast<double>(x.value)), floor);
    });
  }
};

/// A uniformly random subset of k changes.
class random {
 public:
  explicit random(std::uint64_t seed) : rng_(seed) {}
  template <class T>
  void choose(std::span<const delta_candidate<T>> c, std::size_t k, std::vector<std::size_t>& chosen) {
    pos_.resize(c.size());
    for (std::size_t p = 0; p < pos_.size(); ++p) pos_[p] = p;
    for (std::size_t j = 0; j < k; ++j) {  // the first k steps of a Fisher-Yates shuffle
      std::swap(pos_[j], pos_[j + static_cast<std::size_t>(rng_.below(pos_.size() - j))]);
    }
    chosen.insert(chosen.end(), pos_.begin(), pos_.begin() + static_cast<std::ptrdiff_t>(k));
  }

 private:
  splitmix64 rng_;
  std::vector<std::size_t> pos_;
};

/// k changes in index order, starting where the previous choice stopped and
/// wrapping around.
class round_robin {
 public:
  template <class T>
  void choose(std::span<const delta_candidate<T>> c, std::size_t k, std::vector<std::size_t>& chosen) {
    if (c.empty() || k == 0) return;
    const auto start = static_cast<std::size_t>(
        std::lower_bound(c.begin(), c.end(), cursor_,
                         [](const delta_candidate<T>& x, std::uint64_t at) { return x.index < at; }) -
        c.begin());
    for (std::size_t j = 0; j < std::min(k, c.size()); ++j) chosen.push_back((start + j) % c.size());
    cursor_ = std::uint64_t{c[chosen.back()].index} + 1;
  }
  /// The lowest index the next choice starts from.
  [[nodiscard]] std::uint64_t cursor() const noexcept { return cursor_; }

 private:
  std::uint64_t cursor_ = 0;
};

}  // namespace filter
DML_END_NAMESPACE

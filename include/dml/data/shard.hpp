// SPDX-License-Identifier: BSL-1.0
/// @file
/// Sharding samples by member, and seeded shuffles. Every sample index in
/// [0, n) belongs to exactly one of the `members` shards, so the members of a
/// data-parallel job together use every sample once per epoch.
#pragma once

#include <dml/error.hpp>
#include <dml/random.hpp>
#include <dml/version.hpp>

#include <cstddef>
#include <cstdint>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

DML_BEGIN_NAMESPACE
namespace data {

/// How a shard picks its samples out of [0, n).
enum class shard_layout {
  strided,    ///< member m takes m, m + M, m + 2M, ...: needs no sample count in advance
  contiguous  ///< member m takes one block; the first n % M members get one sample more
};

/// This member's share of a data set: member `member` of `members`.
struct shard {
  std::size_t member = 0;
  std::size_t members = 1;
  shard_layout layout = shard_layout::strided;

  /// Member `me`'s shard among the live members of a membership view
  /// (`view.live`, ascending member ids): the shard of its position among
  /// them. After a failure the survivors' shards over the new view cover
  /// the dead member's samples too, so every sample is still used once per
  /// epoch. Throws config_error when `me` is not live or `live` is not
  /// strictly ascending.
  template <class Live>
  [[nodiscard]] static shard among(const Live& live, std::size_t me,
                                   shard_layout how = shard_layout::strided) {
    std::size_t position = 0, count = 0, previous = 0;
    bool found = false;
    for (const auto m : live) {
      const auto id = static_cast<std::size_t>(m);
      if (count != 0 && id <= previous)
        throw config_error("dml::data::shard::among: the live members are not in ascending order (" +
                           std::to_string(previous) + " before " + std::to_string(id) + ")");
      if (id == me) {
        found = true;
        position = count;
      }
      previous = id;
      ++count;
    }
    if (!found)
      throw config_error("dml::data::shard::among: member " + std::to_string(me) +
                         " is not among the live members");
    return shard{position, count, how};
  }

  /// Throws config_error unless member < members.
  void validate() const {
    if (members == 0 || member >= members)
      throw config_error("dml::data::shard: member " + std::to_string(member) + " of " +
                         std::to_string(members) + " does not exist");
  }

  /// [first, last) for the contiguous layout over n samples.
  [[nodiscard]] std::pair<std::size_t, std::size_t> block(std::size_t n) const noexcept {
    const std::size_t base = n / members, extra = n % members;
    const std::size_t first = member * base + (member < extra ? member : extra);
    return {first, first + base + (member < extra ? 1 : 0)};
  }

  /// Whether sample i of n belongs to this shard.
  [[nodiscard]] bool contains(std::size_t i, std::size_t n) const noexcept {
    if (layout == shard_layout::strided) return i % members == member;
    const auto [first, last] = block(n);
    return i >= first && i < last;
  }

  /// How many of n samples this shard holds.
  [[nodiscard]] std::size_t size(std::size_t n) const noexcept {
    if (layout == shard_layout::contiguous) {
      const auto [first, last] = block(n);
      return last - first;
    }
    return n / members + (member < n % members ? 1 : 0);
  }

  /// The sample indices of this shard, ascending.
  [[nodiscard]] std::vector<std::size_t> indices(std::size_t n) const {
    validate();
    std::vector<std::size_t> out;
    out.reserve(size(n));
    if (layout == shard_layout::contiguous) {
      const auto [first, last] = block(n);
      for (std::size_t i = first; i < last; ++i) out.push_back(i);
    } else {
      for (std::size_t i = member; i < n; i += members) out.push_back(i);
    }
    return out;
  }
};

/// A uniform integer in [0, bound) from a 64-bit generator, by rejection:
/// the same on every platform (std::uniform_int_distribution is not).
template <class Generator>
std::uint64_t uniform_below(Generator& g, std::uint64_t bound) {
  const std::uint64_t limit = ~std::uint64_t{0} - (~std::uint64_t{0} % bound);
  std::uint64_t x;
  do x = static_cast<std::uint64_t>(g());
  while (x >= limit);
  return x % bound;
}

/// The library's seeded generator (dml/random.hpp), also known by this name.
using dml::splitmix64;

/// Shuffles `items` in place (Fisher-Yates); the same seed gives the same
/// order on every platform and standard library.
template <class T>
void shuffle(std::vector<T>& items, std::uint64_t seed) {
  splitmix64 g(seed);
  for (std::size_t i = items.size(); i > 1; --i) std::swap(items[i - 1], items[uniform_below(g, i)]);
}

/// A permutation of [0, n) determined by seed.
[[nodiscard]] inline std::vector<std::size_t> permutation(std::size_t n, std::uint64_t seed) {
  std::vector<std::size_t> p(n);
  std::iota(p.begin(), p.end(), std::size_t{0});
  shuffle(p, seed);
  return p;
}

}  // namespace data
DML_END_NAMESPACE

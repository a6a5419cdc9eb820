// SPDX-License-Identifier: BSL-1.0
/// @file
/// What the user's `schedule`, `update` and `aggregate` receive: parameter
/// indices, jobs, the step an update or aggregate belongs to, and the
/// context of a schedule call (iteration, members, the shared random
/// stream, a collective sum).
#pragma once

#include <dml/fwd.hpp>
#include <dml/random.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <utility>
#include <vector>

DML_BEGIN_NAMESPACE
namespace schedule {

/// Index of a model parameter (a coordinate, a row of a table, ...).
using parameter = std::uint32_t;

/// The parameters one member updates in one iteration (SMPFRAME's S_p).
using job = std::vector<parameter>;

/// One member's share of one iteration, as `update` and `aggregate` see it.
struct step {
  std::uint64_t iteration = 0;       ///< t, from 0
  std::size_t member = 0;            ///< position among the live members of the member whose job this is
  std::size_t members = 1;           ///< live members (P)
  std::span<const parameter> job{};  ///< the parameters, in the order of the results
};

/// Handed to `schedule()` (and to `progress()`): where the run is, and the
/// services a schedule may use. Everything here is the same on every
/// member, and `sum` is collective: a schedule that reads only the context,
/// the agreed model and totals from `sum` computes the same job on every
/// member, so no member has to compute it for the others (no master).
class context {
 public:
  using sum_function = std::function<void(std::span<double>)>;

  context(std::uint64_t seed, std::size_t members, std::size_t position, member_id rank, sum_function sum)
      : seed_(seed), members_(members), position_(position), rank_(rank), sum_(std::move(sum)) {}

  /// The iteration being scheduled (t, from 0).
  [[nodiscard]] std::uint64_t iteration() const noexcept { return iteration_; }
  /// Live members (P).
  [[nodiscard]] std::size_t members() const noexcept { return members_; }
  /// This member's position among them (0..P-1).
  [[nodiscard]] std::size_t position() const noexcept { return position_; }
  /// This member's id.
  [[nodiscard]] member_id rank() const noexcept { return rank_; }
  /// The run's seed, the same on every member.
  [[nodiscard]] std::uint64_t seed() const noexcept { return seed_; }
  /// A generator for this iteration, seeded by (seed, iteration): the same
  /// numbers on every member, on every platform.
  [[nodiscard]] splitmix64 random() const noexcept {
    return splitmix64(seed_ * 0x9e3779b97f4a7c15ULL ^ (iteration_ + 0x632be59bd9b4e019ULL));
  }
  /// Jobs of earlier iterations whose results the model does not hold yet
  /// (pipelining: up to depth - 1 of them), oldest first.
  [[nodiscard]] std::span<const job> in_flight() const noexcept { return in_flight_; }
  /// Collective: every member's `values` become the sum over the live
  /// members, the same to the bit on each (dml::schedule::exact_sum). Every
  /// member must call it at the same point with the same size.
  void sum(std::span<double> values) const { sum_(values); }
  /// Collective: the sum of one value over the live members.
  [[nodiscard]] double sum(double value) const {
    sum_(std::span<double>(&value, 1));
    return value;
  }

  // The engines set these.
  void set_iteration(std::uint64_t t) noexcept { iteration_ = t; }
  void set_members(std::size_t members, std::size_t position) noexcept {
    members_ = members;
    position_ = position;
  }
  void set_in_flight(std::span<const job> jobs) noexcept { in_flight_ = jobs; }

 private:
  std::uint64_t seed_;
  std::size_t members_;
  std::size_t position_;
  member_id rank_;
  sum_function sum_;
  std::uint64_t iteration_ = 0;
  std::span<const job> in_flight_{};
};

}  // namespace schedule
DML_END_NAMESPACE

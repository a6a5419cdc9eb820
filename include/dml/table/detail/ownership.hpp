// SPDX-License-Identifier: BSL-1.0
// Internal: which member owns each row of a table, and where the row is among
// its owner's rows. Either cyclic over the live members (row r on the
// (r mod n)-th), computed on the fly, or an explicit placement kept per row
// (IterStore's data placement: each row on a member that uses it).
#pragma once

#include <dml/error.hpp>
#include <dml/fwd.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

DML_BEGIN_NAMESPACE
namespace detail {

class ownership {
 public:
  ownership() = default;

  /// Row r on live[r mod live.size()].
  static ownership cyclic(std::size_t rows, std::span<const member_id> live, std::size_t members) {
    ownership o;
    o.rows_ = rows;
    o.live_.assign(live.begin(), live.end());
    o.owned_.assign(members, 0);
    const std::size_t k = live.size();
    for (std::size_t i = 0; i < k; ++i) o.owned_[live[i]] = rows / k + (i < rows % k ? 1 : 0);
    return o;
  }

  /// Every row on the member `owner_of[r]` (which must be live); local
  /// indices in row order.
  static ownership placed(std::vector<std::uint32_t> owner_of, std::span<const member_id> live,
                          std::size_t members) {
    ownership o;
    o.rows_ = owner_of.size();
    o.live_.assign(live.begin(), live.end());
    o.owned_.assign(members, 0);
    o.local_.resize(owner_of.size());
    for (std::size_t r = 0; r < owner_of.size(); ++r) {
      const member_id m = owner_of[r];
      if (m >= members || !std::binary_search(live.begin(), live.end(), m))
        throw comm_error("dml::table: placement puts row " + std::to_string(r) + " on member " +
                         std::to_string(m) + ", which is not live");
      o.local_[r] = o.owned_[m]++;
    }
    o.owner_ = std::move(owner_of);
    return o;
  }

  /// The same placement over fewer live members: rows of members that left
  /// go to the survivors cyclically; a cyclic layout stays cyclic.
  [[nodiscard]] ownership over(std::span<const member_id> live, std::size_t members) const {
    if (owner_.empty()) return cyclic(rows_, live, members);
    std::vector<std::uint32_t> next(owner_);
    for (std::size_t r = 0; r < next.size(); ++r)
      if (!std::binary_search(live.begin(), live.end(), member_id{next[r]}))
        next[r] = static_cast<std::uint32_t>(live[r % live.size()]);
    return placed(std::move(next), live, members);
  }

  [[nodiscard]] bool explicit_placement() const noexcept { return !owner_.empty(); }
  [[nodiscard]] member_id owner(std::size_t row) const {
    return owner_.empty() ? live_[row % live_.size()] : member_id{owner_[row]};
  }
  [[nodiscard]] std::size_t local(std::size_t row) const {
    return owner_.empty() ? row / live_.size() : static_cast<std::size_t>(local_[row]);
  }
  /// Rows member m owns.
  [[nodiscard]] std::size_t owned(member_id m) const { return m < owned_.size() ? owned_[m] : 0; }
  /// The global row of member m's local row l.
  [[nodiscard]] std::size_t global(member_id m, std::size_t l) const {
    if (owner_.empty()) {
      const auto it = std::lower_bound(live_.begin(), live_.end(), m);
      return l * live_.size() + static_cast<std::size_t>(it - live_.begin());
    }
    if (globals_.empty()) build_globals();
    return globals_[m][l];
  }
  [[nodiscard]] std::size_t rows() const noexcept { return rows_; }

 private:
  void build_globals() const {
    globals_.assign(owned_.size(), {});
    for (std::size_t m = 0; m < owned_.size(); ++m) globals_[m].reserve(owned_[m]);
    for (std::size_t r = 0; r < owner_.size(); ++r) globals_[owner_[r]].push_back(r);
  }

  std::size_t rows_ = 0;
  std::vector<member_id> live_;
  std::vector<std::size_t> owned_;
  std::vector<std::uint32_t> owner_;  // empty: cyclic
  std::vector<std::uint64_t> local_;
  mutable std::vector<std::vector<std::size_t>> globals_;
};

/// IterStore's placement: every row on one of the members that access it,
/// the one with the fewest rows so far (ties: the lowest id); rows nobody
/// accesses go to the least loaded member. `accessed[i]` is the ascending
/// list of rows live[i] accesses. The same on every member.
inline std::vector<std::uint32_t> place_rows(std::size_t rows, std::span<const member_id> live,
                                             const std::vector<std::vector<std::uint64_t>>& accessed) {
  std::vector<std::uint32_t> owner(rows);
  std::vector<std::size_t> load(live.size(), 0);
  std::vector<std::size_t> next(live.size(), 0);  // cursor into each list
  std::vector<std::size_t> candidates;
  for (std::size_t r = 0; r < rows; ++r) {
    candidates.clear();
    for (std::size_t i = 0; i < live.size(); ++i) {
      const auto& list = accessed[i];
      while (next[i] < list.size() && list[next[i]] < r) ++next[i];
      if (next[i] < list.size() && list[next[i]] == r) candidates.push_back(i);
    }
    if (candidates.empty())
      for (std::size_t i = 0; i < live.size(); ++i) candidates.push_back(i);
    std::size_t best = candidates.front();
    for (std::size_t i : candidates)
      if (load[i] < load[best]) best = i;
    ++load[best];
    owner[r] = static_cast<std::uint32_t>(live[best]);
  }
  return owner;
}

}  // namespace detail
DML_END_NAMESPACE

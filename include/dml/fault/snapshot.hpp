// SPDX-License-Identifier: BSL-1.0
/// @file
/// In-memory snapshots: a copy of a member's vectors taken at a clock every
/// member agrees on, restored later bit for bit. They are what online
/// tuning forks its trial branches from (dml/tune/tuner.hpp); a checkpoint
/// (dml/fault/checkpoint.hpp) is the same content on disk, surviving the
/// process.
///
/// A vector is what a checkpoint stores (`dml::fault::checkpoint_vector`): a
/// `dml::dist_vector` (its local buffer, through span()) or a contiguous
/// sized range of arithmetic elements such as a std::vector. Only the
/// elements are copied: a dist_vector's exchange clock (its count of
/// scatters) and its receive slots are not part of a snapshot, so the clock
/// a snapshot is taken at is the caller's training clock.
#pragma once

#include <dml/comm/concepts.hpp>
#include <dml/error.hpp>
#include <dml/fault/checkpoint.hpp>
#include <dml/fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

DML_BEGIN_NAMESPACE
namespace fault {
namespace detail {

/// What every member says in a snapshot's agreement: which operation, at
/// which clock, over how many vectors.
struct snapshot_record {
  std::uint64_t magic = 0;
  std::uint64_t operation = 0;  // 1: take, 2: restore
  std::uint64_t clock = 0;
  std::uint64_t vectors = 0;
};
inline constexpr std::uint64_t snapshot_magic = 0x646d6c2d736e6170ULL;  // "dml-snap"

/// Collective: every live member passes the same record, or every member
/// throws the same config_error naming the first member that differs.
template <class Comm>
void agree_on_snapshot(Comm& comm, const snapshot_record& mine, const char* what) {
  std::vector<std::byte> bytes(sizeof mine);
  std::memcpy(bytes.data(), &mine, sizeof mine);
  const auto all = comm.exchange(bytes);
  const auto view = comm.view();
  std::vector<snapshot_record> records(all.size());
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (all[i].size() == sizeof(snapshot_record)) std::memcpy(&records[i], all[i].data(), sizeof mine);
    const std::string who = "member " + std::to_string(i < view.live.size() ? view.live[i] : i);
    if (all[i].size() != sizeof(snapshot_record) || records[i].magic != snapshot_magic ||
        records[i].operation != records[0].operation)
      throw config_error(std::string("dml::fault::snapshot::") + what + ": " + who +
                         " is in another collective operation; every member must take and restore the same "
                         "snapshots in the same order");
    if (records[i].clock != records[0].clock)
      throw config_error(std::string("dml::fault::snapshot::") + what +
                         ": the members disagree on the clock (" + std::to_string(records[0].clock) +
                         " and " + std::to_string(records[i].clock) + " at " + who +
                         "); a snapshot is taken and restored at one agreed clock");
    if (records[i].vectors != records[0].vectors)
      throw config_error(std::string("dml::fault::snapshot::") + what + ": " + who + " passes " +
                         std::to_string(records[i].vectors) + " vectors, another member " +
                         std::to_string(records[0].vectors));
  }
}

}  // namespace detail

/// A copy of a member's vectors at an agreed clock, held in memory.
///
///     dml::fault::snapshot parent;
///     parent.take(comm, step, model, momentum);   // collective
///     ... train a trial branch ...
///     parent.restore(comm, model, momentum);      // collective, bit for bit
class snapshot {
 public:
  /// Collective over the live members of `comm`: copies the elements of
  /// `vectors` (replacing what the snapshot held) and records `clock`. Every
  /// member passes the same clock and the same number of vectors, else all
  /// throw `dml::config_error` and the snapshot is unchanged; lengths may
  /// differ between members (each restores its own).
  template <class Comm, class... Vs>
  void take(Comm& comm, std::uint64_t clock, const Vs&... vectors) {
    check<Comm, Vs...>();
    detail::agree_on_snapshot(comm, {detail::snapshot_magic, 1, clock, sizeof...(Vs)}, "take");
    std::vector<part> parts;
    parts.reserve(sizeof...(Vs));
    (parts.push_back(copy(vectors)), ...);
    parts_ = std::move(parts);
    clock_ = clock;
    taken_ = true;
  }

  /// Collective: writes the held elements back into `vectors` (the same
  /// number, element types and lengths as taken, in the same order) and
  /// returns the clock they were taken at. Throws `dml::config_error` when
  /// nothing was taken, when a vector does not match (before any is
  /// written), or when the members restore at different clocks.
  template <class Comm, class... Vs>
  std::uint64_t restore(Comm& comm, Vs&... vectors) const {
    check<Comm, Vs...>();
    static_assert((detail::element_of<Vs>::writable && ...),
                  "dml::fault::snapshot::restore: cannot restore into a vector of const elements");
    if (!taken_) throw config_error("dml::fault::snapshot::restore: no snapshot was taken");
    if (sizeof...(Vs) != parts_.size())
      throw config_error("dml::fault::snapshot::restore: " + std::to_string(sizeof...(Vs)) +
                         " vectors given, the snapshot holds " + std::to_string(parts_.size()));
    std::size_t k = 0;
    (check_shape(k++, vectors), ...);
    detail::agree_on_snapshot(comm, {detail::snapshot_magic, 2, clock_, sizeof...(Vs)}, "restore");
    k = 0;
    (write(k++, vectors), ...);
    return clock_;
  }

  /// True once take() succeeded.
  [[nodiscard]] bool taken() const noexcept { return taken_; }
  /// The clock of the last take().
  [[nodiscard]] std::uint64_t clock() const noexcept { return clock_; }
  /// Bytes of elements held.
  [[nodiscard]] std::size_t bytes() const noexcept {
    std::size_t n = 0;
    for (const auto& p : parts_) n += p.data.size();
    return n;
  }

 private:
  struct part {
    std::uint32_t code = 0;
    std::size_t length = 0;
    std::vector<std::byte> data;
  };

  template <class Comm, class... Vs>
  static constexpr void check() {
    static_assert(comm::transport<Comm>,
                  "dml::fault::snapshot: the first argument must be a transport context modelling "
                  "dml::comm::transport (e.g. the dml::comm::inproc::context that inproc::run passes)");
    static_assert((checkpoint_vector<Vs> && ...),
                  "dml::fault::snapshot: each vector must be a dml::dist_vector or a contiguous sized range "
                  "of arithmetic elements (as for dml::fault::checkpoint)");
  }

  template <class V>
  static part copy(const V& v) {
    using T = detail::element_t<V>;
    const auto e = detail::elements_of(v);
    part p{detail::code_of<T>(), e.size(), std::vector<std::byte>(e.size() * sizeof(T))};
    if (!e.empty()) std::memcpy(p.data.data(), e.data(), p.data.size());
    return p;
  }

  template <class V>
  void check_shape(std::size_t k, V& v) const {
    using T = detail::element_t<V>;
    const part& p = parts_[k];
    const auto e = detail::elements_of(v);
    if (detail::code_of<T>() != p.code)
      throw config_error("dml::fault::snapshot::restore: vector " + std::to_string(k) + " holds " +
                         detail::type_name(detail::code_of<T>()) + ", the snapshot " +
                         detail::type_name(p.code));
    if (e.size() != p.length)
      throw config_error("dml::fault::snapshot::restore: vector " + std::to_string(k) + " has " +
                         std::to_string(e.size()) + " elements, the snapshot " + std::to_string(p.length));
  }

  template <class V>
  void write(std::size_t k, V& v) const {
    const auto e = detail::elements_of(v);
    if (!parts_[k].data.empty()) std::memcpy(e.data(), parts_[k].data.data(), parts_[k].data.size());
  }

  std::vector<part> parts_;
  std::uint64_t clock_ = 0;
  bool taken_ = false;
};

}  // namespace fault
DML_END_NAMESPACE

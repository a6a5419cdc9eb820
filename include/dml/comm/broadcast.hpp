// SPDX-License-Identifier: BSL-1.0
/// @file
/// `dml::broadcast`: the root member's value (or array) reaches every live
/// member. It is built on the transport concept's collective `exchange()`
/// alone, so it works on every transport (inproc, mpi_rma, mpi, verbs)
/// without transport code of its own, and it lives with the transports
/// because it needs nothing else: no vectors, no fault tolerance.
///
/// Meant for values computed once and shared: a step size found by a search
/// on one member, a seed, a data set's shape, an initial model. It moves the
/// root's bytes to every member once (the other members send a 32-byte
/// header), so a large array costs what the transport's all-gather costs;
/// arrays exchanged every step belong in a distributed vector.
///
/// Failures behave as in every collective of the transport: a member that
/// has failed before or during the broadcast makes the members waiting for
/// it throw `dml::peer_failure` (naming it) instead of hanging, and a
/// member that never arrives makes them throw `dml::timeout` past the
/// transport's wait limit. As with a barrier cut short, a failure can reach
/// some members after they received the value and others before: the
/// broadcast is then not complete everywhere, and the program must treat
/// the error as the end of the run or recover (`dml::fault::recover`) and
/// broadcast again, on every survivor, from a root that survived.
#pragma once

#include <dml/comm/concepts.hpp>
#include <dml/detail/members.hpp>
#include <dml/error.hpp>
#include <dml/fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

DML_BEGIN_NAMESPACE
namespace detail::broadcast_impl {

// What every member sends: who it thinks the root is and what it passes,
// so that members that disagree all find out, and all throw the same error.
struct header {
  std::uint64_t magic = 0;  // a broadcast record (not another collective's)
  std::uint64_t root = 0;
  std::uint64_t count = 0;         // elements
  std::uint64_t element_size = 0;  // bytes per element
};
inline constexpr std::uint64_t magic = 0x646d6c2d62636173ULL;  // "dml-bcas"

inline std::string describe(const header& h) {
  return std::to_string(h.count) + (h.count == 1 ? " element" : " elements") + " of " +
         std::to_string(h.element_size) + " bytes";
}

/// Collective over the live members of `comm`: copies `root`'s `data` (count
/// elements of element_size bytes) into every other member's `data`. Every
/// check runs on the exchanged headers, which every member receives alike,
/// so a mismatch is the same config_error on every member.
template <class Comm>
void run(Comm& comm, std::span<std::byte> data, std::size_t count, std::size_t element_size, member_id root) {
  const comm::membership_view view = comm.view();
  const member_id me = comm.rank();
  header mine{magic, static_cast<std::uint64_t>(root), count, element_size};
  std::vector<std::byte> record(sizeof mine + (me == root ? data.size() : 0));
  std::memcpy(record.data(), &mine, sizeof mine);
  if (me == root && !data.empty()) std::memcpy(record.data() + sizeof mine, data.data(), data.size());

  const auto all = comm.exchange(record);

  if (all.size() != view.live.size())
    throw comm_error("dml::broadcast: the exchange returned " + std::to_string(all.size()) + " records for " +
                     std::to_string(view.live.size()) + " live members");
  std::vector<header> headers(all.size());
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (all[i].size() >= sizeof(header)) std::memcpy(&headers[i], all[i].data(), sizeof(header));
    if (all[i].size() < sizeof(header) || headers[i].magic != magic)
      throw config_error("dml::broadcast: member " + std::to_string(view.live[i]) +
                         " is not in a broadcast but in another collective operation; every member must call "
                         "the same collectives in the same order");
  }
  for (std::size_t i = 1; i < headers.size(); ++i)
    if (headers[i].root != headers[0].root)
      throw config_error("dml::broadcast: the members disagree on the root: member " +
                         std::to_string(view.live[0]) + " passes root " + std::to_string(headers[0].root) +
                         ", member " + std::to_string(view.live[i]) + " root " +
                         std::to_string(headers[i].root));
  std::size_t at = view.live.size();
  for (std::size_t i = 0; i < view.live.size(); ++i)
    if (view.live[i] == headers[0].root) at = i;
  if (at == view.live.size())
    throw config_error("dml::broadcast: root " + std::to_string(headers[0].root) +
                       " is not a live member (live: " + dml::detail::member_list(view.live) + ")");
  const header& from = headers[at];
  for (std::size_t i = 0; i < headers.size(); ++i)
    if (headers[i].count != from.count || headers[i].element_size != from.element_size)
      throw config_error("dml::broadcast: member " + std::to_string(view.live[i]) + " passes " +
                         describe(headers[i]) + ", the root (member " + std::to_string(root) + ") " +
                         describe(from) + "; every member must pass the same size");
  if (all[at].size() != sizeof(header) + data.size())
    throw comm_error("dml::broadcast: the root's record has " + std::to_string(all[at].size()) +
                     " bytes, expected " + std::to_string(sizeof(header) + data.size()));
  if (me != root && !data.empty()) std::memcpy(data.data(), all[at].data() + sizeof(header), data.size());
}

template <class Comm>
constexpr void check_transport() {
  static_assert(
      comm::transport<Comm>,
      "dml::broadcast: the first argument must be a transport context modelling dml::comm::transport "
      "(e.g. the dml::comm::inproc::context that inproc::run passes)");
}

template <class T>
struct is_span : std::false_type {};
template <class T, std::size_t E>
struct is_span<std::span<T, E>> : std::true_type {};

}  // namespace detail::broadcast_impl

/// Collective over the live members of `comm`: every member's `value`
/// becomes the value `root` passed. Every member passes the same root (an
/// original member id, live in the current view) and a value of the same
/// type; T must be trivially copyable (its bytes travel).
///
/// Throws on every member: `dml::config_error` when the root is not a live
/// member, when members pass different roots or values of different sizes,
/// or when a member is in another collective operation;
/// `dml::peer_failure` / `dml::timeout` as the transport's collectives do
/// (see the file's notes on failures).
///
/// @tparam Comm a transport context (dml::comm::transport)
/// @tparam T a trivially copyable type
template <class Comm, class T>
requires(!detail::broadcast_impl::is_span<std::remove_cv_t<T>>::value) void broadcast(Comm& comm, T& value,
                                                                                      member_id root) {
  detail::broadcast_impl::check_transport<Comm>();
  static_assert(
      !std::is_const_v<T>,
      "dml::broadcast(comm, value, root): the value receives the root's value, so it cannot be const");
  static_assert(
      std::is_trivially_copyable_v<T>,
      "dml::broadcast(comm, value, root): the value must be trivially copyable (its bytes are sent); "
      "for the elements of a std::vector pass std::span(v), whose size every member must share");
  detail::broadcast_impl::run(comm, std::as_writable_bytes(std::span<T, 1>(&value, 1)), 1, sizeof(T), root);
}

/// Collective over the live members of `comm`: every member's `values`
/// become the elements `root` passed. Every member passes a span of the
/// same size (a mismatch is a `dml::config_error` on every member, never a
/// truncated copy); otherwise as the single-value form.
///
/// @tparam Comm a transport context (dml::comm::transport)
/// @tparam T a trivially copyable element type
template <class Comm, class T, std::size_t Extent>
void broadcast(Comm& comm, std::span<T, Extent> values, member_id root) {
  detail::broadcast_impl::check_transport<Comm>();
  static_assert(!std::is_const_v<T>,
                "dml::broadcast(comm, span, root): the span receives the root's elements, so its elements "
                "cannot be const");
  static_assert(std::is_trivially_copyable_v<T>,
                "dml::broadcast(comm, span, root): the elements must be trivially copyable (their bytes are "
                "sent)");
  detail::broadcast_impl::run(comm, std::as_writable_bytes(values), values.size(), sizeof(T), root);
}

DML_END_NAMESPACE

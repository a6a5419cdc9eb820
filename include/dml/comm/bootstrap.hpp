// SPDX-License-Identifier: BSL-1.0
/// @file
/// Bootstrap helpers: exchange small per-member records over Boost.MPI
/// before a transport that cannot talk yet (rdma-core queue pairs need each
/// peer's LID/GID, QP number and memory key) is ready. Link dml::mpi.
#pragma once

#include <dml/comm/mpi/common.hpp>
#include <dml/error.hpp>
#include <dml/fwd.hpp>

#include <mpi.h>
#include <boost/mpi/communicator.hpp>

#include <chrono>
#include <cstddef>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

DML_BEGIN_NAMESPACE
namespace comm::bootstrap {

/// How long a bootstrap collective may wait for the slowest member.
inline constexpr std::chrono::milliseconds default_wait_limit{60'000};

/// The most bytes one member's record may have unless the caller says less
/// (MPI's int counts).
inline constexpr std::size_t any_record_size = detail::mpi_impl::most_record_bytes;

/// Collective over `comm`: every member's record (any length, also empty),
/// indexed by rank. Sizes, then the bytes, travel with nonblocking MPI
/// collectives polled up to `limit`, so a member that never arrives ends in
/// dml::timeout. The sizes the others declare are not trusted: a negative
/// one, one above `max_record_bytes`, or sizes adding up to more than
/// 2 GiB, are refused with dml::comm_error naming the rank, before anything
/// is allocated, on every member (all see the same sizes). Give
/// `max_record_bytes` when the records are small (a queue pair's address),
/// so that a faulty member cannot make the others allocate up to 2 GiB. MPI
/// errors become dml::comm_error (set MPI_ERRORS_RETURN on `comm` for them
/// to reach dml at all).
inline std::vector<std::vector<std::byte>> all_gather(
    const boost::mpi::communicator& comm, std::span<const std::byte> record,
    std::chrono::steady_clock::duration limit = default_wait_limit,
    std::size_t max_record_bytes = any_record_size) {
  return detail::mpi_impl::all_gather_bytes(
      static_cast<MPI_Comm>(comm), record, limit, "dml::comm::bootstrap::all_gather", [] {},
      max_record_bytes);
}

/// Collective: every member's trivially copyable record, indexed by rank.
/// Members must agree on T (its size is checked): a member that declares
/// more than sizeof(T) bytes is refused before anything is allocated
/// (dml::comm_error naming it, as in all_gather()); one that sends fewer is
/// a dml::config_error.
template <class T>
std::vector<T> all_gather_value(const boost::mpi::communicator& comm, const T& record,
                                std::chrono::steady_clock::duration limit = default_wait_limit) {
  static_assert(std::is_trivially_copyable_v<T>,
                "dml::comm::bootstrap::all_gather_value: the record type must be trivially copyable");
  const auto raw = all_gather(comm, std::as_bytes(std::span(&record, 1)), limit, sizeof(T));
  std::vector<T> out(raw.size());
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (raw[i].size() != sizeof(T))
      throw config_error("dml::comm::bootstrap::all_gather_value: member " + std::to_string(i) + " sent " +
                         std::to_string(raw[i].size()) + " bytes, expected " + std::to_string(sizeof(T)) +
                         " (members disagree on the record type)");
    std::memcpy(&out[i], raw[i].data(), sizeof(T));
  }
  return out;
}

/// Collective: member r passes `to_each[m]`, the record meant for member m
/// (one per member, e.g. the queue pair it created for m); returns what each
/// member sent to r, indexed by sender. Sizes, then the bytes, travel with
/// nonblocking all-to-all collectives polled up to `limit`; failures and
/// `max_record_bytes` as in all_gather(). Each member sees only the sizes
/// declared to it, so a refusal is that member's alone: it throws and marks
/// its process broken, and the others wait for it until their limit.
inline std::vector<std::vector<std::byte>> pairwise(
    const boost::mpi::communicator& comm, const std::vector<std::vector<std::byte>>& to_each,
    std::chrono::steady_clock::duration limit = default_wait_limit,
    std::size_t max_record_bytes = any_record_size) {
  return detail::mpi_impl::all_to_all_bytes(
      static_cast<MPI_Comm>(comm), to_each, limit, "dml::comm::bootstrap::pairwise", [] {}, max_record_bytes);
}

}  // namespace comm::bootstrap
DML_END_NAMESPACE

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
#include <boost/mpi/collectives/all_gather.hpp>
#include <boost/mpi/collectives/all_to_all.hpp>
#include <boost/mpi/communicator.hpp>
#include <boost/mpi/exception.hpp>

#include <chrono>
#include <cstddef>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

DML_BEGIN_NAMESPACE
namespace comm::bootstrap {

/// How long a bootstrap collective may wait for the slowest member.
inline constexpr std::chrono::milliseconds default_wait_limit{60'000};

/// Collective over `comm`: every member's record (any length, also empty),
/// indexed by rank. Sizes travel with boost::mpi::all_gather, the bytes with
/// a nonblocking MPI_Iallgatherv polled up to `limit`, so a member that
/// never arrives ends in dml::timeout. MPI errors become dml::comm_error
/// (set MPI_ERRORS_RETURN on `comm` for them to reach dml at all).
inline std::vector<std::vector<std::byte>> all_gather(
    const boost::mpi::communicator& comm, std::span<const std::byte> record,
    std::chrono::steady_clock::duration limit = default_wait_limit) {
  constexpr const char* who = "dml::comm::bootstrap::all_gather";
  if (record.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    throw config_error(std::string(who) + ": a record of " + std::to_string(record.size()) +
                       " bytes is too large");
  std::vector<int> counts;
  try {
    boost::mpi::all_gather(comm, static_cast<int>(record.size()), counts);
  } catch (const boost::mpi::exception& e) {
    throw comm_error(std::string(who) + ": " + e.what());
  }
  std::vector<int> displs(counts.size(), 0);
  std::size_t total = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    if (total > static_cast<std::size_t>(std::numeric_limits<int>::max()))
      throw comm_error(std::string(who) + ": records add up to more than 2 GiB");
    displs[i] = static_cast<int>(total);
    total += static_cast<std::size_t>(counts[i]);
  }
  std::vector<std::byte> all(total);
  MPI_Request r = MPI_REQUEST_NULL;
  detail::mpi_impl::check(
      MPI_Iallgatherv(record.data(), static_cast<int>(record.size()), MPI_BYTE, all.data(), counts.data(),
                      displs.data(), MPI_BYTE, static_cast<MPI_Comm>(comm), &r),
      who, "MPI_Iallgatherv");
  detail::mpi_impl::wait_request(r, limit, who, "exchange of records", [] {});
  std::vector<std::vector<std::byte>> out(counts.size());
  for (std::size_t i = 0; i < counts.size(); ++i)
    out[i].assign(all.data() + displs[i], all.data() + displs[i] + counts[i]);
  return out;
}

/// Collective: every member's trivially copyable record, indexed by rank.
/// Members must agree on T (its size is checked).
template <class T>
std::vector<T> all_gather_value(const boost::mpi::communicator& comm, const T& record,
                                std::chrono::steady_clock::duration limit = default_wait_limit) {
  static_assert(std::is_trivially_copyable_v<T>,
                "dml::comm::bootstrap::all_gather_value: the record type must be trivially copyable");
  const auto raw = all_gather(comm, std::as_bytes(std::span(&record, 1)), limit);
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
/// member sent to r, indexed by sender. Sizes travel with
/// boost::mpi::all_to_all, the bytes with MPI_Ialltoallv polled up to
/// `limit`.
inline std::vector<std::vector<std::byte>> pairwise(
    const boost::mpi::communicator& comm, const std::vector<std::vector<std::byte>>& to_each,
    std::chrono::steady_clock::duration limit = default_wait_limit) {
  constexpr const char* who = "dml::comm::bootstrap::pairwise";
  const auto n = static_cast<std::size_t>(comm.size());
  if (to_each.size() != n)
    throw config_error(std::string(who) + ": " + std::to_string(to_each.size()) + " records for a group of " +
                       std::to_string(n) + " members (one per member, including the caller)");
  std::vector<int> send_counts(n), send_displs(n), recv_counts, recv_displs(n);
  std::size_t total = 0;
  for (std::size_t m = 0; m < n; ++m) {
    if (to_each[m].size() > static_cast<std::size_t>(std::numeric_limits<int>::max()) ||
        total > static_cast<std::size_t>(std::numeric_limits<int>::max()))
      throw config_error(std::string(who) + ": records add up to more than 2 GiB");
    send_counts[m] = static_cast<int>(to_each[m].size());
    send_displs[m] = static_cast<int>(total);
    total += to_each[m].size();
  }
  std::vector<std::byte> out_bytes;
  out_bytes.reserve(total);
  for (const auto& rec : to_each) out_bytes.insert(out_bytes.end(), rec.begin(), rec.end());
  try {
    boost::mpi::all_to_all(comm, send_counts, recv_counts);
  } catch (const boost::mpi::exception& e) {
    throw comm_error(std::string(who) + ": " + e.what());
  }
  std::size_t in_total = 0;
  for (std::size_t m = 0; m < n; ++m) {
    if (in_total > static_cast<std::size_t>(std::numeric_limits<int>::max()))
      throw comm_error(std::string(who) + ": records add up to more than 2 GiB");
    recv_displs[m] = static_cast<int>(in_total);
    in_total += static_cast<std::size_t>(recv_counts[m]);
  }
  std::vector<std::byte> in_bytes(in_total);
  MPI_Request r = MPI_REQUEST_NULL;
  detail::mpi_impl::check(
      MPI_Ialltoallv(out_bytes.data(), send_counts.data(), send_displs.data(), MPI_BYTE, in_bytes.data(),
                     recv_counts.data(), recv_displs.data(), MPI_BYTE, static_cast<MPI_Comm>(comm), &r),
      who, "MPI_Ialltoallv");
  detail::mpi_impl::wait_request(r, limit, who, "pairwise exchange of records", [] {});
  std::vector<std::vector<std::byte>> result(n);
  for (std::size_t m = 0; m < n; ++m)
    result[m].assign(in_bytes.data() + recv_displs[m], in_bytes.data() + recv_displs[m] + recv_counts[m]);
  return result;
}

}  // namespace comm::bootstrap
DML_END_NAMESPACE

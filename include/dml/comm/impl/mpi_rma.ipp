// SPDX-License-Identifier: BSL-1.0
/// @file
/// Out-of-line definitions for <dml/comm/mpi_rma.hpp> (see <dml/version.hpp>, DML_DECL).
#pragma once

#include <dml/comm/mpi_rma.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <vector>

DML_BEGIN_NAMESPACE
namespace comm {

DML_DECL mpi_rma::mpi_rma(int& argc, char**& argv, std::chrono::milliseconds wait_limit)
    : env_(argc, argv, who, wait_limit), wait_limit_(wait_limit) {
  group_.attach(MPI_COMM_WORLD, wait_limit_);
}

DML_DECL mpi_rma::mpi_rma(int argc, const char* const* argv, std::chrono::milliseconds wait_limit)
    : env_(argc, argv, who, wait_limit), wait_limit_(wait_limit) {
  group_.attach(MPI_COMM_WORLD, wait_limit_);
}

DML_DECL mpi_rma::mpi_rma(std::chrono::milliseconds wait_limit)
    : env_(nullptr, who, wait_limit), wait_limit_(wait_limit) {
  group_.attach(MPI_COMM_WORLD, wait_limit_);
}

DML_DECL mpi_rma::mpi_rma(MPI_Comm comm, std::chrono::milliseconds wait_limit)
    : env_(who), wait_limit_(wait_limit) {
  group_.attach(comm, wait_limit_);
}

DML_DECL mpi_rma::~mpi_rma() {
  group_.shutdown(wait_limit_, [] {});
}

DML_DECL comm::agreement mpi_rma::agree_on_survivors(std::chrono::steady_clock::time_point deadline) {
  return group_.agree_on_survivors(deadline, [] {});  // one-sided: nothing to serve
}

DML_DECL void mpi_rma::barrier() {
  group_.collective(
      "barrier", [&] { detail::mpi_impl::barrier(group_.current(), wait_limit_, who, [this] { watch(); }); });
}

DML_DECL std::vector<std::vector<std::byte>> mpi_rma::exchange(std::span<const std::byte> record) {
  return group_.collective("exchange", [&] {
    return detail::mpi_impl::all_gather_bytes(group_.current(), record, wait_limit_, who,
                                              [this] { watch(); });
  });
}

DML_DECL mpi_rma::segment mpi_rma::create_segment(std::size_t data_words, std::size_t control_words) {
  namespace impl = detail::mpi_impl;
  const std::size_t words = data_words + control_words;
  if (data_words > std::numeric_limits<std::size_t>::max() / 16 ||
      words > static_cast<std::size_t>(std::numeric_limits<MPI_Aint>::max() / 8))
    throw config_error(std::string(who) + ": segment of " + std::to_string(data_words) + " + " +
                       std::to_string(control_words) + " words is too large");
  // Every member learns every other's sizes: control words sit after the
  // data words, so their displacement on a target depends on its data size.
  const std::array<std::uint64_t, 2> mine{data_words, control_words};
  const auto all = exchange(std::as_bytes(std::span(mine)));
  segment s;
  s.ctx_ = this;
  const MPI_Comm comm = group_.current();
  const auto& view = group_.view();
  s.comm_ = comm;
  s.data_words_.assign(size(), 0);
  s.control_words_.assign(size(), 0);
  s.ranks_.assign(size(), -1);
  if (all.size() != view.live.size())
    throw comm_error(std::string(who) + ": segment size records do not match the view");
  for (std::size_t i = 0; i < all.size(); ++i) {
    const member_id m = view.live[i];
    std::array<std::uint64_t, 2> theirs{};
    if (all[i].size() != sizeof theirs)
      throw comm_error(std::string(who) + ": malformed segment size record");
    std::memcpy(theirs.data(), all[i].data(), sizeof theirs);
    s.data_words_[m] = static_cast<std::size_t>(theirs[0]);
    s.control_words_[m] = static_cast<std::size_t>(theirs[1]);
    s.ranks_[m] = static_cast<int>(i);
  }

  // Only MPI_SUM and MPI_NO_OP ever touch a control word: osc components may
  // then use network atomics.
  MPI_Info info = MPI_INFO_NULL;
  impl::check(MPI_Info_create(&info), who, "MPI_Info_create");
  MPI_Info_set(info, "accumulate_ops", "same_op_no_op");
  void* base = nullptr;
  MPI_Win win = MPI_WIN_NULL;
  int rc = MPI_SUCCESS;
  {
    // Every member has joined the exchange above, but one may die before it
    // reaches this call, which cannot be interrupted.
    impl::watchdog::scope guard(who, "MPI_Win_allocate (a vector's segment)", wait_limit_);
    if (group_.shared_windows()) {
      MPI_Info_set(info, "alloc_shared_noncontig", "true");  // each member's part in its own pages
      rc = MPI_Win_allocate_shared(static_cast<MPI_Aint>(8 * words), 8, info, comm, &base, &win);
    } else {
      rc = MPI_Win_allocate(static_cast<MPI_Aint>(8 * words), 8, info, comm, &base, &win);
    }
  }
  MPI_Info_free(&info);
  if (rc != MPI_SUCCESS) impl::mark_broken();  // others may hold a window this member lacks
  impl::check(rc, who, group_.shared_windows() ? "MPI_Win_allocate_shared" : "MPI_Win_allocate");
  s.win_ = win;
  s.base_ = static_cast<std::uint64_t*>(base);
  impl::check(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN), who, "MPI_Win_set_errhandler");
  if (words != 0 && reinterpret_cast<std::uintptr_t>(base) % alignof(std::uint64_t) != 0)
    throw comm_error(std::string(who) + ": MPI_Win_allocate returned memory not aligned to 8 bytes");
  // MPI_Win_allocate does not zero the memory (osc/pt2pt hands out recycled
  // memory); empty slots and counters must read as 0.
  if (words != 0) std::memset(base, 0, 8 * words);
  impl::check(MPI_Win_lock_all(MPI_MODE_NOCHECK, win), who, "MPI_Win_lock_all");
  impl::check(MPI_Win_sync(win), who, "MPI_Win_sync");
  // Nobody writes into a window before its owner has zeroed it.
  barrier();
  return s;
}

DML_DECL void mpi_rma::segment::release() noexcept {
  if (win_ == MPI_WIN_NULL) return;
  bool ok = !detail::mpi_impl::finalized() && !detail::mpi_impl::broken();
  if (ok) {
    try {
      flush_all();
      // Heartbeats on: a member that died during the last round ends this
      // wait at once instead of after the wait limit.
      detail::mpi_impl::barrier(comm_, ctx_->wait_limit_, who, [this] { ctx_->watch(); });
    } catch (...) {
      ok = false;  // marked broken by the failing step
    }
  }
  if (ok) {
    detail::mpi_impl::watchdog::scope guard(who, "MPI_Win_free (a vector's segment)", ctx_->wait_limit_);
    MPI_Win_unlock_all(win_);
    MPI_Win_free(&win_);
  }
  win_ = MPI_WIN_NULL;
  base_ = nullptr;
  ctx_ = nullptr;
}

}  // namespace comm
DML_END_NAMESPACE

// SPDX-License-Identifier: BSL-1.0
/// @file
/// Out-of-line definitions for <dml/comm/mpi/watchdog.hpp> (see <dml/version.hpp>, DML_DECL).
#pragma once

#include <dml/comm/mpi/watchdog.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

DML_BEGIN_NAMESPACE
namespace detail::mpi_impl {

DML_DECL watchdog& watchdog::instance() {
  static watchdog w;
  return w;
}

DML_DECL void watchdog::set_probe(probe p, long rank) {
  std::lock_guard lock(mutex_);
  probe_ = std::move(p);
  rank_ = rank;
}

DML_DECL void watchdog::clear_probe() {
  std::lock_guard lock(mutex_);
  probe_ = nullptr;
}

DML_DECL void watchdog::set_before_exit(std::function<void()> f) {
  std::lock_guard lock(mutex_);
  before_exit_ = std::move(f);
}

DML_DECL watchdog::~watchdog() {
  {
    std::lock_guard lock(mutex_);
    quit_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

DML_DECL void watchdog::open(const char* who, const char* what, clock::duration limit) {
  std::lock_guard lock(mutex_);
  who_ = who;
  what_ = what;
  since_ = clock::now();
  limit_ = limit;
  active_ = true;
  if (!thread_.joinable()) thread_ = std::thread([this] { watch(); });
  wake_.notify_all();
}

DML_DECL void watchdog::close() {
  std::lock_guard lock(mutex_);
  active_ = false;
}

DML_DECL void watchdog::watch() {
  std::unique_lock lock(mutex_);
  while (!quit_) {
    if (!active_) {
      wake_.wait(lock, [this] { return quit_ || active_; });
      continue;
    }
    wake_.wait_for(lock, std::chrono::milliseconds(20));
    if (!active_ || quit_) continue;
    std::string cause;
    if (probe_) cause = probe_();
    const auto waited = clock::now() - since_;
    if (cause.empty() && waited <= limit_) continue;
    const double seconds = std::chrono::duration<double>(waited).count();
    std::string text =
        std::string(who_) + ": " +
        (rank_ >= 0 ? "member " + std::to_string(rank_) : std::string("a process of the job")) + ": ";
    if (!cause.empty())
      text += cause + " while this member was in " + what_ + ", which MPI cannot interrupt";
    else
      text += std::string(what_) + " did not return within " + std::to_string(seconds) +
              " s (a member of the job has probably died or stopped)";
    text += "; ending this process with exit status " + std::to_string(stuck_exit_status);
    std::fprintf(stderr, "%s\n", text.c_str());
    std::fflush(stderr);
    std::fflush(stdout);
    if (before_exit_) before_exit_();
    std::_Exit(stuck_exit_status);
  }
}

}  // namespace detail::mpi_impl
DML_END_NAMESPACE

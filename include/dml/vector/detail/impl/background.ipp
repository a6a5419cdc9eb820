// SPDX-License-Identifier: BSL-1.0
/// @file
/// Out-of-line definitions for <dml/vector/detail/background.hpp> (see <dml/version.hpp>, DML_DECL).
#pragma once

#include <dml/vector/detail/background.hpp>

#include <utility>

DML_BEGIN_NAMESPACE
namespace detail {

DML_DECL background::~background() {
  {
    std::lock_guard lock(mutex_);
    quit_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

DML_DECL void background::launch(std::function<void()> task) {
  std::lock_guard lock(mutex_);
  task_ = std::move(task);
  busy_ = true;
  if (!thread_.joinable()) thread_ = std::thread([this] { work(); });
  wake_.notify_all();
}

DML_DECL void background::settle() {
  std::unique_lock lock(mutex_);
  done_.wait(lock, [this] { return !busy_; });
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

DML_DECL bool background::busy() const {
  std::lock_guard lock(mutex_);
  return busy_;
}

DML_DECL void background::work() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return quit_ || task_; });
    if (quit_ && !task_) return;
    auto task = std::exchange(task_, nullptr);
    lock.unlock();
    std::exception_ptr error;
    try {
      task();
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    error_ = error;
    busy_ = false;
    done_.notify_all();
  }
}

}  // namespace detail
DML_END_NAMESPACE

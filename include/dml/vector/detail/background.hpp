// SPDX-License-Identifier: BSL-1.0
// Internal: the thread that carries a context's non-blocking scatter. One
// per transport context, kept in the context's attributes, running at most
// one operation at a time; every operation of a vector on the context first
// waits for it (settle), so the transport is never used by two threads at
// once. Exceptions thrown there (a config error, a timeout, an in-process
// member stopped by fault injection) are rethrown by settle() on the
// caller's thread.
#pragma once

#include <dml/comm/attributes.hpp>
#include <dml/fwd.hpp>

#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

DML_BEGIN_NAMESPACE
namespace detail {

class background {
 public:
  background() = default;
  background(const background&) = delete;
  background& operator=(const background&) = delete;
  DML_DECL ~background();

  /// Runs `task` on the background thread. The caller settles first.
  DML_DECL void launch(std::function<void()> task);

  /// Waits until the running task (if any) is done; rethrows what it threw.
  DML_DECL void settle();

  [[nodiscard]] DML_DECL bool busy() const;

 private:
  DML_DECL void work();

  mutable std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::thread thread_;
  std::function<void()> task_;
  std::exception_ptr error_;
  bool busy_ = false;
  bool quit_ = false;
};

/// The context's background thread (made on first use), or nullptr when
/// the transport keeps no attributes.
template <class Comm>
background* background_of(Comm& comm) {
  if constexpr (requires { comm.attributes(); }) {
    return comm.attributes()
        .template get_or_create<background>([] { return std::make_shared<background>(); })
        .get();
  } else {
    return nullptr;
  }
}

/// Waits for the context's background operation, if any.
template <class Comm>
void settle_background(Comm& comm) {
  if constexpr (requires { comm.attributes(); }) {
    if (auto b = comm.attributes().template find<background>()) b->settle();
  }
}

}  // namespace detail
DML_END_NAMESPACE

#if !defined(DML_SEPARATE_COMPILATION)
#include <dml/vector/detail/impl/background.ipp>
#endif

// SPDX-License-Identifier: BSL-1.0
/// @file
/// Local fail-stop: a member whose process hits a fatal signal (SIGSEGV,
/// SIGBUS, SIGFPE, SIGILL) says so in one line on stderr and ends at once,
/// so the other members see a dead member and recover without it (MALT's
/// local fault monitors).
///
///     int main(int argc, char** argv) {
///       dml::comm::mpi_rma comm(argc, argv);
///       const auto trap = dml::fault::trap_fatal_signals(comm.rank());
///       train(comm);
///     }
///
/// What it does. While the returned object lives, each of the four signals
/// runs a handler that writes
///
///     dml: member 3: fatal signal SIGSEGV; this member stops (the others will see it as failed)
///
/// to stderr with write(2) and then calls `_exit(128 + signo)`: no
/// destructors, no atexit handlers, no stdio flush and no `MPI_Finalize`, so
/// a process in an unknown state does not go on writing into its peers'
/// memory or block them in a collective. The survivors' monitors then see it
/// as failed like any other dead process. The handler uses an alternate
/// signal stack (installed for the calling thread when that thread has
/// none), so a stack overflow is caught too. The handlers are installed with
/// `SA_RESETHAND`: a second fault while the line is written gets the default
/// action.
///
/// What it does not do. Signal dispositions belong to the process, not to a
/// thread: with the in-process transport, where members are threads of one
/// process, a fault in one member ends every member, and the others cannot
/// see it as dead. The trap is meant for one member per process (the MPI
/// transports). It does not save state (see `dml::fault::checkpoint`), does
/// not catch `abort()`, SIGKILL or a deadlock, and catches a stack overflow
/// only on threads that have an alternate signal stack (the calling thread
/// gets one). Open MPI's `mpiexec` ends the whole job when one process exits
/// with an error unless it runs with `--enable-recovery`
/// (docs/running.md). While it is installed it replaces any handlers of the
/// four signals, including a sanitizer's.
#pragma once

#include <dml/error.hpp>
#include <dml/fwd.hpp>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <memory>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

#include <signal.h>
#include <unistd.h>

DML_BEGIN_NAMESPACE
namespace fault {
namespace detail {

/// The signals `trap_fatal_signals` traps.
inline constexpr std::array<int, 4> fatal_signals{SIGSEGV, SIGBUS, SIGFPE, SIGILL};

// The member the handler names. The handler may read only lock-free atomics.
inline std::atomic<member_id> trapped_member{0};
static_assert(std::atomic<member_id>::is_always_lock_free,
              "dml::fault::trap_fatal_signals needs a lock-free atomic member id for its signal handler");

[[nodiscard]] inline const char* fatal_signal_name(int signo) noexcept {
  switch (signo) {
    case SIGSEGV:
      return "SIGSEGV";
    case SIGBUS:
      return "SIGBUS";
    case SIGFPE:
      return "SIGFPE";
    case SIGILL:
      return "SIGILL";
  }
  return "(unknown)";
}

// Async-signal-safe string building: no allocation, no locale, no stdio.
struct signal_line {
  char text[192];
  std::size_t size = 0;

  void append(const char* s) noexcept {
    while (*s != '\0' && size < sizeof text) text[size++] = *s++;
  }
  void append(std::size_t v) noexcept {
    char digits[20];  // 2^64 has 20 digits
    std::size_t n = 0;
    do {
      digits[n++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v != 0);
    while (n > 0 && size < sizeof text) text[size++] = digits[--n];
  }
};

// The handler: only write(2) and _exit(2), both async-signal-safe.
inline void on_fatal_signal(int signo) noexcept {
  signal_line line;
  line.append("dml: member ");
  line.append(trapped_member.load(std::memory_order_relaxed));
  line.append(": fatal signal ");
  line.append(fatal_signal_name(signo));
  line.append("; this member stops (the others will see it as failed)\n");
  for (std::size_t done = 0; done < line.size;) {
    const ::ssize_t n = ::write(STDERR_FILENO, line.text + done, line.size - done);
    if (n > 0)
      done += static_cast<std::size_t>(n);
    else if (n < 0 && errno == EINTR)
      continue;
    else
      break;
  }
  ::_exit(128 + signo);
}

// Large enough for the handler with room to spare, and never below the
// system's own minimum (SIGSTKSZ is not a constant on newer C libraries).
[[nodiscard]] inline std::size_t signal_stack_size() noexcept {
  const std::size_t system = static_cast<std::size_t>(SIGSTKSZ);
  return system > 65536 ? system : 65536;
}

}  // namespace detail

class fatal_signal_trap;
[[nodiscard("the signals are trapped only while the returned object lives")]] fatal_signal_trap
trap_fatal_signals(member_id rank);

/// Keeps the fatal signals trapped while it lives; restores the previous
/// handlers (and the previous alternate signal stack, when the trap
/// installed one) when destroyed or on `restore()`. Move-only. Traps may
/// nest; destroy them in reverse order. Destroy it on the thread that
/// created it: another thread cannot remove that thread's alternate stack,
/// so the stack's memory is then left allocated rather than freed under it.
class fatal_signal_trap {
 public:
  /// A trap that traps nothing.
  fatal_signal_trap() = default;
  fatal_signal_trap(const fatal_signal_trap&) = delete;
  fatal_signal_trap& operator=(const fatal_signal_trap&) = delete;
  fatal_signal_trap(fatal_signal_trap&& other) noexcept { take(other); }
  fatal_signal_trap& operator=(fatal_signal_trap&& other) noexcept {
    if (this != &other) {
      restore();
      take(other);
    }
    return *this;
  }
  ~fatal_signal_trap() { restore(); }

  /// Whether this object holds the signals.
  [[nodiscard]] bool active() const noexcept { return active_; }

  /// Puts back the handlers and alternate stack found at installation.
  /// Does nothing on an inactive trap.
  void restore() noexcept {
    if (!active_) return;
    active_ = false;
    for (std::size_t i = 0; i < detail::fatal_signals.size(); ++i)
      (void)::sigaction(detail::fatal_signals[i], &previous_[i], nullptr);
    detail::trapped_member.store(previous_member_, std::memory_order_relaxed);
    if (!stack_) return;
    if (std::this_thread::get_id() != thread_) {
      (void)stack_.release();  // still that thread's alternate stack: must stay valid
      return;
    }
    ::stack_t current{};
    if (::sigaltstack(nullptr, &current) == 0 && current.ss_sp == stack_.get()) {
      ::stack_t off{};
      off.ss_flags = SS_DISABLE;
      if (::sigaltstack(&off, nullptr) != 0) {
        (void)stack_.release();  // in use (cannot happen outside a handler): keep it valid
        return;
      }
    }
    stack_.reset();
  }

 private:
  friend fatal_signal_trap trap_fatal_signals(member_id rank);

  void take(fatal_signal_trap& other) noexcept {
    active_ = std::exchange(other.active_, false);
    previous_ = other.previous_;
    previous_member_ = other.previous_member_;
    stack_ = std::move(other.stack_);
    thread_ = other.thread_;
  }

  bool active_ = false;
  std::array<struct ::sigaction, detail::fatal_signals.size()> previous_{};
  member_id previous_member_ = 0;
  std::unique_ptr<char[]> stack_;  // the alternate stack this trap installed, if any
  std::thread::id thread_;
};

/// Traps SIGSEGV, SIGBUS, SIGFPE and SIGILL in this process: on any of them
/// the process writes "dml: member <rank>: fatal signal <name>; this member
/// stops (the others will see it as failed)" to stderr and exits at once
/// with code 128 + the signal number. Gives the calling thread an alternate
/// signal stack if it has none. Keep the returned object alive as long as
/// the trap should last. For one member per process only; see the file
/// comment for what it does not do. Throws `std::system_error` if the
/// system refuses a handler or the stack, and `dml::config_error` if a
/// handler is accepted but does not take effect (a sanitizer runtime that
/// keeps its own); nothing stays installed then.
[[nodiscard("the signals are trapped only while the returned object lives")]] inline fatal_signal_trap
trap_fatal_signals(member_id rank) {
  fatal_signal_trap trap;
  trap.thread_ = std::this_thread::get_id();
  trap.previous_member_ = detail::trapped_member.load(std::memory_order_relaxed);

  ::stack_t current{};
  if (::sigaltstack(nullptr, &current) != 0)
    throw std::system_error(errno, std::generic_category(), "dml::fault::trap_fatal_signals: sigaltstack");
  if ((current.ss_flags & SS_DISABLE) != 0) {
    const std::size_t size = detail::signal_stack_size();
    auto memory = std::make_unique<char[]>(size);
    ::stack_t mine{};
    mine.ss_sp = memory.get();
    mine.ss_size = size;
    if (::sigaltstack(&mine, nullptr) != 0)
      throw std::system_error(errno, std::generic_category(), "dml::fault::trap_fatal_signals: sigaltstack");
    trap.stack_ = std::move(memory);
  }

  detail::trapped_member.store(rank, std::memory_order_relaxed);
  struct ::sigaction action {};
  action.sa_handler = &detail::on_fatal_signal;
  action.sa_flags = SA_RESETHAND | SA_ONSTACK;
  ::sigemptyset(&action.sa_mask);
  trap.active_ = true;  // from here on, a failure restores what was installed
  for (std::size_t i = 0; i < detail::fatal_signals.size(); ++i) {
    if (::sigaction(detail::fatal_signals[i], &action, &trap.previous_[i]) == 0) continue;
    const int err = errno;
    // Put back the ones already replaced; the rest still hold their handlers.
    for (std::size_t j = i; j < detail::fatal_signals.size(); ++j)
      (void)::sigaction(detail::fatal_signals[j], nullptr, &trap.previous_[j]);
    trap.restore();
    throw std::system_error(err, std::generic_category(),
                            std::string("dml::fault::trap_fatal_signals: sigaction(") +
                                detail::fatal_signal_name(detail::fatal_signals[i]) + ")");
  }
  // A sanitizer runtime may accept the call and keep its own handler
  // (ASAN_OPTIONS=allow_user_segv_handler=0): a trap that does not trap must
  // not pass silently.
  for (const int signo : detail::fatal_signals) {
    struct ::sigaction now {};
    if (::sigaction(signo, nullptr, &now) == 0 && now.sa_handler == &detail::on_fatal_signal) continue;
    trap.restore();
    throw config_error(std::string("dml::fault::trap_fatal_signals: the ") +
                       detail::fatal_signal_name(signo) +
                       " handler did not take effect (a sanitizer runtime may keep its own, e.g. with "
                       "ASAN_OPTIONS=allow_user_segv_handler=0)");
  }
  return trap;
}

}  // namespace fault
DML_END_NAMESPACE

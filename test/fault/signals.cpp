// SPDX-License-Identifier: BSL-1.0
// Local fail-stop: a member process that traps its fatal signals ends with
// exit code 128 + signo after one line on stderr naming itself and the
// signal; the trap's object puts the previous handlers back. Every fault is
// made in a forked child, which the test reads and reaps. Where a sanitizer
// runtime keeps its own handlers the trap refuses to install, and the tests
// say they are skipped.
#include <dml/error.hpp>
#include <dml/fault/signals.hpp>

#include "support/catch.hpp"

#include <array>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>
#include <utility>

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

// The faults are undefined behaviour that UndefinedBehaviorSanitizer would
// report (and end the process for) before the hardware raises the signal
// under test, so it does not instrument them.
#if defined(__GNUC__) || defined(__clang__)
#define DML_TEST_NO_SANITIZE __attribute__((no_sanitize("undefined"))) __attribute__((noinline))
#else
#define DML_TEST_NO_SANITIZE
#endif

DML_TEST_NO_SANITIZE void null_dereference() {
  int* volatile null = nullptr;  // volatile: the compiler cannot see it is null
  volatile int value = *null;
  (void)value;
}

DML_TEST_NO_SANITIZE void divide_by_zero() {
  volatile int zero = 0;
  volatile int one = 1;
  volatile int quotient = one / zero;  // x86 traps; other CPUs may return a value
  (void)quotient;
#if !defined(__x86_64__) && !defined(__i386__)
  std::raise(SIGFPE);  // integer division by zero does not trap on every CPU
#endif
}

// Deep enough to overflow any stack; the condition keeps it from being
// provably infinite (and from being turned into a loop).
DML_TEST_NO_SANITIZE std::size_t recurse(volatile char* caller, std::size_t depth) {
  volatile char frame[4096];
  frame[0] = static_cast<char>(depth);
  frame[sizeof frame - 1] = caller != nullptr ? caller[0] : char{0};
  if (depth == SIZE_MAX) return 0;
  return recurse(frame, depth + 1) + static_cast<std::size_t>(frame[sizeof frame / 2]);
}

struct child_result {
  int status = 0;
  std::string err;  // what the child wrote to stderr
};

// Runs body in a forked child with stderr captured. The child ends with 99
// if body returns: the fault did not end it.
template <class Body>
child_result in_child(Body body) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const ::pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(fds[0]);
    ::dup2(fds[1], STDERR_FILENO);
    ::close(fds[1]);
    ::rlimit no_core{0, 0};
    (void)::setrlimit(RLIMIT_CORE, &no_core);  // a child killed by a signal leaves no core file
    body();
    ::_exit(99);
  }
  ::close(fds[1]);
  child_result r;
  char buf[512];
  for (;;) {
    const ::ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n > 0) {
      r.err.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;
  }
  ::close(fds[0]);
  while (::waitpid(pid, &r.status, 0) < 0 && errno == EINTR) {
  }
  return r;
}

std::string expected_line(dml::member_id m, const char* signal) {
  return "dml: member " + std::to_string(m) + ": fatal signal " + signal +
         "; this member stops (the others will see it as failed)\n";
}

void require_trapped(const child_result& r, int signo, dml::member_id m, const char* name) {
  INFO("child stderr: " << r.err);
  REQUIRE(WIFEXITED(r.status));
  REQUIRE(WEXITSTATUS(r.status) == 128 + signo);
  REQUIRE_THAT(r.err, dml_test::contains(expected_line(m, name)));
}

// Empty when the trap can be installed. Under AddressSanitizer with
// allow_user_segv_handler=0 it cannot, and says so with a config_error.
std::string cannot_trap() {
  try {
    const auto trap = dml::fault::trap_fatal_signals(0);
    return {};
  } catch (const dml::config_error& e) {
#if defined(__SANITIZE_ADDRESS__)
    return e.what();
#else
    throw;  // only a sanitizer runtime has a reason to refuse
#endif
  }
}

#define DML_TEST_SKIP_WITHOUT_TRAP()                                        \
  do {                                                                      \
    if (const auto why = cannot_trap(); !why.empty()) {                     \
      WARN("skipped: the trap cannot be installed in this build: " << why); \
      return;                                                               \
    }                                                                       \
  } while (false)

bool same_action(const struct ::sigaction& a, const struct ::sigaction& b) {
  return a.sa_handler == b.sa_handler && a.sa_flags == b.sa_flags;
}

void test_handler(int) {}

}  // namespace

TEST_CASE("a trapped null dereference ends the member with 128 + SIGSEGV and one line naming it") {
  DML_TEST_SKIP_WITHOUT_TRAP();
  require_trapped(in_child([] {
                    const auto trap = dml::fault::trap_fatal_signals(3);
                    null_dereference();
                  }),
                  SIGSEGV, 3, "SIGSEGV");
}

TEST_CASE("a trapped integer division by zero ends the member with 128 + SIGFPE") {
  DML_TEST_SKIP_WITHOUT_TRAP();
  require_trapped(in_child([] {
                    const auto trap = dml::fault::trap_fatal_signals(5);
                    divide_by_zero();
                  }),
                  SIGFPE, 5, "SIGFPE");
}

TEST_CASE("SIGBUS and SIGILL are trapped too, and member ids of any size are written out") {
  DML_TEST_SKIP_WITHOUT_TRAP();
  require_trapped(in_child([] {
                    const auto trap = dml::fault::trap_fatal_signals(0);
                    std::raise(SIGBUS);
                  }),
                  SIGBUS, 0, "SIGBUS");
  constexpr dml::member_id big = SIZE_MAX;  // 20 digits on 64-bit systems
  require_trapped(in_child([] {
                    const auto trap = dml::fault::trap_fatal_signals(big);
                    std::raise(SIGILL);
                  }),
                  SIGILL, big, "SIGILL");
}

TEST_CASE("a stack overflow is caught on the alternate signal stack") {
  DML_TEST_SKIP_WITHOUT_TRAP();
  require_trapped(in_child([] {
                    ::rlimit stack{};
                    (void)::getrlimit(RLIMIT_STACK, &stack);
                    stack.rlim_cur = 8u << 20;  // overflow soon, whatever the shell's limit
                    (void)::setrlimit(RLIMIT_STACK, &stack);
                    const auto trap = dml::fault::trap_fatal_signals(6);
                    (void)recurse(nullptr, 0);
                  }),
                  SIGSEGV, 6, "SIGSEGV");
}

TEST_CASE("the trap's object restores the previous handlers") {
  DML_TEST_SKIP_WITHOUT_TRAP();
  constexpr std::array<int, 4> signals{SIGSEGV, SIGBUS, SIGFPE, SIGILL};
  std::array<struct ::sigaction, 4> original{};
  for (std::size_t i = 0; i < signals.size(); ++i)
    REQUIRE(::sigaction(signals[i], nullptr, &original[i]) == 0);
  // A handler of the program's own on SIGBUS, to tell restoring from resetting.
  struct ::sigaction own {};
  own.sa_handler = &test_handler;
  ::sigemptyset(&own.sa_mask);
  REQUIRE(::sigaction(SIGBUS, &own, nullptr) == 0);
  std::array<struct ::sigaction, 4> before{};
  for (std::size_t i = 0; i < signals.size(); ++i) REQUIRE(::sigaction(signals[i], nullptr, &before[i]) == 0);

  {
    auto trap = dml::fault::trap_fatal_signals(2);
    REQUIRE(trap.active());
    for (std::size_t i = 0; i < signals.size(); ++i) {
      struct ::sigaction now {};
      REQUIRE(::sigaction(signals[i], nullptr, &now) == 0);
      REQUIRE(!same_action(now, before[i]));
      REQUIRE((now.sa_flags & SA_RESETHAND) != 0);
      REQUIRE((now.sa_flags & SA_ONSTACK) != 0);
    }
    // Moving hands the trap over; the moved-from object restores nothing.
    auto moved = std::move(trap);
    REQUIRE(moved.active());
    REQUIRE(!trap.active());  // NOLINT(bugprone-use-after-move): checking the moved-from state
    trap.restore();
    struct ::sigaction now {};
    REQUIRE(::sigaction(SIGBUS, nullptr, &now) == 0);
    REQUIRE(now.sa_handler != &test_handler);
  }
  for (std::size_t i = 0; i < signals.size(); ++i) {
    struct ::sigaction now {};
    REQUIRE(::sigaction(signals[i], nullptr, &now) == 0);
    INFO("signal " << signals[i]);
    REQUIRE(same_action(now, before[i]));
  }
  struct ::sigaction now {};
  REQUIRE(::sigaction(SIGBUS, nullptr, &now) == 0);
  REQUIRE(now.sa_handler == &test_handler);
  for (std::size_t i = 0; i < signals.size(); ++i)
    REQUIRE(::sigaction(signals[i], &original[i], nullptr) == 0);
}

TEST_CASE("after restore() a fault takes the previous disposition again") {
  DML_TEST_SKIP_WITHOUT_TRAP();
  // Default action before the trap: after restoring it, SIGSEGV kills the
  // child by the signal instead of the trap's exit code.
  const auto r = in_child([] {
    ::signal(SIGSEGV, SIG_DFL);
    auto trap = dml::fault::trap_fatal_signals(4);
    trap.restore();
    std::raise(SIGSEGV);
  });
  INFO("child stderr: " << r.err);
  REQUIRE(WIFSIGNALED(r.status));
  REQUIRE(WTERMSIG(r.status) == SIGSEGV);
  REQUIRE(r.err.find("dml: member") == std::string::npos);
}

TEST_CASE("the alternate signal stack is the calling thread's and is removed again") {
  DML_TEST_SKIP_WITHOUT_TRAP();
  // On a new thread, which has none unless a sanitizer runtime gave it one.
  // Catch2 assertions stay on the test's thread.
  ::stack_t before{}, during{}, after{};
  int calls = 0;
  std::thread([&] {
    calls += ::sigaltstack(nullptr, &before) == 0 ? 1 : 0;
    {
      const auto trap = dml::fault::trap_fatal_signals(1);
      calls += ::sigaltstack(nullptr, &during) == 0 ? 1 : 0;
    }
    calls += ::sigaltstack(nullptr, &after) == 0 ? 1 : 0;
  }).join();
  REQUIRE(calls == 3);
  REQUIRE((during.ss_flags & SS_DISABLE) == 0);
  if ((before.ss_flags & SS_DISABLE) != 0) {
    REQUIRE(during.ss_size >= 65536);  // the trap's own
    REQUIRE((after.ss_flags & SS_DISABLE) != 0);
  } else {
    REQUIRE(during.ss_sp == before.ss_sp);  // an existing stack is kept
    REQUIRE(after.ss_sp == before.ss_sp);
    REQUIRE((after.ss_flags & SS_DISABLE) == 0);
  }
}

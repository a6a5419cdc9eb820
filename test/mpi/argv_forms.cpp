// SPDX-License-Identifier: BSL-1.0
// The forms of program arguments an MPI transport starts from: main's
// (int&, char**&), a copy or read-only ones (int, const char**), and none.
// Which constructors exist is checked at compile time; the form named by
// the first argument (ref, const, value, none) is then started under
// mpiexec (MPI starts once per process, so each form is its own run). The
// program prints "argv form <form>: rank r of n" and exits 0.
#include "mpi/support.hpp"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

using mpi_test::transport;

static_assert(std::is_constructible_v<transport, int&, char**&>, "main's (argc, argv)");
static_assert(std::is_constructible_v<transport, int, char**>, "a copy of argc and argv");
static_assert(std::is_constructible_v<transport, int&, const char**&>, "read-only argv");
static_assert(std::is_constructible_v<transport, int, const char* const*>, "read-only argv by value");
static_assert(std::is_constructible_v<transport, int, std::nullptr_t>, "argc 0, no argv");
static_assert(std::is_default_constructible_v<transport>, "no arguments at all");
static_assert(std::is_constructible_v<transport, std::chrono::seconds>, "no arguments, a wait limit");
static_assert(std::is_constructible_v<transport, int&, char**&, std::chrono::seconds>);
static_assert(std::is_constructible_v<transport, int, const char**, std::chrono::seconds>);
// Not argument forms: argv without argc, or two numbers.
static_assert(!std::is_constructible_v<transport, char**>);
static_assert(!std::is_constructible_v<transport, int, int>);
// No implicit conversion from a wait limit (a function taking a transport
// by reference must not build one from a duration by accident).
static_assert(!std::is_convertible_v<std::chrono::seconds, transport>);

namespace {

int check(const transport& c, const char* form) {
  if (c.rank() >= c.size()) {
    std::fprintf(stderr, "argv form %s: rank %zu outside a group of %zu\n", form, c.rank(), c.size());
    return 1;
  }
  std::printf("argv form %s: rank %zu of %zu\n", form, c.rank(), c.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string form = argc > 1 ? argv[1] : "";
  try {
    if (form == "ref") {
      transport c(argc, argv);  // binds to (int&, char**&)
      return check(c, "ref");
    }
    if (form == "const") {
      std::vector<const char*> args(argv, argv + argc);
      args.push_back(nullptr);
      const char** read_only = args.data();
      transport c(argc, read_only);
      // The caller's arguments are untouched.
      if (std::strcmp(read_only[1], "const") != 0) return 1;
      return check(c, "const");
    }
    if (form == "value") {
      // Impossible arguments are refused before MPI starts.
      for (auto [count, args] : {std::pair<int, char**>{-1, argv}, std::pair<int, char**>{2, nullptr}}) {
        try {
          transport bad(count, static_cast<const char* const*>(args));
          std::fprintf(stderr, "argv form value: argc %d accepted\n", count);
          return 1;
        } catch (const dml::config_error& e) {
          std::printf("argv form value: refused: %s\n", e.what());
        }
      }
      transport c(argc + 0, static_cast<char**>(argv));  // prvalues: the by-value form
      return check(c, "value");
    }
    if (form == "none") {
      transport c;
      return check(c, "none");
    }
    std::fprintf(stderr, "usage: %s ref|const|value|none\n", argv[0]);
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "argv form %s: %s\n", form.c_str(), e.what());
    return 1;
  }
}

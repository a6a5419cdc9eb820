// SPDX-License-Identifier: BSL-1.0
// Header-only mode across translation units: this file and
// header_only_b.cpp both include <dml/dml.hpp> and make the same vectors, so
// both define dml's inline functions (impl/*.ipp under DML_DECL) and the
// same template instantiations; linked into one program they must neither
// collide nor differ. Built without DML_SEPARATE_COMPILATION whatever the
// test options say (test/vector/CMakeLists.txt).
#include <dml/dml.hpp>

#include <cmath>
#include <cstdio>

#if defined(DML_SEPARATE_COMPILATION)
#error "test/vector/header_only_a.cpp checks header-only mode"
#endif

double average_in_b(std::size_t members);  // header_only_b.cpp

namespace {
double average_here(std::size_t members) {
  double result = 0;
  dml::comm::inproc::run(members, [&](dml::comm::inproc::context& comm) {
    auto v = dml::make_vector<float>(comm, 64, dml::topology::halton{}, dml::consistency::notify_ack{});
    for (auto& x : v.span()) x = static_cast<float>(comm.rank());
    for (int r = 0; r < 40; ++r) {
      v.scatter();
      v.gather();
    }
    if (comm.rank() == 0) result = v.span()[0];
  });
  return result;
}
}  // namespace

int main() {
  const double a = average_here(6);
  const double b = average_in_b(6);
  if (std::abs(a - 2.5) > 1e-5 || std::abs(b - 2.5) > 1e-9) {
    std::fprintf(stderr, "header-only units: got %.9f and %.9f, want 2.5\n", a, b);
    return 1;
  }
  std::printf("header-only units: both translation units average to 2.5\n");
  return 0;
}

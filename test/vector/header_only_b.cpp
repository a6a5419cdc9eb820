// SPDX-License-Identifier: BSL-1.0
// The second translation unit of test_header_only_units (see header_only_a.cpp).
#include <dml/dml.hpp>

#include <cstddef>

double average_in_b(std::size_t members) {
  double result = 0;
  dml::comm::inproc::run(members, [&](dml::comm::inproc::context& comm) {
    dml::comm::any any(comm);
    auto f = dml::make_vector<float>(comm, 64, dml::topology::halton{}, dml::consistency::notify_ack{});
    auto v = dml::make_vector<double>(any, 64, dml::topology::all{}, dml::consistency::bsp{});
    for (auto& x : v.span()) x = static_cast<double>(comm.rank());
    for (int r = 0; r < 60; ++r) {
      f.scatter();
      f.gather();
      v.scatter();
      v.gather();
    }
    if (comm.rank() == 0) result = v.span()[0];
  });
  return result;
}

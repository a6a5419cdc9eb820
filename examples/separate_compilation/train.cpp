// SPDX-License-Identifier: BSL-1.0
// A translation unit that uses dml: in separate compilation mode it compiles
// the front end of its vectors only; their core comes from dml_src.cpp.
#include "train.hpp"

#include <dml/dml.hpp>

#include <mutex>

std::vector<double> average_ranks(std::size_t members, int rounds) {
  std::vector<double> result(members);
  dml::comm::inproc::run(members, [&](dml::comm::inproc::context& comm) {
    auto v = dml::make_vector<double>(comm, 1000, dml::topology::halton{}, dml::consistency::notify_ack{});
    for (auto& x : v.span()) x = static_cast<double>(comm.rank());
    for (int r = 0; r < rounds; ++r) {
      v.scatter();
      v.gather();
    }
    result[comm.rank()] = v.span()[0];
  });
  return result;
}

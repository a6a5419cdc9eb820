// SPDX-License-Identifier: BSL-1.0
// In-memory snapshots over in-process members: a restore brings back every
// bit of every member's vectors (dist_vectors and std::vectors, NaN payloads
// and -0 included), members that disagree on the clock all get the same
// error, and a vector of another shape is refused before anything is
// written. Also the agreed mean: the same bits on every member.
#include <dml/dml.hpp>
#include <dml/fault/snapshot.hpp>
#include <dml/tune/agree.hpp>
#include <dml/tune/branches.hpp>

#include "support/catch.hpp"

#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace {
namespace inproc = dml::comm::inproc;
constexpr std::size_t members = 3;

template <class T>
std::vector<unsigned char> bytes_of(std::span<const T> s) {
  std::vector<unsigned char> b(s.size_bytes());
  if (!b.empty()) std::memcpy(b.data(), s.data(), b.size());
  return b;
}
}  // namespace

TEST_CASE("snapshot restore is exact on every member, and agreement is checked") {
  std::array<std::vector<unsigned char>, members> before_f, after_f, before_d, after_d;
  std::array<std::uint64_t, members> clocks{};
  std::array<std::string, members> clock_errors, shape_errors;
  std::array<bool, members> untouched{};
  inproc::run(members, [&](inproc::context& c) {
    const std::size_t r = c.rank();
    auto f = dml::make_vector<float>(c, 9, dml::topology::ring{});
    std::vector<double> d(5 + r);  // lengths may differ between members
    for (std::size_t k = 0; k < f.size(); ++k) f.span()[k] = std::sin(float(k + 7 * r)) * 1e3f;
    f.span()[0] = -0.0f;
    f.span()[1] = std::bit_cast<float>(std::uint32_t{0x7fc01234u});  // a NaN with a payload
    for (std::size_t k = 0; k < d.size(); ++k) d[k] = 1.0 / double(k + 1 + r);
    d[0] = std::numeric_limits<double>::denorm_min();
    f.scatter();
    f.gather();
    before_f[r] = bytes_of<float>(f.span());
    before_d[r] = bytes_of<double>(d);

    dml::fault::snapshot s;
    s.take(c, 17, f, d);
    for (auto& x : f.span()) x = 42.0f;  // training goes on
    f.scatter();
    f.gather();
    for (auto& x : d) x += 1.0;
    clocks[r] = s.restore(c, f, d);
    after_f[r] = bytes_of<float>(f.span());
    after_d[r] = bytes_of<double>(d);

    // Members at different clocks: every member throws.
    dml::fault::snapshot t;
    try {
      t.take(c, r == 1 ? 5 : 4, f);
    } catch (const dml::config_error& e) {
      clock_errors[r] = e.what();
    }
    // Wrong length: refused before the exchange, nothing written.
    std::vector<double> shorter(2, 7.0);
    try {
      (void)s.restore(c, f, shorter);
    } catch (const dml::config_error& e) {
      shape_errors[r] = e.what();
    }
    untouched[r] = shorter[0] == 7.0 && shorter[1] == 7.0;
  });
  for (std::size_t r = 0; r < members; ++r) {
    INFO("member " << r);
    CHECK(after_f[r] == before_f[r]);
    CHECK(after_d[r] == before_d[r]);
    CHECK(clocks[r] == 17);
    CHECK(clock_errors[r].find("disagree on the clock (4 and 5 at member 1)") != std::string::npos);
    CHECK(shape_errors[r].find("vector 1 has 2 elements, the snapshot " + std::to_string(5 + r)) !=
          std::string::npos);
    CHECK(untouched[r]);
  }
}

TEST_CASE("branches keep several snapshots apart, and agree_mean gives the same bits everywhere") {
  std::array<std::vector<double>, members> restored1, restored2, means;
  std::array<bool, members> missing_refused{};
  inproc::run(members, [&](inproc::context& c) {
    const std::size_t r = c.rank();
    std::vector<double> w(4, double(r));
    dml::tune::branches br(c, w);
    br.save(1, 10);
    for (auto& x : w) x = 0.1 * double(r) + 3;
    br.save(2, 20);
    w.assign(4, -1.0);
    (void)br.restore(1);
    restored1[r] = w;
    (void)br.restore(2);
    restored2[r] = w;
    br.drop(1);
    try {
      (void)br.restore(1);
    } catch (const dml::config_error&) {
      missing_refused[r] = true;
    }
    std::vector<double> v{0.1 * double(r + 1), 1.0 / 3.0 * double(r), 1e-17 * double(r)};
    dml::tune::agree_mean(c, v);
    means[r] = v;
  });
  for (std::size_t r = 0; r < members; ++r) {
    INFO("member " << r);
    CHECK(restored1[r] == std::vector<double>(4, double(r)));
    CHECK(restored2[r] == std::vector<double>(4, 0.1 * double(r) + 3));
    CHECK(missing_refused[r]);
    CHECK(bytes_of<double>(means[r]) == bytes_of<double>(means[0]));
  }
  CHECK(means[0][0] == Approx(0.2));
  CHECK(means[0][1] == Approx(1.0 / 3.0));
}

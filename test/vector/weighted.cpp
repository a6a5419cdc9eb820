// SPDX-License-Identifier: BSL-1.0
// gather::weighted_average: the weights members set travel with their
// updates and the gather computes Σ w_i x_i / Σ w_i over what it combines.
#include <dml/dml.hpp>

#include "support/catch.hpp"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

namespace inproc = dml::comm::inproc;
using namespace std::chrono_literals;

namespace {

double weight_of(dml::member_id m) { return m == 2 ? 0.0 : 1.0 + double(m * m); }  // uneven, one zero
double value_of(dml::member_id m, int round, std::size_t i) {
  return 1.0 + double(m) + 0.5 * double(i) + 16.0 * round;
}

bool close(double got, double want) { return std::abs(got - want) <= 1e-12 * std::max(1.0, std::abs(want)); }

}  // namespace

TEST_CASE("weighted_average is the weighted mean over own and the inputs", "[vector][weighted]") {
  constexpr std::size_t length = 11;
  constexpr int rounds = 3;
  for (const dml::topology::any& topo :
       {dml::topology::any(dml::topology::all{}), dml::topology::any(dml::topology::ring{}),
        dml::topology::any(dml::topology::halton{})}) {
    for (std::size_t n : {2u, 5u, 8u}) {
      std::vector<std::string> errors(n);
      inproc::options o;
      o.max_random_delay = 50us;
      inproc::run(
          n,
          [&](inproc::context& c) {
            const auto me = c.rank();
            std::string& err = errors[me];
            try {
              auto v = dml::make_vector<double>(c, length, topo, dml::gather::weighted_average{});
              const auto in = v.in_neighbours();
              for (int r = 1; r <= rounds; ++r) {
                for (std::size_t i = 0; i < length; ++i) v.span()[i] = value_of(me, r, i);
                v.set_weight(weight_of(me) * r);  // weights change between rounds
                v.scatter();
                v.gather();
                for (std::size_t i = 0; i < length && err.empty(); ++i) {
                  double num = weight_of(me) * r * value_of(me, r, i), den = weight_of(me) * r;
                  for (auto j : in) {
                    num += weight_of(j) * r * value_of(j, r, i);
                    den += weight_of(j) * r;
                  }
                  if (!close(v.span()[i], num / den))
                    err = "member " + std::to_string(me) + " round " + std::to_string(r) + ": got " +
                          std::to_string(v.span()[i]) + ", want " + std::to_string(num / den);
                }
              }
              // one word more per slot: the weight
              const std::uint64_t per_update = 8 * (5 + length + 1);
              if (v.stats().bytes_sent != rounds * v.out_neighbours().size() * per_update && err.empty())
                err = "bytes_sent " + std::to_string(v.stats().bytes_sent);
            } catch (const std::exception& e) {
              err = e.what();
            }
          },
          o);
      for (const auto& e : errors) {
        INFO(topo.name() << " n=" << n << ": " << e);
        CHECK(e.empty());
      }
    }
  }
}

TEST_CASE("weighted_average: 3x the data, 3x the weight, the serial mean", "[vector][weighted]") {
  // 4 members; member 0 holds 3 of every 6 samples, the others one each.
  std::vector<double> data(600);
  for (std::size_t k = 0; k < data.size(); ++k) data[k] = std::sin(double(k)) * 10 + double(k % 7);
  const double serial = std::accumulate(data.begin(), data.end(), 0.0) / double(data.size());
  auto owner = [](std::size_t k) -> dml::member_id { return k % 6 < 3 ? 0 : k % 6 - 2; };
  std::vector<double> result(4), plain(4);
  inproc::run(4, [&](inproc::context& c) {
    double sum = 0, count = 0;
    for (std::size_t k = 0; k < data.size(); ++k)
      if (owner(k) == c.rank()) {
        sum += data[k];
        count += 1;
      }
    auto v = dml::make_vector<double>(c, 1, dml::gather::weighted_average{});  // all, bsp
    v.span()[0] = sum / count;                                                 // the local mean
    v.set_weight(count);  // 300 on member 0, 100 on the others
    v.scatter();
    v.gather();
    result[c.rank()] = v.span()[0];
    auto u = dml::make_vector<double>(c, 1);  // the unweighted average, for contrast
    u.span()[0] = sum / count;
    u.scatter();
    u.gather();
    plain[c.rank()] = u.span()[0];
  });
  for (std::size_t m = 0; m < 4; ++m) {
    CHECK(close(result[m], serial));
    CHECK_FALSE(close(plain[m], serial));  // uneven shards bias the plain average
  }
}

TEST_CASE("weighted_average: a zero total weight and bad weights are errors", "[vector][weighted]") {
  std::vector<std::string> zero(3), negative(3), nan(3);
  std::vector<double> untouched(3);
  inproc::run(3, [&](inproc::context& c) {
    auto v = dml::make_vector<float>(c, 4, dml::gather::weighted_average{});
    try {
      v.set_weight(-1);
    } catch (const dml::config_error& e) {
      negative[c.rank()] = e.what();
    }
    try {
      v.set_weight(std::nan(""));
    } catch (const dml::config_error& e) {
      nan[c.rank()] = e.what();
    }
    v.set_weight(0);
    v.scatter();
    try {
      v.gather();
    } catch (const dml::config_error& e) {
      zero[c.rank()] = e.what();
    }
    // Own kept when nothing is combined, whatever the weight (asp, nothing sent).
    auto a = dml::make_vector<double>(c, 2, dml::consistency::asp{}, dml::gather::weighted_average{});
    a.set_weight(0);
    a.span()[0] = 5;
    a.gather();
    untouched[c.rank()] = a.span()[0];
  });
  for (std::size_t m = 0; m < 3; ++m) {
    CHECK(zero[m].find("weighted_average: the weights of the 3 updates combined sum to 0") !=
          std::string::npos);
    CHECK(negative[m].find("set_weight: the weight must be finite and >= 0") != std::string::npos);
    CHECK(nan[m].find("set_weight") != std::string::npos);
    CHECK(untouched[m] == 5);
  }
}

TEST_CASE("weighted_average with to{...}: the mean over what was sent", "[vector][weighted][to]") {
  // bsp over all, 4 members: member m sends to the out-neighbours above it
  // only, so member r averages members 0..r with their weights.
  std::vector<double> got(4);
  inproc::run(4, [&](inproc::context& c) {
    auto v = dml::make_vector<double>(c, 1, dml::gather::weighted_average{});
    v.span()[0] = double(c.rank()) * 10;
    v.set_weight(double(c.rank()) + 1);
    std::vector<dml::member_id> up;
    for (auto m : v.out_neighbours())
      if (m > c.rank()) up.push_back(m);
    v.scatter(dml::to{up});
    v.gather();
    got[c.rank()] = v.span()[0];
  });
  for (dml::member_id r = 0; r < 4; ++r) {
    double num = 0, den = 0;
    for (dml::member_id m = 0; m <= r; ++m) {
      num += (double(m) + 1) * double(m) * 10;
      den += double(m) + 1;
    }
    CHECK(close(got[r], num / den));
  }
}

namespace {
// A user's gather named like the built-in average but using weights: its
// slots have one word more, which the description members compare says.
struct my_average {
  using policy_slot = dml::slot::gather;
  static constexpr bool carries_weights = true;
  [[nodiscard]] static constexpr std::string_view name() noexcept { return "average"; }
  template <class T>
  void operator()(std::span<T> own, std::span<const dml::gather::input<T>> inputs,
                  const dml::gather::mixing& m) const {
    dml::gather::weighted_average{}(own, inputs, m);
  }
  template <class T>
  void operator()(std::span<T> own, std::span<const dml::gather::input<T>> inputs) const {
    dml::gather::weighted_average{}(own, inputs);
  }
};
}  // namespace

TEST_CASE("weighted_average: members disagreeing on the weight word get config_error", "[vector][weighted]") {
  std::vector<std::string> errors(2);
  inproc::run(2, [&](inproc::context& c) {
    try {
      if (c.rank() == 0) {
        auto v = dml::make_vector<double>(c, 4, my_average{});
        v.set_weight(2);
      } else {
        auto v = dml::make_vector<double>(c, 4, dml::gather::average{});
      }
    } catch (const dml::config_error& e) {
      errors[c.rank()] = e.what();
    }
  });
  for (const auto& e : errors) {
    INFO(e);
    CHECK(e.find("disagree on the vector's configuration") != std::string::npos);
    CHECK(e.find("(slots carry weights)") != std::string::npos);
  }
}

TEST_CASE("weighted_average over sparse slots under notify_ack", "[vector][weighted]") {
  // The weight word follows the sparse payload (index and value areas);
  // elements an input does not carry count as zero, with its full weight.
  constexpr std::size_t n = 5, length = 10;
  std::vector<std::string> errors(n);
  inproc::run(n, [&](inproc::context& c) {
    const auto me = c.rank();
    try {
      auto v = dml::make_vector<double>(c, length, dml::sparse{3}, dml::consistency::notify_ack{},
                                        dml::topology::ring{}, dml::gather::weighted_average{});
      const auto in = v.in_neighbours();
      auto value = [](dml::member_id m, std::size_t i) { return i % n == m ? 2.0 + double(m) : 0.0; };
      for (int r = 0; r < 3; ++r) {
        for (std::size_t i = 0; i < length; ++i) v.span()[i] = value(me, i);
        v.set_weight(weight_of(me) + 1);
        v.scatter();
        v.gather();
        for (std::size_t i = 0; i < length && errors[me].empty(); ++i) {
          double num = (weight_of(me) + 1) * value(me, i), den = weight_of(me) + 1;
          for (auto j : in) {
            num += (weight_of(j) + 1) * value(j, i);
            den += weight_of(j) + 1;
          }
          if (!close(v.span()[i], num / den))
            errors[me] = "member " + std::to_string(me) + " element " + std::to_string(i) + ": got " +
                         std::to_string(v.span()[i]) + ", want " + std::to_string(num / den);
        }
      }
    } catch (const std::exception& e) {
      errors[me] = e.what();
    }
  });
  for (const auto& e : errors) {
    INFO(e);
    CHECK(e.empty());
  }
}

// SPDX-License-Identifier: BSL-1.0
// gather::average, gather::sum and gather::scaled_sum combine dense inputs
// in fixed-length blocks (so that the loops vectorize at -O2) with a
// remainder handled apart: at every length around the block boundaries,
// and with 1 to 3 inputs, the result must be the input-by-input sum in the
// same order, to the bit, and the buffers of the inputs must be left as
// they were.
#include <dml/vector/gather.hpp>

#include "support/catch.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <span>
#include <type_traits>
#include <vector>

namespace {

template <class T>
std::vector<T> random_values(std::size_t n, std::mt19937_64& rng) {
  std::vector<T> v(n);
  if constexpr (std::is_floating_point_v<T>) {
    std::uniform_real_distribution<double> d(-1e3, 1e3);
    for (auto& x : v) x = static_cast<T>(d(rng));
  } else {
    std::uniform_int_distribution<std::int64_t> d(-1000, 1000);
    for (auto& x : v) x = static_cast<T>(d(rng));
  }
  return v;
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

template <class T>
void check_lengths() {
  std::mt19937_64 rng(7);
  for (const std::size_t n : {std::size_t{1}, std::size_t{63}, std::size_t{64}, std::size_t{65},
                              std::size_t{2047}, std::size_t{2048}, std::size_t{2049},
                              std::size_t{2048 + 64 + 5}, std::size_t{3 * 2048 + 2 * 64 + 63}}) {
    for (std::size_t k = 1; k <= 3; ++k) {
      INFO("length " << n << ", " << k << " input(s)");
      const auto own0 = random_values<T>(n, rng);
      std::vector<std::vector<T>> in_values;
      std::vector<dml::gather::input<T>> inputs;
      for (std::size_t q = 0; q < k; ++q) in_values.push_back(random_values<T>(n, rng));
      for (std::size_t q = 0; q < k; ++q) {
        dml::gather::input<T> in;
        in.sender = q + 1;
        in.values = in_values[q];
        inputs.push_back(in);
      }
      const auto in_before = in_values;

      std::vector<T> sum_ref = own0;  // input by input, in order
      for (const auto& v : in_values)
        for (std::size_t i = 0; i < n; ++i) sum_ref[i] += v[i];
      std::vector<T> avg_ref = sum_ref;
      for (auto& x : avg_ref) x /= static_cast<T>(k + 1);

      std::vector<T> own = own0;
      dml::gather::sum{}(std::span<T>(own), std::span<const dml::gather::input<T>>(inputs));
      CHECK(same_bits(own, sum_ref));
      own = own0;
      dml::gather::average{}(std::span<T>(own), std::span<const dml::gather::input<T>>(inputs));
      CHECK(same_bits(own, avg_ref));
      if constexpr (std::is_floating_point_v<T>) {
        const T g = static_cast<T>(0.3);
        std::vector<T> scaled_ref = own0;
        for (const auto& v : in_values)
          for (std::size_t i = 0; i < n; ++i) scaled_ref[i] += g * v[i];
        own = own0;
        dml::gather::scaled_sum{0.3}(std::span<T>(own), std::span<const dml::gather::input<T>>(inputs));
        CHECK(same_bits(own, scaled_ref));
      }
      CHECK(in_values == in_before);
    }
  }
}

}  // namespace

TEST_CASE(
    "gather: average, sum and scaled_sum of dense inputs equal the input-by-input sum at every block "
    "boundary") {
  check_lengths<float>();
  check_lengths<double>();
  check_lengths<std::int32_t>();
}

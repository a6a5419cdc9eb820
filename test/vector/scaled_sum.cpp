// SPDX-License-Identifier: BSL-1.0
// The laws of gather::scaled_sum{gamma}: gamma = 1 is sum, gamma = 1/(k+1)
// applied to changes averages the models they came from, sparse and dense
// inputs agree, bad factors are refused at construction, and through a
// vector every member gets own + gamma * (sum of its in-neighbours' updates)
// with members agreeing on gamma.
#include <dml/dml.hpp>

#include "support/catch.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <mutex>
#include <span>
#include <string>
#include <vector>

namespace {

namespace inproc = dml::comm::inproc;
using ctx = inproc::context;

static_assert(dml::gather::gather_functor<dml::gather::scaled_sum, float>);
static_assert(dml::gather::gather_functor<dml::gather::scaled_sum, double>);
static_assert(!dml::gather::gather_functor<dml::gather::scaled_sum, int>,
              "scaled_sum scales: integer vectors are not its business");

// Inputs over `values`, dense, or sparse carrying only the nonzero elements.
template <class T>
struct inputs_of {
  std::vector<std::vector<std::uint32_t>> indices;
  std::vector<std::vector<T>> kept;
  std::vector<dml::gather::input<T>> in;

  inputs_of(const std::vector<std::vector<T>>& values, bool sparse) {
    indices.resize(values.size());
    kept.resize(values.size());
    for (std::size_t j = 0; j < values.size(); ++j) {
      for (std::size_t i = 0; i < values[j].size(); ++i)
        if (!sparse || values[j][i] != 0) {
          indices[j].push_back(static_cast<std::uint32_t>(i));
          kept[j].push_back(values[j][i]);
        }
      dml::gather::input<T> x;
      x.sender = j + 1;
      x.clock = 1;
      x.values = kept[j];
      if (sparse) {
        x.indices = indices[j];
        x.sparse_values = true;
      }
      in.push_back(x);
    }
  }
};

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

// Deterministic test values with about a third zeros; `dyadic` keeps them
// multiples of 1/8 below 64, so that sums and quarter scalings are exact.
template <class T>
std::vector<T> values_for(std::size_t member, std::size_t n, bool dyadic) {
  std::vector<T> v(n);
  std::uint64_t s = 0x9e3779b97f4a7c15ULL * (member + 1);
  for (auto& x : v) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    const auto r = static_cast<std::int64_t>(s >> 40) % 1024 - 512;
    if (r % 3 == 0)
      x = 0;
    else
      x = dyadic ? static_cast<T>(r) / 8 : static_cast<T>(r) / 7 + static_cast<T>(member) / 3;
  }
  return v;
}

}  // namespace

TEMPLATE_TEST_CASE("scaled_sum with gamma 1 is sum, bit for bit", "", float, double) {
  for (bool sparse : {false, true}) {
    const std::vector<std::vector<TestType>> xs = {values_for<TestType>(1, 37, false),
                                                   values_for<TestType>(2, 37, false),
                                                   values_for<TestType>(3, 37, false)};
    const inputs_of<TestType> in(xs, sparse);
    auto a = values_for<TestType>(0, 37, false), b = a;
    dml::gather::scaled_sum{1.0}(std::span<TestType>(a),
                                 std::span<const dml::gather::input<TestType>>(in.in));
    dml::gather::sum{}(std::span<TestType>(b), std::span<const dml::gather::input<TestType>>(in.in));
    INFO("sparse inputs: " << sparse);
    REQUIRE(same_bits(a, b));
  }
}

TEMPLATE_TEST_CASE("scaled_sum with gamma 1/(k+1) on changes gives average's result on the models", "", float,
                   double) {
  // k + 1 members share `base`; member m's model is base + delta_m. Member 0
  // scatters delta_0, sets its buffer to base + delta_0 / (k + 1) and
  // gathers the others' deltas: the result is the average of the models.
  for (std::size_t k : {1u, 2u, 3u, 4u, 7u}) {
    for (bool dyadic : {true, false}) {
      const std::size_t n = 41;
      const auto base = values_for<TestType>(100, n, dyadic);
      std::vector<std::vector<TestType>> deltas, models;
      for (std::size_t m = 0; m <= k; ++m) {
        deltas.push_back(values_for<TestType>(m, n, dyadic));
        models.push_back(base);
        for (std::size_t i = 0; i < n; ++i) models[m][i] += deltas[m][i];
      }
      const double gamma = 1.0 / static_cast<double>(k + 1);
      const std::vector<std::vector<TestType>> other_models(models.begin() + 1, models.end()),
          other_deltas(deltas.begin() + 1, deltas.end());
      auto averaged = models[0];
      const inputs_of<TestType> model_inputs(other_models, false);
      dml::gather::average{}(std::span<TestType>(averaged),
                             std::span<const dml::gather::input<TestType>>(model_inputs.in));
      for (bool sparse : {false, true}) {
        auto own = base;
        for (std::size_t i = 0; i < n; ++i) own[i] += static_cast<TestType>(gamma) * deltas[0][i];
        const inputs_of<TestType> delta_inputs(other_deltas, sparse);
        dml::gather::scaled_sum{gamma}(std::span<TestType>(own),
                                       std::span<const dml::gather::input<TestType>>(delta_inputs.in));
        INFO("k = " << k << ", dyadic " << dyadic << ", sparse " << sparse);
        // k + 1 a power of two with dyadic values: every operation is exact.
        if (dyadic && ((k + 1) & k) == 0) {
          REQUIRE(same_bits(own, averaged));
        } else {
          // Both round a few times at the magnitude of the models.
          double magnitude = 1;
          for (const auto& model : models)
            for (TestType x : model) magnitude = std::max(magnitude, std::abs(double(x)));
          const double tolerance =
              16.0 * double(k + 2) * std::numeric_limits<TestType>::epsilon() * magnitude;
          for (std::size_t i = 0; i < n; ++i)
            REQUIRE(std::abs(double(own[i]) - double(averaged[i])) <= tolerance);
        }
      }
    }
  }
}

TEMPLATE_TEST_CASE("scaled_sum: sparse and dense inputs of the same values give the same result", "", float,
                   double) {
  for (double gamma : {1.0, 0.5, 1.0 / 3, 2.5}) {
    const std::vector<std::vector<TestType>> xs = {values_for<TestType>(4, 53, false),
                                                   values_for<TestType>(5, 53, false)};
    const inputs_of<TestType> dense(xs, false), sparse(xs, true);
    REQUIRE(sparse.kept[0].size() < xs[0].size());  // the sparse inputs really leave elements out
    auto a = values_for<TestType>(6, 53, false), b = a;
    dml::gather::scaled_sum{gamma}(std::span<TestType>(a),
                                   std::span<const dml::gather::input<TestType>>(dense.in));
    dml::gather::scaled_sum{gamma}(std::span<TestType>(b),
                                   std::span<const dml::gather::input<TestType>>(sparse.in));
    INFO("gamma " << gamma);
    REQUIRE(a == b);
  }
}

TEST_CASE("scaled_sum: equal inputs add k * gamma of them; no input leaves own alone") {
  const std::vector<std::vector<double>> xs(3, std::vector<double>(5, 2.0));
  const inputs_of<double> in(xs, false);
  std::vector<double> own(5, 1.0);
  dml::gather::scaled_sum{0.25}(std::span<double>(own), std::span<const dml::gather::input<double>>(in.in));
  REQUIRE(own == std::vector<double>(5, 1.0 + 3 * 0.25 * 2.0));
  dml::gather::scaled_sum{0.25}(std::span<double>(own), std::span<const dml::gather::input<double>>());
  REQUIRE(own == std::vector<double>(5, 2.5));
}

TEST_CASE("scaled_sum refuses a factor that is not finite and positive") {
  for (double bad : {0.0, -0.0, -1.0, std::numeric_limits<double>::infinity(),
                     -std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()}) {
    INFO("gamma " << bad);
    REQUIRE_THROWS_AS(dml::gather::scaled_sum{bad}, dml::config_error);
    REQUIRE_THROWS_WITH(dml::gather::scaled_sum{bad}, dml_test::contains("gamma must be finite and > 0"));
  }
  REQUIRE_THROWS_WITH(dml::gather::scaled_sum{-2}, dml_test::contains("got -2"));
  REQUIRE(dml::gather::scaled_sum{0.125}.describe() == "scaled_sum(gamma=0.125)");
  REQUIRE(dml::gather::scaled_sum{1e-300}.gamma == 1e-300);
}

namespace {

// Member m's update in a round: exactly representable, distinct per member.
double update(dml::member_id m, std::size_t i) {
  return (i % 3 == 0) ? 0.0 : 1.0 + double(m) + 0.5 * double(i % 5);
}

template <class Topology, class Consistency, class Repr>
void check_through_vector(std::size_t n, Repr repr) {
  constexpr std::size_t length = 29;
  const double gamma = 1.0 / static_cast<double>(n);
  std::vector<std::string> errors(n);
  inproc::run(n, [&](ctx& c) {
    auto v =
        dml::make_vector<double>(c, length, Topology{}, Consistency{}, repr, dml::gather::scaled_sum{gamma});
    for (int round = 1; round <= 2; ++round) {
      for (std::size_t i = 0; i < length; ++i) v.span()[i] = update(c.rank(), i);
      v.scatter();
      v.gather();
      for (std::size_t i = 0; i < length; ++i) {
        double want = update(c.rank(), i);
        for (auto j : v.in_neighbours()) want += gamma * update(j, i);
        if (std::abs(v.span()[i] - want) > 1e-12 * std::abs(want) && errors[c.rank()].empty())
          errors[c.rank()] = "member " + std::to_string(c.rank()) + " element " + std::to_string(i) +
                             ": got " + std::to_string(v.span()[i]) + ", want " + std::to_string(want);
      }
    }
  });
  for (const auto& e : errors) {
    INFO(e);
    REQUIRE(e.empty());
  }
}

}  // namespace

TEST_CASE("scaled_sum through a vector: own + gamma * the in-neighbours' updates") {
  for (std::size_t n : {1u, 2u, 3u, 5u}) {
    INFO("n = " << n);
    check_through_vector<dml::topology::all, dml::consistency::bsp>(n, dml::dense{});
    check_through_vector<dml::topology::all, dml::consistency::bsp>(n, dml::sparse{29});
    check_through_vector<dml::topology::halton, dml::consistency::notify_ack>(n, dml::dense{});
    check_through_vector<dml::topology::ring, dml::consistency::notify_ack>(n, dml::sparse{29});
  }
}

TEST_CASE("members that disagree on gamma all get config_error") {
  std::atomic<int> rejected{0};
  std::string message;
  std::mutex m;
  inproc::run(3, [&](ctx& c) {
    try {
      auto v = dml::make_vector<float>(c, 8, dml::gather::scaled_sum{c.rank() == 1 ? 0.5 : 0.25});
    } catch (const dml::config_error& e) {
      ++rejected;
      std::lock_guard lock(m);
      message = e.what();
    }
  });
  REQUIRE(rejected == 3);
  REQUIRE(message.find("scaled_sum(gamma=0.5)") != std::string::npos);
}

// SPDX-License-Identifier: BSL-1.0
// Fusion and overlap. A vector group exchanges its parts as one vector and
// combines each part on its own slice; a non-blocking scatter sends a copy
// of the buffer in the background, finishes before any other operation on
// the context, and reaches the same results as a blocking one.
#include <dml/dml.hpp>
#include <dml/vector/group.hpp>

#include "support/catch.hpp"

#include <atomic>
#include <cmath>
#include <string>
#include <vector>

namespace inproc = dml::comm::inproc;

namespace {

// A functor that looks at a whole vector: average, then scale to unit norm.
// Applied per part, every part ends with norm 1.
struct average_then_normalize {
  using policy_slot = dml::slot::gather;
  [[nodiscard]] static constexpr std::string_view name() noexcept { return "average_then_normalize"; }
  void operator()(std::span<double> own, std::span<const dml::gather::input<double>> inputs) const {
    dml::gather::average{}(own, inputs);
    double n2 = 0;
    for (double x : own) n2 += x * x;
    for (double& x : own) x /= std::sqrt(n2);
  }
};

}  // namespace

TEST_CASE("vector_group: parts are combined as separate vectors would be, in one exchange per round") {
  for (const bool sparse : {false, true}) {
    std::atomic<int> same{0};
    inproc::run(5, [&](inproc::context& c) {
      const std::vector<std::size_t> lengths{3, 1, 7};
      auto run_group = [&](auto repr) {
        auto g =
            dml::make_vector_group<double>(c, std::span<const std::size_t>(lengths), dml::topology::halton{},
                                           dml::consistency::notify_ack{}, repr);
        std::vector<std::vector<double>> out(3);
        for (int r = 1; r <= 4; ++r) {
          for (std::size_t p = 0; p < 3; ++p)
            for (std::size_t i = 0; i < lengths[p]; ++i)
              g.part(p)[i] = (i % 2 == 0) ? static_cast<double>(c.rank() * 10 + p + r) : 0.0;
          g.scatter();
          g.gather();
        }
        for (std::size_t p = 0; p < 3; ++p) out[p].assign(g.part(p).begin(), g.part(p).end());
        return std::pair{out, g.stats()};
      };
      auto run_separate = [&] {
        std::vector<std::vector<double>> out(3);
        for (std::size_t p = 0; p < 3; ++p) {
          auto v = dml::make_vector<double>(c, lengths[p], dml::topology::halton{},
                                            dml::consistency::notify_ack{});
          for (int r = 1; r <= 4; ++r) {
            for (std::size_t i = 0; i < lengths[p]; ++i)
              v.span()[i] = (i % 2 == 0) ? static_cast<double>(c.rank() * 10 + p + r) : 0.0;
            v.scatter();
            v.gather();
          }
          out[p].assign(v.span().begin(), v.span().end());
        }
        return out;
      };
      const auto [fused, stats] = sparse ? run_group(dml::sparse{11}) : run_group(dml::dense{});
      const auto separate = run_separate();
      // One header per round per out-neighbour, not one per part.
      const std::size_t out_degree = dml::topology::build(dml::topology::halton{}, 5).out(c.rank()).size();
      const bool one_exchange = stats.scatters == 4 && stats.bytes_sent % (4 * out_degree) == 0 &&
                                stats.bytes_sent / (4 * out_degree) < 3 * 40 + 11 * 12;
      if (fused == separate && one_exchange) ++same;
    });
    INFO((sparse ? "sparse" : "dense"));
    REQUIRE(same.load() == 5);
  }
}

TEST_CASE("vector_group: a functor that looks at the whole vector sees exactly its part") {
  std::atomic<int> unit{0};
  inproc::run(3, [&](inproc::context& c) {
    auto g = dml::make_vector_group<double>(c, {4, 9}, average_then_normalize{});
    for (std::size_t p = 0; p < 2; ++p)
      for (auto& x : g.part(p)) x = 1.0 + static_cast<double>(c.rank() + p);
    g.scatter();
    g.gather();
    double n0 = 0, n1 = 0;
    for (double x : g.part(0)) n0 += x * x;
    for (double x : g.part(1)) n1 += x * x;
    if (std::abs(n0 - 1) < 1e-12 && std::abs(n1 - 1) < 1e-12) ++unit;
  });
  REQUIRE(unit.load() == 3);
}

TEST_CASE("vector_group: bad lengths and parts are config_errors") {
  inproc::run(1, [](inproc::context& c) {
    REQUIRE_THROWS_AS(dml::make_vector_group<float>(c, {3, 0, 2}), dml::config_error);
    auto g = dml::make_vector_group<float>(c, {3, 2});
    REQUIRE(g.parts() == 2);
    REQUIRE(g.size() == 5);
    REQUIRE_THROWS_AS(g.part(2), dml::config_error);
  });
}

TEST_CASE("scatter_async: the same results as scatter, and the buffer may change at once") {
  for (int policy = 0; policy < 3; ++policy) {
    std::atomic<int> same{0};
    inproc::options o;
    o.max_random_delay = std::chrono::microseconds(50);
    inproc::run(
        4,
        [&](inproc::context& c) {
          auto run = [&](auto consistency, bool async) {
            auto v = dml::make_vector<double>(c, 257, dml::topology::ring{}, consistency);
            auto other = dml::make_vector<double>(c, 3);  // operations on it wait for v's scatter
            std::vector<double> out;
            for (int r = 1; r <= 30; ++r) {
              for (auto& x : v.span()) x = static_cast<double>(c.rank() + r);
              if (async) {
                v.scatter_async();
                for (auto& x : v.span()) x = -1.0;  // not what was sent
                for (auto& x : v.span()) x = static_cast<double>(c.rank() + r);
                other.scatter();
                other.gather();
              } else {
                v.scatter();
                other.scatter();
                other.gather();
              }
              v.gather();
              out.push_back(v.span()[100]);
            }
            return out;
          };
          auto both = [&](auto consistency) { return run(consistency, true) == run(consistency, false); };
          const bool equal = policy == 0   ? both(dml::consistency::bsp{})
                             : policy == 1 ? both(dml::consistency::notify_ack{})
                                           : both(dml::consistency::any(dml::consistency::bsp{}));
          if (equal) ++same;
        },
        o);
    INFO("policy " << policy);
    REQUIRE(same.load() == 4);
  }
}

TEST_CASE("scatter_async: a member that dies during a background scatter is survived") {
  std::atomic<int> finished{0};
  inproc::options o;
  o.kill_at.emplace_back(2, std::chrono::steady_clock::now() + std::chrono::milliseconds(30));
  o.max_random_delay = std::chrono::microseconds(200);
  inproc::run(
      5,
      [&](inproc::context& c) {
        auto v = dml::make_vector<double>(c, 64, dml::topology::halton{}, dml::consistency::notify_ack{});
        for (int r = 0; r < 200; ++r) {
          v.scatter_async();
          v.wait();
          v.gather();
        }
        if (c.view().live.size() == 4 && v.clock() == 200) ++finished;
      },
      o);
  REQUIRE(finished.load() == 4);
}

TEST_CASE("scatter_async: an error in the background reaches the caller at the next operation") {
  std::atomic<int> caught{0};
  inproc::options o;
  o.wait_limit = std::chrono::milliseconds(300);
  inproc::run(
      2,
      [&](inproc::context& c) {
        auto v = dml::make_vector<double>(c, 8, dml::consistency::bsp{});
        if (c.rank() == 1) {  // member 0 never joins the barrier of its second scatter
          v.scatter_async();
          try {
            v.gather();
          } catch (const dml::timeout&) {
            ++caught;
          }
          return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(600));
      },
      o);
  REQUIRE(caught.load() == 1);
}

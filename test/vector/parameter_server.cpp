// SPDX-License-Identifier: BSL-1.0
// dml::parameter_server: the synchronous one gives the model of all-to-all
// gradient averaging, a step moves 2(n - 1) models' bytes, bad arguments are
// config errors, asp converges without waiting, a killed worker does not
// stop the others. Members record; the checks run on the main thread.
#include <dml/dml.hpp>

#include "support/catch.hpp"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace inproc = dml::comm::inproc;
using namespace std::chrono_literals;

namespace {

constexpr std::size_t dim = 7;
constexpr double lr = 0.3;

// Member m's loss 0.5 |w - c_m|^2 has the gradient w - c_m. Every member's
// target differs, and the mean of the gradients is the gradient of the
// mean loss, w - mean(c).
double target(dml::member_id m, std::size_t i) {
  return std::sin(static_cast<double>(3 * m + i + 1)) * static_cast<double>(m + 1);
}

void gradient(std::span<const double> w, dml::member_id m, std::span<double> g) {
  for (std::size_t i = 0; i < w.size(); ++i) g[i] = w[i] - target(m, i);
}

double start(std::size_t i) { return 0.5 * static_cast<double>(i); }

std::vector<double> starting_model() {
  std::vector<double> w(dim);
  for (std::size_t i = 0; i < dim; ++i) w[i] = start(i);
  return w;
}

struct member_result {
  std::vector<double> model;
  dml::vector_stats up, down;
  bool server = false;
  std::uint64_t steps = 0;
  std::string error;
};

template <class Consistency>
std::vector<member_result> run_ps(std::size_t n, int steps, Consistency cons, dml::member_id server = 0,
                                  inproc::options o = {}, bool shared_target = false) {
  std::vector<member_result> out(n);
  inproc::run(
      n,
      [&](inproc::context& c) {
        auto& r = out[c.rank()];
        try {
          dml::parameter_server<double, inproc::context, Consistency> ps(c, dim, cons, server);
          for (std::size_t i = 0; i < dim; ++i) ps.model()[i] = start(i);
          for (int t = 0; t < steps; ++t) {
            gradient(ps.model(), shared_target ? 0 : c.rank(), ps.update());
            ps.step([](std::span<double> w, std::span<const double> g) {
              for (std::size_t i = 0; i < w.size(); ++i) w[i] -= lr * g[i];
            });
          }
          ps.barrier();
          r.model.assign(ps.model().begin(), ps.model().end());
          r.up = ps.up_stats();
          r.down = ps.down_stats();
          r.server = ps.is_server();
          r.steps = ps.steps();
        } catch (const inproc::stopped&) {
          throw;  // the injected death ends this member
        } catch (const std::exception& e) {
          r.error = e.what();
        }
      },
      o);
  return out;
}

// The same training with the gradients averaged over topology::all.
std::vector<std::vector<double>> run_all(std::size_t n, int steps) {
  std::vector<std::vector<double>> out(n);
  inproc::run(n, [&](inproc::context& c) {
    auto v = dml::make_vector<double>(c, dim, dml::topology::all{}, dml::consistency::bsp{});
    std::vector<double> w(dim);
    for (std::size_t i = 0; i < dim; ++i) w[i] = start(i);
    for (int t = 0; t < steps; ++t) {
      gradient(w, c.rank(), v.span());
      v.scatter();
      v.gather();
      for (std::size_t i = 0; i < dim; ++i) w[i] -= lr * v.span()[i];
    }
    v.barrier();
    out[c.rank()] = w;
  });
  return out;
}

double max_difference(const std::vector<double>& a, const std::vector<double>& b) {
  double d = a.size() == b.size() ? 0.0 : 1e300;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) d = std::max(d, std::abs(a[i] - b[i]));
  return d;
}

double distance_to_optimum(const std::vector<double>& w, std::size_t n) {
  double d = 0;
  for (std::size_t i = 0; i < dim; ++i) {
    double mean = 0;
    for (dml::member_id m = 0; m < n; ++m) mean += target(m, i);
    mean /= static_cast<double>(n);
    d = std::max(d, std::abs(w[i] - mean));
  }
  return d;
}

}  // namespace

TEST_CASE("parameter_server: bsp gives the model of all-to-all gradient averaging", "[vector][ps]") {
  constexpr int steps = 6;  // few: the model is still far from the optimum
  for (const std::size_t n : {2u, 3u, 5u}) {
    for (const dml::member_id server : {dml::member_id{0}, dml::member_id{n - 1}}) {
      const auto ps = run_ps(n, steps, dml::consistency::bsp{}, server);
      const auto all = run_all(n, steps);
      for (dml::member_id m = 0; m < n; ++m) {
        INFO("n = " << n << ", server " << server << ", member " << m << ": " << ps[m].error);
        REQUIRE(ps[m].error.empty());
        CHECK(ps[m].server == (m == server));
        CHECK(ps[m].steps == steps);
        CHECK(max_difference(ps[m].model, all[m]) < 1e-12);
        CHECK(max_difference(ps[m].model, all[0]) < 1e-12);
      }
      // Not trivially equal: six steps leave the model far from the optimum.
      CHECK(distance_to_optimum(all[0], n) > 0.01);
    }
  }
}

TEST_CASE("parameter_server: a step sends 2(n - 1) models' bytes", "[vector][ps]") {
  constexpr std::size_t n = 5;
  constexpr int steps = 4;
  constexpr std::uint64_t model_bytes = dim * sizeof(double);
  for (const dml::member_id server : {dml::member_id{0}, dml::member_id{2}}) {
    const auto r = run_ps(n, steps, dml::consistency::bsp{}, server);
    std::uint64_t payload = 0, sent = 0;
    for (dml::member_id m = 0; m < n; ++m) {
      INFO("server " << server << ", member " << m << ": " << r[m].error);
      REQUIRE(r[m].error.empty());
      const bool is_server = m == server;
      // Updates go up from the workers only, models down from the server only.
      CHECK(r[m].up.payload_bytes_sent == (is_server ? 0 : steps * model_bytes));
      CHECK(r[m].down.payload_bytes_sent == (is_server ? steps * (n - 1) * model_bytes : 0));
      CHECK(r[m].up.scatters == steps);
      CHECK(r[m].down.gathers == steps);
      // Under bsp the ones left out hear of it by a marker (no payload).
      CHECK(r[m].up.markers_sent == (is_server ? steps * (n - 1) : 0));
      CHECK(r[m].down.markers_sent == (is_server ? 0 : steps));
      payload += r[m].up.payload_bytes_sent + r[m].down.payload_bytes_sent;
      sent += r[m].up.bytes_sent + r[m].down.bytes_sent;
    }
    CHECK(payload == steps * 2 * (n - 1) * model_bytes);
    CHECK(sent > payload);  // headers and markers
  }
}

TEST_CASE("parameter_server: bad arguments are config errors", "[vector][ps]") {
  // Fewer than 2 members.
  const auto alone = run_ps(1, 1, dml::consistency::bsp{});
  CHECK_THAT(alone[0].error, dml_test::contains("needs a group of at least 2 members"));
  // A server id out of range, on every member (nobody hangs).
  const auto out = run_ps(3, 1, dml::consistency::bsp{}, 3);
  for (const auto& r : out) CHECK_THAT(r.error, dml_test::contains("server 3 is not a member (ids 0..2)"));
  // The star checks its hub too.
  CHECK_THROWS_AS(dml::topology::build(dml::topology::star{4}, 4), dml::config_error);
}

TEST_CASE("parameter_server: notify_ack is exact as bsp", "[vector][ps]") {
  constexpr std::size_t n = 4;
  inproc::options o;
  o.max_random_delay = 100us;
  const auto ack = run_ps(n, 12, dml::consistency::notify_ack{}, 1, o);
  const auto all = run_all(n, 12);
  for (dml::member_id m = 0; m < n; ++m) {
    INFO("member " << m << ": " << ack[m].error);
    REQUIRE(ack[m].error.empty());
    CHECK(max_difference(ack[m].model, all[m]) < 1e-12);
  }
}

TEST_CASE("parameter_server: under asp the server does not wait for a slow worker", "[vector][ps]") {
  constexpr std::size_t n = 4;
  constexpr int steps = 60;
  inproc::options o;
  o.max_random_delay = 200us;   // the others interleave
  o.slow_members = {{3, 2ms}};  // about 2 ms per transport operation: a few steps in the others' 60
  // One target for all: whatever mix of fresh and stale gradients the
  // server applies, it approaches that target.
  const auto r = run_ps(n, steps, dml::consistency::asp{}, 1, o, true);
  for (dml::member_id m = 0; m < n; ++m) {
    INFO("member " << m << ": " << r[m].error);
    REQUIRE(r[m].error.empty());
    CHECK(r[m].steps == steps);
  }
  const auto& server = r[1];
  INFO("inputs combined " << server.up.inputs_total() << ", full gathers " << server.up.full_gathers);
  CHECK(server.server);
  CHECK(server.up.full_gathers < steps);  // it went on without the slow worker
  // and combined the two others' updates (about 54 of their 120 here; the
  // rest were overwritten by newer ones or came after its last step)
  CHECK(server.up.inputs_total() >= steps / 3);
  CHECK(distance_to_optimum(server.model, 1) < 1e-3 * distance_to_optimum(starting_model(), 1));
}

TEST_CASE("parameter_server: under ssp a slow worker holds the others back by at most the slack",
          "[vector][ps]") {
  constexpr std::size_t n = 3;
  constexpr int steps = 30;
  inproc::options o;
  o.max_random_delay = 100us;
  o.slow_members = {{2, 500us}};
  const auto r = run_ps(n, steps, dml::consistency::ssp<1>{}, 0, o, true);
  for (dml::member_id m = 0; m < n; ++m) {
    INFO("member " << m << ": " << r[m].error);
    REQUIRE(r[m].error.empty());
    CHECK(r[m].steps == steps);
    CHECK(distance_to_optimum(r[m].model, 1) < 1e-3 * distance_to_optimum(starting_model(), 1));
  }
  // Never more than one step behind: every gather of the server combined
  // the slow worker's update of this step or the one before.
  CHECK(r[0].up.inputs_total() >= steps);
}

TEST_CASE("parameter_server: a killed worker does not stop the server", "[vector][ps]") {
  constexpr std::size_t n = 4;
  inproc::options o;
  o.die_inside_barrier = {{2, 9}};  // in the fifth step or so: after construction's collectives
  o.wait_limit = 20s;
  const auto r = run_ps(n, 60, dml::consistency::bsp{}, 0, o);
  for (dml::member_id m = 0; m < n; ++m) {
    if (m == 2) continue;
    INFO("member " << m << ": " << r[m].error);
    REQUIRE(r[m].error.empty());
    CHECK(r[m].steps == 60);
    CHECK(max_difference(r[m].model, r[0].model) == 0);  // bsp: everyone holds the server's model
  }
  CHECK(r[0].server);
  CHECK(r[0].up.rebuilds == 1);
  // The survivors' optimum is not the four members' one, but the model left the start.
  CHECK(distance_to_optimum(r[0].model, n) < distance_to_optimum(starting_model(), n));
}

TEST_CASE("parameter_server: when the server dies the smallest survivor serves", "[vector][ps]") {
  constexpr std::size_t n = 4;
  inproc::options o;
  o.die_inside_barrier = {{0, 9}};
  o.wait_limit = 20s;
  const auto r = run_ps(n, 40, dml::consistency::bsp{}, 0, o);
  for (dml::member_id m = 1; m < n; ++m) {
    INFO("member " << m << ": " << r[m].error);
    REQUIRE(r[m].error.empty());
    CHECK(r[m].steps == 40);
    CHECK(r[m].server == (m == 1));
    CHECK(max_difference(r[m].model, r[1].model) == 0);
  }
  // It went on from the model it held: closer to the optimum than the start.
  CHECK(distance_to_optimum(r[1].model, n) < distance_to_optimum(starting_model(), n));
}

// SPDX-License-Identifier: BSL-1.0
// An MPI transport on its own (collectives, one-sided operations, range
// errors, constructors), the consistency guarantees under random delays,
// configuration mismatches across processes, and a member that dies.
//
// Every rank runs every case. Checks a rank makes alone are CHECKs, not
// REQUIREs: a rank that left a case early would leave the others waiting in
// its next collective. REQUIREs come after the last collective of a case or
// assert a result every rank shares.
#include "comm/laws.hpp"
#include "mpi/support.hpp"
#include "support/catch.hpp"

#include <dml/comm/bootstrap.hpp>
#include <dml/dml.hpp>
#include <dml/io/agree.hpp>
#include <dml/vector/delta_vector.hpp>

#include <mpi.h>
#include <boost/mpi/communicator.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <optional>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using namespace std::chrono_literals;
using mpi_test::transport;
using mpi_test::world;

static_assert(dml::comm::transport<transport>);
static_assert(dml::comm::segment<transport::segment_type>);

namespace {

std::uint64_t sum(const std::vector<std::uint64_t>& xs) {
  std::uint64_t s = 0;
  for (auto x : xs) s += x;
  return s;
}

}  // namespace

TEST_CASE("transport laws (test/comm/laws.hpp)", "[transport]") {
  auto& c = world();
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  CHECK(c.size() == static_cast<std::size_t>(n));
  comm_laws::outcome out;
  comm_laws::all(c, out);
  int total = 0;
  for (int b : mpi_test::all_values(c, out.broken)) total += b;
  INFO(mpi_test::first_message(c, out.first));
  REQUIRE(total == 0);
}

TEST_CASE("segment: every operation on an empty segment is a comm_error naming it", "[transport]") {
  // mpi_rma's load_control dereferenced the null context of an empty handle.
  auto& c = world();
  transport::segment_type moved = c.create_segment(1, 1);
  const transport::segment_type taken(std::move(moved));
  transport::segment_type fresh;
  const std::uint64_t v = 1;
  std::array<std::byte, 8> out{};
  const auto empty = dml_test::contains("use of an empty (moved-from) segment");
  for (auto* e : {&moved, &fresh}) {
    CHECK_THROWS_WITH(e->put(0, 0, std::as_bytes(std::span(&v, 1))), empty);
    CHECK_THROWS_WITH(e->get(0, 0, out), empty);
    CHECK_THROWS_WITH(e->flush(0), empty);
    CHECK_THROWS_WITH(e->fetch_add(0, 0, 1), empty);
    CHECK_THROWS_WITH(e->load(0), empty);
    CHECK_THROWS_WITH(e->load_control(0), empty);
    CHECK_THROWS_WITH(e->read(0, out), empty);
    CHECK_THROWS_WITH(e->view(0, 1), empty);
  }
  CHECK(taken.words(c.rank()) == 1);
}

TEST_CASE("transport: contexts over MPI_Comm, Boost.MPI and split communicators", "[transport]") {
  const auto n = world().size();
  {
    transport a(MPI_COMM_WORLD);
    transport b{boost::mpi::communicator()};
    CHECK(a.size() == n);
    CHECK(b.rank() == world().rank());
    a.barrier();
    // A vector on b: the plain average over topology::all.
    auto v = dml::make_vector<float>(b, 5);
    for (auto& x : v.span()) x = static_cast<float>(b.rank());
    v.scatter();
    v.gather();
    const float want = static_cast<float>(n - 1) / 2.0f;
    for (float x : v.span()) CHECK(x == want);
  }
  int finalized = 1;
  MPI_Finalized(&finalized);
  CHECK(finalized == 0);  // contexts over a given communicator never finalize MPI

  // A context over half of the group: ranks and vectors are the subgroup's.
  // The halves take turns: Open MPI 4.1's osc/sm names a window's backing
  // file after the creating rank within its communicator and the
  // communicator's id, so disjoint groups creating windows at the same time
  // on one node can clash ("open(2) ... No such file or directory"); see
  // docs/running.md.
  MPI_Comm half = MPI_COMM_NULL;
  REQUIRE(MPI_Comm_split(MPI_COMM_WORLD, static_cast<int>(world().rank() % 2), 0, &half) == MPI_SUCCESS);
  for (dml::member_id turn = 0; turn < 2; ++turn) {
    if (world().rank() % 2 == turn) {
      transport h(half, 20s);
      CHECK(h.size() == (n + 1 - world().rank() % 2) / 2);
      CHECK(h.rank() == world().rank() / 2);
      CHECK(h.wait_limit() == std::chrono::steady_clock::duration(20s));
      auto v = dml::make_vector<double>(h, 3, dml::topology::ring{}, dml::consistency::notify_ack{});
      for (int r = 1; r <= 4; ++r) {
        for (auto& x : v.span()) x = static_cast<double>(h.rank() + r);
        v.scatter();
        v.gather();
        const auto in = v.in_neighbours();
        double want = static_cast<double>(h.rank() + r);
        for (auto j : in) want += static_cast<double>(j + r);
        want /= static_cast<double>(in.size() + 1);
        for (double x : v.span()) CHECK(x == want);
      }
    }
    world().barrier();
  }
  MPI_Comm_free(&half);
  CHECK_THROWS_AS(transport(MPI_COMM_NULL), dml::config_error);
}

#if !defined(DML_TEST_VERBS)
TEST_CASE("node_groups: one machine is one node; vectors over hierarchical by node average", "[transport]") {
  auto& c = world();
  const auto nodes = dml::comm::node_groups(c);
  // Every rank reports the same labels, and on one machine they all name
  // the node of rank 0.
  std::string mine;
  for (const auto label : nodes) mine += std::to_string(label) + ",";
  const auto all = mpi_test::all_strings(c, mine);
  CHECK(std::all_of(all.begin(), all.end(), [&](const std::string& s) { return s == mine; }));
  CHECK(nodes == std::vector<std::size_t>(c.size(), 0));
  dml::comm::any a(c);
  CHECK(dml::comm::node_groups(a) == nodes);
  // By node (one group: the complete graph), and as if ranks were on nodes
  // of two (a ring between the pairs' leaders).
  std::vector<std::size_t> pairs(c.size());
  for (std::size_t m = 0; m < pairs.size(); ++m) pairs[m] = m / 2;
  for (const auto& grouping : {nodes, pairs}) {
    const dml::topology::hierarchical gen{grouping, dml::topology::between_groups::leaders,
                                          dml::topology::ring{}};
    auto v = dml::make_vector<double>(c, 3, gen, dml::consistency::notify_ack{});
    if (grouping == nodes) CHECK(v.in_neighbours().size() == c.size() - 1);
    for (int r = 1; r <= 3; ++r) {
      for (auto& x : v.span()) x = static_cast<double>(c.rank() + r);
      v.scatter();
      v.gather();
      const auto in = v.in_neighbours();
      double want = static_cast<double>(c.rank() + r);
      for (auto j : in) want += static_cast<double>(j + r);
      want /= static_cast<double>(in.size() + 1);
      for (double x : v.span()) CHECK(x == Approx(want).margin(1e-12));
    }
  }
}
#endif

TEST_CASE("bootstrap: records of any length, typed records and pairwise records", "[transport]") {
  const boost::mpi::communicator comm;  // MPI_COMM_WORLD
  const auto me = static_cast<std::size_t>(comm.rank());
  const auto n = static_cast<std::size_t>(comm.size());
  const std::vector<std::byte> mine(me, static_cast<std::byte>(me + 1));  // rank 0's is empty
  const auto all = dml::comm::bootstrap::all_gather(comm, mine);
  CHECK(all.size() == n);
  for (std::size_t r = 0; r < all.size(); ++r) {
    CHECK(all[r].size() == r);
    for (auto b : all[r]) CHECK(b == static_cast<std::byte>(r + 1));
  }
  struct queue_pair {  // what an RDMA transport would publish
    std::uint32_t number;
    std::uint16_t lid;
    std::uint16_t port;
  };
  const auto qps = dml::comm::bootstrap::all_gather_value(
      comm, queue_pair{static_cast<std::uint32_t>(100 + me), static_cast<std::uint16_t>(me), 1});
  CHECK(qps.size() == n);
  for (std::size_t r = 0; r < qps.size(); ++r) {
    CHECK(qps[r].number == 100 + r);
    CHECK(qps[r].lid == r);
  }
  std::vector<std::vector<std::byte>> to_each(n);
  for (std::size_t m = 0; m < n; ++m) {
    to_each[m] = {static_cast<std::byte>(me), static_cast<std::byte>(m)};
    if (m % 2 == 1) to_each[m].push_back(std::byte{0x5a});
  }
  const auto got = dml::comm::bootstrap::pairwise(comm, to_each);
  CHECK(got.size() == n);
  for (std::size_t s = 0; s < got.size(); ++s) {
    CHECK(got[s].size() == (me % 2 == 1 ? 3u : 2u));
    CHECK(got[s][0] == static_cast<std::byte>(s));
    CHECK(got[s][1] == static_cast<std::byte>(me));
  }
  CHECK_THROWS_AS(dml::comm::bootstrap::pairwise(comm, {}), dml::config_error);
}

namespace {

/// A copy of MPI_COMM_WORLD for the tests in which a member lies through
/// plain MPI, with this process's rank and the group's size; none when the
/// process is alone (nobody to lie to). The test frees it, unless it leaves
/// a collective pending on purpose.
struct world_copy {
  MPI_Comm comm = MPI_COMM_NULL;
  int me = 0, n = 0;
};
std::optional<world_copy> copy_world_with_a_liar() {
  world_copy w;
  REQUIRE(MPI_Comm_dup(MPI_COMM_WORLD, &w.comm) == MPI_SUCCESS);
  MPI_Comm_rank(w.comm, &w.me);
  MPI_Comm_size(w.comm, &w.n);
  if (w.n < 2) {
    MPI_Comm_free(&w.comm);
    SUCCEED("one member: nobody to lie to");
    return std::nullopt;
  }
  return w;
}

}  // namespace

TEST_CASE("bootstrap: a member whose declared record size lies is refused by every other member",
          "[transport]") {
  // The last rank sends record sizes through plain MPI: first a negative
  // one, then one that takes the total past 2 GiB. The others must refuse
  // both with a comm_error naming it, before they allocate by the size or
  // start the exchange of the bytes (which the liar never joins: a member
  // that went on would wait there until the limit).
  const auto world = copy_world_with_a_liar();
  if (!world) return;
  MPI_Comm dup = world->comm;  // no structured binding: clang < 16 cannot capture one
  const int me = world->me, n = world->n;
  const int liar = n - 1;
  const std::vector<std::byte> mine(3, std::byte{7});
  const boost::mpi::communicator comm(dup, boost::mpi::comm_attach);
  const auto declare = [&](int lie) {  // what the liar does instead of joining
    std::vector<int> sizes(static_cast<std::size_t>(n));
    MPI_Request r =
        MPI_REQUEST_NULL;  // nonblocking: MPI matches blocking collectives only with blocking ones
    CHECK(MPI_Iallgather(&lie, 1, MPI_INT, sizes.data(), 1, MPI_INT, dup, &r) == MPI_SUCCESS);
    CHECK(MPI_Wait(&r, MPI_STATUS_IGNORE) == MPI_SUCCESS);
  };
  const auto names_liar = dml_test::contains("rank " + std::to_string(liar));
  for (const int lie : {-5, std::numeric_limits<int>::max() - 1}) {
    if (me == liar) {
      declare(lie);
    } else {
      CHECK_THROWS_WITH(dml::comm::bootstrap::all_gather(comm, mine, 5s), names_liar);
    }
  }
  // Sizes far below 2 GiB but above what the callers expect of one record:
  // 1 MiB against a bound of 64 bytes, and 1 GiB against all_gather_value's
  // sizeof(T). Without the bound every honest member would allocate the
  // declared size and wait for bytes that never come, ending in dml::timeout.
  if (me == liar) {
    declare(1 << 20);
    declare(1 << 30);
  } else {
    const auto start = std::chrono::steady_clock::now();
    CHECK_THROWS_WITH(
        dml::comm::bootstrap::all_gather(comm, mine, 5s, 64),
        names_liar && dml_test::contains("1048576 bytes, more than the 64 this exchange allows"));
    CHECK_THROWS_WITH(dml::comm::bootstrap::all_gather_value(comm, std::uint64_t{42}, 5s),
                      names_liar && dml_test::contains("more than the 8 this exchange allows"));
    CHECK(std::chrono::steady_clock::now() - start < 5s);  // refused at once, not at the limit
  }
  MPI_Barrier(dup);  // nothing is left pending: the communicator still works
  MPI_Comm_free(&dup);
}

TEST_CASE("bootstrap: pairwise refuses a size declared to one member only; the others reach the limit",
          "[.][pairwise_lie]") {
  // Hidden, run in processes of its own (test/mpi/CMakeLists.txt): every
  // member ends with its process broken, which refuses later collectives.
  // The last rank sends sizes through plain MPI and lies to member 0 only
  // (-5 bytes), telling the others the truth (3). Member 0 must refuse with
  // a comm_error naming the liar before it allocates or joins the exchange
  // of the bytes; the others, and the liar, wait there for member 0, which
  // never comes: the honest ones must end in dml::timeout at their limit.
  const auto world = copy_world_with_a_liar();
  if (!world) return;
  MPI_Comm dup = world->comm;  // no structured binding: clang < 16 cannot capture one
  const int me = world->me, n = world->n;
  const int liar = n - 1, victim = 0;
  const auto members = static_cast<std::size_t>(n);
  const boost::mpi::communicator comm(dup, boost::mpi::comm_attach);
  const std::vector<std::vector<std::byte>> to_each(members, std::vector<std::byte>(3, std::byte{7}));
  if (me == liar) {
    std::vector<int> sizes(members, 3), got(members, 0);
    sizes[victim] = -5;
    MPI_Request r = MPI_REQUEST_NULL;  // nonblocking, as the members' exchange
    REQUIRE(MPI_Ialltoall(sizes.data(), 1, MPI_INT, got.data(), 1, MPI_INT, dup, &r) == MPI_SUCCESS);
    REQUIRE(MPI_Wait(&r, MPI_STATUS_IGNORE) == MPI_SUCCESS);
    CHECK(std::count(got.begin(), got.end(), 3) == n);
    // The bytes, as an honest member would send them. The buffers stay with
    // MPI: the exchange cannot complete without member 0.
    struct bytes {
      std::vector<int> counts, displs;
      std::vector<std::byte> out, in;
    };
    auto* b = new bytes{std::vector<int>(members, 3),
                        {},
                        std::vector<std::byte>(3 * members, std::byte{7}),
                        std::vector<std::byte>(3 * members)};
    for (int m = 0; m < n; ++m) b->displs.push_back(3 * m);
    REQUIRE(MPI_Ialltoallv(b->out.data(), b->counts.data(), b->displs.data(), MPI_BYTE, b->in.data(),
                           b->counts.data(), b->displs.data(), MPI_BYTE, dup, &r) == MPI_SUCCESS);
    int done = 0;
    const auto until = std::chrono::steady_clock::now() + 3s;
    while (!done && std::chrono::steady_clock::now() < until) {
      MPI_Test(&r, &done, MPI_STATUS_IGNORE);
      std::this_thread::sleep_for(5ms);
    }
    CHECK(!done);
    dml::detail::mpi_impl::mark_broken();  // the request stays pending: main() must not finalize MPI
  } else if (me == victim) {
    const auto start = std::chrono::steady_clock::now();
    CHECK_THROWS_WITH(dml::comm::bootstrap::pairwise(comm, to_each, 2s),
                      dml_test::contains("rank " + std::to_string(liar)));
    CHECK(std::chrono::steady_clock::now() - start < 2s);  // refused at once, not at the limit
    CHECK(dml::detail::mpi_impl::broken());
  } else {
    CHECK_THROWS_AS(dml::comm::bootstrap::pairwise(comm, to_each, 2s), dml::timeout);
    CHECK(dml::detail::mpi_impl::broken());
  }
}

TEST_CASE("broadcast: values and spans from several roots; mismatches are config_errors on every rank",
          "[transport]") {
  auto& c = world();
  const auto n = c.size();
  const auto me = c.rank();
  struct sample {
    std::uint16_t tag;
    double step;
    std::int64_t shape[2];
  };
  for (const dml::member_id root : {dml::member_id{0}, n / 2, n - 1}) {
    sample v{static_cast<std::uint16_t>(me + 1),
             0.5 * static_cast<double>(me),
             {static_cast<std::int64_t>(me), -1}};
    dml::broadcast(c, v, root);
    CHECK(v.tag == root + 1);
    CHECK(v.step == 0.5 * static_cast<double>(root));
    CHECK(v.shape[0] == static_cast<std::int64_t>(root));
    for (const std::size_t size : {std::size_t{0}, std::size_t{1}, std::size_t{1000}, std::size_t{70000}}) {
      std::vector<double> data(size);
      for (std::size_t i = 0; i < size; ++i) data[i] = static_cast<double>(me) * 1e6 + static_cast<double>(i);
      dml::broadcast(c, std::span(data), root);
      std::size_t wrong = 0;
      for (std::size_t i = 0; i < size; ++i)
        wrong += data[i] == static_cast<double>(root) * 1e6 + static_cast<double>(i) ? 0 : 1;
      CHECK(wrong == 0);
    }
  }
  // Every rank must see the same config_error, and none may keep a partial copy.
  auto expect_config_error = [&](auto&& call, const std::string& needle) {
    std::string what;
    try {
      call();
    } catch (const dml::config_error& e) {
      what = e.what();
    }
    INFO(what);
    CHECK(what.find(needle) != std::string::npos);
    c.barrier();
  };
  if (n >= 2) {
    std::vector<float> data(me == n - 1 ? 9 : 8, static_cast<float>(me));
    expect_config_error(
        [&] { dml::broadcast(c, std::span(data), 0); },
        "member " + std::to_string(n - 1) + " passes 9 elements of 4 bytes, the root (member 0) 8");
    for (float x : data) CHECK(x == static_cast<float>(me));
    int v = 0;
    expect_config_error([&] { dml::broadcast(c, v, me == 1 ? 1 : 0); },
                        "disagree on the root: member 0 passes root 0, member 1 root 1");
  }
  int v = static_cast<int>(me);
  expect_config_error([&] { dml::broadcast(c, v, n); },
                      "root " + std::to_string(n) + " is not a live member");
  CHECK(v == static_cast<int>(me));
}

TEST_CASE("io::agree_on_input: the same input returns; a differing or failed one is one error everywhere",
          "[transport]") {
  auto& c = world();
  const auto n = c.size();
  const auto me = c.rank();
  auto report = [](std::uint64_t fingerprint, const std::string& summary) {
    dml::io::input_report r;
    r.fingerprint = fingerprint;
    r.summary = summary;
    return r;
  };
  // What agree_on_input threw here ("" when it returned), and whether this
  // member was the one to report it.
  auto outcome = [&](const dml::io::input_report& r) -> std::pair<std::string, bool> {
    try {
      dml::io::agree_on_input(c, r, "the data");
      return {"", false};
    } catch (const dml::io::input_error& e) {
      return {e.what(), e.reporter()};
    }
  };
  CHECK(outcome(report(42, "100 rows")).first.empty());
  const std::string of_n = " of " + std::to_string(n);
  if (n >= 2) {
    const auto got = outcome(me == n - 1 ? report(7, "99 rows") : report(42, "100 rows"));
    CHECK(got.first ==
          "the data differs between ranks: rank " + std::to_string(n - 1) + of_n +
              " has 99 rows (fingerprint 0000000000000007), rank 0" + of_n +
              " has 100 rows (fingerprint 000000000000002a); every process must read the same input");
    CHECK(got.second == (me == 0));
  }
  dml::io::input_report bad = report(42, "100 rows");
  if (me == n / 2) {
    bad.failure = std::make_exception_ptr(std::runtime_error("data.txt:3: not a number"));
    bad.usage = true;
  }
  std::string expected = "data.txt:3: not a number";
  if (n > 1) expected = "rank " + std::to_string(n / 2) + of_n + ": " + expected;
  try {
    dml::io::agree_on_input(c, bad);
    FAIL_CHECK("agree_on_input returned after a failed load");
  } catch (const dml::io::input_error& e) {
    CHECK(std::string(e.what()) == expected);
    CHECK(e.usage());
    CHECK(e.reporter() == (me == 0));
  }
  c.barrier();
}

TEST_CASE("config: members that disagree on a vector get config_error on every rank", "[config]") {
  auto& c = world();
  const auto me = c.rank();
  CHECK_THROWS_AS(dml::make_vector<float>(c, 0), dml::config_error);  // rejected by one, seen by all
  if (c.size() > 1) {
    CHECK_THROWS_WITH(dml::make_vector<float>(c, me == 1 ? 9 : 8), dml_test::contains("disagree"));
    // Different policy types on different ranks: still one collective.
    auto policy_mismatch = [&] {
      if (me == 0)
        (void)dml::make_vector<float>(c, 8, dml::topology::ring{});
      else
        (void)dml::make_vector<float>(c, 8);
    };
    CHECK_THROWS_AS(policy_mismatch(), dml::config_error);
    auto consistency_mismatch = [&] {
      if (me + 1 == c.size())
        (void)dml::make_vector<float>(c, 8, dml::consistency::notify_ack{});
      else
        (void)dml::make_vector<float>(c, 8, dml::consistency::bsp{});
    };
    CHECK_THROWS_WITH(consistency_mismatch(), dml_test::contains("consistency"));
    auto element_mismatch = [&] {
      if (me == 0)
        (void)dml::make_vector<double>(c, 8);
      else
        (void)dml::make_vector<float>(c, 8);
    };
    CHECK_THROWS_AS(element_mismatch(), dml::config_error);
    // One member asks for something impossible: everyone learns why.
    CHECK_THROWS_WITH(dml::make_vector<float>(c, 8, dml::sparse{me == 0 ? 99u : 4u}),
                      dml_test::contains("member 0 rejected"));
  }
  // The group is still in step afterwards.
  auto v = dml::make_vector<float>(c, 8);
  for (auto& x : v.span()) x = 2.0f;
  v.scatter();
  v.gather();
  for (float x : v.span()) CHECK(x == 2.0f);
}

namespace {

// Rounds of scatter + gather with random pauses before every scatter and
// gather; returns {gathers, gathers that combined every in-neighbour,
// elements that differ from the exact average} summed over all ranks.
template <class Cons, class Topo>
std::array<std::uint64_t, 3> straggle(int rounds, std::uint64_t seed) {
  auto& c = world();
  std::mt19937_64 rng(seed * 7919 + c.rank());
  auto v = dml::make_vector<double>(c, 16, Cons{}, Topo{});
  const auto in = v.in_neighbours();
  std::uint64_t wrong = 0;
  for (int r = 1; r <= rounds; ++r) {
    for (auto& x : v.span()) x = static_cast<double>(c.rank() * 1000 + r);
    mpi_test::random_pause(rng, 300us);
    v.scatter();
    mpi_test::random_pause(rng, 300us);
    v.gather();
    double want = static_cast<double>(c.rank() * 1000 + r);
    for (auto j : in) want += static_cast<double>(j * 1000 + r);
    want /= static_cast<double>(in.size() + 1);
    for (double x : v.span()) wrong += std::abs(x - want) > 1e-9 ? 1 : 0;
  }
  const auto& s = v.stats();
  const std::uint64_t full = s.inputs_combined.size() > in.size() ? s.inputs_combined[in.size()] : 0;
  return {sum(mpi_test::all_values(c, s.gathers)), sum(mpi_test::all_values(c, full)),
          sum(mpi_test::all_values(c, wrong))};
}

}  // namespace

TEST_CASE("notify_ack: every gather combines every in-neighbour despite random delays", "[consistency]") {
  const auto n = world().size();
  {
    const auto [g, full, wrong] = straggle<dml::consistency::notify_ack, dml::topology::halton>(40, 1);
    REQUIRE(g == n * 40);
    REQUIRE(full == g);
    REQUIRE(wrong == 0);
  }
  {
    const auto [g, full, wrong] = straggle<dml::consistency::notify_ack, dml::topology::root_expander>(40, 2);
    REQUIRE(g == n * 40);
    REQUIRE(full == g);
    REQUIRE(wrong == 0);
  }
}

TEST_CASE("bsp: every gather combines every in-neighbour despite random delays", "[consistency]") {
  const auto [g, full, wrong] = straggle<dml::consistency::bsp, dml::topology::ring>(40, 3);
  REQUIRE(g == world().size() * 40);
  REQUIRE(full == g);
  REQUIRE(wrong == 0);
}

TEST_CASE("delta_vector: sparse changes keep every agreed state the same to the bit, with random delays",
          "[consistency]") {
  auto& c = world();
  std::mt19937_64 rng(77 + c.rank());
  constexpr std::size_t length = 1u << 18;
  for (int policy = 0; policy < 2; ++policy) {
    auto run = [&](auto consistency) {
      auto v = dml::make_delta_vector<float>(c, length, dml::sparse{48}, consistency);
      std::uniform_int_distribution<std::uint32_t> where(0, 4095);
      std::uniform_real_distribution<float> what(-1.0f, 1.0f);
      for (int r = 0; r < 30; ++r) {
        for (int k = 0; k < 64; ++k) {  // more than the capacity: the rest waits
          const std::uint32_t j = where(rng) * 61 % length;
          v.span()[j] += what(rng) / 7.0f;
          v.touch(j);
        }
        mpi_test::random_pause(rng, std::chrono::microseconds(300));
        v.scatter();
        v.gather();
      }
      // A checksum of the agreed state, compared bit for bit across ranks.
      std::uint64_t h = 1469598103934665603ULL;
      for (const float x : v.agreed()) {
        std::uint32_t bits;
        std::memcpy(&bits, &x, sizeof bits);
        h = (h ^ bits) * 1099511628211ULL;
      }
      return h;
    };
    const std::uint64_t mine =
        policy == 0 ? run(dml::consistency::bsp{}) : run(dml::consistency::notify_ack{});
    for (const std::uint64_t theirs : mpi_test::all_values(c, mine)) REQUIRE(theirs == mine);
  }
}

TEST_CASE("ssp<S>: no gather combines an update older than t - S, with a slow member and random delays",
          "[consistency]") {
  constexpr std::uint64_t S = 3;
  auto& c = world();
  const bool slow = c.rank() == 2 % c.size();
  std::mt19937_64 rng(99 + c.rank());
  std::uint64_t now = 0, too_old = 0, combined = 0;
  auto check = [&](std::span<double> own, std::span<const dml::gather::input<double>> inputs) {
    for (const auto& in : inputs) {
      if (in.clock + S < now) ++too_old;
      ++combined;
    }
    dml::gather::average{}(own, inputs);
  };
  {
    auto v = dml::make_vector<double>(c, 32, dml::consistency::ssp<S>{}, dml::topology::halton{}, check);
    for (int r = 0; r < 60; ++r) {
      if (slow) std::this_thread::sleep_for(500us);
      mpi_test::random_pause(rng, 200us);
      v.scatter();
      now = v.clock();
      mpi_test::random_pause(rng, 200us);
      v.gather();
    }
    v.barrier();
  }
  REQUIRE(sum(mpi_test::all_values(c, too_old)) == 0);
  if (c.size() > 1) REQUIRE(sum(mpi_test::all_values(c, combined)) > 0);
}

TEST_CASE("asp: never blocks and combines an update at most once, with random delays", "[consistency]") {
  auto& c = world();
  std::mt19937_64 rng(7 + c.rank());
  std::vector<std::uint64_t> last_seen(c.size(), 0);
  std::uint64_t repeats = 0;
  auto check = [&](std::span<float>, std::span<const dml::gather::input<float>> inputs) {
    for (const auto& in : inputs) {
      if (in.clock <= last_seen[in.sender]) ++repeats;
      last_seen[in.sender] = in.clock;
    }
  };
  {
    auto v = dml::make_vector<float>(c, 4, dml::consistency::asp{}, check);
    for (int r = 0; r < 100; ++r) {
      mpi_test::random_pause(rng, 100us);
      v.scatter();
      v.gather();
      v.gather();  // a second gather finds nothing new
    }
    v.barrier();
  }
  REQUIRE(sum(mpi_test::all_values(c, repeats)) == 0);
}

// Hidden: run on its own (ctest "... a member dies"), because afterwards the
// group is broken for good. The hub of a star (a parameter server at rank 0)
// kills itself at the start of round 4; every worker must get
// dml::peer_failure or dml::timeout naming it, within a bounded time (the
// ctest TIMEOUT), never a hang.
//
// Why the hub: there is no failure detector yet (that is the fault
// monitor's job), so a member that gives up stops answering too, and a
// member still waiting for *it* would time out naming that member instead.
// In a star every worker depends on the hub alone, so the dead member is the
// only one anybody can be left waiting for.
TEST_CASE("fault: a member that dies mid-run is reported by name to the survivors", "[.][death]") {
  auto& c = world();
  if (c.size() < 2) return;
  const dml::member_id victim = 0;
  c.set_wait_limit(3s);
  [](auto& cc) {  // recovery has its own test below
    if constexpr (dml::comm::shrinkable_transport<std::remove_reference_t<decltype(cc)>>)
      dml::fault::set_policy(cc, dml::fault::policy::abort);
  }(c);
  const auto victim_name = "member " + std::to_string(victim);
  std::string outcome;
  bool named = false;
  const auto start = std::chrono::steady_clock::now();
  try {
    auto v = dml::make_vector<float>(c, 64, dml::consistency::notify_ack{}, dml::topology::star{});
    for (int r = 1; r <= 1000; ++r) {
      if (c.rank() == victim && r == 4) {
        std::fflush(stdout);
        std::raise(SIGKILL);
      }
      for (auto& x : v.span()) x = static_cast<float>(r);
      v.scatter();
      v.gather();
    }
    outcome = "no error at all";
  } catch (const dml::peer_failure& e) {
    outcome = std::string("peer_failure: ") + e.what();
    named = e.rank() == victim;
  } catch (const dml::timeout& e) {
    outcome = std::string("timeout: ") + e.what();
    named = std::string(e.what()).find(victim_name) != std::string::npos;
  } catch (const std::exception& e) {
    outcome = std::string("unexpected exception: ") + e.what();
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("dml-mpi-test: rank %zu: after %.1f s: %s\n", c.rank(), seconds, outcome.c_str());
  INFO(outcome);
  REQUIRE(named);
}

namespace {
template <class Context>
void survive_a_killed_member(Context& c) {
  if constexpr (!dml::comm::shrinkable_transport<Context>) {
    WARN("this transport cannot shrink its group (fault::policy::abort only)");
    return;
  } else {
    if (c.size() < 3) return;
    const dml::member_id victim = c.size() / 2;
    c.set_wait_limit(20s);
    c.set_heartbeat_timeout(500ms);
    constexpr std::uint64_t never = 0;
    auto run = [&](auto consistency, auto topology, std::uint64_t kill_at) {
      auto v = dml::make_vector<double>(c, 8, consistency, topology);
      for (auto& x : v.span()) x = static_cast<double>(c.rank());
      while (v.clock() < 130) {
        if (kill_at != never && c.rank() == victim && v.clock() == kill_at) {
          std::fflush(stdout);
          std::raise(SIGKILL);
        }
        v.scatter();
        v.gather();
      }
      v.barrier();
      return std::vector<double>(v.span().begin(), v.span().end());
    };
    // Three vectors, one after the other; the victim dies in the second.
    (void)run(dml::consistency::bsp{}, dml::topology::ring{}, never);
    REQUIRE(c.view().epoch == 0);
    const auto mine = run(dml::consistency::notify_ack{}, dml::topology::halton{}, 30);
    REQUIRE(c.view().epoch == 1);
    REQUIRE(dml::fault::view_changes(c).size() == 1);
    REQUIRE(dml::fault::view_changes(c)[0].removed == std::vector<dml::member_id>{victim});
    std::vector<dml::member_id> expected;
    for (dml::member_id m = 0; m < c.size(); ++m)
      if (m != victim) expected.push_back(m);
    REQUIRE(c.view().live == expected);
    // Every survivor ends with the same average (exchanged through a vector
    // of the new view: it sums everyone's value under bsp over all).
    auto check = dml::make_vector<double>(c, 2, dml::gather::sum{});
    check.span()[0] = mine[0];
    check.span()[1] = 1.0;
    check.scatter();
    check.gather();
    REQUIRE(check.span()[1] == static_cast<double>(c.size() - 1));
    REQUIRE(std::abs(check.span()[0] / check.span()[1] - mine[0]) < 1e-3);
    // And a vector made after the failure works over the survivors.
    const auto after = run(dml::consistency::ssp<1>{}, dml::topology::root_expander{}, never);
    REQUIRE(after.size() == 8);
    std::printf(
        "dml-mpi-test: rank %zu: view %llu of %zu members; detected after %.3f s, rebuilt after %.3f s\n",
        c.rank(), static_cast<unsigned long long>(c.view().epoch), c.view().live.size(),
        dml::fault::view_changes(c)[0].detection_seconds, dml::fault::view_changes(c)[0].recovery_seconds);
  }
}

}  // namespace

TEST_CASE("fault: the survivors of a killed member agree on one view and keep averaging", "[.][recovery]") {
  survive_a_killed_member(world());
}

// A member that starts the view agreement keeps answering requests while it
// waits for the others: a survivor that asks it for data before noticing the
// alarm gets its answer, then joins. (The two-sided transport answers gets,
// flushes and atomics only while the target progresses; an agreement that did
// not serve left such a survivor waiting until its wait limit, after which it
// declared the live member failed and the survivors excluded it.) Forced
// deterministically: member 0 alone watches the victim and starts the
// agreement; member 1 waits for its alarm, then reads a word of member 0's.
namespace {
// A template, so that transports that cannot shrink (verbs) compile
// without the branch that recovers.
template <class Context>
void answer_during_agreement(Context& c) {
  if constexpr (!dml::comm::shrinkable_transport<Context>) {
    WARN("this transport cannot shrink its group");
  } else {
    if (c.size() < 3) return;
    c.set_wait_limit(10s);
    c.set_heartbeat_timeout(500ms);
    const dml::member_id me = c.rank(), victim = c.size() - 1;
    auto seg = c.create_segment(1, 0);
    const std::uint64_t mine = 1000 + me;
    seg.put(me, 0, std::as_bytes(std::span(&mine, 1)));
    seg.flush(me);
    c.barrier();
    if (me == victim) {
      std::fflush(stdout);
      std::raise(SIGKILL);
    }
    const auto give_up = std::chrono::steady_clock::now() + 10s;
    std::string problem;
    std::uint64_t got = 0;
    try {
      if (me == 0) {
        while (c.alive(victim) && std::chrono::steady_clock::now() < give_up)
          std::this_thread::sleep_for(5ms);
      } else {
        // Only a local load: this member notices neither the death nor
        // anything else until member 0's alarm arrives.
        for (bool alarmed = false; !alarmed && std::chrono::steady_clock::now() < give_up;) {
          try {
            c.check_view();
            std::this_thread::sleep_for(1ms);
          } catch (const dml::peer_failure&) {
            alarmed = true;
          }
        }
        // Member 0 is inside the agreement now, waiting for this member.
        if (me == 1) seg.get(0, 0, std::as_writable_bytes(std::span(&got, 1)));
      }
      dml::fault::recover(c);
    } catch (const std::exception& e) {
      problem = e.what();
    }
    INFO(problem);
    REQUIRE(problem.empty());
    if (me == 1) REQUIRE(got == 1000);
    std::vector<dml::member_id> expected;
    for (dml::member_id m = 0; m < c.size(); ++m)
      if (m != victim) expected.push_back(m);
    REQUIRE(c.view().epoch == 1);
    REQUIRE(c.view().live == expected);
  }
}
}  // namespace

TEST_CASE("fault: a member inside the view agreement still answers requests", "[.][agreement]") {
  answer_during_agreement(world());
}

#if defined(DML_TEST_MPI_TWO_SIDED)
// A member the others declared failed learns it from their records, even
// once they have left: it stops with "was declared failed by the other
// members" instead of carrying on as a group of one (or timing out). Forced
// with the two-sided transport, whose gets need the target's progress:
// member 0 makes no dml call until member 1's get to it has exceeded a
// short wait limit (member 1 says so in a plain MPI message on
// MPI_COMM_WORLD, which dml never reads: a fixed sleep was not enough on a
// loaded machine, where member 1 reached its get after member 0 had woken
// and answered it), and members 1 and 2 agree on a view without member 0,
// then finish. Member 0 waits until both are silent (both written off), then
// recovers. Member 0 does not print a verdict when it gets the right error
// (the run expects n - 1 passing members).
TEST_CASE("fault: an excluded member learns it from the records of the others", "[.][excluded]") {
  auto& c = world();
  if (c.size() != 3) return;
  c.set_wait_limit(10s);
  c.set_heartbeat_timeout(500ms);
  const dml::member_id me = c.rank();
  auto seg = c.create_segment(1, 0);
  c.barrier();
  std::string problem;
  constexpr int get_done_tag = 7301;
  constexpr int left_barrier_tag = 7302;
  if (me == 0) {
    // Member 0 may still be inside the barrier, answering requests, when
    // member 1 leaves it: member 1's get waits until member 0 has left (a
    // loaded machine made member 0 answer the get from inside the barrier).
    int left = 1;
    MPI_Send(&left, 1, MPI_INT, 1, left_barrier_tag, MPI_COMM_WORLD);
    // Answers nothing (no dml call) until member 1's get has given up.
    int done = 0, arrived = 0;
    MPI_Request r = MPI_REQUEST_NULL;
    MPI_Irecv(&done, 1, MPI_INT, 1, get_done_tag, MPI_COMM_WORLD, &r);
    for (const auto wait_end = std::chrono::steady_clock::now() + 30s;
         !arrived && std::chrono::steady_clock::now() < wait_end;) {
      MPI_Test(&r, &arrived, MPI_STATUS_IGNORE);
      if (!arrived) std::this_thread::sleep_for(5ms);
    }
    if (!arrived) {
      MPI_Cancel(&r);
      MPI_Request_free(&r);
    }
    const auto give_up = std::chrono::steady_clock::now() + 20s;
    while ((c.alive(1) || c.alive(2)) && std::chrono::steady_clock::now() < give_up)
      std::this_thread::sleep_for(5ms);
    try {
      dml::fault::recover(c);
      problem = "went on in view " + std::to_string(c.view().epoch) + " of " +
                std::to_string(c.view().live.size()) + " member(s)";
    } catch (const dml::peer_failure& e) {
      if (std::string(e.what()).find("was declared failed by the other members") == std::string::npos)
        problem = std::string("peer_failure: ") + e.what();
    } catch (const std::exception& e) {
      problem = std::string("unexpected exception: ") + e.what();
    }
    INFO(problem);
    REQUIRE(problem.empty());
    std::fflush(stdout);
    std::_Exit(0);  // excluded, as it should be: no verdict line
  }
  try {
    if (me == 1) {
      int left = 0;
      MPI_Recv(&left, 1, MPI_INT, 0, left_barrier_tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      c.set_wait_limit(500ms);
      std::uint64_t word = 0;
      try {
        seg.get(0, 0, std::as_writable_bytes(std::span(&word, 1)));
        problem = "member 0 answered";
      } catch (const dml::peer_failure&) {
      }
      int done = 1;
      MPI_Send(&done, 1, MPI_INT, 0, get_done_tag, MPI_COMM_WORLD);
      c.set_wait_limit(10s);
    } else {
      const auto give_up = std::chrono::steady_clock::now() + 10s;
      for (bool alarmed = false; !alarmed && std::chrono::steady_clock::now() < give_up;) {
        try {
          c.check_view();
          std::this_thread::sleep_for(1ms);
        } catch (const dml::peer_failure&) {
          alarmed = true;
        }
      }
    }
    dml::fault::recover(c);
  } catch (const std::exception& e) {
    problem = e.what();
  }
  INFO(problem);
  REQUIRE(problem.empty());
  REQUIRE(c.view().epoch == 1);
  REQUIRE(c.view().live == std::vector<dml::member_id>{1, 2});
}

// A message above MPI's eager limit (4 KB in Open MPI's shared-memory
// transport) is pulled from its sender when the target receives it; a sender
// that died meanwhile left the target inside MPI_Recv for good ("Read -1,
// expected 32032, errno = 3" from Open MPI, then nothing: a kill driver run
// of dml-logreg hung so). The target must name the member at its heartbeat
// timeout and recover. Forced: the victim puts 32 000 bytes (one dml message)
// to member 0 and kills itself at once; member 0 makes no dml call until its
// monitor has declared the victim dead, then reads its own control word,
// which makes it receive the victim's message.
TEST_CASE("fault: a member that dies with a large message in flight is named, not waited for",
          "[.][dies_sending]") {
  auto& c = world();
  if (c.size() != 3) return;
  c.set_wait_limit(20s);
  c.set_heartbeat_timeout(500ms);
  const dml::member_id me = c.rank(), victim = 2;
  constexpr std::size_t words = 4000;
  auto seg = c.create_segment(words, 1);
  c.barrier();
  // The victim sends once member 0 has left the barrier (a plain MPI
  // message dml never reads): member 0 still serving inside the barrier
  // would meet the dead sender's message there, outside this test's try.
  constexpr int left_barrier_tag = 7303;
  if (me == 0) {
    int left = 1;
    MPI_Send(&left, 1, MPI_INT, static_cast<int>(victim), left_barrier_tag, MPI_COMM_WORLD);
  }
  if (me == victim) {
    int left = 0;
    MPI_Recv(&left, 1, MPI_INT, 0, left_barrier_tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    const std::vector<std::uint64_t> data(words, 7);
    seg.put(0, 0, std::as_bytes(std::span(data)));
    std::fflush(stdout);
    std::raise(SIGKILL);
  }
  std::string problem, named;
  try {
    const auto give_up = std::chrono::steady_clock::now() + 10s;
    if (me == 0)
      while (c.alive(victim) && std::chrono::steady_clock::now() < give_up) std::this_thread::sleep_for(5ms);
    for (bool alarmed = false; !alarmed && std::chrono::steady_clock::now() < give_up;) {
      try {
        if (me == 0) (void)seg.load_control(0);
        c.check_view();
        std::this_thread::sleep_for(1ms);
      } catch (const dml::peer_failure& e) {
        alarmed = true;
        named = e.what();
      }
    }
    dml::fault::recover(c);
  } catch (const std::exception& e) {
    problem = e.what();
  }
  INFO(problem);
  REQUIRE(problem.empty());
  INFO(named);
  if (me == 0) REQUIRE(named.find("member 2") != std::string::npos);  // member 1 may hear of a view change
  REQUIRE(c.view().epoch == 1);
  REQUIRE(c.view().live == std::vector<dml::member_id>{0, 1});
}
#endif

#if defined(DML_TEST_MPI_RMA)
TEST_CASE("config: bad values of mpi_rma's environment variables are config_errors naming them", "[config]") {
  struct variable {
    const char* name;
    const char* value;
  };
  for (const auto& [name, value] :
       {variable{"DML_RMA_WINDOW", "huge"}, variable{"DML_HEARTBEAT_TIMEOUT_MS", "5"},
        variable{"DML_HEARTBEAT_TIMEOUT_MS", "1s"}}) {
    INFO(name << "=" << value);
    ::setenv(name, value, 1);
    try {
      dml::comm::mpi_rma bad(MPI_COMM_WORLD);
      FAIL("no config_error");
    } catch (const dml::config_error& e) {
      const std::string what = e.what();
      CHECK(what.find(name) != std::string::npos);
      CHECK(what.find(value) != std::string::npos);
    }
    ::unsetenv(name);
  }
  world().barrier();  // the group still works
}
#endif

namespace {
template <class Context>
void check_fault_settings_from_env() {
  if constexpr (dml::comm::shrinkable_transport<Context>) {
    for (const char* name : {"DML_FAILURE_POLICY", "DML_MIN_SURVIVORS"}) {
      INFO(name);
      ::setenv(name, "ignore", 1);
      // The settings are read when the context's fault state is first made:
      // a fresh context has none yet.
      Context fresh(MPI_COMM_WORLD);
      try {
        (void)dml::fault::failure_policy(fresh);
        FAIL("no config_error");
      } catch (const dml::config_error& e) {
        CHECK(std::string(e.what()).find(name) != std::string::npos);
      }
      ::unsetenv(name);
    }
  }
}
}  // namespace

TEST_CASE("config: bad fault settings in the environment are config_errors naming them", "[config]") {
  check_fault_settings_from_env<transport>();
  world().barrier();
}

TEST_CASE("join: uneven shares leave the exchange under every policy, nobody hangs", "[vector][join]") {
  auto& c = world();
  const auto n = c.size(), me = c.rank();
  auto steps = [](std::size_t m) { return 4 + 3 * static_cast<std::uint64_t>(m); };
  auto check = [&](auto consistency, bool same_clock) {
    auto v = dml::make_vector<double>(c, 5, consistency, dml::topology::ring{});
    for (std::uint64_t s = 0; s < steps(me); ++s) {
      for (auto& x : v.span()) x += 1.0;
      v.scatter();
      v.gather();
    }
    const auto last = v.join();
    CHECK(last == steps(n - 1));
    const auto clocks = mpi_test::all_values(c, v.clock());
    for (std::size_t m = 0; m < n; ++m) CHECK(clocks[m] == (same_clock ? clocks[0] : steps(m)));
    v.barrier();
  };
  check(dml::consistency::bsp{}, true);
  check(dml::consistency::notify_ack{}, true);
  check(dml::consistency::ssp<1>{}, true);
  check(dml::consistency::asp{}, false);
}

TEST_CASE("adaptive: every member switches mode at the same clock, with random delays", "[consistency]") {
  namespace cs = dml::consistency;
  auto& c = world();
  std::mt19937_64 rng(31 + c.rank());
  cs::adaptive_options o;
  o.every = 3;
  o.first_window = 1;  // agreements at clocks 2, 3, 5, 8, 11, ...
  auto v = dml::make_vector<double>(c, 8, cs::adaptive(o));
  const cs::adaptive& a = v.consistency();
  a.set_trace(true);
  const double n = static_cast<double>(c.size());
  int bsp_wrong = 0;
  for (int r = 1; r <= 30; ++r) {
    if (rng() % 3 == 0) {
      cs::adaptive_settings s;
      s.mode = static_cast<cs::adaptive_mode>(rng() % 3);
      s.slack = 1 + rng() % 3;
      s.balanced = rng() % 2 == 0;
      a.propose(s);
    }
    for (auto& x : v.span()) x = static_cast<double>(c.rank()) + r;
    mpi_test::random_pause(rng, std::chrono::microseconds(300));
    v.scatter();
    v.gather();
    if (a.trace().back().settings.mode == cs::adaptive_mode::bsp)
      for (double x : v.span()) bsp_wrong += std::abs(x - ((n - 1) / 2 + r)) > 1e-12 ? 1 : 0;
  }
  // A hash of the settings of every gather, compared across ranks.
  std::uint64_t h = 1469598103934665603ULL;
  for (const auto& g : a.trace())
    for (const std::uint64_t x : {g.clock, static_cast<std::uint64_t>(g.settings.mode), g.settings.slack,
                                  g.settings.period, static_cast<std::uint64_t>(g.settings.balanced)})
      h = (h ^ x) * 1099511628211ULL;
  const std::array<std::uint64_t, 3> mine{h, a.changes().size(), static_cast<std::uint64_t>(bsp_wrong)};
  for (const auto& theirs : mpi_test::all_values(c, mine)) {
    REQUIRE(theirs[0] == mine[0]);
    REQUIRE(theirs[1] == mine[1]);
    REQUIRE(theirs[2] == 0);
  }
  REQUIRE(a.trace().size() == 30);
  for (const auto& ch : a.changes()) REQUIRE(a.agrees_at(ch.clock));
}

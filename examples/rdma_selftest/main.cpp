// SPDX-License-Identifier: BSL-1.0
// dml-rdma-selftest: checks dml's rdma-core transport (dml::comm::verbs) on
// this machine. It lists the RDMA devices and ports with their state; with an
// ACTIVE port it then checks loopback RDMA WRITEs and atomics on every rank,
// measures the latency of small writes and the bandwidth of large ones
// between ranks 0 and 1, and runs a few vectors under bsp and notify_ack over
// several topologies, checking every combined value. Without an ACTIVE port
// it says so and exits 77.
#include <dml/comm/verbs.hpp>
#include <dml/dml.hpp>
#if defined(DML_SEPARATE_COMPILATION)
// The MPI start-up and shut-down code the verbs transport shares with the
// MPI transports, compiled once (docs/getting-started.md#separate-compilation).
#include <dml/src_mpi.hpp>
#endif

#include "../common/cli.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <vector>

namespace {

namespace verbs = dml::comm::verbs;
using clock_type = std::chrono::steady_clock;

constexpr int exit_failed = 1;
constexpr int exit_usage = 2;
constexpr int exit_no_device = 77;

using cli::usage_error;

struct settings {
  bool list_only = false;
  std::size_t iterations = 1000;
  std::size_t bytes = std::size_t{1} << 20;
  verbs::options transport;
};

// Accepts a whole number in [min, max].
CLI::Validator count(std::size_t min, std::size_t max) {
  return cli::number_where<std::size_t>(
      [=](std::size_t x) { return x >= min && x <= max; },
      "needs a whole number from " + std::to_string(min) + " to " + std::to_string(max));
}

// The command line into s: --help printed (false), or parsed.
bool parse(int argc, char** argv, settings& s) {
  const auto app = cli::app("dml-rdma-selftest",
                            "Checks dml's rdma-core transport (dml::comm::verbs) on this machine. Start it\n"
                            "under MPI with two or more processes, e.g.\n"
                            "  mpiexec -n 2 dml-rdma-selftest\n"
                            "(with one process only the loopback and vector checks run). Steps:\n"
                            "  1. list RDMA devices and ports with their state (all that --list does);\n"
                            "  2. loopback: every rank writes to its own memory through its adapter\n"
                            "     (inline, staged and multi-piece RDMA WRITEs, zero padding, atomics);\n"
                            "  3. latency: 8-byte RDMA WRITE ping-pong between ranks 0 and 1;\n"
                            "  4. bandwidth: rank 0 writes B bytes to rank 1, N/10 times (at least 10);\n"
                            "  5. vectors: bsp and notify_ack over all, ring, halton and root_expander,\n"
                            "     every combined value checked against the exact average.",
                            "\nExit status: 0 every check passed, 1 a check failed (or the transport\n"
                            "reported an error), 2 bad command line, 77 no ACTIVE RDMA port (nothing to\n"
                            "test; --list exits 77 then too).");
  app->get_formatter()->column_width(17);
  app->set_help_flag("-h,--help", "this text");
  app->add_flag("--list", s.list_only, "list devices and ports, then exit");
  app->add_option("--iterations", s.iterations, "latency round trips (default 1000)")
      ->option_text("N")
      ->check(count(1, 100'000'000));
  app->add_option("--bytes", s.bytes, "size of one bandwidth write (default 1048576)")
      ->option_text("B")
      ->check(count(8, std::size_t{1} << 30));
  app->add_option("--device", s.transport.device,
                  "RDMA device (default: DML_VERBS_DEVICE, else the first with\nan ACTIVE port)")
      ->option_text("NAME");
  std::size_t port = 0, gid_index = 0, wait_limit = 0;
  app->add_option("--port", port, "port number (default: DML_VERBS_PORT, else the first ACTIVE)")
      ->option_text("P")
      ->check(count(1, 255));
  app->add_option(
         "--gid-index", gid_index,
         "GID table index (default: DML_VERBS_GID_INDEX, else automatic:\na RoCE v2 GID, preferably IPv4, "
         "on RoCE; none on InfiniBand)")
      ->option_text("G")
      ->check(count(0, 255));
  app->add_option("--wait-limit", wait_limit, "seconds any wait may take (default 60)")
      ->option_text("S")
      ->check(count(1, 86'400));
  if (!cli::parse(*app, argc, argv)) return false;
  if (app->count("--port")) s.transport.port = static_cast<unsigned>(port);
  if (app->count("--gid-index")) s.transport.gid_index = static_cast<int>(gid_index);
  if (app->count("--wait-limit")) s.transport.wait_limit = std::chrono::seconds(wait_limit);
  return true;
}

// The rank mpiexec gave this process, read before MPI starts (so that only
// one process prints the device list); 0 when not started by a launcher.
int launcher_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"})
    if (const char* v = std::getenv(name)) return std::atoi(v);
  return 0;
}

void print_listing(const verbs::device_listing& l) {
  std::printf("RDMA devices:\n");
  if (!l.error.empty()) std::printf("  none: %s\n", l.error.c_str());
  if (l.error.empty() && l.devices.empty()) std::printf("  none\n");
  for (const auto& d : l.devices) {
    std::printf("  %s (%s)%s%s\n", d.name.c_str(), d.node_type.c_str(), d.error.empty() ? "" : ": ",
                d.error.c_str());
    for (const auto& p : d.ports)
      std::printf("    port %u: %s, %s, LID %u, active MTU %u, %d GIDs\n", p.number, p.state.c_str(),
                  p.link_layer.c_str(), p.lid, p.active_mtu, p.gid_table_length);
  }
}

template <class T>
std::vector<T> all_values(verbs::context& c, const T& mine) {
  static_assert(std::is_trivially_copyable_v<T>);
  const auto raw = c.exchange(std::as_bytes(std::span(&mine, 1)));
  std::vector<T> out(raw.size());
  for (std::size_t i = 0; i < raw.size(); ++i) std::memcpy(&out[i], raw[i].data(), sizeof(T));
  return out;
}

std::vector<std::byte> pattern(std::size_t bytes, unsigned seed) {
  std::vector<std::byte> p(bytes);
  for (std::size_t i = 0; i < bytes; ++i) p[i] = static_cast<std::byte>((i * 131 + seed * 17 + 1) % 251 + 1);
  return p;
}

// Results of one rank, merged on rank 0.
struct report {
  int failures = 0;
  std::string first;
  void fail(const std::string& what) {
    if (failures++ == 0) first = what;
  }
};

// Step 2: puts through the loopback queue pair into the own region.
void loopback(verbs::context& c, report& r) {
  const auto me = c.rank();
  constexpr std::size_t words = 140'000;  // room for a 1 MB put: two staged pieces
  auto s = c.create_segment(words, 2);
  const struct { std::size_t word, bytes; } cases[] = {{1, 13}, {8, 4096 + 5}, {1000, 8 * 130'000 + 3}};
  unsigned seed = 1;
  for (const auto& k : cases) {
    const auto p = pattern(k.bytes, seed++);
    const std::vector<std::byte> ones((k.bytes + 7) / 8 * 8, std::byte{0xff});
    s.put(me, k.word, ones);
    s.order(me);
    s.put(me, k.word, p);
    s.flush(me);
    s.sync();
    std::vector<std::byte> got(ones.size());
    s.read(k.word, got);
    if (!std::equal(p.begin(), p.end(), got.begin()))
      r.fail("loopback: a " + std::to_string(k.bytes) + "-byte put did not land intact");
    for (std::size_t i = k.bytes; i < got.size(); ++i)
      if (got[i] != std::byte{0}) {
        r.fail("loopback: the partial last word of a " + std::to_string(k.bytes) +
               "-byte put is not zero padded");
        break;
      }
  }
  if (c.atomics()) {
    const auto a = s.fetch_add(me, 0, 5);
    const auto b = s.fetch_add(me, 0, 5);
    if (a != 0 || b != 5 || s.load_control(0) != 10)
      r.fail("loopback: remote atomics returned " + std::to_string(a) + ", " + std::to_string(b) +
             " and left " + std::to_string(s.load_control(0)) + " (want 0, 5 and 10)");
  }
  c.barrier();
}

// Step 3: half the round trip of an 8-byte write between ranks 0 and 1.
double latency_us(verbs::context& c, std::size_t iterations, report& r) {
  auto s = c.create_segment(1, 0);
  const auto me = c.rank();
  double result = 0;
  if (me <= 1) {
    const dml::member_id other = 1 - me;
    const auto deadline = clock_type::now() + c.wait_limit();
    auto await = [&](std::uint64_t want) {
      while (s.load(0) != want) {
        c.poll();
        s.sync();
        if (clock_type::now() > deadline) {
          r.fail("latency: no answer from rank " + std::to_string(other) + " within the wait limit");
          return false;
        }
      }
      return true;
    };
    const auto start = clock_type::now();
    for (std::uint64_t i = 1; i <= iterations; ++i) {
      if (me == 0) {
        s.put(other, 0, std::as_bytes(std::span(&i, 1)));
        if (!await(i)) break;
      } else {
        if (!await(i)) break;
        s.put(other, 0, std::as_bytes(std::span(&i, 1)));
      }
    }
    const double seconds = std::chrono::duration<double>(clock_type::now() - start).count();
    s.flush(other);
    result = seconds / static_cast<double>(iterations) / 2 * 1e6;
  }
  c.barrier();
  return result;
}

// Step 4: rank 0 writes `bytes` to rank 1 `count` times; rank 1 checks the
// last write. Returns MB/s (10^6 bytes per second) on rank 0.
double bandwidth_mbs(verbs::context& c, std::size_t bytes, std::size_t count, report& r) {
  auto s = c.create_segment((bytes + 7) / 8, 0);
  const auto me = c.rank();
  double result = 0;
  c.barrier();
  if (me == 0) {
    const auto p = pattern(bytes, 7);
    const auto start = clock_type::now();
    for (std::size_t i = 0; i < count; ++i) s.put(1, 0, p);
    s.flush(1);
    const double seconds = std::chrono::duration<double>(clock_type::now() - start).count();
    result = static_cast<double>(bytes) * static_cast<double>(count) / seconds / 1e6;
  }
  c.barrier();
  if (me == 1) {
    const auto want = pattern(bytes, 7);
    std::vector<std::byte> got(bytes);
    s.sync();
    s.read(0, got);
    if (got != want) r.fail("bandwidth: rank 1 does not hold what rank 0 wrote");
  }
  c.barrier();
  return result;
}

double fill(dml::member_id m, int round, std::size_t i) {
  return 1.0 + static_cast<double>(m) + 16.0 * round + 0.25 * static_cast<double>(i % 8);
}

// Step 5: three rounds of one vector; every element must be the exact
// average of the own value and every in-neighbour's.
template <class Topo, class Cons>
void vector_check(verbs::context& c, const char* name, report& r) {
  constexpr std::size_t length = 37;  // odd: a partial last word
  constexpr int rounds = 3;
  auto v = dml::make_vector<double>(c, length, Topo{}, Cons{}, dml::gather::average{});
  const auto me = c.rank();
  const auto in = v.in_neighbours();
  for (int round = 1; round <= rounds; ++round) {
    for (std::size_t i = 0; i < length; ++i) v.span()[i] = fill(me, round, i);
    v.scatter();
    v.gather();
    for (std::size_t i = 0; i < length; ++i) {
      double want = fill(me, round, i);
      for (auto j : in) want += fill(j, round, i);
      want /= static_cast<double>(in.size() + 1);
      if (std::abs(v.span()[i] - want) > 1e-12 * want) {
        r.fail(std::string(name) + ": rank " + std::to_string(me) + " round " + std::to_string(round) +
               " element " + std::to_string(i) + " is " + std::to_string(v.span()[i]) + ", want " +
               std::to_string(want));
        break;
      }
    }
  }
  if (v.stats().full_gathers != rounds)
    r.fail(std::string(name) + ": rank " + std::to_string(me) + " combined every in-neighbour in only " +
           std::to_string(v.stats().full_gathers) + " of " + std::to_string(rounds) + " gathers");
}

// One line per step on rank 0; every rank returns the same verdict.
int run(verbs::context& c, const settings& s) {
  const bool root = c.rank() == 0;
  const auto n = c.size();
  auto step_verdict = [&](const char* step, report& r) {
    const auto failures = all_values(c, r.failures);
    int total = 0;
    dml::member_id first = 0;
    for (std::size_t m = 0; m < failures.size(); ++m) {
      if (total == 0 && failures[m] != 0) first = m;
      total += failures[m];
    }
    const std::string mine = r.first;
    const auto texts = c.exchange(std::as_bytes(std::span(mine.data(), mine.size())));
    if (root) {
      if (total == 0)
        std::printf("%-10s passed\n", step);
      else
        std::printf("%-10s FAILED (%d checks; first on rank %zu: %.*s)\n", step, total, first,
                    static_cast<int>(texts[first].size()),
                    reinterpret_cast<const char*>(texts[first].data()));
      std::fflush(stdout);
    }
    return total;
  };

  const std::string me = c.describe();
  const auto all = c.exchange(std::as_bytes(std::span(me.data(), me.size())));
  if (root) {
    std::printf("%zu rank%s:\n", n, n == 1 ? "" : "s");
    for (std::size_t m = 0; m < all.size(); ++m)
      std::printf("  rank %zu: %.*s\n", m, static_cast<int>(all[m].size()),
                  reinterpret_cast<const char*>(all[m].data()));
  }
  const auto atomics = all_values(c, static_cast<int>(c.atomics()));
  const bool all_atomics = std::all_of(atomics.begin(), atomics.end(), [](int a) { return a != 0; });

  int failures = 0;
  {
    report r;
    loopback(c, r);
    failures += step_verdict("loopback", r);
  }
  if (n >= 2) {
    report r;
    const double us = latency_us(c, s.iterations, r);
    failures += step_verdict("latency", r);
    if (root)
      std::printf("  8-byte RDMA WRITE, half a round trip: %.2f us (%zu round trips)\n", us, s.iterations);
    report b;
    const std::size_t count = std::max<std::size_t>(10, s.iterations / 10);
    const double mbs = bandwidth_mbs(c, s.bytes, count, b);
    failures += step_verdict("bandwidth", b);
    if (root)
      std::printf("  %zu-byte RDMA WRITEs rank 0 -> 1: %.0f MB/s (%zu writes, staging copy included)\n",
                  s.bytes, mbs, count);
  } else if (root) {
    std::printf("latency    not run (one rank; start with mpiexec -n 2)\nbandwidth  not run (one rank)\n");
  }
  {
    report r;
    vector_check<dml::topology::all, dml::consistency::bsp>(c, "bsp/all", r);
    vector_check<dml::topology::ring, dml::consistency::bsp>(c, "bsp/ring", r);
    vector_check<dml::topology::halton, dml::consistency::bsp>(c, "bsp/halton", r);
    vector_check<dml::topology::root_expander, dml::consistency::bsp>(c, "bsp/root_expander", r);
    failures += step_verdict("bsp", r);
  }
  if (all_atomics) {
    report r;
    vector_check<dml::topology::all, dml::consistency::notify_ack>(c, "notify_ack/all", r);
    vector_check<dml::topology::ring, dml::consistency::notify_ack>(c, "notify_ack/ring", r);
    vector_check<dml::topology::halton, dml::consistency::notify_ack>(c, "notify_ack/halton", r);
    vector_check<dml::topology::root_expander, dml::consistency::notify_ack>(c, "notify_ack/root_expander",
                                                                             r);
    failures += step_verdict("notify_ack", r);
  } else if (root) {
    std::printf("notify_ack not run (a device has no remote atomics)\n");
  }
  if (root) std::printf("dml-rdma-selftest: %s\n", failures == 0 ? "all checks passed" : "FAILED");
  return failures == 0 ? 0 : exit_failed;
}

}  // namespace

int main(int argc, char** argv) {
  settings s;
  try {
    if (!parse(argc, argv, s)) return 0;  // --help
  } catch (const usage_error& e) {
    std::fprintf(stderr, "dml-rdma-selftest: %s (see --help)\n", e.what());
    return exit_usage;
  }
  const bool printer = launcher_rank() == 0;
  const auto listing = verbs::list_devices();
  if (printer) print_listing(listing);
  if (!listing.any_active_port()) {
    if (printer)
      std::printf("dml-rdma-selftest: nothing to test: %s (exit status %d)\n", listing.why_unusable().c_str(),
                  exit_no_device);
    return exit_no_device;
  }
  if (s.list_only) return 0;
  std::fflush(stdout);
  try {
    verbs::context c(argc, argv, s.transport);
    return run(c, s);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dml-rdma-selftest: rank %d: %s\n", launcher_rank(), e.what());
    return exit_failed;
  }
}

// SPDX-License-Identifier: BSL-1.0
// Benchmark (not a test): what dml's abstraction costs. One step of a
// data-parallel exchange, scatter() + gather() of a float vector with
// gather::average on the mpi_rma transport, against a hand-written MPI
// one-sided loop that moves the same vector to the same peers and averages
// the same inputs, the way a competent MPI user would write it:
//
//   one window (the same kind dml uses in this run: MPI_Win_allocate_shared
//   on one node, MPI_Win_allocate with DML_RMA_WINDOW=allocate), two
//   receive slots per in-neighbour (step t writes slot t mod 2, as dml
//   does), MPI_Win_lock_all once; per step one MPI_Put of the vector into
//   each out-neighbour's slot, MPI_Win_flush_all, then
//   - bsp: MPI_Barrier, MPI_Win_sync, average own + slots. With a single
//     barrier per step the second slot is needed: a fast member's next put
//     must not land in a slot a slow member is still averaging.
//   - notify_ack: MPI_Accumulate(+1) on a notify counter per out-neighbour,
//     MPI_Win_flush_all; poll the own notify counters (MPI_Fetch_and_op with
//     MPI_NO_OP, as dml reads them, backing off as dml's waits do), average,
//     MPI_Accumulate(+1) on an ack counter per in-neighbour; the next step's
//     puts wait for the acks. The acks alone would make one slot per sender
//     correct, but writing every step into the slot the receiver has just
//     read was 3-4x slower at 64 K floats in 14 of 18 samples (2 processes,
//     osc/sm; 0 of 9 with two), so this loop alternates two slots as dml does.
//
// The graph is dml's own (topology::build over the live members), so the
// puts go to the same peers. Before timing, the program runs both for a few
// steps from the same start and checks that every member ends with exactly
// the same vector (bit for bit: both add the inputs in in-neighbour order,
// then divide); a mismatch is an error (exit 1).
//
// Timing: per configuration both exist side by side, warm up, and then run
// in alternating rounds (dml, hand, hand, dml, dml, hand, hand, dml) sized
// to the time budget; each reports its fastest round, in ms per step on the
// slowest rank. Alternating short rounds exposes both to the same drift in
// the load of a shared machine.
//
//   mpiexec -n <p> bench_put_loop [--quick] [--max-floats N] [--csv FILE]
//
// Rank 0 prints a markdown table; --csv appends one row per configuration (a
// header line first when the file is new):
//   processes,floats,topology,consistency,dml_ms,hand_ms,ratio,bytes_per_member
// with ms per step on the slowest rank, ratio = dml_ms / hand_ms, and the
// bytes each dml member sent per step from the vector's statistics (mean
// over members; the hand-written loop sends 40 bytes less per out-neighbour:
// dml's slot header and footer).
#define DML_BENCH_WITH_MPI 1
#include "../examples/common/cli.hpp"
#include "common.hpp"

#include <dml/comm/mpi_rma.hpp>
#include <dml/dml.hpp>

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>

namespace {

using namespace bench;

enum class policy { bsp, notify_ack };

const char* name(policy p) { return p == policy::bsp ? "bsp" : "notify_ack"; }

struct settings {
  bool quick = false;
  std::size_t max_floats = std::size_t{16} << 20;
  std::string csv;
};

// Above this much receive memory over all ranks (dml's and the hand-written
// loop's together) a configuration is skipped: topology::all at 8 processes
// and 16 M floats would need about 18 GB.
constexpr double memory_limit_bytes = 6e9;

void check(int rc, const char* call) {
  if (rc != MPI_SUCCESS) throw std::runtime_error(std::string("bench_put_loop: ") + call + " failed");
}

std::size_t position(std::span<const dml::member_id> list, dml::member_id m) {
  return static_cast<std::size_t>(std::lower_bound(list.begin(), list.end(), m) - list.begin());
}

// ---- the hand-written loop ----------------------------------------------------

/// One member's side of the exchange, written directly against MPI-3 RMA.
/// Window layout on member m (bytes, displacement unit 1):
///   notify_ack only: in(m) notify counters, then out(m) ack counters (uint64)
///   then in(m) × 2 slots of n floats, sender q's slots together.
class hand_loop {
 public:
  hand_loop(MPI_Comm comm, const dml::topology::graph& g, std::size_t n, bool shared, policy pol)
      : comm_(comm), n_(n), pol_(pol), depth_(2), x_(n, 0.0f) {
    int r = 0;
    MPI_Comm_rank(comm_, &r);
    me_ = static_cast<dml::member_id>(r);
    const auto in = g.in(me_);
    const auto out = g.out(me_);
    slot_bytes_ = sizeof(float) * n_;
    auto ctrl_bytes = [&](dml::member_id m) -> std::size_t {
      return pol_ == policy::notify_ack ? 8 * (g.in(m).size() + g.out(m).size()) : 0;
    };
    for (const dml::member_id t : out) {
      const std::size_t pos = position(g.in(t), me_);
      out_.push_back({static_cast<int>(t), static_cast<MPI_Aint>(ctrl_bytes(t) + pos * depth_ * slot_bytes_),
                      static_cast<MPI_Aint>(8 * pos)});
    }
    for (const dml::member_id s : in) {
      const std::size_t ack = g.in(s).size() + position(g.out(s), me_);
      in_.push_back({static_cast<int>(s), 0, static_cast<MPI_Aint>(8 * ack)});
    }
    const std::size_t own_ctrl = ctrl_bytes(me_);
    const std::size_t bytes = own_ctrl + in.size() * depth_ * slot_bytes_;
    MPI_Info info = MPI_INFO_NULL;
    check(MPI_Info_create(&info), "MPI_Info_create");
    MPI_Info_set(info, "accumulate_ops", "same_op_no_op");  // counters see only SUM and NO_OP
    void* base = nullptr;
    if (shared) {
      MPI_Info_set(info, "alloc_shared_noncontig", "true");
      check(MPI_Win_allocate_shared(static_cast<MPI_Aint>(bytes), 1, info, comm_, &base, &win_),
            "MPI_Win_allocate_shared");
    } else {
      check(MPI_Win_allocate(static_cast<MPI_Aint>(bytes), 1, info, comm_, &base, &win_), "MPI_Win_allocate");
    }
    MPI_Info_free(&info);
    if (bytes != 0) std::memset(base, 0, bytes);
    slots_ = reinterpret_cast<const float*>(static_cast<const char*>(base) + own_ctrl);
    check(MPI_Win_lock_all(MPI_MODE_NOCHECK, win_), "MPI_Win_lock_all");
    MPI_Win_sync(win_);
    MPI_Barrier(comm_);  // nobody writes before every window is zeroed
  }
  hand_loop(const hand_loop&) = delete;
  hand_loop& operator=(const hand_loop&) = delete;
  ~hand_loop() {
    MPI_Win_flush_all(win_);
    MPI_Barrier(comm_);
    MPI_Win_unlock_all(win_);
    MPI_Win_free(&win_);
  }

  std::span<float> span() { return x_; }
  /// Payload bytes this member puts per step.
  [[nodiscard]] double bytes_per_step() const { return static_cast<double>(out_.size() * slot_bytes_); }

  void step() {
    ++t_;
    const std::size_t d = t_ % 2;
    if (pol_ == policy::bsp) {
      put_all(static_cast<MPI_Aint>(d * slot_bytes_));
      MPI_Win_flush_all(win_);
      MPI_Barrier(comm_);
      MPI_Win_sync(win_);
      average(d);
    } else {
      if (t_ > 1)
        for (std::size_t k = 0; k < out_.size(); ++k) wait_counter(in_.size() + k, t_ - 1);
      put_all(static_cast<MPI_Aint>(d * slot_bytes_));
      MPI_Win_flush_all(win_);  // the data lands before the notify
      for (const auto& o : out_)
        MPI_Accumulate(&one_, 1, MPI_UINT64_T, o.rank, o.counter, 1, MPI_UINT64_T, MPI_SUM, win_);
      MPI_Win_flush_all(win_);
      for (std::size_t q = 0; q < in_.size(); ++q) wait_counter(q, t_);
      MPI_Win_sync(win_);
      average(d);
      for (const auto& i : in_)
        MPI_Accumulate(&one_, 1, MPI_UINT64_T, i.rank, i.counter, 1, MPI_UINT64_T, MPI_SUM, win_);
      MPI_Win_flush_all(win_);
    }
  }

 private:
  struct peer {
    int rank;
    MPI_Aint slot;     // out-neighbour: displacement of my slots on it
    MPI_Aint counter;  // out: my notify counter on it; in: my ack counter on it
  };

  void put_all(MPI_Aint offset) {
    const int count = static_cast<int>(n_);
    for (const auto& o : out_)
      MPI_Put(x_.data(), count, MPI_FLOAT, o.rank, o.slot + offset, count, MPI_FLOAT, win_);
  }

  // own = (own + Σ slots) / (1 + in-degree), inputs in in-neighbour order.
  void average(std::size_t d) {
    if (in_.empty()) return;
    float* x = x_.data();
    for (std::size_t q = 0; q < in_.size(); ++q) {
      const float* s = slots_ + (q * depth_ + d) * n_;
      for (std::size_t i = 0; i < n_; ++i) x[i] += s[i];
    }
    const auto k = static_cast<float>(in_.size() + 1);
    for (std::size_t i = 0; i < n_; ++i) x[i] /= k;
  }

  // Polls an own counter with atomic reads until it reaches `at_least`.
  // MPI has no primitive for this wait, so it backs off as dml's waits do
  // (spin, then yield, then sleep 20 us, later 200 us): with ranks sharing
  // cores a pure spin starves the peer it waits for, and using dml's
  // schedule keeps the comparison about the data path.
  void wait_counter(std::size_t word, std::uint64_t at_least) {
    const auto start = std::chrono::steady_clock::now();
    for (unsigned spins = 0;; ++spins) {
      std::uint64_t ignored = 0, value = 0;
      MPI_Fetch_and_op(&ignored, &value, MPI_UINT64_T, static_cast<int>(me_), static_cast<MPI_Aint>(8 * word),
                       MPI_NO_OP, win_);
      MPI_Win_flush_local(static_cast<int>(me_), win_);
      if (value >= at_least) return;
      if (spins >= 512)
        std::this_thread::sleep_for(std::chrono::microseconds(spins < 4096 ? 20 : 200));
      else if (spins >= 64)
        std::this_thread::yield();
      if (spins % 1024 == 1023 && std::chrono::steady_clock::now() - start > std::chrono::seconds(120))
        throw std::runtime_error("bench_put_loop: hand-written loop waited 120 s for a counter");
    }
  }

  MPI_Comm comm_;
  std::size_t n_;
  policy pol_;
  std::size_t depth_;
  std::vector<float> x_;
  dml::member_id me_ = 0;
  std::size_t slot_bytes_ = 0;
  std::vector<peer> out_, in_;
  MPI_Win win_ = MPI_WIN_NULL;
  const float* slots_ = nullptr;
  std::uint64_t t_ = 0;
  const std::uint64_t one_ = 1;
};

// ---- measuring ---------------------------------------------------------------

// One timed round: `steps` steps, seconds per step on the slowest rank.
// `sync` is a barrier of the thing measured.
template <class Step, class Sync>
double timed_round(Step&& step, Sync&& sync, int steps) {
  sync();
  const auto t0 = std::chrono::steady_clock::now();
  for (int s = 0; s < steps; ++s) step();
  const double t = seconds_since(t0) / steps;
  sync();
  return max_over_ranks(t);
}

void fill(std::span<float> x, dml::member_id rank) {
  for (std::size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>(rank) + 0.25f * static_cast<float>(i % 13);
}

template <class Cons>
constexpr policy policy_of() {
  return std::is_same_v<Cons, dml::consistency::bsp> ? policy::bsp : policy::notify_ack;
}

// Both run `steps` steps from the same start; every member must end with
// the same vector. Returns the number of elements that differ, over all
// members.
template <class Topo, class Cons>
long long mismatches(dml::comm::mpi_rma& comm, MPI_Comm hand_comm, std::size_t n, int steps) {
  std::vector<float> from_dml;
  {
    auto v = dml::make_vector<float>(comm, n, Topo{}, Cons{}, dml::gather::average{});
    fill(v.span(), comm.rank());
    for (int s = 0; s < steps; ++s) {
      v.scatter();
      v.gather();
    }
    from_dml.assign(v.span().begin(), v.span().end());
    v.barrier();
  }
  const auto g = dml::topology::build(Topo{}, std::span<const dml::member_id>(comm.view().live));
  hand_loop h(hand_comm, g, n, comm.shared_windows(), policy_of<Cons>());
  fill(h.span(), comm.rank());
  for (int s = 0; s < steps; ++s) h.step();
  long long bad = 0;
  for (std::size_t i = 0; i < n; ++i) bad += h.span()[i] != from_dml[i] ? 1 : 0;
  long long total = 0;
  MPI_Allreduce(&bad, &total, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  return total;
}

// ---- output ------------------------------------------------------------------

struct report {
  bool root = false;
  std::size_t processes = 0;
  std::FILE* csv = nullptr;

  void skipped(std::size_t n, std::string_view topo, policy pol) const {
    if (!root) return;
    std::printf("| %6s | %-13s | %-10s | %10s | %10s | %6s | %12s | %12s |\n", human_floats(n).c_str(),
                std::string(topo).c_str(), name(pol), "skipped", "(memory)", "", "", "");
    std::fflush(stdout);
  }
  void row(std::size_t n, std::string_view topo, policy pol, double dml_s, double hand_s, double dml_bytes,
           double hand_bytes) const {
    if (!root) return;
    std::printf("| %6s | %-13s | %-10s | %10.4f | %10.4f | %6.2f | %12s | %12s |\n", human_floats(n).c_str(),
                std::string(topo).c_str(), name(pol), dml_s * 1e3, hand_s * 1e3, dml_s / hand_s,
                human_bytes(dml_bytes).c_str(), human_bytes(hand_bytes).c_str());
    std::fflush(stdout);
    if (csv) {
      std::fprintf(csv, "%zu,%zu,%s,%s,%.6f,%.6f,%.4f,%.0f\n", processes, n, std::string(topo).c_str(),
                   name(pol), dml_s * 1e3, hand_s * 1e3, dml_s / hand_s, dml_bytes);
      std::fflush(csv);
    }
  }
};

// Rounds per measurement, alternating dml, hand, hand, dml, dml, hand, ...:
// on a shared machine the load drifts, and alternating short rounds exposes
// both to the same drift; the fastest round of each counts.
constexpr int rounds = 4;

// One configuration. The dml vector and the hand-written loop's window
// exist side by side (for the alternation), and each warms up (first touch
// of its slots) before anything is timed.
template <class Topo, class Cons>
void compare(dml::comm::mpi_rma& comm, MPI_Comm hand_comm, std::size_t n, double budget, const report& out) {
  const auto g = dml::topology::build(Topo{}, std::span<const dml::member_id>(comm.view().live));
  double in_edges = 0;
  for (const dml::member_id m : comm.view().live) in_edges += static_cast<double>(g.in(m).size());
  // dml: two slots and an inbox per in-neighbour; hand: two slots.
  if (in_edges * 5.0 * sizeof(float) * static_cast<double>(n) > memory_limit_bytes) {
    out.skipped(n, Topo{}.name(), policy_of<Cons>());
    return;
  }
  auto v = dml::make_vector<float>(comm, n, Topo{}, Cons{}, dml::gather::average{});
  fill(v.span(), comm.rank());
  hand_loop h(hand_comm, g, n, comm.shared_windows(), policy_of<Cons>());
  fill(h.span(), comm.rank());
  auto dml_step = [&] {
    v.scatter();
    v.gather();
  };
  auto dml_sync = [&] { v.barrier(); };
  auto hand_step = [&] { h.step(); };
  auto hand_sync = [&] { MPI_Barrier(hand_comm); };

  // Warm up, then size the rounds from one step of each.
  dml_step();
  const double dml_one = timed_round(dml_step, dml_sync, 1);
  hand_step();
  const double hand_one = timed_round(hand_step, hand_sync, 1);
  const int dml_steps = steps_for(dml_one, budget / rounds);
  const int hand_steps = steps_for(hand_one, budget / rounds);

  const auto sent0 = v.stats().bytes_sent;
  const auto scatters0 = v.stats().scatters;
  double dml_s = 1e300, hand_s = 1e300;
  for (int r = 0; r < rounds; ++r) {
    if (r % 2 == 0) dml_s = std::min(dml_s, timed_round(dml_step, dml_sync, dml_steps));
    hand_s = std::min(hand_s, timed_round(hand_step, hand_sync, hand_steps));
    if (r % 2 == 1) dml_s = std::min(dml_s, timed_round(dml_step, dml_sync, dml_steps));
  }
  const double dml_bytes = mean_over_ranks(static_cast<double>(v.stats().bytes_sent - sent0) /
                                           static_cast<double>(v.stats().scatters - scatters0));
  const double hand_bytes = mean_over_ranks(h.bytes_per_step());
  out.row(n, Topo{}.name(), policy_of<Cons>(), dml_s, hand_s, dml_bytes, hand_bytes);
}

template <class F>
void for_each_config(F&& f) {
  using namespace dml;
  f.template operator()<topology::halton, consistency::bsp>();
  f.template operator()<topology::halton, consistency::notify_ack>();
  f.template operator()<topology::root_expander, consistency::bsp>();
  f.template operator()<topology::root_expander, consistency::notify_ack>();
  f.template operator()<topology::all, consistency::bsp>();
  f.template operator()<topology::all, consistency::notify_ack>();
}

int run(dml::comm::mpi_rma& comm, MPI_Comm hand_comm, int argc, char** argv) {
  const bool root = comm.rank() == 0;
  settings opt;
  const auto app =
      cli::app("bench_put_loop", R"(dml's mpi_rma exchange next to a hand-written MPI one-sided loop doing the
same puts (bench/README.md). Run under mpiexec with 2 or more processes.)");
  app->add_flag("--quick", opt.quick, "fewer sizes and shorter timings");
  app->add_option("--max-floats", opt.max_floats, "largest vector, default 16M floats")
      ->option_text("N")
      ->check(cli::whole_number());
  app->add_option("--csv", opt.csv, "also append the rows to FILE")
      ->option_text("FILE")
      ->check(cli::not_empty());
  try {
    if (!cli::parse(*app, argc, argv, root)) return 0;  // --help
  } catch (const cli::usage_error& e) {
    if (root) std::fprintf(stderr, "bench_put_loop: %s (see --help)\n", e.what());
    return 2;
  }
  if (comm.size() < 2) {
    if (root) std::fprintf(stderr, "bench_put_loop: needs at least 2 processes (mpiexec -n 2 or more)\n");
    return 2;
  }
  report out;
  out.root = root;
  out.processes = comm.size();
  int csv_ok = 1;
  if (root && !opt.csv.empty()) {
    out.csv =
        open_csv(opt.csv, "processes,floats,topology,consistency,dml_ms,hand_ms,ratio,bytes_per_member");
    csv_ok = out.csv != nullptr ? 1 : 0;
  }
  MPI_Bcast(&csv_ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (!csv_ok) {
    if (root) std::fprintf(stderr, "bench_put_loop: cannot write %s\n", opt.csv.c_str());
    return 1;
  }

  // The hand-written loop must compute what dml computes.
  constexpr std::size_t check_floats = 1003;  // odd: dml pads its last word
  constexpr int check_steps = 5;
  bool agree = true;
  for_each_config([&]<class Topo, class Cons>() {
    const long long bad = mismatches<Topo, Cons>(comm, hand_comm, check_floats, check_steps);
    if (bad != 0) {
      agree = false;
      if (root)
        std::fprintf(stderr,
                     "bench_put_loop: mismatch: after %d steps of %zu floats with %s + %s the hand-written "
                     "loop's vector differs from dml's in %lld elements (over all members)\n",
                     check_steps, check_floats, std::string(Topo{}.name()).c_str(), name(policy_of<Cons>()),
                     bad);
    }
  });
  if (!agree) return 1;

  std::vector<std::size_t> sizes{std::size_t{1} << 10, std::size_t{1} << 16, std::size_t{1} << 20};
  if (!opt.quick) sizes.push_back(std::size_t{16} << 20);
  const double budget = opt.quick ? 0.1 : 0.4;
  if (root) {
    std::printf(
        "dml vs a hand-written MPI one-sided loop: %zu processes, mpi_rma with %s windows, "
        "scatter()+gather() "
        "(gather::average) per step\n",
        comm.size(), comm.shared_windows() ? "shared (MPI_Win_allocate_shared)" : "MPI_Win_allocate");
    std::printf(
        "time = ms per step (slowest rank, fastest of %d alternating rounds); ratio = dml / hand; sent = "
        "bytes per member "
        "per step (dml: vector statistics, hand: counted payload)\n",
        rounds);
    std::printf("check: hand-written loop == dml bit for bit after %d steps, all %d configurations\n\n",
                check_steps, 6);
    std::printf(
        "| floats | topology      | consistency| dml ms     | hand ms    | ratio  | dml sent     | hand sent "
        "   |\n");
    std::printf(
        "|-------:|---------------|------------|-----------:|-----------:|-------:|-------------:|-----------"
        "--:|\n");
  }
  for (const std::size_t n : sizes) {
    if (n > opt.max_floats) continue;
    for_each_config([&]<class Topo, class Cons>() { compare<Topo, Cons>(comm, hand_comm, n, budget, out); });
  }
  if (out.csv) std::fclose(out.csv);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Exchanges with no computation between them: the advice to exchange
  // less often would be printed for every configuration and means nothing here.
  dml::set_advice(false);
  try {
    dml::comm::mpi_rma comm(argc, argv);  // starts MPI
    MPI_Comm hand_comm = MPI_COMM_NULL;
    MPI_Comm_dup(MPI_COMM_WORLD, &hand_comm);
    const int rc = run(comm, hand_comm, argc, argv);
    MPI_Comm_free(&hand_comm);
    return rc;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_put_loop: %s\n", e.what());
    int up = 0, down = 0;
    MPI_Initialized(&up);
    MPI_Finalized(&down);
    if (up && !down) MPI_Abort(MPI_COMM_WORLD, 1);  // the others may be waiting for this member
  }
  return 1;
}

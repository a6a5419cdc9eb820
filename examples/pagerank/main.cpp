// SPDX-License-Identifier: BSL-1.0
// dml-pagerank: PageRank by power iteration on a dml parameter table, over
// in-process ranks or MPI processes.
//
// The serial algorithm (serial_pagerank() below), with N nodes, damping
// d = 0.85 and out(u) the out-degree of u:
//
//     x_0 = 1/N everywhere
//     x_k[v] = (1 - d)/N + d * D_{k-1}/N + d * sum over edges u->v of x_{k-1}[u] / out(u)
//
// where D_{k-1} is the rank mass of the dangling nodes (no out-edges),
// spread uniformly. Ranks sum to 1.
//
// On a table. Nodes are cut into blocks of --block nodes, and each block
// has a row of doubles in each of two sets; each set also has a base row
// holding the uniform part (1 - d)/N + d * D/N in its element 0, so
// x[v] = base + row[v / B][v % B] (rows_layout below). Member m owns the
// edges of the source nodes of the blocks it owns (block b on the
// (b mod n)-th live member, which is also where the table puts both of its
// rows, so a member reads its own rows). At iteration k a member reads
// x_{k-1} of its nodes and computes its contribution c_{m,k}:
// d * x[u] / out(u) to the row of every target of its edges, and
// d * D_m/N plus its nodes' share of the teleport (1 - d)/N to the base row.
//
// A table only accumulates, so a member adds the *difference* between its
// new contribution and the one it gave that set before: iteration k writes
// set k mod 2 and reads set (k - 1) mod 2, and each member's differences
// in a set telescope to its latest contribution there. Why two sets: under
// bsp a read at clock k includes every member's updates of clocks 0..k-1,
// but may also include updates of clock k by members that ended it
// already (the bound is a lower bound). With one set, a fast member's
// iteration-k difference would leak into a slow member's iteration-k read.
// With two, the set read at clock k is next written at clock k + 1, which
// no member reaches before this member's clock k ends (its clock k + 1
// reads wait for it): iteration k reads exactly x_{k-1}, the values of the
// serial power iteration (ctest compares them to 1e-6 in L1; measured
// about 1e-14). Under ssp and asp a read may miss a member's newest
// difference for a row and see an older contribution of the same set
// instead: each row is a sum of whole contributions of slightly older
// iterations, and under ssp the iteration still converges to the same
// fixed point (it is a contraction by d). Under asp nothing bounds how old:
// a member that runs ahead can end its iterations on values that never
// included the others' (see docs/tables.md).
//
// Clock 0 writes x_0 (each member its nodes' share of 1/N into set 0's
// base row). Iteration k runs at clock k. The L1 change of iteration j is
// summed in element j mod B of a row after the two sets, by each member for
// its nodes at clock j + 1; the leader prints iteration j once its copy of
// that row includes every member's clock j + 1 (age() >= j + 1), which
// under bsp is one iteration later and under ssp / asp when it happens,
// and the rest after the final sync(). It is the same table: a member
// waiting in one table serves only that table's rings, so waits across two
// tables could deadlock.
//
// Failures: the table withdraws a dead member's updates and keeps the
// survivors' (docs/tables.md). The shards are computed over the live view
// at every iteration and a survivor adds new-minus-given as always, so the
// dead member's nodes would get their contribution from their new owner
// at the next iteration. The iteration is a contraction, so the
// survivors' ranks return to the fixed point the iteration converges to
// (--kill R@I stops member R at the start of iteration I, --kill-after R@S
// S seconds after the start, at its next transport operation, start-up and
// the last report included; both tested).
#include <dml/error.hpp>
#include <dml/io.hpp>
#include <dml/random.hpp>
#include <dml/table.hpp>

#include "../common/cli.hpp"
#include "../common/launcher.hpp"
#include "../common/same_input.hpp"
#include "../common/table_app.hpp"
#include "edges.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace {

using pagerank::graph;
using pagerank::read_edges;
using pagerank::too_big;

using trainer::usage_error;

constexpr double damping = 0.85;
/// The largest graph --generate makes.
constexpr std::uint64_t max_generated = std::uint64_t{1} << 26;
/// --check-serial: the largest L1 distance to the serial power iteration.
constexpr double serial_tolerance = 1e-6;

struct settings {
  std::string edges, out, write_edges, transport = "inproc", consistency = "bsp";
  std::uint64_t generate = 0, seed = 1;
  std::size_t iterations = 30, ranks = 4, block = 64;
  bool serial = false, check_serial = false, ranks_given = false;
  std::vector<std::pair<std::size_t, std::size_t>> kill_at;  // --kill R@I: member R stops at iteration I
  trainer::kill_plan kill_after;                             // --kill-after R@S
};

// ---- a power-law graph with a fixed seed -----------------------------------------------

/// Draws from dml::splitmix64: the same numbers on every platform.
struct random_bits {
  explicit random_bits(std::uint64_t seed) : gen(seed) {}
  dml::splitmix64 gen;
  std::uint64_t next() { return gen(); }
  double unit() { return static_cast<double>((next() >> 11) + 1) * 0x1.0p-53; }  // (0, 1]
  std::uint64_t below(std::uint64_t n) { return next() % n; }
};

/// N nodes; a node has no out-edges with probability 0.1, otherwise a
/// Pareto-distributed out-degree (tail exponent 1.5, at least 1, at most
/// 1000); each edge's target copies the target of an earlier edge with
/// probability 0.8 (preferential attachment: in-degrees follow a power law)
/// and is uniform otherwise; no self-loops.
graph generate(std::uint64_t nodes, std::uint64_t seed) {
  graph g;
  g.nodes = nodes;
  g.name = "generated (" + std::to_string(nodes) + " nodes, seed " + std::to_string(seed) + ")";
  random_bits rng{seed};
  for (std::uint64_t u = 0; u < nodes; ++u) {
    if (rng.unit() < 0.1) continue;
    const double pareto = std::pow(rng.unit(), -1.0 / 1.5);
    const auto k = static_cast<std::uint64_t>(std::min(1000.0, std::floor(pareto)));
    for (std::uint64_t e = 0; e < k; ++e) {
      std::uint64_t v =
          !g.dst.empty() && rng.unit() < 0.8 ? g.dst[rng.below(g.dst.size())] : rng.below(nodes);
      if (v == u) v = (u + 1) % nodes;
      g.src.push_back(static_cast<std::uint32_t>(u));
      g.dst.push_back(static_cast<std::uint32_t>(v));
    }
  }
  if (g.src.empty()) {  // tiny graphs: at least one edge
    g.src.push_back(0);
    g.dst.push_back(static_cast<std::uint32_t>(nodes - 1));
  }
  return g;
}

void write_edges(const graph& g, const std::string& path, const settings& s) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "w"), &std::fclose);
  if (!f) throw std::runtime_error("cannot write " + path);
  std::fprintf(f.get(), "# dml-pagerank --generate %llu --seed %llu: %llu nodes, %zu edges (src dst)\n",
               static_cast<unsigned long long>(s.generate), static_cast<unsigned long long>(s.seed),
               static_cast<unsigned long long>(g.nodes), g.edges());
  for (std::size_t i = 0; i < g.edges(); ++i) std::fprintf(f.get(), "%u %u\n", g.src[i], g.dst[i]);
  if (std::fflush(f.get()) != 0) throw std::runtime_error("cannot write " + path);
}

/// The edges by source, and the dangling nodes counted.
void index_by_source(graph& g) {
  g.first.assign(g.nodes + 1, 0);
  for (std::uint32_t u : g.src) ++g.first[u + 1];
  for (std::uint64_t u = 0; u < g.nodes; ++u) g.first[u + 1] += g.first[u];
  g.targets.resize(g.edges());
  std::vector<std::uint64_t> at(g.first.begin(), g.first.end() - 1);
  for (std::size_t i = 0; i < g.edges(); ++i) g.targets[at[g.src[i]]++] = g.dst[i];
  g.dangling = 0;
  for (std::uint64_t u = 0; u < g.nodes; ++u) g.dangling += g.out_degree(u) == 0 ? 1 : 0;
}

// ---- progress ----------------------------------------------------------------------------

// An L1 change is a sum over the nodes, each counted by its owner. It is
// n/a when the owners' counts do not add up to every node: a failure
// withdrew what the dead member added (docs/tables.md), and a member that
// took over nodes had no earlier value of theirs to compare with.
struct change_sum {
  double change = 0, counted = 0;
};

std::string change_text(const change_sum& c, std::uint64_t nodes) {
  if (c.counted != static_cast<double>(nodes)) return "n/a";
  char text[32];
  std::snprintf(text, sizeof text, "%.6e", c.change);
  return text;
}

void print_iteration(std::size_t k, double seconds, const change_sum& c, std::uint64_t nodes) {
  if (c.counted != static_cast<double>(nodes))
    std::printf(
        "iteration %3zu  %8.3f s  L1 change n/a (summed over %.0f of %llu nodes: the members changed)\n", k,
        seconds, c.counted, static_cast<unsigned long long>(nodes));
  else
    std::printf("iteration %3zu  %8.3f s  L1 change %.6e\n", k, seconds, c.change);
  std::fflush(stdout);
}

struct outcome {
  std::vector<double> ranks;  // x_K (the leader's)
  change_sum change;
  double seconds = 0;
  std::size_t iterations = 0;
  std::size_t unrepaired = 0;  // an iteration the members changed in, fewer than K before the end
  bool done = false;
};

void print_final(const outcome& r, const graph& g);

// ---- the serial reference --------------------------------------------------------------

/// Plain power iteration over the edge list, written independently of the
/// table version (no blocks, no CSR): what --serial runs and --check-serial
/// compares with.
outcome serial_pagerank(const graph& g, std::size_t iterations, bool verbose) {
  const auto start = std::chrono::steady_clock::now();
  const std::uint64_t n = g.nodes;
  const double nd = static_cast<double>(n);
  std::vector<std::uint64_t> out(n, 0);
  for (std::uint32_t u : g.src) ++out[u];
  std::vector<double> x(n, 1.0 / nd), y(n);
  outcome r;
  for (std::size_t k = 1; k <= iterations; ++k) {
    double dangling = 0;
    for (std::uint64_t u = 0; u < n; ++u)
      if (out[u] == 0) dangling += x[u];
    std::fill(y.begin(), y.end(), (1 - damping) / nd + damping * dangling / nd);
    for (std::size_t i = 0; i < g.edges(); ++i)
      y[g.dst[i]] += damping * x[g.src[i]] / static_cast<double>(out[g.src[i]]);
    r.change = {0, nd};
    for (std::uint64_t u = 0; u < n; ++u) r.change.change += std::abs(y[u] - x[u]);
    x.swap(y);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (verbose) print_iteration(k, r.seconds, r.change, n);
  }
  r.ranks = std::move(x);
  r.iterations = iterations;
  r.done = true;
  return r;
}

// ---- on a table ----------------------------------------------------------------------------

/// Where things are in the table. The nodes are cut into blocks of B; each
/// block has a row in each of two sets (iteration k writes set k mod 2 and
/// reads set (k - 1) mod 2), each set has a base row, and then come the
/// rows of the L1 changes, B iterations to a row. Block rows are laid out
/// so that, with `group` members, both rows of block b are where the table
/// puts them without an access pattern (row r on the (r mod n)-th member):
/// on the (b mod group)-th member, which owns block b's nodes.
struct rows_layout {
  std::size_t B, blocks, group, block_rows, iterations;

  rows_layout(std::uint64_t nodes, std::size_t block, std::size_t members, std::size_t iterations_)
      : B(block),
        blocks(static_cast<std::size_t>((nodes + block - 1) / block)),
        group(members),
        iterations(iterations_) {
    block_rows = 2 * group * ((blocks + group - 1) / group);
  }
  [[nodiscard]] std::size_t row(std::size_t set, std::size_t b) const {
    return (b / group) * 2 * group + set * group + b % group;
  }
  [[nodiscard]] std::size_t base(std::size_t set) const { return block_rows + set; }
  [[nodiscard]] std::size_t change(std::size_t j) const { return block_rows + 2 + j / B; }
  /// The nodes whose change went into change(j), in element j mod B.
  [[nodiscard]] std::size_t counted(std::size_t j) const { return change(iterations) + 1 + j / B; }
  [[nodiscard]] std::size_t rows() const { return counted(iterations) + 1; }
};

/// --consistency as a run-time policy (a table over `any` reads the slack
/// when it is built: one instantiation of the loop per transport).
dml::consistency::any pagerank_consistency(const settings& s) {
  if (s.consistency == "ssp") return dml::consistency::any::ssp(2);
  if (s.consistency == "asp") return dml::consistency::asp{};
  return dml::consistency::bsp{};
}

outcome table_pagerank(trainer::launcher& launch, const graph& g, const settings& s) {
  outcome result;
  launch.run([&](auto& comm) {
    const std::uint64_t n = g.nodes;
    const double nd = static_cast<double>(n);
    // K iterations, and after a failure more: up to K after the last
    // iteration the members changed in, at most 2K in all (see below).
    const std::size_t K = s.iterations, most = 2 * K;
    const rows_layout at(n, s.block, comm.size(), most);
    const std::size_t B = at.B, blocks = at.blocks;
    // One table for everything: a member that waits in one table serves
    // only that table's rings, so waits across two tables could deadlock.
    auto t = dml::make_table<double>(comm, at.rows(), B, pagerank_consistency(s));

    // This member's blocks (recomputed when the view changes) and its last
    // reads of their nodes (for the L1 change).
    std::vector<std::size_t> mine;
    std::vector<double> seen;
    std::uint64_t view_epoch = ~std::uint64_t{0}, owned_nodes = 0;
    auto plan = [&] {
      const auto view = comm.view();
      if (view.epoch == view_epoch) return;
      view_epoch = view.epoch;
      const std::vector<std::size_t> had = std::move(mine);
      const std::vector<double> had_seen = std::move(seen);
      mine.clear();
      owned_nodes = 0;
      const auto& live = view.live;
      for (std::size_t b = 0; b < blocks; ++b)
        if (live[b % live.size()] == comm.rank()) {
          mine.push_back(b);
          owned_nodes += std::min<std::uint64_t>(B, n - b * B);
        }
      // The last reads of the blocks kept; NaN (none) for those taken over.
      seen.assign(mine.size() * B, std::nan(""));
      for (std::size_t i = 0, j = 0; i < mine.size(); ++i) {
        while (j < had.size() && had[j] < mine[i]) ++j;
        if (j < had.size() && had[j] == mine[i])
          std::copy_n(had_seen.begin() + static_cast<std::ptrdiff_t>(j * B), B,
                      seen.begin() + static_cast<std::ptrdiff_t>(i * B));
      }
    };
    // Per set: what this member has given to each row (its last
    // contribution there), and the rows it ever gave to.
    std::vector<double> next(blocks * B, 0.0), delta(B, 0.0);
    std::vector<double> given[2] = {std::vector<double>(blocks * B, 0.0),
                                    std::vector<double>(blocks * B, 0.0)};
    double given_base[2] = {0, 0};
    std::vector<char> is_touched(blocks, 0);
    std::vector<std::size_t> touched;

    // Replaces this member's contribution to `set` by `next` and `base`.
    auto give = [&](std::size_t set, double base) {
      auto& was = given[set];
      for (std::size_t b : touched) {
        bool any = false;
        for (std::size_t e = 0; e < B; ++e) {
          delta[e] = next[b * B + e] - was[b * B + e];
          any = any || delta[e] != 0;
          was[b * B + e] = next[b * B + e];
        }
        if (any) t.update(at.row(set, b), delta);
      }
      std::fill(delta.begin(), delta.end(), 0.0);
      delta[0] = base - given_base[set];
      given_base[set] = base;
      t.update(at.base(set), delta);
    };
    // Reads x of this member's nodes from `set`, sums the L1 change against
    // the last read into `change` (over the nodes read before, counted),
    // and calls f(u, x_u) for every node.
    auto read_mine = [&](std::size_t set, change_sum& change, auto&& f) {
      const double base = t.read(at.base(set))[0];
      change = {};
      for (std::size_t i = 0; i < mine.size(); ++i) {
        const std::size_t b = mine[i];
        const auto row = t.read(at.row(set, b));  // valid until the next table call
        const auto count = static_cast<std::size_t>(std::min<std::uint64_t>(B, n - b * B));
        for (std::size_t e = 0; e < count; ++e) {
          const double x = base + row[e];
          if (!std::isnan(seen[i * B + e])) {
            change.change += std::abs(x - seen[i * B + e]);
            change.counted += 1;
          }
          seen[i * B + e] = x;
          f(b * B + e, x);
        }
      }
    };
    // This member's share of the L1 change of iteration j (at clock j + 1),
    // and how many nodes it summed.
    auto add_change = [&](std::size_t j, const change_sum& change) {
      std::fill(delta.begin(), delta.end(), 0.0);
      delta[j % B] = change.change;
      t.update(at.change(j), delta);
      delta[j % B] = change.counted;
      t.update(at.counted(j), delta);
    };
    auto change_of = [&](std::size_t j) {
      return change_sum{t.read(at.change(j))[j % B], t.read(at.counted(j))[j % B]};
    };

    const auto start = std::chrono::steady_clock::now();
    std::vector<double> seconds(most + 1, 0.0);
    std::size_t changes_printed = 0;
    // Every member goes through the iteration lines as the leader prints
    // them, and prints them only while it leads: a successor of a leader
    // that died goes on from where it got to, not from iteration 1. Who
    // leads is asked after each line's reads, which may be where this
    // member learns of the failure. (Under bsp every member reaches the
    // same line in the same iteration; a line the leader died just before
    // printing, after a successor passed it, is not printed again.)
    std::size_t printed = 1;  // the next iteration whose line is due
    // The lines up to `upto` whose sums every member's clock includes.
    auto print_complete = [&](std::size_t upto) {
      for (; printed <= upto; ++printed) {
        const change_sum c = change_of(printed);
        if (t.age(at.change(printed)) < static_cast<std::int64_t>(printed) + 1 ||
            t.age(at.counted(printed)) < static_cast<std::int64_t>(printed) + 1)
          break;
        if (dml::io::leader(comm)) {
          trainer::print_view_changes(comm, changes_printed);
          print_iteration(printed, seconds[printed], c, n);
        }
      }
      if (dml::io::leader(comm)) trainer::print_view_changes(comm, changes_printed);
    };

    // Clock 0: x_0 = 1/N into set 0, this member's nodes' share of it.
    plan();
    give(0, static_cast<double>(owned_nodes) / (nd * nd));
    t.clock();
    // The run ends after `last` iterations: K, or after a failure as many
    // as it takes for K to follow the last iteration whose change is n/a
    // (the members changed in it). The table withdrew the dead member's
    // share of the ranks, and the iteration, a contraction by 0.85, shrinks
    // that loss (at most all of the mass, as far from the fixed point as
    // the uniform start) to what an undisturbed run's K iterations leave.
    // Every member decides at the same point, after a sync, from the same
    // counts, so all go on or stop together. `ended`: the last iteration
    // whose change an end already added.
    std::size_t last = K, ended = 0, changed_in = 0;
    for (std::size_t k = 1;; ++k) {
      if (k > last) {
        // The last change (x_last against x_{last-1}), then everything is
        // applied.
        plan();
        change_sum change;
        read_mine(last % 2, change, [](std::uint64_t, double) {});
        add_change(last, change);
        ended = last;
        t.sync();
        print_complete(last);
        // The counts since the last scan, B iterations to a row, in one
        // batch read (not two reads per iteration).
        const std::size_t from = changed_in + 1;
        std::vector<std::size_t> count_rows;
        for (std::size_t row = from / B; row <= last / B; ++row) count_rows.push_back(at.counted(row * B));
        const auto counts = t.read_rows(count_rows);
        for (std::size_t j = from; j <= last; ++j)
          if (counts[(j / B - from / B) * B + j % B] != nd) changed_in = j;
        const std::size_t wanted = changed_in == 0 ? K : std::min(most, changed_in + K);
        if (wanted <= last) break;
        if (dml::io::leader(comm)) {
          trainer::print_view_changes(comm, changes_printed);
          std::printf(
              "extending to %zu iterations: the members changed in iteration %zu; %zu more let the ranks "
              "return to the fixed point\n",
              wanted, changed_in, wanted - last);
          std::fflush(stdout);
        }
        last = wanted;
      }
      for (const auto& kill : s.kill_at)
        if (kill.first == comm.rank() && kill.second == k) trainer::stop_member(comm);
      plan();
      std::fill(next.begin(), next.end(), 0.0);
      double dangling = 0;
      change_sum change;
      read_mine((k - 1) % 2, change, [&](std::uint64_t u, double x) {
        const std::uint64_t deg = g.out_degree(u);
        if (deg == 0) {
          dangling += x;
          return;
        }
        const double share = damping * x / static_cast<double>(deg);
        for (std::uint64_t i = g.first[u]; i < g.first[u + 1]; ++i) {
          const std::size_t v = g.targets[i], b = v / B;
          next[v] += share;
          if (!is_touched[b]) {
            is_touched[b] = 1;
            touched.push_back(b);
          }
        }
      });
      give(k % 2, damping * dangling / nd + (1 - damping) * static_cast<double>(owned_nodes) / (nd * nd));
      if (k >= 2 && k - 1 != ended) add_change(k - 1, change);  // x_{k-1} against x_{k-2}
      t.clock();
      seconds[k] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      print_complete(k - 1);
    }
    const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    auto read_result = [&](outcome& r) {
      r.change = change_of(last);
      r.ranks.assign(n, 0.0);
      const double base = t.read(at.base(last % 2))[0];
      // Every block in one batch read: a fetch per owner, not one per block.
      std::vector<std::size_t> block_rows(blocks);
      for (std::size_t b = 0; b < blocks; ++b) block_rows[b] = at.row(last % 2, b);
      const auto all = t.read_rows(block_rows);
      for (std::size_t b = 0; b < blocks; ++b)
        for (std::size_t e = 0; e < B && b * B + e < n; ++e) r.ranks[b * B + e] = base + all[b * B + e];
      r.seconds = total;
      r.iterations = last;
      // Fewer than K iterations after the members last changed: the
      // failure came too late even for 2K.
      r.unrepaired = changed_in != 0 && changed_in + K > last ? changed_in : 0;
      r.done = true;
    };
    if (launch.in_process()) {
      if (dml::io::leader(comm)) read_result(result);
      t.sync();  // nobody leaves while the leader reads its rows
      return;
    }
    // Under MPI every member reads the result, so that a successor of a
    // leader that dies from here on holds it; the 'final:' line is printed
    // here (trainer::print_final_surviving), the rest by main() on the
    // member that printed it.
    outcome held;
    read_result(held);
    t.sync();  // nobody leaves while the others read
    trainer::print_final_surviving(launch, comm, [&] {
      trainer::print_view_changes(comm, changes_printed);
      result = std::move(held);
      print_final(result, g);
    });
  });
  return result;
}

// ---- output --------------------------------------------------------------------------------

double sum_of(const std::vector<double>& x) {
  double t = 0;
  for (double v : x) t += v;
  return t;
}

/// `node rank` lines, ranks scaled to sum to 1.
void write_ranks(const std::string& path, const std::vector<double>& x) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "w"), &std::fclose);
  if (!f) throw std::runtime_error("cannot write " + path);
  const double total = sum_of(x);
  for (std::size_t u = 0; u < x.size(); ++u) std::fprintf(f.get(), "%zu %.12g\n", u, x[u] / total);
  if (std::fflush(f.get()) != 0) throw std::runtime_error("cannot write " + path);
}

void print_final(const outcome& r, const graph& g) {
  std::printf("final: iterations=%zu change=%s sum=%.12f seconds=%.3f nodes=%llu edges=%zu\n", r.iterations,
              change_text(r.change, g.nodes).c_str(), sum_of(r.ranks), r.seconds,
              static_cast<unsigned long long>(g.nodes), g.edges());
  std::fflush(stdout);
}

/// --check-serial: the L1 distance between r and the serial iteration.
bool check_against_serial(const outcome& r, const graph& g, std::size_t iterations) {
  const outcome ref = serial_pagerank(g, iterations, false);
  double distance = 0;
  for (std::size_t u = 0; u < ref.ranks.size(); ++u) distance += std::abs(r.ranks[u] - ref.ranks[u]);
  std::printf("check: serial power iteration, %zu iterations, %.3f s\n", iterations, ref.seconds);
  std::printf("check: L1 distance %.3e (must be below %g)\n", distance, serial_tolerance);
  const bool ok = distance < serial_tolerance;
  std::printf("check: %s\n", ok ? "passed" : "FAILED");
  return ok;
}

// ---- command line ------------------------------------------------------------------------

constexpr const char* description =
    R"(PageRank (damping 0.85, dangling nodes' mass spread uniformly) by power
iteration on a dml parameter table: each rank owns the edges of a share of
the source nodes and adds its contribution to the next iteration's ranks.
Input: --edges FILE, one 'src dst' pair of 0-based node ids (< 2^31) per
line, '#' comments; or --generate N, a power-law graph with a fixed seed.)";

constexpr const char* footer =
    R"(Prints one line per iteration (iteration, seconds, L1 change of the ranks)
and finally 'final: iterations=... change=... sum=... seconds=... nodes=...
edges=...'. After a failure the run goes on until K iterations follow
the last one the members changed in (at most 2K). Bad arguments exit
with 2, bad input files with 1, a failure too late for that with 3.)";

bool parse(int argc, char** argv, settings& s) {
  const auto app = cli::app("dml-pagerank", description, footer);
  app->add_option("--edges", s.edges, "edge list: lines 'src dst'")
      ->option_text("FILE")
      ->check(cli::not_empty());
  app->add_option("--generate", s.generate, "instead of --edges: a power-law graph of N nodes")
      ->option_text("N")
      ->check(cli::number_where<std::uint64_t>([](std::uint64_t v) { return v >= 2 && v <= max_generated; },
                                               "needs 2 .. 2^26 nodes"));
  app->add_option("--seed", s.seed, "seed of --generate, default 1")
      ->option_text("N")
      ->check(cli::whole_number<std::uint64_t>(0));
  app->add_option("--write-edges", s.write_edges, "write the --generate graph to FILE and exit")
      ->option_text("FILE")
      ->check(cli::not_empty());
  app->add_option("--iterations", s.iterations, "power iterations, default 30")
      ->option_text("K")
      ->check(cli::number_where<std::size_t>([](std::size_t v) { return v >= 1 && v <= 100000; },
                                             "needs 1 .. 100000 iterations"));
  app->add_option("--out", s.out, "write 'node rank' lines (ranks sum to 1)")
      ->option_text("FILE")
      ->check(cli::not_empty());
  app->add_option("--transport", s.transport,
                  "inproc (threads, default) | mpi_rma | mpi (one rank per\nMPI process: mpiexec -n N "
                  "dml-pagerank --transport mpi_rma)")
      ->option_text("NAME")
      ->check(cli::one_of({"inproc", "mpi_rma", "mpi"}));
  app->add_option("--ranks", s.ranks, "in-process ranks (threads) for inproc, default 4")
      ->option_text("N")
      ->check(cli::whole_number());
  app->add_option("--consistency", s.consistency, "bsp | ssp (slack 2) | asp, default bsp")
      ->option_text("NAME")
      ->check(cli::one_of({"bsp", "ssp", "asp"}));
  app->add_option("--block", s.block, "nodes per table row, default 64")
      ->option_text("N")
      ->check(cli::number_where<std::size_t>([](std::size_t v) { return v >= 1 && v <= 4096; },
                                             "needs 1 .. 4096 nodes per row"));
  app->add_option_function<std::vector<std::string>>(
         "--kill",
         [&s](const std::vector<std::string>& kills) {
           for (const auto& k : kills) s.kill_at.push_back(*trainer::member_at<std::size_t>(k, 1));
         },
         "fault injection (in-process): member R stops at the start\nof iteration I (up to twice "
         "--iterations: reached\nonly when a failure extends the run); repeatable")
      ->option_text("R@I")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->check(CLI::Validator(
          [](std::string& v) {
            return trainer::member_at<std::size_t>(v, 1)
                       ? std::string()
                       : "needs MEMBER@iteration (e.g. 2@3, iterations from 1), got '" + v + "'";
          },
          "R@I"));
  trainer::add_kill_after(*app, s.kill_after);
  app->add_flag("--serial", s.serial, "the serial power iteration only (no table)");
  app->add_flag(
      "--check-serial", s.check_serial,
      "also run the serial power iteration and require an L1\ndistance below 1e-6 (exit 1 otherwise)");
  if (!cli::parse(*app, argc, argv)) return false;
  s.ranks_given = app->count("--ranks") > 0;
  if (s.edges.empty() == (s.generate == 0)) throw usage_error("give either --edges FILE or --generate N");
  if (!s.write_edges.empty() && s.generate == 0) throw usage_error("--write-edges writes a --generate graph");
  if (s.ranks > 256)
    throw usage_error("--ranks " + std::to_string(s.ranks) + " is too many (at most 256 threads)");
  if (s.transport != "inproc" && s.ranks_given)
    throw usage_error("--ranks is for --transport inproc; with " + s.transport +
                      " every MPI process is one rank (mpiexec -n N)");
  if (s.serial && s.transport != "inproc")
    throw usage_error("--serial runs in this process (--transport inproc)");
  if (s.serial && s.check_serial)
    throw usage_error("--check-serial compares a table run with --serial; not both");
  if (!s.kill_at.empty() && (s.transport != "inproc" || s.serial))
    throw usage_error("--kill is for in-process ranks of a table run; under MPI kill a process from outside");
  if (!s.kill_after.empty() && s.serial)
    throw usage_error("--kill-after is for in-process ranks of a table run");
  trainer::check_kills(s.kill_after, s.transport, s.ranks);
  std::vector<char> killed(s.ranks, 0);
  for (const auto& k : s.kill_after) killed[k.first] = 1;
  for (const auto& [member, iteration] : s.kill_at) {
    if (member >= s.ranks)
      throw usage_error("--kill " + std::to_string(member) + "@...: there are only " +
                        std::to_string(s.ranks) + " ranks");
    if (killed[member])
      throw usage_error("--kill: member " + std::to_string(member) +
                        " is killed twice (--kill, --kill-after)");
    killed[member] = 1;
    if (iteration > 2 * s.iterations)
      throw usage_error("--kill " + std::to_string(member) + "@" + std::to_string(iteration) +
                        ": the run has at most " + std::to_string(2 * s.iterations) + " iterations (" +
                        std::to_string(s.iterations) + ", up to twice that after a failure)");
  }
  if (!s.kill_at.empty() && static_cast<std::size_t>(std::count(killed.begin(), killed.end(), 1)) >= s.ranks)
    throw usage_error("every one of the " + std::to_string(s.ranks) +
                      " ranks would be killed; one must survive");
  return true;
}

/// The graph's fingerprint, compared between processes under MPI.
std::uint64_t hash_of(const graph& g) {
  trainer::fingerprint f;
  f.add(g.nodes);
  f.add_span(std::span<const std::uint32_t>(g.src));
  f.add_span(std::span<const std::uint32_t>(g.dst));
  return f.value();
}

}  // namespace

int main(int argc, char** argv) {
  settings s;
  try {
    if (!parse(argc, argv, s)) return 0;  // --help
  } catch (const usage_error& e) {
    std::fprintf(stderr, "dml-pagerank: %s (see --help)\n", e.what());
    return 2;
  }
  try {
    if (!s.write_edges.empty()) {
      const graph g = generate(s.generate, s.seed);
      write_edges(g, s.write_edges, s);
      std::printf("dml-pagerank: wrote %llu nodes, %zu edges to %s\n",
                  static_cast<unsigned long long>(g.nodes), g.edges(), s.write_edges.c_str());
      return 0;
    }
    // Starts MPI for mpi_rma / mpi; in-process, plans the --kill-after deaths.
    trainer::launcher launch(s.transport, s.ranks, argc, argv, trainer::planned_kills(s.kill_after));
    const std::size_t members_here = launch.in_process() && !s.serial ? s.ranks : 1;
    graph g;
    // Every process reads the whole graph: under MPI they compare what they
    // read (read_agreed), since a file that differs between machines would
    // mix two graphs into one wrong answer, and a read that failed on one
    // process fails on all, with its message, instead of leaving the
    // others waiting.
    trainer::read_agreed(
        launch, "dml-pagerank",
        [&] {
          if (s.generate != 0) {
            if (const std::string big = too_big(s.generate, 6 * s.generate, members_here); !big.empty())
              throw usage_error("--generate " + std::to_string(s.generate) + " needs " + big);
            g = generate(s.generate, s.seed);
          } else {
            g = read_edges(s.edges, members_here);
          }
          index_by_source(g);
        },
        [&] {
          return std::pair(hash_of(g), std::to_string(g.nodes) + " nodes, " + std::to_string(g.edges()) +
                                           " edges from " + g.name);
        },
        "the graph");
    if (launch.leader())
      std::printf(
          "dml-pagerank: %s: %llu nodes, %zu edges, %llu dangling; %s, %zu iterations, block %zu\n",
          g.name.c_str(), static_cast<unsigned long long>(g.nodes), g.edges(),
          static_cast<unsigned long long>(g.dangling),
          s.serial ? "serial"
                   : (std::to_string(s.ranks) + " ranks, " + s.transport + ", consistency " + s.consistency)
                         .c_str(),
          s.iterations, s.block);
    const outcome r = s.serial ? serial_pagerank(g, s.iterations, true) : table_pagerank(launch, g, s);
    // In-process (and --serial) the leader's result; under MPI the member
    // that printed the 'final:' line holds it.
    if (!r.done || (launch.in_process() && !launch.leader())) return 0;
    if (s.serial || launch.in_process()) print_final(r, g);
    // A failure too late for the 2K iterations to follow it with K: the
    // ranks still lack part of the dead member's share. They are not the
    // result asked for: say so and write nothing.
    if (r.unrepaired != 0) {
      std::fprintf(stderr,
                   "dml-pagerank: the members changed in iteration %zu of at most %zu, too late for %zu "
                   "iterations to follow: the ranks lack part of a failed member's share (they sum to %.6f, "
                   "not 1); %srun again\n",
                   r.unrepaired, 2 * s.iterations, s.iterations, sum_of(r.ranks),
                   s.out.empty() ? "" : "--out not written; ");
      return 3;
    }
    if (!s.out.empty()) write_ranks(s.out, r.ranks);
    if (s.check_serial && !check_against_serial(r, g, s.iterations)) return 1;
  } catch (const trainer::agreed_error& e) {  // the same on every process: the leader says it
    return trainer::agreed_failure("dml-pagerank", e);
  } catch (const usage_error& e) {
    std::fprintf(stderr, "dml-pagerank: %s (see --help)\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dml-pagerank: %s\n", e.what());
    return 1;
  }
}

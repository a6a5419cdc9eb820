// SPDX-License-Identifier: BSL-1.0
// bench_iterstore: IterStore's comparison (Cui's thesis §3.4.2-§3.4.3) at
// small scale. Time per iteration of PageRank, matrix factorization (MF)
// and LDA on a dml::table under bsp, with the four specializations of
// docs/tables.md all off, each on alone, all on with the access pattern from
// a virtual iteration, all on with the pattern from the first real
// iterations; and PageRank and MF on dml::parameter_server (two vectors over
// topology::star), which moves the whole model up and down every step.
//
// One run is one configuration; bench/iterstore.sh interleaves them and
// takes medians. Every run does the same iterations: clock 0 writes the
// initial model; `warm` (2) iterations, recorded or not; a sync(); one more
// untimed iteration (it refills the caches the sync dropped); then the timed
// iterations and a final sync(). The line printed gives the leader's time
// per timed iteration, the time before them (recording, end_recording,
// the warm iterations: what IterStore calls preprocessing plus the first
// iterations), and a result to check that every configuration computed the
// same thing:
//   pagerank: L1 distance of the ranks to a serial power iteration with as
//             many iterations (the two-set scheme of dml-pagerank makes a
//             bsp table exact, about 1e-15);
//   mf:       the training RMSE of the final model (bsp reads may include
//             updates of the current clock of members that ended it
//             already, so runs differ a little);
//   lda:      the count error of the final table: |sum of the topic totals
//             - tokens| + |sum of the word rows - tokens| + negative counts
//             (0 when every update arrived exactly once).
#include <dml/error.hpp>
#include <dml/io.hpp>
#include <dml/random.hpp>
#include <dml/table.hpp>
#include <dml/vector/parameter_server.hpp>

#include "../examples/common/cli.hpp"
#include "../examples/common/launcher.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <span>
#include <string>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;

struct settings {
  std::string app = "pagerank", config = "off", transport = "inproc";
  std::size_t ranks = 4, iterations = 10, scale = 1;
  std::uint64_t seed = 1;
  bool quick = false;
};

/// Untimed iterations before the sync (recorded under the recording
/// configurations: PageRank alternates two sets of rows, so its pattern
/// repeats every two iterations).
constexpr std::size_t warm = 2;

/// Draws from dml::splitmix64: the same numbers on every platform.
struct random_bits {
  explicit random_bits(std::uint64_t seed) : gen(seed) {}
  dml::splitmix64 gen;
  std::uint64_t next() { return gen(); }
  double unit() { return static_cast<double>((next() >> 11) + 1) * 0x1.0p-53; }  // (0, 1]
  std::uint64_t below(std::uint64_t n) { return next() % n; }
  double normal() {  // Box-Muller
    const double a = unit(), b = unit();
    return std::sqrt(-2 * std::log(a)) * std::cos(6.283185307179586 * b);
  }
};

/// [first, end) of member m's share of `count` items among `n` members.
struct range {
  std::size_t first, end;
};
range share(std::size_t count, std::size_t m, std::size_t n) { return {count * m / n, count * (m + 1) / n}; }

/// What a configuration turns on, and how the pattern is learned.
struct table_config {
  dml::table_options options;
  bool record = false;
  dml::recording mode = dml::recording::virtual_iteration;
};

table_config config_of(const std::string& name) {
  table_config c;
  auto& o = c.options;
  o.place_rows = o.batch_updates = o.prefetch = o.static_cache = false;
  if (name == "off") return c;
  c.record = true;
  if (name == "place") o.place_rows = true;
  if (name == "batch") o.batch_updates = true;
  if (name == "prefetch") o.prefetch = true;
  if (name == "cache") o.static_cache = true;
  if (name == "all" || name == "all-real")
    o.place_rows = o.batch_updates = o.prefetch = o.static_cache = true;
  if (name == "all-real") c.mode = dml::recording::real_iteration;
  return c;
}

struct outcome {
  double per_iteration = 0, setup = 0, result = 0;
  /// Member 0's table counters per timed iteration (-1 on the parameter
  /// server): rows fetched from owners, update messages sent, and the
  /// share of its reads that were of rows it owns.
  double fetched = -1, messages = -1, own_share = -1;
};

// ---- PageRank ------------------------------------------------------------------------------

constexpr double damping = 0.85;

/// A power-law graph by source (CSR): a node has no out-edges with
/// probability 0.1, else a Pareto out-degree (exponent 1.5, at most 200);
/// a target copies an earlier edge's with probability 0.8 (in-degrees
/// follow a power law), else it is uniform.
struct graph {
  std::size_t nodes = 0;
  std::vector<std::size_t> first;
  std::vector<std::uint32_t> targets;
  [[nodiscard]] std::size_t degree(std::size_t u) const { return first[u + 1] - first[u]; }
};

graph make_graph(std::size_t nodes, std::uint64_t seed) {
  graph g;
  g.nodes = nodes;
  g.first.assign(nodes + 1, 0);
  random_bits rng{seed};
  for (std::size_t u = 0; u < nodes; ++u) {
    g.first[u + 1] = g.first[u];
    if (rng.unit() < 0.1) continue;
    const auto k = static_cast<std::size_t>(std::min(200.0, std::floor(std::pow(rng.unit(), -1.0 / 1.5))));
    for (std::size_t e = 0; e < k; ++e) {
      std::size_t v =
          !g.targets.empty() && rng.unit() < 0.8 ? g.targets[rng.below(g.targets.size())] : rng.below(nodes);
      if (v == u) v = (u + 1) % nodes;
      g.targets.push_back(static_cast<std::uint32_t>(v));
      ++g.first[u + 1];
    }
  }
  return g;
}

/// The serial power iteration (x_0 = 1/N), `iterations` times.
std::vector<double> serial_pagerank(const graph& g, std::size_t iterations) {
  const double n = static_cast<double>(g.nodes);
  std::vector<double> x(g.nodes, 1 / n), y(g.nodes);
  for (std::size_t k = 0; k < iterations; ++k) {
    double dangling = 0;
    for (std::size_t u = 0; u < g.nodes; ++u)
      if (g.degree(u) == 0) dangling += x[u];
    std::fill(y.begin(), y.end(), (1 - damping) / n + damping * dangling / n);
    for (std::size_t u = 0; u < g.nodes; ++u)
      for (std::size_t e = g.first[u]; e < g.first[u + 1]; ++e)
        y[g.targets[e]] += damping * x[u] / static_cast<double>(g.degree(u));
    x.swap(y);
  }
  return x;
}

double l1(const std::vector<double>& a, const std::vector<double>& b) {
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d += std::abs(a[i] - b[i]);
  return d;
}

/// PageRank on a table, as dml-pagerank computes it: x[v] = base + row[v],
/// nodes in blocks of `block` per row, two sets of rows (iteration k writes
/// set k mod 2 and reads set (k - 1) mod 2, so under bsp it reads exactly
/// x_{k-1}), and each member adds the difference between its new
/// contribution to a row and the one it gave that set before. Member m
/// owns a contiguous range of blocks (the source nodes whose edges it
/// follows); without placement row r lives on member r mod n, so three
/// quarters of a member's reads at 4 members are of rows others own.
/// (Unlike dml-pagerank, whose layout puts a block's rows on the member
/// that reads them: here that is left to place_rows, which may or may not
/// manage it -- docs/tables.md.)
struct pagerank_table {
  const graph& g;
  std::size_t block, blocks, member, members;
  range mine;
  std::vector<std::size_t> target_blocks;  // blocks this member's edges point into
  std::vector<double> x, fresh, given[2], delta;
  double base_given[2] = {0, 0};

  pagerank_table(const graph& gr, std::size_t b, std::size_t m, std::size_t n)
      : g(gr), block(b), blocks((gr.nodes + b - 1) / b), member(m), members(n) {
    mine = share(blocks, m, n);
    std::vector<char> hit(blocks, 0);
    for (std::size_t u = mine.first * block; u < std::min(g.nodes, mine.end * block); ++u)
      for (std::size_t e = g.first[u]; e < g.first[u + 1]; ++e) hit[g.targets[e] / block] = 1;
    for (std::size_t tb = 0; tb < blocks; ++tb)
      if (hit[tb]) target_blocks.push_back(tb);
    x.assign(g.nodes, 0);
    fresh.assign(g.nodes, 0);
    given[0].assign(g.nodes, 0);
    given[1].assign(g.nodes, 0);
    delta.assign(block, 0);
  }
  [[nodiscard]] std::size_t rows() const { return 2 * blocks + 2; }
  [[nodiscard]] std::size_t row_length() const { return block; }
  [[nodiscard]] std::size_t row(std::size_t set, std::size_t b) const { return set * blocks + b; }
  [[nodiscard]] std::size_t base(std::size_t set) const { return 2 * blocks + set; }

  template <class Table>
  void init(Table& t) {  // clock 0: x_0 = 1/N, all in set 0's base row (the leader's)
    if (member != 0) return;
    base_given[0] = 1 / static_cast<double>(g.nodes);
    std::fill(delta.begin(), delta.end(), 0.0);
    delta[0] = base_given[0];
    t.update(base(0), delta);
  }

  template <class Table>
  void iterate(Table& t, std::size_t k, bool virtual_pass) {
    const std::size_t rs = (k - 1) % 2, ws = k % 2;
    const double n = static_cast<double>(g.nodes);
    const double b0 = t.read(base(rs))[0];
    const std::size_t lo = mine.first * block, hi = std::min(g.nodes, mine.end * block);
    for (std::size_t b = mine.first; b < mine.end; ++b) {
      const auto r = t.read(row(rs, b));
      for (std::size_t i = 0; i < block && b * block + i < g.nodes; ++i) x[b * block + i] = b0 + r[i];
    }
    for (std::size_t tb : target_blocks)
      std::fill(fresh.begin() + static_cast<std::ptrdiff_t>(tb * block),
                fresh.begin() + static_cast<std::ptrdiff_t>(std::min(g.nodes, (tb + 1) * block)), 0.0);
    double dangling = 0;
    for (std::size_t u = lo; u < hi; ++u) {
      if (g.degree(u) == 0) {
        dangling += x[u];
        continue;
      }
      const double share_u = damping * x[u] / static_cast<double>(g.degree(u));
      for (std::size_t e = g.first[u]; e < g.first[u + 1]; ++e) fresh[g.targets[e]] += share_u;
    }
    for (std::size_t tb : target_blocks) {
      for (std::size_t i = 0; i < block; ++i) {
        const std::size_t v = tb * block + i;
        delta[i] = v < g.nodes ? fresh[v] - given[ws][v] : 0.0;
        if (v < g.nodes && !virtual_pass) given[ws][v] = fresh[v];
      }
      t.update(row(ws, tb), delta);
    }
    const double base_new = (1 - damping) * static_cast<double>(hi - lo) / n / n + damping * dangling / n;
    std::fill(delta.begin(), delta.end(), 0.0);
    delta[0] = base_new - base_given[ws];
    if (!virtual_pass) base_given[ws] = base_new;
    t.update(base(ws), delta);
    t.clock();
  }

  /// After the final sync, on the leader: L1 distance to the serial ranks.
  template <class Table>
  double result(Table& t, std::size_t last) {
    const std::size_t set = last % 2;
    const double b0 = t.read(base(set))[0];
    std::vector<double> ranks(g.nodes);
    for (std::size_t b = 0; b < blocks; ++b) {
      const auto r = t.read(row(set, b));
      for (std::size_t i = 0; i < block && b * block + i < g.nodes; ++i) ranks[b * block + i] = b0 + r[i];
    }
    return l1(ranks, serial_pagerank(g, last));
  }
};

/// PageRank on the parameter server: the model is x (N doubles); each
/// member's update is its whole contribution (its edges' rank mass and its
/// share of the uniform part), and the server's model becomes the sum of
/// the n contributions (n times their mean).
template <class Comm>
outcome pagerank_ps(Comm& comm, const graph& g, std::size_t block, std::size_t timed) {
  const std::size_t n = comm.size(), m = comm.rank();
  const std::size_t blocks = (g.nodes + block - 1) / block;
  const range mine = share(blocks, m, n);
  const std::size_t lo = mine.first * block, hi = std::min(g.nodes, mine.end * block);
  const double nodes = static_cast<double>(g.nodes), members = static_cast<double>(n);
  dml::parameter_server<double, Comm> ps(comm, g.nodes);
  std::fill(ps.model().begin(), ps.model().end(), 1 / nodes);
  auto step = [&] {
    const auto x = ps.model();
    const auto y = ps.update();
    double dangling = 0;
    for (std::size_t u = lo; u < hi; ++u)
      if (g.degree(u) == 0) dangling += x[u];
    std::fill(y.begin(), y.end(),
              (1 - damping) * static_cast<double>(hi - lo) / nodes / nodes + damping * dangling / nodes);
    for (std::size_t u = lo; u < hi; ++u)
      for (std::size_t e = g.first[u]; e < g.first[u + 1]; ++e)
        y[g.targets[e]] += damping * x[u] / static_cast<double>(g.degree(u));
    ps.step([&](std::span<double> w, std::span<const double> mean) {
      for (std::size_t i = 0; i < w.size(); ++i) w[i] = members * mean[i];
    });
  };
  outcome o;
  const auto start = clock_type::now();
  for (std::size_t k = 0; k <= warm; ++k) step();
  ps.barrier();
  const auto timed_start = clock_type::now();
  for (std::size_t k = 0; k < timed; ++k) step();
  ps.barrier();
  const auto end = clock_type::now();
  o.setup = std::chrono::duration<double>(timed_start - start).count();
  o.per_iteration = std::chrono::duration<double>(end - timed_start).count() / static_cast<double>(timed);
  const std::vector<double> ranks(ps.model().begin(), ps.model().end());
  o.result = l1(ranks, serial_pagerank(g, warm + 1 + timed));
  return o;
}

// ---- matrix factorization ------------------------------------------------------------------

struct rating {
  std::uint32_t user, item;
  double value;
};

/// A planted rank-`rank` matrix (entries N(0, 1/sqrt(rank)) per factor),
/// each entry observed with probability `density`, noise 0.1; ratings in
/// user order (IterStore groups a row's elements the same way).
struct mf_problem {
  std::size_t users, items, rank;
  std::vector<rating> ratings;
  double lr = 0.02, reg = 0.01;

  mf_problem(std::size_t u, std::size_t i, std::size_t r, double density, std::uint64_t seed)
      : users(u), items(i), rank(r) {
    random_bits rng{seed};
    const double scale = 1 / std::sqrt(std::sqrt(static_cast<double>(r)));
    std::vector<double> pu(u * r), pv(i * r);
    for (double& e : pu) e = scale * rng.normal();
    for (double& e : pv) e = scale * rng.normal();
    for (std::size_t a = 0; a < u; ++a)
      for (std::size_t b = 0; b < i; ++b) {
        if (rng.unit() >= density) continue;
        double dot = 0;
        for (std::size_t f = 0; f < r; ++f) dot += pu[a * r + f] * pv[b * r + f];
        ratings.push_back(
            {static_cast<std::uint32_t>(a), static_cast<std::uint32_t>(b), dot + 0.1 * rng.normal()});
      }
  }
  [[nodiscard]] std::size_t rows() const { return users + items; }
  /// The initial value of model row `row` (the same on every member).
  void initial(std::size_t row, std::span<double> out) const {
    random_bits rng{0x5eed0000ULL + row};
    for (double& e : out) e = 0.1 * rng.normal();
  }
  /// Member m's ratings: those of its contiguous range of users.
  [[nodiscard]] range mine(std::size_t m, std::size_t n) const {
    const range u = share(users, m, n);
    auto at = [&](std::size_t user) {
      return static_cast<std::size_t>(
          std::lower_bound(ratings.begin(), ratings.end(), user,
                           [](const rating& r, std::size_t x) { return r.user < x; }) -
          ratings.begin());
    };
    return {at(u.first), at(u.end)};
  }
  /// One SGD step on (u, v) for rating r: the deltas of both rows.
  void step(std::span<const double> u, std::span<const double> v, double value, std::span<double> du,
            std::span<double> dv) const {
    double e = value;
    for (std::size_t f = 0; f < rank; ++f) e -= u[f] * v[f];
    for (std::size_t f = 0; f < rank; ++f) {
      du[f] = lr * (e * v[f] - reg * u[f]);
      dv[f] = lr * (e * u[f] - reg * v[f]);
    }
  }
  [[nodiscard]] double rmse(std::span<const double> model) const {
    double sum = 0;
    for (const auto& r : ratings) {
      double e = r.value;
      for (std::size_t f = 0; f < rank; ++f)
        e -= model[r.user * rank + f] * model[(users + r.item) * rank + f];
      sum += e * e;
    }
    return std::sqrt(sum / static_cast<double>(ratings.size()));
  }
};

/// MF by SGD on a table: user rows then item rows; each iteration (one
/// clock) is a pass over the member's ratings, each step reading both
/// rows and adding both deltas.
struct mf_table {
  const mf_problem& p;
  std::size_t member, members;
  range mine;
  std::vector<double> u, v, du, dv;

  mf_table(const mf_problem& pr, std::size_t m, std::size_t n)
      : p(pr), member(m), members(n), mine(pr.mine(m, n)), u(pr.rank), v(pr.rank), du(pr.rank), dv(pr.rank) {}
  [[nodiscard]] std::size_t rows() const { return p.rows(); }
  [[nodiscard]] std::size_t row_length() const { return p.rank; }

  template <class Table>
  void init(Table& t) {
    for (std::size_t r = member; r < p.rows(); r += members) {
      p.initial(r, u);
      t.update(r, u);
    }
  }
  template <class Table>
  void iterate(Table& t, std::size_t, bool) {
    for (std::size_t i = mine.first; i < mine.end; ++i) {
      const rating& r = p.ratings[i];
      const std::size_t a = r.user, b = p.users + r.item;
      const auto ru = t.read(a);
      std::copy(ru.begin(), ru.end(), u.begin());
      const auto rv = t.read(b);
      std::copy(rv.begin(), rv.end(), v.begin());
      p.step(u, v, r.value, du, dv);
      t.update(a, du);
      t.update(b, dv);
    }
    t.clock();
  }
  template <class Table>
  double result(Table& t, std::size_t) {
    std::vector<double> model(p.rows() * p.rank);
    for (std::size_t r = 0; r < p.rows(); ++r) {
      const auto row = t.read(r);
      std::copy(row.begin(), row.end(), model.begin() + static_cast<std::ptrdiff_t>(r * p.rank));
    }
    return p.rmse(model);
  }
};

/// MF on the parameter server: each member runs its SGD pass on its copy
/// of the model (its own steps seen at once, the others' at the next
/// step, as a bsp table reads them), its update is the change of its
/// copy, and the server adds the n changes.
template <class Comm>
outcome mf_ps(Comm& comm, const mf_problem& p, std::size_t timed) {
  const std::size_t n = comm.size();
  const range mine = p.mine(comm.rank(), n);
  const std::size_t k = p.rank;
  dml::parameter_server<double, Comm> ps(comm, p.rows() * k);
  for (std::size_t r = 0; r < p.rows(); ++r) p.initial(r, ps.model().subspan(r * k, k));
  std::vector<double> local(ps.size()), du(k), dv(k);
  const double members = static_cast<double>(n);
  auto step = [&] {
    std::copy(ps.model().begin(), ps.model().end(), local.begin());
    const std::span<double> w(local);
    for (std::size_t i = mine.first; i < mine.end; ++i) {
      const rating& r = p.ratings[i];
      const auto u = w.subspan(r.user * k, k), v = w.subspan((p.users + r.item) * k, k);
      p.step(u, v, r.value, du, dv);
      for (std::size_t f = 0; f < k; ++f) {
        u[f] += du[f];
        v[f] += dv[f];
      }
    }
    const auto m = ps.model();
    const auto up = ps.update();
    for (std::size_t i = 0; i < local.size(); ++i) up[i] = local[i] - m[i];
    ps.step([&](std::span<double> model, std::span<const double> mean) {
      for (std::size_t i = 0; i < model.size(); ++i) model[i] += members * mean[i];
    });
  };
  outcome o;
  const auto start = clock_type::now();
  for (std::size_t i = 0; i <= warm; ++i) step();
  ps.barrier();
  const auto timed_start = clock_type::now();
  for (std::size_t i = 0; i < timed; ++i) step();
  ps.barrier();
  const auto end = clock_type::now();
  o.setup = std::chrono::duration<double>(timed_start - start).count();
  o.per_iteration = std::chrono::duration<double>(end - timed_start).count() / static_cast<double>(timed);
  o.result = p.rmse(ps.model());
  return o;
}

// ---- LDA -------------------------------------------------------------------------------------

/// A planted corpus: topic t favours words [t V/T, (t + 1) V/T) (80 % of
/// its tokens), each document mixes two topics.
struct corpus {
  std::size_t vocabulary, topics;
  std::vector<std::vector<std::uint32_t>> docs;
  std::size_t tokens = 0;

  corpus(std::size_t documents, std::size_t length, std::size_t v, std::size_t t, std::uint64_t seed)
      : vocabulary(v), topics(t) {
    random_bits rng{seed};
    const std::size_t slice = std::max<std::size_t>(1, v / t);
    docs.resize(documents);
    for (auto& d : docs) {
      const std::size_t a = rng.below(t), b = rng.below(t);
      for (std::size_t i = 0; i < length; ++i) {
        const std::size_t topic = rng.unit() < 0.5 ? a : b;
        const std::size_t w =
            rng.unit() < 0.8 ? std::min(v - 1, topic * slice + rng.below(slice)) : rng.below(v);
        d.push_back(static_cast<std::uint32_t>(w));
      }
      tokens += length;
    }
  }
};

/// Collapsed Gibbs sampling on a table: a row of topic counts per word and
/// one row of topic totals (IterStore's summation row, updated whenever a
/// token changes topic); the document-topic counts stay with the member
/// that owns the document (a contiguous range of documents).
struct lda_table {
  const corpus& c;
  std::size_t member, members;
  range mine;
  std::vector<std::vector<std::uint32_t>> z;  // topic of each token of this member's documents
  std::vector<std::vector<double>> doc_topics;
  std::vector<double> word, totals, p, delta;
  random_bits rng;
  double alpha = 0.1, beta = 0.01;

  lda_table(const corpus& co, std::size_t m, std::size_t n, std::uint64_t seed)
      : c(co), member(m), members(n), mine(share(co.docs.size(), m, n)), rng{seed * 7919 + m} {
    word.resize(c.topics);
    totals.resize(c.topics);
    p.resize(c.topics);
    delta.resize(c.topics);
  }
  [[nodiscard]] std::size_t rows() const { return c.vocabulary + 1; }
  [[nodiscard]] std::size_t row_length() const { return c.topics; }

  template <class Table>
  void init(Table& t) {  // random topics, counted word by word
    std::vector<std::vector<double>> counts(c.vocabulary);
    std::vector<double> sums(c.topics, 0.0);
    for (std::size_t d = mine.first; d < mine.end; ++d) {
      z.emplace_back();
      doc_topics.emplace_back(c.topics, 0.0);
      for (std::uint32_t w : c.docs[d]) {
        const auto topic = static_cast<std::uint32_t>(rng.below(c.topics));
        z.back().push_back(topic);
        doc_topics.back()[topic] += 1;
        if (counts[w].empty()) counts[w].assign(c.topics, 0.0);
        counts[w][topic] += 1;
        sums[topic] += 1;
      }
    }
    for (std::size_t w = 0; w < c.vocabulary; ++w)
      if (!counts[w].empty()) t.update(w, counts[w]);
    t.update(c.vocabulary, sums);
  }

  template <class Table>
  void iterate(Table& t, std::size_t, bool virtual_pass) {
    const double vbeta = static_cast<double>(c.vocabulary) * beta;
    for (std::size_t d = mine.first; d < mine.end; ++d) {
      auto& zd = z[d - mine.first];
      auto& nd = doc_topics[d - mine.first];
      for (std::size_t i = 0; i < zd.size(); ++i) {
        const std::uint32_t w = c.docs[d][i], old = zd[i];
        const auto rw = t.read(w);
        std::copy(rw.begin(), rw.end(), word.begin());
        const auto rt = t.read(c.vocabulary);
        std::copy(rt.begin(), rt.end(), totals.begin());
        double sum = 0;
        for (std::size_t k = 0; k < c.topics; ++k) {
          const double own = k == old ? 1.0 : 0.0;
          const double nwk = std::max(0.0, word[k] - own), nk = std::max(0.0, totals[k] - own);
          sum += (nd[k] - own + alpha) * (nwk + beta) / (nk + vbeta);
          p[k] = sum;
        }
        const double pick = rng.unit() * sum;
        std::uint32_t topic = 0;
        while (topic + 1 < c.topics && p[topic] < pick) ++topic;
        if (topic == old && !virtual_pass) continue;
        std::fill(delta.begin(), delta.end(), 0.0);
        delta[old] -= 1;
        delta[topic] += 1;
        t.update(w, delta);
        t.update(c.vocabulary, delta);
        if (virtual_pass) continue;
        zd[i] = topic;
        nd[old] -= 1;
        nd[topic] += 1;
      }
    }
    t.clock();
  }

  template <class Table>
  double result(Table& t, std::size_t) {
    double words = 0, sums = 0, negative = 0;
    for (std::size_t w = 0; w <= c.vocabulary; ++w)
      for (double e : t.read(w)) {
        (w < c.vocabulary ? words : sums) += e;
        negative += e < 0 ? 1 : 0;
      }
    const double n = static_cast<double>(c.tokens);
    return std::abs(words - n) + std::abs(sums - n) + negative;
  }
};

// ---- one table run ---------------------------------------------------------------------------

template <class App, class Comm>
outcome run_table(Comm& comm, App& app, const table_config& cfg, std::size_t timed) {
  auto t = dml::make_table<double>(comm, app.rows(), app.row_length(), dml::consistency::bsp{}, cfg.options);
  app.init(t);
  t.clock();
  const auto start = clock_type::now();
  if (cfg.record && cfg.mode == dml::recording::virtual_iteration) {
    t.begin_recording(cfg.mode);
    for (std::size_t k = 1; k <= warm; ++k) app.iterate(t, k, true);
    t.end_recording();
  }
  if (cfg.record && cfg.mode == dml::recording::real_iteration) t.begin_recording(cfg.mode);
  for (std::size_t k = 1; k <= warm; ++k) app.iterate(t, k, false);
  if (cfg.record && cfg.mode == dml::recording::real_iteration) t.end_recording();
  t.sync();
  app.iterate(t, warm + 1, false);
  const dml::table_stats before = t.stats();
  const auto timed_start = clock_type::now();
  for (std::size_t k = warm + 2; k < warm + 2 + timed; ++k) app.iterate(t, k, false);
  t.sync();
  const auto end = clock_type::now();
  const dml::table_stats after = t.stats();
  outcome o;
  const double k = static_cast<double>(timed);
  o.fetched = static_cast<double>(after.rows_fetched - before.rows_fetched) / k;
  o.messages = static_cast<double>(after.messages_sent - before.messages_sent) / k;
  o.own_share = static_cast<double>(after.own_reads - before.own_reads) /
                static_cast<double>(std::max<std::uint64_t>(1, after.reads - before.reads));
  o.setup = std::chrono::duration<double>(timed_start - start).count();
  o.per_iteration = std::chrono::duration<double>(end - timed_start).count() / static_cast<double>(timed);
  if (comm.rank() == 0) o.result = app.result(t, warm + 1 + timed);
  t.sync();  // nobody leaves while the leader reads
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  settings s;
  const auto app = cli::app("bench_iterstore",
                            "IterStore's specializations measured: time per iteration of PageRank, MF\n"
                            "and LDA on a bsp dml::table under one configuration (bench/iterstore.sh\n"
                            "runs them all).");
  app->add_option("--app", s.app, "pagerank | mf | lda, default pagerank")
      ->option_text("NAME")
      ->check(cli::one_of({"pagerank", "mf", "lda"}));
  app->add_option("--config", s.config,
                  "off | place | batch | prefetch | cache | all (virtual\niteration) | all-real (first real "
                  "iterations) | ps\n(dml::parameter_server; pagerank and mf), default off")
      ->option_text("NAME")
      ->check(cli::one_of({"off", "place", "batch", "prefetch", "cache", "all", "all-real", "ps"}));
  app->add_option("--transport", s.transport, "inproc (default) | mpi_rma (under mpiexec)")
      ->option_text("NAME")
      ->check(cli::one_of({"inproc", "mpi_rma"}));
  app->add_option("--ranks", s.ranks, "in-process ranks, 2..64, default 4")
      ->option_text("N")
      ->check(
          cli::number_where<std::size_t>([](std::size_t n) { return n >= 2 && n <= 64; }, "must be 2..64"));
  app->add_option("--iterations", s.iterations, "timed iterations, default 10")
      ->option_text("K")
      ->check(cli::whole_number());
  app->add_option("--seed", s.seed, "data seed, default 1")->option_text("N");
  app->add_flag("--quick", s.quick, "a tenth of the problem size (a smoke run)");
  try {
    if (!cli::parse(*app, argc, argv)) return 0;
    if (s.config == "ps" && s.app == "lda")
      throw cli::usage_error(
          "--config ps: there is no parameter-server version of lda (pagerank and mf have one)");
  } catch (const cli::usage_error& e) {
    std::fprintf(stderr, "bench_iterstore: %s (see --help)\n", e.what());
    return 2;
  }
  try {
    trainer::launcher launch(s.transport, s.ranks, argc, argv);
    if (s.ranks < 2)
      throw cli::usage_error("needs at least 2 ranks (the parameter server has a server and workers)");
    const std::size_t q = s.quick ? 10 : 1;
    const table_config cfg = config_of(s.config);
    outcome result;
    if (s.app == "pagerank") {
      const graph g = make_graph(100000 / q, s.seed);
      const std::size_t block = 8;
      launch.run([&](auto& comm) {
        outcome o;
        if (s.config == "ps") {
          o = pagerank_ps(comm, g, block, s.iterations);
        } else {
          pagerank_table a(g, block, comm.rank(), comm.size());
          o = run_table(comm, a, cfg, s.iterations);
        }
        if (comm.rank() == 0) result = o;
      });
    } else if (s.app == "mf") {
      const mf_problem p(2000 / q, 2000 / q, 16, 0.05, s.seed);
      launch.run([&](auto& comm) {
        outcome o;
        if (s.config == "ps") {
          o = mf_ps(comm, p, s.iterations);
        } else {
          mf_table a(p, comm.rank(), comm.size());
          o = run_table(comm, a, cfg, s.iterations);
        }
        if (comm.rank() == 0) result = o;
      });
    } else {
      const corpus c(1000 / q, 100, 5000 / q, 32, s.seed);
      launch.run([&](auto& comm) {
        lda_table a(c, comm.rank(), comm.size(), s.seed);
        const outcome o = run_table(comm, a, cfg, s.iterations);
        if (comm.rank() == 0) result = o;
      });
    }
    if (launch.leader()) {
      std::printf(
          "app=%s config=%s transport=%s ranks=%zu iterations=%zu per_iteration=%.6g setup=%.6g "
          "result=%.6g fetched=%.6g messages=%.6g own=%.6g\n",
          s.app.c_str(), s.config.c_str(), s.transport.c_str(), s.ranks, s.iterations, result.per_iteration,
          result.setup, result.result, result.fetched, result.messages, result.own_share);
      std::fflush(stdout);
    }
  } catch (const cli::usage_error& e) {
    std::fprintf(stderr, "bench_iterstore: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_iterstore: %s\n", e.what());
    return 1;
  }
  return 0;
}

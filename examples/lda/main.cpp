// SPDX-License-Identifier: BSL-1.0
// dml-lda: latent Dirichlet allocation by collapsed Gibbs sampling on a dml
// parameter table of 32-bit counts, over in-process ranks or MPI
// processes, on a corpus generated from the LDA model with planted topics
// (examples/common/lda_corpus.hpp) or read from a file (--corpus).
//
// The sampler (Griffiths and Steyvers; IterStore's LDA, Cui §2.4.3,
// Algorithm 2): every token has a topic z; n_wk counts the tokens of word w
// with topic k, n_k all tokens of topic k, n_dk those of document d. A step
// takes one token out of the counts and draws its topic again from
//
//     p(k) ∝ (n_dk + alpha) (n_wk + beta) / (n_k + V beta)
//
// and puts it back. On a table of int32 rows of K counts: the word rows
// (n_wk), one row of topic totals (n_k), the document rows (n_dk), and six
// rows of statistics. Updates are integer deltas (-1 for the old topic, +1
// for the new). Documents are split among the members once, at the start,
// so that document d goes to the member the table first puts its row on
// (its reads and updates of n_dk stay local), and a member keeps its
// tokens' topics in local memory. A member reads a word's row before each
// of its tokens, the totals once per document (its own changes are added
// locally meanwhile; a table read includes them as well), and ends a clock
// after every 1/--clocks of its documents. Its own changes are visible to
// it at once; the other members' arrive as the policy bounds them (under
// bsp all of the previous clocks). Each member's counts are those of its own
// tokens at every clock, so a read never shows a negative count.
//
// After every sweep the members sync() (collective: afterwards every read
// includes every count), each adds its share of log p(w, z) -- computed
// from the rows it owns, without fetching -- and its table statistics to a
// few extra rows, and they sync() again; the leader reads those rows and
// prints log p(w, z) per token. (A leader reading every row would pay a
// round trip per row over the two-sided transport.) At the end the leader
// reads the word rows and compares the learned topics with the planted
// ones by their top words.
//
// Failures: the table withdraws a dead member's counts, its documents leave
// the model (their rows become zero), and the survivors go on sampling
// theirs (ctest stops a member in sweep 10).
#include <dml/error.hpp>
#include <dml/io.hpp>
#include <dml/table.hpp>

#include "../common/cli.hpp"
#include "../common/launcher.hpp"
#include "../common/lda_corpus.hpp"
#include "../common/table_app.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <limits>
#include <numeric>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace {

using lda::corpus;
using lda::count;
using lda::counts_view;
using lda::doc_share;
using lda::draw;
using lda::generate;
using lda::match_topics;
using lda::recovery;
using lda::totals_share;
using lda::word_share;
using trainer::usage_error;

struct settings : trainer::table_settings, lda::corpus_settings {
  std::size_t iterations = 50, clocks = 1;
  double alpha = 0.1, beta = 0.01;
  std::string csv;
  bool virtual_iteration = false;
};

// ---- the table's rows ----------------------------------------------------------------------------

struct rows_layout {
  std::size_t V, D;
  [[nodiscard]] std::size_t word(std::size_t w) const { return w; }
  [[nodiscard]] std::size_t totals() const { return V; }
  [[nodiscard]] std::size_t doc(std::size_t d) const { return V + 1 + d; }
  /// Three rows (element 0) summing the members' shares of log p(w, z) in
  /// fixed point and the view each share was computed in (see loglik_rows).
  [[nodiscard]] std::size_t loglik() const { return V + 1 + D; }
  [[nodiscard]] std::size_t stats() const { return V + 4 + D; }
  [[nodiscard]] std::size_t rows() const { return stats() + trainer::table_stats_rows<count>::count; }
};
/// counts: a member writes its share in units of 1e-4 as hi * 2^20 + lo
/// (0 <= lo < 2^20) and adds the change of hi and lo since its last share
/// to the two rows, so the rows hold sums H and L of everyone's current
/// shares and the total is H * 2^20 + L, exact to 1e-4 (enough for a
/// per-token figure; 256 members' lo parts stay below 2^28).
/// A failure withdraws the dead member's share, and the survivors take
/// over its rows only in the shares they compute after it: the third row
/// sums the view (count of view changes) each member's share was computed
/// in, and the total is complete only when it is the live members' count
/// times the current view (`complete`). A member that finished the sync
/// before the failure reached it still holds a share of the old view.
class loglik_rows {
 public:
  explicit loglik_rows(std::size_t first) : first_(first) {}
  template <class Table>
  void set(Table& t, double share, std::size_t view) {
    const auto units = static_cast<std::int64_t>(std::llround(share * 1e4));
    const std::int64_t hi = floor_div(units, std::int64_t{1} << 20),
                       lo = units - hi * (std::int64_t{1} << 20);
    delta_.assign(t.row_length(), 0);
    delta_[0] = static_cast<count>(hi - hi_);
    t.update(first_, delta_);
    delta_[0] = static_cast<count>(lo - lo_);
    t.update(first_ + 1, delta_);
    delta_[0] = static_cast<count>(static_cast<std::int64_t>(view) - view_);
    t.update(first_ + 2, delta_);
    hi_ = hi;
    lo_ = lo;
    view_ = static_cast<std::int64_t>(view);
  }
  template <class Table>
  double total(Table& t) const {
    const double hi = t.read(first_)[0], lo = t.read(first_ + 1)[0];
    return (hi * (std::int64_t{1} << 20) + lo) * 1e-4;
  }
  /// Whether every one of `live` members' shares is in the table, computed
  /// in `view` (after a sync).
  template <class Table>
  bool complete(Table& t, std::size_t live, std::size_t view) const {
    return static_cast<std::int64_t>(t.read(first_ + 2)[0]) ==
           static_cast<std::int64_t>(live) * static_cast<std::int64_t>(view);
  }

 private:
  static std::int64_t floor_div(std::int64_t a, std::int64_t b) {
    return a >= 0 ? a / b : -((-a + b - 1) / b);
  }
  std::size_t first_;
  std::int64_t hi_ = 0, lo_ = 0, view_ = 0;
  std::vector<count> delta_;
};

// ---- on a table -----------------------------------------------------------------------------------

struct outcome {
  double loglik = 0, seconds = 0;
  std::size_t iterations = 0;
  counts_view counts;  // the final counts (leader)
  bool done = false;
};

void print_iteration(std::size_t it, double seconds, double ll, const std::string& table_line) {
  std::printf("iteration %3zu  %8.3f s  loglik %.5f  %s\n", it, seconds, ll, table_line.c_str());
  std::fflush(stdout);
}

outcome table_lda(trainer::launcher& launch, const settings& s, const corpus& c) {
  const std::size_t K = s.topics, D = c.documents();
  const rows_layout at{s.vocabulary, D};
  outcome result;
  launch.run([&](auto& comm) {
    using clock = std::chrono::steady_clock;
    auto t = dml::make_table<count>(comm, at.rows(), K, trainer::table_consistency(s));
    trainer::table_stats_rows<count> stats(at.stats());
    // This member's documents: those whose rows the table puts on it at
    // first (row r on the (r mod n)-th live member), fixed for the run.
    std::vector<std::size_t> mine;
    {
      const auto& live = comm.view().live;
      for (std::size_t d = 0; d < D; ++d)
        if (live[at.doc(d) % live.size()] == comm.rank()) mine.push_back(d);
    }
    std::vector<std::uint32_t> z(c.words.size(), 0);
    std::mt19937_64 rng(s.seed * 1000003 + 17 + comm.rank());
    std::vector<count> doc(K), totals(K), word(K), delta(K), doc_delta(K), totals_delta(K);
    std::vector<std::size_t> clock_rows;  // --read-ahead: the rows of a clock
    std::vector<double> p(K);
    const double Vb = static_cast<double>(s.vocabulary) * s.beta;

    // Clock 0: random topics for this member's tokens, and their counts.
    {
      std::vector<count> word_topic(s.vocabulary * K, 0);
      std::uniform_int_distribution<std::uint32_t> any(0, static_cast<std::uint32_t>(K - 1));
      std::fill(totals_delta.begin(), totals_delta.end(), 0);
      for (std::size_t d : mine) {
        std::fill(doc_delta.begin(), doc_delta.end(), 0);
        for (std::uint32_t j = c.first[d]; j < c.first[d + 1]; ++j) {
          z[j] = any(rng);
          ++word_topic[c.words[j] * K + z[j]];
          ++doc_delta[z[j]];
          ++totals_delta[z[j]];
        }
        t.update(at.doc(d), doc_delta);
      }
      for (std::size_t w = 0; w < s.vocabulary; ++w) {
        const std::span<const count> row(&word_topic[w * K], K);
        if (std::any_of(row.begin(), row.end(), [](count x) { return x != 0; })) t.update(at.word(w), row);
      }
      t.update(at.totals(), totals_delta);
    }
    t.clock();

    // One sweep over this member's documents, --clocks clocks. In a virtual
    // iteration it only reads and updates the rows a sweep touches (with
    // zero deltas), independent of the values.
    auto sweep = [&](std::size_t it, bool virtual_pass) {
      for (std::size_t part = 0; part < s.clocks; ++part) {
        if (!virtual_pass && part == s.clocks / 2 && trainer::killed_in(s, comm.rank(), it))
          trainer::stop_member(comm);
        const std::size_t from = mine.size() * part / s.clocks, to = mine.size() * (part + 1) / s.clocks;
        if (s.read_ahead) {
          // The word rows this clock's documents read, and the totals, in
          // one batch (the documents' rows are this member's own).
          clock_rows.assign(1, at.totals());
          for (std::size_t i = from; i < to; ++i)
            for (std::uint32_t j = c.first[mine[i]]; j < c.first[mine[i] + 1]; ++j)
              clock_rows.push_back(at.word(c.words[j]));
          trainer::read_ahead(t, clock_rows, comm.rank());
        }
        for (std::size_t i = from; i < to; ++i) {
          const std::size_t d = mine[i];
          if (virtual_pass) {
            std::fill(delta.begin(), delta.end(), 0);
            (void)t.read(at.doc(d));
            (void)t.read(at.totals());
            for (std::uint32_t j = c.first[d]; j < c.first[d + 1]; ++j) {
              (void)t.read(at.word(c.words[j]));
              t.update(at.word(c.words[j]), delta);
            }
            t.update(at.doc(d), delta);
            t.update(at.totals(), delta);
            continue;
          }
          const auto rd = t.read(at.doc(d));  // valid until the next table call: copied
          std::copy(rd.begin(), rd.end(), doc.begin());
          const auto rt = t.read(at.totals());
          std::copy(rt.begin(), rt.end(), totals.begin());
          std::fill(doc_delta.begin(), doc_delta.end(), 0);
          for (std::uint32_t j = c.first[d]; j < c.first[d + 1]; ++j) {
            const std::uint32_t w = c.words[j], old = z[j];
            const auto rw = t.read(at.word(w));
            std::copy(rw.begin(), rw.end(), word.begin());
            --doc[old];
            --word[old];
            --totals[old];
            double sum = 0;
            for (std::size_t k = 0; k < K; ++k) {
              // Counts of others read under the bound never go below 0; max()
              // only guards the arithmetic.
              const double nwk = std::max<count>(word[k], 0), nk = std::max<count>(totals[k], 0);
              sum += p[k] = (doc[k] + s.alpha) * (nwk + s.beta) / (nk + Vb);
            }
            const auto now = static_cast<std::uint32_t>(draw(rng, p, sum));
            ++doc[now];
            ++totals[now];
            if (now == old) continue;
            z[j] = now;
            std::fill(delta.begin(), delta.end(), 0);
            delta[old] = -1;
            delta[now] = 1;
            t.update(at.word(w), delta);
            --doc_delta[old];
            ++doc_delta[now];
          }
          if (std::any_of(doc_delta.begin(), doc_delta.end(), [](count x) { return x != 0; })) {
            t.update(at.doc(d), doc_delta);
            t.update(at.totals(), doc_delta);  // the totals change as the document's counts do
          }
        }
        t.clock();
      }
    };
    // The leader's copy of the word-topic counts (after a sync: exact).
    // One batch read: a fetch per owner, not a round trip per row.
    auto read_words = [&] {
      std::vector<std::size_t> rows(s.vocabulary);
      for (std::size_t w = 0; w < s.vocabulary; ++w) rows[w] = at.word(w);
      const auto all = t.read_rows(rows);
      return counts_view{std::vector<count>(all.begin(), all.end())};
    };
    // This member's share of log p(w, z): the word and document rows it
    // owns (its documents' rows are its own), and the totals if it owns them.
    auto own_share = [&] {
      const dml::member_id me = comm.rank();
      double ll = 0;
      for (std::size_t w = 0; w < s.vocabulary; ++w)
        if (t.owner(at.word(w)) == me) ll += word_share(t.read(at.word(w)), s.beta);
      for (std::size_t d = 0; d < D; ++d)
        if (t.owner(at.doc(d)) == me) ll += doc_share(t.read(at.doc(d)), s.alpha);
      if (t.owner(at.totals()) == me) ll += totals_share(t.read(at.totals()), Vb);
      return ll;
    };

    loglik_rows loglik(at.loglik());
    lda::csv_log csv(dml::io::leader(comm) ? s.csv : std::string());
    std::size_t changes_printed = 0;
    double seconds = 0;
    // After a sweep: sync (every count final); every member adds its
    // share of the log-likelihood and its statistics; sync; the leader
    // reads those rows, which nobody changes before the next sweep's first
    // sync -- which needs the leader.
    // The view this member is in, from 1 (see loglik_rows).
    auto view = [&] { return dml::fault::view_changes(comm).size() + 1; };
    // log p(w, z) per token, when every live member's share is in the
    // table (after a sync).
    auto read_loglik = [&]() -> std::optional<double> {
      if (!loglik.complete(t, comm.view().live.size(), view())) return std::nullopt;
      double tokens = 0;
      for (count x : t.read(at.totals())) tokens += x;  // every update keeps the sum
      return tokens > 0 ? loglik.total(t) / tokens : 0;
    };
    auto report = [&](std::size_t it, clock::time_point start) {
      t.sync();
      seconds += std::chrono::duration<double>(clock::now() - start).count();
      loglik.set(t, own_share(), view());
      stats.add(t);
      t.sync();
      if (dml::io::leader(comm)) {
        trainer::print_view_changes(comm, changes_printed);
        const auto ll = read_loglik();
        if (ll) {
          print_iteration(it, seconds, *ll, trainer::describe(stats.read(t)));
          csv.row(it, seconds, *ll);
          result.loglik = *ll;
        } else {  // a member failed during this report: some share is missing or of the old view
          std::printf("iteration %3zu  %8.3f s  loglik n/a (a member failed during this report)\n", it,
                      seconds);
          std::fflush(stdout);
        }
        result.seconds = seconds;
        result.iterations = it;
        if (it == s.iterations) {
          result.counts = read_words();
          result.done = true;
        }
      }
    };

    report(0, clock::now());
    for (std::size_t it = 1; it <= s.iterations; ++it) {
      const auto start = clock::now();
      if (it == 1 && s.virtual_iteration) {
        // IterStore's virtual iteration: one sweep's reads and updates are
        // recorded, not made, then the table specializes to them (counted
        // in iteration 1's time).
        t.begin_recording(dml::recording::virtual_iteration);
        sweep(it, true);
        t.end_recording();
      }
      sweep(it, false);
      report(it, start);
    }
    // The result's log-likelihood from every row, by whoever prints it: the
    // last report's may be incomplete (a failure during it), and a member
    // that reads every row after a sync needs nobody's share.
    t.sync();
    auto whole_loglik = [&] {
      double ll = 0, tokens = 0;
      for (std::size_t w = 0; w < s.vocabulary; ++w) ll += word_share(t.read(at.word(w)), s.beta);
      for (std::size_t d = 0; d < D; ++d) ll += doc_share(t.read(at.doc(d)), s.alpha);
      const auto totals = t.read(at.totals());
      ll += totals_share(totals, Vb);
      for (count x : totals) tokens += x;
      return tokens > 0 ? ll / tokens : 0;
    };
    if (launch.in_process()) {
      if (dml::io::leader(comm)) {
        trainer::print_view_changes(comm, changes_printed);
        if (!result.done) {  // took over from a leader that died in the last report
          result.counts = read_words();
          result.seconds = seconds;
          result.iterations = s.iterations;
          result.done = true;
        }
        result.loglik = whole_loglik();
      }
      t.sync();  // nobody leaves while the leader reads the final counts
      return;
    }
    // Under MPI every member reads the result, so that a successor of a
    // reporter that dies from here on holds it, and prints it here
    // (trainer::print_final_surviving); main() prints nothing more.
    outcome held;
    held.loglik = whole_loglik();
    held.seconds = seconds;
    held.iterations = s.iterations;
    held.counts = read_words();
    held.done = true;
    t.sync();  // nobody leaves while the others read
    trainer::print_final_surviving(launch, comm, [&] {
      trainer::print_view_changes(comm, changes_printed);
      lda::print_final(c, held.counts, s, held.loglik, held.seconds, held.iterations);
    });
  });
  return result;
}

// ---- command line -------------------------------------------------------------------------------

constexpr const char* description =
    R"(Latent Dirichlet allocation by collapsed Gibbs sampling on a dml parameter
table: the word-topic counts, the topic totals and the document-topic counts
are int32 rows of the table, every rank samples the topics of its documents'
tokens and adds the changes as integer deltas. The corpus is generated from
the LDA model: --topics planted topics over --vocabulary words (Dirichlet
--topic-prior), --documents documents of --length tokens with topic mixtures
from Dirichlet --doc-prior; or read from a --corpus file, one document per
line: 'doc word:count word:count ...' (ids whole numbers, words from 0, at
most 10^7 words, 10^5 tokens per document, 10^8 tokens).)";

constexpr const char* footer =
    R"(Prints one line per iteration (log p(w, z) per token, the table's statistics
summed over the ranks), how each planted topic's top words are found in the
learned topics, and finally 'final: loglik=<per token> seconds=<s>
recovery=<mean share of top words> least=<smallest share> iterations=<n>'
(from a --corpus file, with no planted topics: 'final: loglik=<per token>
seconds=<s> iterations=<n>'). An iteration during whose report a rank
failed prints 'loglik n/a': some rank's share of it was lost or computed
before the survivors took over the dead rank's rows; the final value is
computed anew after the last iteration.
Bad arguments exit with 2, other errors with 1.)";

bool parse(int argc, char** argv, settings& s) {
  const auto app = cli::app("dml-lda", description, footer);
  trainer::add_table_options(*app, s, "dml-lda", "iteration");
  trainer::add_read_ahead_option(*app, s);
  auto range = [](std::size_t lo, std::size_t hi, const std::string& what) {
    return cli::number_where<std::size_t>(
        [lo, hi](std::size_t v) { return v >= lo && v <= hi; },
        "needs " + std::to_string(lo) + " .. " + std::to_string(hi) + " " + what);
  };
  lda::add_corpus_options(*app, s);
  app->add_option("--iterations", s.iterations, "Gibbs sweeps over the corpus, default 50")
      ->option_text("N")
      ->check(range(1, 100000, "iterations"));
  app->add_option("--clocks", s.clocks,
                  "clocks per iteration (each rank's documents in as\nmany parts), default 1")
      ->option_text("N")
      ->check(range(1, 100000, "clocks"));
  app->add_option("--alpha", s.alpha, "the sampler's document-topic prior, default 0.1")
      ->option_text("X")
      ->check(cli::positive_number<double>());
  app->add_option("--beta", s.beta, "the sampler's topic-word prior, default 0.01")
      ->option_text("X")
      ->check(cli::positive_number<double>());
  app->add_option("--csv", s.csv, "also write 'iteration,seconds,loglik' rows to FILE")
      ->option_text("FILE")
      ->check(cli::not_empty());
  app->add_flag("--virtual-iteration", s.virtual_iteration,
                "record one sweep's accesses in a virtual iteration and\nspecialize the table to them");
  if (!cli::parse(*app, argc, argv)) return false;
  trainer::check_table_settings(*app, s, s.iterations, "iteration");
  lda::check_corpus_settings(*app, s);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  settings s;
  try {
    if (!parse(argc, argv, s)) return 0;  // --help
  } catch (const usage_error& e) {
    std::fprintf(stderr, "dml-lda: %s (see --help)\n", e.what());
    return 2;
  }
  try {
    trainer::launcher launch = trainer::table_launcher(s, argc, argv);  // starts MPI for mpi_rma / mpi
    if (!launch.leader()) s.write.clear();                              // one process writes --write-corpus
    // Every process makes (reads or generates) the whole corpus and samples
    // its share of the documents: under MPI the processes compare what they
    // made first (read_agreed), since a corpus file that differs between
    // machines would mix two corpora into one wrong model, and a read that
    // failed on one process would leave the others waiting.
    corpus c;
    trainer::read_agreed(
        launch, "dml-lda",
        [&] {
          c = lda::make_corpus(s);
          if (s.ranks * s.clocks > s.documents)
            throw usage_error(std::to_string(s.documents) + " documents are too few for " +
                              std::to_string(s.ranks) + " ranks with " + std::to_string(s.clocks) +
                              " clocks per iteration");
        },
        [&] {
          return std::pair(lda::hash_of(c, s.vocabulary),
                           c.first.empty() ? std::string() : lda::summary(c, s.vocabulary));
        },
        "the corpus");
    if (launch.leader())
      std::printf(
          "dml-lda: %zu documents, %zu tokens, %zu words, %zu %s; %zu ranks, %s, consistency %s, %zu "
          "iterations, %zu clocks per iteration, alpha %g, beta %g\n",
          c.documents(), c.words.size(), s.vocabulary, s.topics,
          c.topics.empty() ? "topics" : "planted topics", s.ranks, s.transport.c_str(),
          trainer::consistency_name(s).c_str(), s.iterations, s.clocks, s.alpha, s.beta);
    const outcome r = table_lda(launch, s, c);
    if (!launch.in_process()) return 0;  // printed inside the run
    if (!r.done) throw std::runtime_error("the run did not complete: no member finished the last iteration");
    lda::print_final(c, r.counts, s, r.loglik, r.seconds, r.iterations);
  } catch (const trainer::agreed_error& e) {  // the same on every process: the leader says it
    return trainer::agreed_failure("dml-lda", e);
  } catch (const usage_error& e) {
    std::fprintf(stderr, "dml-lda: %s (see --help)\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dml-lda: %s\n", e.what());
    return 1;
  }
}

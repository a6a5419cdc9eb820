// SPDX-License-Identifier: BSL-1.0
// dml-smp-lda: latent Dirichlet allocation by collapsed Gibbs sampling on
// the static rotation engine (dml::schedule::static_rotation; SMPFRAME §4.1,
// Algorithm 3, SMP-LDA), on the corpus dml-lda uses
// (examples/common/lda_corpus.hpp: generated with planted topics, or a file).
// The ranks are threads (--transport inproc) or MPI processes (--transport
// mpi_rma | mpi under mpiexec: examples/common/launcher.hpp); every process
// generates, or reads, the whole corpus, and the ranks check that they hold
// the same one before sampling (examples/common/same_input.hpp).
//
// The model: n_wk (tokens of word w with topic k), n_dk (of document d with
// topic k), n_k (all tokens with topic k); a token's topic is drawn from
//
//     p(k) ∝ (n_dk + alpha) (n_wk + beta) / (n_k + V beta)
//
// The schedule: the V words are the engine's parameters (width K: a word's
// row of n_wk), cut into P contiguous blocks that rotate; documents are
// dealt out once (document d to member d mod P), with their n_dk and their
// tokens' topics. In iteration t member p holds one block and samples, word
// by word (heaviest first: its most frequent words first), every token of
// its documents whose word is in the block, then passes the block's rows to
// member p + 1. A word's row is never written by two members at once, and a
// document's counts never leave their member. P iterations make one sweep
// over the corpus (every token sampled once); after each the blocks are
// all-gathered and log p(w, z) per token is printed.
//
// The topic totals n_k are the one state every member writes. Each member
// keeps a copy: the totals agreed at the end of the last iteration plus its
// own changes since. After every iteration (in the aggregate() of the block
// that came along the ring, which every member runs once per iteration) the
// members sum their changes of that iteration exactly (exact_sum, integers
// in doubles) and every copy becomes the true totals again. Staleness left:
// within one iteration a member does not see the other members' changes of
// n_k, at most the tokens they move in one iteration (about 1/P of a sweep's
// moves); n_wk and n_dk are never stale. SMPFRAME's Algorithm 3 leaves n_k
// to "aggregate"; reconciling every iteration costs one sum of K numbers per
// iteration.
//
// Randomness: the topics start from a generator per document (the same
// start at any rank count) and a word's tokens in iteration t are drawn
// from a generator seeded by (seed, t, w), so a run is deterministic at any
// rank count, macro and micro synchronization give the same run, and
// --serial (one thread, no engine, the same order) equals --ranks 1.
#include <dml/io.hpp>
#include <dml/random.hpp>
#include <dml/schedule.hpp>

#include "../common/cli.hpp"
#include "../common/kill_after.hpp"
#include "../common/launcher.hpp"
#include "../common/lda_corpus.hpp"
#include "../common/same_input.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <numeric>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {

using cli::usage_error;
using lda::corpus;
using lda::count;

struct options : lda::corpus_settings {
  std::size_t ranks = 4, iterations = 50;
  double alpha = 0.1, beta = 0.01;
  bool micro_sync = false, no_heaviest_first = false, serial = false;
  std::string csv;
  std::string transport = "inproc";
  trainer::kill_plan kill_after;  // --kill-after R@S
  bool verify_counts = false;
};

using clock_type = std::chrono::steady_clock;

// ---- the sampler both runs share ------------------------------------------------------------------

/// The topics every token starts with: document d's from a generator of its
/// own, so every member computes the same start for every document.
std::vector<std::uint32_t> initial_topics(const corpus& c, const options& o) {
  std::vector<std::uint32_t> z(c.words.size());
  for (std::size_t d = 0; d < c.documents(); ++d) {
    dml::splitmix64 g(o.seed * 0x9e3779b97f4a7c15ULL ^ (d + 0x5851f42d4c957f2dULL));
    for (std::uint32_t j = c.first[d]; j < c.first[d + 1]; ++j)
      z[j] = static_cast<std::uint32_t>(g() % o.topics);
  }
  return z;
}

/// Resamples the topics of `tokens` (indices into c.words, all of word w)
/// in order. `word` is w's row of n_wk, `totals` n_k, `changes` this
/// member's changes of n_k since the last reconciliation, `doc_row(d)`
/// document d's row of n_dk.
class gibbs {
 public:
  gibbs(const options& o, std::size_t vocabulary)
      : K_(o.topics),
        alpha_(o.alpha),
        beta_(o.beta),
        Vb_(static_cast<double>(vocabulary) * o.beta),
        seed_(o.seed),
        p_(o.topics) {}

  template <class DocRow>
  void sample_word(std::uint64_t t, std::uint32_t w, std::span<const std::uint32_t> tokens,
                   const std::vector<std::uint32_t>& doc_of, std::vector<std::uint32_t>& z, count* word,
                   std::vector<count>& totals, std::vector<count>& changes, DocRow doc_row) {
    dml::splitmix64 g((seed_ + 1) * 0xd1342543de82ef95ULL ^ (t * 0x9e3779b97f4a7c15ULL + w));
    for (std::uint32_t j : tokens) {
      count* doc = doc_row(doc_of[j]);
      const std::uint32_t old = z[j];
      --doc[old];
      --word[old];
      --totals[old];
      double sum = 0;
      for (std::size_t k = 0; k < K_; ++k)
        sum += p_[k] = (doc[k] + alpha_) * (word[k] + beta_) / (std::max<count>(totals[k], 0) + Vb_);
      double u = static_cast<double>(g() >> 11) * 0x1p-53 * sum;
      std::uint32_t now = static_cast<std::uint32_t>(K_ - 1);
      for (std::size_t k = 0; k < K_; ++k) {
        u -= p_[k];
        if (u < 0) {
          now = static_cast<std::uint32_t>(k);
          break;
        }
      }
      ++doc[now];
      ++word[now];
      ++totals[now];
      if (now != old) {
        --changes[old];
        ++changes[now];
        z[j] = now;
      }
    }
  }

 private:
  std::size_t K_;
  double alpha_, beta_, Vb_;
  std::uint64_t seed_;
  std::vector<double> p_;
};

/// Each word's tokens (of the documents `mine` accepts) in document order:
/// tokens[start[w] .. start[w + 1]).
struct by_word {
  std::vector<std::size_t> start;
  std::vector<std::uint32_t> tokens;
  template <class Mine>
  by_word(const corpus& c, std::size_t V, Mine mine) : start(V + 1, 0) {
    for (std::size_t d = 0; d < c.documents(); ++d)
      if (mine(d))
        for (std::uint32_t j = c.first[d]; j < c.first[d + 1]; ++j) ++start[c.words[j] + 1];
    for (std::size_t w = 0; w < V; ++w) start[w + 1] += start[w];
    tokens.resize(start[V]);
    std::vector<std::size_t> at(start.begin(), start.end() - 1);
    for (std::size_t d = 0; d < c.documents(); ++d)
      if (mine(d))
        for (std::uint32_t j = c.first[d]; j < c.first[d + 1]; ++j) tokens[at[c.words[j]]++] = j;
  }
  [[nodiscard]] std::span<const std::uint32_t> of(std::size_t w) const {
    return {tokens.data() + start[w], start[w + 1] - start[w]};
  }
  [[nodiscard]] double weight(std::size_t w) const { return static_cast<double>(start[w + 1] - start[w]); }
};

std::vector<std::uint32_t> document_of(const corpus& c) {
  std::vector<std::uint32_t> doc(c.words.size());
  for (std::size_t d = 0; d < c.documents(); ++d)
    std::fill(doc.begin() + c.first[d], doc.begin() + c.first[d + 1], static_cast<std::uint32_t>(d));
  return doc;
}

/// What a run reports: one line per sweep, the --csv rows, the result.
struct reporter {
  lda::csv_log csv;
  double loglik = 0, seconds = 0;
  std::size_t iterations = 0;
  void sweep(std::size_t it, double s, double ll) {
    std::printf("iteration %3zu  %8.3f s  loglik %.5f\n", it, s, ll);
    std::fflush(stdout);
    csv.row(it, s, ll);
    loglik = ll;
    seconds = s;
    iterations = it;
  }
};

/// log p(w, z) per token of the whole state (one thread: the serial run
/// and the random start).
double loglik_of(const corpus& c, const std::vector<std::uint32_t>& z, const options& o) {
  const std::size_t K = o.topics, V = o.vocabulary;
  std::vector<count> word(V * K, 0), totals(K, 0), doc(K);
  double ll = 0;
  for (std::size_t d = 0; d < c.documents(); ++d) {
    std::fill(doc.begin(), doc.end(), 0);
    for (std::uint32_t j = c.first[d]; j < c.first[d + 1]; ++j) {
      ++doc[z[j]];
      ++word[c.words[j] * K + z[j]];
      ++totals[z[j]];
    }
    ll += lda::doc_share(doc, o.alpha);
  }
  for (std::size_t w = 0; w < V; ++w) ll += lda::word_share(std::span<const count>(&word[w * K], K), o.beta);
  ll += lda::totals_share(totals, static_cast<double>(V) * o.beta);
  return c.words.empty() ? 0 : ll / static_cast<double>(c.words.size());
}

/// The words in the order a member with these token counts samples a block
/// of them: heaviest first (stable), or by index.
std::vector<std::uint32_t> word_order(const by_word& mine, std::size_t first, std::size_t last,
                                      bool heaviest) {
  std::vector<std::uint32_t> order(last - first);
  std::iota(order.begin(), order.end(), static_cast<std::uint32_t>(first));
  if (heaviest)
    std::stable_sort(order.begin(), order.end(),
                     [&](std::uint32_t a, std::uint32_t b) { return mine.weight(a) > mine.weight(b); });
  return order;
}

// ---- serial: one thread, the order of one rank ------------------------------------------------------

lda::counts_view serial_lda(const corpus& c, const options& o, reporter& out) {
  const std::size_t K = o.topics, V = o.vocabulary;
  std::vector<std::uint32_t> z = initial_topics(c, o);
  const std::vector<std::uint32_t> doc_of = document_of(c);
  const by_word tokens(c, V, [](std::size_t) { return true; });
  std::vector<count> word(V * K, 0), totals(K, 0), docs(c.documents() * K, 0), changes(K, 0);
  for (std::size_t j = 0; j < z.size(); ++j) {
    ++word[c.words[j] * K + z[j]];
    ++totals[z[j]];
    ++docs[doc_of[j] * K + z[j]];
  }
  out.sweep(0, 0.0, loglik_of(c, z, o));
  gibbs sampler(o, V);
  const std::vector<std::uint32_t> order = word_order(tokens, 0, V, !o.no_heaviest_first);
  double seconds = 0;
  for (std::size_t it = 1; it <= o.iterations; ++it) {
    const auto start = clock_type::now();
    for (std::uint32_t w : order)
      sampler.sample_word(it - 1, w, tokens.of(w), doc_of, z, &word[w * K], totals, changes,
                          [&](std::uint32_t d) { return &docs[d * K]; });
    seconds += std::chrono::duration<double>(clock_type::now() - start).count();
    out.sweep(it, seconds, loglik_of(c, z, o));
  }
  return lda::counts_view{word};
}

// ---- on the static rotation engine ------------------------------------------------------------------

/// One member's program (dml::schedule::restartable_rotation_program): the
/// words are the parameters, a word's K counts its values. Member m starts
/// with the documents d with d mod P == m; after a failure the dead
/// member's documents are dealt out over the survivors, the others keep
/// theirs.
template <class Transport>
class smp_lda_program {
 public:
  smp_lda_program(Transport& comm, const corpus& c, const options& o, const std::vector<std::uint32_t>& z0,
                  const std::vector<std::uint32_t>& doc_of)
      : o_(o),
        c_(c),
        doc_of_(doc_of),
        comm_(comm),
        P0_(comm.size()),
        P_(comm.size()),
        me_(comm.rank()),
        z_(z0),
        owner_(c.documents()),
        mine_(c, o.vocabulary, [](std::size_t) { return false; }),
        sampler_(o, o.vocabulary),
        word_(o.vocabulary * o.topics, 0),
        totals_(o.topics, 0),
        changes_(o.topics, 0) {
    for (std::size_t d = 0; d < c.documents(); ++d) owner_[d] = static_cast<std::uint32_t>(d % P0_);
    const auto live = deal_out();
    P_ = live.size();
    me_ = static_cast<std::size_t>(std::find(live.begin(), live.end(), comm.rank()) - live.begin());
    take_documents();
    const std::size_t K = o.topics;
    for (std::size_t j = 0; j < z_.size(); ++j) {  // every member: the whole start
      ++word_[c.words[j] * K + z_[j]];
      ++totals_[z_[j]];
    }
  }

  // dml::schedule::rotation_program
  [[nodiscard]] std::size_t parameters() const { return o_.vocabulary; }
  [[nodiscard]] std::size_t width() const { return o_.topics; }
  [[nodiscard]] double weight(dml::schedule::parameter w) const { return mine_.weight(w); }
  void update(const dml::schedule::step& s, std::span<double> out) {
    const std::size_t K = o_.topics;
    for (std::size_t n = 0; n < s.job.size(); ++n) {
      const std::uint32_t w = s.job[n];
      count* row = &word_[w * K];
      sampler_.sample_word(s.iteration, w, mine_.of(w), doc_of_, z_, row, totals_, changes_,
                           [&](std::uint32_t d) { return &docs_[std::size_t{slot_[d]} * K]; });
      std::copy(row, row + K, out.begin() + static_cast<std::ptrdiff_t>(n * K));
    }
  }
  void aggregate(const dml::schedule::step& s, std::span<const double> values) {
    const std::size_t K = o_.topics;
    for (std::size_t n = 0; n < s.job.size(); ++n)
      for (std::size_t k = 0; k < K; ++k) word_[s.job[n] * K + k] = static_cast<count>(values[n * K + k]);
    // The block from the ring predecessor arrives once per iteration on
    // every member (the all-gather's blocks come from the others): the point
    // to reconcile the topic totals, collectively. Not for the whole model:
    // that is the model restored after a failure, on every survivor with its
    // new place, before reshard() counts again (or a run of one member, where
    // reconciling changes nothing).
    if (s.job.size() == o_.vocabulary || s.member != (me_ + P_ - 1) % P_) return;
    // Made here, inside the engine's run, not in the constructor: a
    // collective in the constructor is outside the engine's failure handling.
    if (!sum_) sum_.emplace(comm_);
    buffer_.assign(changes_.begin(), changes_.end());
    (*sum_)(std::span<double>(buffer_));
    for (std::size_t k = 0; k < K; ++k) {
      totals_[k] += static_cast<count>(buffer_[k]) - changes_[k];
      changes_[k] = 0;
    }
  }
  // dml::schedule::restartable_rotation_program
  void values(std::span<const dml::schedule::parameter> job, std::span<double> out) const {
    const std::size_t K = o_.topics;
    for (std::size_t n = 0; n < job.size(); ++n)
      for (std::size_t k = 0; k < K; ++k) out[n * K + k] = static_cast<double>(word_[job[n] * K + k]);
  }
  /// After a failure: the dead members' documents go to the survivors in
  /// turn, and the counts are counted again from every survivor's topic
  /// assignments of its documents (a sum over the survivors). The word-topic
  /// counts must be the sum of the assignments: the restored model holds
  /// the dead member's assignments, which are lost, and the survivors'
  /// assignments moved on since it was kept. A document taken over starts
  /// again from its initial topics.
  void reshard(std::size_t member, std::size_t members) {
    P_ = members;
    me_ = member;
    (void)deal_out();
    sum_.reset();
    sum_.emplace(comm_);  // collective: every survivor reshards at the same point
    take_documents();
    const std::size_t K = o_.topics, V = o_.vocabulary;
    // A document taken over still has its initial topics in z_: a member
    // changes only its own documents' assignments.
    std::vector<double> counts = own_counts();
    (*sum_)(std::span<double>(counts));
    for (std::size_t i = 0; i < V * K; ++i) word_[i] = static_cast<count>(counts[i]);
    for (std::size_t k = 0; k < K; ++k) totals_[k] = static_cast<count>(counts[V * K + k]);
    std::fill(changes_.begin(), changes_.end(), 0);
  }
  bool progress(dml::schedule::context& ctx) {
    const auto start = clock_type::now();
    const std::size_t K = o_.topics;
    double ll = 0;
    for (std::size_t w = me_; w < o_.vocabulary; w += P_)
      ll += lda::word_share(std::span<const count>(&word_[w * K], K), o_.beta);
    for (std::size_t i = 0; i * K < docs_.size(); ++i)
      ll += lda::doc_share(std::span<const count>(&docs_[i * K], K), o_.alpha);
    if (me_ == 0) ll += lda::totals_share(totals_, static_cast<double>(o_.vocabulary) * o_.beta);
    ll = ctx.sum(ll);
    if (o_.verify_counts) verify_counts(ctx);
    // After a failure inside progress() the engine reports that rotation
    // again (the same iteration): it counts once.
    if (ctx.iteration() + 1 != progressed_) ++sweeps_;
    progressed_ = ctx.iteration() + 1;
    reporting_ += std::chrono::duration<double>(clock_type::now() - start).count();
    if (on_sweep)
      on_sweep(sweeps_, reporting_, c_.words.empty() ? 0 : ll / static_cast<double>(c_.words.size()));
    return sweeps_ < o_.iterations;  // the same count on every member: all stop together
  }

  std::function<void(std::size_t, double, double)> on_sweep;  // sweep, seconds spent reporting, loglik
  [[nodiscard]] const std::vector<count>& word_topic() const { return word_; }

 private:
  static constexpr std::uint32_t none = 0xffffffffu;

  // --verify-counts: the word-topic counts and topic totals every member
  // holds after a full rotation must be the counts of all members' topic
  // assignments of their documents (summed over the members).
  void verify_counts(dml::schedule::context& ctx) const {
    const std::size_t K = o_.topics, V = o_.vocabulary;
    std::vector<double> counted = own_counts();
    ctx.sum(std::span<double>(counted));
    std::size_t words = 0, totals = 0;
    for (std::size_t i = 0; i < V * K; ++i) words += counted[i] != static_cast<double>(word_[i]) ? 1 : 0;
    for (std::size_t k = 0; k < K; ++k)
      totals += counted[V * K + k] != static_cast<double>(totals_[k]) ? 1 : 0;
    if (words != 0 || totals != 0)
      throw std::runtime_error("--verify-counts: after sweep " + std::to_string(sweeps_ + 1) + " member " +
                               std::to_string(comm_.rank()) + " holds " + std::to_string(words) +
                               " word-topic counts and " + std::to_string(totals) +
                               " topic totals that differ from the members' topic assignments");
  }

  // The word-topic counts (V x K) and topic totals (K) of this member's
  // documents' assignments, for a sum over the members.
  [[nodiscard]] std::vector<double> own_counts() const {
    const std::size_t K = o_.topics, V = o_.vocabulary;
    std::vector<double> counts(V * K + K, 0.0);
    for (std::size_t d = 0; d < c_.documents(); ++d)
      if (slot_[d] != none)
        for (std::uint32_t j = c_.first[d]; j < c_.first[d + 1]; ++j) {
          counts[c_.words[j] * K + z_[j]] += 1;
          counts[V * K + z_[j]] += 1;
        }
    return counts;
  }

  // Deals the documents of members that are not live out over the live
  // ones (the others keep theirs); returns the live members.
  std::vector<dml::member_id> deal_out() {
    const auto live = comm_.view().live;
    for (std::size_t d = 0; d < c_.documents(); ++d)
      if (std::find(live.begin(), live.end(), owner_[d]) == live.end())
        owner_[d] = static_cast<std::uint32_t>(live[(d / P0_) % live.size()]);
    return live;
  }

  // This member's documents (owner_): their tokens by word, and their rows
  // of n_dk counted from z_.
  void take_documents() {
    const std::size_t K = o_.topics;
    const dml::member_id me = comm_.rank();
    mine_ = by_word(c_, o_.vocabulary, [&](std::size_t d) { return owner_[d] == me; });
    slot_.assign(c_.documents(), none);
    std::uint32_t n = 0;
    for (std::size_t d = 0; d < c_.documents(); ++d)
      if (owner_[d] == me) slot_[d] = n++;
    docs_.assign(std::size_t{n} * K, 0);
    for (std::size_t d = 0; d < c_.documents(); ++d)
      if (slot_[d] != none)
        for (std::uint32_t j = c_.first[d]; j < c_.first[d + 1]; ++j)
          ++docs_[std::size_t{slot_[d]} * K + z_[j]];
  }

  const options& o_;
  const corpus& c_;
  const std::vector<std::uint32_t>& doc_of_;
  Transport& comm_;
  std::size_t P0_, P_, me_;  // the members at the start; live members and this member's place among them
  std::optional<dml::schedule::exact_sum<double, Transport>> sum_;
  std::vector<std::uint32_t> z_;
  std::vector<std::uint32_t> owner_;  // each document's member
  std::vector<std::uint32_t> slot_;   // each document's row in docs_, or none
  by_word mine_;
  gibbs sampler_;
  std::vector<count> word_, totals_, changes_, docs_;
  std::vector<double> buffer_;
  std::size_t sweeps_ = 0;
  std::uint64_t progressed_ = 0;  // iteration + 1 of the last progress()
  double reporting_ = 0;
};

/// On the launcher's ranks; `out` is the leader's (the others print nothing),
/// and so is the result. `print_result(out, counts)` prints the result; under
/// MPI it is called here, inside the run, so that a survivor prints it when
/// the reporting member died after its last report (in-process main() calls
/// it, once).
template <class PrintResult>
lda::counts_view smp_lda(const corpus& c, const options& o, reporter& out, trainer::launcher& launch,
                         PrintResult&& print_result) {
  const std::vector<std::uint32_t> z0 = initial_topics(c, o), doc_of = document_of(c);
  if (launch.leader()) out.sweep(0, 0.0, loglik_of(c, z0, o));
  lda::counts_view result;
  launch.run([&](auto& comm) {
    smp_lda_program prog(comm, c, o, z0, doc_of);
    const auto start = clock_type::now();
    std::size_t changes_printed = 0;  // view-change lines printed
    // Every member may become the one that prints: the leader is the first
    // live member, the next one after member 0 died. Each keeps the last
    // sweep's numbers (the log-likelihood is a sum: the same on every member).
    std::size_t printed = 0;  // the last sweep printed (one reported again after a failure is not)
    reporter mine{lda::csv_log("")};
    prog.on_sweep = [&](std::size_t sweep, double reporting, double ll) {
      // The seconds of sampling and exchanging, without the log-likelihood
      // (as dml-lda counts them).
      const double seconds = std::chrono::duration<double>(clock_type::now() - start).count() - reporting;
      mine.loglik = ll;
      mine.seconds = seconds;
      mine.iterations = sweep;
      if (!dml::io::leader(comm)) return;
      trainer::print_view_changes(comm, changes_printed);
      if (sweep == printed) return;
      printed = sweep;
      out.sweep(sweep, seconds, ll);
    };
    const dml::schedule::static_rotation engine{
        .macro_sync = !o.micro_sync, .heaviest_first = !o.no_heaviest_first, .executors = 1};
    // progress() ends the run after --iterations sweeps; the iterations
    // are a bound that holds after failures too.
    const auto st = dml::schedule::run(comm, prog, engine, trainer::rotation_bound(o.iterations, o.ranks));
    // Every member holds the counts after the last full rotation.
    auto take = [&] {
      trainer::print_view_changes(comm, changes_printed);
      trainer::print_failures_survived(st);
      out.loglik = mine.loglik;
      out.seconds = mine.seconds;
      out.iterations = mine.iterations;
      result.word_topic = prog.word_topic();
    };
    if (dml::io::leader(comm)) take();
    trainer::print_final_surviving(launch, comm, [&] {
      if (result.word_topic.empty()) take();  // took over from a reporter that died
      print_result(out, result);
    });
  });
  return result;
}

// ---- command line ----------------------------------------------------------------------------------

constexpr const char* description =
    R"(Latent Dirichlet allocation by collapsed Gibbs sampling on the static
rotation engine (SMPFRAME's SMP-LDA) over --ranks threads or the processes
of an MPI job: the vocabulary is cut into one block of words per rank, the
blocks rotate, and a rank samples the tokens of its
documents whose word is in the block it holds, so no two ranks write a word's
counts at once; the topic totals are summed exactly after every rotation step.
The corpus is dml-lda's: generated with --topics planted topics, or read from
a --corpus file ('doc word:count word:count ...' per line).)";

constexpr const char* footer =
    R"(Prints one line per iteration (a sweep over the corpus, --ranks rotation
steps: log p(w, z) per token), how each planted topic's top words are found in
the learned topics, and finally 'final: loglik=<per token> seconds=<s>
recovery=<mean share of top words> least=<smallest share> iterations=<n>'
(from a --corpus file: 'final: loglik=<per token> seconds=<s>
iterations=<n>'). Bad arguments exit with 2, other errors with 1.)";

bool parse(int argc, char** argv, options& o) {
  const auto app = cli::app("dml-smp-lda", description, footer);
  auto range = [](std::size_t lo, std::size_t hi, const std::string& what) {
    return cli::number_where<std::size_t>(
        [lo, hi](std::size_t v) { return v >= lo && v <= hi; },
        "needs " + std::to_string(lo) + " .. " + std::to_string(hi) + " " + what);
  };
  auto* ranks = app->add_option("--ranks", o.ranks, "in-process ranks, default 4")
                    ->option_text("N")
                    ->check(range(1, 256, "ranks"));
  app->add_option("--transport", o.transport,
                  "inproc (threads, default) | mpi_rma | mpi (one rank per\nMPI process: mpiexec -n N "
                  "dml-smp-lda --transport mpi_rma)")
      ->option_text("NAME")
      ->check(cli::one_of({"inproc", "mpi_rma", "mpi"}));
  lda::add_corpus_options(*app, o);
  app->add_option("--iterations", o.iterations, "Gibbs sweeps over the corpus, default 50")
      ->option_text("N")
      ->check(range(1, 100000, "iterations"));
  app->add_option("--alpha", o.alpha, "the sampler's document-topic prior, default 0.1")
      ->option_text("X")
      ->check(cli::positive_number<double>());
  app->add_option("--beta", o.beta, "the sampler's topic-word prior, default 0.01")
      ->option_text("X")
      ->check(cli::positive_number<double>());
  app->add_flag("--micro-sync", o.micro_sync, "a barrier after every rotation step");
  app->add_flag("--no-heaviest-first", o.no_heaviest_first, "sample a block's words in index order");
  app->add_flag("--serial", o.serial, "one thread without the engine, in the order of --ranks 1")
      ->excludes(ranks);
  app->add_option("--csv", o.csv, "also write 'iteration,seconds,loglik' rows to FILE")
      ->option_text("FILE")
      ->check(cli::not_empty());
  app->add_flag("--verify-counts", o.verify_counts,
                "after every sweep check that the counts are those of the\ntopic assignments (a sum over the "
                "ranks; a mismatch is an\nerror)");
  trainer::add_kill_after(*app, o.kill_after);
  if (!cli::parse(*app, argc, argv)) return false;
  trainer::check_kills(o.kill_after, o.transport, o.ranks);
  lda::check_corpus_settings(*app, o);
  if (o.transport != "inproc" && ranks->count() != 0)
    throw usage_error("--ranks is for --transport inproc; with " + o.transport +
                      " every MPI process is one rank (mpiexec -n N)");
  if (o.transport != "inproc" && o.serial)
    throw usage_error("--serial is one thread of one process; not with --transport " + o.transport);
  if (o.serial && !o.kill_after.empty())
    throw usage_error("--kill-after kills a rank of the engine; not with --serial");
  if (o.serial) o.ranks = 1;
  return true;
}

/// The corpus (generated or read) and the checks that need it: the same on
/// every rank, so under MPI every process finds the same error.
corpus load_checked(options& o, const std::string& ranks_text) {
  corpus c = lda::make_corpus(o);
  if (o.ranks > o.vocabulary)
    throw usage_error(ranks_text + " is more than the " + std::to_string(o.vocabulary) +
                      " words (one block of words per rank)");
  if (o.ranks > c.documents())
    throw usage_error(std::to_string(c.documents()) + " documents are too few for " +
                      std::to_string(o.ranks) + " ranks");
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  try {
    if (!parse(argc, argv, o)) return 0;  // --help
  } catch (const usage_error& e) {
    return trainer::usage_failure("dml-smp-lda", e.what());  // under mpiexec: once
  }
  try {
    trainer::launcher launch(o.transport, o.ranks, argc, argv,
                             trainer::planned_kills(o.kill_after));  // starts MPI for mpi_rma / mpi
    if (!launch.leader()) {                                          // one writer of the files
      o.write.clear();
      o.csv.clear();
    }
    const std::string ranks_text =
        launch.in_process() ? "--ranks " + std::to_string(o.ranks) : "mpiexec -n " + std::to_string(o.ranks);
    // In-process, the ranks share this process's one corpus; under MPI every
    // process makes its own and the ranks agree on it (or on its error).
    corpus c;
    trainer::read_agreed(
        launch, "dml-smp-lda", [&] { c = load_checked(o, ranks_text); },
        [&] {
          return std::pair(lda::hash_of(c, o.vocabulary),
                           c.first.empty() ? std::string() : lda::summary(c, o.vocabulary));
        },
        "the corpus");
    if (launch.leader()) {  // asked again: member 0 may have died while the input was agreed
      std::string how = o.serial ? std::string("serial") : std::to_string(o.ranks) + " ranks";
      if (!launch.in_process()) how += " (" + o.transport + ")";
      how += o.serial ? "" : ", static rotation";
      how += o.micro_sync ? ", micro sync" : o.serial ? "" : ", macro sync";
      how += o.no_heaviest_first ? ", index order" : ", heaviest first";
      std::printf(
          "dml-smp-lda: %zu documents, %zu tokens, %zu words, %zu %s; %s, %zu iterations, alpha %g, beta "
          "%g\n",
          c.documents(), c.words.size(), o.vocabulary, o.topics,
          c.topics.empty() ? "topics" : "planted topics", how.c_str(), o.iterations, o.alpha, o.beta);
    }
    reporter out{lda::csv_log(o.csv)};
    auto print_result = [&](const reporter& r, const lda::counts_view& counts) {
      lda::print_final(c, counts, o, r.loglik, r.seconds, r.iterations);
    };
    const lda::counts_view counts =
        o.serial ? serial_lda(c, o, out) : smp_lda(c, o, out, launch, print_result);
    // In-process (and --serial) the result is printed once, here, by the
    // process that holds it; under MPI smp_lda printed it.
    if (counts.word_topic.empty() || !launch.in_process()) return 0;
    print_result(out, counts);
  } catch (const trainer::agreed_error& e) {  // the same on every rank: the leader says it
    return trainer::agreed_failure("dml-smp-lda", e);
  } catch (const usage_error& e) {
    std::fprintf(stderr, "dml-smp-lda: %s (see --help)\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dml-smp-lda: %s\n", e.what());
    return 1;
  }
}

// SPDX-License-Identifier: BSL-1.0
// What dml-lda (parameter tables) and dml-smp-lda (the static rotation
// engine) share: the corpus generated from the LDA model with planted
// topics or read from a corpus file, the options for both, log p(w, z) as a
// sum of per-row shares, the report of how the planted topics are found
// among the learned ones, and the --csv log.
//
// The corpus: K planted topics, each a distribution over V words drawn from
// a symmetric Dirichlet(topic_prior); every document draws its topic
// mixture from Dirichlet(doc_prior) and each of its `length` tokens a topic
// from the mixture and a word from that topic.
#pragma once

#include <dml/data/bag_of_words.hpp>

#include "cli.hpp"
#include "same_input.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <memory>
#include <numeric>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace lda {

using count = std::int32_t;

/// What the generator and the topic report read. With a corpus `file` the
/// vocabulary is the file's (its largest word id + 1).
struct corpus_settings {
  std::size_t topics = 10, vocabulary = 1000, documents = 1000, length = 100, top = 10;
  double topic_prior = 0.05, doc_prior = 0.1;
  std::uint64_t seed = 1;
  std::string file, write;  // --corpus: read it; --write-corpus: write the corpus used
  bool vocabulary_given = false;
};

/// The limits a corpus file is read under: those of the generator's options
/// (--vocabulary, --length, --documents x --length), so a file can ask for
/// no more memory than a command line can.
inline constexpr std::size_t max_vocabulary = 10'000'000, max_document_tokens = 100'000,
                             max_tokens = 100'000'000;

/// A document is a bag of words: its tokens in increasing word order, as a
/// corpus file stores them, so a written corpus reads back to the same run.
struct corpus {
  std::vector<std::vector<double>> topics;  // planted: K distributions over V words (none from a file)
  std::vector<std::uint32_t> first;         // document d's tokens: words[first[d] .. first[d + 1])
  std::vector<std::uint32_t> words;
  [[nodiscard]] std::size_t documents() const { return first.size() - 1; }
};

/// Draws from a symmetric Dirichlet(a) of n components.
inline std::vector<double> dirichlet(std::mt19937_64& rng, std::size_t n, double a) {
  std::gamma_distribution<double> g(a, 1.0);
  std::vector<double> x(n);
  double sum = 0;
  for (double& v : x) sum += v = g(rng);
  if (sum <= 0) {  // every draw underflowed (tiny a): all mass on one component
    x.assign(n, 0.0);
    x[std::uniform_int_distribution<std::size_t>(0, n - 1)(rng)] = 1;
    return x;
  }
  for (double& v : x) v /= sum;
  return x;
}

/// An index drawn from the weights w (summing to `total`).
inline std::size_t draw(std::mt19937_64& rng, const std::vector<double>& w, double total) {
  double u = std::uniform_real_distribution<double>(0.0, total)(rng);
  for (std::size_t i = 0; i < w.size(); ++i) {
    u -= w[i];
    if (u < 0) return i;
  }
  return w.size() - 1;
}

inline corpus generate(const corpus_settings& s) {
  std::mt19937_64 rng(s.seed);
  corpus c;
  for (std::size_t k = 0; k < s.topics; ++k) c.topics.push_back(dirichlet(rng, s.vocabulary, s.topic_prior));
  c.first.push_back(0);
  std::vector<double> cumulative(s.vocabulary);
  for (std::size_t d = 0; d < s.documents; ++d) {
    const std::vector<double> mix = dirichlet(rng, s.topics, s.doc_prior);
    for (std::size_t j = 0; j < s.length; ++j) {
      const std::size_t k = draw(rng, mix, 1.0);
      c.words.push_back(static_cast<std::uint32_t>(draw(rng, c.topics[k], 1.0)));
    }
    std::sort(c.words.begin() + static_cast<std::ptrdiff_t>(c.first.back()), c.words.end());
    c.first.push_back(static_cast<std::uint32_t>(c.words.size()));
  }
  return c;
}

/// The corpus of a file (dml::data::read_bag_of_words under the limits
/// above): each word:count pair becomes `count` tokens.
inline corpus read_corpus(const std::string& path) {
  dml::data::bag_of_words_options o;
  o.max_vocabulary = max_vocabulary;
  o.max_document_tokens = max_document_tokens;
  o.max_tokens = max_tokens;
  const dml::data::bag_of_words b = dml::data::read_bag_of_words(path, o);
  corpus c;
  c.words.reserve(b.tokens);  // at most max_tokens, checked by the reader
  c.first.push_back(0);
  for (std::size_t d = 0; d < b.documents(); ++d) {
    for (std::size_t i = b.first[d]; i < b.first[d + 1]; ++i)
      c.words.insert(c.words.end(), b.counts[i], b.words[i]);
    c.first.push_back(static_cast<std::uint32_t>(c.words.size()));
  }
  return c;
}

/// Writes `c` as a corpus file: document d (id d) with its words' counts.
inline void write_corpus(const std::string& path, const corpus& c) {
  dml::data::bag_of_words b;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> pairs;
  for (std::size_t d = 0; d < c.documents(); ++d) {
    pairs.clear();
    for (std::uint32_t j = c.first[d]; j < c.first[d + 1]; ++j)
      if (!pairs.empty() && pairs.back().first == c.words[j])
        ++pairs.back().second;
      else
        pairs.emplace_back(c.words[j], 1);
    b.add(d, pairs);
  }
  dml::data::write_bag_of_words(path, b);
}

/// The corpus the settings ask for: read from `s.file` (s.vocabulary, unless
/// given, set to the file's largest word id + 1), or generated; written to `s.write` if given.
inline corpus make_corpus(corpus_settings& s) {
  corpus c;
  if (s.file.empty()) {
    c = generate(s);
  } else {
    c = read_corpus(s.file);
    std::size_t v = 0;
    for (std::uint32_t w : c.words) v = std::max<std::size_t>(v, w + std::size_t{1});
    if (s.vocabulary_given && v > s.vocabulary)
      throw std::runtime_error(s.file + ": word id " + std::to_string(v - 1) + " is beyond --vocabulary " +
                               std::to_string(s.vocabulary));
    if (!s.vocabulary_given) s.vocabulary = std::max<std::size_t>(v, 2);
    s.documents = c.documents();
    if (static_cast<double>(s.vocabulary) * static_cast<double>(s.topics) > 1e8)
      throw std::runtime_error(s.file + ": " + std::to_string(s.vocabulary) + " words x --topics " +
                               std::to_string(s.topics) + " is more than 10^8 counts");
  }
  if (!s.write.empty()) write_corpus(s.write, c);
  return c;
}

/// What the processes of an MPI run compare (dml::io::agree_on_input):
/// the whole corpus, its planted topics and the vocabulary it is read with.
inline std::uint64_t hash_of(const corpus& c, std::size_t vocabulary) {
  trainer::fingerprint f;
  f.add(vocabulary);
  f.add_span(std::span<const std::uint32_t>(c.first));
  f.add_span(std::span<const std::uint32_t>(c.words));
  f.add(c.topics.size());
  for (const auto& topic : c.topics) f.add_span(std::span<const double>(topic));
  return f.value();
}

/// "N documents, T tokens, V words": a corpus named for people.
inline std::string summary(const corpus& c, std::size_t vocabulary) {
  return std::to_string(c.documents()) + " documents, " + std::to_string(c.words.size()) + " tokens, " +
         std::to_string(vocabulary) + " words";
}

/// The corpus options both LDA trainers take.
inline void add_corpus_options(CLI::App& app, corpus_settings& s) {
  auto range = [](std::size_t lo, std::size_t hi, const std::string& what) {
    return cli::number_where<std::size_t>(
        [lo, hi](std::size_t v) { return v >= lo && v <= hi; },
        "needs " + std::to_string(lo) + " .. " + std::to_string(hi) + " " + what);
  };
  app.add_option("--topics", s.topics, "planted and learned topics, default 10")
      ->option_text("K")
      ->check(range(2, 1000, "topics"));
  auto* file = app.add_option("--corpus", s.file,
                              "read the corpus from FILE (one document per line:\n"
                              "'doc word:count ...', # comments) instead of generating it")
                   ->option_text("FILE")
                   ->check(cli::not_empty());
  auto generated = [&](CLI::Option* o) { o->excludes(file); };
  app.add_option("--vocabulary", s.vocabulary,
                 "distinct words, default 1000 (with --corpus: the file's\nlargest word id + 1)")
      ->option_text("V")
      ->check(range(2, max_vocabulary, "words"));
  generated(app.add_option("--documents", s.documents, "documents, default 1000")
                ->option_text("D")
                ->check(range(1, 10000000, "documents")));
  generated(app.add_option("--length", s.length, "tokens per document, default 100")
                ->option_text("N")
                ->check(range(1, max_document_tokens, "tokens")));
  generated(app.add_option("--topic-prior", s.topic_prior,
                           "Dirichlet parameter of the planted topics, default 0.05")
                ->option_text("X")
                ->check(cli::positive_number<double>()));
  generated(app.add_option("--doc-prior", s.doc_prior,
                           "Dirichlet parameter of the documents' mixtures,\ndefault 0.1")
                ->option_text("X")
                ->check(cli::positive_number<double>()));
  app.add_option("--write-corpus", s.write, "also write the corpus used to FILE (the --corpus format)")
      ->option_text("FILE")
      ->check(cli::not_empty());
  app.add_option("--top", s.top, "top words compared per topic, default 10")
      ->option_text("N")
      ->check(range(1, 1000, "words"));
  app.add_option("--seed", s.seed, "corpus and sampling seed, default 1")
      ->option_text("N")
      ->check(cli::whole_number<std::uint64_t>(0));
}

/// Checks of the corpus options after parsing (usage errors).
inline void check_corpus_settings(const CLI::App& app, corpus_settings& s) {
  s.vocabulary_given = app.count("--vocabulary") > 0;
  if (!s.file.empty()) return;  // the file's limits are the reader's
  if (static_cast<double>(s.documents) * static_cast<double>(s.length) > 1e8)
    throw cli::usage_error("--documents x --length is more than 10^8 tokens");
  if (static_cast<double>(s.vocabulary) * static_cast<double>(s.topics) > 1e8)
    throw cli::usage_error("--vocabulary x --topics is more than 10^8 counts");
  if (s.top > s.vocabulary)
    throw cli::usage_error("--top " + std::to_string(s.top) + " is more than the --vocabulary of " +
                           std::to_string(s.vocabulary) + " words");
}

/// --csv FILE: one row per iteration, `iteration,seconds,loglik`.
class csv_log {
 public:
  explicit csv_log(const std::string& path) {
    if (path.empty()) return;
    file_.reset(std::fopen(path.c_str(), "w"));
    if (!file_) throw std::runtime_error("cannot write " + path);
    std::fprintf(file_.get(), "iteration,seconds,loglik\n");
  }
  void row(std::size_t iteration, double seconds, double loglik) {
    if (!file_) return;
    std::fprintf(file_.get(), "%zu,%.6f,%.6f\n", iteration, seconds, loglik);
    std::fflush(file_.get());
  }

 private:
  struct closer {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  std::unique_ptr<std::FILE, closer> file_;
};

/// log p(w, z) of the counts (Griffiths and Steyvers), as a sum of shares
/// that members compute from the rows they own:
///   word w:     sum_k [lgamma(n_wk + beta) - lgamma(beta)]
///   document d: sum_k [lgamma(n_dk + alpha) - lgamma(alpha)] + lgamma(K alpha) - lgamma(n_d + K alpha)
///   totals:     K lgamma(V beta) - sum_k lgamma(n_k + V beta)
/// (rows of zeros add 0, so the documents of a failed member drop out).
inline double word_share(std::span<const count> n, double beta) {
  double ll = 0;
  for (count x : n) ll += std::lgamma(x + beta) - std::lgamma(beta);
  return ll;
}
inline double doc_share(std::span<const count> n, double alpha) {
  double ll = 0, total = 0;
  for (count x : n) {
    ll += std::lgamma(x + alpha) - std::lgamma(alpha);
    total += x;
  }
  const double Ka = static_cast<double>(n.size()) * alpha;
  return ll + std::lgamma(Ka) - std::lgamma(total + Ka);
}
inline double totals_share(std::span<const count> n, double Vbeta) {
  double ll = 0;
  for (count x : n) ll += std::lgamma(Vbeta) - std::lgamma(x + Vbeta);
  return ll;
}

/// The members' shares of the log-likelihood, summed in two rows of 32-bit

/// The final word-topic counts (V x K), which the leader reads at the end.
struct counts_view {
  std::vector<count> word_topic;
};

/// The `top` entries of `weights` (w x K, column k) with the largest values.
inline std::vector<std::size_t> top_words(const std::vector<double>& column, std::size_t top) {
  std::vector<std::size_t> ids(column.size());
  std::iota(ids.begin(), ids.end(), std::size_t{0});
  top = std::min(top, ids.size());
  std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(top), ids.end(),
                    [&](std::size_t x, std::size_t y) {
                      return column[x] > column[y] || (column[x] == column[y] && x < y);
                    });
  ids.resize(top);
  std::sort(ids.begin(), ids.end());
  return ids;
}

struct recovery {
  double mean = 0, least = 1;
  std::vector<std::pair<std::size_t, std::size_t>> best;  // per planted topic: learned topic, shared words
};

/// For every planted topic, the learned topic sharing most of its top
/// words, and how many it shares.
inline recovery match_topics(const corpus& c, const counts_view& counts, const corpus_settings& s) {
  const std::size_t K = s.topics, V = s.vocabulary, T = std::min(s.top, V);
  std::vector<std::vector<std::size_t>> learned(K);
  std::vector<double> column(V);
  for (std::size_t k = 0; k < K; ++k) {
    for (std::size_t w = 0; w < V; ++w) column[w] = counts.word_topic[w * K + k];
    learned[k] = top_words(column, T);
  }
  recovery r;
  r.mean = 0;
  for (std::size_t p = 0; p < K; ++p) {
    const std::vector<std::size_t> planted = top_words(c.topics[p], T);
    std::pair<std::size_t, std::size_t> best{0, 0};
    for (std::size_t k = 0; k < K; ++k) {
      std::vector<std::size_t> both;
      std::set_intersection(planted.begin(), planted.end(), learned[k].begin(), learned[k].end(),
                            std::back_inserter(both));
      if (both.size() > best.second) best = {k, both.size()};
    }
    r.best.push_back(best);
    const double share = static_cast<double>(best.second) / static_cast<double>(T);
    r.mean += share / static_cast<double>(K);
    r.least = std::min(r.least, share);
  }
  return r;
}

/// The result lines of dml-lda and dml-smp-lda: how each planted topic's
/// top words are found in the learned topics, and the 'final:' line (from
/// a corpus file, with no planted topics, only the 'final:' line).
inline void print_final(const corpus& c, const counts_view& counts, const corpus_settings& s, double loglik,
                        double seconds, std::size_t iterations) {
  if (c.topics.empty()) {
    std::printf("final: loglik=%.5f seconds=%.3f iterations=%zu\n", loglik, seconds, iterations);
  } else {
    const recovery rec = match_topics(c, counts, s);
    const std::size_t T = std::min(s.top, s.vocabulary);
    for (std::size_t p = 0; p < rec.best.size(); ++p)
      std::printf("topic %zu: best match learned topic %zu, %zu of its %zu top words\n", p, rec.best[p].first,
                  rec.best[p].second, T);
    std::printf("final: loglik=%.5f seconds=%.3f recovery=%.3f least=%.3f iterations=%zu\n", loglik, seconds,
                rec.mean, rec.least, iterations);
  }
  std::fflush(stdout);
}

}  // namespace lda

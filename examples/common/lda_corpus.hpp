// SPDX-License-Identifier: BSL-1.0
// What dml-lda (parameter tables) and dml-smp-lda (the static rotation
// engine) share: the corpus generated from the LDA model with planted
// topics, log p(w, z) as a sum of per-row shares, and the report of how the
// planted topics are found among the learned ones.
//
// The corpus: K planted topics, each a distribution over V words drawn from
// a symmetric Dirichlet(topic_prior); every document draws its topic
// mixture from Dirichlet(doc_prior) and each of its `length` tokens a topic
// from the mixture and a word from that topic.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <numeric>
#include <random>
#include <span>
#include <utility>
#include <vector>

namespace lda {

using count = std::int32_t;

/// What the generator and the topic report read.
struct corpus_settings {
  std::size_t topics = 10, vocabulary = 1000, documents = 1000, length = 100, top = 10;
  double topic_prior = 0.05, doc_prior = 0.1;
  std::uint64_t seed = 1;
};

struct corpus {
  std::vector<std::vector<double>> topics;  // planted: K distributions over V words
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
    c.first.push_back(static_cast<std::uint32_t>(c.words.size()));
  }
  return c;
}

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

}  // namespace lda

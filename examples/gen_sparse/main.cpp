// SPDX-License-Identifier: BSL-1.0
// dml-gen-sparse: writes a sparse text-classification-like data set in
// LIBSVM format, with a planted truth, for the sparse trainers and their
// tests (no sparse text corpus ships with Debian).
//
// A row is a "document": words drawn from a power-law (Zipf) vocabulary of
// four words per feature, hashed into 2^bits features as the hashing trick
// does (distinct words may share a feature), valued tf-idf style
// ((1 + ln tf) * (1 + s ln rank), so frequent words weigh less) and scaled
// to unit length. The label comes from a planted linear model over the
// features -- binary: the sign of w*.x + b*; multiclass: the class whose
// row of W* (plus bias) scores highest -- and is then replaced by a wrong one
// with probability --noise. The planted weights are standard normal on the
// features of --informative mid-frequency words and zero elsewhere (a topic
// is told by its common words, not by stop words or typos); the biases
// centre each class's scores, so that classes come out about equally often.
// Weights are a pure function of (seed, feature, class), so train and test
// files share them, and everything is a function of --seed: the same
// command writes the same files on every run.
//
// The planted model labels (1 - noise) of the rows correctly (the tool
// prints the share it measured on the test rows): no linear model can be
// expected to do better on the test file, and a learner's gap to it is what
// finite data, noise and the uninformative words cost.
#include <dml/data/shard.hpp>

#include "../common/cli.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <numbers>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace {

using cli::usage_error;

struct options {
  unsigned bits = 18;
  std::size_t rows = 10000, test_rows = 0;  // 0: rows / 4
  double density = 0.01;
  std::size_t nnz = 0;  // 0: from the density
  double zipf = 1.1, noise = 0.05;
  unsigned classes = 2;
  std::size_t informative = 1024;  // words whose features carry planted weight
  std::size_t skip = 100;          // ... after the most frequent ones
  std::uint64_t seed = 1;
  std::string out;
};

std::uint64_t mix(std::uint64_t a, std::uint64_t b) {
  dml::data::splitmix64 g(a * 0x9e3779b97f4a7c15ULL ^ b);
  g();
  return g();
}

// Uniform in (0, 1): 53 random bits, never 0.
double uniform(dml::data::splitmix64& g) { return (static_cast<double>(g() >> 11) + 0.5) * 0x1p-53; }

// The planted weight of (feature, class): standard normal (Box-Muller).
double planted_weight(std::uint64_t seed, std::uint32_t feature, unsigned c) {
  dml::data::splitmix64 g(mix(mix(seed, 0x5eed), (std::uint64_t{c} << 32) | feature));
  const double u = uniform(g), v = uniform(g);
  return std::sqrt(-2.0 * std::log(u)) * std::cos(2.0 * std::numbers::pi * v);
}

class generator {
 public:
  explicit generator(const options& o) : o_(o), width_(std::uint64_t{1} << o.bits) {
    // The vocabulary has four words per feature, so hashing collides as it
    // does on real text.
    vocabulary_ = 4.0 * static_cast<double>(width_);
    words_per_row_ =
        o.nnz ? static_cast<double>(o.nnz) : std::max(1.0, o.density * static_cast<double>(width_));
    // The planted model weighs the features that --informative frequent
    // words hash to, after the --skip most frequent: a topic is told by
    // its common words, not by stop words every document has or by typos.
    // The rest of the vocabulary is noise a learner must learn to ignore.
    const auto top = std::min(static_cast<double>(o.skip + o.informative), vocabulary_);
    for (double rank = static_cast<double>(o.skip) + 1; rank <= top; ++rank) {
      const auto [it, fresh] = slot_.try_emplace(feature_of(rank), static_cast<std::uint32_t>(slot_.size()));
      if (fresh)
        for (unsigned c = 0; c < scored(); ++c) weights_.push_back(planted_weight(o.seed, it->first, c));
    }
    // A bias per class that centres its scores on a pilot sample of
    // documents, so that no class wins by the words every document has.
    bias_.assign(scored(), 0.0);
    std::vector<std::vector<double>> scores(scored());
    std::vector<std::pair<std::uint32_t, double>> x;
    for (std::size_t r = 0; r < 1000; ++r) {
      dml::data::splitmix64 g(mix(mix(o.seed, 3), r));
      document(g, x);
      for (unsigned c = 0; c < scored(); ++c) scores[c].push_back(score(x, c));
    }
    for (unsigned c = 0; c < scored(); ++c) {
      std::nth_element(scores[c].begin(), scores[c].begin() + 500, scores[c].end());
      bias_[c] = -scores[c][500];
    }
  }

  struct summary {
    std::size_t rows = 0, nonzeros = 0, clean = 0;  // clean: label = the planted model's
  };

  // Writes `rows` rows of part 0 (train) or 1 (test) to `path`.
  summary write(const std::string& path, int part, std::size_t rows) {
    std::FILE* f = std::fopen(path.c_str(), "w");
    if (!f) throw std::runtime_error("cannot write " + path);
    summary s;
    std::string line;
    std::vector<std::pair<std::uint32_t, double>> x;
    for (std::size_t r = 0; r < rows; ++r) {
      dml::data::splitmix64 g(mix(mix(o_.seed, static_cast<std::uint64_t>(part) + 1), r));
      document(g, x);
      const unsigned truth = best_class(x);
      unsigned label = truth;
      if (uniform(g) < o_.noise) {  // a wrong label, uniformly among the others
        const auto other = static_cast<unsigned>(dml::data::uniform_below(g, o_.classes - 1));
        label = other < truth ? other : other + 1;
      }
      s.clean += label == truth;
      s.nonzeros += x.size();
      line.clear();
      line += o_.classes == 2 ? (label == 1 ? "1" : "-1") : std::to_string(label);
      char number[32];
      for (const auto& [feature, value] : x) {
        const auto index = std::to_chars(number, number + sizeof number, feature + std::uint64_t{1}).ptr;
        *index = ':';
        const int n = std::snprintf(index + 1, number + sizeof number - index - 1, "%.6g", value);
        line.push_back(' ');
        line.append(number, static_cast<std::size_t>(index + 1 + n - number));
      }
      line.push_back('\n');
      if (std::fwrite(line.data(), 1, line.size(), f) != line.size()) {
        std::fclose(f);
        throw std::runtime_error("cannot write " + path + " (disk full?)");
      }
    }
    if (std::fclose(f) != 0) throw std::runtime_error("cannot write " + path + " (disk full?)");
    s.rows = rows;
    return s;
  }

  [[nodiscard]] std::uint64_t width() const noexcept { return width_; }
  // Rows of W*: one weight vector decides two classes.
  [[nodiscard]] unsigned scored() const noexcept { return o_.classes == 2 ? 1 : o_.classes; }
  [[nodiscard]] double words_per_row() const noexcept { return words_per_row_; }

 private:
  // A Zipf-distributed word rank in [1, vocabulary] (inverse of the
  // continuous power law's distribution function).
  double word(dml::data::splitmix64& g) const {
    const double u = uniform(g), s = o_.zipf;
    if (std::abs(s - 1.0) < 1e-9) return std::floor(std::exp(u * std::log(vocabulary_)));
    const double a = 1.0 - s;
    return std::min(vocabulary_, std::floor(std::pow(1.0 + u * (std::pow(vocabulary_, a) - 1.0), 1.0 / a)));
  }

  // One document: distinct features, ascending, with unit-length values.
  void document(dml::data::splitmix64& g, std::vector<std::pair<std::uint32_t, double>>& x) {
    // Documents differ in length: the target number of distinct features is
    // uniform in [words/2, 3 words/2].
    const double lo = std::max(1.0, std::floor(words_per_row_ / 2)), hi = std::ceil(1.5 * words_per_row_);
    const auto want = static_cast<std::size_t>(std::min<double>(
        static_cast<double>(width_),
        lo + static_cast<double>(dml::data::uniform_below(g, static_cast<std::uint64_t>(hi - lo) + 1))));
    counts_.clear();
    // Frequent words repeat; a cap on draws ends documents of a vocabulary
    // too small for the wanted number of distinct features.
    for (std::size_t draws = 0; counts_.size() < want && draws < 50 * want; ++draws) {
      const double rank = word(g);
      const auto feature = feature_of(rank);
      auto [it, fresh] = counts_.try_emplace(feature, 0u, 1.0 + o_.zipf * std::log(rank));
      ++it->second.first;
    }
    x.clear();
    double norm2 = 0;
    for (const auto& [feature, c] : counts_) {
      const double v = (1.0 + std::log(static_cast<double>(c.first))) * c.second;
      x.emplace_back(feature, v);
      norm2 += v * v;
    }
    std::sort(x.begin(), x.end());
    const double scale = 1.0 / std::sqrt(norm2);
    for (auto& e : x) e.second *= scale;
  }

  std::uint32_t feature_of(double rank) const {
    return static_cast<std::uint32_t>(mix(o_.seed, static_cast<std::uint64_t>(rank)) >> (64 - o_.bits));
  }

  // W*[c] . x, without the bias.
  double score(const std::vector<std::pair<std::uint32_t, double>>& x, unsigned c) const {
    double sum = 0;
    for (const auto& [feature, value] : x)
      if (const auto it = slot_.find(feature); it != slot_.end())
        sum += value * weights_[it->second * scored() + c];
    return sum;
  }

  // Binary: class 1 when w*.x + b* >= 0; multiclass: the best-scoring class.
  unsigned best_class(const std::vector<std::pair<std::uint32_t, double>>& x) const {
    unsigned best = 0;
    double top = 0;
    for (unsigned c = 0; c < scored(); ++c) {
      const double s = score(x, c) + bias_[c];
      if (c == 0 || s > top) {
        top = s;
        best = c;
      }
    }
    if (o_.classes == 2) return top >= 0 ? 1 : 0;
    return best;
  }

  options o_;
  std::uint64_t width_;
  double vocabulary_ = 0, words_per_row_ = 0;
  // The informative features' rows of W*: feature -> slot, and
  // weights_[slot * scored() + class].
  std::unordered_map<std::uint32_t, std::uint32_t> slot_;
  std::vector<double> weights_;
  std::vector<double> bias_;  // per scored class
  // feature -> (term count, idf of the first word hashed to it)
  std::unordered_map<std::uint32_t, std::pair<unsigned, double>> counts_;
};

constexpr const char* description =
    R"(Writes PREFIX.train and PREFIX.test in LIBSVM format: documents of Zipf-
distributed words hashed into 2^bits features (tf-idf values, unit-length
rows) labelled by a planted linear model, with label noise. Deterministic:
the same options write the same files.)";

// The command line into o: --help printed (false), or parsed and checked.
bool parse(int argc, char** argv, options& o) {
  const auto app = cli::app("dml-gen-sparse", description);
  app->get_formatter()->column_width(19);
  app->add_option("--out", o.out, "file name prefix (required)")
      ->option_text("PREFIX")
      ->check(cli::not_empty("a file name prefix"));
  app->add_option("--bits", o.bits, "2^K features, 4..26, default 18")
      ->option_text("K")
      ->check(cli::number_where<unsigned>([](unsigned b) { return b >= 4 && b <= 26; },
                                          "must be 4..26 (2^4 to 2^26 features)"));
  const auto rows = [](unsigned long long n) { return n >= 1 && n <= 100000000; };
  app->add_option("--rows", o.rows, "training rows, default 10000")
      ->option_text("N")
      ->check(cli::number_where<unsigned long long>(rows, "must be 1..100000000"));
  app->add_option("--test-rows", o.test_rows, "test rows, default rows / 4")
      ->option_text("N")
      ->check(cli::number_where<unsigned long long>(rows, "must be 1..100000000"));
  app->add_option("--density", o.density, "distinct features per row as a share of 2^K, default 0.01")
      ->option_text("X")
      ->check(cli::number_where<double>([](double d) { return d > 0 && d <= 1; }, "must be in (0, 1]"));
  app->add_option(
         "--nnz", o.nnz,
         "distinct features per row (overrides --density); rows\nvary uniformly between N/2 and 3N/2")
      ->option_text("N")
      ->check(cli::number_where<unsigned long long>(
          [](unsigned long long n) { return n >= 1 && n <= 1000000; }, "must be 1..1000000"));
  app->add_option("--zipf", o.zipf, "power-law exponent of the vocabulary, default 1.1")
      ->option_text("S")
      ->check(cli::number_where<double>([](double z) { return z > 0 && z <= 4; }, "must be in (0, 4]"));
  app->add_option("--noise", o.noise, "share of rows whose label is replaced by a wrong one,\ndefault 0.05")
      ->option_text("P")
      ->check(cli::number_where<double>([](double p) { return p >= 0 && p < 0.5; }, "must be in [0, 0.5)"));
  app->add_option("--classes", o.classes,
                  "2: labels -1/1 (sign of w*.x); 3..100: labels 0..C-1\n(argmax of W*x); default 2")
      ->option_text("C")
      ->check(cli::number_where<unsigned>([](unsigned c) { return c >= 2 && c <= 100; }, "must be 2..100"));
  app->add_option("--informative", o.informative,
                  "the planted model weighs the features of the N most\nfrequent words after the --skip most "
                  "frequent (the rest\nis noise), default 1024")
      ->option_text("N")
      ->check(
          cli::number_where<unsigned long long>([](unsigned long long n) { return n >= 1; }, "must be >= 1"));
  app->add_option("--skip", o.skip,
                  "the most frequent words without planted weight (stop\nwords), default 100")
      ->option_text("N")
      ->check(cli::whole_number(0));
  app->add_option("--seed", o.seed, "default 1")
      ->option_text("N")
      ->check(cli::whole_number<std::uint64_t>(0));
  if (!cli::parse(*app, argc, argv)) return false;
  if (o.out.empty()) throw usage_error("--out PREFIX is required (writes PREFIX.train and PREFIX.test)");
  if (o.test_rows == 0) o.test_rows = std::max<std::size_t>(1, o.rows / 4);
  const double words =
      o.nnz ? static_cast<double>(o.nnz) : o.density * std::ldexp(1.0, static_cast<int>(o.bits));
  if (words > 1000000) throw usage_error("more than 10^6 nonzeros per row: lower --density or set --nnz");
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  try {
    if (!parse(argc, argv, o)) return 0;  // --help
  } catch (const usage_error& e) {
    std::fprintf(stderr, "dml-gen-sparse: %s (see --help)\n", e.what());
    return 2;
  }
  try {
    generator gen(o);
    const auto train = gen.write(o.out + ".train", 0, o.rows);
    const auto test = gen.write(o.out + ".test", 1, o.test_rows);
    std::printf(
        "dml-gen-sparse: %s.train (%zu rows) and %s.test (%zu rows): 2^%u = %llu features, %.1f nonzeros per "
        "row (density %.5f), %u classes, label noise %g, seed %llu\n",
        o.out.c_str(), train.rows, o.out.c_str(), test.rows, o.bits,
        static_cast<unsigned long long>(gen.width()),
        static_cast<double>(train.nonzeros) / static_cast<double>(train.rows),
        static_cast<double>(train.nonzeros) / static_cast<double>(train.rows) /
            static_cast<double>(gen.width()),
        o.classes, o.noise, static_cast<unsigned long long>(o.seed));
    std::printf("planted model: test accuracy %.4f (the labels it agrees with; 1 - noise = %.4f)\n",
                static_cast<double>(test.clean) / static_cast<double>(test.rows), 1.0 - o.noise);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dml-gen-sparse: %s\n", e.what());
    return 1;
  }
}

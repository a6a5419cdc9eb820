// SPDX-License-Identifier: BSL-1.0
/// @file
/// A reader and a writer for bag-of-words corpora (topic models such as
/// LDA), one document per line:
///
///     <doc id> <word>:<count> <word>:<count> ...   # optional comment
///
/// The document id is a whole number (unique in the file; documents keep
/// the file's order), words are 0-based whole-number ids in any order (each
/// at most once per line), counts whole numbers >= 1. A line holding only a
/// document id is an empty document; blank lines and lines holding only a
/// comment are skipped. Every problem is a dml::data_error naming the file
/// and the 1-based line. What a file can make the reader allocate is
/// bounded by its size and the limits of bag_of_words_options, never by a
/// number written in it: a word id or count beyond a limit is an error
/// naming the limit, and the counts are kept as numbers, not expanded.
#pragma once

#include <dml/data/detail/text.hpp>
#include <dml/error.hpp>
#include <dml/version.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

DML_BEGIN_NAMESPACE
namespace data {

/// Limits of read_bag_of_words(); each one is an error when exceeded.
struct bag_of_words_options {
  /// Word ids must be below this (10^7 by default): the vocabulary a
  /// sampler sizes its word-topic counts by is at most this many words.
  std::size_t max_vocabulary = 10'000'000;
  /// The sum of one document's counts (its tokens), 10^6 by default.
  std::size_t max_document_tokens = 1'000'000;
  /// The sum of all counts in the file, 10^8 by default.
  std::size_t max_tokens = 100'000'000;
  /// The longest line read, 64 MiB by default.
  std::size_t max_line_bytes = std::size_t{64} << 20;
};

/// A corpus: document d has the (word, count) pairs
/// words[first[d] .. first[d + 1]) and counts[...], words increasing.
struct bag_of_words {
  std::vector<std::uint64_t> ids;     ///< each document's id, in file order
  std::vector<std::size_t> lines;     ///< each document's 1-based line in the file
  std::vector<std::size_t> first{0};  ///< documents() + 1 offsets into words and counts
  std::vector<std::uint32_t> words;
  std::vector<std::uint32_t> counts;
  std::size_t vocabulary = 0;  ///< the largest word id + 1 (0 without any word)
  std::size_t tokens = 0;      ///< the sum of all counts

  [[nodiscard]] std::size_t documents() const noexcept { return first.size() - 1; }
  /// Appends a document; `pairs` are (word, count) with distinct words and
  /// counts >= 1, in any order. The writer's counterpart of one line.
  void add(std::uint64_t id, std::vector<std::pair<std::uint32_t, std::uint32_t>> pairs,
           std::size_t line = 0) {
    std::sort(pairs.begin(), pairs.end());
    for (const auto& [w, c] : pairs) {
      words.push_back(w);
      counts.push_back(c);
      vocabulary = std::max(vocabulary, std::size_t{w} + 1);
      tokens += c;
    }
    ids.push_back(id);
    lines.push_back(line);
    first.push_back(words.size());
  }
};

namespace detail {

inline std::string_view bag_content(std::string_view line) {
  const auto hash = line.find('#');
  return trim(hash == std::string_view::npos ? line : line.substr(0, hash));
}

}  // namespace detail

/// Reads a bag-of-words file (format above) whole. Throws data_error naming
/// the file and line for a malformed line, a repeated document id, a word
/// repeated on a line, a word id or count beyond the limits of `options`;
/// and for a file without documents.
inline bag_of_words read_bag_of_words(const std::string& path, const bag_of_words_options& options = {}) {
  using detail::quote;
  if (options.max_vocabulary == 0 || options.max_vocabulary > (std::size_t{1} << 32))
    throw config_error("dml::data::read_bag_of_words: max_vocabulary must be 1 .. 2^32, got " +
                       std::to_string(options.max_vocabulary));
  if (options.max_document_tokens == 0 || options.max_document_tokens > 0xffffffffu)
    throw config_error("dml::data::read_bag_of_words: max_document_tokens must be 1 .. 2^32 - 1, got " +
                       std::to_string(options.max_document_tokens));
  if (options.max_line_bytes == 0)
    throw config_error("dml::data::read_bag_of_words: max_line_bytes must be at least 1");
  bag_of_words out;
  detail::line_reader reader(path, options.max_line_bytes);
  std::unordered_map<std::uint64_t, std::size_t> seen;  // id -> line; as large as the lines read
  std::vector<std::pair<std::uint32_t, std::uint32_t>> pairs;
  std::string text;
  for (std::size_t number = 1; reader.next(text, number); ++number) {
    const std::string_view content = detail::bag_content(text);
    if (content.empty()) continue;
    auto fail = [&](const std::string& reason) { throw data_error(path, number, reason); };
    std::size_t pos = 0, document_tokens = 0;
    bool first = true;
    std::uint64_t id = 0;
    pairs.clear();
    while (pos < content.size()) {
      const auto end = content.find_first_of(" \t", pos);
      const std::string_view token = content.substr(pos, end == std::string_view::npos ? end : end - pos);
      pos = end == std::string_view::npos ? content.size() : content.find_first_not_of(" \t", end);
      if (first) {
        first = false;
        if (token.find(':') != std::string_view::npos) fail("missing document id before " + quote(token));
        if (!detail::parse_whole(token, id))
          fail("bad document id " + quote(token) + ": not a whole number >= 0");
        if (const auto [at, fresh] = seen.emplace(id, number); !fresh)
          fail("document id " + std::to_string(id) + " again (first on line " + std::to_string(at->second) +
               ")");
        continue;
      }
      const auto colon = token.find(':');
      if (colon == std::string_view::npos) fail("expected word:count, got " + quote(token));
      const std::string_view word_text = token.substr(0, colon), count_text = token.substr(colon + 1);
      std::uint64_t word = 0, count = 0;
      if (!detail::parse_whole(word_text, word))
        fail("bad word id " + quote(word_text) + ": not a whole number >= 0");
      if (word >= options.max_vocabulary)
        fail("word id " + std::string(word_text.substr(0, 40)) +
             " beyond bag_of_words_options::max_vocabulary = " + std::to_string(options.max_vocabulary) +
             " words");
      if (!detail::parse_whole(count_text, count) || count == 0)
        fail("bad count " + quote(count_text) + " of word " + std::to_string(word) +
             ": not a whole number >= 1");
      if (count > options.max_document_tokens - document_tokens)
        fail("document " + std::to_string(id) +
             " has more than bag_of_words_options::max_document_tokens = " +
             std::to_string(options.max_document_tokens) + " tokens");
      document_tokens += static_cast<std::size_t>(count);
      pairs.emplace_back(static_cast<std::uint32_t>(word), static_cast<std::uint32_t>(count));
    }
    if (document_tokens > options.max_tokens - std::min(options.max_tokens, out.tokens))
      fail("the file has more than bag_of_words_options::max_tokens = " + std::to_string(options.max_tokens) +
           " tokens");
    std::sort(pairs.begin(), pairs.end());
    for (std::size_t i = 1; i < pairs.size(); ++i)
      if (pairs[i].first == pairs[i - 1].first)
        fail("word " + std::to_string(pairs[i].first) + " twice in document " + std::to_string(id));
    out.add(id, std::move(pairs), number);
    pairs = {};
  }
  if (out.documents() == 0) throw data_error(path, 0, "no documents (every line blank or a comment)");
  return out;
}

/// Writes `corpus` in the format read_bag_of_words() reads. Throws
/// dml::error when the file cannot be written.
inline void write_bag_of_words(const std::string& path, const bag_of_words& corpus) {
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "w"), &std::fclose);
  if (!file) throw error("dml::data::write_bag_of_words: cannot write " + path);
  bool ok = true;
  for (std::size_t d = 0; d < corpus.documents() && ok; ++d) {
    ok = std::fprintf(file.get(), "%llu", static_cast<unsigned long long>(corpus.ids[d])) > 0;
    for (std::size_t i = corpus.first[d]; i < corpus.first[d + 1] && ok; ++i)
      ok = std::fprintf(file.get(), " %u:%u", static_cast<unsigned>(corpus.words[i]),
                        static_cast<unsigned>(corpus.counts[i])) > 0;
    ok = ok && std::fputc('\n', file.get()) != EOF;
  }
  if (!ok || std::fflush(file.get()) != 0) throw error("dml::data::write_bag_of_words: cannot write " + path);
}

}  // namespace data
DML_END_NAMESPACE

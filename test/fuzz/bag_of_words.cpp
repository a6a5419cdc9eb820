// SPDX-License-Identifier: BSL-1.0
// Fuzz target: the bag-of-words reader, with default limits and with tiny
// ones. Every result must be consistent with the limits it was read under.
#include <dml/data/bag_of_words.hpp>

#include "fuzz.hpp"

#include <cstddef>
#include <cstdint>

namespace {
void read_and_check(const std::string& path, const dml::data::bag_of_words_options& o) {
  try {
    const dml::data::bag_of_words c = dml::data::read_bag_of_words(path, o);
    DML_FUZZ_CHECK(c.documents() > 0);
    DML_FUZZ_CHECK(c.ids.size() == c.documents() && c.lines.size() == c.documents());
    DML_FUZZ_CHECK(c.words.size() == c.counts.size() && c.first.back() == c.words.size());
    DML_FUZZ_CHECK(c.vocabulary <= o.max_vocabulary && c.tokens <= o.max_tokens);
    std::size_t tokens = 0;
    for (std::size_t d = 0; d < c.documents(); ++d) {
      DML_FUZZ_CHECK(c.first[d] <= c.first[d + 1]);
      std::size_t in_document = 0;
      for (std::size_t i = c.first[d]; i < c.first[d + 1]; ++i) {
        DML_FUZZ_CHECK(c.words[i] < c.vocabulary && c.counts[i] >= 1);
        DML_FUZZ_CHECK(i == c.first[d] || c.words[i - 1] < c.words[i]);
        in_document += c.counts[i];
      }
      DML_FUZZ_CHECK(in_document <= o.max_document_tokens);
      tokens += in_document;
    }
    DML_FUZZ_CHECK(tokens == c.tokens);
  } catch (const dml::data_error& e) {
    DML_FUZZ_CHECK(e.reason().size() < 400);  // tokens are cut, never copied whole
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static dml_fuzz::scratch_file file;
  const std::string& path = file.hold(data, size);
  dml::data::bag_of_words_options o;
  read_and_check(path, o);
  o.max_vocabulary = 16;
  o.max_document_tokens = 20;
  o.max_tokens = 50;
  o.max_line_bytes = 64;
  read_and_check(path, o);
  return 0;
}

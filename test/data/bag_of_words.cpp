// SPDX-License-Identifier: BSL-1.0
// The bag-of-words reader and writer: a well-formed file, a round trip, the
// limits that keep a hostile number from sizing an allocation, and every
// malformed case as a data_error naming file and line.
#include <dml/data/bag_of_words.hpp>

#include "support/catch.hpp"
#include "temp_dir.hpp"

#include <string>
#include <utility>
#include <vector>

// This file's helpers and tests, apart from the other sources of its
// executable (tests are compiled several files at a time).
namespace data_bag_of_words_test {

namespace {
dml::data_error error_of(const std::string& path, const dml::data::bag_of_words_options& o = {}) {
  try {
    (void)dml::data::read_bag_of_words(path, o);
  } catch (const dml::data_error& e) {
    return e;
  }
  FAIL("no data_error for " << path);
  return dml::data_error("", 0, "");
}
}  // namespace

TEST_CASE("a well-formed bag-of-words file loads whole, words sorted") {
  dml_test::temp_dir dir;
  const auto path = dir.write("c.txt",
                              "# corpus\n"
                              "7 3:2 1:1\n"
                              "\n"
                              "2\t0:4   # trailing comment\r\n"
                              "5\n");
  const auto c = dml::data::read_bag_of_words(path);
  REQUIRE(c.documents() == 3);
  CHECK(c.ids == std::vector<std::uint64_t>{7, 2, 5});
  CHECK(c.lines == std::vector<std::size_t>{2, 4, 5});
  CHECK(c.first == std::vector<std::size_t>{0, 2, 3, 3});
  CHECK(c.words == std::vector<std::uint32_t>{1, 3, 0});
  CHECK(c.counts == std::vector<std::uint32_t>{1, 2, 4});
  CHECK(c.vocabulary == 4);
  CHECK(c.tokens == 7);
}

TEST_CASE("a written bag of words reads back the same") {
  dml_test::temp_dir dir;
  dml::data::bag_of_words c;
  c.add(10, {{5, 3}, {2, 1}});
  c.add(0, {});
  c.add(3, {{9, 7}});
  dml::data::write_bag_of_words(dir.path("w.txt"), c);
  const auto r = dml::data::read_bag_of_words(dir.path("w.txt"));
  CHECK(r.ids == c.ids);
  CHECK(r.first == c.first);
  CHECK(r.words == c.words);
  CHECK(r.counts == c.counts);
  CHECK(r.vocabulary == 10);
  CHECK(r.tokens == 11);
}

TEST_CASE("malformed bag-of-words lines are data_errors naming file and line") {
  dml_test::temp_dir dir;
  // Each: the second line, the reason expected in the message.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"1:2 3:4", "missing document id before '1:2'"},
      {"x 1:2", "bad document id 'x'"},
      {"-3 1:2", "bad document id '-3'"},
      {"1 1:2", "document id 1 again (first on line 1)"},
      {"2 12", "expected word:count, got '12'"},
      {"2 a:1", "bad word id 'a'"},
      {"2 :1", "bad word id ''"},
      {"2 4000000000:1", "word id 4000000000 beyond bag_of_words_options::max_vocabulary = 10000000"},
      {"2 99999999999999999999999:1", "bad word id '99999999999999999999999'"},
      {"2 3:0", "bad count '0' of word 3"},
      {"2 3:-1", "bad count '-1' of word 3"},
      {"2 3:1.5", "bad count '1.5' of word 3"},
      {"2 3:1000000000000", "document 2 has more than bag_of_words_options::max_document_tokens = 1000000"},
      {"2 3:600000 4:600000", "document 2 has more than bag_of_words_options::max_document_tokens"},
      {"2 3:1 3:2", "word 3 twice in document 2"},
  };
  for (const auto& [line, reason] : cases) {
    const auto path = dir.write("bad.txt", "1 0:1\n" + line + "\n");
    const auto e = error_of(path);
    INFO(line);
    CHECK(e.file() == path);
    CHECK(e.line() == 2);
    CHECK(e.reason().find(reason) == 0);
  }
}

TEST_CASE("the bag-of-words limits are errors, never allocations") {
  dml_test::temp_dir dir;
  dml::data::bag_of_words_options o;
  o.max_vocabulary = 100;
  o.max_document_tokens = 50;
  o.max_tokens = 60;
  CHECK(error_of(dir.write("v.txt", "1 100:1\n"), o).reason().find("max_vocabulary = 100") !=
        std::string::npos);
  CHECK(dml::data::read_bag_of_words(dir.write("v99.txt", "1 99:50\n"), o).vocabulary == 100);
  CHECK(error_of(dir.write("d.txt", "1 1:51\n"), o).reason().find("max_document_tokens = 50") !=
        std::string::npos);
  const auto total = error_of(dir.write("t.txt", "1 1:50\n2 2:10\n3 1:1\n"), o);
  CHECK(total.line() == 3);
  CHECK(total.reason().find("max_tokens = 60") != std::string::npos);
  o.max_line_bytes = 16;
  CHECK(error_of(dir.write("l.txt", "1 1:1 2:1 3:1 4:1 5:1\n"), o).line() == 1);
  CHECK(error_of(dir.write("empty.txt", "# nothing\n\n")).reason().find("no documents") == 0);
  CHECK(error_of(dir.path("missing.txt")).reason().find("cannot open") == 0);
  o = {};
  o.max_vocabulary = 0;
  CHECK_THROWS_AS(dml::data::read_bag_of_words(dir.write("ok.txt", "1 1:1\n"), o), dml::config_error);
}

}  // namespace data_bag_of_words_test

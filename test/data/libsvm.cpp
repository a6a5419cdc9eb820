// SPDX-License-Identifier: BSL-1.0
// The LIBSVM reader: well-formed files, shards, and every malformed case as
// a data_error naming file and line.
#include <dml/data/libsvm.hpp>

#include "support/catch.hpp"
#include "temp_dir.hpp"

#include <string>
#include <vector>

namespace {
const char* const sample_file =
    "# a comment line\n"
    "+1 1:0.5 3:2\n"
    "\n"
    "-1 2:1.5e1   # trailing comment\n"
    "2 qid:3 1:-1 4:0.25\r\n"
    "0\n";

float at(const dml::data::sparse_set& s, int r, int c) { return s.x.coeff(r, c); }

dml::data_error error_of(const std::string& path) {
  try {
    (void)dml::data::read_libsvm(path);
  } catch (const dml::data_error& e) {
    return e;
  }
  FAIL("no data_error for " << path);
  return dml::data_error("", 0, "");
}
}  // namespace

TEST_CASE("a well-formed LIBSVM file loads whole") {
  dml_test::temp_dir dir;
  const auto s = dml::data::read_libsvm(dir.write("a.txt", sample_file));
  REQUIRE(s.x.rows() == 4);
  REQUIRE(s.x.cols() == 4);
  REQUIRE(s.total == 4);
  REQUIRE(s.y[0] == 1.0f);
  REQUIRE(s.y[1] == -1.0f);
  REQUIRE(s.y[2] == 2.0f);
  REQUIRE(s.y[3] == 0.0f);
  REQUIRE(at(s, 0, 0) == 0.5f);
  REQUIRE(at(s, 0, 2) == 2.0f);
  REQUIRE(at(s, 1, 1) == 15.0f);
  REQUIRE(at(s, 2, 0) == -1.0f);
  REQUIRE(at(s, 2, 3) == 0.25f);
  REQUIRE(s.x.row(3).nonZeros() == 0);
  REQUIRE(s.lines == std::vector<std::size_t>{2, 4, 5, 6});
}

TEST_CASE("features fixes the width and rejects wider indices") {
  dml_test::temp_dir dir;
  const auto path = dir.write("a.txt", sample_file);
  dml::data::libsvm_options o;
  o.features = 10;
  REQUIRE(dml::data::read_libsvm(path, o).x.cols() == 10);
  o.features = 3;
  try {
    (void)dml::data::read_libsvm(path, o);
    FAIL("no error");
  } catch (const dml::data_error& e) {
    REQUIRE(e.line() == 5);
    REQUIRE_THAT(e.reason(), dml_test::contains("index 4 beyond the 3 features"));
  }
}

TEST_CASE("LIBSVM shards partition the samples, strided and contiguous") {
  dml_test::temp_dir dir;
  std::string text;
  for (int i = 0; i < 11; ++i)
    text += std::to_string(i) + " 1:" + std::to_string(i) + (i % 3 ? "\n" : "\n\n# c\n");
  const auto path = dir.write("many.txt", text);
  for (auto layout : {dml::data::shard_layout::strided, dml::data::shard_layout::contiguous}) {
    for (std::size_t members : {1u, 2u, 3u, 4u, 11u, 13u}) {
      std::vector<int> seen(11, 0);
      for (std::size_t m = 0; m < members; ++m) {
        dml::data::libsvm_options o;
        o.shard = {m, members, layout};
        o.features = 1;
        const auto s = dml::data::read_libsvm(path, o);
        REQUIRE(s.total == 11);
        REQUIRE(static_cast<std::size_t>(s.x.rows()) == o.shard.size(11));
        for (Eigen::Index r = 0; r < s.x.rows(); ++r) {
          const int label = static_cast<int>(s.y[r]);
          REQUIRE(o.shard.contains(static_cast<std::size_t>(label), 11));
          ++seen[static_cast<std::size_t>(label)];
        }
      }
      REQUIRE(seen == std::vector<int>(11, 1));
    }
  }
}

TEST_CASE("malformed LIBSVM lines are data_errors with file and line") {
  struct bad_case {
    const char* line;
    const char* reason;
  };
  const bad_case cases[] = {
      {"1 2:x", "bad value 'x'"},
      {"1 a:1", "bad index 'a'"},
      {"1 0:1", "index 0: indices start at 1"},
      {"1 3:1 2:1", "index 2 after 3: indices must increase"},
      {"1 2:1 2:1", "index 2 after 2: indices must increase"},
      {"1:1 2:1", "missing label before '1:1'"},
      {"abc 1:1", "bad label 'abc'"},
      {"1 5", "expected index:value, got '5'"},
      {"1 2:", "bad value ''"},
      {"1 :2", "bad index ''"},
      {"1 2:nan", "bad value 'nan'"},
      {"1 -2:1", "bad index '-2'"},
  };
  dml_test::temp_dir dir;
  for (const auto& c : cases) {
    INFO(c.line);
    const auto path = dir.write("bad.txt", std::string("1 1:1\n# fine\n") + c.line + "\n2 1:1\n");
    const auto e = error_of(path);
    REQUIRE(e.file() == path);
    REQUIRE(e.line() == 3);
    REQUIRE_THAT(e.reason(), dml_test::contains(c.reason));
    REQUIRE_THAT(std::string(e.what()), dml_test::contains(path + ":3: "));
  }
}

TEST_CASE("a missing LIBSVM file says so") {
  dml_test::temp_dir dir;
  const auto e = error_of(dir.path("none.txt"));
  REQUIRE(e.line() == 0);
  REQUIRE_THAT(e.reason(), dml_test::contains("cannot open the file"));
}

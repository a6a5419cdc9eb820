// SPDX-License-Identifier: BSL-1.0
// The LIBSVM reader: well-formed files, shards, and every malformed case as
// a data_error naming file and line.
#include <dml/data/libsvm.hpp>

#include "support/catch.hpp"
#include "temp_dir.hpp"

#include <fstream>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include <sys/stat.h>

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

// Issue #15: hostile inputs cost what they weigh.
TEST_CASE("a huge LIBSVM index is refused at once, naming index, file and line") {
  dml_test::temp_dir dir;
  const auto path = dir.write("wide.txt", "1 999999999:1");  // 13 bytes
  const auto e = error_of(path);
  REQUIRE(e.file() == path);
  REQUIRE(e.line() == 1);
  REQUIRE_THAT(e.reason(),
               dml_test::contains("index 999999999 beyond libsvm_options::max_features = 67108864"));
  REQUIRE_THAT(e.reason(), !dml_test::contains("0 features"));
}

TEST_CASE("a wide LIBSVM file costs its nonzeros, not its width") {
  dml_test::temp_dir dir;
  const auto path = dir.write("wide.txt", "1 999999999:1\n-1 3:2 2147483647:4\n");
  dml::data::libsvm_options o;
  o.max_features = 2147483647;  // the widest Eigen can index
  const auto s = dml::data::read_libsvm(path, o);
  REQUIRE(s.x.rows() == 2);
  REQUIRE(s.x.cols() == 2147483647);
  REQUIRE(s.x.nonZeros() == 3);
  REQUIRE(s.x.coeff(0, 999999998) == 1.0f);
  REQUIRE(s.x.coeff(1, 2) == 2.0f);
  REQUIRE(s.x.coeff(1, 2147483646) == 4.0f);
  o.max_features = 0;
  REQUIRE_THROWS_AS(dml::data::read_libsvm(path, o), dml::config_error);
  o.max_features = 1;
  o.features = std::size_t{1} << 31;
  REQUIRE_THROWS_AS(dml::data::read_libsvm(path, o), dml::config_error);
}

TEST_CASE("a LIBSVM line longer than max_line_bytes is refused without reading it whole") {
  dml_test::temp_dir dir;
  std::string text = "1 1:1\n2";
  for (int i = 1; i <= 200000; ++i) text += " " + std::to_string(i) + ":1";  // about 2 MB, no newline
  const auto path = dir.write("long.txt", text);
  dml::data::libsvm_options o;
  o.max_line_bytes = std::size_t{1} << 20;
  try {
    (void)dml::data::read_libsvm(path, o);
    FAIL("no error");
  } catch (const dml::data_error& e) {
    REQUIRE(e.line() == 2);
    REQUIRE_THAT(e.reason(), dml_test::contains("line longer than libsvm_options::max_line_bytes = 1048576"));
    REQUIRE(e.reason().size() < 200);
  }
  o.max_line_bytes = text.size();  // exactly long enough
  REQUIRE(dml::data::read_libsvm(path, o).x.nonZeros() == 200001);
  o.shard.layout = dml::data::shard_layout::contiguous;  // the counting pass checks lines too
  o.max_line_bytes = 100;
  REQUIRE_THROWS_AS(dml::data::read_libsvm(path, o), dml::data_error);
}

TEST_CASE("tokens quoted in LIBSVM errors are cut to 40 characters") {
  dml_test::temp_dir dir;
  const std::string junk(100000, 'x');
  for (const std::string& line :
       {"1 1:" + junk, junk + " 1:1", "1 " + junk, "1 " + junk + ":1", "1 qid:" + junk}) {
    const auto e = error_of(dir.write("junk.txt", line + "\n"));
    INFO(e.reason());
    REQUIRE(e.reason().size() < 120);
    REQUIRE_THAT(e.reason(), dml_test::contains("'" + junk.substr(0, 40) + "...'"));
  }
}

TEST_CASE("LIBSVM signs, qid, special values and empty files") {
  struct bad_case {
    const char* line;
    const char* reason;
  };
  const bad_case cases[] = {
      {"+-1 1:1", "bad label '+-1': two signs"},
      {"++1 1:1", "bad label '++1': two signs"},
      {"+ 1:1", "bad label '+': not a number"},
      {"1 1:+-1", "bad value '+-1': two signs"},
      {"1 1:-+1", "bad value '-+1': not a number"},
      {"1 qid:abc 1:1", "bad qid 'abc': not a whole number >= 0"},
      {"1 qid:-1 1:1", "bad qid '-1'"},
      {"1 qid: 1:1", "bad qid ''"},
      {"1 qid:1 qid:2 1:1", "a second qid"},
      {"1 1:1 qid:2", "qid must come right after the label"},
      {"1 1:inf", "bad value 'inf': not a finite number"},
      {"1 1:-infinity", "bad value '-infinity': not a finite number"},
      {"1 1:NaN", "bad value 'NaN': not a finite number"},
      {"nan 1:1", "bad label 'nan': not a finite number"},
      {"1 1:1e39", "bad value '1e39': out of float range"},
      {"1 1:1e400", "bad value '1e400': out of range"},
      {"1 1:0x10", "bad value '0x10': not a number"},
      {"1 1:1:2", "bad value '1:2'"},
      {"1 +1:1", "bad index '+1'"},
      {"1 18446744073709551616:1", "bad index '18446744073709551616'"},
      {"1 4294967297:1", "index 4294967297 beyond libsvm_options::max_features"},
  };
  dml_test::temp_dir dir;
  for (const auto& c : cases) {
    INFO(c.line);
    const auto e = error_of(dir.write("bad.txt", std::string("1 1:1\n") + c.line + "\n"));
    REQUIRE(e.line() == 2);
    REQUIRE_THAT(e.reason(), dml_test::contains(c.reason));
  }
  // Good: a single '+', qid right after the label, tiny values rounded to 0.
  const auto s = dml::data::read_libsvm(
      dir.write("ok.txt", "+1 qid:7 1:+2.5 2:1e-50 3:3.40282347e38 4:-3.4028235e38\n-1 qid:0\n"));
  REQUIRE(s.y[0] == 1.0f);
  REQUIRE(s.y[1] == -1.0f);
  REQUIRE(s.x.coeff(0, 0) == 2.5f);
  REQUIRE(s.x.coeff(0, 1) == 0.0f);
  REQUIRE(s.x.coeff(0, 2) == std::numeric_limits<float>::max());  // FLT_MAX as printed with 9 digits
  REQUIRE(s.x.coeff(0, 3) == -std::numeric_limits<float>::max());
  REQUIRE_THAT(error_of(dir.write("over.txt", "1 1:3.4028236e38\n")).reason(),
               dml_test::contains("out of float range"));

  for (const char* empty : {"", "\n\n", "# only a comment\n   \n"}) {
    INFO("'" << empty << "'");
    const auto e = error_of(dir.write("empty.txt", empty));
    REQUIRE(e.line() == 0);
    REQUIRE_THAT(e.reason(), dml_test::contains("no samples"));
  }
}

TEST_CASE("a LIBSVM pipe reads strided, and the contiguous layout says it cannot read it twice") {
  dml_test::temp_dir dir;
  const std::string fifo = dir.path("pipe");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  for (auto layout : {dml::data::shard_layout::strided, dml::data::shard_layout::contiguous}) {
    std::thread writer([&] { std::ofstream(fifo) << "1 1:1\n2 2:2\n"; });
    dml::data::libsvm_options o;
    o.shard.layout = layout;
    if (layout == dml::data::shard_layout::strided) {
      REQUIRE(dml::data::read_libsvm(fifo, o).x.rows() == 2);
    } else {
      try {
        (void)dml::data::read_libsvm(fifo, o);
        FAIL("no error");
      } catch (const dml::data_error& e) {
        REQUIRE_THAT(e.reason(), dml_test::contains("cannot read the file twice"));
      }
    }
    writer.join();
  }
}

// SPDX-License-Identifier: BSL-1.0
// The IDX reader: plain and gzip files, and bad magic, dimensions, length
// and compression as data_errors naming the file.
#include <dml/data/idx.hpp>

#include "support/catch.hpp"
#include "temp_dir.hpp"

#include <zlib.h>

#include <cstdint>
#include <string>
#include <vector>

namespace {
using bytes = std::vector<std::uint8_t>;

bytes header(std::uint8_t type, std::vector<std::uint32_t> dims) {
  bytes b{0, 0, type, static_cast<std::uint8_t>(dims.size())};
  for (auto d : dims)
    for (int shift = 24; shift >= 0; shift -= 8) b.push_back(static_cast<std::uint8_t>(d >> shift));
  return b;
}

bytes images(std::uint32_t n, std::uint32_t rows, std::uint32_t cols) {
  bytes b = header(8, {n, rows, cols});
  for (std::uint32_t i = 0; i < n * rows * cols; ++i) b.push_back(static_cast<std::uint8_t>(i * 7));
  return b;
}

std::string text(const bytes& b) { return std::string(b.begin(), b.end()); }

std::string write_gzip(const std::string& path, const bytes& b) {
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, b.data(), static_cast<unsigned>(b.size())) == static_cast<int>(b.size()));
  REQUIRE(gzclose(f) == Z_OK);
  return path;
}

std::string reason_of(const std::string& path) {
  try {
    (void)dml::data::read_idx(path);
  } catch (const dml::data_error& e) {
    REQUIRE(e.file() == path);
    REQUIRE(e.line() == 0);
    return e.reason();
  }
  FAIL("no data_error for " << path);
  return {};
}
}  // namespace

TEST_CASE("plain and gzip IDX files read the same") {
  dml_test::temp_dir dir;
  const bytes b = images(3, 2, 4);
  const auto plain = dml::data::read_idx(dir.write("img.idx", text(b)));
  const auto packed = dml::data::read_idx(write_gzip(dir.path("img.idx.gz"), b));
  REQUIRE(plain.dims == std::vector<std::size_t>{3, 2, 4});
  REQUIRE(plain.item_size() == 8);
  REQUIRE(plain.values.size() == 24);
  REQUIRE(plain.values[5] == 35);
  REQUIRE(packed.dims == plain.dims);
  REQUIRE(packed.values == plain.values);

  const auto x = dml::data::read_idx_images(dir.path("img.idx.gz"));
  REQUIRE(x.rows() == 3);
  REQUIRE(x.cols() == 8);
  REQUIRE(x(0, 5) == Approx(35.0 / 255.0));
  REQUIRE(dml::data::read_idx_images(dir.path("img.idx"), 2).rows() == 2);

  bytes labels = header(8, {4});
  for (std::uint8_t v : {9, 0, 3, 1}) labels.push_back(v);
  const auto path = write_gzip(dir.path("lab.gz"), labels);
  REQUIRE(dml::data::read_idx_labels(path) == std::vector<int>{9, 0, 3, 1});
  REQUIRE(dml::data::read_idx_labels(path, 2) == std::vector<int>{9, 0});
  REQUIRE_THROWS_AS(dml::data::read_idx_labels(dir.path("img.idx")), dml::data_error);
  REQUIRE_THROWS_AS(dml::data::read_idx_images(path), dml::data_error);
}

TEST_CASE("malformed IDX files are data_errors") {
  dml_test::temp_dir dir;
  const bytes good = images(2, 2, 2);
  bytes bad_magic = good;
  bad_magic[0] = 1;
  bytes bad_type = good;
  bad_type[2] = 0x0d;
  bytes zero_dims = good;
  zero_dims[3] = 0;
  bytes many_dims = good;
  many_dims[3] = 9;
  bytes zero_size = header(8, {2, 0, 2});
  bytes truncated(good.begin(), good.end() - 1);
  bytes trailing = good;
  trailing.push_back(0);
  bytes short_header(good.begin(), good.begin() + 10);

  struct bad_case {
    const char* name;
    bytes content;
    const char* reason;
  };
  const bad_case cases[] = {
      {"empty", {}, "too short for an IDX header"},
      {"magic", bad_magic, "bad magic"},
      {"type", bad_type, "unsupported IDX type code 13"},
      {"zero dims", zero_dims, "bad number of dimensions 0"},
      {"many dims", many_dims, "bad number of dimensions 9"},
      {"zero size", zero_size, "dimension 1 is 0"},
      {"truncated", truncated, "truncated: 8 values announced, 7 present"},
      {"trailing", trailing, "trailing data: 8 values announced, 9 present"},
      {"short header", short_header, "truncated header"},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    REQUIRE_THAT(reason_of(dir.write("plain.idx", text(c.content))), dml_test::contains(c.reason));
    REQUIRE_THAT(reason_of(write_gzip(dir.path("packed.idx.gz"), c.content)), dml_test::contains(c.reason));
  }
}

TEST_CASE("a cut-off gzip stream and a missing IDX file are data_errors") {
  dml_test::temp_dir dir;
  const auto path = write_gzip(dir.path("whole.gz"), images(20, 8, 8));
  std::ifstream in(path, std::ios::binary);
  const std::string whole((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE_THAT(reason_of(dir.write("cut.gz", whole.substr(0, whole.size() / 2))), dml_test::contains("gzip"));
  REQUIRE_THAT(reason_of(dir.path("missing.idx")), dml_test::contains("cannot open the file"));
}

// Issue #15: the header is checked from the first inflated bytes, before the
// rest is inflated; declared sizes that the file cannot hold are refused at once.
TEST_CASE("an IDX header is checked before the rest of a gzip file is inflated") {
  dml_test::temp_dir dir;
  // Bad magic, then a stream that breaks later: the magic is what is reported
  // (the whole stream used to be inflated, and its corruption reported, first).
  bytes junk = header(8, {1 << 20});
  junk[0] = 0x42;
  junk.resize(junk.size() + (1 << 20), 0);
  const auto path = write_gzip(dir.path("bad-magic.gz"), junk);
  std::ifstream in(path, std::ios::binary);
  std::string whole((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (std::size_t i = whole.size() / 2; i < whole.size() - 8; ++i) whole[i] = static_cast<char>(0xff);
  REQUIRE_THAT(reason_of(dir.write("bad-magic-corrupt.gz", whole)), dml_test::contains("bad magic"));
  bytes bad_type = header(0x0d, {1 << 20});
  bad_type.resize(bad_type.size() + (1 << 20), 0);
  REQUIRE_THAT(reason_of(write_gzip(dir.path("type.gz"), bad_type)), dml_test::contains("type code 13"));
}

TEST_CASE("IDX dimensions that the file cannot hold are refused before any allocation") {
  dml_test::temp_dir dir;
  bytes lie = header(8, {65536, 65536});  // 4 GiB announced
  lie.resize(lie.size() + 100, 1);
  const auto packed = write_gzip(dir.path("lie.gz"), lie);
  REQUIRE_THAT(reason_of(packed),
               dml_test::contains("truncated: 4294967296 values announced, but a gzip file of "));
  REQUIRE_THAT(reason_of(packed), dml_test::contains(" bytes inflates to at most "));
  REQUIRE_THAT(reason_of(dir.write("lie.idx", text(lie))),
               dml_test::contains("truncated: 4294967296 values announced, 100 present"));
  // 2^32-1 cubed and more: the product is refused before it could overflow.
  REQUIRE_THAT(reason_of(dir.write("huge.idx", text(header(8, {0xffffffffu, 0xffffffffu, 0xffffffffu, 2})))),
               dml_test::contains("dimensions too large"));
  // Announced sizes a gzip file can hold but does not: memory follows the data.
  bytes short_data = header(8, {1 << 24});
  std::uint32_t state = 12345;  // incompressible bytes: the gzip file can hold 16 MiB
  for (int i = 0; i < 20000; ++i)
    short_data.push_back(static_cast<std::uint8_t>((state = state * 1103515245u + 12345u) >> 24));
  REQUIRE_THAT(reason_of(write_gzip(dir.path("short.gz"), short_data)),
               dml_test::contains("truncated: 16777216 values announced, 20000 present"));
}

TEST_CASE("a large honest gzip IDX file reads whole, trailing data after it is counted") {
  dml_test::temp_dir dir;
  bytes big = header(8, {3 << 20});  // more than the first 1 MiB block
  for (std::size_t i = 0; i < (3u << 20); ++i) big.push_back(static_cast<std::uint8_t>(i % 251));
  const auto a = dml::data::read_idx(write_gzip(dir.path("big.gz"), big));
  REQUIRE(a.values.size() == (3u << 20));
  REQUIRE(a.values.capacity() == (3u << 20));  // no slack beyond what was announced
  REQUIRE(a.values[(3u << 20) - 1] == static_cast<std::uint8_t>(((3u << 20) - 1) % 251));
  big.resize(big.size() + 70000, 0);
  REQUIRE_THAT(reason_of(write_gzip(dir.path("trailing.gz"), big)),
               dml_test::contains("trailing data: 3145728 values announced, 3215728 present"));
  REQUIRE_THAT(reason_of(dir.path("")), dml_test::contains("not a regular file"));
}

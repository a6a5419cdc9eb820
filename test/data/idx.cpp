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

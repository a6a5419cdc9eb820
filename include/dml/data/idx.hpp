// SPDX-License-Identifier: BSL-1.0
/// @file
/// A reader for IDX files (the MNIST / Fashion-MNIST format), plain or
/// gzip-compressed: a 4-byte magic (two zero bytes, a type code, the number
/// of dimensions), one big-endian 32-bit size per dimension, then the values.
/// The magic, dimensions and exact length are checked; a problem is a
/// dml::data_error naming the file (line 0: the format is not line based).
///
/// Uses zlib: a program that calls these functions links zlib
/// (`find_package(ZLIB)` and `ZLIB::ZLIB` in CMake, `-lz` otherwise).
#pragma once

#include <dml/error.hpp>
#include <dml/version.hpp>

#include <zlib.h>
#include <Eigen/Core>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <functional>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

DML_BEGIN_NAMESPACE
namespace data {

/// An IDX array of unsigned bytes (type code 0x08, the only type MNIST-style
/// data sets use): dims[0] items of dims[1] x dims[2] x ... bytes each.
struct idx_array {
  std::vector<std::size_t> dims;
  std::vector<std::uint8_t> values;  ///< row-major, dims product long

  /// Bytes per item: the product of dims[1..].
  [[nodiscard]] std::size_t item_size() const noexcept {
    return std::accumulate(dims.begin() + (dims.empty() ? 0 : 1), dims.end(), std::size_t{1},
                           std::multiplies<>{});
  }
};

namespace detail {

/// The whole file, decompressed if it is gzip (zlib reads plain files as is).
inline std::vector<std::uint8_t> read_maybe_gzip(const std::string& path) {
  if (!std::ifstream(path, std::ios::binary))
    throw data_error(path, 0, "cannot open the file (missing or unreadable)");
  const std::unique_ptr<gzFile_s, int (*)(gzFile)> file(gzopen(path.c_str(), "rb"), &gzclose);
  if (!file) throw data_error(path, 0, "cannot open the file");
  std::vector<std::uint8_t> out;
  std::uint8_t buffer[1 << 16];
  for (;;) {
    const int n = gzread(file.get(), buffer, sizeof buffer);
    if (n < 0) {
      int code = 0;
      const char* message = gzerror(file.get(), &code);
      throw data_error(path, 0, std::string("cannot decompress: ") + (message ? message : "zlib error"));
    }
    if (n == 0) break;
    out.insert(out.end(), buffer, buffer + n);
  }
  // zlib reports a gzip stream cut short only through gzerror().
  int code = 0;
  gzerror(file.get(), &code);
  if (code != Z_OK && code != Z_STREAM_END) throw data_error(path, 0, "truncated or corrupt gzip data");
  return out;
}

}  // namespace detail

/// Reads an IDX file of unsigned bytes, gzip or plain.
[[nodiscard]] inline idx_array read_idx(const std::string& path) {
  const std::vector<std::uint8_t> bytes = detail::read_maybe_gzip(path);
  auto fail = [&](const std::string& reason) { throw data_error(path, 0, reason); };
  if (bytes.size() < 4) fail("too short for an IDX header (" + std::to_string(bytes.size()) + " bytes)");
  if (bytes[0] != 0 || bytes[1] != 0) fail("bad magic: not an IDX file");
  if (bytes[2] != 0x08)
    fail("unsupported IDX type code " + std::to_string(bytes[2]) + " (only 8, unsigned byte, is read)");
  const std::size_t rank = bytes[3];
  if (rank == 0 || rank > 4) fail("bad number of dimensions " + std::to_string(rank) + " (1 to 4 expected)");
  if (bytes.size() < 4 + 4 * rank) fail("truncated header");
  idx_array out;
  std::size_t count = 1;
  for (std::size_t d = 0; d < rank; ++d) {
    const std::uint8_t* p = &bytes[4 + 4 * d];
    const std::size_t n =
        (std::size_t{p[0]} << 24) | (std::size_t{p[1]} << 16) | (std::size_t{p[2]} << 8) | p[3];
    if (n == 0) fail("dimension " + std::to_string(d) + " is 0");
    out.dims.push_back(n);
    if (count > (std::size_t{1} << 40) / n) fail("dimensions too large");
    count *= n;
  }
  const std::size_t have = bytes.size() - 4 - 4 * rank;
  if (have < count)
    fail("truncated: " + std::to_string(count) + " values announced, " + std::to_string(have) + " present");
  if (have > count)
    fail("trailing data: " + std::to_string(count) + " values announced, " + std::to_string(have) +
         " present");
  out.values.assign(bytes.begin() + static_cast<std::ptrdiff_t>(4 + 4 * rank), bytes.end());
  return out;
}

/// Images as a row-major float matrix, one image per row, pixels scaled by
/// 1/255 into [0, 1]. `limit` (0: all) keeps only the first images.
[[nodiscard]] inline Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> read_idx_images(
    const std::string& path, std::size_t limit = 0) {
  const idx_array a = read_idx(path);
  if (a.dims.size() < 2) throw data_error(path, 0, "expected images (at least 2 dimensions), got a vector");
  const std::size_t n = limit == 0 || limit > a.dims[0] ? a.dims[0] : limit, d = a.item_size();
  Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> x(static_cast<Eigen::Index>(n),
                                                                          static_cast<Eigen::Index>(d));
  for (std::size_t i = 0; i < n * d; ++i) x.data()[i] = static_cast<float>(a.values[i]) / 255.0f;
  return x;
}

/// Labels (a 1-dimensional IDX file) as integers; `limit` as above.
[[nodiscard]] inline std::vector<int> read_idx_labels(const std::string& path, std::size_t limit = 0) {
  const idx_array a = read_idx(path);
  if (a.dims.size() != 1)
    throw data_error(path, 0, "expected labels (1 dimension), got " + std::to_string(a.dims.size()));
  const std::size_t n = limit == 0 || limit > a.dims[0] ? a.dims[0] : limit;
  return std::vector<int>(a.values.begin(), a.values.begin() + static_cast<std::ptrdiff_t>(n));
}

}  // namespace data
DML_END_NAMESPACE

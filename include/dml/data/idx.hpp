// SPDX-License-Identifier: BSL-1.0
/// @file
/// A reader for IDX files (the MNIST / Fashion-MNIST format), plain or
/// gzip-compressed: a 4-byte magic (two zero bytes, a type code, the number
/// of dimensions), one big-endian 32-bit size per dimension, then the values.
/// The magic, dimensions and exact length are checked, the header before the
/// rest is read; a problem is a dml::data_error naming the file (line 0: the
/// format is not line based).
///
/// Uses zlib: a program that calls these functions links zlib
/// (`find_package(ZLIB)` and `ZLIB::ZLIB` in CMake, `-lz` otherwise).
#pragma once

#include <dml/error.hpp>
#include <dml/version.hpp>

#include <sys/stat.h>
#include <zlib.h>
#include <Eigen/Core>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
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

/// Reads a plain or gzip file in pieces (zlib reads plain files as they are).
class maybe_gzip_reader {
 public:
  explicit maybe_gzip_reader(const std::string& path) : path_(path), file_(nullptr, &gzclose) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
      throw data_error(path, 0, "cannot open the file (missing or unreadable)");
    if (!S_ISREG(st.st_mode)) throw data_error(path, 0, "cannot read the file: not a regular file");
    size_ = static_cast<std::uint64_t>(st.st_size);
    file_.reset(gzopen(path.c_str(), "rb"));
    if (!file_) throw data_error(path, 0, "cannot open the file (missing or unreadable)");
  }

  /// Up to n bytes into out; fewer only at the end of the data.
  std::size_t read(std::uint8_t* out, std::size_t n) {
    std::size_t have = 0;
    while (have < n) {
      const auto ask = static_cast<unsigned>(std::min<std::size_t>(n - have, std::size_t{1} << 20));
      const int got = gzread(file_.get(), out + have, ask);
      if (got < 0) {
        int code = 0;
        const char* message = gzerror(file_.get(), &code);
        throw data_error(path_, 0, std::string("cannot decompress: ") + (message ? message : "zlib error"));
      }
      if (got == 0) break;
      have += static_cast<std::size_t>(got);
    }
    return have;
  }

  /// Throws when zlib saw a gzip stream cut short (reported only through
  /// gzerror()).
  void check_stream() {
    int code = 0;
    gzerror(file_.get(), &code);
    if (code != Z_OK && code != Z_STREAM_END) throw data_error(path_, 0, "truncated or corrupt gzip data");
  }

  /// The most bytes the file can hold: its size if plain, or what deflate's
  /// best ratio (1032:1) makes of its size if compressed.
  [[nodiscard]] std::uint64_t most_bytes() {
    if (gzdirect(file_.get()) != 0) return size_;
    return size_ > std::numeric_limits<std::uint64_t>::max() / 1032
               ? std::numeric_limits<std::uint64_t>::max()
               : size_ * 1032;
  }
  [[nodiscard]] bool compressed() { return gzdirect(file_.get()) == 0; }
  [[nodiscard]] std::uint64_t file_size() const noexcept { return size_; }

 private:
  std::string path_;
  std::unique_ptr<gzFile_s, int (*)(gzFile)> file_;
  std::uint64_t size_ = 0;
};

}  // namespace detail

/// Reads an IDX file of unsigned bytes, gzip or plain. The header (magic,
/// type, rank, dimensions) is checked from the first bytes before the rest is
/// read or inflated; dimensions whose product exceeds 2^40 or what the file
/// can hold (its size, or 1032 times it for gzip: deflate's best ratio) are
/// refused at once, and the values are stored as they arrive, so memory
/// follows the data actually present, never a size the header declares.
[[nodiscard]] inline idx_array read_idx(const std::string& path) {
  detail::maybe_gzip_reader in(path);
  auto fail = [&](const std::string& reason) { throw data_error(path, 0, reason); };
  std::uint8_t head[4 + 4 * 4] = {};
  const std::size_t got = in.read(head, 4);
  if (got < 4) {
    in.check_stream();
    fail("too short for an IDX header (" + std::to_string(got) + " bytes)");
  }
  if (head[0] != 0 || head[1] != 0) fail("bad magic: not an IDX file");
  if (head[2] != 0x08)
    fail("unsupported IDX type code " + std::to_string(head[2]) + " (only 8, unsigned byte, is read)");
  const std::size_t rank = head[3];
  if (rank == 0 || rank > 4) fail("bad number of dimensions " + std::to_string(rank) + " (1 to 4 expected)");
  if (in.read(head + 4, 4 * rank) < 4 * rank) {
    in.check_stream();
    fail("truncated header");
  }
  idx_array out;
  std::uint64_t count = 1;
  for (std::size_t d = 0; d < rank; ++d) {
    const std::uint8_t* p = &head[4 + 4 * d];
    const std::uint64_t n =
        (std::uint64_t{p[0]} << 24) | (std::uint64_t{p[1]} << 16) | (std::uint64_t{p[2]} << 8) | p[3];
    if (n == 0) fail("dimension " + std::to_string(d) + " is 0");
    out.dims.push_back(static_cast<std::size_t>(n));
    if (count > (std::uint64_t{1} << 40) / n) fail("dimensions too large (more than 2^40 values)");
    count *= n;
  }
  const std::uint64_t header = 4 + 4 * rank;
  const std::uint64_t most = in.most_bytes() - std::min(in.most_bytes(), header);
  if (!in.compressed() && count != most)  // a plain file: its size says it all
    fail((count > most ? "truncated: " : "trailing data: ") + std::to_string(count) + " values announced, " +
         std::to_string(most) + " present");
  if (count > most)
    fail("truncated: " + std::to_string(count) + " values announced, but a gzip file of " +
         std::to_string(in.file_size()) + " bytes inflates to at most " + std::to_string(most));
  // Grow geometrically as the values arrive, never past what was announced.
  const auto total = static_cast<std::size_t>(count);
  std::uint8_t block[1 << 16];
  while (out.values.size() < total) {
    const std::size_t n = in.read(block, std::min(sizeof block, total - out.values.size()));
    if (n == 0) {
      in.check_stream();
      fail("truncated: " + std::to_string(count) + " values announced, " + std::to_string(out.values.size()) +
           " present");
    }
    if (out.values.size() + n > out.values.capacity())
      out.values.reserve(std::min(total, std::max(2 * out.values.capacity(), out.values.size() + n)));
    out.values.insert(out.values.end(), block, block + n);
  }
  // Anything after the values: count it without keeping it.
  std::uint64_t extra = 0;
  for (std::size_t n; (n = in.read(block, sizeof block)) > 0;) extra += n;
  in.check_stream();
  if (extra > 0)
    fail("trailing data: " + std::to_string(count) + " values announced, " + std::to_string(count + extra) +
         " present");
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

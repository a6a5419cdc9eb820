// SPDX-License-Identifier: BSL-1.0
// Fuzz target: the IDX reader, on the input as it is (plain, or gzip when it
// is one) and on the input gzip-compressed, through read_idx, read_idx_images
// and read_idx_labels. Every result must be consistent.
#include <dml/data/idx.hpp>

#include "fuzz.hpp"

#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace {
void read_and_check(const std::string& path) {
  try {
    const dml::data::idx_array a = dml::data::read_idx(path);
    DML_FUZZ_CHECK(!a.dims.empty() && a.dims.size() <= 4);
    std::size_t count = 1;
    for (std::size_t d : a.dims) count *= d;
    DML_FUZZ_CHECK(a.values.size() == count);
    DML_FUZZ_CHECK(a.values.capacity() == count);
  } catch (const dml::data_error&) {
  }
  try {
    const auto x = dml::data::read_idx_images(path, 3);
    DML_FUZZ_CHECK(x.rows() <= 3);
    for (Eigen::Index i = 0; i < x.size(); ++i) DML_FUZZ_CHECK(x.data()[i] >= 0.0f && x.data()[i] <= 1.0f);
  } catch (const dml::data_error&) {
  }
  try {
    const std::vector<int> y = dml::data::read_idx_labels(path);
    for (int v : y) DML_FUZZ_CHECK(v >= 0 && v <= 255);
  } catch (const dml::data_error&) {
  }
}

// The input as one gzip member (what a well-formed .gz file looks like), so
// that fuzzed IDX contents reach the streaming path through zlib too. A
// small window and hash (memLevel 1) keep this cheap: the reader is the target.
std::vector<std::uint8_t> gzip(const std::uint8_t* data, std::size_t size) {
  z_stream z{};
  DML_FUZZ_CHECK(deflateInit2(&z, 1, Z_DEFLATED, 9 + 16, 1, Z_DEFAULT_STRATEGY) == Z_OK);
  std::vector<std::uint8_t> out(deflateBound(&z, static_cast<uLong>(size)));
  z.next_in = const_cast<Bytef*>(data);
  z.avail_in = static_cast<uInt>(size);
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  DML_FUZZ_CHECK(deflate(&z, Z_FINISH) == Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static dml_fuzz::scratch_file file;
  read_and_check(file.hold(data, size));
  const std::vector<std::uint8_t> packed = gzip(data, size);
  read_and_check(file.hold(packed.data(), packed.size()));
  return 0;
}

// SPDX-License-Identifier: BSL-1.0
// Fuzz target: the LIBSVM reader, with default options, a contiguous shard,
// a fixed width and a tiny line limit. Every result must be consistent.
#include <dml/data/libsvm.hpp>

#include "fuzz.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>

namespace {
void read_and_check(const std::string& path, const dml::data::libsvm_options& o) {
  try {
    const dml::data::sparse_set s = dml::data::read_libsvm(path, o);
    DML_FUZZ_CHECK(s.total > 0);
    DML_FUZZ_CHECK(static_cast<std::size_t>(s.x.rows()) == s.lines.size());
    DML_FUZZ_CHECK(s.y.size() == s.x.rows());
    DML_FUZZ_CHECK(static_cast<std::size_t>(s.x.rows()) == o.shard.size(s.total));
    DML_FUZZ_CHECK(static_cast<std::size_t>(s.x.cols()) <= (o.features ? o.features : o.max_features));
    DML_FUZZ_CHECK(s.x.isCompressed());
    for (Eigen::Index r = 0; r < s.x.rows(); ++r) {
      DML_FUZZ_CHECK(std::isfinite(s.y[r]));
      int previous = -1;
      for (decltype(s.x)::InnerIterator it(s.x, r); it; ++it) {
        DML_FUZZ_CHECK(it.col() > previous && it.col() < s.x.cols());
        DML_FUZZ_CHECK(std::isfinite(it.value()));
        previous = static_cast<int>(it.col());
      }
    }
  } catch (const dml::data_error& e) {
    DML_FUZZ_CHECK(e.reason().size() < 400);  // tokens are cut, never copied whole
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static dml_fuzz::scratch_file file;
  const std::string& path = file.hold(data, size);
  dml::data::libsvm_options o;
  read_and_check(path, o);
  o.shard = {1, 3, dml::data::shard_layout::contiguous};
  read_and_check(path, o);
  o.shard = {0, 2, dml::data::shard_layout::strided};
  o.features = 8;
  o.max_line_bytes = 64;
  read_and_check(path, o);
  return 0;
}

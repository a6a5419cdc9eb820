// SPDX-License-Identifier: BSL-1.0
// Fuzz target: the checkpoint reader. The first input byte chooses the
// program's vectors and whether the two checksums are repaired (so that the
// fuzzer gets past them to the vector table); the rest is the file. A load
// that succeeds must give the vectors exactly the file's bytes, and peek()
// (the state without the vectors) must accept it with the same state.
#include <dml/fault/checkpoint.hpp>

#include "fuzz.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

namespace {
template <class... Vs>
void load_and_check(const std::string& path, Vs&... vectors) {
  dml::fault::checkpoint ck(path);
  ck.max_user_bytes(1 << 16);
  // peek() checks the file without the vectors: whatever load() accepts,
  // it accepts too, with the same state.
  std::optional<dml::fault::checkpoint::state> peeked;
  try {
    peeked = ck.peek();
    DML_FUZZ_CHECK(peeked->user.size() <= (1u << 16));
  } catch (const dml::data_error& e) {
    DML_FUZZ_CHECK(e.file() == path);
  }
  try {
    const auto s = ck.load(vectors...);
    DML_FUZZ_CHECK(s.vector_clocks.size() == sizeof...(Vs));
    DML_FUZZ_CHECK(s.user.size() <= (1u << 16));
    DML_FUZZ_CHECK(peeked.has_value() && *peeked == s);
  } catch (const dml::data_error& e) {
    DML_FUZZ_CHECK(e.file() == path);
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static dml_fuzz::scratch_file file;
  if (size == 0) return 0;
  const std::uint8_t choice = data[0];
  std::vector<std::uint8_t> bytes(data + 1, data + size);
  namespace d = dml::fault::detail;
  if ((choice & 1) != 0 && bytes.size() >= d::header_size + d::trailer_size) {
    auto* b = reinterpret_cast<std::byte*>(bytes.data());
    d::store_le(b + d::header_crc_offset, d::crc32_of(std::span<const std::byte>(b, d::header_crc_offset)));
    const std::size_t body = bytes.size() - d::trailer_size;
    d::store_le(b + body, d::crc32_of(std::span<const std::byte>(b, body)));
  }
  const std::string& path = file.hold(bytes.data(), bytes.size());
  switch ((choice >> 1) % 4) {
    case 0: {
      std::vector<float> a(4);
      std::vector<std::int64_t> b(2);
      load_and_check(path, a, b);
      break;
    }
    case 1: {
      std::vector<double> a(3);
      load_and_check(path, a);
      break;
    }
    case 2: {
      std::vector<std::uint8_t> a(0), b(5);
      std::vector<std::int16_t> c(1);
      load_and_check(path, a, b, c);
      break;
    }
    default:
      load_and_check(path);
  }
  return 0;
}

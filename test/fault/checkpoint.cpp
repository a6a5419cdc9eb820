// SPDX-License-Identifier: BSL-1.0
// Checkpoints: exact round trips of every element type, the documented
// on-disk layout, every kind of bad file (each a data_error with its reason,
// the caller's vectors untouched), saves killed at random moments, errors
// while writing, the previous generation (keep_previous) and peek().
#include <dml/dml.hpp>
#include <dml/fault.hpp>

#include "../data/temp_dir.hpp"
#include "support/catch.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <future>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

namespace fs = std::filesystem;
using dml::fault::checkpoint;
using dml_test::contains;

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::byte> bytes_of(std::string_view s) {
  std::vector<std::byte> b;
  for (char c : s) b.push_back(static_cast<std::byte>(c));
  return b;
}

// The reason of the data_error `read` (a load() or peek() of ck) throws,
// naming ck's file; any other outcome fails.
template <class Read>
std::string read_failure(const checkpoint& ck, const char* what, Read read) {
  try {
    (void)read();
  } catch (const dml::data_error& e) {
    REQUIRE(e.file() == ck.path());
    REQUIRE(e.line() == 0);
    REQUIRE(std::string(e.what()) == ck.path() + ": " + e.reason());
    return e.reason();
  }
  FAIL(what << " " << ck.path() << " did not throw dml::data_error");
  return {};
}

template <class... Vs>
std::string load_failure(const checkpoint& ck, Vs&... vectors) {
  return read_failure(ck, "loading", [&] { return ck.load(vectors...); });
}

std::string peek_failure(const checkpoint& ck) {
  return read_failure(ck, "peeking at", [&] { return ck.peek(); });
}

template <class T>
std::vector<T> interesting_values(std::size_t n) {
  std::vector<T> v(n);
  std::mt19937_64 rng(n * 31 + sizeof(T));
  for (std::size_t i = 0; i < n; ++i) {
    if constexpr (std::is_floating_point_v<T>) {
      v[i] = static_cast<T>(std::uniform_real_distribution<double>(-1e6, 1e6)(rng));
    } else {
      v[i] = static_cast<T>(rng());
    }
  }
  using lim = std::numeric_limits<T>;
  const std::array<T, 4> extremes{lim::lowest(), lim::max(), lim::min(), T{0}};
  for (std::size_t i = 0; i < extremes.size() && i < n; ++i) v[i] = extremes[i];
  if constexpr (std::is_floating_point_v<T>) {
    const std::array<T, 5> special{-T{0}, lim::infinity(), -lim::infinity(), lim::quiet_NaN(),
                                   lim::denorm_min()};
    for (std::size_t i = 0; i < special.size() && 4 + i < n; ++i) v[4 + i] = special[i];
  }
  return v;
}

// Bitwise equality (NaN and -0.0 included).
template <class T>
bool same_bytes(const std::vector<T>& x, const std::vector<T>& y) {
  const auto bx = std::as_bytes(std::span(x)), by = std::as_bytes(std::span(y));
  return std::equal(bx.begin(), bx.end(), by.begin(), by.end());
}

// A vector type of the user's own: span() plus clock(), like dml::dist_vector.
struct clocked {
  std::vector<double> values;
  std::uint64_t ticks = 0;
  std::span<double> span() { return values; }
  std::span<const double> span() const { return values; }
  std::uint64_t clock() const { return ticks; }
};

// A bitwise CRC-32, one bit at a time, to check the table-driven one.
std::uint32_t reference_crc(const std::vector<std::byte>& b) {
  std::uint32_t c = 0xFFFFFFFFu;
  for (std::byte x : b) {
    c ^= std::to_integer<std::uint32_t>(x);
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return ~c;
}

/// Forks a child that saves generations first, first + 1, ... of `v`
/// (fill(g) writes generation g into it), each with epoch `round`, until
/// this process kills it with SIGKILL after `pause`; reaps it and requires
/// that the kill, and not an exit on an error, ended it.
template <class V, class Fill>
void kill_saving_child(const checkpoint& ck, V& v, std::uint64_t first, std::uint64_t round, Fill fill,
                       std::chrono::milliseconds pause) {
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    try {
      for (std::uint64_t g = first;; ++g) {
        fill(g);
        ck.save({.clock = g, .epoch = round}, v);
      }
    } catch (...) {
    }
    ::_exit(3);
  }
  std::this_thread::sleep_for(pause);
  REQUIRE(::kill(child, SIGKILL) == 0);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFSIGNALED(status));
  REQUIRE(WTERMSIG(status) == SIGKILL);
}

}  // namespace

static_assert(dml::fault::checkpoint_vector<std::vector<float>>);
static_assert(dml::fault::checkpoint_vector<std::span<const std::uint8_t>>);
static_assert(dml::fault::checkpoint_vector<std::array<std::int16_t, 4>>);
static_assert(dml::fault::checkpoint_vector<clocked>);
static_assert(dml::fault::checkpoint_vector<dml::dist_vector<double, dml::comm::inproc::context>>);
static_assert(dml::fault::checkpoint_vector<std::vector<long long>>);  // int64 by size and sign
static_assert(!dml::fault::checkpoint_vector<std::vector<long double>>);
static_assert(!dml::fault::checkpoint_vector<std::string>);  // char: signedness differs between platforms
static_assert(!dml::fault::checkpoint_vector<std::array<bool, 2>>);
static_assert(!dml::fault::checkpoint_vector<std::vector<bool>>);  // not contiguous
static_assert(!dml::fault::checkpoint_vector<int>);

TEST_CASE("the checksum is the standard CRC-32") {
  REQUIRE(dml::fault::detail::crc32_of(bytes_of("123456789")) == 0xCBF43926u);
  REQUIRE(dml::fault::detail::crc32_of({}) == 0u);
  std::mt19937 rng(7);
  for (std::size_t n : {1u, 7u, 8u, 9u, 15u, 16u, 17u, 1000u, 4099u}) {
    std::vector<std::byte> b(n);
    for (auto& x : b) x = static_cast<std::byte>(rng());
    const std::uint32_t want = reference_crc(b);
    REQUIRE(dml::fault::detail::crc32_of(b) == want);
    dml::fault::detail::crc32 pieces;  // fed in uneven pieces
    for (std::size_t at = 0; at < n;) {
      const std::size_t len = std::min<std::size_t>(n - at, 1 + rng() % 13);
      pieces.update(std::span(b).subspan(at, len));
      at += len;
    }
    REQUIRE(pieces.value() == want);
  }
}

TEMPLATE_TEST_CASE("vectors of every element type round-trip exactly", "", std::int8_t, std::int16_t,
                   std::int32_t, std::int64_t, std::uint8_t, std::uint16_t, std::uint32_t, std::uint64_t,
                   float, double) {
  dml_test::temp_dir dir;
  const checkpoint ck(dir.path("v.ckpt"));
  for (std::size_t n : {0u, 1u, 7u, 1000u}) {
    const auto a = interesting_values<TestType>(n);
    const auto b = interesting_values<TestType>(n + 3);
    ck.save({}, a, b);
    REQUIRE(fs::file_size(ck.path()) == 56 + 2 * 24 + (2 * n + 3) * sizeof(TestType) + 4);
    std::vector<TestType> a2(n, TestType{1}), b2(n + 3, TestType{1});
    const auto s = ck.load(a2, b2);
    REQUIRE(same_bytes(a, a2));
    REQUIRE(same_bytes(b, b2));
    REQUIRE(s.vector_clocks == std::vector<std::uint64_t>{0, 0});
  }
  REQUIRE(files_in(dir.path("")) == std::vector<std::string>{"v.ckpt"});  // no temporary left behind
}

TEST_CASE("the user state round-trips") {
  dml_test::temp_dir dir;
  const checkpoint ck(dir.path("state.ckpt"));
  REQUIRE_FALSE(ck.exists());

  checkpoint::state s;
  s.clock = 0xFEDCBA9876543210u;
  s.epoch = 0x0123456789ABCDEFu;
  for (int i = 0; i < 1000; ++i) s.user.push_back(static_cast<std::byte>(i * 37));
  ck.save(s);  // no vectors at all
  REQUIRE(ck.exists());
  const auto back = ck.load();
  REQUIRE(back.clock == s.clock);
  REQUIRE(back.epoch == s.epoch);
  REQUIRE(back.user == s.user);
  REQUIRE(back.vector_clocks.empty());
  REQUIRE(back == s);

  const std::vector<float> w{1.5f, -2.25f};
  ck.save({.clock = 7, .epoch = 2}, w);  // empty user bytes, and a second save replaces the first
  std::vector<float> w2(2);
  const auto again = ck.load(w2);
  REQUIRE(again.clock == 7);
  REQUIRE(again.epoch == 2);
  REQUIRE(again.user.empty());
  REQUIRE(w2 == w);
  REQUIRE(files_in(dir.path("")) == std::vector<std::string>{"state.ckpt"});

  REQUIRE_THROWS_AS(checkpoint(""), dml::config_error);
  fs::create_directory(dir.path("a-directory"));
  REQUIRE_FALSE(checkpoint(dir.path("a-directory")).exists());
}

TEST_CASE("different containers save and load each other's vectors, and clocks are recorded") {
  dml_test::temp_dir dir;
  const checkpoint ck(dir.path("mixed.ckpt"));
  const std::vector<float> f{1, 2, 3};
  const std::array<std::int16_t, 4> i16{-1, 2, -3, 4};
  std::vector<double> storage{0.5, 0.25};
  const std::span<const double> view(storage);
  const clocked c{{9.0, 8.0}, 41};
  ck.save({.clock = 5}, f, i16, view, c);

  std::array<float, 3> f2{};
  std::vector<std::int16_t> i16_2(4);
  clocked view2{{0, 0}, 0};  // a span() type receives what a std::span saved
  std::vector<double> buffer(2);
  const auto s = ck.load(f2, i16_2, view2, std::span<double>(buffer));  // a temporary span is fine
  REQUIRE(std::vector<float>(f2.begin(), f2.end()) == f);
  REQUIRE(i16_2 == std::vector<std::int16_t>(i16.begin(), i16.end()));
  REQUIRE(view2.values == storage);
  REQUIRE(buffer == c.values);
  REQUIRE(view2.ticks == 0);  // clocks are reported, not restored
  REQUIRE(s.vector_clocks == std::vector<std::uint64_t>{0, 0, 0, 41});
}

TEST_CASE("the file layout is the documented one, little-endian") {
  dml_test::temp_dir dir;
  const checkpoint ck(dir.path("layout.ckpt"));
  const std::vector<std::int32_t> v{0x01020304, -2};
  const std::vector<double> d{1.0};
  checkpoint::state s;
  s.clock = 0x1122334455667788u;
  s.epoch = 3;
  s.user = {std::byte{0xAB}, std::byte{0xCD}};
  ck.save(s, v, d);
  const std::string b = read_bytes(ck.path());
  const std::size_t size = 56 + 2 * 24 + 2 + 8 + 8 + 4;
  REQUIRE(b.size() == size);
  auto at = [&](std::size_t offset, std::initializer_list<int> expected) {
    INFO("offset " << offset);
    for (int e : expected) REQUIRE(static_cast<unsigned char>(b[offset++]) == e);
  };
  at(0, {'D', 'M', 'L', 'C', 'K', 'P', 'T', 0});
  at(8, {1, 0, 0, 0});                                        // version
  at(12, {2, 0, 0, 0});                                       // vectors
  at(16, {static_cast<int>(size), 0, 0, 0, 0, 0, 0, 0});      // file size
  at(24, {0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11});   // clock
  at(32, {3, 0, 0, 0, 0, 0, 0, 0});                           // epoch
  at(40, {2, 0, 0, 0, 0, 0, 0, 0});                           // user bytes
  at(52, {0, 0, 0, 0});                                       // reserved
  at(56, {3, 0, 0, 0, 4, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0});   // int32, 4 bytes, length 2
  at(80, {10, 0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0});  // double, 8 bytes, length 1
  at(104, {0xAB, 0xCD});                                      // user
  at(106, {4, 3, 2, 1, 0xFE, 0xFF, 0xFF, 0xFF});              // 0x01020304, -2
  at(114, {0, 0, 0, 0, 0, 0, 0xF0, 0x3F});                    // 1.0
  const auto crc_of = [&](std::size_t from, std::size_t to) {
    return dml::fault::detail::crc32_of(bytes_of(std::string_view(b).substr(from, to - from)));
  };
  auto u32_at = [&](std::size_t offset) {
    std::uint32_t x = 0;
    for (std::size_t i = 0; i < 4; ++i)
      x |= std::uint32_t{static_cast<unsigned char>(b[offset + i])} << (8 * i);
    return x;
  };
  REQUIRE(u32_at(48) == crc_of(0, 48));
  REQUIRE(u32_at(size - 4) == crc_of(0, size - 4));
}

TEST_CASE("members of an in-process group each checkpoint their dist_vectors") {
  namespace inproc = dml::comm::inproc;
  dml_test::temp_dir dir;
  constexpr std::size_t members = 3;
  std::array<std::vector<float>, members> saved_f, loaded_f, untouched;
  std::array<std::vector<std::int64_t>, members> saved_i, loaded_i;
  std::array<checkpoint::state, members> states;
  std::array<std::string, members> errors;
  auto file = [&](std::size_t r) { return dir.path("member" + std::to_string(r) + ".ckpt"); };

  inproc::run(members, [&](inproc::context& c) {
    const std::size_t r = c.rank();
    auto f = dml::make_vector<float>(c, 6, dml::topology::ring{}, dml::gather::sum{});
    auto i = dml::make_vector<std::int64_t>(c, 4);
    for (int round = 0; round < 2; ++round) {
      for (std::size_t k = 0; k < f.size(); ++k) f.span()[k] += static_cast<float>(r + 1) * 0.5f + float(k);
      f.scatter();
      f.gather();
    }
    for (std::size_t k = 0; k < i.size(); ++k) i.span()[k] = static_cast<std::int64_t>(r * 1000 + k) - 2000;
    i.scatter();
    saved_f[r].assign(f.span().begin(), f.span().end());
    saved_i[r].assign(i.span().begin(), i.span().end());
    checkpoint(file(r)).save({.clock = 10 + r, .epoch = r}, f, i);
  });

  inproc::run(members, [&](inproc::context& c) {
    const std::size_t r = c.rank();
    auto f = dml::make_vector<float>(c, 6, dml::topology::ring{}, dml::gather::sum{});
    auto i = dml::make_vector<std::int64_t>(c, 4);
    states[r] = checkpoint(file(r)).load(f, i);
    loaded_f[r].assign(f.span().begin(), f.span().end());
    loaded_i[r].assign(i.span().begin(), i.span().end());
    // A member's vector of another length is refused and left as it was.
    auto other = dml::make_vector<float>(c, 7);
    try {
      (void)checkpoint(file(r)).load(other, i);
    } catch (const dml::data_error& e) {
      errors[r] = e.reason();
    }
    untouched[r].assign(other.span().begin(), other.span().end());
  });

  for (std::size_t r = 0; r < members; ++r) {
    INFO("member " << r);
    REQUIRE(loaded_f[r] == saved_f[r]);
    REQUIRE(loaded_i[r] == saved_i[r]);
    REQUIRE(states[r].clock == 10 + r);
    REQUIRE(states[r].epoch == r);
    REQUIRE(states[r].vector_clocks == std::vector<std::uint64_t>{2, 1});
    REQUIRE(errors[r] == "vector 0 has length 6 but the program's vector has length 7");
    REQUIRE(untouched[r] == std::vector<float>(7, 0.0f));
  }
  REQUIRE(saved_f[0] != saved_f[1]);  // the members saved different data
  REQUIRE(saved_f[1] != saved_f[2]);
}

TEST_CASE("every kind of bad checkpoint is refused with its reason, leaving the vectors untouched") {
  dml_test::temp_dir dir;
  const std::string good_path = dir.path("good.ckpt");
  const checkpoint good(good_path);
  std::vector<float> a(100);
  std::vector<std::int64_t> b(7);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i) * 0.25f;
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<std::int64_t>(i) - 3;
  checkpoint::state s{.clock = 42, .epoch = 3, .user = bytes_of("hello")};
  good.save(s, a, b);
  const std::string bytes = read_bytes(good_path);
  const std::size_t size = 56 + 2 * 24 + 5 + 400 + 56 + 4;
  REQUIRE(bytes.size() == size);

  // The caller's vectors: sentinel values that a failed load must leave.
  std::vector<float> a2(100, -7.0f);
  std::vector<std::int64_t> b2(7, -7);
  auto untouched = [&] {
    return std::all_of(a2.begin(), a2.end(), [](float x) { return x == -7.0f; }) &&
           std::all_of(b2.begin(), b2.end(), [](std::int64_t x) { return x == -7; });
  };
  auto variant = [&](const std::string& name, const std::string& content) {
    write_bytes(dir.path(name), content);
    return checkpoint(dir.path(name));
  };
  auto flipped = [&](std::size_t offset, unsigned char bit) {
    std::string c = bytes;
    c[offset] = static_cast<char>(static_cast<unsigned char>(c[offset]) ^ bit);
    return c;
  };

  SECTION("missing file") {
    REQUIRE(load_failure(checkpoint(dir.path("nothing-here")), a2, b2) ==
            "cannot open the checkpoint: No such file or directory");
  }
  SECTION("a directory") {
    fs::create_directory(dir.path("sub"));
    REQUIRE(load_failure(checkpoint(dir.path("sub")), a2, b2) ==
            "cannot read the checkpoint: not a regular file");
  }
  SECTION("wrong magic number") {
    const std::string bad = "not a dml checkpoint (bad magic number)";
    REQUIRE(load_failure(variant("m1", flipped(0, 0x20)), a2, b2) == bad);
    REQUIRE(load_failure(variant("m2", flipped(7, 1)), a2, b2) == bad);
    REQUIRE(load_failure(variant("m3", "a text file, not a checkpoint at all\n"), a2, b2) == bad);
    REQUIRE(load_failure(variant("m4", "abc"), a2, b2) == bad);
  }
  SECTION("unsupported version") {
    REQUIRE(load_failure(variant("v2", flipped(8, 3)), a2, b2) ==
            "unsupported checkpoint format version 2 (this version of dml reads version 1)");
    REQUIRE(load_failure(variant("v256", flipped(9, 1)), a2, b2) ==
            "unsupported checkpoint format version 257 (this version of dml reads version 1)");
    // A version this build does not know is reported even when the file is short.
    REQUIRE(load_failure(variant("v2short", flipped(8, 3).substr(0, 20)), a2, b2) ==
            "unsupported checkpoint format version 2 (this version of dml reads version 1)");
  }
  SECTION("truncated in the header") {
    for (std::size_t cut : {0u, 3u, 8u, 11u, 12u, 30u, 48u, 55u}) {
      INFO("cut at " << cut);
      REQUIRE(load_failure(variant("cut", bytes.substr(0, cut)), a2, b2) ==
              "truncated: expected at least 56 bytes (the header), found " + std::to_string(cut));
    }
  }
  SECTION("truncated after the header") {
    // 56: table, 104: user bytes, 109: a, 509: b, 565: checksum
    for (std::size_t cut : {56u, 70u, 104u, 106u, 109u, 300u, 509u, 520u, 565u, 568u}) {
      INFO("cut at " << cut);
      REQUIRE(load_failure(variant("cut", bytes.substr(0, cut)), a2, b2) ==
              "truncated: expected 569 bytes (as the header records), found " + std::to_string(cut));
    }
  }
  SECTION("trailing data") {
    REQUIRE(load_failure(variant("long", bytes + "x"), a2, b2) ==
            "trailing data: expected 569 bytes (as the header records), found 570");
  }
  SECTION("a flipped bit in the header") {
    for (std::size_t offset : {12u, 16u, 25u, 33u, 40u, 48u, 51u}) {
      INFO("offset " << offset);
      REQUIRE(load_failure(variant("h", flipped(offset, 0x10)), a2, b2) ==
              "checksum mismatch in the header: the file is corrupted");
    }
  }
  SECTION("a flipped bit in the reserved bytes, vector table, user bytes, payload or checksum") {
    for (std::size_t offset : {53u, 56u, 60u, 88u, 104u, 108u, 109u, 300u, 508u, 509u, 564u, 565u, 568u}) {
      INFO("offset " << offset);
      const std::string reason = load_failure(variant("p", flipped(offset, 0x04)), a2, b2);
      REQUIRE_THAT(reason, contains("checksum mismatch (stored CRC-32 0x"));
      REQUIRE_THAT(reason, contains("): the file is corrupted"));
    }
  }
  SECTION("wrong element type") {
    std::vector<double> d(100, -7.0);
    REQUIRE(load_failure(good, d, b2) == "vector 0 has element type float but the program expects double");
    REQUIRE(std::all_of(d.begin(), d.end(), [](double x) { return x == -7.0; }));
    std::vector<std::uint64_t> u(7, 7);
    REQUIRE(load_failure(good, a2, u) == "vector 1 has element type int64 but the program expects uint64");
    REQUIRE(std::all_of(u.begin(), u.end(), [](std::uint64_t x) { return x == 7; }));
    std::vector<std::int32_t> i32(7, 7);
    REQUIRE(load_failure(good, a2, i32) == "vector 1 has element type int64 but the program expects int32");
  }
  SECTION("wrong length") {
    std::vector<float> longer(101, -7.0f);
    REQUIRE(load_failure(good, longer, b2) ==
            "vector 0 has length 100 but the program's vector has length 101");
    std::vector<std::int64_t> empty;
    REQUIRE(load_failure(good, a2, empty) == "vector 1 has length 7 but the program's vector has length 0");
    std::vector<std::int64_t> shorter(6, -7);
    REQUIRE(load_failure(good, a2, shorter) == "vector 1 has length 7 but the program's vector has length 6");
    REQUIRE(std::all_of(shorter.begin(), shorter.end(), [](std::int64_t x) { return x == -7; }));
  }
  SECTION("wrong number of vectors") {
    REQUIRE(load_failure(good, a2) == "the checkpoint holds 2 vectors but the program expects 1");
    std::vector<float> c(3, -7.0f);
    REQUIRE(load_failure(good, a2, b2, c) == "the checkpoint holds 2 vectors but the program expects 3");
    REQUIRE(load_failure(good) == "the checkpoint holds 2 vectors but the program expects 0");
    const checkpoint one(dir.path("one.ckpt"));
    one.save({}, a);
    REQUIRE(load_failure(one, a2, b2) == "the checkpoint holds 1 vector but the program expects 2");
  }
  REQUIRE(untouched());
  // The good file still loads after all that.
  const auto loaded = good.load(a2, b2);
  REQUIRE(loaded.clock == 42);
  REQUIRE(loaded.epoch == 3);
  REQUIRE(loaded.user == s.user);
  REQUIRE(a2 == a);
  REQUIRE(b2 == b);
}

TEST_CASE("saving where the file cannot be written throws data_error naming it") {
  dml_test::temp_dir dir;
  const std::vector<float> v(10, 1.0f);

  SECTION("a directory that does not exist") {
    const std::string path = dir.path("no-such-dir") + "/model.ckpt";
    try {
      checkpoint(path).save({}, v);
      FAIL("no data_error");
    } catch (const dml::data_error& e) {
      REQUIRE(e.file() == path);
      REQUIRE_THAT(e.reason(), contains("cannot save the checkpoint: cannot create the temporary file " +
                                        path + ".tmp."));
      REQUIRE_THAT(e.reason(), contains(": No such file or directory"));
      REQUIRE_THAT(std::string(e.what()), contains("no-such-dir/model.ckpt"));
    }
    REQUIRE(files_in(dir.path("")).empty());
  }
  SECTION("the path is a directory") {
    fs::create_directory(dir.path("sub"));
    const checkpoint ck(dir.path("sub"));
    try {
      ck.save({}, v);
      FAIL("no data_error");
    } catch (const dml::data_error& e) {
      REQUIRE(e.file() == ck.path());
      REQUIRE_THAT(e.reason(), contains("cannot rename the temporary file " + ck.path() + ".tmp."));
      REQUIRE_THAT(e.reason(), contains(": Is a directory"));
    }
    REQUIRE(files_in(dir.path("")) == std::vector<std::string>{"sub"});  // the temporary file was removed
    REQUIRE(fs::is_directory(dir.path("sub")));
  }
}

TEST_CASE("a save that runs out of space removes its temporary file and keeps the previous checkpoint") {
  dml_test::temp_dir dir;
  const checkpoint ck(dir.path("full.ckpt"));
  const std::vector<float> before(1000, 2.0f);
  ck.save({.clock = 1}, before);

  // In a child process, a file size limit makes write() fail with EFBIG as
  // a full disk makes it fail with ENOSPC.
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    int code = 0;
    try {
      ::signal(SIGXFSZ, SIG_IGN);
      const rlimit limit{100000, 100000};
      if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) ::_exit(10);
      const std::vector<float> big(1 << 20, 3.0f);
      ck.save({.clock = 2}, big);
      code = 11;  // no exception
    } catch (const dml::data_error& e) {
      const std::string r = e.reason();
      if (e.file() != ck.path())
        code = 12;
      else if (r.find("cannot save the checkpoint: cannot write the temporary file " + ck.path() + ".tmp.") !=
               0)
        code = 13;
      else if (r.find(": File too large") == std::string::npos)
        code = 14;
    } catch (...) {
      code = 15;
    }
    ::_exit(code);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  REQUIRE(files_in(dir.path("")) == std::vector<std::string>{"full.ckpt"});
  std::vector<float> after(1000);
  REQUIRE(ck.load(after).clock == 1);
  REQUIRE(after == before);
}

TEST_CASE("a save killed at a random moment leaves exactly one complete generation") {
  dml_test::temp_dir dir;
  const checkpoint ck(dir.path("big.ckpt"));
  constexpr std::size_t n = std::size_t{8} << 20;  // 8 M floats, 32 MiB
  // Generation g's contents: different from every other generation's at
  // every position, and exact in float (below 2^24).
  auto value = [](std::size_t i, std::uint64_t g) { return static_cast<float>((i + g * 7919) & 0xFFFFFF); };
  auto fill = [&](std::vector<float>& v, std::uint64_t g) {
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = value(i, g);
  };
  std::vector<float> v(n);
  fill(v, 0);
  ck.save({.clock = 0}, v);

  std::mt19937 rng(20261128);  // the sleeps; where the kills land depends on the machine
  std::uint64_t last = 0;
  int rounds_with_new_generation = 0;
  for (std::uint64_t round = 1; round <= 6; ++round) {
    const std::uint64_t first = round * 1000;
    kill_saving_child(
        ck, v, first, round, [&](std::uint64_t g) { fill(v, g); }, std::chrono::milliseconds(rng() % 250));

    std::fill(v.begin(), v.end(), -1.0f);
    const auto s = ck.load(v);
    const std::uint64_t g = s.clock;
    INFO("round " << round << ": generation " << g);
    REQUIRE((g == last || (g >= first && g < first + 1000)));
    REQUIRE(s.epoch == (g == 0 ? 0 : g / 1000));
    // The index of the first wrong element (n: none), not two 8 M-element dumps on failure.
    std::size_t wrong = 0;
    while (wrong < n && v[wrong] == value(wrong, g)) ++wrong;
    REQUIRE(wrong == n);
    if (g != last) ++rounds_with_new_generation;
    last = g;
  }
  // Saves interrupted before their rename left temporary files; they are
  // never loaded, and remove_temporaries() deletes exactly those.
  const std::size_t leftovers = files_in(dir.path("")).size() - 1;
  UNSCOPED_INFO("rounds that saved a new generation: " << rounds_with_new_generation << ", leftovers "
                                                       << leftovers);
  REQUIRE(ck.remove_temporaries() == leftovers);
  REQUIRE(files_in(dir.path("")) == std::vector<std::string>{"big.ckpt"});
}

TEST_CASE("remove_temporaries deletes only this checkpoint's temporary files") {
  dml_test::temp_dir dir;
  const checkpoint ck(dir.path("m.ckpt"));
  ck.save({});
  for (const char* name :
       {"m.ckpt.tmp.123.0", "m.ckpt.tmp.9.17", "m.ckpt.tmp.x.1", "m.ckpt.tmp.1", "m.ckpt.tmp.1.",
        "m.ckpt.bak", "other.ckpt.tmp.1.2", "m.ckpt.tmp.1.2.3", "m.ckpt.prev.tmp.5.6", "m.ckpt.prev",
        "m.ckpt.prev.tmp.5", "m.ckpt.prevtmp.5.6", "m.ckpt.prev.prev.tmp.5.6"})
    write_bytes(dir.path(name), "stale");
  REQUIRE(ck.remove_temporaries() == 3);
  REQUIRE(files_in(dir.path("")) ==
          std::vector<std::string>{"m.ckpt", "m.ckpt.bak", "m.ckpt.prev", "m.ckpt.prev.prev.tmp.5.6",
                                   "m.ckpt.prev.tmp.5", "m.ckpt.prevtmp.5.6", "m.ckpt.tmp.1", "m.ckpt.tmp.1.",
                                   "m.ckpt.tmp.1.2.3", "m.ckpt.tmp.x.1", "other.ckpt.tmp.1.2"});
  REQUIRE(ck.load().clock == 0);
  // Relative paths work too (the directory is then ".").
  const fs::path cwd = fs::current_path();
  fs::current_path(dir.path(""));
  const checkpoint relative("m.ckpt");
  relative.save({.clock = 4});
  REQUIRE(relative.load().clock == 4);
  fs::current_path(cwd);
}

namespace {
// A header whose checksum is right and whose sizes say what the caller wants.
std::string header_claiming(std::uint32_t vectors, std::uint64_t file_size, std::uint64_t user_bytes) {
  std::array<std::byte, 56> h{};
  const std::string_view magic("DMLCKPT\0", 8);
  for (std::size_t i = 0; i < 8; ++i) h[i] = static_cast<std::byte>(magic[i]);
  dml::fault::detail::store_le(h.data() + 8, std::uint32_t{1});
  dml::fault::detail::store_le(h.data() + 12, vectors);
  dml::fault::detail::store_le(h.data() + 16, file_size);
  dml::fault::detail::store_le(h.data() + 40, user_bytes);
  dml::fault::detail::store_le(h.data() + 48, dml::fault::detail::crc32_of(std::span(h).first(48)));
  std::string s;
  for (std::byte b : h) s.push_back(static_cast<char>(b));
  return s;
}
}  // namespace

// Issue #15: a sparse 1 TiB file with a valid header made load() allocate
// the whole file (std::bad_alloc); it is refused from its size alone.
TEST_CASE("a huge sparse checkpoint whose header lies is a data_error and not bad_alloc") {
  dml_test::temp_dir dir;
  const std::string path = dir.path("huge.ckpt");
  constexpr std::uint64_t tib = std::uint64_t{1} << 40;
  std::vector<float> v(100, -7.0f);
  for (const std::uint32_t vectors : {1u, 0xffffffffu}) {
    INFO(vectors << " vectors claimed");
    write_bytes(path, header_claiming(vectors, tib, tib - 56 - 24 - 4 - 400));
    std::error_code ec;
    fs::resize_file(path, tib, ec);
    if (ec) {
      WARN("skipped: this file system cannot hold a sparse 1 TiB file: " << ec.message());
      return;
    }
    const std::string reason = load_failure(checkpoint(path), v);
    REQUIRE_THAT(reason, contains("the file has 1099511627776 bytes, more than the "));
    REQUIRE_THAT(reason, contains("a checkpoint of 1 vector of 400 bytes with at most max_user_bytes() = "));
  }
  REQUIRE(std::all_of(v.begin(), v.end(), [](float x) { return x == -7.0f; }));
  fs::remove(path);

  // Within the limit, every declared size is still checked against the real
  // size: a small file claiming many vectors or many user bytes is refused.
  const std::string small = header_claiming(0xffffffffu, 56 + 4, 0) + std::string(4, '\0');
  write_bytes(path, small);
  REQUIRE_THAT(load_failure(checkpoint(path), v), contains("too few for 4294967295 vectors"));
  std::string lying_user = header_claiming(1, 56 + 24 + 4, tib) + std::string(24, '\0');
  std::array<std::byte, 4> crc{};
  dml::fault::detail::store_le(crc.data(), dml::fault::detail::crc32_of(bytes_of(lying_user)));
  for (std::byte b : crc) lying_user.push_back(static_cast<char>(b));
  write_bytes(path, lying_user);
  REQUIRE_THAT(load_failure(checkpoint(path), v),
               contains("corrupted: the sizes in the header and vector table exceed the file size 84"));
}

TEST_CASE("max_user_bytes bounds what load() accepts") {
  dml_test::temp_dir dir;
  checkpoint ck(dir.path("user.ckpt"));
  REQUIRE(ck.max_user_bytes() == checkpoint::default_max_user_bytes);
  std::vector<double> v{1.5, 2.5};
  ck.save({.clock = 1, .epoch = 0, .user = std::vector<std::byte>(1000, std::byte{7})}, v);
  ck.max_user_bytes(999);
  REQUIRE_THAT(load_failure(ck, v), contains("more than the 1099 a checkpoint of 1 vector of 16 bytes"));
  ck.max_user_bytes(1000);
  REQUIRE(ck.load(v).user.size() == 1000);
}

TEST_CASE("loading from a FIFO is refused at once instead of waiting for a writer") {
  dml_test::temp_dir dir;
  const std::string fifo = dir.path("pipe.ckpt");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::vector<float> v(3);
  auto attempt = std::async(std::launch::async, [&] { return load_failure(checkpoint(fifo), v); });
  if (attempt.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    const int unblock = ::open(fifo.c_str(), O_WRONLY);  // lets the blocked open() return
    ::close(unblock);
    attempt.wait();
    FAIL("load() blocked on a FIFO");
  }
  REQUIRE(attempt.get() == "cannot read the checkpoint: not a regular file");
}

// ---- two generations (keep_previous) and peek() ------------------------------------------

namespace {
// The reason of the data_error peek() throws; any other outcome fails.
// `bytes` followed by their CRC-32, as a checkpoint's trailer.
std::string with_crc(std::string bytes) {
  std::array<std::byte, 4> crc{};
  dml::fault::detail::store_le(crc.data(), dml::fault::detail::crc32_of(bytes_of(bytes)));
  for (std::byte b : crc) bytes.push_back(static_cast<char>(b));
  return bytes;
}

// One row of the vector table.
std::string table_row(std::uint32_t code, std::uint32_t element_size, std::uint64_t length) {
  std::array<std::byte, 24> row{};
  dml::fault::detail::store_le(row.data(), code);
  dml::fault::detail::store_le(row.data() + 4, element_size);
  dml::fault::detail::store_le(row.data() + 8, length);
  std::string s;
  for (std::byte b : row) s.push_back(static_cast<char>(b));
  return s;
}
}  // namespace

TEST_CASE("keep_previous keeps the replaced checkpoint as <path>.prev") {
  dml_test::temp_dir dir;
  checkpoint ck(dir.path("k.ckpt"));
  REQUIRE_FALSE(ck.keep_previous());
  REQUIRE(ck.previous().path() == ck.path() + ".prev");
  std::vector<float> v(5);
  auto save = [&](std::uint64_t g) {
    std::fill(v.begin(), v.end(), static_cast<float>(g));
    ck.save({.clock = g, .epoch = g / 2, .user = bytes_of("gen" + std::to_string(g))}, v);
  };
  // Loads `c` and checks that it holds generation g.
  auto holds = [&](const checkpoint& c, std::uint64_t g) {
    std::vector<float> w(5, -1.0f);
    const auto s = c.load(w);
    return s.clock == g && s.epoch == g / 2 && s.user == bytes_of("gen" + std::to_string(g)) &&
           w == std::vector<float>(5, static_cast<float>(g));
  };

  // Off (the default): nothing but the file.
  save(1);
  save(2);
  REQUIRE(files_in(dir.path("")) == std::vector<std::string>{"k.ckpt"});
  REQUIRE_FALSE(ck.previous().exists());

  ck.keep_previous(true);
  REQUIRE(ck.keep_previous());
  save(3);
  REQUIRE(files_in(dir.path("")) == std::vector<std::string>{"k.ckpt", "k.ckpt.prev"});
  REQUIRE(holds(ck, 3));
  REQUIRE(holds(ck.previous(), 2));
  save(4);
  REQUIRE(holds(ck, 4));
  REQUIRE(holds(ck.previous(), 3));
  REQUIRE(ck.peek().clock == 4);
  REQUIRE(ck.previous().peek().clock == 3);
  REQUIRE(files_in(dir.path("")) == std::vector<std::string>{"k.ckpt", "k.ckpt.prev"});

  // previous() carries the limit on user bytes.
  ck.max_user_bytes(3);
  REQUIRE(ck.previous().max_user_bytes() == 3);
  REQUIRE_THAT(peek_failure(ck.previous()),
               contains("the checkpoint has 4 user bytes, more than max_user_bytes() = 3"));
  REQUIRE_THAT(load_failure(ck.previous(), v), contains("max_user_bytes() = 3 user bytes"));
  ck.max_user_bytes(checkpoint::default_max_user_bytes);

  // Off again: save() leaves <path>.prev alone.
  ck.keep_previous(false);
  save(5);
  REQUIRE(holds(ck, 5));
  REQUIRE(holds(ck.previous(), 3));

  // The first save to a new path has nothing to keep.
  checkpoint fresh(dir.path("fresh.ckpt"));
  fresh.keep_previous(true);
  fresh.save({.clock = 1}, v);
  REQUIRE_FALSE(fresh.previous().exists());
  REQUIRE(fresh.load(v).clock == 1);
}

TEST_CASE("restore_previous makes the older generation current, and the next save keeps it") {
  dml_test::temp_dir dir;
  checkpoint ck(dir.path("r.ckpt"));
  ck.keep_previous(true);
  std::vector<float> v(3);
  auto save = [&](std::uint64_t g) {
    std::fill(v.begin(), v.end(), static_cast<float>(g));
    ck.save({.clock = g}, v);
  };
  save(1);
  save(2);
  ck.restore_previous();  // a resume from clock 1
  REQUIRE(files_in(dir.path("")) == std::vector<std::string>{"r.ckpt"});
  REQUIRE(ck.peek().clock == 1);
  REQUIRE(ck.load(v).clock == 1);
  REQUIRE(v == std::vector<float>(3, 1.0f));
  // The next save keeps the generation resumed from, not the abandoned one.
  save(2);
  REQUIRE(ck.peek().clock == 2);
  REQUIRE(ck.previous().peek().clock == 1);
  // Without <path>.prev: a data_error naming it; <path> is untouched.
  fs::remove(ck.previous().path());
  try {
    ck.restore_previous();
    FAIL("no data_error");
  } catch (const dml::data_error& e) {
    REQUIRE(e.file() == ck.previous().path());
    REQUIRE_THAT(e.reason(), contains("cannot make it the current checkpoint " + ck.path() + ": "));
  }
  REQUIRE(ck.peek().clock == 2);
}

TEST_CASE("a save that cannot keep the previous checkpoint leaves both files as they were") {
  dml_test::temp_dir dir;
  checkpoint ck(dir.path("x.ckpt"));
  ck.keep_previous(true);
  const std::vector<double> v(3, 1.5);
  ck.save({.clock = 1}, v);
  // A non-empty directory where <path>.prev goes: the rename over it fails.
  fs::create_directories(dir.path("x.ckpt.prev/inside"));
  try {
    ck.save({.clock = 2}, v);
    FAIL("no data_error");
  } catch (const dml::data_error& e) {
    REQUIRE(e.file() == ck.path());
    REQUIRE_THAT(e.reason(), contains("cannot save the checkpoint: cannot keep the previous checkpoint: "
                                      "cannot rename " +
                                      ck.path() + ".prev.tmp."));
    REQUIRE_THAT(e.reason(), contains(" to " + ck.path() + ".prev: "));
  }
  REQUIRE(ck.peek().clock == 1);
  // Neither the new checkpoint's temporary file nor the link is left.
  REQUIRE(files_in(dir.path("")) == std::vector<std::string>{"x.ckpt", "x.ckpt.prev"});
  REQUIRE(fs::is_directory(dir.path("x.ckpt.prev")));
}

TEST_CASE("peek returns the saved state without the vectors") {
  dml_test::temp_dir dir;
  const checkpoint ck(dir.path("p.ckpt"));
  const std::vector<float> f{1, 2, 3};
  const clocked c{{9.0, 8.0}, 41};
  checkpoint::state s{.clock = 0xFEDCBA9876543210u, .epoch = 7, .user = {}};
  // More than one 64 KiB chunk of user bytes, vectors and table rows.
  for (int i = 0; i < 100000; ++i) s.user.push_back(static_cast<std::byte>(i * 37));
  const std::vector<std::uint8_t> big(300000, 5);
  ck.save(s, f, c, big);
  const auto peeked = ck.peek();
  std::vector<float> f2(3);
  clocked c2{{0, 0}, 0};
  std::vector<std::uint8_t> big2(300000);
  const auto loaded = ck.load(f2, c2, big2);
  REQUIRE(peeked == loaded);
  REQUIRE(peeked.clock == s.clock);
  REQUIRE(peeked.epoch == 7);
  REQUIRE(peeked.user == s.user);
  REQUIRE(peeked.vector_clocks == std::vector<std::uint64_t>{0, 41, 0});

  // Many vectors: table rows across chunk boundaries.
  std::vector<std::int16_t> small(3, 1);
  const checkpoint no_vectors(dir.path("none.ckpt"));
  no_vectors.save({.clock = 3});
  REQUIRE(no_vectors.peek() == checkpoint::state{.clock = 3});
  std::array<clocked, 3> cs{clocked{{1.0}, 1}, clocked{{2.0}, 2}, clocked{{3.0}, 3}};
  const checkpoint three(dir.path("three.ckpt"));
  three.save({}, cs[0], cs[1], cs[2], small);
  REQUIRE(three.peek().vector_clocks == std::vector<std::uint64_t>{1, 2, 3, 0});
}

TEST_CASE("peek refuses every kind of bad checkpoint with load's reason") {
  dml_test::temp_dir dir;
  const checkpoint good(dir.path("good.ckpt"));
  std::vector<float> a(100, 0.5f);
  std::vector<std::int64_t> b(7, 3);
  good.save({.clock = 42, .epoch = 3, .user = bytes_of("hello")}, a, b);
  const std::string bytes = read_bytes(good.path());
  REQUIRE(bytes.size() == 569);

  std::vector<std::pair<std::string, std::string>> variants;  // name, content
  auto add = [&](std::string name, std::string content) { variants.emplace_back(std::move(name), content); };
  auto flipped = [&](std::size_t offset, unsigned char bit) {
    std::string c = bytes;
    c[offset] = static_cast<char>(static_cast<unsigned char>(c[offset]) ^ bit);
    return c;
  };
  add("empty", "");
  add("magic", "DMLCKPTX" + bytes.substr(8));
  add("text", "hello, world");
  add("v2", flipped(8, 3));
  for (std::size_t cut : {3u, 30u, 55u, 56u, 104u, 300u, 565u, 568u})
    add("cut" + std::to_string(cut), bytes.substr(0, cut));
  add("long", bytes + "x");
  for (std::size_t offset : {12u, 16u, 25u, 40u, 48u})
    add("h" + std::to_string(offset), flipped(offset, 0x10));
  for (std::size_t offset : {53u, 56u, 60u, 88u, 104u, 109u, 300u, 564u, 568u})
    add("p" + std::to_string(offset), flipped(offset, 0x04));
  // Sizes that lie, with every checksum right.
  add("many_vectors", header_claiming(0xffffffffu, 56 + 4, 0) + std::string(4, '\0'));
  add("lying_user", with_crc(header_claiming(1, 56 + 24 + 4, 1000) + std::string(24, '\0')));
  add("unknown_type", with_crc(header_claiming(1, 56 + 24 + 4, 0) + table_row(99, 4, 0)));
  add("element_size", with_crc(header_claiming(1, 56 + 24 + 4, 0) + table_row(9, 8, 0)));
  add("long_vector",
      with_crc(header_claiming(1, 56 + 24 + 8 + 4, 0) + table_row(9, 4, 3) + std::string(8, '\0')));
  add("short_vector",
      with_crc(header_claiming(1, 56 + 24 + 8 + 4, 0) + table_row(9, 4, 1) + std::string(8, '\0')));

  for (const auto& [name, content] : variants) {
    INFO(name);
    write_bytes(dir.path(name), content);
    const checkpoint ck(dir.path(name));
    const std::string reason = peek_failure(ck);
    std::vector<float> v(2);  // one vector of the right shape for the crafted files
    if (name == "lying_user" || name == "unknown_type" || name == "element_size" || name == "long_vector" ||
        name == "short_vector" || name == "many_vectors")
      REQUIRE(reason == load_failure(ck, v));
    else
      REQUIRE(reason == load_failure(ck, a, b));
  }
  fs::create_directory(dir.path("a-directory"));
  REQUIRE(peek_failure(checkpoint(dir.path("a-directory"))) ==
          "cannot read the checkpoint: not a regular file");
  REQUIRE(peek_failure(checkpoint(dir.path("missing"))) ==
          "cannot open the checkpoint: No such file or directory");
  REQUIRE(good.peek().clock == 42);
}

TEST_CASE("peek refuses a huge sparse file whose header lies without reading it") {
  dml_test::temp_dir dir;
  const std::string path = dir.path("huge.ckpt");
  constexpr std::uint64_t tib = std::uint64_t{1} << 40;
  for (const std::uint32_t vectors : {1u, 0xffffffffu}) {
    INFO(vectors << " vectors claimed");
    write_bytes(path, header_claiming(vectors, tib, tib - 56 - 24 - 4 - 400));
    std::error_code ec;
    fs::resize_file(path, tib, ec);
    if (ec) {
      WARN("skipped: this file system cannot hold a sparse 1 TiB file: " << ec.message());
      return;
    }
    const auto start = std::chrono::steady_clock::now();
    const std::string reason = peek_failure(checkpoint(path));
    REQUIRE(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));  // not read through
    if (vectors == 1)
      REQUIRE(reason ==
              "the checkpoint has 1099511627292 user bytes, more than max_user_bytes() = 268435456");
    else
      REQUIRE(reason ==
              "corrupted: the sizes in the header and vector table exceed the file size 1099511627776");
  }
}

TEST_CASE("a save with keep_previous killed at a random moment leaves two consecutive generations") {
  dml_test::temp_dir dir;
  checkpoint ck(dir.path("two.ckpt"));
  ck.keep_previous(true);
  constexpr std::size_t n = std::size_t{1} << 20;  // 1 M floats, 4 MiB: many saves per round
  auto value = [](std::size_t i, std::uint64_t g) { return static_cast<float>((i + g * 7919) & 0xFFFFFF); };
  std::vector<float> v(n);
  auto fill = [&](std::uint64_t g) {
    for (std::size_t i = 0; i < n; ++i) v[i] = value(i, g);
  };
  // The generation `c` holds, after checking every element against it.
  auto generation = [&](const checkpoint& c) {
    std::fill(v.begin(), v.end(), -1.0f);
    const auto s = c.load(v);
    std::size_t wrong = 0;
    while (wrong < n && v[wrong] == value(wrong, s.clock)) ++wrong;
    REQUIRE(wrong == n);
    REQUIRE(c.peek() == s);
    return s.clock;
  };
  fill(0);
  ck.save({.clock = 0}, v);
  fill(1);
  ck.save({.clock = 1}, v);

  std::mt19937 rng(20261123);  // the sleeps; where the kills land depends on the machine
  std::uint64_t newest = 1, prev = 0;
  int both_same = 0, advanced = 0;
  for (std::uint64_t round = 1; round <= 16; ++round) {
    const std::uint64_t first = round * 1000;
    kill_saving_child(ck, v, first, round, fill, std::chrono::milliseconds(rng() % 150));

    const std::uint64_t g = generation(ck), p = generation(ck.previous());
    INFO("round " << round << ": <path> holds " << g << ", <path>.prev " << p << "; before: " << newest
                  << ", " << prev);
    if (g == newest)  // no new generation: killed before the first save's rename over <path>
      REQUIRE((p == prev || p == newest));
    else if (g == first)  // the first save of this round replaced `newest`
      REQUIRE((p == newest || p == g));
    else
      REQUIRE((g > first && g < first + 1000 && (p == g - 1 || p == g)));
    if (p == g) ++both_same;
    if (g != newest) ++advanced;
    newest = g;
    prev = p;
  }
  UNSCOPED_INFO("rounds that saved a new generation: " << advanced
                                                       << ", ended with both files the same: " << both_same);
  const std::size_t leftovers = files_in(dir.path("")).size() - 2;
  REQUIRE(ck.remove_temporaries() == leftovers);
  REQUIRE(files_in(dir.path("")) == std::vector<std::string>{"two.ckpt", "two.ckpt.prev"});
}

TEST_CASE("peek and load agree on damaged files") {
  dml_test::temp_dir dir;
  const checkpoint good(dir.path("good.ckpt"));
  std::vector<float> a(10, 0.5f);
  std::vector<std::int64_t> b(3, 3);
  good.save({.clock = 42, .epoch = 3, .user = bytes_of("hello")}, a, b);
  const std::string bytes = read_bytes(good.path());
  namespace d = dml::fault::detail;
  std::mt19937 rng(15);
  int accepted = 0;
  for (int round = 0; round < 2000; ++round) {
    std::string c = bytes;
    const int flips = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < flips; ++k) c[rng() % c.size()] = static_cast<char>(rng());
    if (rng() % 4 == 0) c.resize(rng() % c.size());
    if (rng() % 2 == 0 && c.size() >= 60) {  // repair both checksums, to get past them
      auto* p = reinterpret_cast<std::byte*>(c.data());
      d::store_le(p + 48, d::crc32_of(std::span<const std::byte>(p, 48)));
      d::store_le(p + c.size() - 4, d::crc32_of(std::span<const std::byte>(p, c.size() - 4)));
    }
    INFO("round " << round);
    write_bytes(dir.path("m.ckpt"), c);
    const checkpoint ck(dir.path("m.ckpt"));
    std::vector<float> a2(10);
    std::vector<std::int64_t> b2(3);
    std::string peek_reason;
    checkpoint::state peeked;
    try {
      peeked = ck.peek();
    } catch (const dml::data_error& e) {
      peek_reason = e.reason();
    }
    if (!peek_reason.empty()) {
      REQUIRE(load_failure(ck, a2, b2) == peek_reason);
      continue;
    }
    ++accepted;
    try {  // a file peek() accepts fails to load only for not fitting the vectors
      REQUIRE(ck.load(a2, b2) == peeked);
    } catch (const dml::data_error& e) {
      const std::string reason = e.reason();
      REQUIRE((reason.starts_with("vector ") || reason.starts_with("the checkpoint holds ")));
    }
  }
  UNSCOPED_INFO(accepted << " damaged files were accepted by peek()");
}

// SPDX-License-Identifier: BSL-1.0
/// @file
/// Checkpoints: a set of vectors plus a little training state (clock, epoch,
/// user bytes) in one file, replaced atomically on every save (optionally
/// keeping the replaced one as `<path>.prev`) and loaded back only when the
/// whole file checks out.
///
/// File format (version 1), all integers little-endian:
///
///     header   56 bytes   magic "DMLCKPT\0", version, vector count, file
///                         size, clock, epoch, user byte count, CRC-32 of
///                         the header's first 48 bytes, 4 reserved bytes
///     table    24 bytes per vector: element type code, element size,
///                         length (elements), the vector's clock()
///     user     the user bytes
///     data     each vector's elements in order, little-endian
///     trailer  CRC-32 of everything before it
///
/// docs/fault-tolerance.md has the field-by-field table and the guarantees.
#pragma once

#include <dml/error.hpp>
#include <dml/version.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cerrno>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <ranges>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

DML_BEGIN_NAMESPACE
namespace fault {
namespace detail {

// ---- CRC-32 -----------------------------------------------------------------
// The CRC-32 of zlib, gzip and PNG (reflected polynomial 0xEDB88320, initial
// value and final xor 0xFFFFFFFF), eight bytes per step: tables[k][b] is the
// CRC contribution of byte b followed by k zero bytes.
inline constexpr std::array<std::array<std::uint32_t, 256>, 8> crc32_tables = [] {
  std::array<std::array<std::uint32_t, 256>, 8> t{};
  for (std::uint32_t b = 0; b < 256; ++b) {
    std::uint32_t c = b;
    for (int bit = 0; bit < 8; ++bit) c = (c & 1u) != 0 ? (c >> 1) ^ 0xEDB88320u : c >> 1;
    t[0][b] = c;
  }
  for (std::size_t k = 1; k < 8; ++k)
    for (std::size_t b = 0; b < 256; ++b) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xffu];
  return t;
}();

inline std::uint32_t load_u32(const std::byte* p) noexcept {
  return std::to_integer<std::uint32_t>(p[0]) | (std::to_integer<std::uint32_t>(p[1]) << 8) |
         (std::to_integer<std::uint32_t>(p[2]) << 16) | (std::to_integer<std::uint32_t>(p[3]) << 24);
}

/// Incremental CRC-32 over a byte stream.
class crc32 {
 public:
  void update(std::span<const std::byte> bytes) noexcept {
    const auto& t = crc32_tables;
    std::uint32_t c = state_;
    const std::byte* p = bytes.data();
    std::size_t n = bytes.size();
    for (; n >= 8; p += 8, n -= 8) {
      const std::uint32_t lo = c ^ load_u32(p);
      const std::uint32_t hi = load_u32(p + 4);
      c = t[7][lo & 0xffu] ^ t[6][(lo >> 8) & 0xffu] ^ t[5][(lo >> 16) & 0xffu] ^ t[4][lo >> 24] ^
          t[3][hi & 0xffu] ^ t[2][(hi >> 8) & 0xffu] ^ t[1][(hi >> 16) & 0xffu] ^ t[0][hi >> 24];
    }
    for (; n > 0; ++p, --n) c = (c >> 8) ^ t[0][(c ^ std::to_integer<std::uint32_t>(*p)) & 0xffu];
    state_ = c;
  }
  [[nodiscard]] std::uint32_t value() const noexcept { return ~state_; }

 private:
  std::uint32_t state_ = 0xFFFFFFFFu;
};

/// CRC-32 of one buffer.
inline std::uint32_t crc32_of(std::span<const std::byte> bytes) noexcept {
  crc32 c;
  c.update(bytes);
  return c.value();
}

// ---- little-endian encoding -----------------------------------------------------
static_assert(std::endian::native == std::endian::little || std::endian::native == std::endian::big,
              "dml::fault::checkpoint supports little- and big-endian machines only");

template <std::size_t N>
using uint_of_size = std::conditional_t<
    N == 1, std::uint8_t,
    std::conditional_t<N == 2, std::uint16_t, std::conditional_t<N == 4, std::uint32_t, std::uint64_t>>>;

/// Writes v's object representation to out, least significant byte first.
template <class T>
void store_le(std::byte* out, T v) noexcept {
  using U = uint_of_size<sizeof(T)>;
  const U u = std::bit_cast<U>(v);
  for (std::size_t i = 0; i < sizeof(T); ++i) out[i] = static_cast<std::byte>((u >> (8 * i)) & 0xffu);
}

/// Reads a T stored least significant byte first.
template <class T>
[[nodiscard]] T load_le(const std::byte* in) noexcept {
  using U = uint_of_size<sizeof(T)>;
  U u = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) u = static_cast<U>(u | (std::to_integer<U>(in[i]) << (8 * i)));
  return std::bit_cast<T>(u);
}

// ---- element types ------------------------------------------------------------
template <class T>
inline constexpr bool is_character_v =
    std::is_same_v<T, char> || std::is_same_v<T, wchar_t> || std::is_same_v<T, char8_t> ||
    std::is_same_v<T, char16_t> || std::is_same_v<T, char32_t>;

/// The type code stored in the file for element type T, 0 when T is not
/// stored. Integers are identified by signedness and size, so `long` and
/// `long long` of the same size share a code.
template <class T>
constexpr std::uint32_t code_of() noexcept {
  if constexpr (std::is_same_v<T, bool> || is_character_v<T> || !std::is_arithmetic_v<T>) {
    return 0;
  } else if constexpr (std::is_integral_v<T>) {
    constexpr std::uint32_t base = std::is_signed_v<T> ? 1 : 5;  // int8 = 1 .. int64 = 4, uint8 = 5 ..
    return sizeof(T) == 1   ? base
           : sizeof(T) == 2 ? base + 1
           : sizeof(T) == 4 ? base + 2
           : sizeof(T) == 8 ? base + 3
                            : 0;
  } else if constexpr (std::is_same_v<T, float> && sizeof(float) == 4 &&
                       std::numeric_limits<float>::is_iec559) {
    return 9;
  } else if constexpr (std::is_same_v<T, double> && sizeof(double) == 8 &&
                       std::numeric_limits<double>::is_iec559) {
    return 10;
  } else {
    return 0;
  }
}

inline constexpr std::array<std::string_view, 11> type_names{
    "", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float", "double"};
inline constexpr std::array<std::uint32_t, 11> type_sizes{0, 1, 2, 4, 8, 1, 2, 4, 8, 4, 8};

inline std::string type_name(std::uint32_t code) {
  if (code < type_names.size() && code != 0) return std::string(type_names[code]);
  return "unknown (code " + std::to_string(code) + ")";
}

// ---- what counts as a vector ----------------------------------------------------
template <class R>
concept contiguous_sized = std::ranges::contiguous_range<R> && std::ranges::sized_range<R>;

/// V has a span() whose result is a contiguous sized range that does not
/// own its elements (a std::span or a reference), e.g. dml::dist_vector.
template <class V>
concept has_span = requires(V& v) {
  { v.span() } -> contiguous_sized;
  requires std::ranges::borrowed_range<decltype(v.span())>;
};

/// What a vector's elements are read through: its span(), or itself.
template <class V>
struct view_of {
  using type = V&;
};
template <class V>
requires has_span<V>
struct view_of<V> {
  using type = decltype(std::declval<V&>().span());
};

template <class V>
concept vector_shape = has_span<V> || contiguous_sized<V&>;

template <class V>
struct element_of {
  using type = void;
};
template <class V>
requires vector_shape<V>
struct element_of<V> {
  using reference = std::ranges::range_reference_t<typename view_of<V>::type>;
  using type = std::remove_cv_t<std::remove_reference_t<reference>>;
  static constexpr bool writable = !std::is_const_v<std::remove_reference_t<reference>>;
};

/// The element type of a vector (void when V is not one).
template <class V>
using element_t = typename element_of<V>::type;

/// The elements of v as a std::span (const when v is const).
template <class V>
auto elements_of(V& v) {
  if constexpr (has_span<V>) {
    auto&& r = v.span();
    return std::span(std::ranges::data(r), std::ranges::size(r));
  } else {
    return std::span(std::ranges::data(v), std::ranges::size(v));
  }
}

// ---- layout ---------------------------------------------------------------------------
inline constexpr std::array<std::byte, 8> magic{std::byte{'D'}, std::byte{'M'}, std::byte{'L'},
                                                std::byte{'C'}, std::byte{'K'}, std::byte{'P'},
                                                std::byte{'T'}, std::byte{0}};
inline constexpr std::uint32_t format_version = 1;
inline constexpr std::size_t header_size = 56;
inline constexpr std::size_t header_crc_offset = 48;
inline constexpr std::size_t entry_size = 24;
inline constexpr std::size_t trailer_size = 4;

/// One row of the vector table.
struct entry {
  std::uint32_t code = 0;
  std::uint32_t element_size = 0;
  std::uint64_t length = 0;
  std::uint64_t clock = 0;
  std::size_t offset = 0;  // of the data in the file
};

inline std::string system_message(int err) { return std::system_category().message(err); }

inline std::string hex32(std::uint32_t v) {
  std::string s = "0x00000000";
  for (std::size_t i = 0; i < 8; ++i) s[9 - i] = "0123456789abcdef"[(v >> (4 * i)) & 0xfu];
  return s;
}

inline std::string plural(std::uint64_t n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

// ---- writing -------------------------------------------------------------------------------
/// Number of temporary files this process has created (part of their names).
inline std::atomic<std::uint64_t>& temporary_counter() {
  static std::atomic<std::uint64_t> counter{0};
  return counter;
}

inline std::string directory_of(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

/// A fresh temporary name next to `base`: `<base>.tmp.<pid>.<n>`.
inline std::string temporary_name(const std::string& base) {
  return base + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(temporary_counter()++);
}

/// The suffix of the previous generation's file (checkpoint::keep_previous).
inline constexpr std::string_view previous_suffix = ".prev";

/// Flushes a directory's entries to disk: 0, or the errno of the failure.
/// EINVAL (the file system cannot flush directories) counts as success.
inline int sync_directory(const std::string& dir) {
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return errno;
  const int synced = ::fsync(dfd);
  const int err = errno;
  ::close(dfd);
  return synced != 0 && err != EINVAL ? err : 0;
}

/// Flushes the directory of `path`, a file just renamed into place (`what`
/// says which: "the checkpoint was written and", "the previous checkpoint
/// was"); throws dml::data_error naming `path` when the flush fails.
inline void sync_renamed(const std::string& path, const char* what) {
  const std::string dir = directory_of(path);
  if (const int err = sync_directory(dir); err != 0)
    throw data_error(path, 0,
                     std::string(what) + " renamed into place, but flushing its directory " + dir +
                         " to disk failed (" + system_message(err) + "); it may not survive a power failure");
}

/// Writes one checkpoint into a fresh temporary file next to the target and
/// renames it over the target on commit(). Until then the target is never
/// touched; if the writer is destroyed uncommitted (an exception) the
/// temporary file is closed and removed.
class atomic_file_writer {
 public:
  explicit atomic_file_writer(std::string target) : target_(std::move(target)) {
    // O_EXCL: a name already taken (a stale file from a process that had the
    // same pid, or another host on a shared file system) is skipped, never
    // reused.
    for (int attempt = 0; attempt < 1000; ++attempt) {
      temp_ = temporary_name(target_);
      fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd_ >= 0) break;
      if (errno != EEXIST) fail("cannot create the temporary file ", temp_, errno);
    }
    if (fd_ < 0) fail("cannot create the temporary file ", temp_, EEXIST);
  }
  atomic_file_writer(const atomic_file_writer&) = delete;
  atomic_file_writer& operator=(const atomic_file_writer&) = delete;
  ~atomic_file_writer() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(temp_.c_str());
  }

  /// Appends bytes (buffered) and adds them to the running CRC.
  void write(std::span<const std::byte> bytes) {
    crc_.update(bytes);
    if (bytes.size() > buffer_capacity - used_) {
      flush_buffer();
      if (bytes.size() >= buffer_capacity) {  // large: straight from the caller's memory
        write_all(bytes);
        return;
      }
    }
    if (!bytes.empty()) std::memcpy(buffer_.get() + used_, bytes.data(), bytes.size());
    used_ += bytes.size();
  }

  /// Appends the CRC-32 of everything written so far.
  void write_crc() {
    std::array<std::byte, 4> b{};
    store_le(b.data(), crc_.value());
    write(b);
  }

  /// Flushes the data to stable storage, renames the temporary file over the
  /// target and flushes the directory entry. With `keep_previous`, the file
  /// the rename replaces is first made `<target>.prev` (keep_replaced()).
  void commit(bool keep_previous) {
    flush_buffer();
    if (::fsync(fd_) != 0) fail("cannot flush to disk (fsync) the temporary file ", temp_, errno);
    const int fd = std::exchange(fd_, -1);
    if (::close(fd) != 0) fail("cannot close the temporary file ", temp_, errno);
    if (keep_previous) keep_replaced();
    if (::rename(temp_.c_str(), target_.c_str()) != 0)
      fail("cannot rename the temporary file ", temp_, errno);
    committed_ = true;
    sync_renamed(target_, "the checkpoint was written and");
  }

 private:
  static constexpr std::size_t buffer_capacity = std::size_t{1} << 20;

  /// Makes `<target>.prev` the file now at `<target>`, if there is one, while
  /// `<target>` stays as it is: a hard link `<target>.prev.tmp.<pid>.<n>` to
  /// it is renamed over `<target>.prev`, so at every instant `<target>.prev`
  /// is either the generation before or the one `<target>` holds, and
  /// `<target>` is never missing. The directory is flushed before
  /// commit() replaces `<target>`, so that after a power failure the new
  /// checkpoint is never on disk without the kept one.
  void keep_replaced() {
    const std::string previous = target_ + std::string(previous_suffix);
    std::string link_name;
    int err = EEXIST;
    for (int attempt = 0; attempt < 1000 && err == EEXIST; ++attempt) {
      link_name = temporary_name(previous);
      err = ::link(target_.c_str(), link_name.c_str()) == 0 ? 0 : errno;
    }
    if (err == ENOENT) return;  // no checkpoint yet (the temporary file shows the directory exists)
    if (err != 0) fail("cannot keep the previous checkpoint: cannot link it to ", link_name, err);
    if (::rename(link_name.c_str(), previous.c_str()) != 0) {
      err = errno;
      ::unlink(link_name.c_str());
      fail("cannot keep the previous checkpoint: cannot rename ", link_name + " to " + previous, err);
    }
    const std::string dir = directory_of(target_);
    if (const int e = sync_directory(dir); e != 0)
      fail("cannot keep the previous checkpoint: cannot flush to disk (fsync) the directory ", dir, e);
  }

  [[noreturn]] void fail(const char* what, const std::string& file, int err) const {
    throw data_error(target_, 0,
                     "cannot save the checkpoint: " + std::string(what) + file + ": " + system_message(err));
  }

  void flush_buffer() {
    write_all(std::span<const std::byte>(buffer_.get(), used_));
    used_ = 0;
  }

  void write_all(std::span<const std::byte> bytes) {
    const std::byte* p = bytes.data();
    std::size_t left = bytes.size();
    while (left > 0) {
      const ::ssize_t n = ::write(fd_, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) fail("cannot write the temporary file ", temp_, errno);
      if (n == 0) fail("cannot write the temporary file ", temp_, ENOSPC);
      p += n;
      left -= static_cast<std::size_t>(n);
    }
  }

  std::string target_;
  std::string temp_;
  int fd_ = -1;
  bool committed_ = false;
  crc32 crc_;
  std::unique_ptr<std::byte[]> buffer_ = std::make_unique_for_overwrite<std::byte[]>(buffer_capacity);
  std::size_t used_ = 0;
};

/// Writes a vector's elements little-endian.
template <class T>
void write_elements(atomic_file_writer& w, std::span<const T> values) {
  if constexpr (std::endian::native == std::endian::little) {
    w.write(std::as_bytes(values));
  } else {
    std::array<std::byte, 4096 * sizeof(T)> chunk{};
    for (std::size_t i = 0; i < values.size();) {
      const std::size_t n = std::min<std::size_t>(4096, values.size() - i);
      for (std::size_t k = 0; k < n; ++k) store_le(chunk.data() + k * sizeof(T), values[i + k]);
      w.write(std::span(chunk.data(), n * sizeof(T)));
      i += n;
    }
  }
}

// ---- reading -------------------------------------------------------------------------------
/// Checks the fixed header of a file of `size` bytes whose first
/// min(size, header_size) bytes are `first`: magic number, version, length,
/// header checksum and the size the header records. Returns the vector count.
inline std::uint32_t check_header(const std::string& path, std::span<const std::byte> first,
                                  std::uint64_t size) {
  auto fail = [&](const std::string& reason) { throw data_error(path, 0, reason); };
  // A file shorter than the magic number is a truncated checkpoint if what
  // it has agrees with the magic number.
  const std::size_t magic_have = std::min(first.size(), magic.size());
  if (!std::equal(first.begin(), first.begin() + static_cast<std::ptrdiff_t>(magic_have), magic.begin()))
    fail("not a dml checkpoint (bad magic number)");
  if (first.size() >= 12) {
    const std::uint32_t version = load_le<std::uint32_t>(first.data() + 8);
    if (version != format_version)
      fail("unsupported checkpoint format version " + std::to_string(version) +
           " (this version of dml reads version " + std::to_string(format_version) + ")");
  }
  if (size < header_size || first.size() < header_size)
    fail("truncated: expected at least " + std::to_string(header_size) + " bytes (the header), found " +
         std::to_string(size));
  if (load_le<std::uint32_t>(first.data() + header_crc_offset) != crc32_of(first.first(header_crc_offset)))
    fail("checksum mismatch in the header: the file is corrupted");
  const std::uint64_t recorded = load_le<std::uint64_t>(first.data() + 16);
  if (size < recorded)
    fail("truncated: expected " + std::to_string(recorded) + " bytes (as the header records), found " +
         std::to_string(size));
  if (size > recorded)
    fail("trailing data: expected " + std::to_string(recorded) + " bytes (as the header records), found " +
         std::to_string(size));
  return load_le<std::uint32_t>(first.data() + 12);
}

/// Reads up to out.size() bytes at `offset`; fewer only at the end of the file.
inline std::size_t read_some(const std::string& path, int fd, std::span<std::byte> out,
                             std::uint64_t offset) {
  std::size_t have = 0;
  while (have < out.size()) {
    const ::ssize_t n =
        ::pread(fd, out.data() + have, out.size() - have, static_cast<::off_t>(offset + have));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw data_error(path, 0, "cannot read the checkpoint: " + system_message(errno));
    if (n == 0) break;
    have += static_cast<std::size_t>(n);
  }
  return have;
}

/// A checkpoint file open for reading, known to be a regular file of `size`
/// bytes; data_error when it cannot be opened or is not a regular file.
struct input_file {
  explicit input_file(const std::string& path) {
    // O_NONBLOCK: opening a FIFO would otherwise wait for a writer forever
    // before fstat() could refuse it (it changes nothing for regular files).
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) throw data_error(path, 0, "cannot open the checkpoint: " + system_message(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      const int err = errno;
      ::close(fd);
      throw data_error(path, 0, "cannot read the checkpoint: " + system_message(err));
    }
    if (!S_ISREG(st.st_mode)) {
      ::close(fd);
      throw data_error(path, 0, "cannot read the checkpoint: not a regular file");
    }
    size = static_cast<std::uint64_t>(st.st_size);
  }
  input_file(const input_file&) = delete;
  input_file& operator=(const input_file&) = delete;
  ~input_file() { ::close(fd); }

  int fd = -1;
  std::uint64_t size = 0;
};

/// The whole file; data_error when it cannot be opened or read. The header
/// is checked first, so a file that is not a checkpoint (or has a damaged
/// header) is refused before the rest is read into memory, and so is a file
/// larger than `limit` bytes (the most a checkpoint of the caller's vectors
/// can be): nothing is allocated from a size the file declares, only from
/// its real size once that is known to be plausible.
inline std::vector<std::byte> read_file(const std::string& path, std::uint64_t limit,
                                        const std::string& limit_reason) {
  const input_file in(path);
  const std::uint64_t size = in.size;
  std::array<std::byte, header_size> first{};
  const std::size_t got = read_some(path, in.fd, first, 0);
  (void)check_header(path, std::span(first).first(got), size);
  if (size > limit)
    throw data_error(path, 0,
                     "the file has " + std::to_string(size) + " bytes, more than the " +
                         std::to_string(limit) + " a checkpoint of " + limit_reason + " can have");
  std::vector<std::byte> bytes(static_cast<std::size_t>(size) + 1);  // + 1: notices a file that grew
  std::copy(first.begin(), first.end(), bytes.begin());
  const std::size_t rest = read_some(path, in.fd, std::span(bytes).subspan(header_size), header_size);
  bytes.resize(header_size + rest);
  return bytes;
}

/// The message of a size in the header or the vector table that the file
/// cannot hold.
inline std::string exceeds_file_size(std::uint64_t size) {
  return "corrupted: the sizes in the header and vector table exceed the file size " + std::to_string(size);
}

/// The user byte count, checked against the file's `size` (a file with
/// `count` vectors whose header and sizes were checked by check_header).
inline std::uint64_t user_size_of(const std::string& path, std::span<const std::byte> header,
                                  std::uint32_t count, std::uint64_t size) {
  const std::uint64_t user_size = load_le<std::uint64_t>(header.data() + 40);
  const std::uint64_t start = header_size + std::uint64_t{count} * entry_size;
  if (user_size > size - trailer_size - start) throw data_error(path, 0, exceeds_file_size(size));
  return user_size;
}

/// Table row k (`row`: entry_size bytes), checked against the file's `size`;
/// `offset` is where its data starts and is advanced past it.
inline entry entry_at(const std::string& path, std::uint32_t k, const std::byte* row, std::uint64_t size,
                      std::uint64_t& offset) {
  auto fail = [&](const std::string& reason) { throw data_error(path, 0, reason); };
  entry e;
  e.code = load_le<std::uint32_t>(row);
  e.element_size = load_le<std::uint32_t>(row + 4);
  e.length = load_le<std::uint64_t>(row + 8);
  e.clock = load_le<std::uint64_t>(row + 16);
  if (e.code == 0 || e.code >= type_sizes.size())
    fail("vector " + std::to_string(k) + " has an unknown element type (code " + std::to_string(e.code) +
         ")");
  if (e.element_size != type_sizes[e.code])
    fail("corrupted: vector " + std::to_string(k) + " records element size " +
         std::to_string(e.element_size) + " for type " + type_name(e.code));
  if (e.length > (size - trailer_size - offset) / e.element_size) fail(exceeds_file_size(size));
  e.offset = static_cast<std::size_t>(offset);
  offset += e.length * e.element_size;
  return e;
}

/// Throws unless the table's rows, which end at `offset`, account for the
/// whole file.
inline void check_accounted(const std::string& path, std::uint64_t offset, std::uint64_t size) {
  if (offset != size - trailer_size)
    throw data_error(path, 0,
                     "corrupted: the header and vector table account for " +
                         std::to_string(offset + trailer_size) + " bytes, the file has " +
                         std::to_string(size));
}

/// Throws unless a file of `size` bytes can hold the fixed parts of a
/// checkpoint of `count` vectors.
inline void check_fits(const std::string& path, std::uint32_t count, std::uint64_t size) {
  if (size < header_size + std::uint64_t{count} * entry_size + trailer_size)
    throw data_error(path, 0,
                     "corrupted: the header records " + std::to_string(size) + " bytes, too few for " +
                         plural(count, "vector"));
}

/// Throws unless the trailer holds the CRC-32 `computed`.
inline void check_crc(const std::string& path, std::uint32_t stored, std::uint32_t computed) {
  if (stored != computed)
    throw data_error(path, 0,
                     "checksum mismatch (stored CRC-32 " + hex32(stored) + ", computed " + hex32(computed) +
                         "): the file is corrupted");
}

/// The parts of a checkpoint that do not depend on the program's vectors.
struct parsed {
  std::uint64_t clock = 0;
  std::uint64_t epoch = 0;
  std::span<const std::byte> user;
  std::vector<entry> table;
};

/// Checks everything that can be checked without the program's vectors:
/// the header, both checksums and the table's consistency.
inline parsed parse(const std::string& path, std::span<const std::byte> file) {
  const std::size_t size = file.size();
  const std::uint32_t count = check_header(path, file.first(std::min(size, header_size)), size);
  check_fits(path, count, size);
  check_crc(path, load_le<std::uint32_t>(file.data() + size - trailer_size),
            crc32_of(file.first(size - trailer_size)));

  parsed p;
  p.clock = load_le<std::uint64_t>(file.data() + 24);
  p.epoch = load_le<std::uint64_t>(file.data() + 32);
  const std::uint64_t user_size = user_size_of(path, file, count, size);
  // Every size below is bounded by the file size before it is used.
  std::uint64_t offset = header_size + std::uint64_t{count} * entry_size;
  p.user = file.subspan(static_cast<std::size_t>(offset), static_cast<std::size_t>(user_size));
  offset += user_size;
  p.table.resize(count);
  for (std::uint32_t k = 0; k < count; ++k)
    p.table[k] = entry_at(path, k, file.data() + header_size + std::size_t{k} * entry_size, size, offset);
  check_accounted(path, offset, size);
  return p;
}

/// What peek_file() finds: the state without the vectors' data.
struct peeked {
  std::uint64_t clock = 0;
  std::uint64_t epoch = 0;
  std::vector<std::byte> user;
  std::vector<std::uint64_t> vector_clocks;
};

/// Checks a checkpoint as parse() does, reading it in fixed-size chunks
/// instead of into memory, and returns its state. Memory: one chunk, then,
/// once the whole file has checked out, the user bytes (refused above
/// `max_user_bytes` from the header alone) and 8 bytes per vector (whose
/// 24-byte table rows are in the file, so their number is bounded by its
/// real size). Time: one read of the file.
inline peeked peek_file(const std::string& path, std::size_t max_user_bytes) {
  const input_file in(path);
  const std::uint64_t size = in.size;
  std::array<std::byte, header_size> header{};
  const std::size_t got = read_some(path, in.fd, header, 0);
  const std::uint32_t count = check_header(path, std::span(header).first(got), size);
  check_fits(path, count, size);
  // The header's own checksum vouches for these: a size the file cannot
  // hold, or more user bytes than allowed, is refused before the file is read.
  const std::uint64_t user_size = user_size_of(path, header, count, size);
  if (user_size > max_user_bytes)
    throw data_error(path, 0,
                     "the checkpoint has " + std::to_string(user_size) +
                         " user bytes, more than max_user_bytes() = " + std::to_string(max_user_bytes));
  auto read_exactly = [&](std::span<std::byte> out, std::uint64_t offset) {
    const std::size_t n = read_some(path, in.fd, out, offset);
    if (n != out.size())  // the file shrank since fstat()
      throw data_error(path, 0,
                       "truncated: expected " + std::to_string(size) +
                           " bytes (as the header records), found " + std::to_string(offset + n));
  };

  // Pass 1: the checksum of everything before the trailer.
  constexpr std::size_t chunk_size = std::size_t{64} << 10;
  const auto chunk = std::make_unique_for_overwrite<std::byte[]>(chunk_size);
  crc32 crc;
  crc.update(header);
  for (std::uint64_t at = header_size; at < size - trailer_size;) {
    const std::span<std::byte> part(
        chunk.get(), static_cast<std::size_t>(std::min<std::uint64_t>(chunk_size, size - trailer_size - at)));
    read_exactly(part, at);
    crc.update(part);
    at += part.size();
  }
  std::array<std::byte, trailer_size> trailer{};
  read_exactly(trailer, size - trailer_size);
  check_crc(path, load_le<std::uint32_t>(trailer.data()), crc.value());

  // Pass 2: the table and the user bytes.
  peeked p;
  p.clock = load_le<std::uint64_t>(header.data() + 24);
  p.epoch = load_le<std::uint64_t>(header.data() + 32);
  const std::uint64_t user_at = header_size + std::uint64_t{count} * entry_size;
  std::uint64_t offset = user_at + user_size;
  p.vector_clocks.reserve(count);
  constexpr std::uint32_t rows_per_chunk = chunk_size / entry_size;
  for (std::uint32_t k = 0; k < count;) {
    const std::uint32_t rows = std::min(rows_per_chunk, count - k);
    const std::span<std::byte> part(chunk.get(), std::size_t{rows} * entry_size);
    read_exactly(part, header_size + std::uint64_t{k} * entry_size);
    for (std::uint32_t i = 0; i < rows; ++i, ++k)
      p.vector_clocks.push_back(
          entry_at(path, k, part.data() + std::size_t{i} * entry_size, size, offset).clock);
  }
  check_accounted(path, offset, size);
  p.user.resize(static_cast<std::size_t>(user_size));
  read_exactly(p.user, user_at);
  return p;
}

/// Throws unless the program's vector k matches table entry e.
template <class V>
void check_vector(const std::string& path, std::size_t k, const entry& e, V& v) {
  using T = element_t<V>;
  constexpr std::uint32_t code = code_of<T>();
  if (e.code != code)
    throw data_error(path, 0,
                     "vector " + std::to_string(k) + " has element type " + type_name(e.code) +
                         " but the program expects " + type_name(code));
  const std::size_t length = elements_of(v).size();
  if (e.length != length)
    throw data_error(path, 0,
                     "vector " + std::to_string(k) + " has length " + std::to_string(e.length) +
                         " but the program's vector has length " + std::to_string(length));
}

/// Copies table entry e's data into v (checked before by check_vector).
template <class V>
void copy_vector(std::span<const std::byte> file, const entry& e, V& v) {
  using T = element_t<V>;
  const std::span<T> out = elements_of(v);
  if (out.empty()) return;
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(out.data(), file.data() + e.offset, out.size_bytes());
  } else {
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = load_le<T>(file.data() + e.offset + i * sizeof(T));
  }
}

/// V is a checkpoint_vector with writable elements.
template <class V>
concept loadable = (vector_shape<std::remove_reference_t<V>> &&
                    code_of<element_t<std::remove_reference_t<V>>>() != 0 &&
                    element_of<std::remove_reference_t<V>>::writable);

template <class V>
std::uint64_t clock_of(const V& v) {
  if constexpr (requires {
                  { v.clock() } -> std::convertible_to<std::uint64_t>;
                }) {
    return static_cast<std::uint64_t>(v.clock());
  } else {
    return 0;
  }
}

}  // namespace detail

/// An element type a checkpoint stores: a signed or unsigned integer of 8,
/// 16, 32 or 64 bits (not bool or a character type), float or double.
template <class T>
concept checkpoint_element = (detail::code_of<std::remove_cv_t<T>>() != 0);

/// Something a checkpoint saves and loads: its `span()` is a contiguous
/// sized range that does not own its elements (`dml::dist_vector`), or it is
/// a contiguous sized range itself (`std::vector`, `std::array`,
/// `std::span`), and its elements are of a `checkpoint_element` type.
template <class V>
concept checkpoint_vector = (detail::vector_shape<std::remove_reference_t<V>> &&
                             checkpoint_element<detail::element_t<std::remove_reference_t<V>>>);

/// A checkpoint file: saves a set of vectors and the training state to one
/// file, and loads them back.
///
/// ```cpp
/// dml::fault::checkpoint ck("run/model.ckpt");
/// ck.save({.clock = step, .epoch = epoch}, weights, momentum);
/// ...
/// if (ck.exists()) {
///   auto s = ck.load(weights, momentum);  // same vectors, same order
///   step = s.clock;
/// }
/// ```
///
/// **Saving** writes a new file `<path>.tmp.<pid>.<n>` in the same
/// directory, flushes it to disk (fsync), renames it over `<path>` and
/// flushes the directory. A crash at any point leaves either the previous
/// checkpoint or the new one at `<path>`, never a mix. On an error the
/// temporary file is removed and `dml::data_error` names `<path>` and the
/// operating system's reason.
///
/// **Two generations** (`keep_previous(true)`): before the rename, the file
/// at `<path>` is hard-linked as `<path>.prev.tmp.<pid>.<n>`, that link is
/// renamed over `<path>.prev` and the directory is flushed. A crash before
/// the first rename leaves (old, older) at (`<path>`, `<path>.prev`),
/// between the two renames (old, old), after the second (new, old): both
/// names always hold complete checkpoints, of consecutive generations or the
/// same one. A program that saves one file per member resumes from the
/// newest clock that every member has in one of its two files,
/// `previous()` reads the older one, and `restore_previous()` makes it
/// current again before the next save.
///
/// **Stale temporary files.** A process killed during a save leaves its
/// temporary file behind. Loading never reads it and later saves never
/// reuse its name (a new one is created exclusively), so it does no harm but
/// takes disk space; `remove_temporaries()` deletes them.
///
/// **Loading** reads the whole file into memory and checks magic number,
/// format version, size, both checksums, the number of vectors and each
/// vector's element type and length before it writes into any of the
/// caller's vectors: a failed load leaves them untouched. Every problem is a
/// `dml::data_error` with the path and a reason that says what is wrong.
/// Memory: the whole file, and a file larger than the caller's vectors plus
/// max_user_bytes() (and the fixed parts) is refused before it is read, so
/// sizes written in a hostile file never decide an allocation. `peek()`
/// checks the file the same way without the vectors and returns its state.
///
/// A `dml::dist_vector`'s clock() is recorded in the file and returned by
/// load() in `state::vector_clocks`, but it is not restored: a vector's
/// clock counts the scatters of the running program and starts at 0. Keep
/// the training step in `state::clock`.
///
/// One object per file; saving the same path from several threads or
/// processes at once is safe for the file (the last rename wins) but picks
/// an arbitrary winner.
class checkpoint {
 public:
  /// The training state saved next to the vectors.
  struct state {
    /// The training step (or any counter) to resume from.
    std::uint64_t clock = 0;
    /// The epoch counter to resume from.
    std::uint64_t epoch = 0;
    /// Any bytes of the user's own (an RNG state, a learning-rate schedule, ...).
    std::vector<std::byte> user{};
    /// Filled by load(): each vector's clock() when it was saved (0 for
    /// vectors without clock()). Ignored by save().
    std::vector<std::uint64_t> vector_clocks{};

    /// Field-by-field equality.
    friend bool operator==(const state&, const state&) = default;
  };

  /// A checkpoint stored at `path`. Nothing is read or written yet.
  /// Throws `dml::config_error` when path is empty.
  explicit checkpoint(std::string path) : path_(std::move(path)) {
    if (path_.empty()) throw config_error("dml::fault::checkpoint: the path is empty");
  }

  /// load() refuses a file with more user bytes than this (default
  /// 256 MiB), so that a file whose header lies cannot make it allocate
  /// more than the caller's vectors plus this much.
  static constexpr std::size_t default_max_user_bytes = std::size_t{256} << 20;

  /// The most user bytes (`state::user`) load() accepts.
  [[nodiscard]] std::size_t max_user_bytes() const noexcept { return max_user_bytes_; }
  /// Sets the most user bytes load() accepts (save() is not limited).
  void max_user_bytes(std::size_t bytes) noexcept { max_user_bytes_ = bytes; }

  /// The file this checkpoint is stored in.
  [[nodiscard]] const std::string& path() const noexcept { return path_; }

  /// Whether save() keeps the checkpoint it replaces as `<path>.prev`
  /// (default: no).
  [[nodiscard]] bool keep_previous() const noexcept { return keep_previous_; }
  /// Makes save() keep the checkpoint it replaces as `<path>.prev`, so that
  /// two generations are on disk: at every instant of a save (and after a
  /// crash at any point in it) `<path>` holds the old or the new checkpoint
  /// and `<path>.prev` the one before the old or the old one. Programs that
  /// save one file per member need this to find a step that every member
  /// has saved after a crash between two members' saves. Off, save() leaves
  /// `<path>.prev` alone.
  void keep_previous(bool keep) noexcept { keep_previous_ = keep; }

  /// The previous generation: a checkpoint at `<path>.prev` with the same
  /// max_user_bytes(), for peek(), load() and exists(). (Its own
  /// keep_previous() is off; saving to it is allowed but unusual.)
  [[nodiscard]] checkpoint previous() const {
    checkpoint p(path_ + std::string(detail::previous_suffix));
    p.max_user_bytes_ = max_user_bytes_;
    return p;
  }

  /// Makes the previous generation the current one: renames `<path>.prev`
  /// over `<path>` (the newer checkpoint there is gone) and flushes the
  /// directory. A crash at any moment leaves `<path>` holding the one or the
  /// other. For programs that save one file per member and resume from the
  /// older generation (the newest clock every member holds): call it on each
  /// member whose `<path>` is newer before the next save. Otherwise that save
  /// keeps the abandoned newer checkpoint as `<path>.prev` and drops the one
  /// resumed from, and a crash during it can leave the members without a
  /// common clock. Throws `dml::data_error` naming the file when the rename
  /// or the flush fails (e.g. there is no `<path>.prev`).
  void restore_previous() const {
    const std::string previous = path_ + std::string(detail::previous_suffix);
    if (::rename(previous.c_str(), path_.c_str()) != 0) {
      const int err = errno;
      throw data_error(previous, 0,
                       "cannot make it the current checkpoint " + path_ + ": " + detail::system_message(err));
    }
    detail::sync_renamed(path_, "the previous checkpoint was");
  }

  /// True when a regular file exists at path() (it is not opened or checked:
  /// load() does that).
  [[nodiscard]] bool exists() const noexcept {
    struct stat st {};
    return ::stat(path_.c_str(), &st) == 0 && S_ISREG(st.st_mode);
  }

  /// Saves `s` (except `vector_clocks`) and the vectors, in order, replacing
  /// the previous checkpoint atomically. Throws `dml::data_error` naming
  /// path() and the operating system's reason when the file cannot be
  /// written; the previous checkpoint is then unchanged.
  /// @tparam Vs each a `checkpoint_vector`
  template <class... Vs>
  void save(const state& s, const Vs&... vectors) const {
    static_assert(
        (detail::vector_shape<const Vs> && ...),
        "dml::fault::checkpoint::save: each vector must have a span() returning a contiguous "
        "range (like dml::dist_vector) or be a contiguous range (std::vector, std::array, std::span)");
    static_assert(
        ((!detail::vector_shape<const Vs> || checkpoint_element<detail::element_t<const Vs>>)&&...),
        "dml::fault::checkpoint::save: vector element types must be std::int8_t, std::int16_t, "
        "std::int32_t, std::int64_t, their unsigned versions, float or double (not bool, a character "
        "type or long double)");
    if constexpr ((checkpoint_vector<const Vs> && ...)) save_checked(s, vectors...);
  }

  /// Loads the checkpoint into the vectors, which must match the saved ones
  /// in number, order, element type and length, and returns the saved
  /// state. The whole file is checked before any vector is written: on a
  /// `dml::data_error` (missing or unreadable file, not a checkpoint,
  /// unsupported version, truncated, corrupted, or a mismatch with the
  /// vectors) every vector is unchanged. Needs memory for the whole file.
  /// @tparam Vs each a `checkpoint_vector` with writable elements
  template <class... Vs>
  state load(Vs&&... vectors) const {
    static_assert(
        (detail::vector_shape<std::remove_reference_t<Vs>> && ...),
        "dml::fault::checkpoint::load: each vector must have a span() returning a contiguous "
        "range (like dml::dist_vector) or be a contiguous range (std::vector, std::array, std::span)");
    static_assert(
        ((!detail::vector_shape<std::remove_reference_t<Vs>> ||
          checkpoint_element<detail::element_t<std::remove_reference_t<Vs>>>)&&...),
        "dml::fault::checkpoint::load: vector element types must be std::int8_t, std::int16_t, "
        "std::int32_t, std::int64_t, their unsigned versions, float or double (not bool, a character "
        "type or long double)");
    static_assert(((!detail::vector_shape<std::remove_reference_t<Vs>> ||
                    detail::element_of<std::remove_reference_t<Vs>>::writable) &&
                   ...),
                  "dml::fault::checkpoint::load: cannot load into a vector of const elements");
    if constexpr ((detail::loadable<Vs> && ...))
      return load_checked(vectors...);
    else
      return {};
  }

  /// Reads the state saved in the file (clock, epoch, user bytes and the
  /// vectors' clocks) without the vectors: the file is checked as load()
  /// checks it (magic number, version, size, both checksums, the table),
  /// except against the program's vectors, and read in chunks, so memory is
  /// a small buffer plus the user bytes and 8 bytes per vector. More user
  /// bytes than max_user_bytes() are refused. Every problem is a
  /// `dml::data_error` naming path() and the reason, as load()'s are.
  [[nodiscard]] state peek() const {
    detail::peeked p = detail::peek_file(path_, max_user_bytes_);
    return {p.clock, p.epoch, std::move(p.user), std::move(p.vector_clocks)};
  }

  /// Deletes the temporary files `<path>.tmp.<pid>.<n>` and
  /// `<path>.prev.tmp.<pid>.<n>` that saves killed mid-write left behind,
  /// and returns how many. Call it only when no save to this path is
  /// running (in any process), e.g. at start-up.
  std::size_t remove_temporaries() const {
    namespace fs = std::filesystem;
    const fs::path target(path_);
    const std::string name_prefix = target.filename().string();
    auto digits = [](std::string_view t) {
      return !t.empty() && t.find_first_not_of("0123456789") == std::string_view::npos;
    };
    // The rest of a name after `<path>.tmp.` or `<path>.prev.tmp.`, or "".
    auto after_prefix = [&](std::string_view name) {
      if (name.substr(0, name_prefix.size()) != name_prefix) return std::string_view();
      name.remove_prefix(name_prefix.size());
      if (name.substr(0, detail::previous_suffix.size()) == detail::previous_suffix)
        name.remove_prefix(detail::previous_suffix.size());
      return name.substr(0, 5) == ".tmp." ? name.substr(5) : std::string_view();
    };
    std::size_t removed = 0;
    std::error_code ec;
    for (fs::directory_iterator it(detail::directory_of(path_), ec); !ec && it != fs::directory_iterator();
         it.increment(ec)) {
      const std::string name = it->path().filename().string();
      const std::string_view rest = after_prefix(name);  // <pid>.<n>
      const auto dot = rest.find('.');
      if (dot == std::string_view::npos || !digits(rest.substr(0, dot)) || !digits(rest.substr(dot + 1)))
        continue;
      std::error_code remove_ec;
      if (fs::remove(it->path(), remove_ec)) ++removed;
    }
    return removed;
  }

 private:
  template <class... Vs>
  void save_checked(const state& s, const Vs&... vectors) const {
    std::uint64_t total =
        detail::header_size + sizeof...(Vs) * detail::entry_size + s.user.size() + detail::trailer_size;
    ((total += detail::elements_of(vectors).size_bytes()), ...);

    std::array<std::byte, detail::header_size> header{};
    std::copy(detail::magic.begin(), detail::magic.end(), header.begin());
    detail::store_le(header.data() + 8, detail::format_version);
    detail::store_le(header.data() + 12, static_cast<std::uint32_t>(sizeof...(Vs)));
    detail::store_le(header.data() + 16, total);
    detail::store_le(header.data() + 24, s.clock);
    detail::store_le(header.data() + 32, s.epoch);
    detail::store_le(header.data() + 40, static_cast<std::uint64_t>(s.user.size()));
    detail::store_le(header.data() + detail::header_crc_offset,
                     detail::crc32_of(std::span(header).first(detail::header_crc_offset)));

    detail::atomic_file_writer w(path_);
    w.write(header);
    [[maybe_unused]] auto write_entry = [&](const auto& v) {
      using T = detail::element_t<std::remove_reference_t<decltype(v)>>;
      std::array<std::byte, detail::entry_size> row{};
      detail::store_le(row.data(), detail::code_of<T>());
      detail::store_le(row.data() + 4, static_cast<std::uint32_t>(sizeof(T)));
      detail::store_le(row.data() + 8, static_cast<std::uint64_t>(detail::elements_of(v).size()));
      detail::store_le(row.data() + 16, detail::clock_of(v));
      w.write(row);
    };
    (write_entry(vectors), ...);
    w.write(s.user);
    [[maybe_unused]] auto write_data = [&](const auto& v) {
      using T = detail::element_t<std::remove_reference_t<decltype(v)>>;
      const auto values = detail::elements_of(v);
      detail::write_elements(w, std::span<const T>(values.data(), values.size()));
    };
    (write_data(vectors), ...);
    w.write_crc();
    w.commit(keep_previous_);
  }

  template <class... Vs>
  state load_checked(Vs&... vectors) const {
    constexpr std::size_t n = sizeof...(Vs);
    // The largest file these vectors can come from: the reader allocates the
    // whole file, so a file whose header lies about its size (a sparse 1 TiB
    // file, say) is refused before anything that large is allocated.
    std::uint64_t data_bytes = 0;
    ((data_bytes += detail::elements_of(vectors).size_bytes()), ...);
    const std::uint64_t fixed = detail::header_size + n * detail::entry_size + detail::trailer_size;
    const std::uint64_t most = std::numeric_limits<std::uint64_t>::max() - fixed - data_bytes;
    const std::uint64_t limit = fixed + data_bytes + std::min<std::uint64_t>(max_user_bytes_, most);
    const std::vector<std::byte> file = detail::read_file(
        path_, limit,
        detail::plural(n, "vector") + " of " + std::to_string(data_bytes) +
            " bytes with at most max_user_bytes() = " + std::to_string(max_user_bytes_) + " user bytes");
    const detail::parsed p = detail::parse(path_, file);
    if (p.table.size() != n)
      throw data_error(path_, 0,
                       "the checkpoint holds " + detail::plural(p.table.size(), "vector") +
                           " but the program expects " + std::to_string(n));
    std::size_t k = 0;
    [[maybe_unused]] auto check = [&](auto& v) {
      detail::check_vector(path_, k, p.table[k], v);
      ++k;
    };
    (check(vectors), ...);
    state s;  // everything that can throw happens before the first vector is written
    s.clock = p.clock;
    s.epoch = p.epoch;
    s.user.assign(p.user.begin(), p.user.end());
    for (const auto& e : p.table) s.vector_clocks.push_back(e.clock);
    k = 0;
    [[maybe_unused]] auto copy = [&](auto& v) {
      detail::copy_vector(file, p.table[k], v);
      ++k;
    };
    (copy(vectors), ...);
    return s;
  }

  std::string path_;
  std::size_t max_user_bytes_ = default_max_user_bytes;
  bool keep_previous_ = false;
};

}  // namespace fault
DML_END_NAMESPACE

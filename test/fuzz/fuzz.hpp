// SPDX-License-Identifier: BSL-1.0
// Shared by the fuzz targets: the input's bytes as a file the readers can
// open by name (an in-memory file), and a check that aborts with a message.
// A target throws nothing but what escapes a reader other than
// dml::data_error: that, a crash or a failed check is a finding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#define DML_FUZZ_CHECK(condition)                                                             \
  do {                                                                                        \
    if (!(condition)) {                                                                       \
      std::fprintf(stderr, "%s:%d: fuzz check failed: %s\n", __FILE__, __LINE__, #condition); \
      std::abort();                                                                           \
    }                                                                                         \
  } while (false)

namespace dml_fuzz {

/// One in-memory file (memfd), rewritten for every input and named
/// /proc/self/fd/<n>; a file under /tmp where memfd_create is missing.
class scratch_file {
 public:
  scratch_file() {
    fd_ = ::memfd_create("dml-fuzz", MFD_CLOEXEC);
    if (fd_ >= 0) {
      path_ = "/proc/self/fd/" + std::to_string(fd_);
    } else {
      path_ = "/tmp/dml-fuzz-" + std::to_string(::getpid());
      fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      DML_FUZZ_CHECK(fd_ >= 0);
    }
  }
  scratch_file(const scratch_file&) = delete;
  scratch_file& operator=(const scratch_file&) = delete;
  ~scratch_file() {
    ::close(fd_);
    if (path_.rfind("/tmp/", 0) == 0) ::unlink(path_.c_str());
  }

  /// Replaces the content with `size` bytes at `data`; returns the path.
  const std::string& hold(const std::uint8_t* data, std::size_t size) {
    DML_FUZZ_CHECK(::ftruncate(fd_, 0) == 0);
    std::size_t done = 0;
    while (done < size) {
      const ::ssize_t n = ::pwrite(fd_, data + done, size - done, static_cast<off_t>(done));
      DML_FUZZ_CHECK(n > 0);
      done += static_cast<std::size_t>(n);
    }
    return path_;
  }
  [[nodiscard]] int fd() const noexcept { return fd_; }
  [[nodiscard]] const std::string& path() const noexcept { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
};

/// The number of lines of a text input: its newlines + 1 (a reader's line
/// numbers and per-line records are bounded by it).
inline std::size_t lines_of(const std::uint8_t* data, std::size_t size) {
  std::size_t newlines = 0;
  for (std::size_t i = 0; i < size; ++i) newlines += data[i] == '\n' ? 1 : 0;
  return newlines + 1;
}

}  // namespace dml_fuzz

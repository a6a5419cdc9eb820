// SPDX-License-Identifier: BSL-1.0
/// @file
/// What the text readers (LIBSVM, bag of words) share: a line reader whose
/// memory is bounded by a limit, never by the file, whole-number parsing,
/// and tokens quoted short for error messages.
#pragma once

#include <dml/error.hpp>
#include <dml/version.hpp>

#include <cerrno>
#include <charconv>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>

DML_BEGIN_NAMESPACE
namespace data::detail {

/// At most 40 characters of a token for an error message, with "..." when
/// it was longer, so that a hostile token cannot make the message huge.
inline std::string quote(std::string_view token) {
  constexpr std::size_t shown = 40;
  std::string s = "'";
  s.append(token.substr(0, shown));
  if (token.size() > shown) s.append("...");
  s.push_back('\'');
  return s;
}

inline std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t\r") - first + 1);
}

template <class Number>
bool parse_whole(std::string_view text, Number& out) {
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc{} && end == text.data() + text.size();
}

/// Reads a text file line by line in 64 KiB blocks, never holding more than
/// `max_line` bytes of one line: a longer line is a data_error.
class line_reader {
 public:
  line_reader(const std::string& path, std::size_t max_line)
      : path_(path), max_line_(max_line), file_(std::fopen(path.c_str(), "rb"), &std::fclose) {
    if (!file_) throw data_error(path, 0, "cannot open the file (missing or unreadable)");
  }

  /// The next line (without its '\n') into `line`; false at the end of the
  /// file. `number` is the line's 1-based number, for errors.
  bool next(std::string& line, std::size_t number) {
    line.clear();
    bool any = false;
    for (;;) {
      if (pos_ == end_) {
        if (eof_) return any;
        end_ = std::fread(buffer_.get(), 1, block, file_.get());
        pos_ = 0;
        if (end_ < block) {
          if (std::ferror(file_.get()))
            throw data_error(path_, number, std::string("read error: ") + std::strerror(errno));
          eof_ = true;
        }
        if (end_ == 0) return any;
      }
      any = true;
      const char* begin = buffer_.get() + pos_;
      const auto* newline = static_cast<const char*>(std::memchr(begin, '\n', end_ - pos_));
      const std::size_t n = newline ? static_cast<std::size_t>(newline - begin) : end_ - pos_;
      if (line.size() + n > max_line_)
        throw data_error(path_, number,
                         "line longer than libsvm_options::max_line_bytes = " + std::to_string(max_line_) +
                             " bytes (starts " + quote(line.empty() ? std::string_view(begin, n) : line) +
                             ")");
      line.append(begin, n);
      pos_ += n;
      if (newline) {
        ++pos_;
        return true;
      }
    }
  }

  /// Back to the first line; data_error when the file cannot seek (a pipe).
  void rewind() {
    if (std::fseek(file_.get(), 0, SEEK_SET) != 0)
      throw data_error(path_, 0,
                       std::string("cannot read the file twice, as the contiguous shard layout needs (") +
                           std::strerror(errno) + "): use the strided layout for pipes");
    std::clearerr(file_.get());
    pos_ = end_ = 0;
    eof_ = false;
  }

 private:
  static constexpr std::size_t block = std::size_t{1} << 16;
  std::string path_;
  std::size_t max_line_;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file_;
  std::unique_ptr<char[]> buffer_ = std::make_unique_for_overwrite<char[]>(block);
  std::size_t pos_ = 0, end_ = 0;
  bool eof_ = false;
};

}  // namespace data::detail
DML_END_NAMESPACE

// SPDX-License-Identifier: BSL-1.0
/// @file
/// Output from a group of members. In-process members are threads sharing
/// one `stdout`, and MPI processes share a terminal through mpiexec, so
/// output written piecewise by several members interleaves mid-line. These
/// helpers write whole lines only:
///
/// - `leader(comm)`: whether this member speaks for the group -- the lowest
///   live member of the current view (member 0 until it fails, then the
///   lowest survivor), so a report goes on after its writer died;
/// - `print(comm, format, ...)`: printf-style, from the leader only;
/// - `print_each(comm, format, ...)`: printf-style, from every member, each
///   line prefixed with the member's id, "[3] ".
///
/// The text is formatted first, completed to whole lines (a missing final
/// newline is added), then written with one `fwrite` and flushed. POSIX
/// makes each stdio call atomic on its stream, so lines from members of one
/// process never mix, nor with other `printf` calls of that process; under
/// mpiexec each process's lines reach the terminal whole (one write each,
/// below the pipe's atomic size for lines up to 4 KiB).
///
/// None of these is collective: a member may print whenever it likes.
/// `leader()` reads the member's current view, so right after a failure,
/// until the survivors agreed on a new view (`dml::fault::recover`), a dead
/// leader is still the leader and its lines are missing.
#pragma once

#include <dml/fwd.hpp>

#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

DML_BEGIN_NAMESPACE
namespace io {
namespace detail {

/// Formats `format` with `args`, puts `prefix` before every line, ends the
/// text with a newline, and writes it with one fwrite, then flushes. An
/// empty text writes nothing.
inline void write_lines(std::FILE* stream, std::string_view prefix, const char* format, std::va_list args) {
  std::va_list again;
  va_copy(again, args);
  const int needed = std::vsnprintf(nullptr, 0, format, args);
  if (needed <= 0) {  // nothing to write, or an encoding error in the format
    va_end(again);
    return;
  }
  std::vector<char> text(static_cast<std::size_t>(needed) + 1);
  std::vsnprintf(text.data(), text.size(), format, again);
  va_end(again);
  const std::string_view body(text.data(), static_cast<std::size_t>(needed));
  std::string out;
  out.reserve(body.size() + prefix.size() + 1);
  std::size_t start = 0;
  while (start < body.size()) {
    const std::size_t end = body.find('\n', start);
    const std::size_t stop = end == std::string_view::npos ? body.size() : end;
    out.append(prefix);
    out.append(body.substr(start, stop - start));
    out.push_back('\n');
    start = stop + 1;
  }
  std::fwrite(out.data(), 1, out.size(), stream);  // one call: whole lines, never mixed with another's
  std::fflush(stream);
}

inline std::string prefix_of(member_id m) { return "[" + std::to_string(m) + "] "; }

}  // namespace detail

/// Whether this member speaks for the group: the lowest live member of
/// comm's current view (member 0 until it fails). Exactly one member of a
/// view is the leader; not collective.
/// @tparam Comm a transport context (dml::comm::transport)
template <class Comm>
[[nodiscard]] bool leader(const Comm& comm) {
  const auto& live = comm.view().live;
  return !live.empty() && comm.rank() == live.front();
}

/// printf-style output to `stream` from the leader only (the others do
/// nothing): whole lines, written at once and flushed. Not collective.
/// @tparam Comm a transport context (dml::comm::transport)
template <class Comm>
[[gnu::format(printf, 3, 4)]] void print(const Comm& comm, std::FILE* stream, const char* format, ...) {
  if (!leader(comm)) return;
  std::va_list args;
  va_start(args, format);
  detail::write_lines(stream, {}, format, args);
  va_end(args);
}

/// printf-style output to stdout from the leader only; see the overload
/// with a stream.
template <class Comm>
[[gnu::format(printf, 2, 3)]] void print(const Comm& comm, const char* format, ...) {
  if (!leader(comm)) return;
  std::va_list args;
  va_start(args, format);
  detail::write_lines(stdout, {}, format, args);
  va_end(args);
}

/// printf-style output to `stream` from every member that calls it, each
/// line prefixed with the member's id ("[3] "): whole lines, written at
/// once and flushed, so lines of different members never mix. Not
/// collective.
/// @tparam Comm a transport context (dml::comm::transport)
template <class Comm>
[[gnu::format(printf, 3, 4)]] void print_each(const Comm& comm, std::FILE* stream, const char* format, ...) {
  std::va_list args;
  va_start(args, format);
  detail::write_lines(stream, detail::prefix_of(comm.rank()), format, args);
  va_end(args);
}

/// printf-style output to stdout from every member, each line prefixed
/// with the member's id; see the overload with a stream.
template <class Comm>
[[gnu::format(printf, 2, 3)]] void print_each(const Comm& comm, const char* format, ...) {
  std::va_list args;
  va_start(args, format);
  detail::write_lines(stdout, detail::prefix_of(comm.rank()), format, args);
  va_end(args);
}

}  // namespace io
DML_END_NAMESPACE

// SPDX-License-Identifier: BSL-1.0
// Internal: where a table keeps things in its segment, and the format of the
// messages senders write into owners' receive rings.
//
// A member's data words:
//   [0]                 version: odd while the owner rewrites what follows
//   [1, 1 + n)          applied[m]: member m's clocks applied to these rows
//   [1 + n, ...)        the owned rows, rw words each (T values, zero padded)
//   then one ring of `ring` words per member of the view, in view order.
// Control words: [0, n) credit[o]: words owner o consumed from this
// member's ring at o; [n + m] member m's arrivals at the table's own barriers.
//
// A message in a ring (words): tag(seq), kind, clock, count, count row ids,
// count * rw value words, tag(seq). seq counts the messages of one sender to
// one owner from 1; a message is complete when both tags match (the writer
// orders the last word after the rest). A message never wraps: a sender
// that has not enough words before the end of the ring writes one skip word
// (tag(seq) ^ skip_mask) and starts again at 0.
#pragma once

#include <dml/fwd.hpp>

#include <cstddef>
#include <cstdint>

DML_BEGIN_NAMESPACE
namespace detail::table_wire {

enum kind : std::uint64_t {
  updates = 1,        // row deltas of (part of) one clock
  end_of_clock = 2,   // the sender's batch for `clock` is complete
  values = 3,         // row values when the table is rebuilt (added to zeroed rows)
  end_of_values = 4,  // the sender has sent all its values
};

inline constexpr std::size_t header_words = 4;  // tag, kind, clock, count
inline constexpr std::size_t footer_words = 1;
inline constexpr std::uint64_t skip_mask = 0x5a5a'0000'0000'5a5aULL;

/// A sequence number as it is written: spread over all 64 bits so that no
/// row id or value word is likely to equal it.
[[nodiscard]] constexpr std::uint64_t tag(std::uint64_t seq) noexcept {
  std::uint64_t z = seq + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// Words of a message with `count` rows of `rw` words.
[[nodiscard]] constexpr std::size_t message_words(std::size_t count, std::size_t rw) noexcept {
  return header_words + count * (1 + rw) + footer_words;
}

/// Where things are in one member's data words.
struct layout {
  std::size_t members = 0;  // n: size of the original group
  std::size_t rw = 0;       // words per row
  std::size_t ring = 0;     // words per ring

  [[nodiscard]] std::size_t applied(std::size_t m) const noexcept { return 1 + m; }
  [[nodiscard]] std::size_t rows_base() const noexcept { return 1 + members; }
  [[nodiscard]] std::size_t row(std::size_t local) const noexcept { return rows_base() + local * rw; }
  [[nodiscard]] std::size_t rings_base(std::size_t owned) const noexcept { return rows_base() + owned * rw; }
  [[nodiscard]] std::size_t ring_of(std::size_t owned, std::size_t position) const noexcept {
    return rings_base(owned) + position * ring;
  }
  [[nodiscard]] std::size_t data_words(std::size_t owned, std::size_t live) const noexcept {
    return rings_base(owned) + live * ring;
  }
  [[nodiscard]] std::size_t control_words() const noexcept { return 2 * members; }
  [[nodiscard]] std::size_t arrivals(std::size_t m) const noexcept { return members + m; }
};

}  // namespace detail::table_wire
DML_END_NAMESPACE

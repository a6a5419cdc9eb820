// SPDX-License-Identifier: BSL-1.0
// Internal: the wire format of a vector's receive slots and the reads that
// detect torn writes.
//
// A member's segment holds, for each in-neighbour q, `slot_depth` slots;
// slot (q, d) takes the sender's updates of clocks ≡ d (mod depth). Each
// slot is, in 64-bit words,
//
//   header{seq, clock, length, epoch} · payload · footer{seq}
//
// seq is the sender's clock (0: never written), length the number of
// elements the payload carries, epoch the membership view it was written
// in. The writer puts header, payload and footer in that order with a write
// fence between them; a reader accepts a slot only when header and footer
// agree, so a slot being rewritten is seen as torn, never as a mix.
//
// Two extensions, both agreed on when the vector is built (they follow
// from its description, which members compare):
//  - A header whose length is `no_update` is a marker: "no update for you
//    at this clock" (a scatter with dml::to{...} that left this receiver
//    out). It has no payload: only header and footer are written.
//  - A vector whose gather carries weights (gather::weighted_average) has
//    one more payload word after the codec's payload: the sender's weight
//    as the bits of a double.
#pragma once

#include <dml/fwd.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

DML_BEGIN_NAMESPACE
namespace detail {

inline constexpr std::size_t header_words = 4;
inline constexpr std::size_t footer_words = 1;
inline constexpr std::size_t slot_depth = 2;
/// The length word of a marker (no codec has that many elements).
inline constexpr std::uint64_t no_update = ~std::uint64_t{0};

[[nodiscard]] constexpr std::size_t words_for(std::size_t bytes) noexcept { return (bytes + 7) / 8; }

/// What reading a slot found.
enum class slot_read { ok, empty, torn, marker };

/// Where each slot of a vector lies in its segment.
struct slot_layout {
  std::size_t payload_words = 0;

  [[nodiscard]] std::size_t slot_words() const noexcept {
    return header_words + payload_words + footer_words;
  }
  [[nodiscard]] std::size_t base(std::size_t q, std::size_t d) const noexcept {
    return (q * slot_depth + d) * slot_words();
  }
  [[nodiscard]] std::size_t payload(std::size_t q, std::size_t d) const noexcept {
    return base(q, d) + header_words;
  }
  [[nodiscard]] std::size_t footer(std::size_t q, std::size_t d) const noexcept {
    return base(q, d) + header_words + payload_words;
  }
  /// Data words of a segment with `in_count` in-neighbours.
  [[nodiscard]] std::size_t words(std::size_t in_count) const noexcept {
    return in_count * slot_depth * slot_words();
  }
};

/// One part of a payload: bytes at a word offset within it.
struct payload_part {
  std::size_t word = 0;
  std::span<const std::byte> bytes;
};

/// Whether nobody reads a slot while it is written (the policy's readers
/// read it only after a synchronization that follows the write, and its
/// writers write it again only after the readers finished with it).
enum class slot_access : bool { shared, exclusive };

/// Writes one update into slot `base` of `target`: header, payload parts,
/// footer, with a write fence between the three. Returns the bytes put.
/// With `slot_access::exclusive` the payload goes through the segment's
/// `put_exclusive` where it has one (plain, vectorized stores: inproc).
template <class Segment, std::size_t N>
std::size_t write_slot(Segment& seg, member_id target, std::size_t base, std::size_t payload_words,
                       std::uint64_t clock, std::uint64_t length, std::uint64_t epoch,
                       const std::array<payload_part, N>& parts, slot_access access = slot_access::shared) {
  const std::array<std::uint64_t, header_words> header{clock, clock, length, epoch};
  seg.put(target, base, std::as_bytes(std::span(header)));
  seg.order(target);
  std::size_t bytes = 8 * (header_words + footer_words);
  for (const auto& p : parts) {
    if (p.bytes.empty()) continue;
    if constexpr (requires { seg.put_exclusive(target, base, p.bytes); }) {
      if (access == slot_access::exclusive) {
        seg.put_exclusive(target, base + header_words + p.word, p.bytes);
        bytes += p.bytes.size();
        continue;
      }
    }
    seg.put(target, base + header_words + p.word, p.bytes);
    bytes += p.bytes.size();
  }
  seg.order(target);
  seg.put(target, base + header_words + payload_words, std::as_bytes(std::span(&clock, 1)));
  return bytes;
}

/// The clock of the complete update in a slot, 0 when it is empty or being
/// written (call seg.sync() first to see remote writes).
template <class Segment>
[[nodiscard]] std::uint64_t complete_clock(Segment& seg, const slot_layout& layout, std::size_t q,
                                           std::size_t d) {
  const std::uint64_t f = seg.load(layout.footer(q, d));
  const std::uint64_t h = seg.load(layout.base(q, d));
  return h == f ? h : 0;
}

}  // namespace detail
DML_END_NAMESPACE

// SPDX-License-Identifier: BSL-1.0
/// @file
/// Several reads of one member's segment in one call. Where a get is a round
/// trip to a peer that must answer it (the two-sided `mpi` transport), the
/// reads a step needs (a version word, the data, the version word again)
/// cost one round trip instead of one each; the other transports read the
/// ranges one after the other.
#pragma once

#include <dml/fwd.hpp>

#include <cstddef>
#include <span>

DML_BEGIN_NAMESPACE
namespace comm {

/// One read of `get_all`: source's data words from `word` on into `out`
/// (a partial last word too, as `get` reads it).
struct get_range {
  std::size_t word = 0;
  std::span<std::byte> out;
};

/// Reads every range of source's data words as `s.get(source, r.word,
/// r.out)` would, in order: a range is read no earlier than the ones before
/// it, so a version word read first and again last brackets the reads
/// between (see comm::segment for why gets may tear). Throws what `get`
/// throws (dml::comm_error for a range past source's words, before anything
/// is read where the segment checks first). A segment type may offer a
/// member `get_all(source, ranges)` with these semantics; it is used then.
template <class Segment>
void get_all(Segment& s, member_id source, std::span<const get_range> ranges) {
  if constexpr (requires { s.get_all(source, ranges); }) {
    s.get_all(source, ranges);
  } else {
    for (const auto& r : ranges) s.get(source, r.word, r.out);
  }
}

}  // namespace comm
DML_END_NAMESPACE

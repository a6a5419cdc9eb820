// SPDX-License-Identifier: BSL-1.0
/// @file
/// A streaming reader for the LIBSVM / SVMlight text format:
///
///     <label> <index>:<value> <index>:<value> ...   # optional comment
///
/// one sample per line, indices 1-based and strictly increasing; blank lines
/// and lines holding only a comment are skipped (they are not samples); one
/// `qid:<n>` right after the label is accepted and ignored. Labels and values
/// are finite floats with at most one sign. A member loads only its shard
/// (see dml/data/shard.hpp) into an Eigen row-major sparse matrix. Every
/// problem is a dml::data_error naming the file and the 1-based line; tokens
/// are quoted in messages cut to 40 characters. Lines are capped
/// (libsvm_options::max_line_bytes) and so are indices
/// (libsvm_options::max_features): what a hostile file costs is bounded by
/// its size, never by a number written in it.
#pragma once

#include <dml/data/detail/text.hpp>
#include <dml/data/shard.hpp>
#include <dml/error.hpp>
#include <dml/version.hpp>

#include <Eigen/SparseCore>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

DML_BEGIN_NAMESPACE
namespace data {

/// A set of labelled sparse samples: row i of x has label y[i] and came
/// from line lines[i] of the file.
struct sparse_set {
  Eigen::SparseMatrix<float, Eigen::RowMajor> x;
  Eigen::VectorXf y;
  std::vector<std::size_t> lines;
  std::size_t total = 0;  ///< samples in the whole file, every shard together
};

/// Options of read_libsvm().
struct libsvm_options {
  /// Columns of x. 0: the largest index in the file (strided shards: in this
  /// shard), at most max_features. Set it to make the training and test sets
  /// agree; an index beyond it is a data_error. At most 2^31 - 1 (Eigen's
  /// index type).
  std::size_t features = 0;
  /// The largest index accepted when `features` is 0 (2^26 = 67108864 by
  /// default): a larger one is a data_error naming it, so one stray huge
  /// index cannot make x, or a dense copy of it, absurdly wide. Set
  /// `features` (or raise this) for wider data.
  std::size_t max_features = std::size_t{1} << 26;
  /// The longest line read (256 MiB by default: about ten million nonzeros
  /// of `1234567:0.123456`). A longer line is a data_error: the reader never
  /// holds more than this much of one line in memory.
  std::size_t max_line_bytes = std::size_t{256} << 20;
  data::shard shard{};
};

namespace detail {

/// The line without its comment and surrounding blanks; empty: not a sample.
inline std::string_view libsvm_content(std::string_view line) {
  const auto hash = line.find('#');
  return trim(hash == std::string_view::npos ? line : line.substr(0, hash));
}

/// Parses a finite float with an optional single sign; returns why not
/// (empty on success). Read as double and rounded, so 1e-50 is 0, not an error.
inline const char* parse_real(std::string_view text, float& out) {
  if (!text.empty() && text.front() == '+') {
    text.remove_prefix(1);  // from_chars rejects a leading '+'
    if (!text.empty() && (text.front() == '+' || text.front() == '-')) return "two signs";
  }
  double v = 0;
  if (text.empty()) return "not a number";
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec == std::errc::result_out_of_range) return "out of range";
  if (ec != std::errc{} || end != text.data() + text.size()) return "not a number";
  if (!std::isfinite(v)) return "not a finite number";
  // From here on a double rounds to infinity as a float (halfway between
  // FLT_MAX and the next power of two): 3.40282347e38 still reads as FLT_MAX.
  constexpr double float_overflow = 0x1.ffffffp+127;
  if (std::fabs(v) >= float_overflow) return "out of float range";
  out = static_cast<float>(v);
  return "";
}

struct libsvm_entry {
  std::uint32_t column;  // 0-based
  float value;
};

/// Parses one sample line (content already stripped of its comment).
inline void parse_libsvm_line(std::string_view content, const std::string& file, std::size_t line,
                              const libsvm_options& options, float& label, std::vector<libsvm_entry>& out) {
  auto fail = [&](const std::string& reason) { throw data_error(file, line, reason); };
  out.clear();
  std::size_t pos = 0, previous = 0;
  bool first = true, qid = false;
  while (pos < content.size()) {
    const auto end = content.find_first_of(" \t", pos);
    const std::string_view token = content.substr(pos, end == std::string_view::npos ? end : end - pos);
    pos = end == std::string_view::npos ? content.size() : content.find_first_not_of(" \t", end);
    if (first) {
      first = false;
      if (token.find(':') != std::string_view::npos) fail("missing label before " + quote(token));
      if (const std::string_view why = parse_real(token, label); !why.empty())
        fail("bad label " + quote(token) + ": " + std::string(why));
      continue;
    }
    const auto colon = token.find(':');
    if (colon == std::string_view::npos) fail("expected index:value, got " + quote(token));
    const std::string_view index_text = token.substr(0, colon), value_text = token.substr(colon + 1);
    if (index_text == "qid") {
      std::uint64_t id = 0;
      if (!parse_whole(value_text, id)) fail("bad qid " + quote(value_text) + ": not a whole number >= 0");
      if (qid) fail("a second qid: one per line");
      if (previous != 0) fail("qid after an index:value pair: qid must come right after the label");
      qid = true;
      continue;
    }
    std::uint64_t index = 0;
    if (!parse_whole(index_text, index)) fail("bad index " + quote(index_text));
    if (index == 0) fail("index 0: indices start at 1");
    if (index <= previous)
      fail("index " + std::to_string(index) + " after " + std::to_string(previous) +
           ": indices must increase");
    if (options.features != 0 && index > options.features)
      fail("index " + std::to_string(index) + " beyond the " + std::to_string(options.features) +
           " features set by libsvm_options::features");
    if (options.features == 0 && index > options.max_features)
      fail("index " + std::to_string(index) + " beyond libsvm_options::max_features = " +
           std::to_string(options.max_features) + " (set features or raise max_features for wider data)");
    float value = 0;
    if (const std::string_view why = parse_real(value_text, value); !why.empty())
      fail("bad value " + quote(value_text) + ": " + std::string(why));
    previous = index;
    out.push_back({static_cast<std::uint32_t>(index - 1), value});
  }
}

inline void validate(const libsvm_options& o) {
  o.shard.validate();
  constexpr auto widest = static_cast<std::size_t>(std::numeric_limits<int>::max());
  if (o.features > widest)
    throw config_error("dml::data::libsvm_options: features = " + std::to_string(o.features) +
                       " is beyond 2^31 - 1");
  if (o.max_features == 0 || o.max_features > widest)
    throw config_error("dml::data::libsvm_options: max_features = " + std::to_string(o.max_features) +
                       " must be in [1, 2^31 - 1]");
  if (o.max_line_bytes == 0) throw config_error("dml::data::libsvm_options: max_line_bytes is 0");
}

}  // namespace detail

/// Reads this shard's samples of the LIBSVM file `path`. The strided layout
/// reads the file once; the contiguous layout first counts the samples.
/// Only lines of this shard are parsed and checked (the other members check
/// theirs). Memory is proportional to the shard's nonzeros and samples plus
/// one line, never to the width. Throws data_error for a missing or
/// unreadable file, a file without samples, and any malformed line;
/// config_error for impossible options.
[[nodiscard]] inline sparse_set read_libsvm(const std::string& path, const libsvm_options& options = {}) {
  detail::validate(options);
  detail::line_reader in(path, options.max_line_bytes);
  std::size_t total = 0, number = 0;
  std::string line;
  if (options.shard.layout == shard_layout::contiguous) {
    while (in.next(line, number + 1)) {
      ++number;
      if (!detail::libsvm_content(line).empty()) ++total;
    }
    in.rewind();
    number = 0;
  }
  // The compressed row storage itself, filled row by row (indices increase
  // within a row), so nothing is sized by the number of columns.
  std::vector<int> outer{0}, inner;
  std::vector<float> values, labels;
  std::vector<std::size_t> lines;
  std::vector<detail::libsvm_entry> entries;
  std::size_t sample = 0, columns = options.features;
  while (in.next(line, number + 1)) {
    ++number;
    const std::string_view content = detail::libsvm_content(line);
    if (content.empty()) continue;
    const std::size_t i = sample++;
    if (options.shard.layout == shard_layout::contiguous ? !options.shard.contains(i, total)
                                                         : i % options.shard.members != options.shard.member)
      continue;
    float label = 0;
    detail::parse_libsvm_line(content, path, number, options, label, entries);
    if (entries.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()) - inner.size())
      throw data_error(path, number, "more than 2^31 - 1 nonzeros in one shard");
    for (const auto& e : entries) {
      inner.push_back(static_cast<int>(e.column));
      values.push_back(e.value);
    }
    if (options.features == 0 && !entries.empty() && entries.back().column + std::size_t{1} > columns)
      columns = entries.back().column + std::size_t{1};
    outer.push_back(static_cast<int>(inner.size()));
    labels.push_back(label);
    lines.push_back(number);
  }
  if (options.shard.layout == shard_layout::strided) total = sample;
  if (total == 0) throw data_error(path, 0, "no samples (the file is empty or holds only comments)");
  sparse_set out;
  out.total = total;
  out.x.resize(static_cast<Eigen::Index>(labels.size()), static_cast<Eigen::Index>(columns));
  out.x.resizeNonZeros(static_cast<Eigen::Index>(inner.size()));
  std::copy(outer.begin(), outer.end(), out.x.outerIndexPtr());
  std::copy(inner.begin(), inner.end(), out.x.innerIndexPtr());
  std::copy(values.begin(), values.end(), out.x.valuePtr());
  out.y = Eigen::Map<const Eigen::VectorXf>(labels.data(), static_cast<Eigen::Index>(labels.size()));
  out.lines = std::move(lines);
  return out;
}

}  // namespace data
DML_END_NAMESPACE

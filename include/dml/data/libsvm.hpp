// SPDX-License-Identifier: BSL-1.0
/// @file
/// A streaming reader for the LIBSVM / SVMlight text format:
///
///     <label> <index>:<value> <index>:<value> ...   # optional comment
///
/// one sample per line, indices 1-based and strictly increasing; blank lines
/// and lines holding only a comment are skipped (they are not samples);
/// `qid:<n>` tokens are accepted and ignored. A member loads only its shard
/// (see dml/data/shard.hpp) into an Eigen row-major sparse matrix. Every
/// problem is a dml::data_error naming the file and the 1-based line.
#pragma once

#include <dml/data/shard.hpp>
#include <dml/error.hpp>
#include <dml/version.hpp>

#include <Eigen/SparseCore>

#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <fstream>
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
  /// shard). Set it to make the training and test sets agree; an index
  /// beyond it is a data_error.
  std::size_t features = 0;
  data::shard shard{};
};

namespace detail {

inline std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t\r") - first + 1);
}

/// The line without its comment and surrounding blanks; empty: not a sample.
inline std::string_view libsvm_content(std::string_view line) {
  const auto hash = line.find('#');
  return trim(hash == std::string_view::npos ? line : line.substr(0, hash));
}

template <class Number>
bool parse_whole(std::string_view text, Number& out) {
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc{} && end == text.data() + text.size();
}

inline bool parse_real(std::string_view text, float& out) {
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);  // from_chars rejects a leading '+'
  return parse_whole(text, out) && std::isfinite(out);
}

struct libsvm_entry {
  std::uint32_t column;  // 0-based
  float value;
};

/// Parses one sample line (content already stripped of its comment).
inline void parse_libsvm_line(std::string_view content, const std::string& file, std::size_t line,
                              std::size_t features, float& label, std::vector<libsvm_entry>& out) {
  auto fail = [&](const std::string& reason) { throw data_error(file, line, reason); };
  out.clear();
  std::size_t pos = 0, previous = 0;
  bool first = true;
  while (pos < content.size()) {
    const auto end = content.find_first_of(" \t", pos);
    const std::string_view token = content.substr(pos, end == std::string_view::npos ? end : end - pos);
    pos = end == std::string_view::npos ? content.size() : content.find_first_not_of(" \t", end);
    if (first) {
      first = false;
      if (token.find(':') != std::string_view::npos)
        fail("missing label before '" + std::string(token) + "'");
      if (!parse_real(token, label)) fail("bad label '" + std::string(token) + "'");
      continue;
    }
    const auto colon = token.find(':');
    if (colon == std::string_view::npos) fail("expected index:value, got '" + std::string(token) + "'");
    const std::string_view index_text = token.substr(0, colon), value_text = token.substr(colon + 1);
    if (index_text == "qid") continue;
    std::uint64_t index = 0;
    if (!parse_whole(index_text, index)) fail("bad index '" + std::string(index_text) + "'");
    if (index == 0) fail("index 0: indices start at 1");
    if (index <= previous)
      fail("index " + std::to_string(index) + " after " + std::to_string(previous) +
           ": indices must increase");
    if (index > 0xffffffffULL || (features != 0 && index > features))
      fail("index " + std::to_string(index) + " beyond the " + std::to_string(features) + " features");
    float value = 0;
    if (!parse_real(value_text, value)) fail("bad value '" + std::string(value_text) + "'");
    previous = index;
    out.push_back({static_cast<std::uint32_t>(index - 1), value});
  }
}

}  // namespace detail

/// Reads this shard's samples of the LIBSVM file `path`. The strided layout
/// reads the file once; the contiguous layout first counts the samples.
/// Only lines of this shard are parsed and checked (the other members check
/// theirs). Throws data_error for a missing or unreadable file and for any
/// malformed line.
[[nodiscard]] inline sparse_set read_libsvm(const std::string& path, const libsvm_options& options = {}) {
  options.shard.validate();
  std::ifstream in(path, std::ios::binary);
  if (!in) throw data_error(path, 0, "cannot open the file (missing or unreadable)");
  std::size_t total = 0;
  std::string line;
  if (options.shard.layout == shard_layout::contiguous) {
    while (std::getline(in, line))
      if (!detail::libsvm_content(line).empty()) ++total;
    if (in.bad()) throw data_error(path, 0, "read error");
    in.clear();
    in.seekg(0);
  }
  std::vector<Eigen::Triplet<float, std::ptrdiff_t>> triplets;
  std::vector<float> labels;
  std::vector<std::size_t> lines;
  std::vector<detail::libsvm_entry> entries;
  std::size_t number = 0, sample = 0, columns = options.features;
  while (std::getline(in, line)) {
    ++number;
    const std::string_view content = detail::libsvm_content(line);
    if (content.empty()) continue;
    const std::size_t i = sample++;
    if (options.shard.layout == shard_layout::contiguous ? !options.shard.contains(i, total)
                                                         : i % options.shard.members != options.shard.member)
      continue;
    float label = 0;
    detail::parse_libsvm_line(content, path, number, options.features, label, entries);
    const auto row = static_cast<std::ptrdiff_t>(labels.size());
    for (const auto& e : entries) {
      triplets.emplace_back(row, static_cast<std::ptrdiff_t>(e.column), e.value);
      if (options.features == 0 && e.column + std::size_t{1} > columns) columns = e.column + std::size_t{1};
    }
    labels.push_back(label);
    lines.push_back(number);
  }
  if (in.bad()) throw data_error(path, number, "read error");
  sparse_set out;
  out.total = options.shard.layout == shard_layout::contiguous ? total : sample;
  out.x.resize(static_cast<Eigen::Index>(labels.size()), static_cast<Eigen::Index>(columns));
  out.x.setFromTriplets(triplets.begin(), triplets.end());
  out.y = Eigen::Map<const Eigen::VectorXf>(labels.data(), static_cast<Eigen::Index>(labels.size()));
  out.lines = std::move(lines);
  return out;
}

}  // namespace data
DML_END_NAMESPACE

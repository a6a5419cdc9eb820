// SPDX-License-Identifier: BSL-1.0
// Rating files of dml-mf and dml-smp-mf: one rating per line, `user item rating`, ids
// 0-based whole numbers, the rating a finite decimal, separated by spaces
// or tabs; `#` starts a comment; blank lines are skipped. A malformed line
// is a dml::data_error naming the file and the line.
//
// The ids are not trusted to size anything: they are only collected, and
// `dense_ids` maps the distinct ids that occur to 0..k-1 in increasing
// order, so a model has one row per user and item that occurs, whatever
// their numbers (a line `4000000000 1 3.0` makes one user row, not 4e9).
// Memory grows with the file, never with the ids.
//
// `load` is what both trainers do with --ratings and --test-ratings: read,
// remap the ids of both files together, and without a test file hold out
// 10% of the lines by a coin of the seed, so the two trainers given the same
// files and seed train and test on the same ratings.
#pragma once

#include <dml/error.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <istream>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace mf_ratings {

/// One line of a rating file, with the ids as written.
struct entry {
  std::uint64_t user = 0, item = 0;
  float value = 0;
};

/// Longest line accepted (a rating line is a few dozen bytes).
inline constexpr std::size_t max_line_bytes = 4096;

namespace detail {

/// A token for a message: at most 40 bytes of it.
inline std::string shown(std::string_view token) {
  return token.size() <= 40 ? std::string(token) : std::string(token.substr(0, 40)) + "...";
}

inline std::uint64_t parse_id(std::string_view token, const char* what, const std::string& name,
                              std::size_t line) {
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), v);
  if (ec == std::errc::result_out_of_range)
    throw dml::data_error(name, line, std::string(what) + " id '" + shown(token) + "' is beyond 2^64 - 1");
  if (ec != std::errc{} || end != token.data() + token.size())
    throw dml::data_error(name, line,
                          std::string(what) + " id '" + shown(token) + "' is not a whole number >= 0");
  return v;
}

inline float parse_value(std::string_view token, const std::string& name, std::size_t line) {
  float v = 0;
  const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), v);
  if (ec != std::errc{} || end != token.data() + token.size() || !std::isfinite(v))
    throw dml::data_error(name, line, "rating '" + shown(token) + "' is not a finite number");
  return v;
}

}  // namespace detail

/// Appends the ratings of one line (none for a blank or comment line).
inline void parse_line(std::string_view text, const std::string& name, std::size_t line,
                       std::vector<entry>& out) {
  if (const auto hash = text.find('#'); hash != std::string_view::npos) text = text.substr(0, hash);
  std::string_view fields[3];
  std::size_t count = 0, pos = 0;
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
  while (pos < text.size()) {
    while (pos < text.size() && blank(text[pos])) ++pos;
    if (pos == text.size()) break;
    std::size_t end = pos;
    while (end < text.size() && !blank(text[end])) ++end;
    if (count == 3)
      throw dml::data_error(name, line,
                            "more than three fields (expected 'user item rating'), the fourth is '" +
                                detail::shown(text.substr(pos, end - pos)) + "'");
    fields[count++] = text.substr(pos, end - pos);
    pos = end;
  }
  if (count == 0) return;
  if (count != 3)
    throw dml::data_error(
        name, line,
        std::to_string(count) + " field" + (count == 1 ? "" : "s") + " (expected 'user item rating')");
  entry e;
  e.user = detail::parse_id(fields[0], "user", name, line);
  e.item = detail::parse_id(fields[1], "item", name, line);
  e.value = detail::parse_value(fields[2], name, line);
  out.push_back(e);
}

/// Every rating of a stream; `name` names it in errors.
inline std::vector<entry> parse(std::istream& in, const std::string& name) {
  std::vector<entry> out;
  std::string text;
  std::size_t line = 0;
  while (std::getline(in, text)) {
    ++line;
    if (text.size() > max_line_bytes)
      throw dml::data_error(name, line,
                            "the line is longer than " + std::to_string(max_line_bytes) + " bytes");
    if (text.find('\0') != std::string::npos) throw dml::data_error(name, line, "a NUL byte");
    parse_line(text, name, line, out);
  }
  if (in.bad()) throw dml::data_error(name, line, "reading failed");
  return out;
}

/// Every rating of the file at `path`.
inline std::vector<entry> read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw dml::data_error(path, 0, "cannot open the file");
  return parse(in, path);
}

/// The distinct ids that occur, ascending: id -> its place is the dense id.
class dense_ids {
 public:
  void add(std::uint64_t id) { ids_.push_back(id); }
  void finish() {
    std::sort(ids_.begin(), ids_.end());
    ids_.erase(std::unique(ids_.begin(), ids_.end()), ids_.end());
  }
  [[nodiscard]] std::size_t size() const noexcept { return ids_.size(); }
  /// The dense id of `id`, which must have been added.
  [[nodiscard]] std::size_t operator()(std::uint64_t id) const {
    return static_cast<std::size_t>(std::lower_bound(ids_.begin(), ids_.end(), id) - ids_.begin());
  }
  /// Whether `id` was added.
  [[nodiscard]] bool contains(std::uint64_t id) const {
    return std::binary_search(ids_.begin(), ids_.end(), id);
  }

 private:
  std::vector<std::uint64_t> ids_;
};

/// A rating with dense ids.
struct dense_rating {
  std::uint32_t user = 0, item = 0;
  float value = 0;
};

/// The ratings of a training file and an optional test file, ids remapped
/// densely over both: `users` and `items` rows, one per id that occurs.
struct dense_set {
  std::size_t users = 0, items = 0;
  std::vector<dense_rating> train, test;
};

/// Reads `train_path` and, unless empty, `test_path`. Without a test file,
/// a line goes to the test set when a coin of `seed` (one draw per line, in
/// file order) shows 0.9 or more, as the generators hold out 10%.
inline dense_set load(const std::string& train_path, const std::string& test_path, std::uint64_t seed) {
  const std::vector<entry> train = read(train_path);
  const std::vector<entry> test = test_path.empty() ? std::vector<entry>{} : read(test_path);
  dense_ids users, items;
  for (const auto* set : {&train, &test})
    for (const auto& e : *set) {
      users.add(e.user);
      items.add(e.item);
    }
  users.finish();
  items.finish();
  constexpr auto most = std::size_t{std::numeric_limits<std::uint32_t>::max()};
  if (users.size() > most || items.size() > most)
    throw dml::data_error(train_path, 0, "more than 2^32 - 1 distinct user or item ids");
  dense_set out;
  out.users = users.size();
  out.items = items.size();
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  const auto dense = [&](const entry& e) {
    return dense_rating{static_cast<std::uint32_t>(users(e.user)), static_cast<std::uint32_t>(items(e.item)),
                        e.value};
  };
  for (const auto& e : train)
    (test_path.empty() && coin(rng) >= 0.9 ? out.test : out.train).push_back(dense(e));
  for (const auto& e : test) out.test.push_back(dense(e));
  return out;
}

/// Writes `ratings` (anything with `user`, `item` and `value`) to `path`,
/// one `user item rating` line each after a comment line `# <who> ratings:
/// user item rating`; a float value is written with 9 digits, so it reads
/// back exactly.
template <class Ratings>
void write(const std::string& path, const Ratings& ratings, const std::string& who) {
  std::ofstream out(path);
  out << "# " << who << " ratings: user item rating\n";
  char line[96];
  for (const auto& r : ratings) {
    std::snprintf(line, sizeof line, "%u %u %.9g\n", static_cast<unsigned>(r.user),
                  static_cast<unsigned>(r.item), static_cast<double>(r.value));
    out << line;
  }
  if (!out.flush()) throw dml::data_error(path, 0, "cannot write the file");
}

}  // namespace mf_ratings

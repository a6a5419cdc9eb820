// SPDX-License-Identifier: BSL-1.0
// dml-pagerank's input: a directed graph and the reader of edge-list files
// ('src dst' lines of 0-based node ids). Shared by the trainer and the
// fuzz target test/fuzz/edges.cpp. Nothing here is dml API.
#pragma once

#include <dml/error.hpp>

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <unistd.h>  // sysconf: the machine's memory

namespace pagerank {

/// Node ids are below 2^31: a larger id in a file is a data error.
inline constexpr std::uint64_t max_nodes = std::uint64_t{1} << 31;
/// The longest line of an edge list read (a longer one is a data error).
inline constexpr std::size_t max_line = 1024;

/// A directed graph: the edges as read, and by source (CSR) for the members.
struct graph {
  std::uint64_t nodes = 0;
  std::vector<std::uint32_t> src, dst;  // edge i: src[i] -> dst[i]
  std::vector<std::uint64_t> first;     // by source: targets of u at [first[u], first[u + 1])
  std::vector<std::uint32_t> targets;
  std::uint64_t dangling = 0;
  std::string name;

  [[nodiscard]] std::size_t edges() const noexcept { return src.size(); }
  [[nodiscard]] std::uint64_t out_degree(std::uint64_t u) const { return first[u + 1] - first[u]; }
};

// ---- memory: refuse before allocating what a number in a file asks for ----------------

/// Bytes a run needs for `nodes` nodes and `edges` edges with `members`
/// in-process members: the graph by source (8 bytes a node, 4 an edge),
/// per member two dense contribution vectors and its rows and copies in
/// the table (about 3 x 8 bytes a node), and the leader's full copy at the
/// end.
inline double bytes_needed(std::uint64_t nodes, std::size_t edges, std::size_t members) {
  const auto n = static_cast<double>(nodes);
  return 8 * n + 12 * static_cast<double>(edges) + static_cast<double>(members) * 40 * n + 16 * n;
}

/// Empty when a graph of `nodes` nodes and `edges` edges fits in 80% of
/// this machine's memory; otherwise what it needs and what there is.
inline std::string too_big(std::uint64_t nodes, std::size_t edges, std::size_t members) {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return {};  // unknown: nothing to compare with
  const double have = static_cast<double>(pages) * static_cast<double>(page);
  const double need = bytes_needed(nodes, edges, members);
  if (need <= 0.8 * have) return {};
  char text[160];
  std::snprintf(
      text, sizeof text,
      "about %.1f GiB with %zu member%s in this process, more than 80%% of the %.1f GiB this machine "
      "has",
      need / (1u << 30), members, members == 1 ? "" : "s", have / (1u << 30));
  return text;
}

// ---- reading an edge list ----------------------------------------------------------

/// `text` quoted for a message, cut to 40 characters.
inline std::string quote(std::string_view text) {
  return "'" + std::string(text.substr(0, 40)) + (text.size() > 40 ? "...'" : "'");
}

inline bool space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

/// One node id: a whole number below max_nodes.
inline std::uint32_t parse_id(std::string_view token, const std::string& file, std::size_t line) {
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), v);
  if (ec == std::errc::result_out_of_range ||
      (ec == std::errc{} && end == token.data() + token.size() && v >= max_nodes))
    throw dml::data_error(file, line,
                          "node id " + quote(token) + " is too large (ids are 0 .. 2^31 - 1 = " +
                              std::to_string(max_nodes - 1) + ")");
  if (ec != std::errc{} || end != token.data() + token.size())
    throw dml::data_error(file, line, "node id " + quote(token) + " is not a whole number >= 0");
  return static_cast<std::uint32_t>(v);
}

/// Reads `src dst` lines ('#' starts a comment; blank lines are skipped).
/// Every problem is a dml::data_error naming the file and the line.
inline graph read_edges(const std::string& path, std::size_t members) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) throw dml::data_error(path, 0, "cannot open the file (missing or unreadable)");
  graph g;
  g.name = path;
  std::string line;
  std::size_t number = 0, max_line_number = 0;
  std::uint64_t largest = 0;
  bool more = true;
  while (more) {
    ++number;
    line.clear();
    int c;
    while ((c = std::getc(file.get())) != EOF && c != '\n') {
      if (line.size() == max_line)
        throw dml::data_error(path, number, "line longer than " + std::to_string(max_line) + " bytes");
      line.push_back(static_cast<char>(c));
    }
    if (c == EOF) {
      if (std::ferror(file.get())) throw dml::data_error(path, number, "read error");
      more = false;
    }
    std::string_view rest(line);
    if (const auto hash = rest.find('#'); hash != std::string_view::npos) rest = rest.substr(0, hash);
    std::string_view fields[3];
    std::size_t count = 0;
    for (std::size_t i = 0; i < rest.size();) {
      if (space(rest[i])) {
        ++i;
        continue;
      }
      std::size_t j = i;
      while (j < rest.size() && !space(rest[j])) ++j;
      if (count == 2)
        throw dml::data_error(
            path, number,
            "expected two node ids 'src dst', found a third field " + quote(rest.substr(i, j - i)));
      fields[count++] = rest.substr(i, j - i);
      i = j;
    }
    if (count == 0) continue;
    if (count == 1) throw dml::data_error(path, number, "expected two node ids 'src dst', found one");
    const std::uint32_t u = parse_id(fields[0], path, number), v = parse_id(fields[1], path, number);
    for (std::uint32_t id : {u, v})
      if (id >= largest) {
        largest = id;
        max_line_number = number;
      }
    g.src.push_back(u);
    g.dst.push_back(v);
  }
  if (g.src.empty())
    throw dml::data_error(path, 0, "no edges (expected lines 'src dst' of 0-based node ids)");
  g.nodes = largest + 1;
  if (const std::string big = too_big(g.nodes, g.edges(), members); !big.empty())
    throw dml::data_error(path, max_line_number,
                          "node id " + std::to_string(largest) + " makes " + std::to_string(g.nodes) +
                              " nodes, which need " + big);
  return g;
}

}  // namespace pagerank

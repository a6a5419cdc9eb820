// SPDX-License-Identifier: BSL-1.0
// dml-topology: builds one of dml's communication graphs and prints it with
// its analysis (connectivity, regularity, diameter, spectral gap, messages
// per round), as text, JSON or Graphviz DOT; or compares every generator over
// a range of group sizes (--table), or Halton, exponential and the best
// circulant of the same degree (--circulant-table).
#include <dml/error.hpp>
#include <dml/topology.hpp>
#include <dml/topology/best_circulant.hpp>
#include <dml/topology/one_peer_exponential.hpp>
#include <dml/topology/spectral.hpp>

#include <nlohmann/json.hpp>

#include "../common/cli.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdio>
#include <exception>
#include <iostream>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace topo = dml::topology;

// Dense SVD and all-pairs BFS grow like n^3; beyond this the tool would
// look hung rather than be useful.
constexpr std::size_t max_members = 1024;

struct kind_info {
  std::string_view name;
  std::string_view description;
  bool takes_k;
};

constexpr std::array<kind_info, 14> kinds{{
    {"all", "complete graph: i -> every j != i", false},
    {"halton", "MALT Halton dataflow: ceil(log2 n) offsets (or --k), repaired to be connected", true},
    {"naive_halton", "the raw Halton offsets without the repair (disconnected e.g. at n = 8, 16, 24, ...)",
     true},
    {"root_expander", "ASAP root expander: i -> i+1 and i -> i+floor(sqrt n)", false},
    {"ring", "one-way ring: i -> i+1", false},
    {"ring2", "bidirectional ring: i <-> i+1", false},
    {"chain", "bidirectional path: i <-> i+1, no wrap-around", false},
    {"chain1", "one-way path 0 -> 1 -> ... -> n-1 (not strongly connected)", false},
    {"star", "parameter server: 0 <-> every i", false},
    {"exponential", "i -> i + 2^k for every 2^k < n", false},
    {"circulant", "i -> i + o for each o of --offsets", false},
    {"best_circulant",
     "the circulant of out-degree ceil(log2 n) (or --k) with the largest spectral gap found", true},
    {"one_peer_exponential", "time-varying, one peer per round: the exact mean after R(n) rounds", false},
    {"hierarchical", "groups of --group members, complete inside, --outer between --between", false},
}};

using cli::usage_error;

enum class format { text, json, dot, table, circulant_table };

struct options {
  std::string kind = "halton";
  std::size_t n = 25;
  std::optional<std::size_t> k;
  std::vector<std::size_t> offsets;
  std::size_t group = 0;
  std::string between = "leaders";
  std::string outer = "exponential";
  format output = format::text;
};

const kind_info* find_kind(std::string_view name) {
  const auto it =
      std::find_if(kinds.begin(), kinds.end(), [&](const kind_info& k) { return k.name == name; });
  return it == kinds.end() ? nullptr : &*it;
}

// The command line: nothing when --help printed the help.
std::optional<options> parse(int argc, char** argv) {
  options opt;
  std::string kind_list;
  for (const auto& k : kinds) {
    std::string padded(k.name);
    if (padded.size() >= 15) padded += "\n" + std::string(17, ' ');  // a long name gets a line of its own
    padded.resize(std::max<std::size_t>(padded.size(), 15), ' ');
    kind_list += "  " + padded + std::string(k.description) + "\n";
  }
  const auto app = cli::app("dml-topology",
                            "Builds a dml communication graph over N members and prints each member's\n"
                            "out- and in-neighbours, whether the graph is strongly connected and regular,\n"
                            "its diameter (rounds for an update to reach everyone), its spectral gap\n"
                            "(ASAP appendix A; larger mixes faster) and its messages per round.\n"
                            "Without arguments: --kind halton --n 25.",
                            "\nkinds:\n" + kind_list);
  app->get_formatter()->column_width(15);
  app->set_help_flag("-h,--help", "this text");
  CLI::Validator kind_names(
      [](std::string& v) {
        if (find_kind(v)) return std::string();
        std::string known;
        for (const auto& k : kinds) known += (known.empty() ? "" : ", ") + std::string(k.name);
        return "unknown kind '" + v + "'; choose one of " + known;
      },
      "KIND");
  app->add_option("--kind", opt.kind, "one of the kinds below (default halton)")
      ->option_text("KIND")
      ->check(kind_names);
  app->add_option("--n", opt.n, "number of members, 1.." + std::to_string(max_members) + " (default 25)")
      ->option_text("N")
      ->check(cli::whole_number(0));
  app->add_option("--k", opt.k,
                  "fan-out of halton, naive_halton and best_circulant, 1..N-1\n(default ceil(log2 N))")
      ->option_text("K")
      ->check(cli::whole_number(0));
  app->add_option("--offsets", opt.offsets, "the offsets of --kind circulant, e.g. --offsets 1 5")
      ->option_text("O...")
      ->check(cli::whole_number(0));
  app->add_option("--group", opt.group, "members per group of --kind hierarchical")
      ->option_text("S")
      ->check(cli::whole_number(0));
  app->add_option("--between", opt.between,
                  "hierarchical: leaders (default; each group's first member)\nor all (member l to member l)")
      ->option_text("WHO")
      ->check(cli::one_of({"leaders", "all"}));
  app->add_option("--outer", opt.outer, "hierarchical: the graph between groups (default exponential)")
      ->option_text("KIND")
      ->check(cli::one_of(
          {"exponential", "all", "ring", "ring2", "star", "root_expander", "halton", "best_circulant"}));
  bool json = false, dot = false, table = false, circulant_table = false;
  app->add_flag("--json", json,
                "one JSON object: kind, n, out, in, connected, regular,\ndiameter (-1 when not connected), "
                "spectral_gap, messages_per_round");
  app->add_flag("--dot", dot, "Graphviz DOT (pipe into `dot -Tsvg`)");
  app->add_flag("--table", table,
                "spectral gap, out-degree and diameter of every kind for\nn = 4, 6, 8, 16, 25, 64, 100, 256");
  app->add_flag(
      "--circulant-table", circulant_table,
      "spectral gaps of halton, exponential and best_circulant at\nthe same out-degree ceil(log2 n), "
      "and of root_expander\nand best_circulant at 2, for n = 4 .. 1024");
  if (!cli::parse(*app, argc, argv)) return std::nullopt;
  if (int(json) + int(dot) + int(table) + int(circulant_table) > 1)
    throw usage_error("choose at most one of --json, --dot, --table and --circulant-table");
  opt.output = json              ? format::json
               : dot             ? format::dot
               : table           ? format::table
               : circulant_table ? format::circulant_table
                                 : format::text;
  if (opt.output == format::table || opt.output == format::circulant_table) {
    if (app->count("--kind") + app->count("--n") + app->count("--k") + app->count("--offsets") > 0)
      throw usage_error(std::string(table ? "--table" : "--circulant-table") +
                        " compares kinds itself; it takes no --kind, --n, --k or --offsets");
    if (app->count("--group") + app->count("--between") + app->count("--outer") > 0)
      throw usage_error("--group, --between and --outer apply only to --kind hierarchical");
    return opt;
  }
  if (opt.k && !find_kind(opt.kind)->takes_k)
    throw usage_error("--k applies only to --kind halton, naive_halton and best_circulant");
  if (opt.kind == "circulant" && opt.offsets.empty())
    throw usage_error("--kind circulant needs --offsets, e.g. --offsets 1 5");
  if (opt.kind != "circulant" && !opt.offsets.empty())
    throw usage_error("--offsets applies only to --kind circulant");
  if (opt.kind == "hierarchical" && app->count("--group") == 0)
    throw usage_error("--kind hierarchical needs --group, e.g. --group 4");
  if (opt.kind != "hierarchical" &&
      app->count("--group") + app->count("--between") + app->count("--outer") > 0)
    throw usage_error("--group, --between and --outer apply only to --kind hierarchical");
  if (opt.n > max_members) {
    throw usage_error("--n " + std::to_string(opt.n) + " is too large for this tool (at most " +
                      std::to_string(max_members) + ": the analysis is cubic in n)");
  }
  return opt;
}

// The unrepaired Halton graph; the library only builds the repaired one.
topo::graph naive_halton_graph(const topo::halton& h, std::size_t n) {
  const auto offsets = h.naive_offsets(n);
  std::vector<std::vector<dml::member_id>> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    for (const std::size_t o : offsets) out[i].push_back((i + o) % n);
  }
  return topo::graph(std::move(out));
}

topo::halton make_halton(std::optional<std::size_t> k) { return k ? topo::halton{*k} : topo::halton{}; }

topo::graph make_graph(std::string_view kind, std::size_t n, std::optional<std::size_t> k);

topo::best_circulant make_best_circulant(std::optional<std::size_t> k) {
  return k ? topo::best_circulant{*k} : topo::best_circulant{};
}

// The offsets a circulant kind uses over n members; none for the others.
std::vector<std::size_t> offsets_of(const options& opt, std::size_t n) {
  if (opt.kind == "halton") return make_halton(opt.k).offsets(n);
  if (opt.kind == "naive_halton") return make_halton(opt.k).naive_offsets(n);
  if (opt.kind == "best_circulant") return make_best_circulant(opt.k).offsets(n);
  if (opt.kind == "circulant") return topo::circulant{opt.offsets}.offsets(n);
  return {};
}

topo::any make_outer(std::string_view kind) {
  if (kind == "all") return topo::all{};
  if (kind == "ring") return topo::ring{};
  if (kind == "ring2") return topo::ring{topo::ring::bidirectional};
  if (kind == "star") return topo::star{};
  if (kind == "root_expander") return topo::root_expander{};
  if (kind == "halton") return topo::halton{};
  if (kind == "best_circulant") return topo::best_circulant{};
  return topo::exponential{};
}

topo::hierarchical<topo::any> make_hierarchical(const options& opt) {
  return topo::hierarchical<topo::any>{
      opt.group, opt.between == "all" ? topo::between_groups::all : topo::between_groups::leaders,
      make_outer(opt.outer)};
}

topo::graph make_graph(const options& opt) {
  if (opt.kind == "circulant") return topo::build(topo::circulant{opt.offsets}, opt.n);
  if (opt.kind == "hierarchical") return topo::build(make_hierarchical(opt), opt.n);
  return make_graph(opt.kind, opt.n, opt.k);
}

topo::graph make_graph(std::string_view kind, std::size_t n, std::optional<std::size_t> k) {
  if (kind == "all") return topo::build(topo::all{}, n);
  if (kind == "halton") return topo::build(make_halton(k), n);
  if (kind == "naive_halton") {
    if (n == 0) return topo::build(make_halton(k), n);  // reports n = 0 like every other kind
    return naive_halton_graph(make_halton(k), n);
  }
  if (kind == "root_expander") return topo::build(topo::root_expander{}, n);
  if (kind == "ring") return topo::build(topo::ring{}, n);
  if (kind == "ring2") return topo::build(topo::ring{topo::ring::bidirectional}, n);
  if (kind == "chain") return topo::build(topo::chain{}, n);
  if (kind == "chain1") return topo::build(topo::chain{topo::chain::one_way}, n);
  if (kind == "star") return topo::build(topo::star{}, n);
  if (kind == "best_circulant") return topo::build(make_best_circulant(k), n);
  if (kind == "one_peer_exponential") return topo::build(topo::one_peer_exponential{}, n);
  return topo::build(topo::exponential{}, n);  // parse() admitted only known kinds
}

std::string join(std::span<const dml::member_id> ids, std::string_view sep) {
  std::string s;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) s += sep;
    s += std::to_string(ids[i]);
  }
  return s;
}

std::string fixed(double x, int digits) {
  std::array<char, 64> buf{};
  std::snprintf(buf.data(), buf.size(), "%.*f", digits, x);
  std::string s = buf.data();
  // A gap of -1e-17 is rounding noise around 0; do not print "-0.0000".
  if (s.starts_with('-') && s.find_first_not_of("-0.") == std::string::npos) s.erase(0, 1);
  return s;
}

struct analysis {
  bool connected;
  std::optional<std::pair<dml::member_id, dml::member_id>> unreachable;
  bool regular;
  int diameter;
  double gap;
  std::size_t messages;
};

analysis analyse(const topo::graph& g) {
  const auto pair = topo::find_unreachable_pair(g);
  return {!pair,
          pair,
          topo::is_regular(g),
          topo::diameter(g),
          topo::spectral_gap(g),
          topo::messages_per_round(g)};
}

std::pair<std::size_t, std::size_t> degree_range(const topo::graph& g, bool out) {
  std::size_t lo = g.size();
  std::size_t hi = 0;
  for (const auto id : g.members()) {
    const std::size_t d = out ? g.out(id).size() : g.in(id).size();
    lo = std::min(lo, d);
    hi = std::max(hi, d);
  }
  return {lo, hi};
}

std::string range_text(std::pair<std::size_t, std::size_t> r) {
  return r.first == r.second ? std::to_string(r.first)
                             : std::to_string(r.first) + ".." + std::to_string(r.second);
}

void print_text(const options& opt, const topo::graph& g, const analysis& a) {
  std::cout << "topology " << opt.kind << " over n = " << g.size()
            << (g.size() == 1 ? " member" : " members");
  if (const auto offsets = offsets_of(opt, g.size()); !offsets.empty())
    std::cout << " (offsets " << join(offsets, " ") << ")";
  if (opt.kind == "hierarchical") {
    const auto h = make_hierarchical(opt);
    std::cout << " (" << h.groups(g.size()) << (h.groups(g.size()) == 1 ? " group" : " groups") << " of "
              << opt.group << ", " << opt.outer << " between " << opt.between
              << (h.claims_regular(g.size()) ? ", regular by construction" : "") << ")";
  }
  std::cout << "\n\n";
  if (opt.kind == "one_peer_exponential") {
    const topo::one_peer_exponential gen;
    const std::size_t rounds = gen.exact_after_rounds(g.size());
    std::cout << "time-varying: every member holds the exact mean after " << rounds
              << (rounds == 1 ? " round" : " rounds") << " (the schedule repeats every "
              << gen.period(g.size())
              << ");\nper round, sender->receiver (the receiver's weight for the sender, its own weight):\n";
    for (std::size_t t = 0; t < gen.period(g.size()); ++t) {
      const auto r = topo::build_round(gen, g.size(), t);
      std::cout << "  round " << t << ":";
      for (const auto id : r.members())
        for (const auto to : r.out(id))
          std::cout << " " << id << "->" << to << " (" << fixed(r.weight(id, to), 4) << ", "
                    << fixed(r.self_weight(to), 4) << ")";
      std::cout << "\n";
    }
    std::cout << "\nunion over a period:\n";
  }
  std::size_t width = std::string_view("out-neighbours").size();
  for (const auto id : g.members()) width = std::max(width, join(g.out(id), " ").size());
  std::string header = "out-neighbours";
  header.resize(width, ' ');
  std::cout << "member  " << header << "  in-neighbours\n";
  for (const auto id : g.members()) {
    std::string label = std::to_string(id);
    label.insert(0, label.size() < 6 ? 6 - label.size() : 0, ' ');
    std::string outs = join(g.out(id), " ");
    outs.resize(width, ' ');
    std::string line = label + "  " + outs + "  " + join(g.in(id), " ");
    line.erase(line.find_last_not_of(' ') + 1);  // no trailing blanks when in() is empty
    std::cout << line << "\n";
  }
  std::cout << "\nstrongly connected: ";
  if (a.connected) {
    std::cout << "yes\n";
  } else {
    std::cout << "no (member " << a.unreachable->first << " cannot reach member " << a.unreachable->second
              << ")\n";
  }
  std::cout << "regular:            " << (a.regular ? "yes" : "no") << " (out-degree "
            << range_text(degree_range(g, true)) << ", in-degree " << range_text(degree_range(g, false))
            << ")\n";
  std::cout << "diameter:           ";
  if (a.diameter < 0) {
    std::cout << "infinite (not strongly connected)\n";
  } else {
    std::cout << a.diameter << (a.diameter == 1 ? " round\n" : " rounds\n");
  }
  std::cout << "spectral gap:       " << fixed(a.gap, 6) << "\n";
  std::cout << "messages per round: " << a.messages << "\n";
}

void print_json(const options& opt, const topo::graph& g, const analysis& a) {
  auto lists = [&](bool out) {
    std::vector<std::vector<dml::member_id>> l;
    for (const auto id : g.members()) {
      const auto ids = out ? g.out(id) : g.in(id);
      l.emplace_back(ids.begin(), ids.end());
    }
    return l;
  };
  nlohmann::ordered_json j;  // keys in this order
  j["kind"] = opt.kind;
  j["n"] = g.size();
  j["out"] = lists(true);
  j["in"] = lists(false);
  j["connected"] = a.connected;
  j["regular"] = a.regular;
  j["diameter"] = a.diameter;
  j["spectral_gap"] = a.gap;
  j["messages_per_round"] = a.messages;
  if (const auto offsets = offsets_of(opt, g.size()); !offsets.empty()) j["offsets"] = offsets;
  if (opt.kind == "hierarchical") {
    const auto h = make_hierarchical(opt);
    j["groups"] = h.groups(g.size());
    j["claims_regular"] = h.claims_regular(g.size());
  }
  if (opt.kind == "one_peer_exponential") {
    const topo::one_peer_exponential gen;
    j["exact_after_rounds"] = gen.exact_after_rounds(g.size());
    j["period"] = gen.period(g.size());
    // Per round: the out-lists, and each member's row (its own weight, then
    // the weight of the member it hears, if any).
    auto rounds = nlohmann::ordered_json::array();
    for (std::size_t t = 0; t < gen.period(g.size()); ++t) {
      const auto r = topo::build_round(gen, g.size(), t);
      nlohmann::ordered_json round;
      std::vector<std::vector<dml::member_id>> out;
      std::vector<std::vector<double>> rows;
      for (const auto id : r.members()) {
        out.emplace_back(r.out(id).begin(), r.out(id).end());
        std::vector<double> row{r.self_weight(id)};
        for (const double w : r.in_weights(id)) row.push_back(w);
        rows.push_back(std::move(row));
      }
      round["out"] = out;
      round["weights"] = rows;
      rounds.push_back(std::move(round));
    }
    j["rounds"] = std::move(rounds);
  }
  std::cout << j.dump() << "\n";
}

void print_dot(const options& opt, const topo::graph& g, const analysis& a) {
  std::cout << "digraph \"" << opt.kind << "_" << g.size() << "\" {\n"
            << "  // dml-topology --kind " << opt.kind << " --n " << g.size() << ": " << a.messages
            << " edges, diameter " << a.diameter << ", spectral gap " << fixed(a.gap, 6) << "\n"
            << "  node [shape=circle];\n";
  for (const auto id : g.members()) {
    const auto out = g.out(id);
    if (out.empty()) {
      std::cout << "  " << id << ";\n";
    } else {
      std::cout << "  " << id << " -> {" << join(out, " ") << "};\n";
    }
  }
  std::cout << "}\n";
}

void print_table() {
  constexpr std::array<std::size_t, 8> sizes{4, 6, 8, 16, 25, 64, 100, 256};
  constexpr std::array<std::string_view, 10> columns{
      "all",   "halton", "naive_halton", "root_expander", "ring",
      "ring2", "chain",  "star",         "exponential",   "best_circulant"};
  struct cell {
    analysis a;
    std::size_t max_out;
  };
  std::vector<std::vector<cell>> cells;
  for (const std::size_t n : sizes) {
    auto& row = cells.emplace_back();
    for (const auto kind : columns) {
      const auto g = make_graph(kind, n, std::nullopt);
      row.push_back({analyse(g), degree_range(g, true).second});
    }
  }
  auto print = [&](std::string_view title, auto&& text) {
    std::cout << title << "\n";
    std::string line = "   n";
    for (const auto kind : columns) {
      std::string head(kind == "root_expander" ? "root_exp" : kind == "best_circulant" ? "best_circ" : kind);
      head.insert(0, head.size() < 13 ? 13 - head.size() : 0, ' ');
      line += head;
    }
    std::cout << line << "\n";
    for (std::size_t r = 0; r < sizes.size(); ++r) {
      std::string row = std::to_string(sizes[r]);
      row.insert(0, 4 - row.size(), ' ');
      for (const auto& c : cells[r]) {
        std::string t = text(c);
        t.insert(0, t.size() < 13 ? 13 - t.size() : 0, ' ');
        row += t;
      }
      row.erase(row.find_last_not_of(' ') + 1);
      std::cout << row << "\n";
    }
    std::cout << "\n";
  };
  print("spectral gap / largest out-degree  (x = not strongly connected)", [](const cell& c) {
    return fixed(c.a.gap, 4) + "/" + std::to_string(c.max_out) + (c.a.connected ? " " : "x");
  });
  print("diameter (rounds) / messages per round  (- = infinite)", [](const cell& c) {
    return (c.a.diameter < 0 ? std::string("-") : std::to_string(c.a.diameter)) + "/" +
           std::to_string(c.a.messages) + " ";
  });
  std::cout << "halton: ceil(log2 n) offsets, repaired; naive_halton: the same offsets unrepaired;\n"
               "root_exp: root_expander; ring2: bidirectional ring; chain: bidirectional path;\n"
               "best_circ: best_circulant, the searched circulant with ceil(log2 n) offsets.\n";
}

// Halton, exponential and the searched circulant at the same out-degree
// ceil(log2 n), and the two-offset graphs, with the offsets found.
void print_circulant_table() {
  constexpr std::array<std::size_t, 16> sizes{4,  6,   8,   12,  16,  25,  32,  48,
                                              64, 100, 128, 200, 256, 400, 512, 1024};
  std::cout
      << "spectral gap at out-degree k = ceil(log2 n), and at 2  (* = exhaustive search: the largest gap)\n"
      << "   n   k    halton  exponential  best_circulant   root_exp  best_circ_2   best offsets (k)\n";
  for (const std::size_t n : sizes) {
    const std::size_t k = topo::best_circulant{}.fan_out(n);
    const auto best = topo::search_circulant(n, k);
    const auto best2 = topo::search_circulant(n, 2);
    auto col = [](std::string s, std::size_t w) {
      s.insert(0, s.size() < w ? w - s.size() : 0, ' ');
      return s;
    };
    std::string line = col(std::to_string(n), 4) + col(std::to_string(k), 4);
    line += col(fixed(topo::circulant_gap(n, topo::halton{}.offsets(n)), 4), 10);
    std::vector<std::size_t> powers;  // the exponential graph's offsets
    for (std::size_t p = 1; p < n; p *= 2) powers.push_back(p);
    line += col(fixed(topo::circulant_gap(n, powers), 4), 13);
    line += col(fixed(best.gap, 4) + (best.exhaustive ? "*" : " "), 16);
    const std::vector<std::size_t> root{1, dml::detail::floor_sqrt(n)};  // distinct for n >= 4
    line += col(fixed(topo::circulant_gap(n, root), 4), 11);
    line += col(fixed(best2.gap, 4) + (best2.exhaustive ? "*" : " "), 13);
    line += "   " + join(best.offsets, " ");
    std::cout << line << "\n";
  }
  std::cout << "\nhalton: repaired MALT offsets; root_exp: offsets 1 and floor(sqrt n); best_circulant and\n"
               "best_circ_2: search_circulant(n, k) and (n, 2) with the default budget.\n";
}

int run(int argc, char** argv) {
  const auto opt = parse(argc, argv);
  if (!opt) return 0;  // --help
  if (opt->output == format::table) {
    print_table();
    return 0;
  }
  if (opt->output == format::circulant_table) {
    print_circulant_table();
    return 0;
  }
  const auto g = make_graph(*opt);
  const auto a = analyse(g);
  switch (opt->output) {
    case format::json:
      print_json(*opt, g, a);
      break;
    case format::dot:
      print_dot(*opt, g, a);
      break;
    default:
      print_text(*opt, g, a);
      break;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const usage_error& e) {
    std::cerr << "dml-topology: " << e.what() << "\n";
  } catch (const dml::config_error& e) {  // n = 0, k >= n and the like, worded by the library
    std::cerr << "dml-topology: " << e.what() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "dml-topology: unexpected error: " << e.what() << "\n";
    return 1;
  }
  return 2;
}

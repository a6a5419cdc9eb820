// SPDX-License-Identifier: BSL-1.0
// dml::io: 8 in-process members printing at once leave whole, prefixed
// lines; print() writes from the leader only, and the leader moves to the
// lowest survivor after a failure.
#include <dml/comm/inproc.hpp>
#include <dml/fault/membership.hpp>
#include <dml/io.hpp>

#include "support/catch.hpp"

#include <cstddef>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace inproc = dml::comm::inproc;
using dml::member_id;

namespace {

// Everything written to `f` so far, as lines (the last one may lack '\n':
// then it is returned with a trailing "<no newline>").
std::vector<std::string> lines_of(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::vector<std::string> lines;
  std::string line;
  for (int ch = std::fgetc(f); ch != EOF; ch = std::fgetc(f)) {
    if (ch == '\n') {
      lines.push_back(line);
      line.clear();
    } else {
      line.push_back(static_cast<char>(ch));
    }
  }
  if (!line.empty()) lines.push_back(line + "<no newline>");
  return lines;
}

struct temp_file {
  std::FILE* f = std::tmpfile();
  temp_file() { REQUIRE(f != nullptr); }
  temp_file(const temp_file&) = delete;
  temp_file& operator=(const temp_file&) = delete;
  ~temp_file() { std::fclose(f); }
};

}  // namespace

TEST_CASE("io::print_each: 8 members printing at once leave whole lines, each prefixed with its member") {
  temp_file out;
  constexpr std::size_t members = 8, calls = 300;
  inproc::run(members, [&](inproc::context& c) {
    c.barrier();  // start together
    for (std::size_t k = 0; k < calls; ++k) {
      // Lines of different lengths; every third call writes three lines
      // at once and leaves out the final newline.
      const std::string filler(1 + (k * 37 + c.rank() * 11) % 1500, static_cast<char>('a' + c.rank()));
      if (k % 3 == 0)
        dml::io::print_each(
            c, out.f,
            "member %zu call %zu part 1 %s end\nmember %zu call %zu part 2\nmember %zu call %zu part 3",
            c.rank(), k, filler.c_str(), c.rank(), k, c.rank(), k);
      else
        dml::io::print_each(c, out.f, "member %zu call %zu part 1 %s end\n", c.rank(), k, filler.c_str());
    }
  });
  const auto lines = lines_of(out.f);
  std::map<std::pair<std::size_t, std::size_t>, std::set<int>> parts;  // (member, call) -> parts seen
  std::size_t broken = 0;
  for (const auto& line : lines) {
    // "[M] member M call K part P", then " <filler> end" for part 1.
    std::size_t prefix = 0, member = 0, call = 0;
    int part = 0, used = 0;
    const bool fields = std::sscanf(line.c_str(), "[%zu] member %zu call %zu part %d%n", &prefix, &member,
                                    &call, &part, &used) == 4;
    const std::string head = "[" + std::to_string(prefix) + "] member " + std::to_string(member) + " call " +
                             std::to_string(call) + " part " + std::to_string(part);
    const std::string rest = fields ? line.substr(static_cast<std::size_t>(used)) : std::string();
    const bool tail_ok =
        part == 1 ? rest.size() > 5 && rest.front() == ' ' && rest.ends_with(" end") : rest.empty();
    if (!fields || line.rfind(head, 0) != 0 || prefix != member || part < 1 || part > 3 || !tail_ok) {
      if (++broken <= 5) UNSCOPED_INFO("not a whole prefixed line: " << line);
      continue;
    }
    if (part == 1) {  // the filler is the member's letter, as long as it was
      const std::string filler = rest.substr(1, rest.size() - 5);
      const std::size_t want = 1 + (call * 37 + member * 11) % 1500;
      if (filler != std::string(want, static_cast<char>('a' + member))) ++broken;
    }
    parts[{member, call}].insert(part);
  }
  REQUIRE(broken == 0);
  REQUIRE(parts.size() == members * calls);
  for (const auto& [key, seen] : parts) REQUIRE(seen.size() == (key.second % 3 == 0 ? 3u : 1u));
  REQUIRE(lines.size() == members * (calls + 2 * ((calls + 2) / 3)));
}

TEST_CASE("io::print: only the leader writes, whole lines, and an empty text writes nothing") {
  temp_file out;
  std::vector<int> leaders(5, -1);
  inproc::run(5, [&](inproc::context& c) {
    leaders[c.rank()] = dml::io::leader(c) ? 1 : 0;
    for (int k = 0; k < 20; ++k) dml::io::print(c, out.f, "from %zu, report %d", c.rank(), k);
    dml::io::print(c, out.f, "%s", "");
  });
  REQUIRE(leaders == std::vector<int>{1, 0, 0, 0, 0});
  const auto lines = lines_of(out.f);
  REQUIRE(lines.size() == 20);
  for (int k = 0; k < 20; ++k)
    REQUIRE(lines[static_cast<std::size_t>(k)] == "from 0, report " + std::to_string(k));
}

TEST_CASE("io::leader: after member 0 fails and the survivors recover, member 1 leads") {
  temp_file out;
  std::vector<int> leaders(4, -1);
  inproc::run(4, [&](inproc::context& c) {
    if (c.rank() == 0) c.stop();
    try {
      c.barrier();
    } catch (const dml::peer_failure&) {
      dml::fault::recover(c);
    }
    leaders[c.rank()] = dml::io::leader(c) ? 1 : 0;
    dml::io::print(c, out.f, "view %llu: %zu leads", static_cast<unsigned long long>(c.view().epoch),
                   c.rank());
  });
  REQUIRE(leaders == std::vector<int>{-1, 1, 0, 0});
  REQUIRE(lines_of(out.f) == std::vector<std::string>{"view 1: 1 leads"});
}

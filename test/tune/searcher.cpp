// SPDX-License-Identifier: BSL-1.0
// Search spaces and searchers: proposals stay in range (log ranges spread
// over decades), the same seed gives the same sequence, the grid visits
// every point once and ends, and bad spaces are refused.
#include <dml/tune/searcher.hpp>

#include "support/catch.hpp"

#include <cmath>
#include <cstddef>
#include <set>
#include <vector>

namespace {
dml::tune::space example_space() {
  dml::tune::space sp;
  sp.range("lr", 1e-5, 1.0, dml::tune::scale::log)
      .range("momentum", 0.0, 1.0)
      .choice("staleness", {0, 1, 3, 7});
  return sp;
}
}  // namespace

TEST_CASE("random_searcher: in range, log-uniform, and determined by its seed") {
  dml::tune::random_searcher a(example_space(), 42), b(example_space(), 42), c(example_space(), 43);
  std::size_t below_1e3 = 0, differs = 0;
  std::set<double> staleness;
  for (int i = 0; i < 400; ++i) {
    const auto sa = a.next(), sb = b.next(), sc = c.next();
    REQUIRE(sa);
    REQUIRE(sb);
    REQUIRE(*sa == *sb);
    differs += *sa != *sc;
    REQUIRE(a.search_space().contains(*sa));
    below_1e3 += (*sa)[0] < 1e-3;
    staleness.insert((*sa)[2]);
  }
  CHECK(differs > 390);
  // log10-uniform over 5 decades: 2 of them lie below 1e-3 (about 160 of 400);
  // a linear draw would put about 0.4 there.
  CHECK(below_1e3 > 100);
  CHECK(below_1e3 < 220);
  CHECK(staleness == std::set<double>{0, 1, 3, 7});
}

TEST_CASE("grid_searcher: every point once, log-spaced, then the end") {
  dml::tune::space sp;
  sp.range("lr", 1e-4, 1.0, dml::tune::scale::log).choice("cb", {64, 256});
  dml::tune::grid_searcher g(sp, 5);
  CHECK(g.size() == 10);
  std::vector<dml::tune::setting> seen;
  while (auto s = g.next()) seen.push_back(*s);
  REQUIRE(seen.size() == 10);
  CHECK_FALSE(g.next());
  const double lrs[] = {1e-4, 1e-3, 1e-2, 1e-1, 1.0};
  for (std::size_t i = 0; i < 10; ++i) {
    CHECK(seen[i][0] == Approx(lrs[i / 2]));
    CHECK(seen[i][1] == (i % 2 ? 256 : 64));
  }
  CHECK(sp.describe(seen[3]) == "lr=0.001 cb=256");
}

TEST_CASE("spaces refuse what cannot be searched") {
  dml::tune::space sp;
  CHECK_THROWS_WITH(sp.range("lr", 0.0, 1.0, dml::tune::scale::log), dml_test::contains("must be > 0"));
  CHECK_THROWS_WITH(sp.range("x", 2.0, 1.0), dml_test::contains("low <= high"));
  CHECK_THROWS_WITH(sp.choice("s", {}), dml_test::contains("at least one choice"));
  sp.range("lr", 0.1, 1.0);
  CHECK_THROWS_WITH(sp.range("lr", 0.1, 1.0), dml_test::contains("declared twice"));
  CHECK_THROWS_WITH((void)sp.index("momentum"), dml_test::contains("no tunable is called 'momentum'"));
  CHECK_THROWS_AS(dml::tune::grid_searcher(sp, 0), dml::config_error);
  CHECK_THROWS_AS(dml::tune::random_searcher(dml::tune::space{}, 1), dml::config_error);
}

TEST_CASE("list_searcher: the plan in order, then the end; settings outside the space refused") {
  dml::tune::space sp;
  sp.range("lr", 1e-3, 10.0, dml::tune::scale::log).choice("cb", {64, 256});
  dml::tune::list_searcher l(sp, {{1.0, 64}, {0.1, 256}, {0.01, 64}});
  CHECK(l.size() == 3);
  CHECK(*l.next() == dml::tune::setting{1.0, 64});
  CHECK(*l.next() == dml::tune::setting{0.1, 256});
  CHECK(*l.next() == dml::tune::setting{0.01, 64});
  CHECK_FALSE(l.next());
  CHECK_THROWS_WITH(dml::tune::list_searcher(sp, {{1.0, 128}}), dml_test::contains("lies outside the space"));
}

// SPDX-License-Identifier: BSL-1.0
// circulant{offsets} and best_circulant{k}: the generator laws, the closed
// form of a circulant's spectral gap against the dense SVD, the search
// against brute force, its determinism, and the errors.
#include "check.hpp"
#include "support/catch.hpp"

#include <dml/topology.hpp>
#include <dml/topology/spectral.hpp>

#include <cmath>
#include <cstddef>
#include <numbers>
#include <numeric>
#include <vector>

namespace topo = dml::topology;
using Catch::Matchers::WithinAbs;
using dml_test::ceil_log2;
using dml_test::check_generator;
using dml_test::config_error_message;
using dml_test::contains;
using dml_test::degree_fn;
using dml_test::ids;
using offsets = std::vector<std::size_t>;

namespace {

// Sizes at which circulant{1, 3} is defined and connected: n > 2, 3 % n != 0.
const std::vector<std::size_t> sizes_for_1_3{4, 7, 8, 16, 25, 64, 100, 256};

}  // namespace

TEST_CASE("circulant: the generator laws", "[topology]") {
  const degree_fn two = [](std::size_t, std::size_t) -> std::size_t { return 2; };
  check_generator(topo::circulant{{1, 3}}, two, two, true, sizes_for_1_3);
  const degree_fn one = [](std::size_t, std::size_t) -> std::size_t { return 1; };
  check_generator(topo::circulant{{1}}, one, one, true, {2, 3, 4, 7, 8, 16, 25, 64, 100, 256});
  for (const std::size_t n : sizes_for_1_3) CHECK(topo::is_regular(topo::build(topo::circulant{{1, 3}}, n)));
}

TEST_CASE("circulant: i -> i + o for each offset, taken mod n", "[topology]") {
  const auto g = topo::build(topo::circulant{{1, 5}}, 25);
  CHECK(ids(g.out(0)) == std::vector<dml::member_id>{1, 5});
  CHECK(ids(g.out(22)) == std::vector<dml::member_id>{2, 23});
  // The root expander at 25 is the circulant {1, 5}.
  CHECK(g == topo::build(topo::root_expander{}, 25));
  // The exponential graph at 8 is {1, 2, 4}; the repaired Halton {4, 2, 1}.
  CHECK(topo::build(topo::circulant{{1, 2, 4}}, 8) == topo::build(topo::exponential{}, 8));
  CHECK(topo::build(topo::circulant{topo::halton{}.offsets(100)}, 100) == topo::build(topo::halton{}, 100));
  // Offsets beyond n wrap: 9 over 7 members is 2.
  CHECK(topo::circulant{{1, 9}}.offsets(7) == offsets{1, 2});
  CHECK(topo::build(topo::circulant{{1, 9}}, 7) == topo::build(topo::circulant{{1, 2}}, 7));
  // Over survivors: the circulant over m members, relabelled.
  const std::vector<dml::member_id> alive{0, 2, 3, 5, 6, 9, 11};
  const auto h = topo::build(topo::circulant{{1, 3}}, alive);
  CHECK(ids(h.out(0)) == std::vector<dml::member_id>{2, 5});
  CHECK(topo::circulant{{1, 3}}.describe() == "circulant(offsets=1,3)");
}

TEST_CASE("circulant: bad offsets and disconnected offset sets are config errors", "[topology]") {
  CHECK(contains(config_error_message([] { topo::circulant{offsets{}}; }), "offset list is empty"));
  CHECK(contains(config_error_message([] { topo::circulant{{1, 0}}; }), "offset 0"));
  CHECK(contains(config_error_message([] { topo::circulant{{2, 1, 2}}; }), "offset 2 is listed twice"));
  // k >= n: the fan-out message every generator uses.
  CHECK(contains(config_error_message([] {
                   (void)topo::build(topo::circulant{{1, 2, 3}}, 3);
                 }),
                 "topology 'circulant' with fan-out 3 needs more than 3 members"));
  CHECK(contains(config_error_message([] { (void)topo::build(topo::circulant{{1}}, 0); }),
                 "needs at least one member"));
  // A multiple of n, and two offsets equal mod n.
  CHECK(contains(config_error_message([] {
                   (void)topo::build(topo::circulant{{1, 7}}, 7);
                 }),
                 "offset 7 is a multiple of n = 7"));
  CHECK(contains(config_error_message([] {
                   (void)topo::build(topo::circulant{{1, 8}}, 7);
                 }),
                 "offsets 1 and 8 are equal mod n = 7"));
  // gcd(offsets, n) = 2 at n = 8: the even and the odd members never meet.
  const auto msg = config_error_message([] { (void)topo::build(topo::circulant{{2, 4}}, 8); });
  CHECK(contains(msg, "topology 'circulant(offsets=2,4)' over 8 members is not strongly connected"));
  CHECK(contains(msg, "multiples of 2"));
  CHECK(contains(msg, "2 parts"));
  // The same offsets are fine over 9 members.
  CHECK(topo::is_strongly_connected(topo::build(topo::circulant{{2, 4}}, 9)));
}

TEST_CASE("circulant_gap: the closed form agrees with the dense SVD", "[topology]") {
  // One-way ring: 1 - cos(pi / n), as the analysis tests derive.
  for (std::size_t n = 2; n <= 12; ++n) {
    INFO("n = " << n);
    CHECK_THAT(topo::circulant_gap(n, offsets{1}),
               WithinAbs(1.0 - std::cos(std::numbers::pi / static_cast<double>(n)), 1e-12));
  }
  for (const std::size_t n : {7u, 16u, 25u, 30u, 64u}) {
    for (const offsets& o : {offsets{1, 3}, offsets{1, 2, 5}, offsets{1, 4, 6, 9}}) {
      INFO("n = " << n << ", " << o.size() << " offsets");
      const topo::circulant gen{o};
      CHECK_THAT(topo::circulant_gap(n, o), WithinAbs(topo::spectral_gap(topo::build(gen, n)), 1e-10));
    }
  }
  // A disconnected set has gap 0; one member has gap 1.
  CHECK_THAT(topo::circulant_gap(8, offsets{2, 4}), WithinAbs(0.0, 1e-12));
  CHECK(topo::circulant_gap(1, offsets{}) == 1.0);
}

TEST_CASE("search_circulant: exhaustive where it fits, and then the best by brute force", "[topology]") {
  for (std::size_t n = 2; n <= 14; ++n) {
    for (std::size_t k = 1; k < n && k <= 4; ++k) {
      INFO("n = " << n << ", k = " << k);
      const auto r = topo::search_circulant(n, k);
      REQUIRE(r.exhaustive);
      REQUIRE(r.offsets.size() == k);
      CHECK(std::is_sorted(r.offsets.begin(), r.offsets.end()));
      CHECK(r.candidates == [&] {  // C(n - 1, k)
        std::size_t c = 1;
        for (std::size_t i = 1; i <= k; ++i) c = c * (n - k - 1 + i) / i;
        return c;
      }());
      // Brute force with the dense SVD over every k-subset.
      double best = -1;
      offsets chosen, best_set;
      auto visit = [&](auto&& self, std::size_t from) -> void {
        if (chosen.size() == k) {
          std::vector<std::vector<dml::member_id>> out(n);
          for (std::size_t i = 0; i < n; ++i)
            for (const auto o : chosen) out[i].push_back((i + o) % n);
          const double g = topo::spectral_gap(topo::graph(std::move(out)));
          if (g > best + 1e-9) {
            best = g;
            best_set = chosen;
          }
          return;
        }
        for (std::size_t o = from; o < n; ++o) {
          chosen.push_back(o);
          self(self, o + 1);
          chosen.pop_back();
        }
      };
      visit(visit, 1);
      CHECK_THAT(r.gap, WithinAbs(best, 1e-9));
      CHECK(r.offsets == best_set);  // the lexicographically first of the best
      CHECK_THAT(topo::spectral_gap(topo::build(topo::circulant{r.offsets}, n)), WithinAbs(r.gap, 1e-9));
    }
  }
  // Hand values: over 4 members with k = 2 the best is {1, 2} (gap 2/3,
  // like the two-way ring {1, 3}, which comes later); k = n - 1 is `all`.
  CHECK(topo::search_circulant(4, 2).offsets == offsets{1, 2});
  CHECK_THAT(topo::search_circulant(4, 2).gap, WithinAbs(2.0 / 3.0, 1e-12));
  CHECK(topo::search_circulant(6, 5).offsets == offsets{1, 2, 3, 4, 5});
  CHECK_THAT(topo::search_circulant(6, 5).gap, WithinAbs(1.0, 1e-12));
}

TEST_CASE("search_circulant: the local search is deterministic and never worse than its starts",
          "[topology]") {
  // A budget of 2e6 operations (the default is 4e7): the properties hold
  // for any budget, and the sanitized run took 30 s with the default one.
  // best_circulant's tests below use the default.
  constexpr std::uint64_t budget = 2'000'000;
  for (const std::size_t n : {40u, 64u, 100u}) {
    const std::size_t k = ceil_log2(n);
    INFO("n = " << n << ", k = " << k);
    const auto a = topo::search_circulant(n, k, budget);
    const auto b = topo::search_circulant(n, k, budget);
    CHECK_FALSE(a.exhaustive);
    CHECK(a.offsets == b.offsets);
    CHECK(a.gap == b.gap);
    CHECK(a.candidates == b.candidates);
    std::size_t divisor = n;
    for (const auto o : a.offsets) divisor = std::gcd(divisor, o);
    CHECK(divisor == 1);
    // The exponential and Halton offsets are among the starts.
    CHECK(a.gap >= topo::circulant_gap(n, topo::halton{k}.offsets(n)));
    CHECK(a.gap >= topo::spectral_gap(topo::build(topo::exponential{}, n)) - 1e-12);
    CHECK_THAT(topo::spectral_gap(topo::build(topo::circulant{a.offsets}, n)), WithinAbs(a.gap, 1e-9));
  }
  // Where an exhaustive search is affordable, a local one with a small
  // budget finds the same gap: n = 32, k = 5 (measured: 0.5286 both ways,
  // the local search from 1954 of the 169911 offset sets).
  const auto local = topo::search_circulant(32, 5, 20'000);
  const auto full = topo::search_circulant(32, 5, 400'000'000);
  CHECK_FALSE(local.exhaustive);
  CHECK(full.exhaustive);
  CHECK_THAT(local.gap, WithinAbs(full.gap, 1e-9));  // sums kept in another order
#if !DML_TEST_SANITIZED
  // The default budget at n = 40, k = 6, the smallest size where it is not
  // exhaustive: the same gap as the exhaustive search (0.5648 both ways).
  // About 10 s under ASan+UBSan at -O0, well under a second in the plain
  // run, which checks it.
  const auto local40 = topo::search_circulant(40, 6);
  const auto full40 = topo::search_circulant(40, 6, 400'000'000);
  CHECK_FALSE(local40.exhaustive);
  CHECK(full40.exhaustive);
  CHECK_THAT(local40.gap, WithinAbs(full40.gap, 1e-9));
#endif
}

TEST_CASE("best_circulant: the generator laws and its degree", "[topology]") {
  const degree_fn d = [](std::size_t, std::size_t n) { return ceil_log2(n); };
  check_generator(topo::best_circulant{}, d, d);
  for (const std::size_t n : dml_test::sizes) {
    const auto g = topo::build(topo::best_circulant{}, n);
    CHECK(topo::is_regular(g));
    if (n > 1) CHECK(topo::spectral_gap(g) >= topo::spectral_gap(topo::build(topo::halton{}, n)) - 1e-12);
  }
  const degree_fn two = [](std::size_t, std::size_t) -> std::size_t { return 2; };
  check_generator(topo::best_circulant{2}, two, two, true, {3, 4, 7, 8, 16, 25, 64, 100});
  CHECK(topo::best_circulant{}.describe() == "best_circulant");
  CHECK(topo::best_circulant{3}.describe() == "best_circulant(k=3)");
  CHECK(topo::best_circulant{3}.offsets(16) == topo::search_circulant(16, 3).offsets);
  CHECK(topo::build(topo::best_circulant{}, 1).edge_count() == 0);
}

TEST_CASE("best_circulant: errors name the cause", "[topology]") {
  CHECK(contains(config_error_message([] { (void)topo::best_circulant{0}; }), "must be at least 1, got 0"));
  CHECK(contains(config_error_message([] { (void)topo::build(topo::best_circulant{4}, 4); }),
                 "topology 'best_circulant' with fan-out 4 needs more than 4 members"));
  CHECK(contains(config_error_message([] { (void)topo::build(topo::best_circulant{}, 0); }),
                 "needs at least one member"));
  CHECK(contains(config_error_message([] { (void)topo::search_circulant(5, 0); }), "at least 1, got 0"));
}

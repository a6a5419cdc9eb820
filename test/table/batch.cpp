// SPDX-License-Identifier: BSL-1.0
// Batch reads (table::read_rows) beyond the laws (laws.hpp runs them with
// `batched`): bad input changes nothing, empty lists and duplicates, and
// what a batch costs: one fetch per owner, a bounded number of gets.
// Results are collected on the members and asserted on the main thread.
#include <dml/comm/inproc.hpp>
#include <dml/table.hpp>

#include "support/catch.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace inproc = dml::comm::inproc;

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Row r's value after every one of n members added (m + 1) * (r + 1) to
// element 0 and 1 to element 1 of every row, `clocks` times.
double expected0(std::size_t n, std::size_t r, std::size_t clocks) {
  return static_cast<double>(n * (n + 1) / 2 * (r + 1) * clocks);
}

struct member_report {
  std::string error;           // the config_error's text
  bool unchanged = false;      // stats and values after the failed call as before
  std::size_t empty_size = 1;  // elements read_rows({}) returned
  std::vector<double> batch;   // element 0 of each row of the batch read
  std::vector<std::size_t> order;
  std::uint64_t fetches = 0, gets = 0, rows_fetched = 0, reads = 0, hits = 0, own = 0;
  std::uint64_t single_fetches = 0;  // the same rows read one by one
  std::size_t others_rows = 0, others = 0;
};

}  // namespace

TEST_CASE("table: read_rows refuses a row out of range anywhere in the list, naming it, and changes nothing",
          "[table]") {
  std::vector<member_report> rep(3);
  inproc::run(3, [&](auto& c) {
    auto& me = rep[c.rank()];
    auto t = dml::make_table<double>(c, 7, 2);
    t.update(c.rank(), {1.0, 2.0});
    t.sync();
    const auto before = t.stats();
    const std::vector<std::size_t> bad{0, 1, 2, 3, 7, 4};
    try {
      (void)t.read_rows(bad);
    } catch (const dml::config_error& e) {
      me.error = e.what();
    }
    const auto after = t.stats();
    me.unchanged =
        after.reads == before.reads && after.fetches == before.fetches && after.gets == before.gets;
    me.empty_size = t.read_rows(std::span<const std::size_t>{}).size();
    t.sync();
  });
  for (const auto& r : rep) {
    CHECK(contains(r.error, "dml::table::read_rows: row 7 is out of range (the table has 7 rows)"));
    CHECK(r.unchanged);
    CHECK(r.empty_size == 0);
  }
}

TEST_CASE("table: read_rows returns every row as read() would, duplicates included, with one fetch per owner",
          "[table]") {
  for (std::size_t n : {2u, 5u}) {
    const std::size_t rows = 8 * n + 3, clocks = 3;
    std::vector<member_report> rep(n);
    inproc::run(n, [&](auto& c) {
      auto& me = rep[c.rank()];
      auto t = dml::make_table<double>(c, rows, 2);
      for (std::size_t k = 0; k < clocks; ++k) {
        for (std::size_t r = 0; r < rows; ++r)
          t.update(r, {static_cast<double>((c.rank() + 1) * (r + 1)), 1.0});
        t.clock();
      }
      t.update(0, {0.5, 0.0});  // a clock that sync() ends
      t.sync();
      // Every row, backwards, then rows 1 and 0 again.
      for (std::size_t r = rows; r-- > 0;) me.order.push_back(r);
      me.order.push_back(1);
      me.order.push_back(0);
      for (std::size_t r = 0; r < rows; ++r)
        if (t.owner(r) != c.rank()) ++me.others_rows;
      std::vector<bool> owner_seen(n, false);
      for (std::size_t r = 0; r < rows; ++r) owner_seen[t.owner(r)] = true;
      for (std::size_t m = 0; m < n; ++m) me.others += owner_seen[m] && m != c.rank() ? 1 : 0;
      const auto before = t.stats();
      const auto got = t.read_rows(me.order);
      for (std::size_t i = 0; i < me.order.size(); ++i) me.batch.push_back(got[i * 2]);
      const auto after = t.stats();
      me.fetches = after.fetches - before.fetches;
      me.gets = after.gets - before.gets;
      me.rows_fetched = after.rows_fetched - before.rows_fetched;
      me.reads = after.reads - before.reads;
      me.hits = after.cache_hits - before.cache_hits;
      me.own = after.own_reads - before.own_reads;
      // Nobody's next sync() (whose clock() publishes a batch) may start
      // while another member is still fetching: that would tear its fetch.
      c.barrier();
      t.sync();  // drops the cache: the same rows again, one read() each
      const auto mid = t.stats();
      for (std::size_t r = 0; r < rows; ++r) (void)t.read(r);
      me.single_fetches = t.stats().fetches - mid.fetches;
      t.sync();
    });
    for (std::size_t m = 0; m < n; ++m) {
      const auto& r = rep[m];
      INFO("n = " << n << ", member " << m);
      REQUIRE(r.batch.size() == rows + 2);
      for (std::size_t i = 0; i < r.batch.size(); ++i) {
        const std::size_t row = r.order[i];
        CHECK(r.batch[i] == expected0(n, row, clocks) + (row == 0 ? 0.5 * static_cast<double>(n) : 0.0));
      }
      CHECK(r.reads == rows + 2);
      CHECK(r.fetches == r.others);            // one fetch per owner
      CHECK(r.rows_fetched == r.others_rows);  // each row of others once, the duplicates not again
      // A quiet table (after sync nothing is published): per owner a
      // version word, the applied clocks, its rows in one run (the cyclic
      // layout keeps an owner's rows contiguous), the version again.
      CHECK(r.gets <= 4 * r.others);
      CHECK(r.own + r.hits + r.rows_fetched == rows + 2);
      CHECK(r.single_fetches == r.others_rows);  // what read() costs: a fetch per row
    }
  }
}

// SPDX-License-Identifier: BSL-1.0
// dml::io::agree_on_input over in-process members: the same input returns
// everywhere; a differing input, a failed load, a bad command line and a
// malformed record throw the same input_error on every member, reported by
// one; a member that dies before the check is left out. The MPI transports
// run the same checks in test/mpi/behaviour.cpp.
#include <dml/comm/inproc.hpp>
#include <dml/fault/membership.hpp>
#include <dml/io.hpp>

#include "support/catch.hpp"

#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace inproc = dml::comm::inproc;
using dml::member_id;

namespace {

// What each member got from agree_on_input: "" when it returned, else the
// error's what(), and whether that member was the reporter and usage().
struct outcome {
  std::string what;
  bool thrown = false, reporter = false, usage = false;
};

// Runs agree_on_input on n members, member m reporting report_of(m).
template <class ReportOf>
std::vector<outcome> agree(std::size_t n, ReportOf report_of) {
  std::vector<outcome> out(n);
  inproc::run(n, [&](inproc::context& c) {
    outcome& mine = out[c.rank()];
    try {
      dml::io::agree_on_input(c, report_of(c.rank()), "the training set");
    } catch (const dml::io::input_error& e) {
      mine = {e.what(), true, e.reporter(), e.usage()};
    }
  });
  return out;
}

dml::io::input_report loaded(std::uint64_t fingerprint, std::string summary) {
  dml::io::input_report r;
  r.fingerprint = fingerprint;
  r.summary = std::move(summary);
  return r;
}

dml::io::input_report failed(const std::string& message, bool usage = false) {
  dml::io::input_report r;
  r.failure = std::make_exception_ptr(std::runtime_error(message));
  r.usage = usage;
  return r;
}

// Every member threw the same what() and usage(), and exactly member 0
// reported it.
void require_same_error(const std::vector<outcome>& out) {
  REQUIRE(!out.empty());
  for (std::size_t m = 0; m < out.size(); ++m) {
    INFO("member " << m << ": " << out[m].what);
    CHECK(out[m].thrown);
    CHECK(out[m].what == out[0].what);
    CHECK(out[m].usage == out[0].usage);
    CHECK(out[m].reporter == (m == 0));
  }
}

}  // namespace

TEST_CASE("io::fingerprint: equal inputs agree; a value, the order or the split into spans changes it") {
  auto of = [](std::vector<float> a, std::vector<float> b) {
    dml::io::fingerprint f;
    f.add_span(std::span<const float>(a));
    f.add_span(std::span<const float>(b));
    return f.value();
  };
  const std::vector<float> x{1.0f, 2.5f, -3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f, 9.0f, 10.0f};
  CHECK(of(x, {}) == of(x, {}));
  std::vector<float> y = x;
  y[9] = 10.5f;  // in the byte-at-a-time tail
  CHECK(of(x, {}) != of(y, {}));
  y = x;
  y[1] = 2.0f;  // in the word-at-a-time part
  CHECK(of(x, {}) != of(y, {}));
  y = x;
  std::swap(y[0], y[1]);
  CHECK(of(x, {}) != of(y, {}));
  // The same values split differently: the counts are part of it.
  CHECK(of({1.0f, 2.0f}, {3.0f}) != of({1.0f}, {2.0f, 3.0f}));
  dml::io::fingerprint a, b;
  a.add(std::uint32_t{7});
  b.add(std::uint64_t{7});
  CHECK(a.value() != b.value());
}

TEST_CASE("io::agree_on_input: the same input returns on every member") {
  for (std::size_t n : {1, 2, 3, 5}) {
    const auto out = agree(n, [](member_id) { return loaded(42, "100 samples"); });
    for (const auto& o : out) CHECK_FALSE(o.thrown);
  }
}

TEST_CASE("io::agree_on_input: a differing input is the same error on every member, naming both") {
  for (std::size_t n : {2, 3, 5}) {
    const member_id odd = n - 1;
    const auto out =
        agree(n, [&](member_id m) { return m == odd ? loaded(7, "99 samples") : loaded(42, "100 samples"); });
    require_same_error(out);
    const std::string n_text = std::to_string(n);
    CHECK_THAT(out[0].what, dml_test::contains("the training set differs between ranks: rank " +
                                               std::to_string(odd) + " of " + n_text + " has 99 samples"));
    CHECK_THAT(out[0].what, dml_test::contains("rank 0 of " + n_text + " has 100 samples"));
    CHECK_THAT(out[0].what, dml_test::contains("fingerprint 0000000000000007"));
    CHECK_THAT(out[0].what, dml_test::contains("fingerprint 000000000000002a"));
    CHECK_FALSE(out[0].usage);
  }
}

TEST_CASE("io::agree_on_input: a load that failed on one member ends every member with its message") {
  for (std::size_t n : {1, 2, 4}) {
    const member_id bad = n / 2;
    for (const bool usage : {false, true}) {
      const auto out = agree(n, [&](member_id m) {
        return m == bad ? failed("data.txt:3: not a number", usage) : loaded(42, "100 samples");
      });
      require_same_error(out);
      // Alone, the member's message is the error; among others, it is named.
      CHECK(out[0].what == (n == 1 ? std::string("data.txt:3: not a number")
                                   : "rank " + std::to_string(bad) + " of " + std::to_string(n) +
                                         ": data.txt:3: not a number"));
      CHECK(out[0].usage == usage);
    }
  }
}

TEST_CASE("io::agree_on_input: the lowest failing member wins; the same failure everywhere is its message") {
  auto out = agree(4, [](member_id m) {
    return m == 1 ? failed("no such file") : m == 3 ? failed("--epochs needs a value", true) : loaded(1, "x");
  });
  require_same_error(out);
  CHECK(out[0].what == "rank 1 of 4: no such file");
  CHECK_FALSE(out[0].usage);
  out = agree(3, [](member_id) { return failed("--epochs needs a value", true); });
  require_same_error(out);
  CHECK(out[0].what == "--epochs needs a value");
  CHECK(out[0].usage);
}

TEST_CASE("io::agree_on_input: a malformed record is an error on every member that agrees") {
  std::vector<outcome> out(3);
  inproc::run(3, [&](inproc::context& c) {
    if (c.rank() == 2) {  // a member that sends three bytes instead of a record
      (void)c.exchange(std::vector<std::byte>(3));
      return;
    }
    try {
      dml::io::agree_on_input(c, loaded(42, "100 samples"));
    } catch (const dml::io::input_error& e) {
      out[c.rank()] = {e.what(), true, e.reporter(), e.usage()};
    }
  });
  for (member_id m : {0, 1}) {
    CHECK(out[m].thrown);
    CHECK(out[m].what == "a rank sent a malformed input record (3 bytes)");
    CHECK(out[m].reporter == (m == 0));
  }
}

TEST_CASE("io::agree_on_input: a member that dies before the check is left out, the leader moves") {
  for (const member_id dead : {member_id{0}, member_id{2}}) {
    // The dead member had the odd input: the survivors agree without it.
    std::vector<outcome> out(4);
    std::vector<bool> returned(4, false);
    inproc::run(4, [&](inproc::context& c) {
      if (c.rank() == dead) c.stop();
      try {
        dml::io::agree_on_input(c, loaded(42, "100 samples"));
        returned[c.rank()] = true;
      } catch (const dml::io::input_error& e) {
        out[c.rank()] = {e.what(), true, e.reporter(), e.usage()};
      }
    });
    for (member_id m = 0; m < 4; ++m) {
      INFO("member " << m << ", member " << dead << " dead: " << out[m].what);
      CHECK(returned[m] == (m != dead));
    }
    // Among the survivors a differing input is still found, named by the
    // survivors' ids and reported by the lowest survivor.
    std::vector<outcome> differ(4);
    inproc::run(4, [&](inproc::context& c) {
      if (c.rank() == dead) c.stop();
      try {
        dml::io::agree_on_input(c, c.rank() == 3 ? loaded(7, "99 samples") : loaded(42, "100 samples"));
      } catch (const dml::io::input_error& e) {
        differ[c.rank()] = {e.what(), true, e.reporter(), e.usage()};
      }
    });
    const member_id leader = dead == 0 ? 1 : 0;
    for (member_id m = 0; m < 4; ++m) {
      if (m == dead) continue;
      INFO("member " << m << ", member " << dead << " dead: " << differ[m].what);
      CHECK(differ[m].thrown);
      CHECK(differ[m].what == differ[leader].what);
      CHECK(differ[m].reporter == (m == leader));
    }
    CHECK_THAT(differ[leader].what, dml_test::contains("rank 3 of 3 has 99 samples"));
    CHECK_THAT(differ[leader].what,
               dml_test::contains("rank " + std::to_string(leader) + " of 3 has 100 samples"));
  }
}

// SPDX-License-Identifier: BSL-1.0
// A peer that returns from its function right after the survivors agreed
// on a view without a failed member (it met the failure first, and under
// fault::policy::abort, or in a caller's catch, it left). A wait that sees
// it return must name the failure, so the vector or table recovers, or
// reports the abort, instead of blaming a mismatch of calls. With the
// in-process transport that moment falls between two atomic loads of the
// wait loop (found once in a sanitized run of "the abort policy" test), so
// a scripted transport places it there.
#include <dml/table/detail/wait.hpp>
#include <dml/vector/detail/wait.hpp>

#include "support/catch.hpp"

#include <chrono>
#include <optional>

using dml::member_id;

namespace {

// Member 0 of three waits for member 1; member 2 has failed. `agrees`: the
// others agree on the view without 2 just as 1 is seen returning.
struct scripted {
  bool agrees = true;
  bool agreed = false;
  [[nodiscard]] member_id rank() const { return 0; }
  [[nodiscard]] std::chrono::steady_clock::duration wait_limit() const { return std::chrono::seconds(30); }
  void check_view() const {
    if (agreed) throw dml::peer_failure(2, "the group agreed on a view without member 2");
  }
  [[nodiscard]] bool alive(member_id m) const { return m != 2; }
  [[nodiscard]] bool finished(member_id m) {
    if (m != 1) return false;
    agreed = agrees;
    return true;
  }
};

}  // namespace

TEST_CASE("a vector's wait names the failure when its peer returned after the survivors agreed") {
  scripted c;
  double seconds = 0;
  const auto never = [] { return false; };
  try {
    dml::detail::wait_until(c, 1, "an acknowledgement", never, seconds);
    FAIL("the wait returned");
  } catch (const dml::peer_failure& e) {
    REQUIRE(e.rank() == 2);
  }
  // Without a newer view the peer's return is still a mismatch of calls.
  c = scripted{.agrees = false};
  REQUIRE_THROWS_AS(dml::detail::wait_until(c, 1, "an acknowledgement", never, seconds), dml::config_error);
}

TEST_CASE("a table's wait names the failure when the member it blames returned after the survivors agreed") {
  scripted c;
  double seconds = 0;
  const auto blames_1 = [] { return std::optional<member_id>(1); };
  try {
    (void)dml::detail::table_wait(c, "rows", blames_1, seconds);
    FAIL("the wait returned");
  } catch (const dml::peer_failure& e) {
    REQUIRE(e.rank() == 2);
  }
  c = scripted{.agrees = false};
  REQUIRE_THROWS_AS((void)dml::detail::table_wait(c, "rows", blames_1, seconds), dml::config_error);
}

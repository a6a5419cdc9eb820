// SPDX-License-Identifier: BSL-1.0
// The verbs transport's start-up errors, the part of it that runs without an
// RDMA device: a missing device, a named device that does not exist, bad
// environment variables and a null communicator are dml::config_errors that
// name the cause, thrown on every member (a member whose own device is fine
// learns which member failed), and the group stays usable afterwards. On a
// machine with an active port the default construction must succeed instead.
//
// Every rank runs every case, and every case constructs the same number of
// contexts on every rank (construction is collective), so a failed CHECK on
// one rank never leaves the others waiting.
#include "support/catch.hpp"

#include <dml/comm/verbs.hpp>

#include <mpi.h>

#include <cstdlib>
#include <exception>
#include <functional>
#include <string>

namespace {

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int world_size() {
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

// What constructing a context threw: "config_error: ...", "other: ..." or "".
std::string construct(const dml::comm::verbs::options& o = {}) {
  try {
    dml::comm::verbs::context c(MPI_COMM_WORLD, o);
    return "";
  } catch (const dml::config_error& e) {
    return std::string("config_error: ") + e.what();
  } catch (const std::exception& e) {
    return std::string("other: ") + e.what();
  }
}

// Sets an environment variable for one scope, on this rank.
struct scoped_env {
  const char* name;
  scoped_env(const char* n, const char* value) : name(n) { ::setenv(n, value, 1); }
  scoped_env(const scoped_env&) = delete;
  scoped_env& operator=(const scoped_env&) = delete;
  ~scoped_env() { ::unsetenv(name); }
};

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// The group can still run collectives: nothing was left half-done.
void group_still_works() {
  int mine = world_rank() + 1, total = 0;
  REQUIRE(MPI_Allreduce(&mine, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS);
  CHECK(total == world_size() * (world_size() + 1) / 2);
  CHECK_FALSE(dml::detail::mpi_impl::broken());
}

}  // namespace

TEST_CASE("verbs: without a usable device the default construction is a config_error saying why",
          "[errors]") {
  const auto listing = dml::comm::verbs::list_devices();
  const auto got = construct();
  INFO(got);
  if (listing.any_active_port()) {
    CHECK(got.empty());  // a machine with RDMA: the context must come up
  } else {
    CHECK(starts_with(got, "config_error: dml::comm::verbs: "));
    if (listing.devices.empty())
      CHECK_THAT(got, dml_test::contains("no RDMA device found"));
    else
      CHECK_THAT(got, dml_test::contains("no ACTIVE port"));
    if (!listing.error.empty()) CHECK_THAT(got, dml_test::contains("ibv_get_device_list failed"));
  }
  group_still_works();
}

TEST_CASE("verbs: a device that does not exist is a config_error naming it", "[errors]") {
  {
    dml::comm::verbs::options o;
    o.device = "no_such_device";
    const auto got = construct(o);
    INFO(got);
    CHECK(starts_with(got, "config_error: "));
    CHECK_THAT(got, dml_test::contains("RDMA device 'no_such_device' (options) not found"));
  }
  {
    const scoped_env env("DML_VERBS_DEVICE", "no_such_device");
    const auto got = construct();
    INFO(got);
    CHECK(starts_with(got, "config_error: "));
    CHECK_THAT(got, dml_test::contains("RDMA device 'no_such_device' (DML_VERBS_DEVICE) not found"));
  }
  group_still_works();
}

TEST_CASE("verbs: when one member's device is missing, every member gets a config_error", "[errors]") {
  const int me = world_rank();
  const int odd_one = world_size() - 1;
  dml::comm::verbs::options o;
  if (me == odd_one) o.device = "no_such_device";
  const auto got = construct(o);
  INFO(got);
  CHECK(starts_with(got, "config_error: "));
  if (me == odd_one) {
    CHECK_THAT(got, dml_test::contains("no_such_device"));
  } else if (dml::comm::verbs::list_devices().any_active_port()) {
    // This member's own device worked: it is told which member failed, and why.
    CHECK_THAT(got,
               dml_test::contains("member " + std::to_string(odd_one) + " could not open its RDMA device"));
    CHECK_THAT(got, dml_test::contains("no_such_device"));
  }
  group_still_works();
}

TEST_CASE("verbs: malformed selections are config_errors naming the variable or option", "[errors]") {
  struct bad {
    const char* variable;
    const char* value;
    const char* expect;
  };
  for (const bad& b : {bad{"DML_VERBS_PORT", "abc", "DML_VERBS_PORT is 'abc'"},
                       bad{"DML_VERBS_PORT", "0", "DML_VERBS_PORT is 0; ports are numbered from 1"},
                       bad{"DML_VERBS_PORT", "1x", "DML_VERBS_PORT is '1x'"},
                       bad{"DML_VERBS_GID_INDEX", "-1", "DML_VERBS_GID_INDEX is '-1'"},
                       bad{"DML_VERBS_GID_INDEX", "256", "DML_VERBS_GID_INDEX is '256'"}}) {
    const scoped_env env(b.variable, b.value);
    const auto got = construct();
    INFO(got);
    CHECK(starts_with(got, "config_error: "));
    CHECK_THAT(got, dml_test::contains(b.expect));
  }
  dml::comm::verbs::options o;
  o.port = 300;
  CHECK_THAT(construct(o), dml_test::contains("port 300 does not exist"));
  o = {};
  o.queue_depth = 0;
  CHECK_THAT(construct(o), dml_test::contains("queue_depth must be at least 1"));
  o = {};
  o.staging_bytes = 8;
  CHECK_THAT(construct(o), dml_test::contains("staging_bytes must be at least 128"));
  CHECK_THROWS_AS(dml::comm::verbs::context(MPI_COMM_NULL), dml::config_error);
  group_still_works();
}

TEST_CASE("verbs: the device listing says why nothing can be used", "[errors]") {
  const auto listing = dml::comm::verbs::list_devices();
  if (listing.any_active_port()) {
    CHECK(listing.why_unusable().empty());
  } else {
    CHECK_FALSE(listing.why_unusable().empty());
    CHECK((starts_with(listing.why_unusable(), "no RDMA device") ||
           starts_with(listing.why_unusable(), "no ACTIVE RDMA port")));
  }
}

// SPDX-License-Identifier: BSL-1.0
// dml::broadcast on in-process members: values and spans of several sizes
// from several roots in groups of 2, 5 and 8; mismatches that must be
// config_errors on every member; members that fail before or during it;
// broadcasting again over the survivors after a recovery.
//
// Ranks record what they saw and the test asserts from the main thread
// (Catch2's assertions are not thread-safe).
#include <dml/comm/broadcast.hpp>
#include <dml/comm/inproc.hpp>
#include <dml/fault/membership.hpp>

#include "support/catch.hpp"

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace inproc = dml::comm::inproc;
using dml::member_id;

namespace {

struct sample {  // trivially copyable, with padding and several types
  std::uint8_t tag;
  double step;
  std::array<std::int32_t, 3> shape;
  bool operator==(const sample&) const = default;
};

sample value_of(member_id m, int round) {
  return {static_cast<std::uint8_t>(m + 1),
          0.5 * static_cast<double>(m) + round,
          {static_cast<std::int32_t>(m), round, -static_cast<std::int32_t>(m)}};
}

std::vector<double> pattern(std::size_t n, member_id m) {
  std::vector<double> p(n);
  for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<double>(m) * 1e6 + static_cast<double>(i) * 0.25;
  return p;
}

// What each rank saw; each rank thread writes only its own entries.
struct outcomes {
  explicit outcomes(std::size_t n) : kinds(n), messages(n), ranks(n, 999) {}
  std::vector<std::string> kinds, messages;
  std::vector<member_id> ranks;  // peer_failure::rank()
  void record(member_id me, std::string kind, std::string message, member_id who = 999) {
    kinds[me] = std::move(kind);
    messages[me] = std::move(message);
    ranks[me] = who;
  }
};

// Runs body(c) on n members and records how each ended: "ok", or the kind of
// dml error it threw.
template <class Body>
outcomes run_recording(std::size_t n, Body body) {
  outcomes out(n);
  inproc::run(n, [&](inproc::context& c) {
    try {
      body(c);
      out.record(c.rank(), "ok", "");
    } catch (const dml::config_error& e) {
      out.record(c.rank(), "config_error", e.what());
    } catch (const dml::peer_failure& e) {
      out.record(c.rank(), "peer_failure", e.what(), e.rank());
    }
  });
  return out;
}

}  // namespace

TEST_CASE("broadcast: a value from any root reaches every member, in groups of 2, 5 and 8") {
  for (std::size_t n : {2u, 5u, 8u}) {
    const std::vector<member_id> roots{0, n / 2, n - 1};
    std::vector<std::vector<sample>> got(n);
    inproc::run(n, [&](inproc::context& c) {
      for (int round = 0; round < 3; ++round)
        for (member_id root : roots) {
          sample v = value_of(c.rank(), round);  // every member starts with its own
          dml::broadcast(c, v, root);
          got[c.rank()].push_back(v);
        }
    });
    for (member_id m = 0; m < n; ++m) {
      INFO("n = " << n << ", member " << m);
      REQUIRE(got[m].size() == 3 * roots.size());
      std::size_t k = 0;
      for (int round = 0; round < 3; ++round)
        for (member_id root : roots) REQUIRE(got[m][k++] == value_of(root, round));
    }
  }
}

TEST_CASE("broadcast: spans of 0 to 100000 elements arrive whole, the root's own unchanged") {
  for (std::size_t n : {2u, 5u, 8u}) {
    for (std::size_t size : {0u, 1u, 7u, 1000u, 100000u}) {
      const member_id root = size % n;
      std::vector<std::vector<double>> got(n);
      inproc::run(n, [&](inproc::context& c) {
        std::vector<double> data = pattern(size, c.rank());
        dml::broadcast(c, std::span(data), root);
        got[c.rank()] = std::move(data);
      });
      const auto want = pattern(size, root);
      for (member_id m = 0; m < n; ++m) {
        INFO("n = " << n << ", size " << size << ", root " << root << ", member " << m);
        REQUIRE(got[m] == want);
      }
    }
  }
  // Bytes and a fixed extent, too.
  std::vector<std::array<std::uint8_t, 5>> bytes(3);
  inproc::run(3, [&](inproc::context& c) {
    std::array<std::uint8_t, 5> a{};
    a.fill(static_cast<std::uint8_t>(10 + c.rank()));
    dml::broadcast(c, std::span<std::uint8_t, 5>(a), 2);
    bytes[c.rank()] = a;
  });
  for (const auto& a : bytes)
    for (auto x : a) REQUIRE(x == 12);
}

TEST_CASE("broadcast: spans of different sizes are a config_error on every member, nothing copied") {
  for (std::size_t n : {2u, 5u, 8u}) {
    const member_id odd = n - 1;  // passes one element more than the others
    std::vector<std::vector<double>> after(n);
    const auto out = run_recording(n, [&](inproc::context& c) {
      std::vector<double> data = pattern(c.rank() == odd ? 11 : 10, c.rank());
      try {
        dml::broadcast(c, std::span(data), 0);
      } catch (...) {
        after[c.rank()] = data;
        throw;
      }
    });
    for (member_id m = 0; m < n; ++m) {
      INFO("n = " << n << ", member " << m << ": " << out.messages[m]);
      REQUIRE(out.kinds[m] == "config_error");
      REQUIRE(out.messages[m].find("member " + std::to_string(odd) +
                                   " passes 11 elements of 8 bytes, the root "
                                   "(member 0) 10 elements of 8 bytes") != std::string::npos);
      REQUIRE(after[m] == pattern(m == odd ? 11 : 10, m));  // no partial copy
    }
  }
  // The same number of bytes in elements of another size is a mismatch too.
  const auto out = run_recording(3, [](inproc::context& c) {
    std::vector<float> f(4, 1.0f);
    std::vector<double> d(2, 2.0);
    if (c.rank() == 1)
      dml::broadcast(c, std::span(d), 0);
    else
      dml::broadcast(c, std::span(f), 0);
  });
  for (member_id m = 0; m < 3; ++m) {
    INFO(out.messages[m]);
    REQUIRE(out.kinds[m] == "config_error");
    REQUIRE(out.messages[m].find("member 1 passes 2 elements of 8 bytes") != std::string::npos);
  }
}

TEST_CASE("broadcast: a root that is not a live member, or roots that differ, are config_errors everywhere") {
  for (std::size_t n : {2u, 5u, 8u}) {
    auto out = run_recording(n, [&](inproc::context& c) {
      int v = static_cast<int>(c.rank());
      dml::broadcast(c, v, n);  // one past the last member
    });
    for (member_id m = 0; m < n; ++m) {
      INFO(out.messages[m]);
      REQUIRE(out.kinds[m] == "config_error");
      REQUIRE(out.messages[m].find("root " + std::to_string(n) + " is not a live member") !=
              std::string::npos);
    }
    out = run_recording(n, [&](inproc::context& c) {
      int v = 0;
      dml::broadcast(c, v, c.rank() == 1 ? 1 : 0);
    });
    for (member_id m = 0; m < n; ++m) {
      INFO(out.messages[m]);
      REQUIRE(out.kinds[m] == "config_error");
      REQUIRE(out.messages[m].find("disagree on the root: member 0 passes root 0, member 1 root 1") !=
              std::string::npos);
    }
  }
}

TEST_CASE("broadcast: a member in another collective is named, not mistaken for a broadcast") {
  const auto out = run_recording(4, [](inproc::context& c) {
    if (c.rank() == 2) {
      const std::uint64_t other = 7;  // an exchange of its own
      (void)c.exchange(std::as_bytes(std::span(&other, 1)));
      return;
    }
    double v = 1;
    dml::broadcast(c, v, 0);
  });
  REQUIRE(out.kinds[2] == "ok");
  for (member_id m : {0u, 1u, 3u}) {
    INFO(out.messages[m]);
    REQUIRE(out.kinds[m] == "config_error");
    REQUIRE(out.messages[m].find("member 2 is not in a broadcast") != std::string::npos);
  }
}

TEST_CASE("broadcast: a member that fails before or inside it is a peer_failure naming it, not a hang") {
  for (const member_id victim : {0u, 3u}) {  // the root, or another member
    const auto out = run_recording(5, [&](inproc::context& c) {
      if (c.rank() == victim) c.stop();  // dies as a process would
      double v = 42;
      dml::broadcast(c, v, 0);
    });
    for (member_id m = 0; m < 5; ++m) {
      if (m == victim) continue;
      INFO("victim " << victim << ", member " << m << ": " << out.messages[m]);
      REQUIRE(out.kinds[m] == "peer_failure");
      REQUIRE(out.ranks[m] == victim);
    }
  }
  // Killed while the others already wait inside the broadcast.
  const auto out = run_recording(4, [](inproc::context& c) {
    if (c.rank() == 0) c.kill(3);  // 3 stops at its next transport operation
    if (c.rank() == 3) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    int v = 5;
    dml::broadcast(c, v, 0);
  });
  for (member_id m : {0u, 1u, 2u}) {
    INFO(out.messages[m]);
    REQUIRE(out.kinds[m] == "peer_failure");
    REQUIRE(out.ranks[m] == 3);
  }
}

TEST_CASE("broadcast: after a recovery it runs over the survivors; a dead root is a config_error") {
  std::vector<std::string> kinds(6);
  std::vector<int> values(6, -1);
  inproc::run(6, [&](inproc::context& c) {
    if (c.rank() == 2) c.stop();
    try {
      int v = 1;
      dml::broadcast(c, v, 0);
    } catch (const dml::peer_failure&) {
      dml::fault::recover(c);  // the survivors agree on a view without member 2
    }
    int v = static_cast<int>(100 + c.rank());
    dml::broadcast(c, v, 5);
    values[c.rank()] = v;
    try {
      dml::broadcast(c, v, 2);
      kinds[c.rank()] = "ok";
    } catch (const dml::config_error& e) {
      kinds[c.rank()] = std::string("config_error: ") + e.what();
    }
  });
  for (member_id m : {0u, 1u, 3u, 4u, 5u}) {
    INFO(kinds[m]);
    REQUIRE(values[m] == 105);
    REQUIRE(kinds[m].find(
                "config_error: dml::broadcast: root 2 is not a live member (live: 0, 1, 3, 4, 5)") == 0);
  }
}

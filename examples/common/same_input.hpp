// SPDX-License-Identifier: BSL-1.0
// Shared by the trainers whose MPI processes each read (or generate) the
// whole input: a collective check that every rank got the same input, which
// also turns a failure on any rank into the same error on every rank. One
// process then reports it (the leader) and no rank waits in a collective
// for a rank that gave up. Nothing here is dml API.
#pragma once

#include <dml/error.hpp>
#include <dml/fault/membership.hpp>

#include "cli.hpp"
#include "kill_after.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace trainer {

/// Thrown alike on every rank by agree_on_input(): the leader prints it
/// (`prints()`: this rank led when it was thrown and has not printed it
/// yet; read_agreed prints it while MPI runs), and every rank exits with 2
/// for a bad command line (`usage()`), else 1.
class agreed_error : public std::runtime_error {
 public:
  agreed_error(const std::string& what, bool usage, bool prints = true)
      : std::runtime_error(what), usage_(usage), prints_(prints) {}
  [[nodiscard]] bool usage() const noexcept { return usage_; }
  [[nodiscard]] bool prints() const noexcept { return prints_; }

 private:
  bool usage_, prints_;
};

/// The handler for an agreed_error (read_agreed's, then main's): the leader
/// prints "<program>: <what>" (with "(see --help)" for a bad command line)
/// unless it already did; every rank returns the same exit code, 2 for a
/// bad command line, else 1.
inline int agreed_failure(const char* program, const agreed_error& e) {
  if (e.prints()) {
    std::fprintf(stderr, "%s: %s%s\n", program, e.what(), e.usage() ? " (see --help)" : "");
    std::fflush(stderr);
  }
  return e.usage() ? 2 : 1;
}

/// A 64-bit FNV-1a hash of an input, built value by value.
class fingerprint {
 public:
  template <class T>
  requires std::is_trivially_copyable_v<T> &&(!std::is_pointer_v<T>)void add(const T& value) {
    unsigned char bytes[sizeof(T)];
    std::memcpy(bytes, &value, sizeof(T));
    for (unsigned char b : bytes) hash_ = (hash_ ^ b) * 0x100000001b3ULL;
  }
  /// Many bytes at once, eight at a time (a data set of 10^8 values in
  /// well under a second), then the rest one by one.
  void add_bytes(std::span<const std::byte> bytes) {
    add(bytes.size());
    std::size_t i = 0;
    for (; i + 8 <= bytes.size(); i += 8) {
      std::uint64_t word;
      std::memcpy(&word, bytes.data() + i, 8);
      hash_ = (hash_ ^ word) * 0x100000001b3ULL;
      hash_ ^= hash_ >> 29;
    }
    for (; i < bytes.size(); ++i) hash_ = (hash_ ^ static_cast<unsigned char>(bytes[i])) * 0x100000001b3ULL;
  }
  template <class T>
  requires std::is_trivially_copyable_v<T>
  void add_span(std::span<const T> values) { add_bytes(std::as_bytes(values)); }
  [[nodiscard]] std::uint64_t value() const noexcept { return hash_; }

 private:
  std::uint64_t hash_ = 0xcbf29ce484222325ULL;
};

namespace detail {
enum class outcome : unsigned char { ok = 0, usage = 1, failed = 2 };
}  // namespace detail

/// Collective over the live members of `comm`. Each rank passes what
/// loading its input gave: `failure` (null when it succeeded), else the
/// input's `hash` and a `summary` naming it for people ("300 users x 300
/// items, ..."). Returns when every rank succeeded with the same hash;
/// otherwise throws the same agreed_error on every rank: the lowest
/// failing rank's error (usage() when it was a cli::usage_error), or, when
/// all succeeded, "<what> differs between ranks: ..." with the summaries
/// of the first rank that differs from rank 0 and of rank 0.
template <class Comm>
void agree_on_input(Comm& comm, const std::exception_ptr& failure, std::uint64_t hash,
                    const std::string& summary, const std::string& what) {
  detail::outcome mine = detail::outcome::ok;
  std::string text = summary;
  if (failure) {
    try {
      std::rethrow_exception(failure);
    } catch (const cli::usage_error& e) {
      mine = detail::outcome::usage;
      text = e.what();
    } catch (const std::exception& e) {
      mine = detail::outcome::failed;
      text = e.what();
    }
  }
  constexpr std::size_t head = 1 + sizeof(std::uint64_t);
  std::vector<std::byte> record(head + text.size());
  record[0] = static_cast<std::byte>(mine);
  std::memcpy(record.data() + 1, &hash, sizeof hash);
  std::memcpy(record.data() + head, text.data(), text.size());
  // A member that dies meanwhile (it was still loading, say) is left out:
  // the survivors agree on a view without it and compare their inputs.
  die_here_if_asked("DML_EXAMPLES_DIE_BEFORE_AGREE", comm.rank());
  std::vector<std::vector<std::byte>> records;
  for (;;) {
    try {
      records = comm.exchange(record);
      break;
    } catch (const dml::peer_failure&) {
      const auto before = comm.view().epoch;
      dml::fault::recover(comm);  // throws under fault::policy::abort, naming the member
      if (comm.view().epoch == before) throw;
    }
  }
  const auto& live = comm.view().live;
  const bool leads = !live.empty() && live.front() == comm.rank();  // the one that says it
  struct entry {
    detail::outcome result;
    std::uint64_t hash;
    std::string text;
  };
  std::vector<entry> all;
  for (const auto& r : records) {
    if (r.size() < head || static_cast<unsigned char>(r[0]) > 2)
      throw agreed_error("a rank sent a malformed input record (" + std::to_string(r.size()) + " bytes)",
                         false, leads);
    entry e{static_cast<detail::outcome>(r[0]), 0,
            std::string(reinterpret_cast<const char*>(r.data()) + head, r.size() - head)};
    std::memcpy(&e.hash, r.data() + 1, sizeof e.hash);
    all.push_back(std::move(e));
  }
  auto name = [&](std::size_t i) {
    return "rank " + std::to_string(i < live.size() ? live[i] : i) + " of " + std::to_string(all.size());
  };
  std::size_t failed = 0;
  for (const auto& e : all) failed += e.result != detail::outcome::ok ? 1 : 0;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (all[i].result == detail::outcome::ok) continue;
    bool same = failed == all.size();  // every rank failed alike: the message alone
    for (const auto& e : all) same = same && e.text == all[i].text;
    throw agreed_error(same ? all[i].text : name(i) + ": " + all[i].text,
                       all[i].result == detail::outcome::usage, leads);
  }
  auto described = [&](std::size_t i) {
    char hex[24];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(all[i].hash));
    return name(i) + " has " + all[i].text + " (fingerprint " + hex + ")";
  };
  for (std::size_t i = 1; i < all.size(); ++i)
    if (all[i].hash != all[0].hash)
      throw agreed_error(what + " differs between ranks: " + described(i) + ", " + described(0) +
                             "; every process must read the same input",
                         false, leads);
}

/// `read()` the input on every process of `launch`, then, under MPI,
/// agree_on_input over what `describe()` returns for it (its hash and a
/// summary; called also when the read failed, on what it left): every
/// process returns having read the same input, or throws the same
/// agreed_error. In-process ranks share one read: `read()` as it is.
///
/// Under MPI the leader prints the error here, as "<program>: <what>", and
/// the others wait for it in a barrier before they throw. A process that
/// ends with a non-zero status makes mpiexec abort the job; had the others
/// ended first, the leader could be killed before it printed (a CI run
/// lost the line so). The error thrown then no longer prints().
template <class Launcher, class Read, class Describe>
void read_agreed(Launcher& launch, const char* program, Read&& read, Describe&& describe,
                 const std::string& what) {
  if (launch.in_process()) {
    read();
    return;
  }
  std::exception_ptr failure;
  try {
    read();
  } catch (const std::exception&) {
    failure = std::current_exception();
  }
  const auto described = describe();  // (hash, summary); not bound: clang < 16 cannot capture bindings
  launch.run([&](auto& comm) {
    try {
      agree_on_input(comm, failure, described.first, described.second, what);
    } catch (const agreed_error& e) {
      agreed_failure(program, e);
      try {
        comm.barrier();
      } catch (const std::exception&) {
        // A member died meanwhile: the line is out, or the leader is gone
        // and nobody can print it any more.
      }
      throw agreed_error(e.what(), e.usage(), false);
    }
  });
}

}  // namespace trainer

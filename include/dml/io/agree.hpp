// SPDX-License-Identifier: BSL-1.0
/// @file
/// Agreeing on an input before training. Under `mpiexec` every process
/// reads its input itself, and nothing else checks that they read the same
/// one: a vector checks that its members agree on its length and policies,
/// not on the data. An older copy of a file on one node then trains one
/// model on a mix of two sets, and the run exits 0.
///
/// `agree_on_input(comm, report)` is the check, a collective over the live
/// members. Each member reports what loading its input gave (an exception,
/// or a fingerprint of the input and a summary for people); every member
/// returns when all loaded the same input, and otherwise every member
/// throws the same `input_error`:
///
///     dml::io::fingerprint f;
///     f.add_span(std::span<const float>(x.data(), x.size()));
///     dml::io::agree_on_input(comm, {.fingerprint = f.value(), .summary = "60000 x 784"},
///                             "the training set");
///
/// A load that failed on some member is reported the same way, so one
/// member's missing file ends every member with the same error instead of
/// leaving the others waiting in their first collective:
///
///     dml::io::input_report r;
///     try { load(); r.fingerprint = ...; } catch (...) { r.failure = std::current_exception(); }
///     try { dml::io::agree_on_input(comm, r, "the data"); }
///     catch (const dml::io::input_error& e) { if (e.reporter()) print(e.what()); return 1; }
///
/// A member that dies before or during the check is left out: the others
/// agree on a view without it (`dml::fault::recover`) and compare their
/// inputs among themselves. Under `dml::fault::policy::abort`, or over a
/// transport whose group cannot shrink (`verbs`), they throw `peer_failure`
/// naming it instead.
#pragma once

#include <dml/comm/concepts.hpp>
#include <dml/error.hpp>
#include <dml/fault/membership.hpp>
#include <dml/fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

DML_BEGIN_NAMESPACE
namespace io {

/// A 64-bit fingerprint of an input (FNV-1a with a shift per word), built
/// value by value; the same values in the same order give the same
/// fingerprint on every platform of the same byte order.
class fingerprint {
 public:
  /// One value's bytes.
  template <class T>
  requires std::is_trivially_copyable_v<T> &&(!std::is_pointer_v<T>)void add(const T& value) {
    unsigned char bytes[sizeof(T)];
    std::memcpy(bytes, &value, sizeof(T));
    for (unsigned char b : bytes) hash_ = (hash_ ^ b) * prime;
  }
  /// Many bytes at once, and their count: eight at a time (a data set of
  /// 10^8 values in well under a second), then the rest one by one.
  void add_bytes(std::span<const std::byte> bytes) {
    add(bytes.size());
    std::size_t i = 0;
    for (; i + 8 <= bytes.size(); i += 8) {
      std::uint64_t word;
      std::memcpy(&word, bytes.data() + i, 8);
      hash_ = (hash_ ^ word) * prime;
      hash_ ^= hash_ >> 29;
    }
    for (; i < bytes.size(); ++i) hash_ = (hash_ ^ static_cast<unsigned char>(bytes[i])) * prime;
  }
  /// The values of a span, and their count.
  template <class T>
  requires std::is_trivially_copyable_v<T>
  void add_span(std::span<const T> values) { add_bytes(std::as_bytes(values)); }
  /// The fingerprint so far.
  [[nodiscard]] std::uint64_t value() const noexcept { return hash_; }

 private:
  static constexpr std::uint64_t prime = 0x100000001b3ULL;
  std::uint64_t hash_ = 0xcbf29ce484222325ULL;
};

/// What one member's loading of its input gave (agree_on_input).
struct input_report {
  /// Null when the input loaded; else what loading threw. Its what() is the
  /// message every member gets.
  std::exception_ptr failure{};
  /// The failure is the command line's fault, not the input's (a program
  /// exits with 2 for it, by the usual convention); carried to every member.
  bool usage = false;
  /// The input's fingerprint (io::fingerprint), compared between members.
  std::uint64_t fingerprint = 0;
  /// The input for people ("60000 samples x 784 features"), named in the
  /// error when fingerprints differ.
  std::string summary{};
};

/// Thrown alike on every member by agree_on_input: the same what(), the
/// same usage(). reporter() is true on one member only, the leader of the
/// group when the error was agreed (io::leader), so that one member prints
/// it.
class input_error : public error {
 public:
  input_error(const std::string& what, bool usage, bool reporter)
      : error(what), usage_(usage), reporter_(reporter) {}
  /// The failure was reported as the command line's (input_report::usage).
  [[nodiscard]] bool usage() const noexcept { return usage_; }
  /// This member is the one to report the error.
  [[nodiscard]] bool reporter() const noexcept { return reporter_; }

 private:
  bool usage_, reporter_;
};

namespace detail {

enum class input_outcome : unsigned char { ok = 0, usage = 1, failed = 2 };

struct input_entry {
  input_outcome result;
  std::uint64_t fingerprint;
  std::string text;
};

inline constexpr std::size_t input_head = 1 + sizeof(std::uint64_t);

inline std::vector<std::byte> input_record(const input_report& mine) {
  input_outcome result = input_outcome::ok;
  std::string text = mine.summary;
  if (mine.failure) {
    result = mine.usage ? input_outcome::usage : input_outcome::failed;
    try {
      std::rethrow_exception(mine.failure);
    } catch (const std::exception& e) {
      text = e.what();
    } catch (...) {
      text = "loading the input threw something that is not a std::exception";
    }
  }
  std::vector<std::byte> record(input_head + text.size());
  record[0] = static_cast<std::byte>(result);
  std::memcpy(record.data() + 1, &mine.fingerprint, sizeof mine.fingerprint);
  if (!text.empty()) std::memcpy(record.data() + input_head, text.data(), text.size());
  return record;
}

}  // namespace detail

/// Collective over the live members of `comm`: every member passes what
/// loading its input gave. Returns when every member loaded an input with
/// the same fingerprint. Otherwise throws the same input_error on every
/// member:
/// - some member failed: the lowest failing member's message, prefixed
///   with "rank R of N: " unless every member failed with that message,
///   usage() as that member reported;
/// - all loaded, fingerprints differ: "<what> differs between ranks: rank
///   R of N has <summary> (fingerprint <hex>), rank 0 of N has ...; every
///   process must read the same input", naming the first member that
///   differs from the lowest and the lowest.
/// A member that dies meanwhile is left out (see the file's comment).
/// @tparam Comm a transport context (dml::comm::transport) with a view
template <class Comm>
void agree_on_input(Comm& comm, const input_report& mine, std::string_view what = "the input") {
  const std::vector<std::byte> record = detail::input_record(mine);
  std::vector<std::vector<std::byte>> records;
  for (;;) {
    try {
      records = comm.exchange(record);
      break;
    } catch (const peer_failure&) {
      if constexpr (comm::shrinkable_transport<Comm>) {
        const auto before = comm.view().epoch;
        fault::recover(comm);  // throws under fault::policy::abort, naming the member
        if (comm.view().epoch == before) throw;
      } else {
        throw;  // a group that cannot shrink (verbs): the failure is the caller's
      }
    }
  }
  const auto& live = comm.view().live;
  const bool leads = !live.empty() && live.front() == comm.rank();
  std::vector<detail::input_entry> all;
  all.reserve(records.size());
  for (const auto& r : records) {
    if (r.size() < detail::input_head || static_cast<unsigned char>(r[0]) > 2)
      throw input_error("a rank sent a malformed input record (" + std::to_string(r.size()) + " bytes)",
                        false, leads);
    detail::input_entry e{static_cast<detail::input_outcome>(r[0]), 0,
                          std::string(reinterpret_cast<const char*>(r.data()) + detail::input_head,
                                      r.size() - detail::input_head)};
    std::memcpy(&e.fingerprint, r.data() + 1, sizeof e.fingerprint);
    all.push_back(std::move(e));
  }
  auto name = [&](std::size_t i) {
    return "rank " + std::to_string(i < live.size() ? live[i] : i) + " of " + std::to_string(all.size());
  };
  std::size_t failed = 0;
  for (const auto& e : all) failed += e.result != detail::input_outcome::ok ? 1 : 0;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (all[i].result == detail::input_outcome::ok) continue;
    bool same = failed == all.size();  // every member failed alike: the message alone
    for (const auto& e : all) same = same && e.text == all[i].text;
    throw input_error(same ? all[i].text : name(i) + ": " + all[i].text,
                      all[i].result == detail::input_outcome::usage, leads);
  }
  auto described = [&](std::size_t i) {
    char hex[24];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(all[i].fingerprint));
    return name(i) + " has " + all[i].text + " (fingerprint " + hex + ")";
  };
  for (std::size_t i = 1; i < all.size(); ++i)
    if (all[i].fingerprint != all[0].fingerprint)
      throw input_error(std::string(what) + " differs between ranks: " + described(i) + ", " + described(0) +
                            "; every process must read the same input",
                        false, leads);
}

}  // namespace io
DML_END_NAMESPACE

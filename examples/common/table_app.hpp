// SPDX-License-Identifier: BSL-1.0
// Shared by the applications written on parameter tables (dml-mf, dml-lda):
// the options they have in common (where the ranks run, the consistency
// policy and its slack, fault injection), the policy named on the command
// line as a compile-time one, the table statistics summed over the members
// through rows of the table itself, and the line printed for a view change.
// Nothing here is dml API; an application copied out of examples/ takes
// this file (and cli.hpp, launcher.hpp and launcher.cpp) along.
#pragma once

#include <dml/fault/membership.hpp>
#include <dml/table.hpp>

#include "cli.hpp"
#include "launcher.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trainer {

/// The options every table application shares.
struct table_settings {
  std::string transport = "inproc", consistency = "bsp";
  std::size_t ranks = 4, slack = 2;
  bool ranks_given = false, slack_given = false;
  /// --kill-after R@SECONDS: in-process member R dies that long after the
  /// program started (at its next transport operation).
  std::vector<std::pair<std::size_t, double>> kill_after;
  /// --kill R@EPOCH: in-process member R stops halfway through epoch
  /// (iteration) EPOCH, as if its process had died there.
  std::vector<std::pair<std::size_t, std::size_t>> kill_at;
  /// --keep-through-sync: dml::table_options::keep_through_sync.
  bool keep_through_sync = false;
  /// --read-ahead (default) / --no-read-ahead: read_ahead() below.
  bool read_ahead = true;
};

/// The table options the shared settings choose.
[[nodiscard]] inline dml::table_options table_options_of(const table_settings& s) {
  dml::table_options o;
  o.keep_through_sync = s.keep_through_sync;
  return o;
}

/// When the program started (the clock of --kill-after).
inline const std::chrono::steady_clock::time_point table_program_start = std::chrono::steady_clock::now();

/// "R@X": member R and a number X > 0 (seconds, or an epoch), or nullopt.
template <class Number>
std::optional<std::pair<std::size_t, Number>> member_at(std::string_view text, Number min) {
  const auto at = text.find('@');
  if (at == std::string_view::npos) return std::nullopt;
  const auto member = cli::to_number<std::size_t>(text.substr(0, at), 0);
  const auto when = cli::to_number<Number>(text.substr(at + 1), min);
  if (!member || !when) return std::nullopt;
  return std::pair{*member, *when};
}

/// Adds the shared options to `app`; `epoch_word` names what --kill counts
/// ("epoch" or "iteration").
inline void add_table_options(CLI::App& app, table_settings& s, const std::string& name,
                              const std::string& epoch_word) {
  app.add_option("--transport", s.transport,
                 "inproc (threads, default) | mpi_rma | mpi (one rank per\nMPI process: mpiexec -n N " +
                     name + " --transport mpi_rma)")
      ->option_text("NAME")
      ->check(cli::one_of({"inproc", "mpi_rma", "mpi"}));
  app.add_option("--ranks", s.ranks, "in-process ranks (threads) for inproc, default 4")
      ->option_text("N")
      ->check(cli::whole_number());
  app.add_option("--consistency", s.consistency, "bsp | ssp | asp, default bsp (docs/tables.md)")
      ->option_text("NAME")
      ->check(cli::one_of({"bsp", "ssp", "asp"}));
  app.add_option("--slack", s.slack, "the slack of ssp: 1 .. 1000 clocks, default 2")
      ->option_text("S")
      ->check(cli::number_where<std::size_t>([](std::size_t v) { return v >= 1 && v <= 1000; },
                                             "needs 1 .. 1000 (bsp is slack 0, asp has none)"));
  app.add_option_function<std::vector<std::string>>(
         "--kill-after",
         [&s](const std::vector<std::string>& kills) {
           for (const auto& k : kills) s.kill_after.push_back(*member_at<double>(k, 0.0));
         },
         "fault injection (in-process): member R dies S seconds\nafter the program started; repeatable")
      ->option_text("R@S")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->check(CLI::Validator(
          [](std::string& v) {
            return member_at<double>(v, 0.0) ? std::string()
                                             : "needs MEMBER@SECONDS (e.g. 3@1.5), got '" + v + "'";
          },
          "R@S"));
  app.add_option_function<std::vector<std::string>>(
         "--kill",
         [&s](const std::vector<std::string>& kills) {
           for (const auto& k : kills) s.kill_at.push_back(*member_at<std::size_t>(k, 1));
         },
         "fault injection (in-process): member R stops halfway\nthrough " + epoch_word + " E; repeatable")
      ->option_text("R@E")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->check(CLI::Validator(
          [epoch_word](std::string& v) {
            return member_at<std::size_t>(v, 1) ? std::string()
                                                : "needs MEMBER@" + epoch_word + " (e.g. 2@3, " + epoch_word +
                                                      "s from 1), got '" + v + "'";
          },
          "R@E"));
}

/// Adds --keep-through-sync (for an application whose model stays right
/// when a failed member's updates up to a sync are kept: dml-mf).
inline void add_keep_option(CLI::App& app, table_settings& s, const std::string& epoch_word) {
  app.add_flag("--keep-through-sync", s.keep_through_sync,
               "when a member fails, keep what it added up to the last\n" + epoch_word +
                   "'s sync (each sync then all-gathers the table);\notherwise all it added is withdrawn "
                   "(docs/tables.md)");
}

/// Adds --read-ahead / --no-read-ahead (for an application that reads a
/// clock's rows through read_ahead() below).
inline void add_read_ahead_option(CLI::App& app, table_settings& s) {
  app.add_flag("--read-ahead,!--no-read-ahead", s.read_ahead,
               "read each clock's rows of others in one batch before\nits steps (default; --no-read-ahead: a "
               "fetch per row\nat its first read)");
}

/// Reads the rows of others among `rows` with one read_rows call (a fetch
/// per owner), before a clock's steps read them one by one: those reads
/// then find the rows in the cache, fresh enough for the whole clock,
/// instead of waiting for a round trip to the owner each (docs/tables.md,
/// "Reading a clock's rows ahead"). `rows` may hold duplicates and rows
/// this member owns; it is left sorted, without them. Nothing is returned:
/// the reads that follow are what see the rows (and this member's own
/// updates of them).
template <class Table>
void read_ahead(Table& t, std::vector<std::size_t>& rows, dml::member_id me) {
  std::erase_if(rows, [&](std::size_t r) { return t.owner(r) == me; });
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  (void)t.read_rows(rows);
}

/// Checks what concerns several shared options (after parsing); `epochs`
/// is the number of epochs (iterations) the run has. Throws usage_error.
inline void check_table_settings(CLI::App& app, table_settings& s, std::size_t epochs,
                                 const std::string& epoch_word) {
  s.ranks_given = app.count("--ranks") > 0;
  s.slack_given = app.count("--slack") > 0;
  if (s.ranks > 256)
    throw usage_error("--ranks " + std::to_string(s.ranks) + " is too many (at most 256 threads)");
  if (s.transport != "inproc" && s.ranks_given)
    throw usage_error("--ranks is for --transport inproc; with " + s.transport +
                      " every MPI process is one rank (mpiexec -n N)");
  if (s.slack_given && s.consistency != "ssp")
    throw usage_error("--slack is the slack of --consistency ssp (" + s.consistency +
                      (s.consistency == "bsp" ? " has slack 0)" : " has no bound)"));
  if ((!s.kill_after.empty() || !s.kill_at.empty()) && s.transport != "inproc")
    throw usage_error(
        "--kill and --kill-after are for in-process ranks; under MPI kill a process from outside");
  std::vector<char> killed(s.ranks, 0);
  auto check_member = [&](std::size_t m, const std::string& option) {
    if (m >= s.ranks)
      throw usage_error(option + " " + std::to_string(m) + "@...: there are only " + std::to_string(s.ranks) +
                        " ranks");
    if (killed[m])
      throw usage_error(option + " " + std::to_string(m) + "@...: member " + std::to_string(m) +
                        " is killed twice");
    killed[m] = 1;
  };
  for (const auto& k : s.kill_after) check_member(k.first, "--kill-after");
  for (const auto& k : s.kill_at) {
    check_member(k.first, "--kill");
    if (k.second > epochs)
      throw usage_error("--kill " + std::to_string(k.first) + "@" + std::to_string(k.second) +
                        ": the run has only " + std::to_string(epochs) + " " + epoch_word + "s");
  }
  std::size_t kills = 0;
  for (char k : killed) kills += k ? 1 : 0;
  if (kills >= s.ranks && s.ranks > 0)
    throw usage_error("every one of the " + std::to_string(s.ranks) +
                      " ranks would be killed; one must survive");
}

/// The launcher for s: in-process threads (with the planned --kill-after
/// deaths) or this process as one MPI rank.
inline launcher table_launcher(table_settings& s, int& argc, char**& argv) {
  std::vector<std::pair<std::size_t, std::chrono::steady_clock::time_point>> kills;
  for (const auto& [member, seconds] : s.kill_after)
    kills.emplace_back(member,
                       table_program_start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                 std::chrono::duration<double>(seconds)));
  return launcher(s.transport, s.ranks, argc, argv, kills);
}

/// "bsp", "ssp (slack 2)" or "asp".
inline std::string consistency_name(const table_settings& s) {
  return s.consistency == "ssp" ? "ssp (slack " + std::to_string(s.slack) + ")" : s.consistency;
}

/// The consistency policy named in s, chosen at run time: bsp, asp, or ssp
/// with s.slack. A table over `dml::consistency::any` reads its slack when
/// it is built, so the training loop is compiled once per transport rather
/// than once per policy and slack.
inline dml::consistency::any table_consistency(const table_settings& s) {
  namespace c = dml::consistency;
  if (s.consistency == "asp") return c::asp{};
  if (s.consistency == "ssp") return c::any::ssp(s.slack);
  return c::bsp{};
}

/// --kill R@E: whether member `rank` stops in epoch `epoch`.
inline bool killed_in(const table_settings& s, std::size_t rank, std::size_t epoch) {
  for (const auto& [member, when] : s.kill_at)
    if (member == rank && when == epoch) return true;
  return false;
}

/// Stops this member as if its process had died (--kill); only in-process
/// contexts can (the option is refused under MPI).
template <class Comm>
void stop_member(Comm& comm) {
  if constexpr (requires { comm.stop(); }) comm.stop();
}

/// Table statistics summed over the members (what every member counted
/// since it built the table). Seconds waited are counted in milliseconds
/// and bytes in KiB, so that the sums are whole numbers that fit 32-bit
/// rows.
struct table_totals {
  double reads = 0, cache_hits = 0, reads_waited = 0, wait_seconds = 0, kib_sent = 0, kib_received = 0;
};

/// One line describing t.
inline std::string describe(const table_totals& t) {
  char text[256];
  std::snprintf(text, sizeof text,
                "table: %.0f reads, %.0f cache hits, %.0f waited (%.3f s), %.0f KiB sent, %.0f KiB received",
                t.reads, t.cache_hits, t.reads_waited, t.wait_seconds, t.kib_sent, t.kib_received);
  return text;
}

/// Keeps the statistics of all members in `count` rows of a table of T
/// from `first` on (element 0 of each): every member adds what it counted
/// since its last add(), and after a sync() any member reads the sums.
/// A member that fails takes its share with it (the table withdraws its
/// updates; with keep_through_sync only those after the last sync), so the
/// sums then cover the survivors (and what it added before that sync).
template <class T>
class table_stats_rows {
 public:
  static constexpr std::size_t count = 6;

  explicit table_stats_rows(std::size_t first) : first_(first) {}

  /// Adds this member's counters since the last call, as updates of its
  /// current clock.
  template <class Table>
  void add(Table& t) {
    const auto& st = t.stats();
    const std::int64_t now[count] = {static_cast<std::int64_t>(st.reads),
                                     static_cast<std::int64_t>(st.cache_hits),
                                     static_cast<std::int64_t>(st.reads_waited),
                                     static_cast<std::int64_t>(std::floor(st.wait_seconds * 1000)),
                                     static_cast<std::int64_t>(st.bytes_sent / 1024),
                                     static_cast<std::int64_t>(st.bytes_received / 1024)};
    delta_.assign(t.row_length(), T{});
    for (std::size_t i = 0; i < count; ++i) {
      delta_[0] = static_cast<T>(now[i] - reported_[i]);
      reported_[i] = now[i];
      if (delta_[0] != T{}) t.update(first_ + i, delta_);
    }
  }

  /// The sums as this member reads them now (exact after a sync()).
  template <class Table>
  table_totals read(Table& t) const {
    double v[count];
    for (std::size_t i = 0; i < count; ++i) v[i] = static_cast<double>(t.read(first_ + i)[0]);
    return {v[0], v[1], v[2], v[3] / 1000, v[4], v[5]};
  }

 private:
  std::size_t first_;
  std::int64_t reported_[count] = {};
  std::vector<T> delta_;
};

}  // namespace trainer

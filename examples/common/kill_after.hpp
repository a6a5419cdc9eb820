// SPDX-License-Identifier: BSL-1.0
// Shared by the trainers: --kill-after R@S, fault injection for in-process
// ranks (member R stops S seconds after the trainer started, at its next
// transport operation, as if its process had died). Under MPI a process is
// killed from outside instead (scripts/kill-driver.py does both).
#pragma once

#include "cli.hpp"

#include <chrono>
#include <csignal>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trainer {

/// Fault injection at a chosen point, for tests under MPI: when the
/// environment variable `variable` names `rank`, the process ends itself
/// with SIGKILL there -- a moment a kill from outside hits only by chance.
/// DML_EXAMPLES_DIE_BEFORE_FINAL: the reporting member, where it would print
/// the 'final:' line (after the last report's collectives);
/// DML_EXAMPLES_DIE_BEFORE_AGREE: a member that has loaded its input, before
/// the ranks compare their inputs (same_input.hpp).
inline void die_here_if_asked(const char* variable, std::size_t rank) {
  const char* v = std::getenv(variable);
  if (v == nullptr || *v == '\0' || std::to_string(rank) != v) return;
  std::fflush(stdout);
  std::raise(SIGKILL);
}

/// (member, seconds after the start) per --kill-after.
using kill_plan = std::vector<std::pair<std::size_t, double>>;

/// When the trainer started (the clock of --kill-after).
inline const std::chrono::steady_clock::time_point program_start = std::chrono::steady_clock::now();

/// "R@S": member R and seconds S, or nullopt.
inline std::optional<std::pair<std::size_t, double>> member_at_seconds(std::string_view text) {
  const auto at = text.find('@');
  if (at == std::string_view::npos) return std::nullopt;
  const auto member = cli::to_number<std::size_t>(text.substr(0, at), 0);
  const auto seconds = cli::to_number<double>(text.substr(at + 1), 0.0);
  if (!member || !seconds) return std::nullopt;
  return std::pair{*member, *seconds};
}

/// Declares --kill-after (repeatable) on `app`, filling `kills`.
inline void add_kill_after(CLI::App& app, kill_plan& kills) {
  app.add_option_function<std::vector<std::string>>(
         "--kill-after",
         [&kills](const std::vector<std::string>& given) {
           for (const auto& k : given) kills.push_back(*member_at_seconds(k));
         },
         "fault injection (in-process): member R dies S seconds\nafter the trainer started; repeatable")
      ->option_text("R@S")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->check(CLI::Validator(
          [](std::string& v) {
            return member_at_seconds(v) ? std::string()
                                        : "needs MEMBER@SECONDS (e.g. 3@1.5), got '" + v + "'";
          },
          "R@S"));
}

/// Throws cli::usage_error for kills under MPI, of a member that does not
/// exist, of one member twice, or of every member.
inline void check_kills(const kill_plan& kills, const std::string& transport, std::size_t ranks) {
  if (kills.empty()) return;
  if (transport != "inproc")
    throw cli::usage_error(
        "--kill-after is for in-process ranks; under MPI kill a process from outside "
        "(scripts/kill-driver.py does both)");
  std::vector<char> killed(ranks, 0);
  for (const auto& [member, seconds] : kills) {
    if (member >= ranks)
      throw cli::usage_error("--kill-after " + std::to_string(member) + "@...: there are only " +
                             std::to_string(ranks) + " ranks");
    if (killed[member])
      throw cli::usage_error("--kill-after " + std::to_string(member) + "@...: killed twice");
    killed[member] = 1;
  }
  if (kills.size() >= ranks)
    throw cli::usage_error("every one of the " + std::to_string(ranks) +
                           " ranks would be killed; one must survive");
}

/// The plan as times, for the launcher.
inline std::vector<std::pair<std::size_t, std::chrono::steady_clock::time_point>> planned_kills(
    const kill_plan& kills) {
  std::vector<std::pair<std::size_t, std::chrono::steady_clock::time_point>> out;
  for (const auto& [member, seconds] : kills)
    out.emplace_back(member, program_start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                 std::chrono::duration<double>(seconds)));
  return out;
}

}  // namespace trainer

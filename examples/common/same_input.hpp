// SPDX-License-Identifier: BSL-1.0
// Shared by the trainers whose MPI processes each read (or generate) the
// whole input: dml::io::agree_on_input, the collective check that every
// rank got the same input, which also turns a failure on any rank into the
// same error on every rank, wrapped for the trainers' launcher. One process
// then reports it (the leader) and no rank waits in a collective for a rank
// that gave up.
#pragma once

#include <dml/io/agree.hpp>

#include "cli.hpp"
#include "kill_after.hpp"

#include <cstdio>
#include <exception>
#include <string>
#include <tuple>

namespace trainer {

/// Thrown alike on every rank by read_agreed (dml::io::input_error): the
/// leader prints it (`reporter()`: this rank led when it was thrown and has
/// not printed it yet; read_agreed prints it while MPI runs), and every
/// rank exits with 2 for a bad command line (`usage()`), else 1.
using agreed_error = dml::io::input_error;

/// The handler for an agreed_error (read_agreed's, then main's): the leader
/// prints "<program>: <what>" (with "(see --help)" for a bad command line)
/// unless it already did; every rank returns the same exit code, 2 for a
/// bad command line, else 1.
inline int agreed_failure(const char* program, const agreed_error& e) {
  if (e.reporter()) {
    std::fprintf(stderr, "%s: %s%s\n", program, e.what(), e.usage() ? " (see --help)" : "");
    std::fflush(stderr);
  }
  return e.usage() ? 2 : 1;
}

/// An input's fingerprint, as the library computes it.
using fingerprint = dml::io::fingerprint;

/// `read()` the input on every process of `launch`, then, under MPI,
/// dml::io::agree_on_input over what `describe()` returns for it (its
/// fingerprint and a summary; called also when the read failed, on what it
/// left), a cli::usage_error reported as the command line's: every
/// process returns having read the same input, or throws the same
/// agreed_error. In-process ranks share one read: `read()` as it is.
///
/// Under MPI the leader prints the error here, as "<program>: <what>", and
/// the others wait for it in a barrier before they throw. A process that
/// ends with a non-zero status makes mpiexec abort the job; had the others
/// ended first, the leader could be killed before it printed (a CI run
/// lost the line so). The error thrown then is no longer reporter().
template <class Launcher, class Read, class Describe>
void read_agreed(Launcher& launch, const char* program, Read&& read, Describe&& describe,
                 const std::string& what) {
  if (launch.in_process()) {
    read();
    return;
  }
  dml::io::input_report report;
  try {
    read();
  } catch (const cli::usage_error&) {
    report.failure = std::current_exception();
    report.usage = true;
  } catch (const std::exception&) {
    report.failure = std::current_exception();
  }
  std::tie(report.fingerprint, report.summary) = describe();
  launch.run([&](auto& comm) {
    try {
      // A member that dies meanwhile (it was still loading, say) is left
      // out: the survivors agree on a view without it and compare theirs.
      die_here_if_asked("DML_EXAMPLES_DIE_BEFORE_AGREE", comm.rank());
      dml::io::agree_on_input(comm, report, what);
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

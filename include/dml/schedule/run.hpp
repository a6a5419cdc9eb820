// SPDX-License-Identifier: BSL-1.0
/// @file
/// `dml::schedule::run(comm, program, engine, iterations)`: runs a
/// scheduled model-parallel program with an engine.
#pragma once

#include <dml/comm/concepts.hpp>
#include <dml/fwd.hpp>
#include <dml/schedule/concepts.hpp>
#include <dml/schedule/stats.hpp>

#include <cstdint>
#include <type_traits>

DML_BEGIN_NAMESPACE
namespace schedule {

/// Collective over the live members of `comm`: runs `iterations`
/// iterations of `program` with `engine` (dml::schedule::dynamic or
/// dml::schedule::static_rotation). The program is this member's: its
/// model replica, its data, its state; see dml/schedule/concepts.hpp for
/// what each engine calls.
template <class Transport, class Program, class Engine>
run_stats run(Transport& comm, Program& program, const Engine& engine, std::uint64_t iterations) {
  static_assert(comm::transport<Transport>,
                "dml::schedule::run: the first argument must be a transport context modelling "
                "dml::comm::transport (e.g. the dml::comm::inproc::context that inproc::run passes)");
  static_assert(schedule::engine<Engine>,
                "dml::schedule::run: the third argument must be an engine (dml::schedule::dynamic, "
                "dml::schedule::static_rotation, or a type with policy_slot = dml::slot::engine)");
  return engine.run(comm, program, iterations);
}

}  // namespace schedule
DML_END_NAMESPACE

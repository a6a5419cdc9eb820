// SPDX-License-Identifier: BSL-1.0
/// @file
/// Forward declarations of dml's public types and the policy slots.
#pragma once

#include <dml/version.hpp>

#include <cstddef>
#include <cstdint>

DML_BEGIN_NAMESPACE

/// Identifies a member (rank) of a group. After a failure members keep their
/// original ids; graphs over survivors are expressed in those ids.
using member_id = std::size_t;

/// Opt-in tags naming the policy slot a type fills. A policy says which slot
/// it fills with a nested `using policy_slot = dml::slot::<name>;`.
namespace slot {
struct transport {};
struct representation {};
struct topology {};
struct consistency {};
struct gather {};
struct engine {};  ///< engines of scheduled model parallelism (dml::schedule)
}  // namespace slot

class error;
class config_error;
class data_error;
class comm_error;
class peer_failure;
class timeout;

namespace topology {
class graph;
struct all;
class any;
struct halton;
struct root_expander;
struct ring;
struct chain;
struct star;
struct exponential;
class edges;
class circulant;
class best_circulant;
struct one_peer_exponential;
template <class Outer>
class hierarchical;
}  // namespace topology

struct dense;
struct sparse;

namespace consistency {
struct bsp;
struct asp;
template <std::uint64_t S>
struct ssp;
template <std::uint64_t S>
class ssp_bounded;
template <std::uint64_t B>
struct asp_fresh;
struct notify_ack;
class any;
class adaptive;
}  // namespace consistency

namespace gather {
struct average;
struct average_received;
struct sum;
struct max;
struct replace;
struct scaled_sum;
}  // namespace gather

struct vector_stats;
struct table_stats;
struct table_options;
/// A parameter table; see dml/table/table.hpp and `make_table`.
template <class T, class Transport, class Consistency = consistency::bsp>
class table;

template <class T>
class delta_tracker;

namespace schedule {
struct dynamic;
struct static_rotation;
struct run_stats;
}  // namespace schedule

/// A typed distributed vector; see dml/vector/dist_vector.hpp. The defaults
/// here are the ones `make_vector` fills in for policies not given.
template <class T, class Transport, class Repr = dense, class Topology = topology::all,
          class Consistency = consistency::bsp, class Gather = gather::average>
class dist_vector;

DML_END_NAMESPACE

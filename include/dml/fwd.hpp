// SPDX-License-Identifier: BSL-1.0
/// @file
/// Forward declarations of dml's public types and the policy slots.
#pragma once

#include <dml/version.hpp>

#include <cstddef>

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
struct halton;
struct root_expander;
struct ring;
struct chain;
struct star;
struct exponential;
class edges;
}  // namespace topology

DML_END_NAMESPACE

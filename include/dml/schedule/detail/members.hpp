// SPDX-License-Identifier: BSL-1.0
/// @file
/// Internal: this member's place among the live members.
#pragma once

#include <dml/error.hpp>
#include <dml/fwd.hpp>

#include <cstddef>
#include <string>
#include <utility>

DML_BEGIN_NAMESPACE
namespace schedule::detail {

/// (live members, this member's position among them).
template <class Transport>
std::pair<std::size_t, std::size_t> place(const Transport& comm, const char* who) {
  const auto view = comm.view();
  for (std::size_t i = 0; i < view.live.size(); ++i)
    if (view.live[i] == comm.rank()) return {view.live.size(), i};
  throw config_error(std::string(who) + ": member " + std::to_string(comm.rank()) +
                     " is not among the live members");
}

}  // namespace schedule::detail
DML_END_NAMESPACE

// SPDX-License-Identifier: BSL-1.0
// Built, not run (ctest "verbs: compiles warning-free ..."): the verbs
// transport models dml::comm::transport, and vectors over it compile in
// full (explicit instantiation compiles every member function) under
// -Wall -Wextra -Wpedantic -Werror.
#include <dml/comm/verbs.hpp>
#include <dml/dml.hpp>
#include <dml/table.hpp>

static_assert(dml::comm::transport<dml::comm::verbs::context>,
              "dml::comm::verbs::context must model dml::comm::transport");
static_assert(dml::comm::segment<dml::comm::verbs::context::segment>);
static_assert(!std::is_copy_constructible_v<dml::comm::verbs::context>);
static_assert(std::is_nothrow_move_constructible_v<dml::comm::verbs::context::segment>);

// Clang before 16 instantiates members whose constraints are not satisfied
// as well (against [temp.explicit]): the explicit instantiations are GCC's
// and newer clang's check.
#if !defined(__clang__) || __clang_major__ >= 16
template class dml::dist_vector<double, dml::comm::verbs::context, dml::dense, dml::topology::ring,
                                dml::consistency::notify_ack, dml::gather::average>;
template class dml::dist_vector<float, dml::comm::verbs::context, dml::sparse, dml::topology::halton,
                                dml::consistency::ssp<2>, dml::gather::replace>;

// Tables read their owners' rows with RDMA READ (segment::get).
template class dml::table<double, dml::comm::verbs::context, dml::consistency::ssp<1>>;
template class dml::table<std::int32_t, dml::comm::verbs::context, dml::consistency::bsp>;
#endif

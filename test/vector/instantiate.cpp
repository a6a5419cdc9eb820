// SPDX-License-Identifier: BSL-1.0
// Explicit instantiations compile every member function of a class
// template, not only the ones a test calls: a member that is valid for one
// policy only (a time-varying topology's round plan, say) must be
// constrained, or a user's explicit instantiation breaks. Built into
// test_vector, so this holds on every machine (test/verbs/compile.cpp does
// the same for verbs where rdma-core exists).
#include <dml/comm/inproc.hpp>
#include <dml/dml.hpp>
#include <dml/table.hpp>
#include <dml/topology/one_peer_exponential.hpp>
#include <dml/vector/delta_vector.hpp>

#include <cstdint>

// Clang before 16 instantiates members whose constraints are not satisfied
// as well (against [temp.explicit]), so there the check is GCC's and newer
// clang's alone.
#if !defined(__clang__) || __clang_major__ >= 16

template class dml::dist_vector<double, dml::comm::inproc::context, dml::dense, dml::topology::ring,
                                dml::consistency::notify_ack, dml::gather::average>;
template class dml::dist_vector<float, dml::comm::inproc::context, dml::sparse, dml::topology::halton,
                                dml::consistency::ssp<2>, dml::gather::replace>;
template class dml::dist_vector<double, dml::comm::inproc::context, dml::dense,
                                dml::topology::one_peer_exponential, dml::consistency::bsp,
                                dml::gather::average>;
template class dml::dist_vector<float, dml::comm::inproc::context, dml::dense, dml::topology::any,
                                dml::consistency::any, dml::gather::average>;
template class dml::dist_vector<double, dml::comm::inproc::context, dml::dense, dml::topology::ring,
                                dml::consistency::ssp_bounded<1>, dml::gather::average>;
template class dml::dist_vector<double, dml::comm::inproc::context, dml::sparse, dml::topology::all,
                                dml::consistency::asp_fresh<2>, dml::gather::sum>;
template class dml::table<double, dml::comm::inproc::context, dml::consistency::ssp<1>>;
template class dml::table<std::int32_t, dml::comm::inproc::context, dml::consistency::bsp>;
#endif

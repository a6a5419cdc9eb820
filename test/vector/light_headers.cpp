// SPDX-License-Identifier: BSL-1.0
// A header-only library's compile time is its users' compile time: the
// umbrella header and everything a vector needs must not pull in Eigen
// (its views and the spectral gap have their own headers), so a program
// that never uses Eigen neither pays for it nor needs its include path;
// nor Boost, which only the MPI transports need.
#include <dml/dml.hpp>

#ifdef EIGEN_CORE_H
#error "dml/dml.hpp includes Eigen: keep it in dml/vector/eigen.hpp and dml/topology/spectral.hpp"
#endif
#if defined(BOOST_HANA_CONFIG_HPP) || defined(BOOST_CONFIG_HPP)
#error "dml/dml.hpp includes Boost: the core needs none (only the MPI transports use Boost.MPI)"
#endif

#include <dml/vector/eigen.hpp>

#include "support/catch.hpp"

TEST_CASE("eigen() maps the local buffer once dml/vector/eigen.hpp is included") {
  dml::comm::inproc::run(2, [](dml::comm::inproc::context& c) {
    auto v = dml::make_vector<float>(c, 3);
    v.eigen().setConstant(static_cast<float>(c.rank() + 1));
    const auto& cv = v;
    REQUIRE(cv.eigen().sum() == 3.0f * static_cast<float>(c.rank() + 1));
    v.scatter();
    v.gather();
    REQUIRE(v.span()[2] == 1.5f);
  });
}

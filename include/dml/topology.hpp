// SPDX-License-Identifier: BSL-1.0
/// @file
/// The topology module: the communication graph, its analysis and every
/// built-in generator. The spectral gap, which needs Eigen's SVD, has its
/// own header: <dml/topology/spectral.hpp>.
#pragma once

#include <dml/topology/all.hpp>
#include <dml/topology/any.hpp>
#include <dml/topology/best_circulant.hpp>
#include <dml/topology/chain.hpp>
#include <dml/topology/circulant.hpp>
#include <dml/topology/concepts.hpp>
#include <dml/topology/edges.hpp>
#include <dml/topology/exponential.hpp>
#include <dml/topology/graph.hpp>
#include <dml/topology/halton.hpp>
#include <dml/topology/hierarchical.hpp>
#include <dml/topology/one_peer_exponential.hpp>
#include <dml/topology/ring.hpp>
#include <dml/topology/root_expander.hpp>
#include <dml/topology/star.hpp>

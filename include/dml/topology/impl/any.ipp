// SPDX-License-Identifier: BSL-1.0
/// @file
/// Out-of-line definitions for <dml/topology/any.hpp> (see <dml/version.hpp>, DML_DECL).
#pragma once

#include <dml/topology/any.hpp>

DML_BEGIN_NAMESPACE
namespace topology {

DML_DECL any::any() : any(all{}) {}

}  // namespace topology
DML_END_NAMESPACE

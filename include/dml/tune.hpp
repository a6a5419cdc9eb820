// SPDX-License-Identifier: BSL-1.0
/// @file
/// Online tuning (docs/tuning.md): the progress summarizer, search spaces
/// and searchers, branches over in-memory snapshots, the agreed mean of a
/// trace, and the tuning loop. Not part of dml/dml.hpp.
#pragma once

#include <dml/fault/snapshot.hpp>
#include <dml/tune/agree.hpp>
#include <dml/tune/branches.hpp>
#include <dml/tune/progress.hpp>
#include <dml/tune/searcher.hpp>
#include <dml/tune/tuner.hpp>

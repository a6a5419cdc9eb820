// SPDX-License-Identifier: BSL-1.0
/// @file
/// Consistency policies: `bsp`, `asp`, `ssp<S>`, `notify_ack`, MALT's
/// `ssp_bounded<S>` and `asp_fresh<B>`, and `any` (one of them chosen at run
/// time).
#pragma once

#include <dml/consistency/adaptive.hpp>
#include <dml/consistency/any.hpp>
#include <dml/consistency/asp.hpp>
#include <dml/consistency/asp_fresh.hpp>
#include <dml/consistency/bsp.hpp>
#include <dml/consistency/concepts.hpp>
#include <dml/consistency/controller.hpp>
#include <dml/consistency/notify_ack.hpp>
#include <dml/consistency/ssp.hpp>
#include <dml/consistency/ssp_bounded.hpp>

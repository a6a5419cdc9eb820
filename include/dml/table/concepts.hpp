// SPDX-License-Identifier: BSL-1.0
/// @file
/// What a table needs from its consistency policy, and the table concept.
///
/// A table's consistency policy is one of the vector policies that bound
/// staleness: `bsp` (slack 0), `ssp<S>` (slack S) and `asp` (no bound).
/// For tables they have the parameter-server meaning: a read by a member at
/// clock T includes every member's updates of clocks 0..T-S-1. (A vector's
/// `ssp<S>` means something else: each neighbour's newest snapshot no older
/// than S clocks; see docs/tables.md.) `notify_ack` has no table meaning.
///
/// Laws of `parameter_table` (test/table/laws.hpp checks them for every
/// policy, on every transport): with s the slack,
/// - a member's clock starts at 0; updates made at clock c belong to clock c;
/// - `read(row)` at clock T includes every member's updates of clocks
///   0..T-s-1 and all of the caller's own updates so far, and each update
///   whole or not at all;
/// - `age(row)` after a read is at least T-s-1;
/// - after `sync()` every read includes every update made before it.
#pragma once

#include <dml/consistency/any.hpp>
#include <dml/consistency/asp.hpp>
#include <dml/consistency/bsp.hpp>
#include <dml/consistency/concepts.hpp>
#include <dml/consistency/ssp.hpp>
#include <dml/error.hpp>
#include <dml/fwd.hpp>
#include <dml/table/options.hpp>
#include <dml/table/stats.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>

DML_BEGIN_NAMESPACE
namespace consistency {

/// The slack a consistency policy gives a table: `value` clocks, or
/// `unbounded`. Undefined for policies with no table meaning.
template <class C>
struct table_staleness;

inline constexpr std::uint64_t unbounded = std::numeric_limits<std::uint64_t>::max();

template <>
struct table_staleness<bsp> {
  static constexpr std::uint64_t value = 0;
};
template <std::uint64_t S>
struct table_staleness<ssp<S>> {
  static constexpr std::uint64_t value = S;
};
template <>
struct table_staleness<asp> {
  static constexpr std::uint64_t value = unbounded;
};

/// A consistency policy with a table meaning: bsp, ssp<S> and asp, whose
/// slack is part of the type, and `any`, whose slack is chosen at run time
/// (a table given `any` holding notify_ack refuses it when it is built).
template <class C>
concept table_consistency = consistency_policy<C> &&(std::same_as<C, any> || requires {
  { table_staleness<C>::value } -> std::convertible_to<std::uint64_t>;
});

/// The slack `c` gives a table: table_staleness<C>::value, or for `any` the
/// held policy's (bsp 0, ssp its slack, asp unbounded). Throws
/// dml::config_error for `any` holding notify_ack, adaptive, ssp_bounded
/// or asp_fresh (whose vector semantics tables do not have).
template <table_consistency C>
[[nodiscard]] std::uint64_t table_slack(const C& c) {
  if constexpr (std::same_as<C, any>) {
    switch (c.held()) {
      case any::kind::bsp:
        return 0;
      case any::kind::ssp:
        return c.slack();
      case any::kind::asp:
        return unbounded;
      case any::kind::notify_ack:
      case any::kind::adaptive:
      case any::kind::ssp_bounded:
      case any::kind::asp_fresh:
        break;
    }
    throw config_error("dml::make_table: the consistency policy of a table must be bsp, ssp<S> or asp (" +
                       c.name() + " has no meaning for tables)");
  } else {
    return table_staleness<C>::value;
  }
}

}  // namespace consistency

/// A parameter table (see dml::table): rows of `value_type` that every
/// member reads and updates with accumulated deltas.
template <class Tab>
concept parameter_table = requires(Tab& t, const Tab& ct, std::size_t row,
                                   std::span<const typename Tab::value_type> delta) {
  typename Tab::value_type;
  typename Tab::consistency_type;
  { t.read(row) } -> std::same_as<std::span<const typename Tab::value_type>>;
  {t.update(row, delta)};
  {t.clock()};
  {t.sync()};
  { ct.age(row) } -> std::convertible_to<std::int64_t>;
  { ct.current_clock() } -> std::convertible_to<std::uint64_t>;
  { ct.rows() } -> std::convertible_to<std::size_t>;
  { ct.row_length() } -> std::convertible_to<std::size_t>;
  { ct.stats() } -> std::convertible_to<const table_stats&>;
};

DML_END_NAMESPACE

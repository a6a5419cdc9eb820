// SPDX-License-Identifier: BSL-1.0
/// @file
/// Representations: how a vector's updates travel. Both keep the local
/// buffer dense (so `span()`, `eigen()` and `xtensor()` always work); they
/// differ in what a scatter writes into peers' receive slots.
#pragma once

#include <dml/error.hpp>
#include <dml/fwd.hpp>

#include <cstddef>
#include <string>
#include <string_view>

DML_BEGIN_NAMESPACE

/// Every element travels on every scatter.
struct dense {
  using policy_slot = slot::representation;
  [[nodiscard]] static constexpr std::string_view name() noexcept { return "dense"; }
  [[nodiscard]] std::string describe() const { return "dense"; }
};

/// Only nonzero elements travel, as index/value pairs, at most `capacity` of
/// them per scatter. A scatter with more nonzeros than the capacity throws
/// `dml::config_error` (nothing is silently dropped). Receive slots are
/// sized by the capacity, not by the length.
struct sparse {
  using policy_slot = slot::representation;
  std::size_t capacity = 0;

  sparse() = default;
  explicit constexpr sparse(std::size_t cap) noexcept : capacity(cap) {}

  [[nodiscard]] static constexpr std::string_view name() noexcept { return "sparse"; }
  [[nodiscard]] std::string describe() const { return "sparse(capacity=" + std::to_string(capacity) + ")"; }
};

DML_END_NAMESPACE

// SPDX-License-Identifier: BSL-1.0
/// @file
/// `dml::tune::agree_mean`: the mean of a few numbers over the live members,
/// identical to the bit on every member. Tuning decisions (which branch is
/// best, when to double the trial time, when to re-tune) are computed by
/// every member from the same agreed trace, so they are the same everywhere
/// without a coordinator.
#pragma once

#include <dml/comm/concepts.hpp>
#include <dml/error.hpp>
#include <dml/fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

DML_BEGIN_NAMESPACE
namespace tune {

/// Collective over the live members of `comm`: replaces `values` by their
/// element-wise mean over the live members. The members' values travel
/// through the transport's `exchange()` and every member adds them in the
/// order of the live list, so all members get the same bits. Every member
/// passes the same number of values, else all throw `dml::config_error`.
/// Meant for traces of a few hundred numbers per trial, not for models.
template <class Comm>
void agree_mean(Comm& comm, std::span<double> values) {
  static_assert(comm::transport<Comm>,
                "dml::tune::agree_mean: the first argument must be a transport context modelling "
                "dml::comm::transport");
  constexpr std::uint64_t magic = 0x646d6c2d6d65616eULL;  // "dml-mean"
  std::vector<std::byte> mine(2 * sizeof(std::uint64_t) + values.size_bytes());
  const std::uint64_t head[2] = {magic, values.size()};
  std::memcpy(mine.data(), head, sizeof head);
  if (!values.empty()) std::memcpy(mine.data() + sizeof head, values.data(), values.size_bytes());
  const auto all = comm.exchange(mine);
  if (all.empty()) return;
  std::vector<double> sum(values.size(), 0.0), theirs(values.size());
  for (const auto& record : all) {
    std::uint64_t h[2] = {0, 0};
    if (record.size() >= sizeof h) std::memcpy(h, record.data(), sizeof h);
    if (h[0] != magic)
      throw config_error(
          "dml::tune::agree_mean: a member is in another collective operation; every member must call the "
          "same collectives in the same order");
    if (h[1] != values.size() || record.size() != mine.size())
      throw config_error("dml::tune::agree_mean: the members pass different numbers of values (" +
                         std::to_string(values.size()) + " and " + std::to_string(h[1]) + ")");
    if (!theirs.empty()) std::memcpy(theirs.data(), record.data() + sizeof h, values.size_bytes());
    for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += theirs[i];
  }
  for (std::size_t i = 0; i < sum.size(); ++i) values[i] = sum[i] / static_cast<double>(all.size());
}

}  // namespace tune
DML_END_NAMESPACE

// SPDX-License-Identifier: BSL-1.0
/// @file
/// `dml::tune::branches`: the training branches of online tuning, each an
/// in-memory snapshot (dml/fault/snapshot.hpp) of the same vectors, kept
/// under a number. The tuner saves the parent state as branch 0, forks a
/// trial by restoring it, and keeps the best trial's state.
#pragma once

#include <dml/error.hpp>
#include <dml/fault/snapshot.hpp>
#include <dml/fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>

DML_BEGIN_NAMESPACE
namespace tune {

/// Branches over the vectors given at construction (held by reference; they
/// must outlive this object). Every operation is collective, as the
/// snapshot's are.
///
/// @tparam Comm a transport context (dml::comm::transport)
/// @tparam Vs   vectors a checkpoint can hold (dml::fault::checkpoint_vector)
template <class Comm, class... Vs>
class branches {
 public:
  explicit branches(Comm& comm, Vs&... vectors) : comm_(&comm), vectors_(&vectors...) {}

  /// Saves the vectors' current elements as branch `id` at `clock`
  /// (replacing what it held).
  void save(std::size_t id, std::uint64_t clock) {
    fault::snapshot& s = held_[id];
    std::apply([&](auto*... v) { s.take(*comm_, clock, *v...); }, vectors_);
  }
  /// Writes branch `id` back into the vectors; returns its clock. Throws
  /// `dml::config_error` when there is no such branch.
  std::uint64_t restore(std::size_t id) {
    const auto it = held_.find(id);
    if (it == held_.end())
      throw config_error("dml::tune::branches::restore: there is no branch " + std::to_string(id));
    return std::apply([&](auto*... v) { return it->second.restore(*comm_, *v...); }, vectors_);
  }
  /// Frees branch `id` (nothing happens when there is none).
  void drop(std::size_t id) { held_.erase(id); }
  /// True when branch `id` is held.
  [[nodiscard]] bool holds(std::size_t id) const { return held_.count(id) != 0; }
  /// Bytes held by all branches.
  [[nodiscard]] std::size_t bytes() const {
    std::size_t n = 0;
    for (const auto& [id, s] : held_) n += s.bytes();
    return n;
  }

 private:
  Comm* comm_;
  std::tuple<Vs*...> vectors_;
  std::map<std::size_t, fault::snapshot> held_;
};

}  // namespace tune
DML_END_NAMESPACE

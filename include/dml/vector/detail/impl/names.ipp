// SPDX-License-Identifier: BSL-1.0
/// @file
/// Out-of-line definitions for <dml/vector/detail/names.hpp> (see
/// <dml/version.hpp>, DML_DECL).
#pragma once

#include <dml/vector/detail/names.hpp>

#include <cstring>

DML_BEGIN_NAMESPACE
namespace detail {

DML_DECL std::uint64_t fnv1a(std::uint64_t h, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) {
    h ^= (v >> (8 * i)) & 0xff;
    h *= 0x100000001b3ULL;
  }
  return h;
}

DML_DECL std::string describe_vector(const vector_names& names, const topology::graph& graph) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (member_id m : graph.members()) {
    for (member_id o : graph.out(m)) h = fnv1a(h, (m << 32) ^ o);
  }
  if (graph.has_weights()) {  // members must agree on the weights too
    auto bits = [](double x) {
      std::uint64_t b = 0;
      std::memcpy(&b, &x, sizeof b);
      return b;
    };
    for (member_id m : graph.members()) {
      h = fnv1a(h, bits(graph.self_weight(m)));
      for (const double w : graph.in_weights(m)) h = fnv1a(h, bits(w));
    }
  }
  return "length=" + std::to_string(names.length) + " element=" + names.element +
         " representation=" + names.representation + " topology=" + names.topology + " (edges " +
         std::to_string(graph.edge_count()) + ", hash " + std::to_string(h % 1000000007ULL) +
         ") consistency=" + names.consistency + " gather=" + names.gather +
         // the slot layout: members must agree whether slots carry a weight word
         (names.weighted ? " (slots carry weights)" : "");
}

}  // namespace detail
DML_END_NAMESPACE

// SPDX-License-Identifier: BSL-1.0
/// @file
/// A topology generator chosen at run time: `topology::any` holds any other
/// generator behind one type. A program that picks the topology from its
/// command line or a configuration file then builds one vector type instead
/// of one per generator (each is a separate instantiation of the vector's
/// code), and nothing on the exchange path changes: the generator is only
/// asked for a graph when a vector is built or rebuilt.
#pragma once

#include <dml/error.hpp>
#include <dml/fwd.hpp>
#include <dml/topology/all.hpp>
#include <dml/topology/concepts.hpp>
#include <dml/topology/time_varying.hpp>

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

DML_BEGIN_NAMESPACE
namespace topology {

/// Any topology generator, chosen at run time (value semantics; copies share
/// the immutable generator).
///
///     dml::topology::any t = use_ring ? dml::topology::any(dml::topology::ring{})
///                                     : dml::topology::any(dml::topology::halton{});
///     auto v = dml::make_vector<float>(comm, n, t, dml::consistency::bsp{});
///
/// It builds exactly the graphs the generator it holds builds, over a fresh
/// group and over survivors, and describes itself as that generator does,
/// so members that hold the same generator directly or through `any` agree.
class any {
 public:
  using policy_slot = slot::topology;

  /// Holds `topology::all`, the vectors' default.
  DML_DECL any();
  /// Holds `gen`.
  template <class G>
  requires(topology_generator<G> && !std::is_same_v<std::remove_cvref_t<G>, any>)
      any(G gen)  // NOLINT(google-explicit-constructor): a generator converts to `any` implicitly
      : model_(std::make_shared<const model<std::remove_cvref_t<G>>>(std::move(gen))) {
    static_assert(
        !time_varying_generator<G>,
        "dml::topology::any cannot hold a time-varying generator (e.g. one_peer_exponential): it would "
        "hand out only the union graph; use the generator's own type");
  }

  /// Out-lists over members 0..n-1, as the held generator builds them.
  [[nodiscard]] std::vector<std::vector<member_id>> out_lists(std::size_t n) const {
    return model_->out_lists(n);
  }
  /// Out-lists over the survivors (ascending original ids), as
  /// `topology::build(gen, survivors)` builds them for the held generator.
  [[nodiscard]] std::vector<std::vector<member_id>> out_lists_over(std::span<const member_id> ids) const {
    return model_->out_lists_over(ids);
  }
  /// The held generator's mixing rows over members 0..n-1; none (an empty
  /// vector) when it gives no weights.
  [[nodiscard]] std::vector<mixing_row> mixing(std::size_t n) const { return model_->mixing(n); }
  /// The held generator's mixing rows over the survivors, as
  /// `topology::build(gen, survivors)` attaches them.
  [[nodiscard]] std::vector<mixing_row> mixing_over(std::span<const member_id> ids) const {
    return model_->mixing_over(ids);
  }
  /// The held generator's name.
  [[nodiscard]] std::string_view name() const noexcept { return model_->name(); }
  /// The held generator's description (its parameters included), what
  /// members compare when they build a vector.
  [[nodiscard]] std::string describe() const { return model_->describe(); }

 private:
  struct concept_base {
    virtual ~concept_base() = default;
    [[nodiscard]] virtual std::vector<std::vector<member_id>> out_lists(std::size_t n) const = 0;
    [[nodiscard]] virtual std::vector<std::vector<member_id>> out_lists_over(
        std::span<const member_id> ids) const = 0;
    [[nodiscard]] virtual std::vector<mixing_row> mixing(std::size_t n) const = 0;
    [[nodiscard]] virtual std::vector<mixing_row> mixing_over(std::span<const member_id> ids) const = 0;
    [[nodiscard]] virtual std::string_view name() const noexcept = 0;
    [[nodiscard]] virtual std::string describe() const = 0;
  };
  template <class G>
  struct model final : concept_base {
    explicit model(G g) : gen(std::move(g)) {}
    [[nodiscard]] std::vector<std::vector<member_id>> out_lists(std::size_t n) const override {
      return gen.out_lists(n);
    }
    [[nodiscard]] std::vector<std::vector<member_id>> out_lists_over(
        std::span<const member_id> ids) const override {
      if constexpr (has_survivor_lists<G>) {
        return gen.out_lists_over(ids);
      } else {  // the generator's graph over ids.size() members, relabelled
        auto lists = gen.out_lists(ids.size());
        for (auto& list : lists)
          for (auto& j : list)
            if (j < ids.size()) j = ids[j];  // an out-of-range id is left for the graph's check
        return lists;
      }
    }
    [[nodiscard]] std::vector<mixing_row> mixing(std::size_t n) const override {
      if constexpr (has_mixing<G>)
        return gen.mixing(n);
      else
        return {};
    }
    [[nodiscard]] std::vector<mixing_row> mixing_over(std::span<const member_id> ids) const override {
      if constexpr (has_survivor_mixing<G>) {
        return gen.mixing_over(ids);
      } else if constexpr (has_mixing<G>) {  // the rows over ids.size() members, relabelled
        auto rows = gen.mixing(ids.size());
        for (auto& row : rows)
          for (auto& [from, w] : row.in)
            if (from < ids.size()) from = ids[from];
        return rows;
      } else {
        return {};
      }
    }
    [[nodiscard]] std::string_view name() const noexcept override { return gen.name(); }
    [[nodiscard]] std::string describe() const override {
      if constexpr (requires { gen.describe(); })
        return std::string(gen.describe());
      else
        return std::string(gen.name());
    }
    G gen;
  };

  std::shared_ptr<const concept_base> model_;
};

}  // namespace topology
DML_END_NAMESPACE

#if !defined(DML_SEPARATE_COMPILATION)
#include <dml/topology/impl/any.ipp>
#endif

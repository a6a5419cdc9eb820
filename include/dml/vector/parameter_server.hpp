// SPDX-License-Identifier: BSL-1.0
/// @file
/// A parameter server built from two distributed vectors over a star:
/// updates (gradients or deltas) go up to the server, the model comes down.
/// The baseline MALT compares its peer-to-peer exchange with (MALT §6.2).
#pragma once

#include <dml/comm/concepts.hpp>
#include <dml/consistency/bsp.hpp>
#include <dml/consistency/concepts.hpp>
#include <dml/error.hpp>
#include <dml/fwd.hpp>
#include <dml/topology/star.hpp>
#include <dml/vector/dist_vector.hpp>
#include <dml/vector/gather.hpp>
#include <dml/vector/representation.hpp>
#include <dml/vector/stats.hpp>
#include <dml/vector/to.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <utility>

DML_BEGIN_NAMESPACE

/// A parameter server over `comm`: one member, the server, holds the model;
/// every member (the server too) computes an update, and each step sends
/// the updates up and the model down.
///
///     dml::parameter_server<float, Comm> ps(comm, dim);   // server: member 0
///     for (...) {
///       gradient(ps.model(), batch, ps.update());          // every member
///       ps.step([&](std::span<float> w, std::span<const float> g) {
///         for (std::size_t i = 0; i < w.size(); ++i) w[i] -= lr * g[i];  // on the server
///       });
///     }
///
/// A step is two exchanges through `topology::star{server}`. Up: each
/// worker scatters its update to the server, which gathers the mean of its
/// own update and those received (`gather::average`) and calls
/// `apply(model, mean)`. Down: the server scatters the model to every
/// worker, which takes it (`gather::replace`). The server sends its update
/// to nobody and the workers their model to nobody (`dml::to{}`), so the
/// payload of a step is 2(n - 1) x the model's bytes, n - 1 of them into
/// and n - 1 out of the server (peer-to-peer averaging over `all` moves
/// n(n - 1) x, over `halton` about n log2 n x).
///
/// The server trains as well: with n members computing in every mode, a
/// comparison with the peer-to-peer exchanges differs only in what is
/// communicated, and under bsp a step applies the mean of the same n
/// updates that averaging over `topology::all` combines, so with
/// `apply = w -= lr g` both give the same model.
///
/// The consistency policy is that of both vectors. bsp (or notify_ack) is
/// the synchronous parameter server: every member starts each step from the
/// model of the step before. asp is the asynchronous one: nobody waits, the
/// server applies the updates that have arrived (a worker's update that a
/// newer one overwrote before the server read it is lost), and a worker
/// keeps its model until a newer one arrives. ssp<S> bounds how far a
/// worker's model may lag behind (S steps).
///
/// Faults: a failed worker is left out (the vectors rebuild over the
/// survivors; the server then averages n - 1 updates). If the server fails,
/// the smallest survivor becomes the server with the model it holds (the
/// last one it received); the step in flight may lose its updates.
///
/// @tparam T           element type (arithmetic)
/// @tparam Transport   transport context type
/// @tparam Consistency a `dml::consistency::consistency_policy`, default bsp
template <class T, class Transport, class Consistency = consistency::bsp>
class parameter_server {
  static_assert(std::is_arithmetic_v<T>, "dml::parameter_server<T, ...>: T must be an arithmetic type");
  static_assert(comm::transport<Transport>,
                "dml::parameter_server: the Transport argument needs a type modelling dml::comm::transport");
  static_assert(
      consistency::consistency_policy<Consistency>,
      "dml::parameter_server: the Consistency argument needs a dml::consistency::consistency_policy");

 public:
  using up_vector = dist_vector<T, Transport, dense, topology::star, Consistency, gather::average>;
  using down_vector = dist_vector<T, Transport, dense, topology::star, Consistency, gather::replace>;

  /// Collective: every live member constructs it with the same length,
  /// policy and server. The model and the update start as zeros; set the
  /// same initial model on every member (or on the server only: the first
  /// step brings it down, but the workers' first updates are then computed
  /// from their own).
  /// A server that has already failed gives way to the smallest live
  /// member, as after a failure during the run.
  /// @throws dml::config_error on every member when the group has fewer
  ///         than 2 members, when `server` is not below comm.size(), or as
  ///         dist_vector does (zero length, members disagreeing).
  parameter_server(Transport& comm, std::size_t length, Consistency cons = {}, member_id server = 0)
      : up_(make(comm, length, cons, server, gather::average{})),
        down_(make(comm, length, std::move(cons), server, gather::replace{})) {}

  /// The model: on the server the one it updates, on a worker the last one
  /// it received.
  [[nodiscard]] std::span<T> model() noexcept { return down_.span(); }
  [[nodiscard]] std::span<const T> model() const noexcept { return down_.span(); }
  /// This member's update (gradient or delta) for the next step(); on the
  /// server, after step(), the mean that was applied.
  [[nodiscard]] std::span<T> update() noexcept { return up_.span(); }
  [[nodiscard]] std::span<const T> update() const noexcept { return up_.span(); }
  [[nodiscard]] std::size_t size() const noexcept { return up_.size(); }

  /// One step: update() up, `apply(model, mean of the updates)` on the
  /// server, the model down. `apply` takes (std::span<T>, std::span<const
  /// T>) and runs on the server only; it may throw (nothing further is
  /// sent then, and the workers' next gather ends as after a failure).
  template <class Apply>
  void step(Apply&& apply) {
    static_assert(std::is_invocable_v<Apply&, std::span<T>, std::span<const T>>,
                  "dml::parameter_server::step(apply): apply must be callable as apply(std::span<T> model, "
                  "std::span<const T> mean_update)");
    if (serves(up_))
      up_.scatter(to{});
    else
      up_.scatter();
    up_.gather();
    if (serves(up_)) apply(down_.span(), std::span<const T>(up_.span()));
    if (serves(down_))
      down_.scatter();
    else
      down_.scatter(to{});
    down_.gather();
  }

  /// The server's id in the current view.
  [[nodiscard]] member_id server() const { return server_of(down_); }
  /// Whether this member is the server.
  [[nodiscard]] bool is_server() const { return serves(down_); }
  [[nodiscard]] member_id rank() const { return down_.rank(); }
  /// Steps so far.
  [[nodiscard]] std::uint64_t steps() const noexcept { return down_.clock(); }

  /// Barrier over the live members: call it before the parameter server is
  /// destroyed, so nobody leaves while another may still read its slots.
  void barrier() { down_.barrier(); }

  /// The two vectors' statistics: updates going up, models coming down.
  [[nodiscard]] const vector_stats& up_stats() const noexcept { return up_.stats(); }
  [[nodiscard]] const vector_stats& down_stats() const noexcept { return down_.stats(); }
  /// Bytes this member wrote into peers' slots, both ways (headers and
  /// markers included).
  [[nodiscard]] std::uint64_t bytes_sent() const noexcept {
    return up_.stats().bytes_sent + down_.stats().bytes_sent;
  }
  /// The updates' and models' own bytes among bytes_sent().
  [[nodiscard]] std::uint64_t payload_bytes_sent() const noexcept {
    return up_.stats().payload_bytes_sent + down_.stats().payload_bytes_sent;
  }
  /// The vectors themselves, for what this class does not forward.
  [[nodiscard]] const up_vector& up() const noexcept { return up_; }
  [[nodiscard]] const down_vector& down() const noexcept { return down_; }

 private:
  // The configured hub while it is in the vector's graph, else the smallest
  // member (as topology::star builds it over survivors).
  template <class V>
  [[nodiscard]] static member_id server_of(const V& v) {
    const auto& g = v.graph();
    const member_id hub = v.topology().hub;
    return g.contains(hub) ? hub : g.members().front();
  }
  template <class V>
  [[nodiscard]] static bool serves(const V& v) {
    return server_of(v) == v.rank();
  }

  template <class G>
  static dist_vector<T, Transport, dense, topology::star, Consistency, G> make(Transport& comm,
                                                                               std::size_t length,
                                                                               Consistency cons,
                                                                               member_id server, G g) {
    // Checked against the group's size, the same on every member; which
    // members are live the vectors agree on when they are built.
    const std::size_t n = comm.size();
    if (n < 2)
      throw config_error(
          "dml::parameter_server: needs a group of at least 2 members (a server and a worker), has " +
          std::to_string(n));
    if (server >= n)
      throw config_error("dml::parameter_server: server " + std::to_string(server) +
                         " is not a member (ids 0.." + std::to_string(n - 1) + ")");
    return dist_vector<T, Transport, dense, topology::star, Consistency, G>(
        comm, length, dense{}, topology::star{server}, std::move(cons), std::move(g));
  }

  up_vector up_;
  down_vector down_;
};

DML_END_NAMESPACE

// SPDX-License-Identifier: BSL-1.0
/// @file
/// `dml::comm::any`: a transport chosen at run time. It wraps a reference
/// to any context whose group can shrink (`inproc::context`, `mpi_rma`,
/// `mpi`) behind one type, so a program that picks its transport from the
/// command line compiles its training loop once, not once per transport:
///
///     auto train = [&](dml::comm::any& comm) {          // one instantiation
///       auto w = dml::make_vector<float>(comm, n, dml::topology::halton{});
///       ...
///     };
///     if (use_mpi) { dml::comm::mpi_rma c(argc, argv); dml::comm::any a(c); train(a); }
///     else dml::comm::inproc::run(4, [&](auto& c) { dml::comm::any a(c); train(a); });
///
/// Every operation forwards through one virtual call; the transports move
/// whole slots per call (a put, a flush, a header load), so the cost is a
/// few nanoseconds per message, not per element. `any` keeps no state of
/// its own: attributes, views and fault subscriptions are the wrapped
/// context's, so vectors over `any` and over the context itself coexist.
#pragma once

#include <dml/comm/attributes.hpp>
#include <dml/comm/concepts.hpp>
#include <dml/comm/get_all.hpp>
#include <dml/error.hpp>
#include <dml/fwd.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

DML_BEGIN_NAMESPACE
namespace comm {

/// A reference to a transport context of any type that models
/// `shrinkable_transport`. Not copyable or movable: vectors and tables keep
/// a pointer to it, so it must outlive them; the wrapped context must
/// outlive it.
class any {
  struct segment_base {
    virtual ~segment_base() = default;
    [[nodiscard]] virtual std::size_t words(member_id m) const = 0;
    virtual void put(member_id m, std::size_t w, std::span<const std::byte> in) = 0;
    virtual void put_exclusive(member_id m, std::size_t w, std::span<const std::byte> in) = 0;
    virtual void order(member_id m) = 0;
    virtual void flush(member_id m) = 0;
    virtual void flush_all() = 0;
    virtual std::uint64_t fetch_add(member_id m, std::size_t w, std::uint64_t v) = 0;
    [[nodiscard]] virtual std::uint64_t load(std::size_t w) const = 0;
    [[nodiscard]] virtual std::uint64_t load_control(std::size_t w) const = 0;
    virtual void read(std::size_t w, std::span<std::byte> out) const = 0;
    virtual void get(member_id m, std::size_t w, std::span<std::byte> out) = 0;
    virtual void get_all(member_id m, std::span<const get_range> ranges) = 0;
    [[nodiscard]] virtual std::span<const std::uint64_t> view(std::size_t w, std::size_t n) const = 0;
    virtual void sync() = 0;
  };

  template <class S>
  struct segment_model final : segment_base {
    S s;
    explicit segment_model(S&& seg) : s(std::move(seg)) {}
    std::size_t words(member_id m) const override { return s.words(m); }
    void put(member_id m, std::size_t w, std::span<const std::byte> in) override { s.put(m, w, in); }
    void put_exclusive(member_id m, std::size_t w, std::span<const std::byte> in) override {
      if constexpr (requires { s.put_exclusive(m, w, in); })
        s.put_exclusive(m, w, in);
      else
        s.put(m, w, in);
    }
    void order(member_id m) override { s.order(m); }
    void flush(member_id m) override { s.flush(m); }
    void flush_all() override { s.flush_all(); }
    std::uint64_t fetch_add(member_id m, std::size_t w, std::uint64_t v) override {
      return s.fetch_add(m, w, v);
    }
    std::uint64_t load(std::size_t w) const override { return s.load(w); }
    std::uint64_t load_control(std::size_t w) const override { return s.load_control(w); }
    void read(std::size_t w, std::span<std::byte> out) const override { s.read(w, out); }
    void get(member_id m, std::size_t w, std::span<std::byte> out) override { s.get(m, w, out); }
    void get_all(member_id m, std::span<const get_range> ranges) override { comm::get_all(s, m, ranges); }
    std::span<const std::uint64_t> view(std::size_t w, std::size_t n) const override { return s.view(w, n); }
    void sync() override { s.sync(); }
  };

 public:
  using policy_slot = slot::transport;

  /// A segment of the wrapped context, behind one virtual call per
  /// operation. Move-only; a default-constructed or moved-from segment
  /// throws `dml::comm_error` on use.
  class segment {
   public:
    segment() = default;
    [[nodiscard]] std::size_t words(member_id m) const { return self().words(m); }
    void put(member_id m, std::size_t w, std::span<const std::byte> in) { self().put(m, w, in); }
    /// The wrapped segment's put_exclusive, or its put where it has none
    /// (comm/concepts.hpp).
    void put_exclusive(member_id m, std::size_t w, std::span<const std::byte> in) {
      self().put_exclusive(m, w, in);
    }
    void order(member_id m) { self().order(m); }
    void flush(member_id m) { self().flush(m); }
    void flush_all() { self().flush_all(); }
    std::uint64_t fetch_add(member_id m, std::size_t w, std::uint64_t v) { return self().fetch_add(m, w, v); }
    [[nodiscard]] std::uint64_t load(std::size_t w) const { return self().load(w); }
    [[nodiscard]] std::uint64_t load_control(std::size_t w) const { return self().load_control(w); }
    void read(std::size_t w, std::span<std::byte> out) const { self().read(w, out); }
    void get(member_id m, std::size_t w, std::span<std::byte> out) { self().get(m, w, out); }
    /// comm::get_all of the wrapped segment (one message where it has one).
    void get_all(member_id m, std::span<const get_range> ranges) { self().get_all(m, ranges); }
    [[nodiscard]] std::span<const std::uint64_t> view(std::size_t w, std::size_t n) const {
      return self().view(w, n);
    }
    void sync() { self().sync(); }

   private:
    friend class any;
    explicit segment(std::unique_ptr<segment_base> p) noexcept : p_(std::move(p)) {}
    [[nodiscard]] segment_base& self() const {
      if (!p_)
        throw comm_error("dml::comm::any: use of an empty segment (default-constructed or moved from)");
      return *p_;
    }
    std::unique_ptr<segment_base> p_;
  };
  using segment_type = segment;

  /// Wraps `context`, which must outlive this object.
  template <class Context>
  requires(!std::is_same_v<std::remove_cv_t<Context>, any>) explicit any(Context& context)
      : p_(make_model(context)) {}
  any(const any&) = delete;
  any& operator=(const any&) = delete;
  ~any() = default;

  [[nodiscard]] member_id rank() const { return p_->rank(); }
  [[nodiscard]] std::size_t size() const { return p_->size(); }
  [[nodiscard]] const membership_view& view() const { return p_->view(); }
  [[nodiscard]] bool alive(member_id m) const { return p_->alive(m); }
  [[nodiscard]] std::chrono::steady_clock::duration wait_limit() const { return p_->wait_limit(); }
  /// Changes the wrapped context's wait limit.
  void set_wait_limit(std::chrono::steady_clock::duration limit) { p_->set_wait_limit(limit); }
  /// The wrapped context's heartbeat timeout; zero where it has no
  /// heartbeats (in-process contexts).
  [[nodiscard]] std::chrono::steady_clock::duration heartbeat_timeout() const {
    return p_->heartbeat_timeout();
  }
  /// Changes the wrapped context's heartbeat timeout; nothing where it has
  /// no heartbeats.
  void set_heartbeat_timeout(std::chrono::steady_clock::duration t) { p_->set_heartbeat_timeout(t); }
  void barrier() { p_->barrier(); }
  std::vector<std::vector<std::byte>> exchange(std::span<const std::byte> record) {
    return p_->exchange(record);
  }
  segment create_segment(std::size_t data_words, std::size_t control_words) {
    return segment(p_->create_segment(data_words, control_words));
  }

  void check_view() const { p_->check_view(); }
  agreement agree_on_survivors(std::chrono::steady_clock::time_point deadline) {
    return p_->agree_on_survivors(deadline);
  }
  [[nodiscard]] comm::attributes& attributes() noexcept { return p_->attributes(); }
  [[nodiscard]] const comm::attributes& attributes() const noexcept { return p_->attributes(); }
  /// The wrapped context's node of every member (see
  /// dml/comm/nodes.hpp); throws `dml::config_error` when it does not say.
  [[nodiscard]] const std::vector<std::size_t>& node_labels() const { return p_->node_labels(); }

  /// Whether the wrapped context may be called from a second thread of
  /// this member (false where it does not say).
  [[nodiscard]] bool background_calls() const { return p_->background_calls(); }
  /// Lets the wrapped context act in a wait loop (in-process kills and
  /// delays); nothing where it has no such step.
  void poll() { p_->poll(); }
  /// True once member m returned normally from its work (in-process
  /// contexts know it; others answer false).
  [[nodiscard]] bool finished(member_id m) const { return p_->finished(m); }
  /// Whether the wrapped context can stop this member (fault injection;
  /// in-process contexts can).
  [[nodiscard]] bool can_stop() const noexcept { return p_->can_stop(); }
  /// Stops this member as the wrapped context's `stop()` does; throws
  /// `dml::config_error` when the context cannot (see can_stop()).
  [[noreturn]] void stop() {
    p_->stop();
    throw config_error(
        "dml::comm::any: the wrapped transport cannot stop a member (in-process contexts can)");
  }

  /// The wrapped context if it is a `Context`, else nullptr.
  template <class Context>
  [[nodiscard]] Context* target() noexcept {
    if constexpr (shrinkable_transport<Context>) {  // no other type can be wrapped
      auto* m = dynamic_cast<model<Context>*>(p_.get());
      return m != nullptr ? m->c : nullptr;
    } else {
      return nullptr;
    }
  }

 private:
  struct base {
    virtual ~base() = default;
    [[nodiscard]] virtual member_id rank() const = 0;
    [[nodiscard]] virtual std::size_t size() const = 0;
    [[nodiscard]] virtual const membership_view& view() const = 0;
    [[nodiscard]] virtual bool alive(member_id m) const = 0;
    [[nodiscard]] virtual std::chrono::steady_clock::duration wait_limit() const = 0;
    virtual void set_wait_limit(std::chrono::steady_clock::duration limit) = 0;
    [[nodiscard]] virtual std::chrono::steady_clock::duration heartbeat_timeout() const = 0;
    virtual void set_heartbeat_timeout(std::chrono::steady_clock::duration t) = 0;
    virtual void barrier() = 0;
    virtual std::vector<std::vector<std::byte>> exchange(std::span<const std::byte> record) = 0;
    virtual std::unique_ptr<segment_base> create_segment(std::size_t data_words,
                                                         std::size_t control_words) = 0;
    virtual void check_view() const = 0;
    virtual agreement agree_on_survivors(std::chrono::steady_clock::time_point deadline) = 0;
    [[nodiscard]] virtual comm::attributes& attributes() noexcept = 0;
    [[nodiscard]] virtual const std::vector<std::size_t>& node_labels() const = 0;
    [[nodiscard]] virtual bool background_calls() const = 0;
    virtual void poll() = 0;
    [[nodiscard]] virtual bool finished(member_id m) const = 0;
    [[nodiscard]] virtual bool can_stop() const noexcept = 0;
    virtual void stop() = 0;  // returns where the context cannot stop
  };

  template <class C>
  struct model final : base {
    C* c;
    explicit model(C& context) noexcept : c(&context) {}
    member_id rank() const override { return c->rank(); }
    std::size_t size() const override { return c->size(); }
    const membership_view& view() const override { return c->view(); }
    bool alive(member_id m) const override { return c->alive(m); }
    std::chrono::steady_clock::duration wait_limit() const override { return c->wait_limit(); }
    void set_wait_limit(std::chrono::steady_clock::duration limit) override {
      if constexpr (requires { c->set_wait_limit(limit); }) c->set_wait_limit(limit);
    }
    std::chrono::steady_clock::duration heartbeat_timeout() const override {
      if constexpr (requires { c->heartbeat_timeout(); })
        return c->heartbeat_timeout();
      else
        return {};
    }
    void set_heartbeat_timeout(std::chrono::steady_clock::duration t) override {
      if constexpr (requires { c->set_heartbeat_timeout(t); }) c->set_heartbeat_timeout(t);
    }
    void barrier() override { c->barrier(); }
    std::vector<std::vector<std::byte>> exchange(std::span<const std::byte> record) override {
      return c->exchange(record);
    }
    std::unique_ptr<segment_base> create_segment(std::size_t data_words, std::size_t control_words) override {
      return std::make_unique<segment_model<typename C::segment_type>>(
          c->create_segment(data_words, control_words));
    }
    void check_view() const override { c->check_view(); }
    agreement agree_on_survivors(std::chrono::steady_clock::time_point deadline) override {
      return c->agree_on_survivors(deadline);
    }
    comm::attributes& attributes() noexcept override { return c->attributes(); }
    const std::vector<std::size_t>& node_labels() const override {
      if constexpr (requires { c->node_labels(); }) {
        return c->node_labels();
      } else {
        throw config_error(
            "dml::comm::any: the wrapped transport does not say which node each member runs on "
            "(inproc, mpi_rma and mpi do)");
      }
    }
    bool background_calls() const override {
      if constexpr (requires { c->background_calls(); })
        return c->background_calls();
      else
        return false;
    }
    void poll() override {
      if constexpr (requires { c->poll(); }) c->poll();
    }
    bool finished(member_id m) const override {
      if constexpr (requires { c->finished(m); })
        return c->finished(m);
      else
        return false;
    }
    bool can_stop() const noexcept override {
      return requires { c->stop(); };
    }
    void stop() override {
      if constexpr (requires { c->stop(); }) c->stop();
    }
  };

  template <class Context>
  static std::unique_ptr<base> make_model(Context& context) {
    static_assert(shrinkable_transport<Context>,
                  "dml::comm::any wraps a transport context whose group can shrink "
                  "(dml::comm::shrinkable_transport: inproc::context, mpi_rma, mpi)");
    if constexpr (shrinkable_transport<Context>) {
      static_assert(std::is_reference_v<decltype(std::declval<const Context&>().view())>,
                    "dml::comm::any: the context's view() must return a reference to its view (as inproc, "
                    "mpi_rma and mpi do), which any hands on");
      return std::make_unique<model<Context>>(context);
    } else {
      return nullptr;
    }
  }

  std::unique_ptr<base> p_;
};

static_assert(shrinkable_transport<any>);

}  // namespace comm
DML_END_NAMESPACE

// SPDX-License-Identifier: BSL-1.0
/// @file
/// The two-sided MPI transport: the segment seam implemented with Boost.MPI
/// messages. Useful where MPI one-sided communication is broken or slow, and
/// the baseline the one-sided transport (dml/comm/mpi_rma.hpp) must beat.
/// Link dml::mpi.
#pragma once

#include <dml/comm/attributes.hpp>
#include <dml/comm/concepts.hpp>
#include <dml/comm/detail/segment_base.hpp>
#include <dml/comm/get_all.hpp>
#include <dml/comm/mpi/common.hpp>
#include <dml/comm/mpi/group.hpp>
#include <dml/error.hpp>
#include <dml/fwd.hpp>

#include <mpi.h>
#include <boost/mpi/communicator.hpp>
#include <boost/mpi/exception.hpp>
#include <boost/mpi/request.hpp>
#include <boost/mpi/status.hpp>
#include <boost/optional.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <list>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

DML_BEGIN_NAMESPACE
namespace comm {

/// A transport context over two-sided MPI messages (Boost.MPI); one per
/// process.
///
/// Each member keeps its segments in ordinary memory. A put is a message to
/// the target carrying (segment, word offset, bytes); the target applies it
/// when it *progresses*: in `poll()`, `load()`, `load_control()`, `read()`,
/// `sync()`, and inside every blocking step (barrier, exchange, segment
/// creation, flush, remote atomic). Small puts are copied into a message;
/// large ones send a header and then the caller's bytes straight into the
/// target's segment, and return once MPI has sent them.
///
/// Ordering comes from MPI's non-overtaking rule (one source, one tag, one
/// communicator) and from the target applying messages in arrival order:
/// `order()` is therefore free, `flush(target)` sends a request and waits
/// for its acknowledgement, which the target sends after applying every
/// earlier put, `fetch_add` is a request answered with the old value, and
/// `get` a request answered with the words asked for.
/// Barrier and exchange use MPI_Ibarrier / MPI_Iallgather(v) and serve
/// incoming messages while they wait, and so does the agreement on the
/// survivors, so no member deadlocks waiting for a peer that is itself
/// inside a collective or a view change.
///
/// Failures: the same fault monitor and agreement as `mpi_rma` (a heartbeat
/// per member, `DML_HEARTBEAT_TIMEOUT_MS`) finds a dead member while this
/// one waits for it, in a flush, an atomic, a barrier or an exchange, and
/// the wait throws `dml::peer_failure` naming it. `agree_on_survivors()`
/// (called by `dml::fault::recover`) then moves the survivors to a
/// communicator without it; messages still travelling in the old one are
/// dropped. A flush, atomic or large put that gets no answer within
/// `wait_limit()` throws `dml::peer_failure` naming the target; MPI errors
/// (MPI_ERRORS_RETURN on the communicator, surfaced by Boost.MPI) become
/// `dml::peer_failure` or `dml::comm_error`. Collectives, including a
/// vector's destruction, must run in the same order on every member; after a
/// failure MPI is not finalized.
///
/// MPI's own progress engine does not apply dml's messages: a member
/// blocked in an MPI call of the application (MPI_Allreduce, ...) answers no
/// flush or atomic. Call a dml collective (e.g. the vector's barrier())
/// before blocking in MPI directly; see docs/running.md.
///
/// Use from one thread at a time (MPI is started with MPI_THREAD_SERIALIZED).
class mpi {
 public:
  using policy_slot = slot::transport;
  class segment;
  using segment_type = segment;

  static constexpr std::chrono::milliseconds default_wait_limit{60'000};
  /// Puts up to this many bytes travel in one copied message; larger ones
  /// are sent from the caller's buffer.
  static constexpr std::size_t eager_bytes = 32 * 1024;

  /// Starts MPI with MPI_Init_thread unless it is running already; MPI is
  /// finalized after the last dml context only if dml started it. The group
  /// is MPI_COMM_WORLD. MPI may remove its own arguments from main's
  /// (argc, argv).
  mpi(int& argc, char**& argv, std::chrono::milliseconds wait_limit = default_wait_limit)
      : env_(argc, argv, who, wait_limit), wait_limit_(wait_limit) {
    attach(MPI_COMM_WORLD);
  }
  /// As above, from arguments passed by value or read-only (`const char**`,
  /// a copy of argc): MPI sees a copy and the caller's stay unchanged. argv
  /// may be null when argc is 0.
  mpi(int argc, const char* const* argv, std::chrono::milliseconds wait_limit = default_wait_limit)
      : env_(argc, argv, who, wait_limit), wait_limit_(wait_limit) {
    attach(MPI_COMM_WORLD);
  }
  /// As above, without the program's arguments (MPI_Init_thread(nullptr,
  /// nullptr, ...)): for a library or a test that has no argv to pass.
  explicit mpi(std::chrono::milliseconds wait_limit = default_wait_limit)
      : env_(nullptr, who, wait_limit), wait_limit_(wait_limit) {
    attach(MPI_COMM_WORLD);
  }
  /// A context over (a duplicate of) `comm`. MPI must be initialized.
  explicit mpi(MPI_Comm comm, std::chrono::milliseconds wait_limit = default_wait_limit)
      : env_(who), wait_limit_(wait_limit) {
    attach(comm);
  }
  /// A context over (a duplicate of) a Boost.MPI communicator.
  explicit mpi(const boost::mpi::communicator& comm,
               std::chrono::milliseconds wait_limit = default_wait_limit)
      : mpi(static_cast<MPI_Comm>(comm), wait_limit) {}

  mpi(const mpi&) = delete;
  mpi& operator=(const mpi&) = delete;
  /// Completes the messages still being sent (bounded by wait_limit()),
  /// then meets the others and frees the monitor window. Every vector built
  /// on this context must be destroyed before it.
  ~mpi() {
    if (detail::mpi_impl::finalized()) return;
    try {
      const auto deadline = std::chrono::steady_clock::now() + wait_limit_;
      detail::mpi_impl::backoff b;
      while (!sends_.empty() && std::chrono::steady_clock::now() < deadline && !detail::mpi_impl::broken()) {
        progress();
        b.pause();
      }
    } catch (...) {  // nothing to report to from a destructor
    }
    if (!sends_.empty()) {
      detail::mpi_impl::mark_broken();
      abandon_sends();
    }
    group_.shutdown(wait_limit_, [this] { progress(); });
  }

  [[nodiscard]] member_id rank() const noexcept { return group_.rank(); }
  [[nodiscard]] std::size_t size() const noexcept { return group_.size(); }
  /// The node each member runs on, named by the lowest member id on it
  /// (from MPI_Comm_split_type with MPI_COMM_TYPE_SHARED at start-up), one
  /// label per original member. `dml::comm::node_groups` reads it.
  [[nodiscard]] const std::vector<std::size_t>& node_labels() const noexcept { return group_.node_labels(); }
  /// The view this member works in (epoch and live set, original ranks).
  [[nodiscard]] const membership_view& view() const noexcept { return group_.view(); }
  /// False once an operation aimed at m failed or went unanswered, or m's
  /// heartbeat stalled past the heartbeat timeout.
  [[nodiscard]] bool alive(member_id m) const { return group_.alive(m); }
  /// How long a member's heartbeat may stall before it is suspected.
  void set_heartbeat_timeout(std::chrono::steady_clock::duration t) { group_.set_heartbeat_timeout(t); }
  [[nodiscard]] std::chrono::steady_clock::duration heartbeat_timeout() const noexcept {
    return group_.heartbeat_timeout();
  }
  [[nodiscard]] std::chrono::steady_clock::duration wait_limit() const noexcept { return wait_limit_; }
  /// Longest any blocking step may take before it throws.
  void set_wait_limit(std::chrono::steady_clock::duration limit) noexcept { wait_limit_ = limit; }
  /// The communicator of the current view.
  [[nodiscard]] const boost::mpi::communicator& communicator() const noexcept { return comm_; }

  /// Throws `dml::peer_failure` when another member has started a view
  /// change that this member has not joined (one local load).
  void check_view() const { group_.check_view(); }

  /// The agreement primitive (see `comm::shrinkable_transport`): agrees with
  /// the other survivors on a view without the failed members and switches
  /// to their communicator; messages of the old one are dropped. Returns
  /// the current view at once when no failure is known.
  comm::agreement agree_on_survivors(std::chrono::steady_clock::time_point deadline) {
    const auto before = group_.view().epoch;
    // Messages are served while the survivors agree: a member waiting for an
    // answer from this one (a get, flush or atomic) would otherwise wait
    // until its wait limit and declare this live member failed instead of
    // noticing the view change. A send that fails marks its target failed,
    // which the agreement takes into account.
    auto a = group_.agree_on_survivors(deadline, [this] {
      try {
        progress();
      } catch (const peer_failure&) {
      }
    });
    if (a.view.epoch != before) {
      abandon_sends();  // they travel in the old communicator, which nobody reads any more
      replies_.clear();
      got_.clear();
      comm_ = boost::mpi::communicator(group_.current(), boost::mpi::comm_attach);
      segments_made_ = 0;
    }
    return a;
  }
  /// Whether another thread may make this context's MPI calls while the
  /// thread that made the context does not (vectors' scatter_async()):
  /// when MPI runs at MPI_THREAD_SERIALIZED or above.
  [[nodiscard]] bool background_calls() const { return detail::mpi_impl::serialized_threads(); }
  /// Storage for the layers above the transport (dml/comm/attributes.hpp).
  [[nodiscard]] comm::attributes& attributes() noexcept { return group_.attributes(); }
  [[nodiscard]] const comm::attributes& attributes() const noexcept { return group_.attributes(); }

  /// Waits until every member entered the barrier, serving messages meanwhile.
  void barrier() {
    group_.collective("barrier", [&] {
      detail::mpi_impl::barrier(group_.current(), wait_limit_, who, [this] {
        progress();
        watch("a barrier");
      });
    });
  }

  /// Collective: every member's record, indexed like `view().live`.
  std::vector<std::vector<std::byte>> exchange(std::span<const std::byte> record) {
    return group_.collective("exchange", [&] {
      return detail::mpi_impl::all_gather_bytes(group_.current(), record, wait_limit_, who, [this] {
        progress();
        watch("an exchange");
      });
    });
  }

  /// Collective: zeroed local memory of data_words + control_words words
  /// (sizes may differ between members), reachable by every member's puts.
  segment create_segment(std::size_t data_words, std::size_t control_words);

  /// Applies every message that has arrived; called from every wait loop of
  /// a vector.
  void poll() { progress(); }

 private:
  static constexpr const char* who = "dml::comm::mpi";
  static constexpr int tag = 0x444d;  // below the MPI-guaranteed tag bound 32767

  enum kind : std::uint64_t {
    put_eager = 1,
    put_large,
    add_request,
    add_reply,
    flush_request,
    flush_ack,
    get_request,
    get_reply,
    get_many_request
  };
  static constexpr std::size_t header_words = 4;
  // A message: {kind | segment << 8, a, b, c} followed by payload words.
  //   put_eager     a = word offset, b = bytes; payload = the bytes, zero padded
  //   put_large     a = word offset, b = bytes; payload = the partial last word if
  //                 any; then the full words follow as byte messages of <= 1 GiB
  //   add_request   a = control word, b = value, c = token
  //   add_reply     a = token, b = old value
  //   flush_request c = token          flush_ack  a = token
  //   get_request   a = word offset, b = bytes (<= chunk_bytes), c = token
  //   get_reply     a = token, b = bytes; payload = the words read, zero padded
  //   get_many_request  a = ranges, c = token; payload = (word offset, bytes)
  //                 per range; answered by one get_reply whose payload is
  //                 every range's words (each zero padded), in order
  static constexpr std::size_t chunk_bytes = std::size_t{1} << 30;

  struct memory {
    std::vector<std::uint64_t> data;
    std::vector<std::uint64_t> control;
  };
  struct outgoing {
    std::vector<std::uint64_t> words;
    boost::mpi::request request;
    member_id target = 0;
  };

  void attach(MPI_Comm comm) {
    group_.attach(comm, wait_limit_);
    comm_ = boost::mpi::communicator(group_.world(), boost::mpi::comm_attach);  // the group frees it
  }

  // Called while a collective waits.
  void watch(const char* what) { group_.watch(what); }

  [[noreturn]] void fail_peer(member_id peer, const std::string& what) {
    group_.mark_failed(peer);
    throw peer_failure(peer, std::string(who) + ": " + what);
  }

  // Rank of a member in the current communicator, for sends.
  [[nodiscard]] int rank_of(member_id m) const {
    const int r = group_.rank_of(m);
    if (r < 0)
      throw peer_failure(m,
                         std::string(who) + ": member " + std::to_string(m) + " is not in the current view");
    return r;
  }

  // Sends in flight in a communicator nobody reads any more (or at a
  // shut-down that could not complete them): MPI may still read their
  // buffers, so they are kept alive for the rest of the process.
  void abandon_sends() {
    if (sends_.empty()) return;
    detail::mpi_impl::keep_for_mpi(std::move(sends_));
    sends_.clear();
  }

  // Runs f, turning Boost.MPI's exceptions into dml's.
  template <class F>
  decltype(auto) guarded(const char* what, F&& f) {
    try {
      return f();
    } catch (const boost::mpi::exception& e) {
      detail::mpi_impl::mark_broken();
      throw comm_error(std::string(who) + ": " + what + " failed: " + e.what());
    }
  }
  template <class F>
  decltype(auto) guarded_peer(member_id peer, const char* what, F&& f) {
    try {
      return f();
    } catch (const boost::mpi::exception& e) {
      fail_peer(peer, std::string(what) + " to member " + std::to_string(peer) + " failed: " + e.what());
    }
  }

  // Sends header + payload (zero padded to whole words) from an owned buffer.
  void send_words(member_id target, std::array<std::uint64_t, header_words> header,
                  std::span<const std::byte> payload = {}) {
    send_filled(target, header, (payload.size() + 7) / 8, [&](std::span<std::uint64_t> words) {
      if (!payload.empty()) std::memcpy(words.data(), payload.data(), payload.size());
    });
  }

  // Sends header + `payload_words` zeroed words that fill(words) writes.
  template <class Fill>
  void send_filled(member_id target, std::array<std::uint64_t, header_words> header,
                   std::size_t payload_words, Fill&& fill) {
    auto& out = sends_.emplace_back();
    out.target = target;
    out.words.assign(header_words + payload_words, 0);
    std::copy(header.begin(), header.end(), out.words.begin());
    fill(std::span(out.words).subspan(header_words));
    guarded_peer(target, "send", [&] {
      out.request = comm_.isend(rank_of(target), tag, out.words.data(), static_cast<int>(out.words.size()));
    });
  }

  // True once r has completed (Boost.MPI's test() answers only while the
  // request is still active).
  static bool finished(boost::mpi::request& r) { return !r.active() || static_cast<bool>(r.test()); }

  // Forgets sends MPI has completed.
  void reap() {
    for (auto it = sends_.begin(); it != sends_.end();) {
      const member_id target = it->target;
      const bool done = guarded_peer(target, "send", [&] { return finished(it->request); });
      it = done ? sends_.erase(it) : std::next(it);
    }
  }

  // Applies every message that has arrived.
  void progress() {
    if (!sends_.empty()) reap();
    for (;;) {
      const auto st = guarded("MPI_Iprobe", [&] { return comm_.iprobe(boost::mpi::any_source, tag); });
      if (!st) return;
      const member_id source = group_.member_of(st->source());
      // MPI_Get_count directly: boost::mpi::status::count's optional<int>
      // trips GCC 12's -Wmaybe-uninitialized once inlined here.
      int count = 0;
      const MPI_Status& raw = *st;
      if (MPI_Get_count(&raw, MPI_UINT64_T, &count) != MPI_SUCCESS || count == MPI_UNDEFINED ||
          count < static_cast<int>(header_words))
        throw comm_error(std::string(who) + ": malformed message from member " + std::to_string(source));
      inbox_.resize(static_cast<std::size_t>(count));
      receive_inbox(source, st->source(), count);
      dispatch(source);
    }
  }

  // Receives the probed message into inbox_. Not a blocking MPI_Recv: MPI
  // pulls a message above its eager limit from the sender, and a sender that
  // dies meanwhile leaves that receive waiting for ever (Open MPI's
  // shared-memory transport prints "Read -1, expected N, errno = 3" and never
  // completes it). The wait ends when the heartbeat declares the sender dead;
  // the abandoned receive keeps its buffer, since MPI may still write to it.
  void receive_inbox(member_id source, int rank, int count) {
    auto r = guarded_peer(source, "receive", [&] { return comm_.irecv(rank, tag, inbox_.data(), count); });
    try {
      wait_until(source, "the rest of a message",
                 [&] { return guarded_peer(source, "receive", [&] { return finished(r); }); });
    } catch (...) {
      detail::mpi_impl::keep_for_mpi(std::move(inbox_));
      inbox_ = {};
      throw;
    }
  }

  memory& lookup(std::uint64_t id, member_id source) {
    const auto it = segments_.find(id);
    if (it == segments_.end())
      throw comm_error(std::string(who) + ": member " + std::to_string(source) + " wrote to segment " +
                       std::to_string(id) +
                       ", which this member does not have (were vectors created or "
                       "destroyed in a different order on different members?)");
    return *it->second;
  }

  void dispatch(member_id source) {
    const std::uint64_t k = inbox_[0] & 0xff;
    const std::uint64_t id = inbox_[0] >> 8;
    const std::uint64_t a = inbox_[1], b = inbox_[2], c = inbox_[3];
    switch (k) {
      case put_eager: {
        auto& mem = lookup(id, source);
        const std::size_t words = (b + 7) / 8;
        if (a > mem.data.size() || words > mem.data.size() - a || words > inbox_.size() - header_words)
          throw comm_error(std::string(who) + ": put from member " + std::to_string(source) +
                           " out of range");
        std::copy_n(inbox_.begin() + header_words, words, mem.data.begin() + static_cast<std::ptrdiff_t>(a));
        return;
      }
      case put_large: {
        auto& mem = lookup(id, source);
        const std::size_t full = b / 8, words = (b + 7) / 8;
        if (a > mem.data.size() || words > mem.data.size() - a)
          throw comm_error(std::string(who) + ": put from member " + std::to_string(source) +
                           " out of range");
        if (words > full) mem.data[a + full] = inbox_[header_words];
        auto* dst = reinterpret_cast<char*>(mem.data.data() + a);
        for (std::size_t off = 0; off < 8 * full; off += chunk_bytes) {
          const int n = static_cast<int>(std::min(chunk_bytes, 8 * full - off));
          auto r = guarded_peer(source, "receive",
                                [&] { return comm_.irecv(rank_of(source), tag, dst + off, n); });
          wait_until(source, "the rest of a large put",
                     [&] { return guarded_peer(source, "receive", [&] { return finished(r); }); });
        }
        return;
      }
      case add_request: {
        auto& mem = lookup(id, source);
        if (a >= mem.control.size())
          throw comm_error(std::string(who) + ": atomic from member " + std::to_string(source) +
                           " out of range");
        const std::uint64_t old = mem.control[a];
        mem.control[a] = old + b;
        send_words(source, {add_reply, c, old, 0});
        return;
      }
      case flush_request:
        send_words(source, {flush_ack, c, 0, 0});
        return;
      case get_request: {
        auto& mem = lookup(id, source);
        const std::size_t words = (b + 7) / 8;
        if (a > mem.data.size() || words > mem.data.size() - a || b > chunk_bytes)
          throw comm_error(std::string(who) + ": get from member " + std::to_string(source) +
                           " out of range");
        send_words(source, {get_reply, c, b, 0},
                   std::as_bytes(std::span(mem.data.data() + static_cast<std::ptrdiff_t>(a), words)));
        return;
      }
      case get_many_request: {
        auto& mem = lookup(id, source);
        const std::size_t pairs = inbox_.size() - header_words;
        if (a == 0 || pairs % 2 != 0 || a != pairs / 2)
          throw comm_error(std::string(who) + ": malformed get from member " + std::to_string(source));
        std::size_t total = 0;
        for (std::size_t i = 0; i < a; ++i) {
          const std::uint64_t w = inbox_[header_words + 2 * i], bytes = inbox_[header_words + 2 * i + 1];
          const std::size_t words = (bytes + 7) / 8;
          if (bytes > chunk_bytes || w > mem.data.size() || words > mem.data.size() - w ||
              8 * words > chunk_bytes - total)
            throw comm_error(std::string(who) + ": get from member " + std::to_string(source) +
                             " out of range");
          total += 8 * words;
        }
        send_filled(source, {get_reply, c, total, 0}, total / 8, [&](std::span<std::uint64_t> out) {
          auto at = out.begin();
          for (std::size_t i = 0; i < a; ++i) {
            const std::uint64_t w = inbox_[header_words + 2 * i], bytes = inbox_[header_words + 2 * i + 1];
            const auto words = static_cast<std::ptrdiff_t>((bytes + 7) / 8);
            at = std::copy_n(mem.data.begin() + static_cast<std::ptrdiff_t>(w), words, at);
          }
        });
        return;
      }
      case get_reply:
        got_[a].assign(inbox_.begin() + header_words, inbox_.end());
        return;
      case add_reply:
        replies_[a] = b;
        return;
      case flush_ack:
        replies_[a] = 0;
        return;
      default:
        throw comm_error(std::string(who) + ": unknown message kind " + std::to_string(k) + " from member " +
                         std::to_string(source));
    }
  }

  // Waits, serving messages unless told not to, until ready() or the wait
  // limit, which counts as a failure of `peer`.
  template <class Ready>
  void wait_until(member_id peer, const char* what, Ready&& ready) {
    const auto start = std::chrono::steady_clock::now();
    detail::mpi_impl::backoff b;
    while (!ready()) {
      if (!alive(peer))
        fail_peer(peer, "member " + std::to_string(rank()) + " waited for an answer (" + what +
                            ") from member " + std::to_string(peer) +
                            ", which has failed (heartbeat silent)");
      if (std::chrono::steady_clock::now() - start > wait_limit_)
        fail_peer(peer, std::string("member ") + std::to_string(peer) + " did not answer (" + what +
                            ") within " + std::to_string(std::chrono::duration<double>(wait_limit_).count()) +
                            " s");
      b.pause();
    }
  }

  // Waits for the answer to request `token` from `peer`, serving messages.
  std::uint64_t await_reply(std::uint64_t token, member_id peer, const char* what) {
    wait_until(peer, what, [&] {
      progress();
      return replies_.contains(token);
    });
    const auto it = replies_.find(token);
    const std::uint64_t v = it->second;
    replies_.erase(it);
    return v;
  }

  friend class segment;
  detail::mpi_impl::environment env_;  // first: outlives the group
  std::chrono::steady_clock::duration wait_limit_;
  detail::mpi_impl::group group_{who};
  boost::mpi::communicator comm_;  // the current view's communicator (owned by group_)
  std::map<std::uint64_t, memory*> segments_;
  std::uint64_t segments_made_ = 0;  // in the current view
  std::list<outgoing> sends_;
  std::vector<std::uint64_t> inbox_;
  std::uint64_t next_token_ = 1;
  std::unordered_map<std::uint64_t, std::uint64_t> replies_;
  std::unordered_map<std::uint64_t, std::vector<std::uint64_t>> got_;  // get replies by token
};

/// One member's handle on a two-sided segment; see mpi. Move-only;
/// destruction is collective and must happen in the same order everywhere.
class mpi::segment : detail::segment_impl::segment_base<mpi::segment, mpi> {
  using handle_base = detail::segment_impl::segment_base<segment, mpi>;

 public:
  segment() = default;
  segment(segment&& o) noexcept : handle_base(std::move(o)) { take(o); }
  segment& operator=(segment&& o) noexcept { return move_assign(o); }
  ~segment() { release(); }

  using handle_base::control_words;
  using handle_base::words;

  /// Sends `bytes` for target's data words from `word` on (a partial last
  /// word is zero padded). The caller may reuse its buffer on return.
  void put(member_id target, std::size_t word, std::span<const std::byte> bytes) {
    check_range(target, word, bytes.size());
    if (bytes.empty() || !ctx_->alive(target)) return;  // lost like a write to a dead host; flush reports it
    if (target == own()) {
      write_own(word, bytes);
      return;
    }
    dirty_[target] = 1;
    if (bytes.size() <= eager_bytes) {
      ctx_->send_words(target, {head(put_eager), word, bytes.size(), 0}, bytes);
      return;
    }
    const std::size_t full = bytes.size() / 8 * 8;
    ctx_->send_words(target, {head(put_large), word, bytes.size(), 0}, bytes.subspan(full));
    std::vector<boost::mpi::request> parts;
    for (std::size_t off = 0; off < full; off += chunk_bytes) {
      const int n = static_cast<int>(std::min(chunk_bytes, full - off));
      const auto* src = reinterpret_cast<const char*>(bytes.data() + off);
      parts.push_back(ctx_->guarded_peer(
          target, "put", [&] { return ctx_->comm_.isend(ctx_->rank_of(target), tag, src, n); }));
    }
    ctx_->wait_until(target, "a large put", [&] {
      ctx_->progress();
      return std::all_of(parts.begin(), parts.end(), [&](boost::mpi::request& r) {
        return ctx_->guarded_peer(target, "put", [&] { return finished(r); });
      });
    });
  }

  /// Puts to one target are applied in order already.
  void order(member_id) {}

  /// Waits until target has applied every earlier put.
  void flush(member_id target) {
    require_alive(target, "flush");
    if (target >= dirty_.size() || dirty_[target] == 0) return;
    const std::uint64_t token = ctx_->next_token_++;
    ctx_->send_words(target, {head(flush_request), 0, 0, token});
    (void)ctx_->await_reply(token, target, "flush");
    dirty_[target] = 0;
  }

  /// flush() of every target written to since its last flush, requests
  /// sent to all of them before waiting for any.
  void flush_all() {
    require_handle();
    std::vector<std::pair<member_id, std::uint64_t>> waiting;
    for (member_id m = 0; m < dirty_.size(); ++m) {
      if (dirty_[m] == 0) continue;
      require_alive(m, "flush");
      const std::uint64_t token = ctx_->next_token_++;
      ctx_->send_words(m, {head(flush_request), 0, 0, token});
      waiting.emplace_back(m, token);
    }
    for (auto [m, token] : waiting) {
      (void)ctx_->await_reply(token, m, "flush");
      dirty_[m] = 0;
    }
  }

  /// Atomic add on target's control word, applied after every earlier put
  /// to target; returns the previous value.
  std::uint64_t fetch_add(member_id target, std::size_t control_word, std::uint64_t value) {
    require_alive(target, "remote atomic");
    check_control(target, control_word);
    if (target == own()) {
      const std::uint64_t old = mem_->control[control_word];
      mem_->control[control_word] = old + value;
      return old;
    }
    const std::uint64_t token = ctx_->next_token_++;
    ctx_->send_words(target, {head(add_request), control_word, value, token});
    dirty_[target] = 0;  // applied after every earlier put, which the reply proves
    return ctx_->await_reply(token, target, "remote atomic");
  }

  /// Copies source's data words from `word` on into `out`: a request that
  /// source answers with the words once it has applied every earlier put
  /// of this member (MPI does not overtake), in pieces of at most 1 GiB.
  void get(member_id source, std::size_t word, std::span<std::byte> out) {
    check_range(source, word, out.size());
    require_alive(source, "get");
    if (out.empty()) return;
    if (source == own()) {
      ctx_->progress();
      std::memcpy(out.data(), mem_->data.data() + word, out.size());
      return;
    }
    for (std::size_t off = 0; off < out.size(); off += chunk_bytes) {
      const std::size_t n = std::min(chunk_bytes, out.size() - off);
      const std::uint64_t token = ctx_->next_token_++;
      ctx_->send_words(source, {head(get_request), word + off / 8, n, token});
      const auto words = await_get_reply(source, token, n);
      std::memcpy(out.data() + off, words.data(), n);
    }
  }

  /// get() of every range (comm::get_all), asked of source in one message
  /// and answered in one: source reads the ranges in one step, with none of
  /// its own writes between them.
  void get_all(member_id source, std::span<const get_range> ranges) {
    std::size_t total = 0;
    for (const auto& r : ranges) {
      check_range(source, r.word, r.out.size());
      total += (r.out.size() + 7) / 8 * 8;
    }
    require_alive(source, "get");
    if (source == own() || ranges.size() < 2 || total > chunk_bytes) {
      for (const auto& r : ranges) get(source, r.word, r.out);
      return;
    }
    std::vector<std::uint64_t> asked;
    asked.reserve(2 * ranges.size());
    for (const auto& r : ranges) {
      asked.push_back(r.word);
      asked.push_back(r.out.size());
    }
    const std::uint64_t token = ctx_->next_token_++;
    ctx_->send_words(source, {head(get_many_request), ranges.size(), 0, token},
                     std::as_bytes(std::span(asked)));
    const auto words = await_get_reply(source, token, total);
    const auto* from = reinterpret_cast<const std::byte*>(words.data());
    for (const auto& r : ranges) {
      if (!r.out.empty()) std::memcpy(r.out.data(), from, r.out.size());
      from += (r.out.size() + 7) / 8 * 8;
    }
  }

  /// One of the own data words, after applying arrived messages.
  [[nodiscard]] std::uint64_t load(std::size_t word) const {
    check_own_range(word, 8);
    ctx_->progress();
    return mem_->data[word];
  }
  /// One of the own control words, after applying arrived messages.
  [[nodiscard]] std::uint64_t load_control(std::size_t word) const {
    check_own_control(word);  // control_words_[own()] is mem_->control.size()
    ctx_->progress();
    return mem_->control[word];
  }
  /// Copies own data words from `word` on into `out`, after applying
  /// arrived messages.
  void read(std::size_t word, std::span<std::byte> out) const {
    check_own_range(word, out.size());
    ctx_->progress();
    std::memcpy(out.data(), mem_->data.data() + word, out.size());
  }
  /// Own data words in place (see comm::segment for when that is safe);
  /// applies nothing: call sync() or load() first.
  [[nodiscard]] std::span<const std::uint64_t> view(std::size_t word, std::size_t words) const {
    check_own_words(word, words);
    return {mem_->data.data() + word, words};
  }
  /// Applies arrived messages.
  void sync() {
    if (ctx_ != nullptr) ctx_->progress();
  }

 private:
  friend class mpi;
  friend handle_base;
  static constexpr const char* who = "dml::comm::mpi";

  [[nodiscard]] member_id own() const noexcept { return ctx_->rank(); }
  // Waits for the get reply to `token` from source and returns its words
  // (at least `bytes` of them).
  std::vector<std::uint64_t> await_get_reply(member_id source, std::uint64_t token, std::size_t bytes) {
    ctx_->wait_until(source, "get", [&] {
      ctx_->progress();
      return ctx_->got_.contains(token);
    });
    auto words = std::move(ctx_->got_.extract(token).mapped());
    if (8 * words.size() < bytes)
      throw comm_error(std::string(who) + ": short get reply from member " + std::to_string(source));
    return words;
  }
  [[nodiscard]] std::uint64_t head(kind k) const noexcept {
    return static_cast<std::uint64_t>(k) | (id_ << 8);
  }

  void write_own(std::size_t word, std::span<const std::byte> bytes) {
    const std::size_t full = bytes.size() / 8;
    std::memcpy(mem_->data.data() + word, bytes.data(), 8 * full);
    if (const std::size_t tail = bytes.size() % 8; tail != 0) {
      std::uint64_t w = 0;
      std::memcpy(&w, bytes.data() + 8 * full, tail);
      mem_->data[word + full] = w;
    }
  }

  // The move of what the base does not hold (see segment_base).
  void take(segment& o) noexcept {
    id_ = std::exchange(o.id_, 0);
    mem_ = std::move(o.mem_);
    dirty_ = std::move(o.dirty_);
  }

  // Collective: every member completes its puts (flush), then waits until
  // everyone has; afterwards no message for this segment is in flight.
  void release() noexcept {
    if (ctx_ == nullptr) return;
    if (!detail::mpi_impl::finalized() && !detail::mpi_impl::broken()) {
      try {
        flush_all();
        detail::mpi_impl::barrier(ctx_->group_.current(), ctx_->wait_limit_, who, [this] {
          ctx_->progress();
          ctx_->watch("the release of a vector's segment");
        });
      } catch (...) {  // marked broken by the failing step
      }
    }
    ctx_->segments_.erase(id_);
    ctx_ = nullptr;
    mem_.reset();
  }

  std::uint64_t id_ = 0;
  std::unique_ptr<memory> mem_;
  std::vector<char> dirty_;  // per target: puts not yet flushed
};

inline mpi::segment mpi::create_segment(std::size_t data_words, std::size_t control_words) {
  if (data_words > (std::numeric_limits<std::size_t>::max() >> 12) ||
      control_words > (std::numeric_limits<std::size_t>::max() >> 12))
    throw config_error(std::string(who) + ": segment of " + std::to_string(data_words) + " + " +
                       std::to_string(control_words) + " words is too large");
  segment s;
  s.mem_ = std::make_unique<memory>();
  s.mem_->data.assign(data_words, 0);
  s.mem_->control.assign(control_words, 0);
  // Ids name the view and the segment's place in it, so members that made
  // a different number of segments before a view change agree after it.
  s.id_ = (group_.view().epoch << 32) | ++segments_made_;
  // Registered before the collective: a peer that finishes it first may
  // write at once.
  segments_[s.id_] = s.mem_.get();
  s.ctx_ = this;
  const std::array<std::uint64_t, 3> mine{data_words, control_words, s.id_};
  const auto all = exchange(std::as_bytes(std::span(mine)));
  const auto& live = group_.view().live;
  s.data_words_.assign(size(), 0);
  s.control_words_.assign(size(), 0);
  s.dirty_.assign(size(), 0);
  if (all.size() != live.size())
    throw comm_error(std::string(who) + ": segment size records do not match the view");
  for (std::size_t i = 0; i < all.size(); ++i) {
    std::array<std::uint64_t, 3> theirs{};
    if (all[i].size() != sizeof theirs)
      throw comm_error(std::string(who) + ": malformed segment size record");
    std::memcpy(theirs.data(), all[i].data(), sizeof theirs);
    if (theirs[2] != s.id_)
      throw comm_error(std::string(who) + ": members " + std::to_string(rank()) + " and " +
                       std::to_string(live[i]) +
                       " created segments in a different order (vectors created or destroyed in a different "
                       "order on different members?)");
    s.data_words_[live[i]] = static_cast<std::size_t>(theirs[0]);
    s.control_words_[live[i]] = static_cast<std::size_t>(theirs[1]);
  }
  return s;
}

}  // namespace comm
DML_END_NAMESPACE

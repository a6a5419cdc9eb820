// SPDX-License-Identifier: BSL-1.0
/// @file
/// The rdma-core transport: reliable-connected queue pairs, RDMA WRITE into
/// registered segments, remote atomics for notify and ack. Queue-pair
/// records, memory keys and addresses travel over MPI (the Boost.MPI
/// bootstrap of <dml/comm/bootstrap.hpp>), which also runs barrier and
/// exchange. Link dml::verbs (ibverbs, MPI and Boost.MPI).
#pragma once

#include <dml/comm/bootstrap.hpp>
#include <dml/comm/concepts.hpp>
#include <dml/comm/detail/segment_base.hpp>
#include <dml/comm/mpi/common.hpp>
#include <dml/comm/verbs/device.hpp>
#include <dml/error.hpp>
#include <dml/fwd.hpp>

#include <infiniband/verbs.h>
#include <mpi.h>
#include <unistd.h>
#include <boost/mpi/communicator.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

DML_BEGIN_NAMESPACE
namespace detail::verbs_impl {

/// What a member publishes about the queue pair it created for one peer.
struct qp_record {
  std::uint32_t qpn = 0;
  std::uint32_t psn = 0;
  std::uint16_t lid = 0;
  std::uint8_t mtu = 0;      ///< enum ibv_mtu of its port
  std::uint8_t use_grh = 0;  ///< it addresses by GID
  std::uint8_t atomics = 0;  ///< its device executes remote atomics
  std::uint8_t reads = 0;    ///< its queue pair answers RDMA READs (responder resources)
  std::uint8_t reserved[2] = {};
  std::uint8_t gid[16] = {};
};
static_assert(std::is_trivially_copyable_v<qp_record> && sizeof(qp_record) == 32);

/// What a member publishes about its memory of one segment.
struct region_record {
  std::uint64_t addr = 0;
  std::uint64_t data_words = 0;
  std::uint64_t control_words = 0;
  std::uint32_t rkey = 0;
  std::uint32_t ok = 0;  ///< 0: the member failed; its error text follows the record
};
static_assert(std::is_trivially_copyable_v<region_record>);

struct free_deleter {
  void operator()(std::byte* p) const noexcept { std::free(p); }
};
using memory_ptr = std::unique_ptr<std::byte, free_deleter>;

/// Zeroed, page-aligned memory of at least `bytes` (at least one page).
inline memory_ptr allocate_pages(std::size_t bytes, std::size_t& allocated) {
  const long page_size = ::sysconf(_SC_PAGESIZE);
  const std::size_t page = page_size > 0 ? static_cast<std::size_t>(page_size) : 4096;
  allocated = std::max(page, (bytes + page - 1) / page * page);
  memory_ptr m(static_cast<std::byte*>(std::aligned_alloc(page, allocated)));
  if (!m)
    throw comm_error(std::string(who) + ": out of memory allocating " + std::to_string(allocated) + " bytes");
  std::memset(m.get(), 0, allocated);
  return m;
}

/// The duplicated communicator, freed unless the group is broken (a free
/// could then wait for a dead member).
struct owned_comm {
  MPI_Comm comm = MPI_COMM_NULL;
  owned_comm() = default;
  owned_comm(const owned_comm&) = delete;
  owned_comm& operator=(const owned_comm&) = delete;
  ~owned_comm() {
    if (comm != MPI_COMM_NULL && !mpi_impl::finalized() && !mpi_impl::broken()) MPI_Comm_free(&comm);
  }
};

/// One member's local failure, for the collective agreement below.
struct failure {
  char kind = 0;  ///< 0 none, 'c' config_error, 'e' comm_error
  std::string message;
};

template <class Fn>
failure attempt(Fn&& fn) {
  try {
    fn();
  } catch (const config_error& e) {
    return {'c', e.what()};
  } catch (const error& e) {
    return {'e', e.what()};
  } catch (const std::exception& e) {  // std::bad_alloc and the like
    return {'e', std::string(who) + ": " + e.what()};
  }
  return {};
}

/// Collective: every member reports whether its local step worked. If any
/// failed, every member throws, so none is left waiting for the others: the
/// member's own error when it failed itself, otherwise one naming the first
/// member that failed.
template <class Progress>
void agree(MPI_Comm comm, std::chrono::steady_clock::duration limit, const char* step, const failure& mine,
           Progress&& progress) {
  std::string record(1, mine.kind == 0 ? '-' : mine.kind);
  record += mine.message;
  const auto all = mpi_impl::all_gather_bytes(comm, std::as_bytes(std::span<const char>(record)), limit, who,
                                              std::forward<Progress>(progress));
  if (mine.kind == 'c') throw config_error(mine.message);
  if (mine.kind != 0) throw comm_error(mine.message);
  for (std::size_t m = 0; m < all.size(); ++m) {
    if (all[m].empty() || static_cast<char>(all[m][0]) == '-') continue;
    std::string text(reinterpret_cast<const char*>(all[m].data()) + 1, all[m].size() - 1);
    if (const std::string prefix = std::string(who) + ": "; text.rfind(prefix, 0) == 0)
      text.erase(0, prefix.size());
    const std::string message =
        std::string(who) + ": member " + std::to_string(m) + " could not " + step + ": " + text;
    if (static_cast<char>(all[m][0]) == 'c') throw config_error(message);
    throw comm_error(message);
  }
}

inline std::string seconds(std::chrono::steady_clock::duration d) {
  return std::to_string(std::chrono::duration<double>(d).count()) + " s";
}

}  // namespace detail::verbs_impl

namespace comm::verbs {

/// A transport context over rdma-core's verbs; one per process (one member
/// per MPI process of the communicator it is built on).
///
/// Connections: every member creates one reliable-connected (RC) queue pair
/// for every member of the group, itself included (a loopback pair), and
/// connects it to that member's pair for it. A pair per member pair is the
/// simplest correct choice: any topology, and any change of topology after
/// a failure, finds its connection ready; the cost is n queue pairs per
/// member, which suits groups of up to a few hundred members.
///
/// Every segment is one registered memory region per member (data words,
/// then control words; LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ, plus
/// REMOTE_ATOMIC when the device has atomics). Members publish its address,
/// size and rkey when the segment is created.
///
/// - put: RDMA WRITE. Up to the queue pair's inline limit the bytes go
///   inline; larger puts are copied into registered staging memory and sent
///   in pieces, so the caller may reuse its buffer when put returns. A
///   partial last word is zero padded.
/// - order and flush: wait until every work request posted to the target
///   has completed. IBV_SEND_FENCE would not do for order: it only holds a
///   request back behind earlier RDMA READs and atomics, not behind writes,
///   and InfiniBand does not promise that the bytes of one write are placed
///   before those of the next.
/// - fetch_add: completes the earlier writes to the target, then
///   IBV_WR_ATOMIC_FETCH_AND_ADD on the 8-byte-aligned control word, waiting
///   for the returned previous value.
/// - get: completes the earlier writes to the source, then RDMA READs into
///   registered staging memory, piece by piece, copied out on completion.
/// - load, load_control, read: acquire loads of the own region; sync: an
///   acquire fence. The own control words are written by nothing but the
///   adapter's atomics.
/// - barrier, exchange and segment creation: MPI nonblocking collectives on
///   a duplicate of the communicator, polled up to `wait_limit()`.
///
/// Every work request is signalled and every wait polls the completion
/// queue up to `wait_limit()`, then throws dml::timeout. A failed work
/// completion marks the queue pair: IBV_WC_RETRY_EXC_ERR and
/// IBV_WC_RNR_RETRY_EXC_ERR (the peer stopped acknowledging) make the peer
/// failed (`alive()` false, dml::peer_failure naming it, and the group
/// refuses further collectives as with the MPI transports); any other status
/// is a dml::comm_error with ibv_wc_status_str's text. Both are thrown by
/// the next order, flush or fetch_add aimed at that member; puts to a failed
/// peer are dropped, like writes to a dead host.
///
/// Device, port and GID index: see dml::comm::verbs::options and the
/// environment variables DML_VERBS_DEVICE, DML_VERBS_PORT and
/// DML_VERBS_GID_INDEX. A member that cannot open its device makes every
/// member throw dml::config_error, naming it.
///
/// Collective operations, including the destruction of a segment (that is,
/// of a vector), must happen in the same order on every member. Use from one
/// thread at a time.
class context {
 public:
  using policy_slot = slot::transport;
  class segment;
  using segment_type = segment;

  static constexpr std::chrono::milliseconds default_wait_limit{60'000};

  /// Starts MPI with MPI_Init_thread unless it is running already (it is
  /// finalized after the last dml context only if dml started it); the group
  /// is MPI_COMM_WORLD.
  context(int& argc, char**& argv, options opts = {}) : env_(argc, argv, who) { start(MPI_COMM_WORLD, opts); }
  context(int& argc, char**& argv, std::chrono::milliseconds wait_limit)
      : context(argc, argv, with_limit(wait_limit)) {}
  /// A context over (a duplicate of) `comm`. MPI must be initialized.
  explicit context(MPI_Comm comm, options opts = {}) : env_(who) { start(comm, opts); }
  context(MPI_Comm comm, std::chrono::milliseconds wait_limit) : context(comm, with_limit(wait_limit)) {}
  /// A context over (a duplicate of) a Boost.MPI communicator.
  explicit context(const boost::mpi::communicator& comm, options opts = {})
      : context(static_cast<MPI_Comm>(comm), std::move(opts)) {}
  context(const boost::mpi::communicator& comm, std::chrono::milliseconds wait_limit)
      : context(static_cast<MPI_Comm>(comm), with_limit(wait_limit)) {}

  context(const context&) = delete;
  context& operator=(const context&) = delete;
  /// Destroys the queue pairs and releases the device. Every vector built on
  /// this context must be destroyed before it.
  ~context() = default;

  [[nodiscard]] member_id rank() const noexcept { return rank_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  /// Every member of the group; this transport does not shrink the view
  /// itself (recovery is the fault monitor's job).
  [[nodiscard]] membership_view view() const {
    membership_view v;
    for (member_id m = 0; m < size_; ++m) v.live.push_back(m);
    return v;
  }
  /// False once a work request to m failed because m stopped answering.
  [[nodiscard]] bool alive(member_id m) const {
    return m < size_ && peers_[m].fault != peer_state::fault_kind::unreachable;
  }
  [[nodiscard]] std::chrono::steady_clock::duration wait_limit() const noexcept { return wait_limit_; }
  void set_wait_limit(std::chrono::steady_clock::duration limit) noexcept { wait_limit_ = limit; }

  /// The duplicated communicator (for diagnostics; do not free it).
  [[nodiscard]] MPI_Comm native() const noexcept { return comm_.comm; }
  /// The RDMA device, port and GID index in use (-1: addressed by LID).
  [[nodiscard]] const std::string& device() const noexcept { return port_.device; }
  [[nodiscard]] unsigned port() const noexcept { return port_.port; }
  [[nodiscard]] int gid_index() const noexcept { return port_.gid_index; }
  /// Whether fetch_add works: this member's device executes remote atomics.
  [[nodiscard]] bool atomics() const noexcept { return atomics_; }
  /// Largest put (in bytes, rounded up to words) sent inline.
  [[nodiscard]] std::size_t inline_limit() const noexcept { return inline_limit_; }
  /// One line: device, port, link layer, LID or GID, MTU, queue sizes.
  [[nodiscard]] std::string describe() const {
    std::string s = port_.device + " port " + std::to_string(port_.port) + " (" +
                    detail::verbs_impl::link_layer_name(port_.port_attr.link_layer) + ", ";
    if (port_.use_grh)
      s += "GID index " + std::to_string(port_.gid_index) + " " + detail::verbs_impl::gid_text(port_.gid);
    else
      s += "LID " + std::to_string(port_.port_attr.lid);
    s += ", MTU " + std::to_string(detail::verbs_impl::mtu_bytes(port_.port_attr.active_mtu)) + ", " +
         std::to_string(size_) + " queue pairs of depth " + std::to_string(depth_) + ", inline up to " +
         std::to_string(inline_limit_) + " bytes, atomics " + (atomics_ ? "yes" : "no") + ")";
    return s;
  }

  /// Waits (MPI_Ibarrier, polled) until every member entered the barrier.
  void barrier() {
    detail::mpi_impl::require_not_broken(who, "barrier");
    detail::mpi_impl::barrier(comm_.comm, wait_limit_, who, [this] { poll(); });
  }

  /// Collective: every member's record, indexed by rank.
  std::vector<std::vector<std::byte>> exchange(std::span<const std::byte> record) {
    detail::mpi_impl::require_not_broken(who, "exchange");
    return detail::mpi_impl::all_gather_bytes(comm_.comm, record, wait_limit_, who, [this] { poll(); });
  }

  /// Collective: registers data_words + control_words 64-bit words on this
  /// member (sizes may differ between members), zeroed, and learns every
  /// other member's address, sizes and key. Returns once all are ready.
  segment create_segment(std::size_t data_words, std::size_t control_words);

  /// Reaps completed work requests (and notes failed ones). Every wait of a
  /// vector calls it; incoming RDMA writes need no help from this member.
  void poll() {
    std::array<ibv_wc, 16> wc{};
    for (;;) {
      const int k = ibv_poll_cq(cq_.get(), static_cast<int>(wc.size()), wc.data());
      if (k < 0) throw comm_error(std::string(who) + ": ibv_poll_cq failed (" + std::to_string(k) + ")");
      for (int i = 0; i < k; ++i) complete(wc[static_cast<std::size_t>(i)]);
      if (k < static_cast<int>(wc.size())) return;
    }
  }

 private:
  static constexpr const char* who = detail::verbs_impl::who;

  struct peer_state {
    enum class fault_kind : unsigned char { none, unreachable, other };
    detail::verbs_impl::qp_ptr qp;
    std::uint32_t psn = 0;
    bool atomics = false;         // the peer's device executes remote atomics
    bool reads = false;           // the peer's queue pair answers RDMA READs
    std::uint64_t posted = 0;     // work requests posted
    std::uint64_t completed = 0;  // work completions reaped (in posting order: RC)
    std::uint64_t head = 0;       // staging ring: bytes handed out, ever
    std::uint64_t tail = 0;       // staging ring: bytes released, ever
    std::deque<std::pair<std::uint64_t, std::uint64_t>> staged;  // (request number, ring end)
    fault_kind fault = fault_kind::none;
    std::string error;
  };

  static options with_limit(std::chrono::milliseconds limit) {
    options o;
    o.wait_limit = limit;
    return o;
  }

  void start(MPI_Comm comm, const options& opts) {
    namespace impl = detail::mpi_impl;
    namespace vi = detail::verbs_impl;
    wait_limit_ = opts.wait_limit;
    if (comm == MPI_COMM_NULL) throw config_error(std::string(who) + ": the communicator is MPI_COMM_NULL");
    impl::check(MPI_Comm_dup(comm, &comm_.comm), who, "MPI_Comm_dup");
    impl::check(MPI_Comm_set_errhandler(comm_.comm, MPI_ERRORS_RETURN), who, "MPI_Comm_set_errhandler");
    int r = 0, n = 0;
    impl::check(MPI_Comm_rank(comm_.comm, &r), who, "MPI_Comm_rank");
    impl::check(MPI_Comm_size(comm_.comm, &n), who, "MPI_Comm_size");
    rank_ = static_cast<member_id>(r);
    size_ = static_cast<std::size_t>(n);

    // Open the device and create the queue pairs; every member learns
    // whether every other could, so nobody waits for one that gave up.
    vi::agree(comm_.comm, wait_limit_, "open its RDMA device", vi::attempt([&] { open(opts); }), [] {});

    // Queue-pair records, one per peer, through the Boost.MPI bootstrap.
    // Everybody has just passed the bounded agreement above, so the
    // exchange cannot wait for a member that is not there.
    std::vector<std::vector<std::byte>> to_each(size_);
    for (member_id m = 0; m < size_; ++m) {
      const auto rec = record_for(m);
      const auto* b = reinterpret_cast<const std::byte*>(&rec);
      to_each[m].assign(b, b + sizeof rec);
    }
    const boost::mpi::communicator bootstrap_comm(comm_.comm, boost::mpi::comm_attach);
    const auto from =
        bootstrap::pairwise(bootstrap_comm, to_each, wait_limit_, sizeof(detail::verbs_impl::qp_record));
    vi::agree(comm_.comm, wait_limit_, "connect its queue pairs", vi::attempt([&] { connect(from); }), [] {});
  }

  void open(const options& opts) {
    namespace vi = detail::verbs_impl;
    const auto sel = vi::select(opts);
    if (opts.queue_depth == 0) throw config_error(std::string(who) + ": queue_depth must be at least 1");
    if (opts.staging_bytes < 128)
      throw config_error(std::string(who) + ": staging_bytes must be at least 128 (got " +
                         std::to_string(opts.staging_bytes) + ")");
    port_ = vi::open_port(sel);
    const auto& dev = port_.device_attr;
    atomics_ = dev.atomic_cap != IBV_ATOMIC_NONE && dev.max_qp_rd_atom > 0 && dev.max_qp_init_rd_atom > 0;
    // RDMA READ (get) needs one outstanding read per queue pair at each end.
    reads_ = dev.max_qp_rd_atom > 0 && dev.max_qp_init_rd_atom > 0;

    // Queue sizes within the device's limits: every work request is
    // signalled, so the completion queue holds one entry per request in
    // flight on any queue pair.
    std::size_t depth =
        std::min<std::size_t>(opts.queue_depth, static_cast<std::size_t>(std::max(dev.max_qp_wr, 1)));
    const auto max_cqe = static_cast<std::size_t>(std::max(dev.max_cqe, 1));
    if (depth * size_ > max_cqe) depth = max_cqe / size_;
    if (depth == 0)
      throw config_error(std::string(who) + ": the completion queue of " + port_.device + " holds at most " +
                         std::to_string(max_cqe) + " entries, too few for " + std::to_string(size_) +
                         " queue pairs");
    depth_ = depth;

    pd_.reset(ibv_alloc_pd(port_.ctx.get()));
    if (!pd_) throw comm_error(std::string(who) + ": ibv_alloc_pd failed: " + errno_text());
    cq_.reset(ibv_create_cq(port_.ctx.get(), static_cast<int>(depth_ * size_), nullptr, nullptr, 0));
    if (!cq_) throw comm_error(std::string(who) + ": ibv_create_cq failed: " + errno_text());

    // Staging: the 8-byte result of remote atomics, then one ring per peer.
    ring_bytes_ = (opts.staging_bytes + 63) / 64 * 64;
    if (ring_bytes_ > (std::numeric_limits<std::size_t>::max() - 64) / size_)
      throw config_error(std::string(who) + ": staging_bytes is too large");
    std::size_t allocated = 0;
    staging_ = vi::allocate_pages(64 + ring_bytes_ * size_, allocated);
    const int local_only = IBV_ACCESS_LOCAL_WRITE;  // an int: ibv_reg_mr is a macro that masks the flags
    staging_mr_.reset(ibv_reg_mr(pd_.get(), staging_.get(), allocated, local_only));
    if (!staging_mr_)
      throw comm_error(std::string(who) + ": ibv_reg_mr of " + std::to_string(allocated) +
                       " bytes of staging memory failed: " + errno_text() + locked_memory_hint());
    // A piece must fit the ring and the port's largest message.
    piece_bytes_ = std::min<std::size_t>(ring_bytes_ / 2, port_.port_attr.max_msg_sz) / 8 * 8;
    if (piece_bytes_ == 0) piece_bytes_ = 8;

    peers_.resize(size_);
    inline_limit_ = 256;  // our stack buffer for inline puts
    const std::uint8_t port_num = static_cast<std::uint8_t>(port_.port);
    for (member_id m = 0; m < size_; ++m) {
      auto& p = peers_[m];
      ibv_qp_init_attr a{};
      a.send_cq = cq_.get();
      a.recv_cq = cq_.get();
      a.qp_type = IBV_QPT_RC;
      a.sq_sig_all = 1;
      a.cap.max_send_wr = static_cast<std::uint32_t>(depth_);
      a.cap.max_recv_wr = 1;
      a.cap.max_send_sge = 1;
      a.cap.max_recv_sge = 1;
      a.cap.max_inline_data = 64;
      p.qp.reset(ibv_create_qp(pd_.get(), &a));
      if (!p.qp) {  // some devices send nothing inline
        a.cap.max_inline_data = 0;
        p.qp.reset(ibv_create_qp(pd_.get(), &a));
      }
      if (!p.qp)
        throw comm_error(std::string(who) + ": ibv_create_qp (reliable connected, " + std::to_string(depth_) +
                         " send requests) failed for member " + std::to_string(m) + ": " + errno_text());
      inline_limit_ = std::min<std::size_t>(inline_limit_, a.cap.max_inline_data / 8 * 8);
      p.psn =
          (static_cast<std::uint32_t>(rank_) * 2654435761u + static_cast<std::uint32_t>(m) * 40503u + 1u) &
          0xffffffu;
      ibv_qp_attr init{};
      init.qp_state = IBV_QPS_INIT;
      init.pkey_index = 0;
      init.port_num = port_num;
      init.qp_access_flags =
          IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | (atomics_ ? IBV_ACCESS_REMOTE_ATOMIC : 0);
      if (const int rc = ibv_modify_qp(p.qp.get(), &init,
                                       IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
          rc != 0)
        throw comm_error(std::string(who) +
                         ": ibv_modify_qp to INIT failed: " + std::generic_category().message(rc));
    }
  }

  [[nodiscard]] detail::verbs_impl::qp_record record_for(member_id m) const {
    detail::verbs_impl::qp_record r;
    r.qpn = peers_[m].qp->qp_num;
    r.psn = peers_[m].psn;
    r.lid = port_.port_attr.lid;
    r.mtu = static_cast<std::uint8_t>(port_.port_attr.active_mtu);
    r.use_grh = port_.use_grh ? 1 : 0;
    r.atomics = atomics_ ? 1 : 0;
    r.reads = reads_ ? 1 : 0;
    std::memcpy(r.gid, port_.gid.raw, sizeof r.gid);
    return r;
  }

  // RESET -> INIT happened in open(); here INIT -> RTR -> RTS with the
  // attributes the verbs specification requires for RC at each step.
  void connect(const std::vector<std::vector<std::byte>>& from) {
    namespace vi = detail::verbs_impl;
    const std::uint8_t port_num = static_cast<std::uint8_t>(port_.port);
    const std::uint8_t responder = (atomics_ || reads_) ? 1 : 0;
    for (member_id m = 0; m < size_; ++m) {
      vi::qp_record rec;
      if (from.size() != size_ || from[m].size() != sizeof rec)
        throw comm_error(std::string(who) + ": malformed queue-pair record from member " + std::to_string(m));
      std::memcpy(&rec, from[m].data(), sizeof rec);
      auto& p = peers_[m];
      p.atomics = rec.atomics != 0;
      p.reads = rec.reads != 0;

      ibv_qp_attr rtr{};
      rtr.qp_state = IBV_QPS_RTR;
      rtr.path_mtu = std::min(port_.port_attr.active_mtu, static_cast<ibv_mtu>(rec.mtu));
      rtr.dest_qp_num = rec.qpn;
      rtr.rq_psn = rec.psn;
      rtr.max_dest_rd_atomic = responder;
      rtr.min_rnr_timer = 12;
      rtr.ah_attr.dlid = rec.lid;
      rtr.ah_attr.sl = 0;
      rtr.ah_attr.src_path_bits = 0;
      rtr.ah_attr.port_num = port_num;
      if (port_.use_grh || rec.use_grh != 0) {
        rtr.ah_attr.is_global = 1;
        std::memcpy(rtr.ah_attr.grh.dgid.raw, rec.gid, sizeof rec.gid);
        rtr.ah_attr.grh.sgid_index = static_cast<std::uint8_t>(std::max(port_.gid_index, 0));
        rtr.ah_attr.grh.hop_limit = 64;
      }
      if (const int rc = ibv_modify_qp(p.qp.get(), &rtr,
                                       IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                           IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
          rc != 0)
        throw comm_error(std::string(who) + ": ibv_modify_qp to RTR (ready to receive) for member " +
                         std::to_string(m) + " failed: " + std::generic_category().message(rc) +
                         (port_.use_grh || rec.use_grh
                              ? " (check DML_VERBS_GID_INDEX: both ends need GIDs of "
                                "the same type and network)"
                              : ""));

      ibv_qp_attr rts{};
      rts.qp_state = IBV_QPS_RTS;
      rts.timeout = 14;   // 4.096 us * 2^14 = 67 ms per attempt
      rts.retry_cnt = 7;  // then IBV_WC_RETRY_EXC_ERR: the peer is gone
      rts.rnr_retry = 6;  // bounded (7 would retry forever)
      rts.sq_psn = p.psn;
      rts.max_rd_atomic = ((atomics_ && p.atomics) || (reads_ && p.reads)) ? 1 : 0;
      if (const int rc = ibv_modify_qp(p.qp.get(), &rts,
                                       IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                           IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
          rc != 0)
        throw comm_error(std::string(who) + ": ibv_modify_qp to RTS (ready to send) for member " +
                         std::to_string(m) + " failed: " + std::generic_category().message(rc));
    }
  }

  static std::string errno_text() { return std::generic_category().message(errno); }
  static std::string locked_memory_hint() {
    return errno == ENOMEM || errno == EPERM || errno == EAGAIN
               ? " (is the locked-memory limit too low? see 'ulimit -l'; RDMA registration pins memory)"
               : "";
  }

  // ---- completions, waits and posting --------------------------------------
  void complete(const ibv_wc& wc) {
    if (wc.wr_id >= size_) return;  // not ours (cannot happen: every request carries a member id)
    const auto m = static_cast<member_id>(wc.wr_id);
    auto& p = peers_[m];
    ++p.completed;
    while (!p.staged.empty() && p.staged.front().first <= p.completed) {
      p.tail = p.staged.front().second;
      p.staged.pop_front();
    }
    if (wc.status == IBV_WC_SUCCESS || p.fault != peer_state::fault_kind::none) return;
    // The first failure tells why; the requests behind it are flushed
    // (IBV_WC_WR_FLUSH_ERR) and the queue pair stays in the error state.
    std::string msg = std::string(who) + ": a work request to member " + std::to_string(m) +
                      " failed: " + ibv_wc_status_str(wc.status) + " (status " +
                      std::to_string(static_cast<int>(wc.status)) + ", vendor error " +
                      std::to_string(wc.vendor_err) + ")";
    if (wc.status == IBV_WC_RETRY_EXC_ERR || wc.status == IBV_WC_RNR_RETRY_EXC_ERR) {
      msg += ": member " + std::to_string(m) +
             " stopped acknowledging (it has failed, or the network path to it is down)";
      p.fault = peer_state::fault_kind::unreachable;
      detail::mpi_impl::mark_broken();  // its MPI process is gone too: no more collectives
    } else {
      p.fault = peer_state::fault_kind::other;
    }
    p.error = std::move(msg);
  }

  void throw_if_faulted(member_id m) const {
    const auto& p = peers_[m];
    if (p.fault == peer_state::fault_kind::unreachable) throw peer_failure(m, p.error);
    if (p.fault == peer_state::fault_kind::other) throw comm_error(p.error);
  }

  void require_member(member_id m, const char* what) const {
    if (m >= size_)
      throw comm_error(std::string(who) + ": " + what + " to member " + std::to_string(m) +
                       ", but the group has " + std::to_string(size_) + " members");
  }

  // Polls the completion queue until done() holds, at most wait_limit().
  template <class Done>
  void wait(member_id m, const char* what, Done&& done) {
    poll();
    if (done()) return;
    const auto start = std::chrono::steady_clock::now();
    detail::mpi_impl::backoff b;
    for (;;) {
      poll();
      if (done()) return;
      const auto now = std::chrono::steady_clock::now();
      if (now - start > wait_limit_) {
        const auto& p = peers_[m];
        throw timeout(std::string(who) + ": " + what + " for member " + std::to_string(m) +
                      " did not complete within " + detail::verbs_impl::seconds(wait_limit_) + " (" +
                      std::to_string(p.posted - p.completed) + " work requests outstanding)");
      }
      b.pause();
    }
  }

  // Every request posted to m has completed (successfully or not).
  void drain(member_id m, const char* what) {
    auto& p = peers_[m];
    wait(m, what, [&] { return p.completed == p.posted; });
  }

  void drain_all(const char* what) {
    for (member_id m = 0; m < size_; ++m) drain(m, what);
  }

  void post(member_id m, ibv_send_wr& wr) {
    auto& p = peers_[m];
    wait(m, "a free send-queue slot", [&] { return p.posted - p.completed < depth_; });
    wr.wr_id = m;
    wr.send_flags |= IBV_SEND_SIGNALED;
    ibv_send_wr* bad = nullptr;
    if (const int rc = ibv_post_send(p.qp.get(), &wr, &bad); rc != 0)
      throw comm_error(std::string(who) + ": ibv_post_send to member " + std::to_string(m) +
                       " failed: " + std::generic_category().message(rc));
    ++p.posted;
  }

  // `len` contiguous bytes of m's staging ring, waiting for completions to
  // free them. Returns the address; p.head is the ring end of the piece.
  std::byte* reserve(member_id m, std::size_t len) {
    auto& p = peers_[m];
    const std::uint64_t cap = ring_bytes_;
    wait(m, "staging memory", [&] {
      if (p.head == p.tail && p.head % cap != 0) p.head = p.tail = (p.head / cap + 1) * cap;  // empty: rewind
      const std::uint64_t pos = p.head % cap;
      const std::uint64_t skip = pos + len > cap ? cap - pos : 0;
      return p.head + skip + len - p.tail <= cap;
    });
    if (const std::uint64_t pos = p.head % cap; pos + len > cap) p.head += cap - pos;
    std::byte* at = staging_.get() + 64 + m * ring_bytes_ + static_cast<std::size_t>(p.head % cap);
    p.head += len;
    return at;
  }

  void put_bytes(member_id m, std::uint64_t remote, std::uint32_t rkey, std::span<const std::byte> bytes) {
    auto& p = peers_[m];
    const std::size_t padded = (bytes.size() + 7) / 8 * 8;
    ibv_sge sge{};
    ibv_send_wr wr{};
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.wr.rdma.rkey = rkey;
    if (padded <= inline_limit_) {
      std::array<std::byte, 256> buf{};  // copied by ibv_post_send itself
      std::memcpy(buf.data(), bytes.data(), bytes.size());
      sge.addr = reinterpret_cast<std::uintptr_t>(buf.data());
      sge.length = static_cast<std::uint32_t>(padded);
      sge.lkey = staging_mr_->lkey;
      wr.send_flags = IBV_SEND_INLINE;
      wr.wr.rdma.remote_addr = remote;
      post(m, wr);
      return;
    }
    for (std::size_t off = 0; off < padded; off += piece_bytes_) {
      const std::size_t len = std::min(piece_bytes_, padded - off);
      const std::uint64_t head_before = p.head;
      std::byte* at = reserve(m, len);
      const std::size_t have = std::min(len, bytes.size() - off);
      std::memcpy(at, bytes.data() + off, have);
      if (have < len) std::memset(at + have, 0, len - have);
      sge.addr = reinterpret_cast<std::uintptr_t>(at);
      sge.length = static_cast<std::uint32_t>(len);
      sge.lkey = staging_mr_->lkey;
      wr.send_flags = 0;
      wr.wr.rdma.remote_addr = remote + off;
      try {
        post(m, wr);
      } catch (...) {
        // The piece was never sent: give its bytes back (reserve may have
        // rewound an empty ring past head_before).
        p.head = std::max(head_before, p.tail);
        throw;
      }
      p.staged.emplace_back(p.posted, p.head);
    }
  }

  std::uint64_t atomic_add(member_id m, std::uint64_t remote, std::uint32_t rkey, std::uint64_t value) {
    auto* result = staging_.get();
    std::memset(result, 0, 8);
    ibv_sge sge{};
    sge.addr = reinterpret_cast<std::uintptr_t>(result);
    sge.length = 8;
    sge.lkey = staging_mr_->lkey;
    ibv_send_wr wr{};
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
    wr.wr.atomic.remote_addr = remote;
    wr.wr.atomic.compare_add = value;
    wr.wr.atomic.swap = 0;
    wr.wr.atomic.rkey = rkey;
    post(m, wr);
    drain(m, "a remote atomic");
    throw_if_faulted(m);
    std::atomic_thread_fence(std::memory_order_acquire);  // the adapter wrote the result
    std::uint64_t old = 0;
    std::memcpy(&old, result, 8);
    return old;
  }

  // RDMA READ of `out.size()` bytes at `remote` into staging memory, piece
  // by piece, each copied out once its completion is reaped.
  void get_bytes(member_id m, std::uint64_t remote, std::uint32_t rkey, std::span<std::byte> out) {
    auto& p = peers_[m];
    const std::size_t padded = (out.size() + 7) / 8 * 8;
    for (std::size_t off = 0; off < padded; off += piece_bytes_) {
      const std::size_t len = std::min(piece_bytes_, padded - off);
      std::byte* at = reserve(m, len);
      ibv_sge sge{};
      sge.addr = reinterpret_cast<std::uintptr_t>(at);
      sge.length = static_cast<std::uint32_t>(len);
      sge.lkey = staging_mr_->lkey;
      ibv_send_wr wr{};
      wr.sg_list = &sge;
      wr.num_sge = 1;
      wr.opcode = IBV_WR_RDMA_READ;
      wr.wr.rdma.remote_addr = remote + off;
      wr.wr.rdma.rkey = rkey;
      post(m, wr);
      p.staged.emplace_back(p.posted, p.head);
      drain(m, "a one-sided read");
      throw_if_faulted(m);
      std::atomic_thread_fence(std::memory_order_acquire);  // the adapter wrote the piece
      std::memcpy(out.data() + off, at, std::min(len, out.size() - off));
    }
  }

  friend class segment;
  // Declaration order is destruction order reversed: queue pairs go before
  // the completion queue, memory regions before the protection domain, and
  // all of them before the device closes and MPI is released.
  detail::mpi_impl::environment env_;
  detail::verbs_impl::owned_comm comm_;
  member_id rank_ = 0;
  std::size_t size_ = 0;
  std::chrono::steady_clock::duration wait_limit_{default_wait_limit};
  detail::verbs_impl::opened_port port_;
  detail::verbs_impl::pd_ptr pd_;
  detail::verbs_impl::cq_ptr cq_;
  detail::verbs_impl::memory_ptr staging_;
  detail::verbs_impl::mr_ptr staging_mr_;
  std::vector<peer_state> peers_;
  std::size_t depth_ = 1;
  std::size_t ring_bytes_ = 0;
  std::size_t piece_bytes_ = 8;
  std::size_t inline_limit_ = 0;
  bool atomics_ = false;
  bool reads_ = false;  // this member's device can issue and answer RDMA READs
};

/// One member's registered region of a segment; see context. Move-only;
/// destruction is collective and must happen in the same order everywhere.
class context::segment : dml::detail::segment_impl::segment_base<context::segment, context> {
  using handle_base = dml::detail::segment_impl::segment_base<segment, context>;

 public:
  segment() = default;
  segment(segment&& o) noexcept : handle_base(std::move(o)) { take(o); }
  segment& operator=(segment&& o) noexcept { return move_assign(o); }
  ~segment() { release(); }

  using handle_base::control_words;
  using handle_base::words;

  /// RDMA WRITE of `bytes` into target's data words from `word` on (a
  /// partial last word is zero padded). The caller's buffer is free again
  /// on return; the write completes remotely by the next order or flush.
  void put(member_id target, std::size_t word, std::span<const std::byte> bytes) {
    check_range(target, word, bytes.size());
    const auto& p = ctx_->peers_[target];
    if (p.fault == peer_state::fault_kind::other) throw comm_error(p.error);
    if (bytes.empty() || p.fault == peer_state::fault_kind::unreachable)
      return;  // lost, like a write to a dead host
    ctx_->put_bytes(target, addr_[target] + 8 * word, rkey_[target], bytes);
  }

  /// Write fence: every earlier put to target has landed before any later
  /// one is sent (waits for their completions).
  void order(member_id target) { flush(target); }

  /// Remote completion of every earlier put to target.
  void flush(member_id target) {
    require_handle();
    ctx_->require_member(target, "flush");
    ctx_->drain(target, "flush");
    ctx_->throw_if_faulted(target);
  }

  /// Remote completion of every earlier put; throws for the first member a
  /// put to which failed.
  void flush_all() {
    require_handle();
    ctx_->drain_all("flush_all");
    for (member_id m = 0; m < ctx_->size_; ++m) ctx_->throw_if_faulted(m);
  }

  /// Remote atomic add on target's control word; returns the previous value.
  /// Puts issued before it have landed before the add.
  std::uint64_t fetch_add(member_id target, std::size_t control_word, std::uint64_t value) {
    require_handle();
    ctx_->require_member(target, "remote atomic");
    check_control(target, control_word);
    if (!ctx_->atomics_ || !ctx_->peers_[target].atomics)
      throw config_error(
          std::string(who) + ": remote atomics are not available between member " +
          std::to_string(ctx_->rank_) + " and member " + std::to_string(target) +
          " (a device reports atomic_cap IBV_ATOMIC_NONE); consistency::notify_ack needs them, "
          "bsp, asp and ssp do not");
    ctx_->throw_if_faulted(target);
    ctx_->drain(target, "the puts before a remote atomic");
    ctx_->throw_if_faulted(target);
    return ctx_->atomic_add(target, addr_[target] + 8 * (data_words_[target] + control_word), rkey_[target],
                            value);
  }

  /// RDMA READ of source's data words from `word` on into `out`, complete
  /// on return. Earlier writes to source complete first, so the read sees
  /// them (InfiniBand does not order a read behind earlier writes).
  void get(member_id source, std::size_t word, std::span<std::byte> out) {
    check_range(source, word, out.size());
    const auto& p = ctx_->peers_[source];
    if (p.fault != peer_state::fault_kind::none) ctx_->throw_if_faulted(source);
    if (out.empty()) return;
    if (!ctx_->reads_ || !p.reads)
      throw config_error(std::string(who) + ": RDMA READ is not available between member " +
                         std::to_string(ctx_->rank_) + " and member " + std::to_string(source) +
                         " (a device reports max_qp_rd_atom 0); tables need it, vectors do not");
    ctx_->drain(source, "the writes before a one-sided read");
    ctx_->throw_if_faulted(source);
    ctx_->get_bytes(source, addr_[source] + 8 * word, rkey_[source], out);
  }

  /// Acquire load of one of the own data words (call sync() first).
  [[nodiscard]] std::uint64_t load(std::size_t word) const {
    check_own_range(word, 8);
    return std::atomic_ref<std::uint64_t>(base_[word]).load(std::memory_order_acquire);
  }

  /// Acquire load of one of the own control words.
  [[nodiscard]] std::uint64_t load_control(std::size_t word) const {
    check_own_control(word);
    return std::atomic_ref<std::uint64_t>(base_[data_words_[own()] + word]).load(std::memory_order_acquire);
  }

  /// Copies own data words from `word` on into `out` (word-wise atomic
  /// loads; no consistency across words: callers detect tearing).
  void read(std::size_t word, std::span<std::byte> out) const {
    check_own_range(word, out.size());
    dml::detail::segment_impl::atomic_copy_out(out, base_ + word);
  }

  /// Orders the loads that follow after remote writes that have landed (the
  /// adapter writes coherently into host memory).
  /// Own data words in place (see comm::segment for when that is safe).
  [[nodiscard]] std::span<const std::uint64_t> view(std::size_t word, std::size_t words) const {
    check_own_words(word, words);
    return {base_ + word, words};
  }
  void sync() { std::atomic_thread_fence(std::memory_order_acquire); }

 private:
  friend class context;
  friend handle_base;
  static constexpr const char* who = detail::verbs_impl::who;

  [[nodiscard]] member_id own() const noexcept { return ctx_->rank_; }

  // Before a member's part is looked up: an id beyond the group is named.
  void check_member(member_id m) const { ctx_->require_member(m, "access"); }

  // The move of what the base does not hold (see segment_base).
  void take(segment& o) noexcept {
    base_ = std::exchange(o.base_, nullptr);
    memory_ = std::move(o.memory_);
    mr_ = std::move(o.mr_);
    addr_ = std::move(o.addr_);
    rkey_ = std::move(o.rkey_);
  }

  // Collective: completes own writes and waits (bounded) until every member
  // is here, so nobody writes into the region any more, then deregisters it.
  // After a failure the barrier is skipped; deregistering first still turns
  // any late write into an error at its sender instead of a write into
  // freed memory.
  void release() noexcept {
    if (ctx_ == nullptr) return;
    if (!detail::mpi_impl::finalized() && !detail::mpi_impl::broken()) {
      try {
        ctx_->drain_all("the writes before a segment is released");
        detail::mpi_impl::barrier(ctx_->comm_.comm, ctx_->wait_limit_, who, [this] { ctx_->poll(); });
      } catch (...) {  // a timed-out barrier marked the group broken
      }
    }
    mr_.reset();
    memory_.reset();
    base_ = nullptr;
    ctx_ = nullptr;
  }

  std::uint64_t* base_ = nullptr;
  detail::verbs_impl::memory_ptr memory_;
  detail::verbs_impl::mr_ptr mr_;
  std::vector<std::uint64_t> addr_;
  std::vector<std::uint32_t> rkey_;
};

inline context::segment context::create_segment(std::size_t data_words, std::size_t control_words) {
  namespace impl = detail::mpi_impl;
  namespace vi = detail::verbs_impl;
  impl::require_not_broken(who, "create_segment");
  if (data_words > std::numeric_limits<std::size_t>::max() / 16 ||
      control_words > std::numeric_limits<std::size_t>::max() / 16 - data_words)
    throw config_error(std::string(who) + ": segment of " + std::to_string(data_words) + " + " +
                       std::to_string(control_words) + " words is too large");
  segment s;
  const auto f = vi::attempt([&] {
    std::size_t allocated = 0;
    s.memory_ = vi::allocate_pages(8 * (data_words + control_words), allocated);
    const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                       (atomics_ ? IBV_ACCESS_REMOTE_ATOMIC : 0);
    s.mr_.reset(ibv_reg_mr(pd_.get(), s.memory_.get(), allocated, access));
    if (!s.mr_)
      throw comm_error(std::string(who) + ": ibv_reg_mr of a " + std::to_string(allocated) +
                       "-byte segment failed: " + errno_text() + locked_memory_hint());
  });
  vi::region_record mine;
  mine.addr = reinterpret_cast<std::uintptr_t>(s.memory_.get());
  mine.data_words = data_words;
  mine.control_words = control_words;
  mine.rkey = s.mr_ ? s.mr_->rkey : 0;
  mine.ok = f.kind == 0 ? 1 : 0;
  std::vector<std::byte> rec(sizeof mine);
  std::memcpy(rec.data(), &mine, sizeof mine);
  const auto* text = reinterpret_cast<const std::byte*>(f.message.data());
  rec.insert(rec.end(), text, text + f.message.size());
  // The region is zeroed and registered before its record leaves, so nobody
  // writes into it before its owner is ready.
  const auto all = impl::all_gather_bytes(comm_.comm, rec, wait_limit_, who, [this] { poll(); });
  if (f.kind != 0) throw comm_error(f.message);
  s.addr_.resize(size_);
  s.rkey_.resize(size_);
  s.data_words_.resize(size_);
  s.control_words_.resize(size_);
  for (member_id m = 0; m < size_; ++m) {
    vi::region_record r;
    if (all[m].size() < sizeof r) throw comm_error(std::string(who) + ": malformed segment record");
    std::memcpy(&r, all[m].data(), sizeof r);
    if (r.ok == 0)
      throw comm_error(
          std::string(who) + ": member " + std::to_string(m) + " could not create its segment: " +
          std::string(reinterpret_cast<const char*>(all[m].data()) + sizeof r, all[m].size() - sizeof r));
    s.addr_[m] = r.addr;
    s.rkey_[m] = r.rkey;
    s.data_words_[m] = static_cast<std::size_t>(r.data_words);
    s.control_words_[m] = static_cast<std::size_t>(r.control_words);
  }
  s.base_ = reinterpret_cast<std::uint64_t*>(s.memory_.get());
  s.ctx_ = this;
  return s;
}

}  // namespace comm::verbs
DML_END_NAMESPACE

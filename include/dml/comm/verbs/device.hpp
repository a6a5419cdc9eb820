// SPDX-License-Identifier: BSL-1.0
/// @file
/// RDMA devices and ports as rdma-core's libibverbs sees them, and the choice
/// of device, port and GID index for dml::comm::verbs. Needs only ibverbs
/// (no MPI): `dml-rdma-selftest` and the test probe list devices with it.
#pragma once

#include <dml/error.hpp>
#include <dml/fwd.hpp>

#include <infiniband/verbs.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

DML_BEGIN_NAMESPACE
namespace comm::verbs {

/// How a verbs context picks its device and sizes its queues. Empty or
/// negative fields fall back to the environment variables named below, then
/// to an automatic choice.
struct options {
  /// RDMA device name as `ibv_devices` prints it (e.g. "mlx5_0", "rxe0").
  /// Empty: DML_VERBS_DEVICE, else the first device with an ACTIVE port.
  std::string device;
  /// Port number (1-based). 0: DML_VERBS_PORT, else the device's first
  /// ACTIVE port.
  unsigned port = 0;
  /// GID table index used for addressing (RoCE always needs one; InfiniBand
  /// uses one only when it is given). Negative: DML_VERBS_GID_INDEX, else the
  /// port's first RoCE v2 GID holding an IPv4 address, else its first RoCE
  /// v2 GID (RoCE), or none (InfiniBand).
  int gid_index = -1;
  /// Longest any blocking step may take before it throws dml::timeout.
  std::chrono::milliseconds wait_limit{60'000};
  /// Registered staging memory per peer: puts that are not sent inline are
  /// copied here (the caller's buffer may be reused at once) and sent in
  /// pieces of at most half of it.
  std::size_t staging_bytes = std::size_t{1} << 20;
  /// Work requests in flight per queue pair before a put waits.
  unsigned queue_depth = 64;
};

/// One port of a device.
struct port_info {
  unsigned number = 0;
  bool active = false;      ///< state is IBV_PORT_ACTIVE
  std::string state;        ///< ibv_port_state_str, e.g. "PORT_ACTIVE", "PORT_DOWN"
  std::string link_layer;   ///< "InfiniBand", "Ethernet" (RoCE) or "unspecified"
  unsigned lid = 0;         ///< InfiniBand local identifier (0 on RoCE)
  unsigned active_mtu = 0;  ///< bytes
  int gid_table_length = 0;
};

/// One device with its ports; `error` says why it could not be queried.
struct device_info {
  std::string name;
  std::string node_type;  ///< ibv_node_type_str
  std::vector<port_info> ports;
  std::string error;
};

/// What ibv_get_device_list found. `error` is non-empty when the list could
/// not be read at all (e.g. no kernel RDMA support).
struct device_listing {
  std::vector<device_info> devices;
  std::string error;

  [[nodiscard]] bool any_active_port() const noexcept {
    for (const auto& d : devices)
      for (const auto& p : d.ports)
        if (p.active) return true;
    return false;
  }
  /// One line saying why no port can be used ("" when one can).
  [[nodiscard]] std::string why_unusable() const;
};

}  // namespace comm::verbs

namespace detail::verbs_impl {

constexpr const char* who = "dml::comm::verbs";

template <class T, auto Destroy>
struct destroyer {
  void operator()(T* p) const noexcept {
    if (p != nullptr) (void)Destroy(p);
  }
};
using context_ptr = std::unique_ptr<ibv_context, destroyer<ibv_context, &ibv_close_device>>;
using pd_ptr = std::unique_ptr<ibv_pd, destroyer<ibv_pd, &ibv_dealloc_pd>>;
using cq_ptr = std::unique_ptr<ibv_cq, destroyer<ibv_cq, &ibv_destroy_cq>>;
using qp_ptr = std::unique_ptr<ibv_qp, destroyer<ibv_qp, &ibv_destroy_qp>>;
using mr_ptr = std::unique_ptr<ibv_mr, destroyer<ibv_mr, &ibv_dereg_mr>>;

struct device_list_deleter {
  void operator()(ibv_device** l) const noexcept {
    if (l != nullptr) ibv_free_device_list(l);
  }
};

/// ibv_get_device_list with its count; `error` set when it returned NULL.
struct device_list {
  std::unique_ptr<ibv_device*, device_list_deleter> list;
  int count = 0;
  std::string error;
};

inline device_list get_device_list() {
  device_list l;
  errno = 0;
  l.list.reset(ibv_get_device_list(&l.count));
  if (!l.list) {
    const int e = errno;
    l.count = 0;
    l.error = "ibv_get_device_list failed: " + std::generic_category().message(e);
    if (e == ENOSYS)
      l.error += " (the kernel has no RDMA support loaded: no ib_uverbs, no adapter driver, no soft-RoCE)";
  }
  return l;
}

inline unsigned mtu_bytes(ibv_mtu m) noexcept {
  switch (m) {
    case IBV_MTU_256:
      return 256;
    case IBV_MTU_512:
      return 512;
    case IBV_MTU_1024:
      return 1024;
    case IBV_MTU_2048:
      return 2048;
    case IBV_MTU_4096:
      return 4096;
  }
  return 0;
}

inline const char* link_layer_name(std::uint8_t l) noexcept {
  switch (l) {
    case IBV_LINK_LAYER_INFINIBAND:
      return "InfiniBand";
    case IBV_LINK_LAYER_ETHERNET:
      return "Ethernet";
    default:
      return "unspecified";
  }
}

inline comm::verbs::port_info describe_port(unsigned number, const ibv_port_attr& a) {
  comm::verbs::port_info p;
  p.number = number;
  p.active = a.state == IBV_PORT_ACTIVE;
  p.state = ibv_port_state_str(a.state);
  p.link_layer = link_layer_name(a.link_layer);
  p.lid = a.lid;
  p.active_mtu = mtu_bytes(a.active_mtu);
  p.gid_table_length = a.gid_tbl_len;
  return p;
}

/// Opens device `d` and fills `info` (ports, or the error). Returns the open
/// context, or null when it could not be opened.
inline context_ptr open_and_describe(ibv_device* d, comm::verbs::device_info& info) {
  info.name = ibv_get_device_name(d);
  info.node_type = ibv_node_type_str(d->node_type);
  context_ptr ctx(ibv_open_device(d));
  if (!ctx) {
    info.error = "ibv_open_device failed: " + std::generic_category().message(errno);
    return ctx;
  }
  ibv_device_attr attr{};
  if (const int rc = ibv_query_device(ctx.get(), &attr); rc != 0) {
    info.error = "ibv_query_device failed: " + std::generic_category().message(rc);
    return ctx;
  }
  for (unsigned port = 1; port <= attr.phys_port_cnt; ++port) {
    ibv_port_attr pa{};
    if (const int rc = ibv_query_port(ctx.get(), static_cast<std::uint8_t>(port), &pa); rc != 0) {
      info.error =
          "ibv_query_port(" + std::to_string(port) + ") failed: " + std::generic_category().message(rc);
      continue;
    }
    info.ports.push_back(describe_port(port, pa));
  }
  return ctx;
}

/// "mlx5_0 port 1 PORT_DOWN, rxe0 port 1 PORT_ACTIVE" (or "none").
inline std::string summary(const comm::verbs::device_listing& l) {
  std::string s;
  for (const auto& d : l.devices) {
    if (!d.error.empty() && d.ports.empty()) {
      if (!s.empty()) s += ", ";
      s += d.name + " (" + d.error + ")";
    }
    for (const auto& p : d.ports) {
      if (!s.empty()) s += ", ";
      s += d.name + " port " + std::to_string(p.number) + " " + p.state;
    }
  }
  return s.empty() ? "none" : s;
}

/// Parses a non-negative whole number from an environment variable.
inline bool env_number(const char* name, long max, long& out) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return false;
  const std::string_view s(v);
  long x = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), x);
  if (ec != std::errc{} || end != s.data() + s.size() || x < 0 || x > max)
    throw config_error(std::string(who) + ": " + name + " is '" + std::string(s) +
                       "'; it must be a whole number from 0 to " + std::to_string(max));
  out = x;
  return true;
}

/// The options after the environment filled what the caller left open.
struct selection {
  std::string device;         ///< empty: any device with an active port
  std::string device_source;  ///< "options" or "DML_VERBS_DEVICE"
  unsigned port = 0;          ///< 0: first active port
  std::string port_source;
  int gid_index = -1;  ///< < 0: automatic
  std::string gid_source;
};

inline selection select(const comm::verbs::options& o) {
  selection s;
  if (!o.device.empty()) {
    s.device = o.device;
    s.device_source = "options";
  } else if (const char* d = std::getenv("DML_VERBS_DEVICE"); d != nullptr && *d != '\0') {
    s.device = d;
    s.device_source = "DML_VERBS_DEVICE";
  }
  long x = 0;
  if (o.port != 0) {
    if (o.port > 255)
      throw config_error(std::string(who) + ": port " + std::to_string(o.port) +
                         " does not exist (ports are 1..255)");
    s.port = o.port;
    s.port_source = "options";
  } else if (env_number("DML_VERBS_PORT", 255, x)) {
    if (x == 0) throw config_error(std::string(who) + ": DML_VERBS_PORT is 0; ports are numbered from 1");
    s.port = static_cast<unsigned>(x);
    s.port_source = "DML_VERBS_PORT";
  }
  if (o.gid_index >= 0) {
    if (o.gid_index > 255)
      throw config_error(std::string(who) + ": GID index " + std::to_string(o.gid_index) +
                         " does not exist (indices are 0..255)");
    s.gid_index = o.gid_index;
    s.gid_source = "options";
  } else if (env_number("DML_VERBS_GID_INDEX", 255, x)) {
    s.gid_index = static_cast<int>(x);
    s.gid_source = "DML_VERBS_GID_INDEX";
  }
  return s;
}

/// An opened device and the port and GID chosen on it.
struct opened_port {
  context_ptr ctx;
  std::string device;
  ibv_device_attr device_attr{};
  unsigned port = 0;
  ibv_port_attr port_attr{};
  bool use_grh = false;  ///< address peers by GID (RoCE, or a GID index was given)
  int gid_index = -1;
  ibv_gid gid{};
};

inline bool gid_is_zero(const ibv_gid& g) noexcept {
  for (auto b : g.raw)
    if (b != 0) return false;
  return true;
}

inline std::string gid_text(const ibv_gid& g) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string s;
  for (int i = 0; i < 16; ++i) {
    if (i != 0 && i % 2 == 0) s += ':';
    s += hex[g.raw[i] >> 4];
    s += hex[g.raw[i] & 15];
  }
  return s;
}

inline bool gid_is_ipv4_mapped(const ibv_gid& g) noexcept {
  for (int i = 0; i < 10; ++i)
    if (g.raw[i] != 0) return false;
  return g.raw[10] == 0xff && g.raw[11] == 0xff;
}

/// Picks the GID: the one asked for (it must exist); else on RoCE the first
/// RoCE v2 entry holding an IPv4 address (routable, and what most RoCE
/// networks use), else the first RoCE v2 entry, else the first non-empty one.
inline void choose_gid(opened_port& o, const selection& s) {
  const bool roce = o.port_attr.link_layer == IBV_LINK_LAYER_ETHERNET;
  const bool grh_required = (o.port_attr.flags & IBV_QPF_GRH_REQUIRED) != 0;
  const std::string where = o.device + " port " + std::to_string(o.port);
  if (s.gid_index >= 0) {
    if (s.gid_index >= o.port_attr.gid_tbl_len)
      throw config_error(std::string(who) + ": GID index " + std::to_string(s.gid_index) + " (" +
                         s.gid_source + ") is outside the GID table of " + where + " (" +
                         std::to_string(o.port_attr.gid_tbl_len) + " entries)");
    ibv_gid g{};
    if (ibv_query_gid(o.ctx.get(), static_cast<std::uint8_t>(o.port), s.gid_index, &g) != 0 || gid_is_zero(g))
      throw config_error(std::string(who) + ": GID index " + std::to_string(s.gid_index) + " (" +
                         s.gid_source + ") of " + where +
                         " is empty; list the valid ones with 'ibv_devinfo -v'");
    o.use_grh = true;
    o.gid_index = s.gid_index;
    o.gid = g;
    return;
  }
  if (!roce && !grh_required) {
    // InfiniBand inside one subnet: LIDs address peers; the GID is sent along
    // for diagnostics only.
    ibv_gid g{};
    if (ibv_query_gid(o.ctx.get(), static_cast<std::uint8_t>(o.port), 0, &g) == 0) o.gid = g;
    return;
  }
  // Rank every non-empty entry; a kernel without ibv_query_gid_ex support
  // leaves the types unknown, and the first non-empty entry is used.
  int best = -1, best_rank = -1;
  for (int i = 0; i < o.port_attr.gid_tbl_len; ++i) {
    ibv_gid g{};
    if (ibv_query_gid(o.ctx.get(), static_cast<std::uint8_t>(o.port), i, &g) != 0 || gid_is_zero(g)) continue;
    int rank = 0;
    ibv_gid_entry e{};
    if (ibv_query_gid_ex(o.ctx.get(), o.port, static_cast<std::uint32_t>(i), &e, 0) == 0 &&
        e.gid_type == IBV_GID_TYPE_ROCE_V2)
      rank = gid_is_ipv4_mapped(g) ? 2 : 1;
    if (rank > best_rank) {
      best = i;
      best_rank = rank;
      o.gid = g;
    }
    if (rank == 2) break;
  }
  if (best < 0)
    throw config_error(std::string(who) + ": " + where +
                       " has no usable GID (RoCE needs one: is an IP address configured on its network "
                       "interface?); set DML_VERBS_GID_INDEX to choose one");
  o.use_grh = true;
  o.gid_index = best;
}

/// Opens the device and port the selection names (or the first ACTIVE one),
/// or throws dml::config_error saying exactly why none can be used.
inline opened_port open_port(const selection& s) {
  auto list = get_device_list();
  if (!list.list || list.count == 0) {
    std::string cause = list.error.empty() ? "ibv_get_device_list lists no device (no adapter driver, no "
                                             "soft-RoCE link)"
                                           : list.error;
    if (!s.device.empty())
      throw config_error(std::string(who) + ": RDMA device '" + s.device + "' (" + s.device_source +
                         ") not found: no RDMA device at all; " + cause);
    throw config_error(std::string(who) + ": no RDMA device found; " + cause);
  }
  comm::verbs::device_listing seen;
  std::vector<std::string> names;
  for (int i = 0; i < list.count; ++i) {
    ibv_device* d = list.list.get()[i];
    const std::string name = ibv_get_device_name(d);
    names.push_back(name);
    if (!s.device.empty() && name != s.device) continue;
    comm::verbs::device_info info;
    auto ctx = open_and_describe(d, info);
    seen.devices.push_back(info);
    if (!ctx) continue;
    for (const auto& p : info.ports) {
      if (s.port != 0 && p.number != s.port) continue;
      if (!p.active) continue;
      opened_port o;
      o.device = name;
      o.port = p.number;
      if (const int rc = ibv_query_device(ctx.get(), &o.device_attr); rc != 0)
        throw config_error(std::string(who) + ": ibv_query_device(" + name +
                           ") failed: " + std::generic_category().message(rc));
      if (const int rc = ibv_query_port(ctx.get(), static_cast<std::uint8_t>(p.number), &o.port_attr);
          rc != 0)
        throw config_error(std::string(who) + ": ibv_query_port(" + name + ", " + std::to_string(p.number) +
                           ") failed: " + std::generic_category().message(rc));
      o.ctx = std::move(ctx);
      choose_gid(o, s);
      return o;
    }
  }
  if (!s.device.empty() && seen.devices.empty()) {
    std::string all;
    for (const auto& n : names) all += (all.empty() ? "" : ", ") + n;
    throw config_error(std::string(who) + ": RDMA device '" + s.device + "' (" + s.device_source +
                       ") not found; devices present: " + all);
  }
  if (s.port != 0) {
    bool exists = false;
    for (const auto& d : seen.devices)
      for (const auto& p : d.ports) exists = exists || p.number == s.port;
    if (!exists)
      throw config_error(std::string(who) + ": port " + std::to_string(s.port) + " (" + s.port_source +
                         ") does not exist on " + (s.device.empty() ? "any RDMA device" : s.device) +
                         "; ports: " + summary(seen));
    throw config_error(std::string(who) + ": port " + std::to_string(s.port) + " (" + s.port_source +
                       ") is not ACTIVE: " + summary(seen) +
                       " (check the cable or link, and for InfiniBand that a subnet manager runs)");
  }
  throw config_error(std::string(who) + ": no ACTIVE port on " +
                     (s.device.empty() ? std::string("any RDMA device") : s.device) + ": " + summary(seen) +
                     " (check the cable or link, and for InfiniBand that a subnet manager runs)");
}

}  // namespace detail::verbs_impl

namespace comm::verbs {

/// Every RDMA device with its ports and their states. Never throws for a
/// missing device: the listing's `error` or an empty list says so.
inline device_listing list_devices() {
  device_listing out;
  auto list = detail::verbs_impl::get_device_list();
  out.error = list.error;
  for (int i = 0; i < list.count; ++i) {
    device_info info;
    (void)detail::verbs_impl::open_and_describe(list.list.get()[i], info);
    out.devices.push_back(std::move(info));
  }
  return out;
}

inline std::string device_listing::why_unusable() const {
  if (any_active_port()) return {};
  if (!error.empty()) return "no RDMA device: " + error;
  if (devices.empty())
    return "no RDMA device: ibv_get_device_list lists none (no adapter driver, no soft-RoCE link)";
  return "no ACTIVE RDMA port: " + detail::verbs_impl::summary(*this);
}

}  // namespace comm::verbs
DML_END_NAMESPACE

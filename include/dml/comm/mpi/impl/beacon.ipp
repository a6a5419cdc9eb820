// SPDX-License-Identifier: BSL-1.0
/// @file
/// Out-of-line definitions for <dml/comm/mpi/beacon.hpp> (see <dml/version.hpp>, DML_DECL).
#pragma once

#include <dml/comm/mpi/beacon.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

DML_BEGIN_NAMESPACE
namespace detail::mpi_impl {

DML_DECL launch_identity launch_identity_from_env() {
  auto get = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v ? v : "";
  };
  auto number = [](const std::string& s) -> long {
    if (s.empty()) return -1;
    char* end = nullptr;
    const long v = std::strtol(s.c_str(), &end, 10);
    return end && *end == '\0' && v >= 0 ? v : -1;
  };
  launch_identity id;
  struct source {
    const char* job;
    const char* rank;
    const char* size;
  };
  for (const auto& s :
       {source{"PMIX_NAMESPACE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
        source{"OMPI_MCA_ess_base_jobid", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
        source{"PMI_KVS", "PMI_RANK", "PMI_SIZE"}, source{"SLURM_JOB_ID", "SLURM_PROCID", "SLURM_NTASKS"}}) {
    std::string job = get(s.job);
    const long rank = number(get(s.rank)), size = number(get(s.size));
    if (job.empty() || rank < 0 || size <= rank || size > 65536) continue;
    if (std::string(s.job) == "SLURM_JOB_ID") job += "." + get("SLURM_STEP_ID");
    for (char& c : job)
      if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) c = '_';
    id.job = job.substr(0, 100);
    id.rank = rank;
    id.size = size;
    return id;
  }
  return id;
}

DML_DECL bool beacon::start(clock::duration heartbeat_timeout, const char* phase) {
#if DML_HAS_BEACON
  if (own_) return true;
  id_ = launch_identity_from_env();
  if (id_.job.empty()) return false;
  timeout_ = heartbeat_timeout;
  phase_ = phase;
  const std::string name = path(id_.rank);
  // Not O_TRUNC: a stale file of the same name (a killed process of an
  // earlier job with the same id) may be mapped by a reader already, and
  // shrinking it under that mapping would raise SIGBUS there.
  const int fd = ::shm_open(name.c_str(), O_CREAT | O_RDWR, 0600);
  if (fd < 0) return false;
  const bool sized = ::ftruncate(fd, sizeof(std::uint64_t)) == 0;
  void* at =
      sized ? ::mmap(nullptr, sizeof(std::uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
  ::close(fd);
  if (at == MAP_FAILED) {
    ::shm_unlink(name.c_str());
    return false;
  }
  own_ = static_cast<std::uint64_t*>(at);
  std::atomic_ref<std::uint64_t>(*own_).store(0,
                                              std::memory_order_release);  // not `left` from an earlier run
  peers_.assign(static_cast<std::size_t>(id_.size), peer{});
  const auto period = std::max<clock::duration>(timeout_ / 10, std::chrono::milliseconds(1));
  beater_.start([this] { std::atomic_ref<std::uint64_t>(*own_).fetch_add(1, std::memory_order_release); },
                [period] { return period; });
  return true;
#else
  (void)heartbeat_timeout;
  (void)phase;
  return false;
#endif
}

DML_DECL void beacon::remove() const {
#if DML_HAS_BEACON
  if (own_) ::shm_unlink(path(id_.rank).c_str());
#endif
}

DML_DECL void beacon::stop(bool mark_left) {
#if DML_HAS_BEACON
  beater_.stop();
  if (own_ && mark_left) std::atomic_ref<std::uint64_t>(*own_).store(left, std::memory_order_release);
  std::lock_guard lock(mutex_);
  for (auto& p : peers_)
    if (p.word) ::munmap(p.word, sizeof(std::uint64_t));
  peers_.clear();
  if (own_) {
    ::munmap(own_, sizeof(std::uint64_t));
    ::shm_unlink(path(id_.rank).c_str());
    own_ = nullptr;
  }
#else
  (void)mark_left;
#endif
}

DML_DECL std::string beacon::stale_member() {
#if DML_HAS_BEACON
  std::lock_guard lock(mutex_);
  const auto now = clock::now();
  for (std::size_t r = 0; r < peers_.size(); ++r) {
    if (static_cast<long>(r) == id_.rank) continue;
    auto& p = peers_[r];
    if (!p.word) {
      if (now - p.last_try < timeout_ / 4) continue;
      p.last_try = now;
      const int fd = ::shm_open(path(static_cast<long>(r)).c_str(), O_RDONLY, 0);
      if (fd < 0) continue;  // not started yet, or on another node
      // The owner creates the object empty, then sizes it: reading a
      // mapping beyond the object's end is SIGBUS, so wait for the size.
      struct stat st {};
      if (::fstat(fd, &st) != 0 || st.st_size < static_cast<off_t>(sizeof(std::uint64_t))) {
        ::close(fd);
        continue;
      }
      void* at = ::mmap(nullptr, sizeof(std::uint64_t), PROT_READ, MAP_SHARED, fd, 0);
      ::close(fd);
      if (at == MAP_FAILED) continue;
      p.word = static_cast<std::uint64_t*>(at);
      p.seen = ~std::uint64_t{0};
    }
    const std::uint64_t beat = std::atomic_ref<std::uint64_t>(*p.word).load(std::memory_order_acquire);
    if (beat == left) continue;  // done and gone, not dead
    if (beat != p.seen) {
      p.seen = beat;
      p.changed = now;
      continue;
    }
    const auto silent = now - p.changed;
    if (silent > timeout_) {
      ::shm_unlink(path(static_cast<long>(r)).c_str());
      return "member " + std::to_string(r) + " has failed (its " + phase_ + " heartbeat was silent for " +
             std::to_string(std::chrono::duration<double>(silent).count()) + " s)";
    }
  }
#endif
  return {};
}

DML_DECL std::string beacon::path(long rank) const { return "/dml-" + id_.job + "-" + std::to_string(rank); }

}  // namespace detail::mpi_impl
DML_END_NAMESPACE

// SPDX-License-Identifier: BSL-1.0
/// @file
/// Out-of-line definitions for <dml/comm/inproc.hpp> (see <dml/version.hpp>, DML_DECL).
#pragma once

#include <dml/comm/inproc.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

DML_BEGIN_NAMESPACE
namespace comm::inproc {
namespace detail {

DML_DECL const char* describe(state s) {
  switch (s) {
    case state::running:
      return "running";
    case state::finished:
      return "returned from its function";
    case state::stopped:
      return "stopped";
    case state::failed:
      return "threw an exception";
  }
  return "?";
}

DML_DECL world::world(std::size_t n, options o)
    : size(n), opts(std::move(o)), states(n), killed(n), failed_at(n) {
  for (auto& s : states) s.store(state::running);
  for (auto& k : killed) k.store(false);
  arrived.assign(n, false);
  records.resize(n);
  dying_in.assign(n, 0);
  for (member_id m = 0; m < n; ++m) current.live.push_back(m);
}

DML_DECL void world::finish(member_id m, state s) {
  {
    std::lock_guard lock(mutex);
    if (states[m].load(std::memory_order_acquire) != state::running) return;
    if (s == state::stopped || s == state::failed) failed_at[m] = std::chrono::steady_clock::now();
    states[m].store(s, std::memory_order_release);
  }
  cv.notify_all();
}

DML_DECL bool world::agree_locked() {
  comm::membership_view next;
  next.epoch = current.epoch + 1;
  // A member that returned from its function cannot take part in a
  // rebuild either: it leaves with the dead (but alone triggers nothing).
  std::vector<member_id> dead;
  for (member_id m : current.live) {
    const auto s = states[m].load(std::memory_order_acquire);
    if (s == state::running)
      next.live.push_back(m);
    else if (s != state::finished)
      dead.push_back(m);
  }
  if (dead.empty()) return false;
  auto first = failed_at[dead.front()];
  for (member_id m : dead) first = std::min(first, failed_at[m]);
  detection.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - first).count());
  current = std::move(next);
  // A rendezvous of the old view can never complete: its waiters notice
  // the new epoch and leave.
  arrived.assign(size, false);
  records.assign(size, {});
  epoch.store(current.epoch, std::memory_order_release);
  cv.notify_all();
  return true;
}

DML_DECL void copy_in(std::uint64_t* dst, std::span<const std::byte> src) {
  const std::size_t full = src.size() / 8;
  for (std::size_t i = 0; i < full; ++i) {
    std::uint64_t w;
    std::memcpy(&w, src.data() + 8 * i, 8);
    std::atomic_ref<std::uint64_t>(dst[i]).store(w, std::memory_order_release);
  }
  if (const std::size_t tail = src.size() % 8; tail != 0) {
    std::uint64_t w = 0;
    std::memcpy(&w, src.data() + 8 * full, tail);
    std::atomic_ref<std::uint64_t>(dst[full]).store(w, std::memory_order_release);
  }
}

DML_DECL void copy_in_exclusive(std::uint64_t* dst, std::span<const std::byte> src) {
  const std::size_t full = src.size() / 8;
  std::memcpy(dst, src.data(), 8 * full);
  if (const std::size_t tail = src.size() % 8; tail != 0) {
    std::uint64_t w = 0;  // zero padded, as put's
    std::memcpy(&w, src.data() + 8 * full, tail);
    dst[full] = w;
  }
}

}  // namespace detail

DML_DECL segment::segment(context* ctx, std::vector<std::shared_ptr<detail::memory>> parts, member_id own)
    : parts_(std::move(parts)), own_(own) {
  ctx_ = ctx;
  data_words_.assign(parts_.size(), 0);
  control_words_.assign(parts_.size(), 0);
  for (member_id m = 0; m < parts_.size(); ++m)
    if (parts_[m]) {
      data_words_[m] = parts_[m]->data.size();
      control_words_[m] = parts_[m]->control.size();
    }
}

DML_DECL detail::memory& segment::part(member_id m) const {
  if (m >= parts_.size() || !parts_[m])
    throw peer_failure(m, "dml::comm::inproc: member " + std::to_string(m) +
                              " has no part in this segment (it was not in the view that created it)");
  return *parts_[m];
}

DML_DECL context::context(std::shared_ptr<detail::world> w, member_id rank)
    : world_(std::move(w)), rank_(rank), rng_(world_->opts.seed + 0x9e3779b97f4a7c15ULL * (rank + 1)) {
  for (auto& [m, d] : world_->opts.slow_members)
    if (m == rank_) slow_ += d;
  for (auto& [m, t] : world_->opts.kill_at)
    if (m == rank_) kill_at_ = std::min(kill_at_, t);
  for (member_id m = 0; m < world_->size; ++m) view_.live.push_back(m);
}

DML_DECL comm::agreement context::agree_on_survivors(std::chrono::steady_clock::time_point /*deadline*/) {
  std::lock_guard lock(world_->mutex);
  (void)world_->agree_locked();
  comm::agreement a;
  if (world_->current.epoch != view_.epoch) {
    a.detection_seconds = world_->detection[view_.epoch];  // the first view this member missed
    view_ = world_->current;
    segments_created_ = 0;
  }
  a.view = view_;
  return a;
}

DML_DECL segment context::create_segment(std::size_t data_words, std::size_t control_words) {
  auto mine = std::make_shared<detail::memory>();
  mine->data.assign(data_words, 0);
  mine->control.assign(control_words, 0);
  // Segments are keyed by the view and their order in it, so members that
  // made a different number of segments before a view change still meet
  // in the same one after it.
  const std::pair<std::uint64_t, std::size_t> key{view_.epoch, segments_created_++};
  {
    std::lock_guard lock(world_->mutex);
    auto& parts = world_->segments[key].parts;
    if (parts.empty()) parts.resize(world_->size);
    parts[rank_] = std::move(mine);
  }
  (void)rendezvous({}, "create_segment");
  std::lock_guard lock(world_->mutex);
  const auto it = world_->segments.find(key);
  segment s(this, it->second.parts, rank_);
  if (++it->second.picked == view_.live.size()) world_->segments.erase(it);
  return s;
}

DML_DECL void context::kill(member_id m) {
  if (m >= world_->size) throw config_error("dml::comm::inproc::kill: no member " + std::to_string(m));
  world_->killed[m].store(true, std::memory_order_release);
  world_->notify();
}

DML_DECL void context::before_operation() {
  if (kill_due()) stop();
  auto d = slow_;
  if (const auto max = world_->opts.max_random_delay.count(); max > 0)
    d += std::chrono::microseconds(static_cast<long long>(rng_.below(static_cast<std::uint64_t>(max) + 1)));
  if (d.count() > 0) std::this_thread::sleep_for(d);
}

DML_DECL void context::require_alive(member_id m, const char* waiting_for) const {
  const auto s = world_->states[m].load(std::memory_order_acquire);
  if (s == detail::state::stopped || s == detail::state::failed)
    throw peer_failure(m, "dml: member " + std::to_string(rank_) + " waited for member " + std::to_string(m) +
                              " (" + waiting_for + "), which " + detail::describe(s));
}

DML_DECL void context::throw_stale_locked() const {
  const auto removed = dml::detail::removed_members(view_.live, world_->current.live);
  const member_id who = removed.empty() ? rank_ : removed.front();
  throw peer_failure(who, "dml: member " + std::to_string(rank_) + " is in view " +
                              std::to_string(view_.epoch) + " but the group agreed on view " +
                              std::to_string(world_->current.epoch) + " without " +
                              dml::detail::members_named(removed));
}

DML_DECL std::vector<std::vector<std::byte>> context::rendezvous(std::span<const std::byte> record,
                                                                 const char* what) {
  before_operation();
  auto& w = *world_;
  std::unique_lock lock(w.mutex);
  if (w.current.epoch != view_.epoch) throw_stale_locked();
  const std::uint64_t gen = w.generation;
  w.records[rank_].assign(record.begin(), record.end());
  w.arrived[rank_] = true;
  if (std::string_view(what) == "barrier")
    for (const auto& [m, k] : w.opts.die_inside_barrier)
      if (m == rank_ && k == barriers_entered_) w.dying_in[rank_] = gen + 1;
  std::size_t count = 0;
  for (member_id m : view_.live) count += w.arrived[m] ? 1 : 0;
  if (count == view_.live.size()) {
    std::vector<std::vector<std::byte>> ordered;
    ordered.reserve(view_.live.size());
    for (member_id m : view_.live) ordered.push_back(std::move(w.records[m]));
    w.result = std::make_shared<const std::vector<std::vector<std::byte>>>(std::move(ordered));
    w.records.assign(w.size, {});
    w.arrived.assign(w.size, false);
    for (member_id m : view_.live)
      if (w.dying_in[m] == gen + 1) {  // die_inside_barrier: completed, and m dies
        w.died_inside[gen] = m;
        w.failed_at[m] = std::chrono::steady_clock::now();
        w.states[m].store(detail::state::stopped, std::memory_order_release);
        break;
      }
    ++w.generation;
    w.cv.notify_all();
    return completed_locked(lock, gen, what);
  }
  const auto deadline = std::chrono::steady_clock::now() + wait_limit_;
  while (w.generation == gen) {
    if (w.current.epoch != view_.epoch) {
      w.arrived[rank_] = false;
      throw_stale_locked();
    }
    // A failed member is the root cause even when others returned after
    // noticing it, so failures are reported before early returns.
    std::optional<member_id> returned;
    for (member_id m : view_.live) {
      if (w.arrived[m]) continue;
      const auto s = w.states[m].load(std::memory_order_acquire);
      if (s == detail::state::finished && !returned) returned = m;
      if (s == detail::state::stopped || s == detail::state::failed) {
        w.arrived[rank_] = false;  // withdraw, so the rendezvous stays consistent
        throw peer_failure(m, "dml: member " + std::to_string(rank_) + " waited in " + what + " for member " +
                                  std::to_string(m) + ", which " + detail::describe(s));
      }
    }
    if (returned) {
      w.arrived[rank_] = false;
      throw config_error("dml: member " + std::to_string(rank_) + " waits in " + what + " for member " +
                         std::to_string(*returned) +
                         ", which returned from its function without entering it");
    }
    if (kill_due()) {
      w.arrived[rank_] = false;
      lock.unlock();
      stop();
    }
    if (std::chrono::steady_clock::now() > deadline) {
      w.arrived[rank_] = false;
      throw timeout(
          "dml: member " + std::to_string(rank_) + " waited in " + what + " longer than " +
          std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(wait_limit_).count()) + " ms");
    }
    w.cv.wait_for(lock, std::chrono::milliseconds(5));
  }
  return completed_locked(lock, gen, what);
}

DML_DECL std::vector<std::vector<std::byte>> context::completed_locked(std::unique_lock<std::mutex>& lock,
                                                                       std::uint64_t gen, const char* what) {
  auto& w = *world_;
  const auto it = w.died_inside.find(gen);
  if (it == w.died_inside.end() || rank_ < it->second) return *w.result;
  const member_id victim = it->second;
  lock.unlock();
  if (rank_ == victim) throw stopped{};
  throw peer_failure(victim, "dml: member " + std::to_string(rank_) + " waited in " + what + " for member " +
                                 std::to_string(victim) + ", which stopped");
}

DML_DECL void segment::put(member_id target, std::size_t word, std::span<const std::byte> bytes) {
  require_handle();
  ctx_->before_operation();
  check_range(target, word, bytes.size());
  if (!ctx_->world_->alive(target)) return;  // like a write to a dead host: lost; flush reports it
  detail::copy_in(parts_[target]->data.data() + word, bytes);
}

DML_DECL void segment::put_exclusive(member_id target, std::size_t word, std::span<const std::byte> bytes) {
  require_handle();
  ctx_->before_operation();
  check_range(target, word, bytes.size());
  if (!ctx_->world_->alive(target)) return;  // lost, as put's
  detail::copy_in_exclusive(parts_[target]->data.data() + word, bytes);
}

DML_DECL void segment::flush(member_id target) {
  require_handle();
  (void)part(target);  // a member outside the segment is named, not looked up past the group
  ctx_->require_alive(target, "flush of its writes");
}

DML_DECL std::uint64_t segment::fetch_add(member_id target, std::size_t control_word, std::uint64_t value) {
  require_handle();
  ctx_->before_operation();
  auto& control = part(target).control;
  ctx_->require_alive(target, "remote atomic");
  check_control(target, control_word);
  return std::atomic_ref<std::uint64_t>(control[control_word]).fetch_add(value, std::memory_order_acq_rel);
}

DML_DECL void segment::get(member_id source, std::size_t word, std::span<std::byte> out) {
  require_handle();
  ctx_->before_operation();
  check_range(source, word, out.size());
  ctx_->require_alive(source, "one-sided read");  // like a read from a dead host: it fails
  ::dml::detail::segment_impl::atomic_copy_out(out, parts_[source]->data.data() + word);
}

namespace detail {

DML_DECL void run_members(std::size_t n, void (*call)(void*, context&), void* fn, options opts) {
  if (n == 0) throw config_error("dml::comm::inproc::run: the group needs at least one member (n = 0)");
  if (!opts.nodes.empty() && opts.nodes.size() != n)
    throw config_error("dml::comm::inproc::run: options::nodes gives " + std::to_string(opts.nodes.size()) +
                       (opts.nodes.size() == 1 ? " node label" : " node labels") + " for " +
                       std::to_string(n) + (n == 1 ? " member" : " members") +
                       "; give one per member, or none for one node");
  if (opts.nodes.empty()) opts.nodes.assign(n, 0);
  auto world = std::make_shared<detail::world>(n, std::move(opts));
  std::mutex first_mutex;
  std::exception_ptr first;
  member_id first_rank = 0;
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (member_id r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      context ctx(world, r);
      try {
        call(fn, ctx);
        world->finish(r, detail::state::finished);
      } catch (const stopped&) {
        world->finish(r, detail::state::stopped);
      } catch (...) {
        {  // record before marking failed, so waiters' follow-on errors never come first
          std::lock_guard lock(first_mutex);
          if (!first) {
            first = std::current_exception();
            first_rank = r;
          }
        }
        world->finish(r, detail::state::failed);
      }
    });
  }
  for (auto& t : threads) t.join();
  if (!first) return;
  const std::string prefix = "member " + std::to_string(first_rank) + ": ";
  try {
    std::rethrow_exception(first);
  } catch (const peer_failure& e) {
    throw peer_failure(e.rank(), prefix + e.what());
  } catch (const data_error& e) {
    throw data_error(e.file(), e.line(), prefix + e.reason());
  } catch (const config_error& e) {
    throw config_error(prefix + e.what());
  } catch (const timeout& e) {
    throw timeout(prefix + e.what());
  } catch (const comm_error& e) {
    throw comm_error(prefix + e.what());
  }
  // any other exception propagates unchanged from the catch above
}

}  // namespace detail

}  // namespace comm::inproc
DML_END_NAMESPACE

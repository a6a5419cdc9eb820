// SPDX-License-Identifier: BSL-1.0
/// @file
/// Out-of-line definitions for <dml/consistency/adaptive.hpp> (see <dml/version.hpp>, DML_DECL).
#pragma once

#include <dml/consistency/adaptive.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>

DML_BEGIN_NAMESPACE
namespace consistency {

DML_DECL adaptive::adaptive(adaptive_options o) : s_(std::make_shared<state>()) {
  if (o.every == 0) throw config_error("dml::consistency::adaptive: every must be at least 1 clock");
  if (o.start.period == 0) throw config_error("dml::consistency::adaptive: a period of 0 steps");
  if (o.rule && o.rule_name.empty())
    throw config_error("dml::consistency::adaptive: a rule of the caller's needs a rule_name");
  if (o.start.balanced)
    throw config_error(
        "dml::consistency::adaptive: balanced settings need measured speeds; they cannot be the start");
  if (o.first_window > o.every) o.first_window = o.every;
  o.start = normal(o.start);
  s_->current = o.start;
  s_->my_period = o.start.period;
  s_->opts = std::move(o);
  if (!s_->opts.rule) s_->brain = controller(s_->opts.control);
}

DML_DECL adaptive::adaptive(const adaptive& o) : s_(std::make_shared<state>(*o.s_)) {}

DML_DECL adaptive& adaptive::operator=(const adaptive& o) {
  if (this != &o) s_ = std::make_shared<state>(*o.s_);
  return *this;
}

DML_DECL std::string adaptive::name() const {
  const auto& o = s_->opts;
  return "adaptive(every " + std::to_string(o.every) +
         (o.first_window != 0 ? " from " + std::to_string(o.first_window) : std::string()) + ", start " +
         o.start.text() + ", rule " + (o.rule ? o.rule_name : "controller: " + o.control.text()) + ")";
}

DML_DECL bool adaptive::agrees_at(std::uint64_t t) const noexcept {
  if (t <= 1) return false;
  const std::uint64_t every = s_->opts.every;
  const std::uint64_t first = s_->opts.first_window == 0 ? every : s_->opts.first_window;
  // The warm-up window, then the short ones: first, 2 first, ... below every.
  if (first > t - 1) return false;  // t is inside the warm-up window
  std::uint64_t at = 1 + first;
  if (t == at) return true;
  std::uint64_t window = first;
  while (window < every) {
    if (window > ~std::uint64_t{0} - at) return false;  // beyond every clock
    at += window;
    if (t <= at) return t == at;
    window = window > every / 2 ? every : 2 * window;  // doubled, at most every
  }
  return (t - at) % every == 0;
}

DML_DECL void adaptive::propose(adaptive_settings s) const { s_->proposal = normal(s); }

DML_DECL void adaptive::report_loss(double loss) const {
  if (std::isnan(loss)) return;
  s_->loss_sum += loss;
  ++s_->loss_count;
}

DML_DECL adaptive_settings adaptive::normal(adaptive_settings s) {
  if (s.period == 0) s.period = 1;
  if (s.mode != adaptive_mode::ssp) s.slack = 0;
  if (s.mode == adaptive_mode::ssp && s.slack == 0) s.mode = adaptive_mode::bsp;  // ssp(0) waits as bsp
  return s;
}

DML_DECL adaptive_settings adaptive::settings_of(std::uint64_t mode, std::uint64_t slack,
                                                 std::uint64_t period, std::uint64_t balanced) {
  adaptive_settings s;
  s.mode = mode == 2 ? adaptive_mode::asp : mode == 1 ? adaptive_mode::ssp : adaptive_mode::bsp;
  s.slack = slack;
  s.period = period;
  s.balanced = balanced != 0;
  return s;
}

DML_DECL adaptive::record adaptive::record_of(const vector_stats& st, std::uint64_t t) const {
  const state& s = *s_;
  record mine{};
  mine.clock = t;
  mine.mode = static_cast<std::uint64_t>(s.current.mode);
  mine.slack = s.current.slack;
  mine.period = s.current.period;
  mine.balanced = s.current.balanced ? 1 : 0;
  if (s.proposal) {
    mine.proposed = 1;
    mine.p_mode = static_cast<std::uint64_t>(s.proposal->mode);
    mine.p_slack = s.proposal->slack;
    mine.p_period = s.proposal->period;
    mine.p_balanced = s.proposal->balanced ? 1 : 0;
  }
  mine.clocks = st.gathers - s.gathers0;
  mine.steps = mine.clocks * s.my_period;
  mine.full_gathers = st.full_gathers - s.full0;
  mine.compute = st.compute_seconds - s.compute0;
  mine.exchange = st.exchange_seconds - s.exchange0;
  mine.wait = st.wait_seconds - s.wait0;
  mine.loss = s.loss_count == 0 ? std::nan("") : s.loss_sum / static_cast<double>(s.loss_count);
  return mine;
}

DML_DECL void adaptive::conclude(const std::vector<std::vector<std::byte>>& all,
                                 const std::vector<member_id>& live, member_id me, std::uint64_t t,
                                 const record& mine, const vector_stats& st, double wait_before) const {
  state& s = *s_;
  std::vector<record> recs(all.size());
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (all[i].size() != sizeof(record))
      throw comm_error("dml::consistency::adaptive: malformed agreement record from member " +
                       std::to_string(i < live.size() ? live[i] : i));
    std::memcpy(&recs[i], all[i].data(), sizeof(record));
  }
  std::optional<adaptive_settings> chosen;
  std::vector<window_observation> obs;
  obs.reserve(recs.size());
  for (std::size_t i = 0; i < recs.size(); ++i) {
    const record& r = recs[i];
    const member_id who = i < live.size() ? live[i] : i;
    if (r.clock != t || r.mode != mine.mode || r.slack != mine.slack || r.period != mine.period ||
        r.balanced != mine.balanced)
      throw comm_error("dml::consistency::adaptive: member " + std::to_string(me) + " agrees at clock " +
                       std::to_string(t) + " holding " + s.current.text() + ", member " +
                       std::to_string(who) + " at clock " + std::to_string(r.clock) + " holding " +
                       settings_of(r.mode, r.slack, r.period, r.balanced).text() + " (members out of step)");
    if (r.proposed && !chosen) chosen = normal(settings_of(r.p_mode, r.p_slack, r.p_period, r.p_balanced));
    window_observation o;
    o.compute_seconds = r.compute;
    o.exchange_seconds = r.exchange;
    o.wait_seconds = r.wait;
    o.clocks = r.clocks;
    o.full_gathers = r.full_gathers;
    o.steps = r.steps;
    o.loss = r.loss;
    obs.push_back(o);
  }
  adaptive_settings next = s.current;
  if (chosen)
    next = *chosen;
  else if (s.opts.rule)
    next = normal(s.opts.rule(std::span<const window_observation>(obs), s.current));
  else
    next = normal(s.brain->decide(std::span<const window_observation>(obs), s.current));
  s.proposal.reset();
  s.agreed_at = t;
  s.compute0 = st.compute_seconds;
  s.exchange0 = st.exchange_seconds;
  s.wait0 = wait_before;
  s.gathers0 = st.gathers;
  s.full0 = st.full_gathers;
  s.loss_sum = 0;
  s.loss_count = 0;
  // This member's period: its share of the balanced steps, from the same
  // records on every member.
  s.my_period = next.period;
  if (next.balanced) {
    const auto it = std::find(live.begin(), live.end(), me);
    const auto shares = controller::shares(obs, s.current.period, s.opts.control.max_share);
    if (it != live.end() && static_cast<std::size_t>(it - live.begin()) < shares.size())
      s.my_period = next.period * shares[static_cast<std::size_t>(it - live.begin())];
  }
  if (next != s.current) {
    s.current = next;
    s.changes.push_back({t, next});
  }
}

}  // namespace consistency
DML_END_NAMESPACE

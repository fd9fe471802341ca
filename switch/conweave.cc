#include "switch/conweave.h"

#include <algorithm>

namespace rocefab {

const char* ConweaveFlagName(ConweaveFlag f) {
  switch (f) {
    case ConweaveFlag::kData:
      return "DATA";
    case ConweaveFlag::kRttRequest:
      return "RTT_REQUEST";
    case ConweaveFlag::kTail:
      return "TAIL";
  }
  return "?";
}

// ---------------------------------------------------------------------------------------------
// Source ToR

bool ConweaveTx::PathBusy(uint32_t path, Time now, uint32_t dst_tor) const {
  auto it = busy_until_.find(static_cast<uint64_t>(dst_tor) << 32 | path);
  return it != busy_until_.end() && it->second > now;
}

uint32_t ConweaveTx::WidenEpoch(uint64_t flow, uint8_t wire_epoch) const {
  auto it = flows_.find(flow);
  if (it == flows_.end()) return 0;
  const uint32_t cur = it->second.epoch;
  return (cur & 3) == (wire_epoch & 3u) ? cur : cur + 1;  // cur + 1: never matches, so ignored
}

uint32_t ConweaveTx::PathOf(uint64_t flow) const {
  auto it = flows_.find(flow);
  return it == flows_.end() ? 0 : it->second.path;
}

ConweaveTag ConweaveTx::OnData(uint64_t flow, std::span<const uint32_t> paths, Time base_rtt,
                               Time now, Rng& rng, uint32_t dst_tor) {
  auto [it, is_new] = flows_.try_emplace(flow);
  Flow& e = it->second;
  // A flow seen for the first time, or idle for longer than theta_inactive, starts a fresh epoch
  // and may move at once (no packet of it is in flight). A stabilized flow (RTT_REPLY in time or
  // CLEAR received) starts the next epoch on its current path.
  const bool expired = is_new || e.active + p_.inactive < now;
  const bool stabilized = !expired && e.stabilized;
  const bool new_epoch = expired || stabilized;
  bool reply_timeout = false;
  e.active = now;
  if (new_epoch) {
    e.stabilized = false;
    const Time base = min_rtt_ != kTimeNever ? std::max(base_rtt, min_rtt_) : base_rtt;
    e.reply_due = now + base + p_.reply_extra;
    e.request_at = now;
  } else if (e.reply_due < now) {
    e.reply_due = kTimeNever;  // one reroute per epoch: the deadline is spent
    reply_timeout = true;
    ++stats_.late_replies;
  }

  ConweaveTag tag;
  tag.ts_tx = now;
  if (new_epoch) {
    ++e.epoch;
    e.phase = 0;
    tag.phase = 0;
    tag.flag = ConweaveFlag::kRttRequest;
    ++stats_.rtt_requests;
  } else if (reply_timeout) {
    e.phase = 1;
    tag.phase = 0;  // the TAIL is the last packet of phase 0
    tag.flag = ConweaveFlag::kTail;
    ++stats_.tails;
  } else {
    tag.phase = e.phase;
    tag.flag = ConweaveFlag::kData;
  }

  // Path-aware sampling: two uniform samples, the first one not marked busy by a NOTIFY wins.
  // Both are drawn for every packet (the switch's random stream does not depend on the flow's
  // state); the busy table is read only when the flow may move (most packets stay on their
  // path).
  const uint32_t n = static_cast<uint32_t>(paths.size());
  const uint32_t p1 = paths[rng.Below(n)];
  const uint32_t p2 = paths[rng.Below(n)];
  if (new_epoch) e.tail_time = 0;
  if (!expired && !reply_timeout) {  // the flow stays on its path
    tag.path = e.path;
    tag.epoch = e.epoch;
    tag.ts_tail = e.tail_time;
    return tag;
  }
  const bool busy1 = PathBusy(p1, now, dst_tor);
  const bool have_good = !busy1 || !PathBusy(p2, now, dst_tor);
  const uint32_t good = !busy1 ? p1 : p2;
  if (is_new) e.path = have_good ? good : p1;
  if (expired) {
    if (have_good && good != e.path) {
      e.path = good;
      ++stats_.inactive_switches;
    }
    tag.path = e.path;
  } else {              // reply_timeout
    tag.path = e.path;  // the TAIL leaves on the old path; the rest of the epoch on the new one
    if (have_good && good != e.path) {
      e.path = good;
      ++stats_.reroutes;
      ++e.reroutes;
    }
    e.tail_time = now;
  }
  tag.epoch = e.epoch;
  tag.ts_tail = e.tail_time;
  return tag;
}

bool ConweaveTx::OnRttReply(uint64_t flow, uint32_t epoch, Time now) {
  auto it = flows_.find(flow);
  if (it != flows_.end()) {
    Flow& e = it->second;
    if (e.epoch == epoch && e.request_at >= 0) {  // time every reply of the current epoch once
      min_rtt_ = std::min(min_rtt_, now - e.request_at);
      e.request_at = -1;
    }
    if (e.epoch == epoch && e.phase == 0 && e.reply_due != kTimeNever && now <= e.reply_due) {
      e.stabilized = true;
      e.reply_due = kTimeNever;
      ++stats_.timely_replies;
      return true;
    }
  }
  ++stats_.stale_replies;
  return false;
}

bool ConweaveTx::OnClear(uint64_t flow, uint32_t epoch, Time /*now*/) {
  auto it = flows_.find(flow);
  if (it != flows_.end()) {
    Flow& e = it->second;
    if (e.epoch == epoch && e.phase == 1) {
      e.stabilized = true;
      e.reply_due = kTimeNever;
      ++stats_.clears;
      return true;
    }
  }
  ++stats_.stale_replies;
  return false;
}

void ConweaveTx::OnNotify(uint32_t path, Time now, uint32_t dst_tor) {
  busy_until_[static_cast<uint64_t>(dst_tor) << 32 | path] = now + p_.path_busy;
  ++stats_.notifies;
}

std::array<uint64_t, 5> ConweaveTx::RerouteHistogram() const {
  std::array<uint64_t, 5> h = aged_reroute_hist_;
  for (const auto& [key, f] : flows_) ++h[RerouteBucket(f.reroutes)];
  return h;
}

void ConweaveTx::Age(Time now) {
  EraseIf(flows_, [&](const auto& kv) {
    if (kv.second.active + p_.state_aging >= now) return false;
    ++aged_reroute_hist_[RerouteBucket(kv.second.reroutes)];
    return true;
  });
  EraseIf(busy_until_, [&](const auto& kv) { return kv.second <= now; });
}

// ---------------------------------------------------------------------------------------------
// Destination ToR

ConweaveRx::ConweaveRx(const ConweaveParams& p, uint32_t num_ports)
    : p_(p),
      owner_(num_ports, std::vector<uint64_t>(p.reorder_queues_per_port, 0)),
      owned_(num_ports, std::vector<bool>(p.reorder_queues_per_port, false)),
      in_use_(num_ports, 0) {}

uint32_t ConweaveRx::Widen(uint32_t cur, uint8_t wire_epoch) {
  const uint32_t d = (wire_epoch - cur) & 3u;
  return d == 3 && cur > 0 ? cur - 1 : cur + d;
}

uint32_t ConweaveRx::WidenEpoch(uint64_t flow, uint8_t wire_epoch) const {
  auto it = flows_.find(flow);
  return it == flows_.end() ? wire_epoch & 3u : Widen(it->second.epoch, wire_epoch);
}

uint32_t ConweaveRx::queues_in_use(uint32_t port) const {
  return port < in_use_.size() ? in_use_[port] : 0;
}

void ConweaveRx::Free(Flow& f) {
  if (!f.reordering) return;
  owned_[f.port][f.queue] = false;
  --in_use_[f.port];
  --in_use_total_;
  f.reordering = false;
  f.phase = 1;
  f.deadline = kTimeNever;
  const uint64_t flow = owner_[f.port][f.queue];
  std::erase(reordering_, flow);
}

ConweaveRx::Action ConweaveRx::OnData(uint64_t flow, uint32_t egress_port, const ConweaveTag& tag,
                                      bool ecn_ce, Time now, bool can_hold) {
  auto [it, is_new] = flows_.try_emplace(flow);
  return OnFlowData(flow, it->second, is_new, egress_port, tag, ecn_ce, now, can_hold);
}

ConweaveRx::Action ConweaveRx::OnWireData(uint64_t flow, uint32_t egress_port, ConweaveTag tag,
                                          bool ecn_ce, Time now, bool can_hold, uint32_t* epoch) {
  auto [it, is_new] = flows_.try_emplace(flow);
  // A flow not in the table takes the wire's epoch as it is (WidenEpoch's rule).
  tag.epoch = is_new ? tag.epoch & 3u : Widen(it->second.epoch, static_cast<uint8_t>(tag.epoch));
  *epoch = tag.epoch;
  return OnFlowData(flow, it->second, is_new, egress_port, tag, ecn_ce, now, can_hold);
}

ConweaveRx::Action ConweaveRx::OnFlowData(uint64_t flow, Flow& e, bool is_new, uint32_t egress_port,
                                          const ConweaveTag& tag, bool ecn_ce, Time now,
                                          bool can_hold) {
  Action a;
  e.active = now;
  const bool tail = tag.flag == ConweaveFlag::kTail;

  enum class Epoch { kNew, kPrev, kCurrent } m;
  if (is_new || tag.epoch > e.epoch) {
    m = Epoch::kNew;
    e.epoch = tag.epoch;
  } else if (tag.epoch < e.epoch) {
    m = Epoch::kPrev;
  } else {
    m = Epoch::kCurrent;
  }
  if (m == Epoch::kPrev) {  // a straggler of an epoch that is already over
    ++stats_.prev_epoch;
    return a;
  }
  if (m == Epoch::kNew && e.reordering) {
    // The source only opens a new epoch after CLEAR or theta_inactive, by which time the old
    // epoch's queue should be empty; if not, deliver what it holds first.
    a.release_before = true;
    a.release_queue = e.queue;
    Free(e);
    ++stats_.releases_by_new_epoch;
  }

  if (tag.phase == 0) {
    e.phase0_tx = tag.ts_tx;
    e.phase0_rx = now;
  }
  bool ooo = false;
  if (m == Epoch::kNew) {
    e.phase = tail ? 1 : 0;
    ooo = tag.phase > e.phase;  // the epoch's first packet came on the new path
    e.phase0_cache = tag.phase == 0;
    e.fallback = false;
  } else {
    if (tail) {
      if (!e.reordering) e.phase = 1;  // else phase 1 begins when the queue is released
    } else if (e.phase < tag.phase) {
      ooo = true;
    }
    if (tag.phase == 0) e.phase0_cache = true;
  }
  if (tail || tag.phase == 1) e.tail_time = tag.ts_tail;

  // Predicted TAIL arrival: the last phase-0 packet's arrival plus the gap the source left between
  // sending it and sending the TAIL; without a phase-0 packet, the default wait.
  const Time gap = e.phase0_cache ? std::max<Time>(0, e.tail_time - e.phase0_tx) : p_.default_wait;
  if (tag.phase == 0 && e.reordering) {
    if (tail) {
      a.release_after = true;
      a.release_queue = e.queue;
      Free(e);
      ++stats_.releases_by_tail;
    } else {
      e.deadline = now + gap + p_.extra_flush;
    }
  }
  if (tail) e.fallback = false;

  if (tag.phase == 1 && ooo) {
    if (!e.reordering) {
      const auto& owned = owned_[egress_port];
      auto free = std::find(owned.begin(), owned.end(), false);
      if (free == owned.end() || !can_hold) {
        // No reorder queue left on this port: deliver out of order, as the Tofino2 code does.
        ++stats_.fallbacks;
        e.phase = 1;
        e.fallback = true;
      } else {
        const uint32_t q = static_cast<uint32_t>(free - owned.begin());
        owned_[egress_port][q] = true;
        owner_[egress_port][q] = flow;
        ++in_use_[egress_port];
        ++in_use_total_;
        stats_.max_queues_in_use = std::max(stats_.max_queues_in_use, in_use_total_);
        reordering_.push_back(flow);
        e.reordering = true;
        e.port = egress_port;
        e.queue = q;
        e.deadline = (e.phase0_cache ? e.phase0_rx : now) + gap + p_.extra_flush;
      }
    }
    if (e.reordering) {
      a.deliver = Action::Deliver::kHold;
      a.queue = e.queue;
      ++stats_.held;
      return a;
    }
  }
  if (e.fallback && tag.phase == 1) {
    a.out_of_order = true;
    ++stats_.out_of_order;
  }
  if (ecn_ce) {
    a.send_notify = true;
    ++stats_.notifies;
  }
  if (tag.flag == ConweaveFlag::kRttRequest) {
    a.send_rtt_reply = true;
    ++stats_.rtt_replies;
  }
  if (tail) {
    a.send_clear = true;
    ++stats_.clears;
  }
  return a;
}

std::vector<ConweaveRx::Release> ConweaveRx::DueReleases(Time now) {
  std::vector<Release> out;
  for (size_t i = 0; i < reordering_.size();) {
    Flow& f = flows_.at(reordering_[i]);
    if (f.deadline <= now) {
      out.push_back({f.port, f.queue, reordering_[i]});
      Free(f);  // erases reordering_[i]
      ++stats_.releases_by_timeout;
    } else {
      ++i;
    }
  }
  return out;
}

Time ConweaveRx::next_deadline() const {
  Time t = kTimeNever;
  for (uint64_t flow : reordering_) t = std::min(t, flows_.at(flow).deadline);
  return t;
}

void ConweaveRx::Age(Time now) {
  EraseIf(flows_, [&](const auto& kv) {
    return !kv.second.reordering && kv.second.active + p_.state_aging < now;
  });
}

}  // namespace rocefab

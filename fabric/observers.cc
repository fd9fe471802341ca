#include "fabric/observers.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <tuple>

#include "common/eal.h"
#include "common/units.h"
#include "common/wire/pfc_frame.h"
#include "common/wire/roce_headers.h"

namespace rocefab {

SwitchNode* FabricView::sw(const std::string& name) const {
  for (SwitchNode* s : switches) {
    if (s->name() == name) return s;
  }
  return nullptr;
}

EmulatedHost* FabricView::host(const std::string& name) const {
  const int i = scenario->topology.HostIndex(name);
  return i < 0 ? nullptr : hosts[static_cast<size_t>(i)];
}

namespace {
enum : uint64_t { kBegin = 0, kEnd = 1, kTick = 2, kReroute = 3 };
// Source of injected frames: a locally administered MAC and an address of no fabric subnet.
const Mac kInjectorMac{{0x02, 0x52, 0x46, 0, 0, 1}};
constexpr Ipv4 kInjectorIp = 0x0AFEFE01;  // 10.254.254.1
}  // namespace

void FaultInjector::Start(Time now) {
  rng_ = Rng(v_->scenario->seed * 0x9E3779B97F4A7C15ull + 17);
  const auto& faults = v_->scenario->faults;
  for (size_t i = 0; i < faults.size(); ++i) {
    env_->ScheduleTimer(std::max(now, faults[i].at), i << 2 | kBegin);
    if (faults[i].duration > 0)
      env_->ScheduleTimer(faults[i].at + faults[i].duration, i << 2 | kEnd);
  }
}
void FaultInjector::OnTimer(Time now, uint64_t cookie) {
  const Fault& fl = v_->scenario->faults[cookie >> 2];
  const int phase = static_cast<int>(cookie & 3);
  if (phase == kTick) return Inject(now, cookie >> 2);
  if (phase == kReroute) {
    // Apply this fault's oldest change not yet seen by routing, then converge.
    auto& q = pending_[cookie >> 2];
    if (q.empty()) return;
    const int k = LinkIndex(fl.from, fl.to);
    if (k >= 0) route_down_[static_cast<size_t>(k)] += q.front() ? 1 : -1;
    q.pop_front();
    return Reroute(now);
  }
  const bool begin = phase == kBegin;
  switch (fl.kind) {
    case Fault::Kind::kNicStall:
      if (begin) {
        v_->host(fl.host)->rnic().StallRx(now, fl.duration > 0 ? now + fl.duration : kTimeNever);
        v_->log(now, "nic_stall " + fl.host + " begins");
      } else {
        v_->log(now, "nic_stall " + fl.host + " ends");
      }
      break;
    case Fault::Kind::kDeadHost:
      v_->host(fl.host)->SetDead(begin);
      v_->log(now, "dead_host " + fl.host + (begin ? " dies" : " comes back"));
      break;
    case Fault::Kind::kLinkLoss: {
      LossModel lm;
      if (begin) {
        lm.every_n = fl.every;
        lm.rate = fl.rate;
        lm.indices = fl.frames;
        lm.filter = fl.filter;
        lm.seed = v_->scenario->seed;
      }
      SetLinkLoss(fl.from, fl.to, lm);
      v_->log(now, "link_loss " + fl.from + "-" + fl.to + (begin ? " begins" : " ends"));
      break;
    }
    case Fault::Kind::kLinkDown: {
      const int k = LinkIndex(fl.from, fl.to);
      if (k < 0) break;  // the reader checked the link exists
      if (phys_down_.size() < v_->plan->links.size()) {
        phys_down_.resize(v_->plan->links.size());
        route_down_.resize(v_->plan->links.size());
      }
      // Overlapping link_down faults on one link: down while any of them is active.
      int& n = phys_down_[static_cast<size_t>(k)];
      n += begin ? 1 : -1;
      if ((begin && n == 1) || (!begin && n == 0)) {
        LossModel lm;
        if (begin) {
          lm.rate = 1.0;
          lm.seed = v_->scenario->seed;
        }
        SetLinkLoss(fl.from, fl.to, lm);
        SetLinkLoss(fl.to, fl.from, lm);
      }
      v_->log(now, "link_down " + fl.from + "-" + fl.to + (begin ? " begins" : " ends"));
      if (fl.reroute_after >= 0) {
        // Routing learns of this change reroute_after later (each fault with its own delay).
        pending_[cookie >> 2].push_back(begin);
        env_->ScheduleTimer(now + fl.reroute_after, (cookie >> 2) << 2 | kReroute);
      }
      break;
    }
    case Fault::Kind::kMacFlush: {
      SwitchNode* sw = v_->sw(fl.sw);
      const auto& th = v_->scenario->topology.hosts[v_->scenario->topology.HostIndex(fl.host)];
      const auto& tor = v_->scenario->topology.switches[v_->scenario->topology.SwitchIndex(fl.sw)];
      sw->mac_table().Flush(tor.vlan, th.mac);
      v_->log(now, "mac_flush " + fl.sw + " " + fl.host);
      break;
    }
    case Fault::Kind::kMacAging:
      for (SwitchNode* s : v_->switches) {
        if (fl.sw == "all" || s->name() == fl.sw) s->mac_table().set_aging(fl.aging);
      }
      v_->log(now, "mac_aging " + fl.sw + " " + FormatDuration(fl.aging));
      break;
    case Fault::Kind::kPauseInjection:
    case Fault::Kind::kCnpInjection:
    case Fault::Kind::kFrameInjection: {
      const char* what = fl.kind == Fault::Kind::kPauseInjection ? "pause_injection"
                         : fl.kind == Fault::Kind::kCnpInjection ? "cnp_injection"
                                                                 : "frame_injection";
      const std::string target = fl.port >= 0 ? fl.sw + "/p" + std::to_string(fl.port) : fl.host;
      if (begin) {
        v_->log(now, std::string(what) + " at " + target + " begins");
        active_[cookie >> 2] = fl.duration > 0 ? now + fl.duration : kTimeNever;
        Inject(now, cookie >> 2);
      } else {
        active_.erase(cookie >> 2);
        v_->log(now, std::string(what) + " at " + target + " ends after " +
                         std::to_string(injected_[cookie >> 2]) + " frame(s)");
      }
      break;
    }
    case Fault::Kind::kConfig:
      for (SwitchNode* swp : v_->switches) {
        SwitchNode& sw = *swp;
        if (fl.sw != "all" && sw.name() != fl.sw) continue;
        if (fl.pfc_watchdog >= 0) {
          PfcWatchdogConfig c = sw.config().watchdog;
          c.enabled = fl.pfc_watchdog == 1;
          sw.SetWatchdog(now, c);
        }
        if (fl.drop_incomplete_arp >= 0)
          sw.SetDropLosslessOnIncompleteArp(fl.drop_incomplete_arp == 1);
      }
      v_->log(now, "config change on " + fl.sw);
      break;
  }
}

void FaultInjector::Inject(Time now, uint64_t idx) {
  auto it = active_.find(idx);
  if (it == active_.end() || now >= it->second) return;
  const Fault& fl = v_->scenario->faults[idx];
  uint64_t& n = injected_[idx];
  if (fl.count > 0 && n >= fl.count) return;
  rte_mbuf* m = BuildInjected(fl);
  if (m != nullptr && !Deliver(now, fl, m)) {
    v_->log(now, "injection at " + fl.host + " stopped: it has no emulated NIC (a Linux host)");
    active_.erase(it);
    return;
  }
  if (m != nullptr) ++n;
  env_->ScheduleTimer(now + static_cast<Time>(1e12 / fl.rate), idx << 2 | kTick);
}

bool FaultInjector::Deliver(Time now, const Fault& fl, rte_mbuf* m) {
  if (fl.port >= 0) {
    SwitchNode* sw = v_->sw(fl.sw);
    if (sw != nullptr && fl.port < sw->num_ports()) {
      const size_t i = static_cast<size_t>(std::find(v_->switches.begin(), v_->switches.end(), sw) -
                                           v_->switches.begin());
      if (!v_->owns(v_->switch_node[i])) {
        rte_pktmbuf_free(m);  // the switch runs on another rank, which delivers the same frame
        return true;
      }
      sw->Receive(now, static_cast<uint16_t>(fl.port), m);
      return true;
    }
  } else if (EmulatedHost* h = v_->host(fl.host)) {
    const int i = v_->scenario->topology.HostIndex(fl.host);
    if (!v_->owns(v_->host_node[static_cast<size_t>(i)])) {
      rte_pktmbuf_free(m);  // the host runs on another rank, which delivers the same frame
      return true;
    }
    h->Receive(now, 0, m);
    return true;
  }
  rte_pktmbuf_free(m);
  return false;
}

rte_mbuf* FaultInjector::BuildInjected(const Fault& fl) {
  // Whom the frame is for: the host, or (on a switch port) the switch itself with a host of
  // the fabric as the IP destination.
  const Topology& t = v_->scenario->topology;
  Mac dst_mac{};
  Ipv4 dst_ip = t.hosts.empty() ? 0 : t.hosts[0].ip;
  if (fl.port < 0) {
    const auto& h = t.hosts[static_cast<size_t>(t.HostIndex(fl.host))];
    dst_mac = h.mac;
    dst_ip = h.ip;
  } else if (SwitchNode* sw = v_->sw(fl.sw)) {
    dst_mac = sw->config().router_mac;
  }
  switch (fl.kind) {
    case Fault::Kind::kPauseInjection: {
      const uint8_t enable =
          fl.priorities != 0 ? fl.priorities : static_cast<uint8_t>(1 << fl.priority);
      const uint16_t quanta = static_cast<uint16_t>(fl.quanta >= 0 ? fl.quanta
                                                    : fl.xoff      ? 0xFFFF
                                                                   : 0);
      std::array<uint16_t, 8> q{};
      for (int p = 0; p < 8; ++p) q[p] = ((enable >> p) & 1) ? quanta : 0;
      return BuildPfc(env_->pool(), kInjectorMac, enable, q);
    }
    case Fault::Kind::kCnpInjection: {
      RoceFrameSpec s;
      s.src_mac = kInjectorMac;
      s.dst_mac = dst_mac;
      s.src_ip = kInjectorIp;
      s.dst_ip = dst_ip;
      s.sport = RoceSourcePort(fl.qpn);
      s.dscp = 48;
      s.op = RoceOp::kCnp;
      s.becn = true;
      s.dest_qp = fl.qpn;
      return BuildRoce(env_->pool(), s);
    }
    case Fault::Kind::kFrameInjection:
      return BuildGarbage(fl, dst_mac, dst_ip);
    default:
      return nullptr;
  }
}

rte_mbuf* FaultInjector::BuildGarbage(const Fault& fl, const Mac& dst_mac, Ipv4 dst_ip) {
  if (fl.garbage == Fault::Garbage::kRunt || fl.garbage == Fault::Garbage::kRandom) {
    rte_mbuf* m = AllocMbuf(env_->pool());
    if (m == nullptr) return nullptr;
    Meta(m)->flags = 0;  // the private area keeps the previous frame's metadata
    const uint16_t len = fl.garbage == Fault::Garbage::kRunt
                             ? 14
                             : static_cast<uint16_t>(60 + rng_.Below(1514 - 60 + 1));
    auto* b = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, len));
    if (b == nullptr) {
      rte_pktmbuf_free(m);
      return nullptr;
    }
    for (uint16_t i = 0; i < len; ++i) b[i] = static_cast<uint8_t>(rng_.Next());
    std::memcpy(b, dst_mac.addr_bytes, 6);  // unicast to the target, so it is not ignored
    b[6] = 0x02;                            // a locally administered unicast source
    if (fl.garbage == Fault::Garbage::kRunt) b[12] = 0x08, b[13] = 0x00;  // IPv4, no header
    return m;
  }
  // A valid RDMA WRITE Only of 64 bytes, then one rule broken.
  RoceFrameSpec s;
  s.src_mac = kInjectorMac;
  s.dst_mac = dst_mac;
  s.src_ip = kInjectorIp;
  s.dst_ip = dst_ip;
  s.sport = RoceSourcePort(1);
  s.dscp = 26;
  s.op = RoceOp::kWriteOnly;
  s.dest_qp = 1;
  s.payload_len = 64;
  s.dma_len = 64;
  s.defer_icrc = fl.garbage == Fault::Garbage::kBadOpcode;  // recomputed after the change
  rte_mbuf* m = BuildRoce(env_->pool(), s);
  if (m == nullptr) return nullptr;
  auto* b = rte_pktmbuf_mtod(m, uint8_t*);
  constexpr uint32_t kIp = sizeof(rte_ether_hdr), kBth = kIp + 20 + 8;
  switch (fl.garbage) {
    case Fault::Garbage::kTruncated:
      rte_pktmbuf_trim(m, static_cast<uint16_t>(rte_pktmbuf_pkt_len(m) - (kBth + 6)));
      break;
    case Fault::Garbage::kBadIpChecksum:
      b[kIp + 10] ^= 0x01;
      break;
    case Fault::Garbage::kBadIcrc:
      b[rte_pktmbuf_pkt_len(m) - 1] ^= 0xFF;
      break;
    case Fault::Garbage::kBadOpcode:
      b[kBth] = 0x1F;  // reserved RC opcode, with a correct ICRC over it
      FinalizeIcrc(m);
      break;
    default:
      break;
  }
  return m;
}

const std::string& FaultInjector::EndName(const FabricPlan::Endpoint& e) const {
  const Topology& t = v_->scenario->topology;
  return e.is_host ? t.hosts[e.index].name : t.switches[e.index].name;
}

int FaultInjector::LinkIndex(const std::string& a, const std::string& b) const {
  for (size_t k = 0; k < v_->plan->links.size(); ++k) {
    const auto& l = v_->plan->links[k];
    if ((EndName(l.a) == a && EndName(l.b) == b) || (EndName(l.a) == b && EndName(l.b) == a)) {
      return static_cast<int>(k);
    }
  }
  return -1;
}

void FaultInjector::Reroute(Time now) {
  // Every switch converges at once on the links routing knows to be up.
  std::vector<bool> down(route_down_.size());
  for (size_t k = 0; k < down.size(); ++k) down[k] = route_down_[k] > 0;
  auto routes = ShortestPathRoutes(v_->scenario->topology, *v_->plan, down, false);
  if (!routes.ok()) {
    v_->log(now, "reroute failed: " + routes.message());
    return;
  }
  size_t missing = 0, changed = 0;
  for (size_t i = 0; i < v_->switches.size(); ++i) {
    missing += v_->plan->switches[i].routes.size() - routes.value()[i].size();
    const uint64_t before = v_->switches[i]->route_updates();
    Status st = v_->switches[i]->ReplaceRoutes(routes.value()[i]);
    if (!st.ok()) v_->log(now, "reroute failed: " + st.message());
    changed += v_->switches[i]->route_updates() != before;
  }
  const auto n_down = std::count(down.begin(), down.end(), true);
  v_->log(now,
          "reroute: routes recomputed with " + std::to_string(n_down) + " link(s) down, " +
              std::to_string(changed) + " switch(es) changed" +
              (missing > 0 ? ", " + std::to_string(missing) + " route(s) withdrawn in all" : ""));
}

void FaultInjector::SetLinkLoss(const std::string& from, const std::string& to,
                                const LossModel& lm) {
  const int k = LinkIndex(from, to);
  if (k < 0) return;  // the fault reader checked the link exists
  const auto& l = v_->plan->links[static_cast<size_t>(k)];
  const FabricPlan::Endpoint& e = EndName(l.a) == from ? l.a : l.b;  // the sending end
  (void)v_->set_loss(e.is_host ? v_->host_node[e.index] : v_->switch_node[e.index], e.port, lm);
}

void DeadlockDetector::EndCycle(Time t) {
  if (cycle_since_ >= 0 && !deadlocks_.empty() && deadlocks_.back().formed == cycle_since_ &&
      deadlocks_.back().cleared < 0) {
    deadlocks_.back().cleared = t;
    v_->log(t, "deadlock cleared: the cycle formed at " + FormatDuration(cycle_since_) +
                   " moves again");
  }
  cycle_since_ = -1;
}

void DeadlockDetector::Detect(Time t) {
  // What each switch port shows, three bytes per port: its paused priorities, the paused ones
  // that hold frames, the PGs it has sent XOFF for. With ranks each rank fills in its own
  // switches and the ranks OR them together, so every rank sees the whole fabric.
  if (port_base_.size() != v_->switches.size() + 1) {
    port_base_.assign(1, 0);
    for (const SwitchNode* s : v_->switches)
      port_base_.push_back(port_base_.back() + s->num_ports());
  }
  // One process (the live runner polls this often): read the switches directly, allocate nothing.
  std::vector<uint8_t> st;
  if (v_->ranks != nullptr) {
    st.assign(3 * port_base_.back(), 0);
    for (size_t i = 0; i < v_->switches.size(); ++i) {
      if (!v_->owns(v_->switch_node[i])) continue;
      SwitchNode& s = *v_->switches[i];
      for (uint16_t p = 0; p < s.num_ports(); ++p) {
        uint8_t* e = &st[3 * (port_base_[i] + p)];
        e[0] = s.paused_mask(p, t);
        for (uint8_t k = 0; k < 8; ++k) {
          if (((e[0] >> k) & 1) && s.queue_bytes(p, k) > 0) e[1] |= static_cast<uint8_t>(1u << k);
        }
        e[2] = s.xoff_mask(p);
      }
    }
    v_->ranks->Or(&st);
  }
  uint8_t local[3];
  auto port_state = [&](size_t sw, uint16_t p) -> const uint8_t* {
    if (!st.empty()) return &st[3 * (port_base_[sw] + p)];
    SwitchNode& s = *v_->switches[sw];
    local[0] = s.paused_mask(p, t);
    local[1] = 0;
    if (local[0] != 0) {
      for (uint8_t k = 0; k < 8; ++k) {
        if (((local[0] >> k) & 1) && s.queue_bytes(p, k) > 0) local[1] |= static_cast<uint8_t>(1u << k);
      }
    }
    local[2] = s.xoff_mask(p);
    return local;
  };
  // Nodes: (switch, port, priority) lossless queues that are paused and hold frames.
  struct Q {
    size_t sw;
    uint16_t port;
    uint8_t prio;
  };
  std::vector<Q> nodes;
  std::map<std::tuple<size_t, uint16_t, uint8_t>, size_t> id;
  any_paused_ = false;
  for (size_t i = 0; i < v_->switches.size(); ++i) {
    for (uint16_t p = 0; p < v_->switches[i]->num_ports(); ++p) {
      const uint8_t* e = port_state(i, p);
      any_paused_ |= e[0] != 0;
      for (uint8_t k = 0; k < 8; ++k) {
        if ((e[1] >> k) & 1) {
          id[{i, p, k}] = nodes.size();
          nodes.push_back(Q{i, p, k});
        }
      }
    }
  }
  if (nodes.size() < 2) {  // no cycle without two paused queues (the common case: allocate nothing)
    EndCycle(t);
    return;
  }
  std::map<uint32_t, size_t> sw_of_node;
  for (size_t i = 0; i < v_->switch_node.size(); ++i) sw_of_node[v_->switch_node[i]] = i;
  std::vector<std::vector<size_t>> adj(nodes.size());
  for (size_t n = 0; n < nodes.size(); ++n) {
    const Q& q = nodes[n];
    uint32_t pn;
    uint16_t pp;
    if (!v_->peer(v_->switch_node[q.sw], q.port, &pn, &pp) || !sw_of_node.count(pn)) continue;
    const size_t t_sw = sw_of_node[pn];
    SwitchNode& ts = *v_->switches[t_sw];
    if (!((port_state(t_sw, pp)[2] >> ts.config().qos.tc_to_pg[q.prio]) & 1)) continue;
    for (uint16_t r = 0; r < ts.num_ports(); ++r) {
      if (r == pp) continue;
      auto it = id.find({t_sw, r, q.prio});
      if (it != id.end()) adj[n].push_back(it->second);
    }
  }
  // Find a cycle (iterative DFS with colours).
  std::vector<int> color(nodes.size(), 0), parent(nodes.size(), -1);
  std::vector<size_t> cycle;
  for (size_t s0 = 0; s0 < nodes.size() && cycle.empty(); ++s0) {
    if (color[s0]) continue;
    std::vector<std::pair<size_t, size_t>> st{{s0, 0}};
    color[s0] = 1;
    while (!st.empty() && cycle.empty()) {
      auto& [u, i] = st.back();
      if (i < adj[u].size()) {
        const size_t v = adj[u][i++];
        if (color[v] == 0) {
          color[v] = 1;
          parent[v] = static_cast<int>(u);
          st.emplace_back(v, 0);
        } else if (color[v] == 1) {
          for (size_t x = u;; x = static_cast<size_t>(parent[x])) {
            cycle.push_back(x);
            if (x == v) break;
          }
        }
      } else {
        color[u] = 2;
        st.pop_back();
      }
    }
  }
  if (cycle.empty()) {
    EndCycle(t);
    return;
  }
  std::vector<std::string> names;
  std::vector<uint64_t> sent_by(1, 0);  // frames the cycle's queues sent, summed over the ranks
  for (auto it = cycle.rbegin(); it != cycle.rend(); ++it) {
    const Q& q = nodes[*it];
    names.push_back(v_->switches[q.sw]->config().ports[q.port].name + " prio " +
                    std::to_string(q.prio));
    if (v_->owns(v_->switch_node[q.sw]))
      sent_by[0] += v_->switches[q.sw]->tx_queue_packets(q.port, q.prio);
  }
  if (v_->ranks != nullptr) v_->ranks->Sum(&sent_by);
  const uint64_t sent = sent_by[0];
  // A deadlock is a cycle that makes no progress: if a queue of it sent a frame since the cycle
  // was first seen (pause flapping, a pause that expired between two passes), start over.
  if (cycle_since_ >= 0 && (names != cycle_now_ || sent != cycle_sent_)) EndCycle(t);
  if (cycle_since_ < 0) {
    cycle_since_ = t;
    cycle_now_ = names;
    cycle_sent_ = sent;
  }
  if (t - cycle_since_ >= persist_ &&
      (deadlocks_.empty() || deadlocks_.back().formed != cycle_since_)) {
    deadlocks_.push_back(Deadlock{cycle_since_, t, -1, cycle_now_});
    std::string c;
    for (const auto& n : cycle_now_) c += (c.empty() ? "" : " -> ") + n;
    v_->log(
        t, "deadlock: cycle of paused queues formed at " + FormatDuration(cycle_since_) + ": " + c);
  }
}

nlohmann::json DeadlockDetector::Stats() const {
  nlohmann::json dl = nlohmann::json::array();
  for (const auto& d : deadlocks_) {
    nlohmann::json e = {{"formed_at_us", d.formed / 1e6},
                        {"detected_at_us", d.detected / 1e6},
                        {"cycle", d.cycle},
                        {"persists", d.cleared < 0}};
    if (d.cleared >= 0) e["cleared_at_us"] = d.cleared / 1e6;
    dl.push_back(e);
  }
  return dl;
}

void TimeSeriesSampler::OnTimer(Time now, uint64_t) {
  // The sample of grid point next_ (the runner may fire late in real time: the line carries the
  // grid time, the values are those at `now`).
  char line[320];
  for (const SwitchNode* sw : v_->switches) {
    for (uint16_t p = 0; p < sw->num_ports(); ++p) {
      int64_t total = 0, lossless = 0;
      for (uint8_t q = 0; q < 8; ++q) {
        const int64_t b = sw->queue_bytes(p, q);
        total += b;
        if (sw->config().qos.lossless(q)) lossless += b;
      }
      int64_t reserved = 0, shared = 0, headroom = 0;  // charged to this port's ingress PGs
      if (const SharedBufferMmu* mmu = sw->mmu()) {
        for (uint8_t pg = 0; pg < 8; ++pg) {
          reserved += mmu->pg_reserved_bytes(p, pg);
          shared += mmu->pg_shared_bytes(p, pg);
          headroom += mmu->pg_headroom_bytes(p, pg);
        }
      }
      uint64_t xoff = 0, rx = 0, ecn = 0;
      for (uint8_t k = 0; k < 8; ++k) {
        xoff += sw->pfc_tx_xoff(p, k);
        rx += sw->rx_pause(p).rx_frames(k);
        ecn += sw->ecn_marked(p, k);
      }
      std::snprintf(
          line, sizeof line,
          "%.3f,%s,%u,%lld,%lld,%u,%u,%llu,%llu,%llu,%llu,%llu,%u,%llu,%lld,%lld,%lld\n",
          next_ / 1e6, sw->name().c_str(), p, static_cast<long long>(total),
          static_cast<long long>(lossless), sw->paused_mask(p, now), sw->xoff_mask(p),
          static_cast<unsigned long long>(sw->tx_bytes(p)), static_cast<unsigned long long>(xoff),
          static_cast<unsigned long long>(rx), static_cast<unsigned long long>(ecn),
          static_cast<unsigned long long>(sw->total_drops()), sw->reorder_queues_in_use(p),
          static_cast<unsigned long long>(sw->reorder_held_frames(p)),
          static_cast<long long>(reserved), static_cast<long long>(shared),
          static_cast<long long>(headroom));
      *out_ << line;
    }
  }
  next_ += interval_;
  // Every grid point in order; in real time a late wake-up catches up on the points it passed.
  env_->ScheduleTimer(std::max(next_, now), 0);
}

void DcqcnSampler::OnTimer(Time now, uint64_t) {
  char line[160];
  for (int h : hosts_) {
    const EmulatedHost* host = v_->hosts[static_cast<size_t>(h)];
    if (host == nullptr) continue;  // a Linux namespace host: its DCQCN is the kernel's
    for (const auto& c : host->rnic().CcSamples(now)) {
      std::snprintf(line, sizeof line, "%.3f,%s,%u,%.6f,%.6f,%.6f\n", next_ / 1e6,
                    host->name().c_str(), c.qpn, c.rate.gbps(), c.target.gbps(), c.alpha);
      *out_ << line;
    }
  }
  next_ += interval_;
  env_->ScheduleTimer(std::max(next_, now), 0);
}

}  // namespace rocefab

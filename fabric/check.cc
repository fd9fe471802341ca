#include "fabric/check.h"

#include <algorithm>
#include <cmath>

#include "common/units.h"
#include "common/wire/pfc_frame.h"
#include "fabric/plan.h"

namespace rocefab {

namespace {

// Findings that differ only in where they apply (one per port with the same bad headroom) as one
// finding naming every place, in first-seen order.
std::vector<CheckFinding> Grouped(const std::vector<CheckFinding>& in) {
  std::vector<CheckFinding> out;
  std::vector<std::vector<std::string>> wheres;
  for (const auto& f : in) {
    size_t i = 0;
    while (i < out.size() &&
           !(out[i].check == f.check && out[i].field == f.field && out[i].message == f.message)) {
      ++i;
    }
    if (i == out.size()) {
      out.push_back(f);
      wheres.emplace_back();
    }
    wheres[i].push_back(f.where);
  }
  for (size_t i = 0; i < out.size(); ++i) {
    const auto& w = wheres[i];
    if (w.size() == 1) continue;
    std::string list;
    for (size_t k = 0; k < w.size(); ++k) list += (k ? ", " : "") + w[k];
    out[i].where = std::to_string(w.size()) + " places: " + list;
  }
  return out;
}

// Ageing times are minutes to hours: whole seconds read better than FormatDuration's units.
std::string Ageing(Time t) {
  return t >= kSec && t % kSec == 0 ? std::to_string(t / kSec) + "s" : FormatDuration(t);
}

// What rocefab's byte-counting MMU needs as headroom on `port`: the bytes the peer can put on the
// wire during one round trip of the cable, plus the frame it is sending, the frame we are
// sending when we decide XOFF (the PFC frame waits for it) and one more in flight.
int64_t HeadroomNeed(const SwitchPortConfig& port) {
  return 2 * static_cast<int64_t>(CableDelay(port.cable_m) / kNs) *
             static_cast<int64_t>(port.rate / kMbps) / 8000 +
         3 * 1518;
}

// The scenario field that set a port's lossless profile.
std::string ProfileField(const SwitchPortConfig& port) {
  return port.buffer_profile.empty() ? "buffer.headroom"
                                     : "buffer.profiles." + port.buffer_profile + ".headroom";
}

// Headroom, buffer arithmetic and ECN-vs-PFC thresholds of one switch, as its MMU will have them.
void CheckSwitchBuffer(const Scenario& s, const SwitchConfig& sc, std::vector<CheckFinding>* out) {
  const QosProfile& q = s.sw.qos;
  const BufferConfig& b = sc.buffer;
  MmuConfig mc;
  mc.buffer_bytes = b.size;
  mc.num_ports = static_cast<uint16_t>(sc.ports.size());
  for (uint8_t tc = 0; tc < 8; ++tc) {
    if (q.lossless(tc)) mc.lossless_pg_mask |= static_cast<uint8_t>(1 << q.tc_to_pg[tc]);
  }
  mc.lossy_pg = b.lossy_pg;
  mc.lossy_queue = b.lossy_queue;
  mc.shared_headroom_pool = b.shared_headroom_pool;
  int64_t largest_need = 0;
  for (const auto& port : sc.ports) {
    const PgProfile pg = ResolveLosslessPg(b, port);
    mc.lossless_pg.push_back(pg);
    const LosslessPgConfig& lc = port.lossless ? *port.lossless : b.lossless;
    const int64_t need = HeadroomNeed(port);
    largest_need = std::max(largest_need, need);
    if (!b.shared || q.lossless_mask == 0 || lc.auto_xoff) continue;
    if (pg.xoff == 0) {
      // Field case "2:1 incast drops at ingress because lossless headroom was 0": the PG sends
      // XOFF when it reaches its limit, and every frame already on the cable is dropped.
      out->push_back({"headroom", port.name, ProfileField(port),
                      "lossless headroom is 0 B: frames the peer sends before the XOFF reaches "
                      "it are dropped at ingress (an incast will drop lossless traffic); need at "
                      "least " +
                          FormatBytes(need) + " for " +
                          std::to_string(static_cast<int>(port.cable_m)) + " m at " +
                          FormatRate(port.rate)});
    } else if (pg.xoff < need) {
      out->push_back({"headroom", port.name, ProfileField(port),
                      FormatBytes(pg.xoff) + " is below the " + FormatBytes(need) +
                          " in flight during one round trip of " +
                          std::to_string(static_cast<int>(port.cable_m)) + " m at " +
                          FormatRate(port.rate) + " plus three 1518-byte frames"});
    }
  }
  if (!b.shared) return;
  if (b.shared_headroom_pool > 0 && q.lossless_mask != 0 && b.shared_headroom_pool < largest_need) {
    out->push_back({"headroom", sc.name, "buffer.shared_headroom_pool",
                    "the shared headroom pool (" + FormatBytes(b.shared_headroom_pool) +
                        ") cannot hold one port's in-flight bytes (" + FormatBytes(largest_need) +
                        "): a single paused port can drop lossless frames"});
  }
  auto mmu = SharedBufferMmu::Create(mc);
  if (!mmu.ok()) {
    out->push_back({"buffer", sc.name, "buffer.size", mmu.message()});
    return;
  }
  // One congested PG alone reaches XOFF when its shared bytes s = alpha (pool - s), i.e. at
  // s = pool alpha / (1 + alpha) (Choudhury-Hahne steady state, reference §3.2).
  const double alpha = std::ldexp(1.0, b.lossless.pg.dynamic_th);
  const double pool = static_cast<double>(mmu.value().shared_pool_bytes());
  int64_t min_xoff_point = static_cast<int64_t>(pool * alpha / (1 + alpha));
  if (b.lossless.pg.static_th > 0) min_xoff_point = b.lossless.pg.static_th;
  for (uint8_t qn = 0; qn < 8; ++qn) {
    const WredProfile& w = sc.wred[qn];
    if (w.enabled && q.lossless(qn) && w.kmax >= min_xoff_point) {
      out->push_back({"ecn-below-pfc", sc.name + " queue " + std::to_string(qn), "ecn.kmax",
                      "Kmax " + FormatBytes(w.kmax) +
                          " is not below the XOFF point of a lone congested lossless PG (" +
                          FormatBytes(min_xoff_point) + "): PFC will act before ECN"});
    }
  }
}

}  // namespace

std::vector<CheckFinding> CheckScenario(const Scenario& s) {
  std::vector<CheckFinding> out;
  const QosProfile& q = s.sw.qos;
  const uint8_t data_tc = q.dscp_to_tc[s.nic.data_dscp & 63];
  bool rdma = false;
  bool lossless_traffic = false;  // traffic the switches treat as lossless
  for (const auto& t : s.traffic) {
    using K = TrafficItem::Kind;
    const K k = t.kind();
    const bool r = k == K::kRdma || k == K::kWorkload || k == K::kPingmesh;
    rdma |= k == K::kRdma || k == K::kWorkload;
    lossless_traffic |=
        (r && q.lossless(data_tc)) || (k == K::kUdp && q.lossless(q.dscp_to_tc[t.udp().dscp & 63]));
  }
  lossless_traffic &= s.sw.pfc.enabled;
  int fabric_links = 0;  // switch-switch links: routed hops between ToRs
  for (const auto& l : s.topology.links) {
    fabric_links += s.topology.SwitchIndex(l.a) >= 0 && s.topology.SwitchIndex(l.b) >= 0;
  }
  if (!q.lossless(data_tc)) {
    out.push_back({"nic-dscp-lossless", "all hosts", "nic.data_dscp",
                   "RoCE data DSCP " + std::to_string(s.nic.data_dscp) + " maps to traffic class " +
                       std::to_string(data_tc) +
                       ", which is not lossless on the switches (qos.lossless)"});
  }
  // The same for a traffic item whose QPs carry a DSCP of their own (rdma "dscp").
  for (size_t i = 0; i < s.traffic.size(); ++i) {
    const TrafficItem& t = s.traffic[i];
    if (t.kind() != TrafficItem::Kind::kRdma || t.perftest().qp.dscp < 0) continue;
    const uint8_t tc = q.dscp_to_tc[static_cast<size_t>(t.perftest().qp.dscp) & 63];
    if (q.lossless(tc)) continue;
    const std::string item = TrafficPath(t, i);
    out.push_back({"nic-dscp-lossless", item + " (" + t.from + "->" + t.to + ")", item + ".dscp",
                   "the QPs' DSCP " + std::to_string(t.perftest().qp.dscp) +
                       " maps to traffic class " + std::to_string(tc) +
                       ", which is not lossless on the switches (qos.lossless)"});
  }
  if (q.lossless_mask != 0 && !s.sw.pfc.enabled) {
    out.push_back({"pfc-generation", "all switches", "pfc.enabled",
                   "lossless priorities are configured but the switches do not generate PFC: "
                   "lossless traffic will be dropped"});
  }
  auto plan = PlanFabric(s);
  if (!plan.ok()) out.push_back({"fabric", "topology", "topology", plan.message()});
  if (plan.ok()) {
    for (const auto& sc : plan.value().switches) CheckSwitchBuffer(s, sc, &out);
  }
  const uint32_t mtu = s.nic.mtu;
  const bool ib_mtu =
      mtu == 256 || mtu == 512 || mtu == 1024 || mtu == 2048 || mtu == 4096 || mtu == 1000;
  if (!ib_mtu) {
    out.push_back({"mtu", "all hosts", "nic.mtu",
                   std::to_string(mtu) + " is not an IB path MTU (256..4096)"});
  }
  if (rdma && mtu + 14 + 20 + 8 + 12 + 16 + 4 > 1518 && mtu != 4096) {
    out.push_back({"mtu", "all hosts", "nic.mtu",
                   "frames of " + std::to_string(mtu) + " B payload exceed 1518 B"});
  }
  if (rdma && mtu == 4096) {
    out.push_back(
        {"mtu", "all switch ports", "nic.mtu",
         "4096-byte RoCE MTU needs jumbo frames (9000-byte Ethernet MTU); fine in the sim runner, "
         "not on af_packet/af_xdp live ports with 2 KiB frames"});
  }
  const uint8_t cnp_tc = q.dscp_to_tc[s.nic.cnp_dscp & 63];
  if (s.nic.dcqcn && (q.lossless(cnp_tc) || !((s.sw.scheduler.strict_mask >> cnp_tc) & 1))) {
    out.push_back({"cnp-priority", "all switches", "nic.cnp_dscp / scheduler.strict",
                   "CNPs (DSCP " + std::to_string(s.nic.cnp_dscp) + ", TC " +
                       std::to_string(cnp_tc) +
                       ") should use a lossy strict-priority queue so congestion feedback is not "
                       "queued behind data"});
  }
  // Guo et al. §3: the VLAN tag (and its PCP) does not survive a routed hop, so PCP-based PFC
  // loses the lossless class at the second switch; DSCP-based PFC was the fix.
  if (q.trust == QosTrust::kPcp && q.lossless_mask != 0 && fabric_links > 0) {
    out.push_back({"pcp-across-routers", "all switches", "qos.trust",
                   "lossless classes are chosen by VLAN PCP, but traffic crosses routed hops (" +
                       std::to_string(fabric_links) +
                       " switch-switch links) where the tag is gone: the next switch treats it as "
                       "lossy and drops it (Guo et al. §3: use \"trust\": \"dscp\")"});
  }
  // Guo et al. §4.3: a NIC whose receive pipeline stalls sends XOFF forever and the pause spreads
  // over the fabric (the NIC pause storm); one of the two watchdogs must stop it.
  if (lossless_traffic && !s.sw.watchdog.enabled && !s.nic.watchdog_enabled) {
    out.push_back({"pause-storm-watchdog", "all switches and hosts",
                   "pfc_watchdog.enabled / nic.rx.watchdog_enabled",
                   "lossless traffic with both the switch PFC watchdog and the NIC watchdog off: "
                   "one stalled NIC's endless XOFF can pause the whole fabric (Guo et al. §4.3 "
                   "NIC pause storm)"});
  }
  // Guo et al. §4.2: when a dead host's MAC entry ages out before its ARP entry, the ToR floods
  // lossless frames for it over the VLAN; flooded lossless frames can close a PFC cycle.
  Time mac_aging = s.sw.mac_aging;
  for (const auto& f : s.faults) {
    if (f.kind == Fault::Kind::kMacAging) mac_aging = std::min(mac_aging, f.aging);
  }
  if (lossless_traffic && s.sw.vlan_on_uplinks && !s.sw.static_neighbors &&
      !s.sw.drop_incomplete_arp && mac_aging < s.sw.arp_aging) {
    out.push_back({"arp-flood-deadlock", "all switches",
                   "switch.mac_aging / drop_lossless_on_incomplete_arp",
                   "MAC ageing (" + Ageing(mac_aging) + ") is shorter than ARP ageing (" +
                       Ageing(s.sw.arp_aging) +
                       ") and the server VLAN floods over the fabric: lossless frames to a host "
                       "whose MAC entry aged out are flooded and can form a PFC deadlock (Guo et "
                       "al. §4.2); set drop_lossless_on_incomplete_arp"});
  }
  if (s.sw.watchdog.enabled) {
    Time fastest_refresh = kTimeNever;
    for (const auto& l : s.topology.links)
      fastest_refresh =
          std::min(fastest_refresh, PauseQuantaTime(s.sw.pfc.pause_quanta, l.rate) / 2);
    if (s.sw.pfc.refresh > 0) fastest_refresh = s.sw.pfc.refresh;
    if (s.sw.watchdog.poll_interval < fastest_refresh) {
      out.push_back({"watchdog-poll", "all switches", "pfc_watchdog.poll_interval",
                     "poll every " + FormatDuration(s.sw.watchdog.poll_interval) +
                         " but XOFF is refreshed only every " + FormatDuration(fastest_refresh) +
                         ": a continuous storm can show no new frame in a poll"});
    }
  }
  return Grouped(out);
}

}  // namespace rocefab

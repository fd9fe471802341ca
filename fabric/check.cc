#include "fabric/check.h"

#include <algorithm>
#include <cmath>

#include "common/wire/pfc_frame.h"
#include "common/units.h"
#include "fabric/plan.h"

namespace rocefab {

std::vector<CheckFinding> CheckScenario(const Scenario& s) {
  std::vector<CheckFinding> out;
  const QosProfile& q = s.sw.qos;
  const uint8_t data_tc = q.dscp_to_tc[s.nic.data_dscp & 63];
  bool rdma = false;
  for (const auto& t : s.traffic) {
    rdma |= t.kind == TrafficItem::Kind::kRdma || t.kind == TrafficItem::Kind::kWorkload;
  }
  if (!q.lossless(data_tc)) {
    out.push_back({"nic-dscp-lossless", "all hosts", "nic.data_dscp",
                   "RoCE data DSCP " + std::to_string(s.nic.data_dscp) + " maps to traffic class " +
                       std::to_string(data_tc) + ", which is not lossless on the switches (qos.lossless)"});
  }
  if (q.lossless_mask != 0 && !s.sw.pfc.enabled) {
    out.push_back({"pfc-generation", "all switches", "pfc.enabled",
                   "lossless priorities are configured but the switches do not generate PFC: "
                   "lossless traffic will be dropped"});
  }
  auto plan = PlanFabric(s);
  if (!plan.ok()) out.push_back({"fabric", "topology", "topology", plan.message()});
  if (plan.ok()) {
    for (const auto& sc : plan.value().switches) {
      for (size_t p = 0; p < sc.ports.size(); ++p) {
        const auto& port = sc.ports[p];
        if (s.sw.buffer.headroom_xoff > 0) {
          // What rocefab's byte-counting MMU needs: the bytes the peer can put on the wire during
          // one round trip of the cable, plus the frame it is sending, the frame we are sending
          // when we decide XOFF (the PFC frame waits for it) and one more in flight.
          const int64_t need = 2 * static_cast<int64_t>(CableDelay(port.cable_m) / kNs) *
                                   static_cast<int64_t>(port.rate / kMbps) / 8000 + 3 * 1518;
          if (s.sw.buffer.headroom_xoff < need) {
            out.push_back({"headroom", port.name, "buffer.headroom",
                           FormatBytes(s.sw.buffer.headroom_xoff) + " is below the " + FormatBytes(need) +
                               " in flight during one round trip of " +
                               std::to_string(static_cast<int>(port.cable_m)) + " m at " + FormatRate(port.rate) +
                               " plus three 1518-byte frames"});
          }
        }
      }
      // Buffer arithmetic as the MMU will do it.
      MmuConfig mc;
      mc.buffer_bytes = s.sw.buffer.size;
      mc.num_ports = static_cast<uint16_t>(sc.ports.size());
      for (uint8_t tc = 0; tc < 8; ++tc) {
        if (q.lossless(tc)) mc.lossless_pg_mask |= static_cast<uint8_t>(1 << q.tc_to_pg[tc]);
      }
      mc.lossy_pg = s.sw.buffer.lossy_pg;
      mc.lossy_queue = s.sw.buffer.lossy_queue;
      int64_t min_xoff_point = INT64_MAX;
      for (const auto& port : sc.ports) {
        PgProfile pg = s.sw.buffer.lossless_pg;
        HeadroomParams hp;
        hp.speed = port.rate;
        hp.cable_m = port.cable_m;
        hp.port_mtu = 1518;
        hp.lossless_mtu = 1518;
        pg.xoff = s.sw.buffer.headroom_xoff > 0 ? s.sw.buffer.headroom_xoff : ComputeHeadroom(hp).xoff;
        mc.lossless_pg.push_back(pg);
      }
      auto mmu = SharedBufferMmu::Create(mc);
      if (!mmu.ok() && s.sw.buffer.shared) {
        out.push_back({"buffer", sc.name, "buffer.size", mmu.message()});
        continue;
      }
      if (mmu.ok() && s.sw.buffer.shared) {
        // One congested PG alone reaches XOFF when its shared bytes s = alpha (pool - s), i.e.
        // at s = pool alpha / (1 + alpha) (Choudhury-Hahne steady state, reference §3.2).
        const double alpha = std::ldexp(1.0, s.sw.buffer.lossless_pg.dynamic_th);
        const double pool = static_cast<double>(mmu.value().shared_pool_bytes());
        min_xoff_point = static_cast<int64_t>(pool * alpha / (1 + alpha));
        if (s.sw.buffer.lossless_pg.static_th > 0) min_xoff_point = s.sw.buffer.lossless_pg.static_th;
        for (uint8_t qn = 0; qn < 8; ++qn) {
          const WredProfile& w = s.sw.wred[qn];
          if (w.enabled && q.lossless(qn) && w.kmax >= min_xoff_point) {
            out.push_back({"ecn-below-pfc", sc.name + " queue " + std::to_string(qn), "ecn.kmax",
                           "Kmax " + FormatBytes(w.kmax) + " is not below the XOFF point of a lone congested "
                               "lossless PG (" + FormatBytes(min_xoff_point) + "): PFC will act before ECN"});
          }
        }
      }
    }
  }
  const uint32_t mtu = s.nic.mtu;
  const bool ib_mtu = mtu == 256 || mtu == 512 || mtu == 1024 || mtu == 2048 || mtu == 4096 || mtu == 1000;
  if (!ib_mtu) {
    out.push_back({"mtu", "all hosts", "nic.mtu", std::to_string(mtu) + " is not an IB path MTU (256..4096)"});
  }
  if (rdma && mtu + 14 + 20 + 8 + 12 + 16 + 4 > 1518 && mtu != 4096) {
    out.push_back({"mtu", "all hosts", "nic.mtu", "frames of " + std::to_string(mtu) + " B payload exceed 1518 B"});
  }
  if (rdma && mtu == 4096) {
    out.push_back({"mtu", "all switch ports", "nic.mtu",
                   "4096-byte RoCE MTU needs jumbo frames (9000-byte Ethernet MTU); fine in the sim runner, "
                   "not on af_packet/af_xdp live ports with 2 KiB frames"});
  }
  const uint8_t cnp_tc = q.dscp_to_tc[s.nic.cnp_dscp & 63];
  if (s.nic.dcqcn && (q.lossless(cnp_tc) || !((s.sw.scheduler.strict_mask >> cnp_tc) & 1))) {
    out.push_back({"cnp-priority", "all switches", "nic.cnp_dscp / scheduler.strict",
                   "CNPs (DSCP " + std::to_string(s.nic.cnp_dscp) + ", TC " + std::to_string(cnp_tc) +
                       ") should use a lossy strict-priority queue so congestion feedback is not queued behind data"});
  }
  if (s.sw.watchdog.enabled) {
    Time fastest_refresh = kTimeNever;
    for (const auto& l : s.topology.links) fastest_refresh = std::min(fastest_refresh, PauseQuantaTime(s.sw.pfc.pause_quanta, l.rate) / 2);
    if (s.sw.pfc.refresh > 0) fastest_refresh = s.sw.pfc.refresh;
    if (s.sw.watchdog.poll_interval < fastest_refresh) {
      out.push_back({"watchdog-poll", "all switches", "pfc_watchdog.poll_interval",
                     "poll every " + FormatDuration(s.sw.watchdog.poll_interval) + " but XOFF is refreshed only every " +
                         FormatDuration(fastest_refresh) + ": a continuous storm can show no new frame in a poll"});
    }
  }
  return out;
}

}  // namespace rocefab

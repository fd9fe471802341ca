// ConWeave in the ToR switches: the wire side of switch/conweave.h.
//
// Wire format (rocefab's; the CW-p4 code uses 7 BTH reserved bits plus a 4-byte header). Both
// fields below are masked out of the RoCEv2 ICRC (IBA A17.8: the UDP checksum and BTH resv8a
// are replaced by ones before the CRC), so tagging keeps the frame length and its ICRC valid:
//   BTH resv8a (BTH byte 4): 1 (valid) | flag:2 (0 DATA, 1 RTT_REQUEST, 2 TAIL) | phase:1 |
//                            epoch mod 4:2 | 0:2
//   UDP checksum:            one timestamp, bits [25:10] of the source ToR's ns clock (1.024 us
//                            units, wraps after 67 ms): tx time for phase 0 and the TAIL
//                            (which is also the tail time), tail time for phase 1.
// The destination ToR writes both back to zero (RoCEv2 senders leave the UDP checksum 0) before
// the frame reaches a host, so NICs never see them.
// Control packets (RTT_REPLY, CLEAR, NOTIFY) are 64-byte UDP/IPv4 frames to port kCwCtrlPort,
// DSCP 48 (CS6: the strict-priority queue 6 in both QoS profiles), from the data flow's
// destination address to its source address, so they route like any reverse traffic and the
// source ToR consumes them before its host would. Payload: kind, epoch mod 4, the data flow's
// UDP source and destination ports, and the path id.
// Paths: in a 2-tier leaf-spine a path is the spine; its id is the low 32 bits of the spine's
// router MAC, which the source ToR writes as next hop and the destination ToR sees as source.

#include <rte_byteorder.h>
#include <rte_ip.h>
#include <rte_udp.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>

#include "common/wire/roce_headers.h"
#include "switch/switch_node.h"

namespace rocefab {
namespace {

constexpr uint16_t kCwCtrlPort = 49791;  // private port of rocefab's ConWeave control packets
constexpr uint8_t kCwCtrlDscp = 48;
constexpr uint8_t kCwValid = 0x80;
enum CwCtrlKind : uint8_t { kCwRttReply = 1, kCwClear = 2, kCwNotify = 3 };
constexpr uint32_t kBthLen = 12;

uint16_t Ts16(Time t) { return static_cast<uint16_t>((t / kNs) >> 10); }
Time WidenTs(uint16_t ts, Time now) {
  const int64_t now_u = (now / kNs) >> 10;
  const int64_t full = now_u - ((now_u - ts) & 0xFFFF);
  return full * 1024 * kNs;
}
uint64_t FlowKey(uint32_t hash, Ipv4 dst) { return static_cast<uint64_t>(dst) << 32 | hash; }

}  // namespace

uint32_t SwitchNode::ConweavePathId(const Mac& mac) {
  uint32_t v;
  std::memcpy(&v, &mac.addr_bytes[2], 4);
  return v;
}

SwitchNode::CwState::CwState(const ConweaveParams& p, uint32_t ports)
    : tx(p), rx(p, ports), held(ports), held_since(ports) {
  for (auto& v : held) v.resize(p.reorder_queues_per_port);
  for (auto& v : held_since) v.assign(p.reorder_queues_per_port, 0);
}

uint32_t SwitchNode::ConweaveSource(Time now, rte_mbuf* m, const ParsedFrame& p,
                                    const RouteGroup& g, uint32_t hash) {
  const uint32_t n = static_cast<uint32_t>(g.members.size());
  const uint32_t bth = p.l4_offset + 8u;
  if (rte_pktmbuf_data_len(m) < bth + kBthLen) return EcmpPick(hash, n);
  if (g.conweave_paths.size() != n) return EcmpPick(hash, n);  // not a group from Create
  const uint32_t* paths = g.conweave_paths.data();             // one per member, set at creation
  if (++cw_->packets % 65536 == 0) {
    cw_->tx.Age(now);
    cw_->rx.Age(now);
  }
  const ConweaveTag tag = cw_->tx.OnData(FlowKey(hash, p.dst_ip), std::span(paths, n),
                                         cfg_.load_balancing.conweave_base_rtt, now, rng_);
  uint32_t pick = 0;
  while (pick + 1 < n && paths[pick] != tag.path) ++pick;
  auto* b = rte_pktmbuf_mtod_offset(m, uint8_t*, bth);
  b[4] = static_cast<uint8_t>(kCwValid | static_cast<uint8_t>(tag.flag) << 5 |
                              (tag.phase & 1) << 4 | (tag.epoch & 3) << 2);
  const Time ts = tag.phase == 1 ? tag.ts_tail : tag.ts_tx;
  const uint16_t ts16 = rte_cpu_to_be_16(Ts16(ts));
  std::memcpy(rte_pktmbuf_mtod_offset(m, uint8_t*, p.l4_offset + 6), &ts16, 2);
  ++cw_->tagged;
  return pick;
}

bool SwitchNode::ConweaveControl(Time now, rte_mbuf* m, const ParsedFrame& p) {
  if (p.proto != kIpProtoUdp || p.dport != kCwCtrlPort) return false;
  const uint32_t off = p.l4_offset + 8u;
  if (rte_pktmbuf_data_len(m) < off + 12) {
    Drop(m, DropReason::kTruncatedL4);
    return true;
  }
  const auto* d = rte_pktmbuf_mtod_offset(m, const uint8_t*, off);
  const uint8_t kind = d[0], wire_epoch = d[1];
  uint16_t sport, dport;
  uint32_t path;
  std::memcpy(&sport, d + 2, 2);
  std::memcpy(&dport, d + 4, 2);
  std::memcpy(&path, d + 8, 4);
  // The data flow ran from this packet's destination to its source.
  const uint32_t h = EcmpHash(p.dst_ip, p.src_ip, kIpProtoUdp, rte_be_to_cpu_16(sport),
                              rte_be_to_cpu_16(dport), cfg_.ecmp_seed);
  const uint64_t key = FlowKey(h, p.src_ip);
  const uint32_t epoch = cw_->tx.WidenEpoch(key, wire_epoch);
  if (kind == kCwRttReply) cw_->tx.OnRttReply(key, epoch, now);
  if (kind == kCwClear) cw_->tx.OnClear(key, epoch, now);
  if (kind == kCwNotify) cw_->tx.OnNotify(path, now);
  ++cw_->ctrl_consumed;
  rte_pktmbuf_free(m);  // consumed by the ConWeave source stage (not a drop)
  return true;
}

bool SwitchNode::ConweaveDestination(Time now, rte_mbuf* m, const ParsedFrame& p, uint16_t svi,
                                     const Mac& prev_hop) {
  if (p.proto != kIpProtoUdp || p.dport != kRoceUdpPort || FromAccessPort(m)) return false;
  const uint32_t bth = p.l4_offset + 8u;
  if (rte_pktmbuf_data_len(m) < bth + kBthLen) return false;
  auto* b = rte_pktmbuf_mtod_offset(m, uint8_t*, bth);
  if ((b[4] & kCwValid) == 0) return false;
  const uint8_t bits = b[4];
  uint16_t ts16;
  auto* csum = rte_pktmbuf_mtod_offset(m, uint8_t*, p.l4_offset + 6);
  std::memcpy(&ts16, csum, 2);
  b[4] = 0;  // scrub: the host sees the frame as its NIC sent it
  std::memset(csum, 0, 2);
  ++cw_->scrubbed;

  // Where the host is. Until ARP and MAC learning resolve it (the first packets of a flow), the
  // state machine still runs (RTT_REPLY, CLEAR) but nothing can be held.
  const uint16_t vlan = cfg_.svis[svi].vlan;
  auto mac = arp_table_.Lookup(now, p.dst_ip);
  std::optional<uint16_t> port;
  if (mac) port = mac_table_.Lookup(now, vlan, *mac);

  ConweaveTag tag;
  tag.flag = static_cast<ConweaveFlag>((bits >> 5) & 3);
  tag.phase = (bits >> 4) & 1;
  tag.path = ConweavePathId(prev_hop);
  const uint32_t h = EcmpHash(p.src_ip, p.dst_ip, kIpProtoUdp, p.sport, p.dport, cfg_.ecmp_seed);
  const uint64_t key = FlowKey(h, p.dst_ip);
  tag.epoch = cw_->rx.WidenEpoch(key, (bits >> 2) & 3);
  const Time ts = WidenTs(rte_be_to_cpu_16(ts16), now);
  if (tag.phase == 1) {
    tag.ts_tail = ts;
  } else {
    tag.ts_tx = ts;
    if (tag.flag == ConweaveFlag::kTail) tag.ts_tail = ts;
  }
  const bool ce = (p.tos & 3) == 3;
  const auto a = cw_->rx.OnData(key, port.value_or(0), tag, ce, now, port.has_value());
  if (a.release_before) ConweaveRelease(now, port.value_or(0), a.release_queue);
  if (a.send_notify) ConweaveSendControl(now, p, kCwNotify, tag.epoch, tag.path);
  if (a.send_rtt_reply) ConweaveSendControl(now, p, kCwRttReply, tag.epoch, tag.path);
  if (a.send_clear) ConweaveSendControl(now, p, kCwClear, tag.epoch, tag.path);
  if (!port) {
    DeliverConnected(now, svi, p.dst_ip, m);  // ARP / flooding path; nothing was held
    return true;
  }
  rte_pktmbuf_mtod(m, rte_ether_hdr*)->dst_addr = *mac;
  if (a.deliver == ConweaveRx::Action::Deliver::kHold) {
    // Held frames occupy the shared buffer like any queued frame (ingress PG and the host port's
    // egress queue, so PFC and limits see them); they reach the scheduler when released.
    if (cfg_.load_balancing.conweave.charge_held_to_buffer && !Admit(now, *port, m)) return true;
    if (cw_->held[*port][a.queue].empty()) cw_->held_since[*port][a.queue] = now;
    cw_->held[*port][a.queue].Push(m);
    cw_->held_bytes += rte_pktmbuf_pkt_len(m);
    cw_->held_bytes_peak = std::max(cw_->held_bytes_peak, cw_->held_bytes);
    ConweaveArmTimer();
    return true;
  }
  Output(now, *port, m);
  if (a.release_after) ConweaveRelease(now, *port, a.release_queue);
  return true;
}

void SwitchNode::ConweaveRelease(Time now, uint32_t port, uint32_t queue) {
  MbufFifo& q = cw_->held[port][queue];
  if (!q.empty()) {
    const Time hold = now - cw_->held_since[port][queue];
    cw_->max_hold = std::max(cw_->max_hold, hold);
    cw_->total_hold += hold;
    ++cw_->holds;
  }
  while (!q.empty()) {
    rte_mbuf* m = q.Pop();
    cw_->held_bytes -= rte_pktmbuf_pkt_len(m);
    if (cfg_.load_balancing.conweave.charge_held_to_buffer) {
      Enqueue(static_cast<uint16_t>(port), m);  // admitted when it was held
    } else if (Admit(now, static_cast<uint16_t>(port), m)) {
      Enqueue(static_cast<uint16_t>(port), m);  // reference model: admitted on release
    }
  }
}

void SwitchNode::ConweaveSendControl(Time now, const ParsedFrame& p, uint8_t kind, uint32_t epoch,
                                     uint32_t path) {
  UdpSpec s;
  s.src_mac = cfg_.router_mac;
  s.src_ip = p.dst_ip;  // reversed: routed back towards the data flow's source ToR
  s.dst_ip = p.src_ip;
  s.sport = kCwCtrlPort;
  s.dport = kCwCtrlPort;
  s.dscp = kCwCtrlDscp;
  s.payload_len = 18;  // 64-byte frame
  const RouteGroup* g = routes_->Lookup(s.dst_ip);
  if (g == nullptr || g->kind != RouteGroup::Kind::kEcmp) return;  // same-ToR flows are not tagged
  const uint32_t h = EcmpHash(s.src_ip, s.dst_ip, kIpProtoUdp, s.sport, s.dport, cfg_.ecmp_seed);
  const NextHop& nh = g->members[EcmpPick(h, static_cast<uint32_t>(g->members.size()))];
  s.dst_mac = nh.mac;
  rte_mbuf* m = BuildUdp(env_->pool(), s);
  if (m == nullptr) {
    ++drops_[static_cast<size_t>(DropReason::kNoBuffer)];
    return;
  }
  ParsedFrame cp;
  ParseFrame(m, &cp);
  auto* d = rte_pktmbuf_mtod_offset(m, uint8_t*, cp.l4_offset + 8);
  d[0] = kind;
  d[1] = static_cast<uint8_t>(epoch & 3);
  const uint16_t sport = rte_cpu_to_be_16(p.sport), dport = rte_cpu_to_be_16(p.dport);
  std::memcpy(d + 2, &sport, 2);
  std::memcpy(d + 4, &dport, 2);
  std::memcpy(d + 8, &path, 4);
  // The UDP checksum covers the payload just written: recompute it.
  auto* ip = rte_pktmbuf_mtod_offset(m, rte_ipv4_hdr*, cp.l3_offset);
  auto* udp = rte_pktmbuf_mtod_offset(m, rte_udp_hdr*, cp.l4_offset);
  udp->dgram_cksum = 0;
  udp->dgram_cksum = rte_ipv4_udptcp_cksum(ip, udp);
  SetOriginated(m);
  PacketMeta* meta = Meta(m);
  meta->tc = cfg_.qos.Classify(kCwCtrlDscp, false, 0);
  meta->queue = cfg_.qos.tc_to_queue[meta->tc];
  ++cw_->ctrl_sent;
  Output(now, nh.port, m);
}

void SwitchNode::ConweaveArmTimer() {
  const Time t = cw_->rx.next_deadline();
  if (t < cw_->timer_at) {
    cw_->timer_at = t;
    Schedule(t, TimerKind::kConweave);
  }
}

void SwitchNode::ConweaveOnTimer(Time now) {
  if (!cw_) return;
  if (now >= cw_->timer_at) cw_->timer_at = kTimeNever;
  for (const auto& r : cw_->rx.DueReleases(now)) ConweaveRelease(now, r.port, r.queue);
  ConweaveArmTimer();
}

}  // namespace rocefab

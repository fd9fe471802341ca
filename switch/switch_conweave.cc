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
// Paths: where the source ToR's first hop fixes the path (a 2-tier leaf-spine, or two ToRs of one
// podset of a 3-tier Clos) a path is that neighbour (the spine, the leaf); its id is the low 32
// bits of its router MAC, which the source ToR writes as next hop and the destination ToR sees
// as source. Between the podsets of a 3-tier Clos the path is (leaf, spine): the source ToR
// picks path index i of members x fanout (RouteGroup::second_hops, from the planner), leaves
// on member i / fanout and writes i + 1 into 9 bits of the frame, which the leaf reads to take
// its uplink (i + 1 - 1) mod n and the destination ToR reads as the path id (source routing,
// as the reference's path ids: conweave-ns3 keeps one out-port per hop in a u32):
//   BTH resv8a bits 1..0:  (i + 1) & 3       (ICRC-masked)
//   BTH resv7 (byte 8, bits 6..0): (i + 1) >> 2   (covered by the ICRC: between the two ToRs the
//                          frame's ICRC does not verify; the destination ToR writes the bits back
//                          to 0, as the sender sent them, so the host's ICRC check passes. The
//                          source ToR does not tag a frame whose resv7 is not 0.)
// The Tofino2 implementation (CW-p4) also rewrites non-masked bits between the ToRs: 7 BTH
// reserved bits and a 4-byte header it strips at the destination.

#include <rte_byteorder.h>
#include <rte_ip.h>
#include <rte_udp.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>

#include "common/wire/roce_headers.h"
#include "switch/path_selection.h"
#include "switch/switch_node.h"

namespace rocefab {
namespace {

constexpr uint16_t kCwCtrlPort = kConweaveControlPort;
constexpr uint8_t kCwCtrlDscp = 48;
constexpr uint8_t kCwValid = 0x80;
enum CwCtrlKind : uint8_t { kCwRttReply = 1, kCwClear = 2, kCwNotify = 3 };
constexpr uint32_t kBthLen = 12;
constexpr uint8_t kResv7 = 0x7F;  // BTH byte 8 without the AckReq bit

// The source route a tagged frame carries (path index + 1, 0 for none): BTH byte 4 bits 1..0
// and byte 8 bits 6..0.
uint32_t RoutedPath(const uint8_t* bth) {
  return static_cast<uint32_t>(bth[8] & kResv7) << 2 | (bth[4] & 3u);
}

uint16_t Ts16(Time t) { return static_cast<uint16_t>((t / kNs) >> 10); }
Time WidenTs(uint16_t ts, Time now) {
  const int64_t now_u = (now / kNs) >> 10;
  const int64_t full = now_u - ((now_u - ts) & 0xFFFF);
  return full * 1024 * kNs;
}
uint64_t FlowKey(uint32_t hash, Ipv4 dst) { return static_cast<uint64_t>(dst) << 32 | hash; }

}  // namespace

ConweavePaths::ConweavePaths(SwitchNode& sw, const ConweaveParams& p, uint32_t ports)
    : PathSelection(sw), tx_(p), rx_(p, ports), held_(ports), held_since_(ports) {
  for (auto& v : held_) v.resize(p.reorder_queues_per_port);
  for (auto& v : held_since_) v.assign(p.reorder_queues_per_port, 0);
}

uint64_t ConweavePaths::reorder_held_frames(uint16_t port) const {
  uint64_t n = 0;
  if (port < held_.size()) {
    for (const auto& q : held_[port]) n += q.size();
  }
  return n;
}

// The destination ToR of a host address, for ConweaveTx's busy marks: its leaf index + 1 (the
// route's, else a search of the leaf subnets), or 0 where no leaf subnet holds it.
uint32_t ConweavePaths::DstTor(const RouteGroup* g, Ipv4 ip) const {
  if (g != nullptr && g->conga_leaf >= 0) return static_cast<uint32_t>(g->conga_leaf) + 1;
  return static_cast<uint32_t>(CongaLeafOf(sw_.cfg_.load_balancing, ip) + 1);
}

// Source ToR: tags RoCE data leaving on an ECMP group and returns the member to use.
uint32_t ConweavePaths::Pick(Time now, rte_mbuf* m, const ParsedFrame& p, const RouteGroup& g,
                             uint32_t hash) {
  const uint32_t n = static_cast<uint32_t>(g.members.size());
  if (p.proto != kIpProtoUdp || p.dport != kRoceUdpPort) return sw_.EcmpMember(m, p, hash, n);
  const uint32_t bth = p.l4_offset + 8u;
  if (rte_pktmbuf_data_len(m) < bth + kBthLen) return sw_.EcmpMember(m, p, hash, n);
  const uint32_t fanout = g.second_hops;
  const auto num_paths = static_cast<uint32_t>(g.conweave_paths.size());
  if (num_paths != n * fanout) return sw_.EcmpMember(m, p, hash, n);  // not a group from Create
  auto* b = rte_pktmbuf_mtod_offset(m, uint8_t*, bth);
  if ((b[8] & kResv7) != 0) {  // the sender set BTH resv7: the scrub could not restore it
    ++untagged_resv7_;
    return sw_.EcmpMember(m, p, hash, n);
  }
  const uint32_t* paths = g.conweave_paths.data();  // set at creation
  if (++packets_ % 65536 == 0) {
    tx_.Age(now);
    rx_.Age(now);
  }
  const ConweaveTag tag =
      tx_.OnData(FlowKey(hash, p.dst_ip), std::span(paths, num_paths),
                 sw_.cfg_.load_balancing.conweave_base_rtt, now, sw_.rng_, DstTor(&g, p.dst_ip));
  uint32_t path = 0;
  while (path + 1 < num_paths && paths[path] != tag.path) ++path;
  const uint32_t route = fanout > 1 ? path + 1 : 0;  // the source route the frame carries
  b[4] = static_cast<uint8_t>(kCwValid | static_cast<uint8_t>(tag.flag) << 5 |
                              (tag.phase & 1) << 4 | (tag.epoch & 3) << 2 | (route & 3));
  b[8] = static_cast<uint8_t>((b[8] & ~kResv7) | (route >> 2));
  const Time ts = tag.phase == 1 ? tag.ts_tail : tag.ts_tx;
  const uint16_t ts16 = rte_cpu_to_be_16(Ts16(ts));
  std::memcpy(rte_pktmbuf_mtod_offset(m, uint8_t*, p.l4_offset + 6), &ts16, 2);
  ++tagged_;
  return path / fanout;
}

// Source ToR: consumes RTT_REPLY/CLEAR/NOTIFY addressed to one of its hosts.
bool ConweavePaths::ConsumeControl(Time now, rte_mbuf* m, const ParsedFrame& p) {
  if (p.proto != kIpProtoUdp || p.dport != kCwCtrlPort) return false;
  const uint32_t off = p.l4_offset + 8u;
  if (rte_pktmbuf_data_len(m) < off + 12) {
    sw_.Drop(m, DropReason::kTruncatedL4);
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
                              rte_be_to_cpu_16(dport), sw_.cfg_.ecmp_seed);
  const uint64_t key = FlowKey(h, p.src_ip);
  const uint32_t epoch = tx_.WidenEpoch(key, wire_epoch);
  if (kind == kCwRttReply) tx_.OnRttReply(key, epoch, now);
  if (kind == kCwClear) tx_.OnClear(key, epoch, now);
  // A NOTIFY comes from the data flow's destination ToR (this packet's source host's).
  if (kind == kCwNotify) tx_.OnNotify(path, now, DstTor(nullptr, p.src_ip));
  ++ctrl_consumed_;
  sw_.Consume(m);  // by the ConWeave source stage (not a drop)
  return true;
}

// Destination ToR: scrubs the tag and forwards, holds or releases.
bool ConweavePaths::AtDestination(Time now, rte_mbuf* m, const ParsedFrame& p, uint16_t svi,
                                  const Mac& prev_hop) {
  if (p.proto != kIpProtoUdp || p.dport != kRoceUdpPort || sw_.FromAccessPort(m)) return false;
  const uint32_t bth = p.l4_offset + 8u;
  if (rte_pktmbuf_data_len(m) < bth + kBthLen) return false;
  auto* b = rte_pktmbuf_mtod_offset(m, uint8_t*, bth);
  if ((b[4] & kCwValid) == 0) return false;
  const uint8_t bits = b[4];
  const uint32_t route = RoutedPath(b);
  uint16_t ts16;
  auto* csum = rte_pktmbuf_mtod_offset(m, uint8_t*, p.l4_offset + 6);
  std::memcpy(&ts16, csum, 2);
  b[4] = 0;  // scrub: the host sees the frame as its NIC sent it
  b[8] &= static_cast<uint8_t>(~kResv7);
  std::memset(csum, 0, 2);
  ++scrubbed_;

  // Where the host is. Until ARP and MAC learning resolve it (the first packets of a flow), the
  // state machine still runs (RTT_REPLY, CLEAR) but nothing can be held.
  const uint16_t vlan = sw_.cfg_.svis[svi].vlan;
  auto mac = sw_.arp_table_.Lookup(now, p.dst_ip);
  std::optional<uint16_t> port;
  if (mac) port = sw_.mac_table_.Lookup(now, vlan, *mac);

  ConweaveTag tag;
  tag.flag = static_cast<ConweaveFlag>((bits >> 5) & 3);
  tag.phase = (bits >> 4) & 1;
  tag.path = route != 0 ? route : ConweavePathId(prev_hop);
  const uint32_t h =
      EcmpHash(p.src_ip, p.dst_ip, kIpProtoUdp, p.sport, p.dport, sw_.cfg_.ecmp_seed);
  const uint64_t key = FlowKey(h, p.dst_ip);
  tag.epoch = (bits >> 2) & 3;  // widened by OnWireData
  const Time ts = WidenTs(rte_be_to_cpu_16(ts16), now);
  if (tag.phase == 1) {
    tag.ts_tail = ts;
  } else {
    tag.ts_tx = ts;
    if (tag.flag == ConweaveFlag::kTail) tag.ts_tail = ts;
  }
  const bool ce = (p.tos & 3) == 3;
  const auto a = rx_.OnWireData(key, port.value_or(0), tag, ce, now, port.has_value(), &tag.epoch);
  if (a.release_before) Release(now, port.value_or(0), a.release_queue);
  if (a.send_notify) SendControl(now, m, p, kCwNotify, tag.epoch, tag.path);
  if (a.send_rtt_reply) SendControl(now, m, p, kCwRttReply, tag.epoch, tag.path);
  if (a.send_clear) SendControl(now, m, p, kCwClear, tag.epoch, tag.path);
  if (!port) {
    sw_.DeliverConnected(now, svi, p.dst_ip, m);  // ARP / flooding path; nothing was held
    return true;
  }
  rte_pktmbuf_mtod(m, rte_ether_hdr*)->dst_addr = *mac;
  if (a.deliver == ConweaveRx::Action::Deliver::kHold) {
    // Held frames occupy the shared buffer like any queued frame (ingress PG and the host port's
    // egress queue, so PFC and limits see them); they reach the scheduler when released.
    if (sw_.cfg_.load_balancing.conweave.charge_held_to_buffer) {
      if (!sw_.Admit(now, *port, m)) return true;
      sw_.ports_[*port].held_bytes[Meta(m)->queue & 7] += Meta(m)->buffer_len;
    }
    if (held_[*port][a.queue].empty()) held_since_[*port][a.queue] = now;
    held_[*port][a.queue].Push(m);
    held_bytes_ += rte_pktmbuf_pkt_len(m);
    held_bytes_peak_ = std::max(held_bytes_peak_, held_bytes_);
    ArmTimer();
    return true;
  }
  sw_.Output(now, *port, m);
  if (a.release_after) Release(now, *port, a.release_queue);
  return true;
}

void ConweavePaths::Release(Time now, uint32_t port, uint32_t queue) {
  MbufFifo& q = held_[port][queue];
  if (!q.empty()) {
    const Time hold = now - held_since_[port][queue];
    max_hold_ = std::max(max_hold_, hold);
    total_hold_ += hold;
    ++holds_;
  }
  while (!q.empty()) {
    rte_mbuf* m = q.Pop();
    held_bytes_ -= rte_pktmbuf_pkt_len(m);
    if (sw_.cfg_.load_balancing.conweave.charge_held_to_buffer) {
      sw_.ports_[port].held_bytes[Meta(m)->queue & 7] -= Meta(m)->buffer_len;
      sw_.Enqueue(static_cast<uint16_t>(port), m);  // admitted when it was held
    } else if (sw_.Admit(now, static_cast<uint16_t>(port), m)) {
      sw_.Enqueue(static_cast<uint16_t>(port), m);  // reference model: admitted on release
    }
  }
}

void ConweavePaths::SendControl(Time now, const rte_mbuf* data, const ParsedFrame& p, uint8_t kind,
                                uint32_t epoch, uint32_t path) {
  UdpSpec s;
  s.src_mac = sw_.cfg_.router_mac;
  s.src_ip = p.dst_ip;  // reversed: routed back towards the data flow's source ToR
  s.dst_ip = p.src_ip;
  s.sport = kCwCtrlPort;
  s.dport = kCwCtrlPort;
  sw_.ecmp_->StampReply(data, p, &s.sport, &s.ip_id);  // the reference's: along the flow's ACKs
  s.dscp = kCwCtrlDscp;
  s.payload_len = 18;  // 64-byte frame
  const RouteGroup* g = sw_.routes_->Lookup(s.dst_ip);
  if (g == nullptr || g->kind != RouteGroup::Kind::kEcmp) return;  // same-ToR flows are not tagged
  rte_mbuf* m = sw_.NoteCreated(BuildUdp(sw_.env_->pool(), s));
  if (m == nullptr) return;
  ParsedFrame cp;
  ParseFrame(m, &cp);
  const uint32_t h =
      EcmpHash(s.src_ip, s.dst_ip, kIpProtoUdp, s.sport, s.dport, sw_.cfg_.ecmp_seed);
  const NextHop& nh =
      g->members[sw_.EcmpMember(m, cp, h, static_cast<uint32_t>(g->members.size()))];
  rte_pktmbuf_mtod(m, rte_ether_hdr*)->dst_addr = nh.mac;
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
  SwitchNode::SetOriginated(m);
  PacketMeta* meta = Meta(m);
  meta->tc = sw_.cfg_.qos.Classify(kCwCtrlDscp, false, 0);
  meta->queue = sw_.cfg_.qos.tc_to_queue[meta->tc];
  ++ctrl_sent_;
  sw_.Output(now, nh.port, m);
}

void ConweavePaths::ArmTimer() {
  const Time t = rx_.next_deadline();
  if (t < timer_at_) {
    timer_at_ = t;
    sw_.Schedule(t, SwitchNode::TimerKind::kConweave);
  }
}

void ConweavePaths::OnTimer(Time now) {
  if (now >= timer_at_) timer_at_ = kTimeNever;
  for (const auto& r : rx_.DueReleases(now)) Release(now, r.port, r.queue);
  ArmTimer();
}

// A leaf or spine: at a second hop of source-routed paths (follow_source_routes, from the
// planner), a tagged data frame that carries a source route takes the member it names;
// anything else goes by ECMP.
uint32_t ConweaveTransitPaths::Pick(Time, rte_mbuf* m, const ParsedFrame& p, const RouteGroup& g,
                                    uint32_t hash) {
  const auto n = static_cast<uint32_t>(g.members.size());
  if (!sw_.config().load_balancing.follow_source_routes) return sw_.EcmpMember(m, p, hash, n);
  if (p.proto != kIpProtoUdp || p.dport != kRoceUdpPort) return sw_.EcmpMember(m, p, hash, n);
  const uint32_t bth = p.l4_offset + 8u;
  if (rte_pktmbuf_data_len(m) < bth + kBthLen) return sw_.EcmpMember(m, p, hash, n);
  const auto* b = rte_pktmbuf_mtod_offset(m, const uint8_t*, bth);
  const uint32_t route = RoutedPath(b);
  if ((b[4] & kCwValid) == 0 || route == 0) return sw_.EcmpMember(m, p, hash, n);
  ++source_routed_;
  return (route - 1) % n;
}

void ConweaveTransitPaths::AddStats(nlohmann::json& j) const {
  j["conweave"] = {{"source_routed", source_routed_}};
}

void ConweavePaths::AddStats(nlohmann::json& j) const {
  const auto& t = tx_.stats();
  const auto& r = rx_.stats();
  const auto h = tx_.RerouteHistogram();
  j["conweave"] = {
      {"tagged", tagged_},
      {"untagged_resv7", untagged_resv7_},
      {"scrubbed", scrubbed_},
      {"control_sent", ctrl_sent_},
      {"control_consumed", ctrl_consumed_},
      {"held_bytes_peak", held_bytes_peak_},
      {"reorder_holds", holds_},
      {"max_hold_us", static_cast<double>(max_hold_) / kUs},
      {"mean_hold_us",
       holds_ ? static_cast<double>(total_hold_) / static_cast<double>(holds_) / kUs : 0.0},
      {"reroutes_per_flow", {{"0", h[0]}, {"1", h[1]}, {"2-3", h[2]}, {"4-7", h[3]}, {"8+", h[4]}}},
      {"tx",
       {{"rtt_requests", t.rtt_requests},
        {"tails", t.tails},
        {"reroutes", t.reroutes},
        {"late_replies", t.late_replies},
        {"timely_replies", t.timely_replies},
        {"clears", t.clears},
        {"stale_replies", t.stale_replies},
        {"notifies", t.notifies},
        {"inactive_switches", t.inactive_switches}}},
      {"rx",
       {{"held", r.held},
        {"rtt_replies", r.rtt_replies},
        {"clears", r.clears},
        {"notifies", r.notifies},
        {"releases_by_tail", r.releases_by_tail},
        {"releases_by_timeout", r.releases_by_timeout},
        {"releases_by_new_epoch", r.releases_by_new_epoch},
        {"fallbacks", r.fallbacks},
        {"out_of_order", r.out_of_order},
        {"prev_epoch", r.prev_epoch},
        {"max_queues_in_use", r.max_queues_in_use}}}};
}

}  // namespace rocefab

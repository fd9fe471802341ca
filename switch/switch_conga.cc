// CONGA in the switches: the wire side of switch/conga.h.
//
// Wire format (rocefab's; CONGA proper uses a VXLAN overlay header). Both fields are masked out
// of the RoCEv2 ICRC (IBA A17.8), so tagging keeps the frame length and its ICRC valid:
//   BTH byte 4 (resv8a):  1 (valid) | CE:3 | FB valid:1 | FB metric:3
//   UDP checksum:         source leaf id:8 | path:4 | FB path:4
// CE is the largest DRE metric of the links crossed so far; FB (feedback) is one entry of the
// sender's FromLeaf table for the destination leaf. Path: the index of the source ToR's path
// (members x second hops of its route, RouteGroup::second_hops); in a 3-tier Clos a leaf takes
// its uplink path mod n (source routing, as the reference simulator's CONGA baseline does). The
// destination ToR writes both fields back to zero before the frame reaches a host. Only RoCE data
// is tagged: ACK/NAK/CNP take the ECMP path, as in the reference, so feedback rides on reverse data
// only.

#include <rte_byteorder.h>

#include <array>
#include <cstring>

#include "common/wire/roce_headers.h"
#include "switch/path_selection.h"
#include "switch/switch_node.h"

namespace rocefab {
namespace {

constexpr uint8_t kCongaValid = 0x80;
constexpr uint8_t kCongaFbValid = 0x08;
constexpr uint32_t kBthLen = 12;

uint8_t* BthByte4(rte_mbuf* m, uint32_t l4_offset) {
  return rte_pktmbuf_mtod_offset(m, uint8_t*, l4_offset + 8u + 4u);
}
uint8_t* UdpChecksum(rte_mbuf* m, uint32_t l4_offset) {
  return rte_pktmbuf_mtod_offset(m, uint8_t*, l4_offset + 6u);
}
bool IsRoceWithBth(const rte_mbuf* m, const ParsedFrame& p) {
  return p.proto == kIpProtoUdp && p.dport == kRoceUdpPort &&
         rte_pktmbuf_data_len(m) >= p.l4_offset + 8u + kBthLen;
}

}  // namespace

CongaPaths::CongaPaths(SwitchNode& sw, const CongaParams& p, uint32_t ports, int leaf_id,
                       uint32_t leaves)
    : PathSelection(sw), dre_(ports, Dre(p.dre_period, p.dre_alpha)) {
  if (leaf_id >= 0) {
    leaf_id_ = static_cast<uint32_t>(leaf_id);
    leaf_.emplace(p, leaves);
  }
}

// Source ToR: picks the uplink for RoCE data leaving on an ECMP group and tags the frame.
uint32_t CongaPaths::Pick(Time now, rte_mbuf* m, const ParsedFrame& p, const RouteGroup& g,
                          uint32_t hash) {
  const uint32_t n = static_cast<uint32_t>(g.members.size());
  if (!leaf_) return Transit(m, p, n, hash);
  const int dst_leaf =
      g.conga_leaf >= 0 ? g.conga_leaf : CongaLeafOf(sw_.cfg_.load_balancing, p.dst_ip);
  // Paths: members x second hops (3-tier Clos between podsets: (leaf, spine) pairs; path i
  // leaves on member i / second_hops, and the leaf takes its uplink i mod n).
  const uint32_t hops = g.second_hops, paths = n * hops;
  if (!IsRoceWithBth(m, p) || dst_leaf < 0 || paths > kCongaMaxPaths)
    return sw_.EcmpMember(m, p, hash, n);
  const CongaParams& cp = sw_.cfg_.load_balancing.conga;
  std::array<uint8_t, kCongaMaxPaths> local{};
  for (uint32_t i = 0; i < paths; ++i) {
    const uint16_t port = g.members[i / hops].port;
    local[i] = dre_[port].Metric(now, sw_.cfg_.ports[port].rate, cp.quant_bits);
  }
  CongaLeaf& leaf = *leaf_;
  const uint64_t flow = static_cast<uint64_t>(p.dst_ip) << 32 | hash;
  const uint32_t path = leaf.ChoosePath(flow, static_cast<uint32_t>(dst_leaf),
                                        std::span(local.data(), paths), now, sw_.rng_);
  const auto fb = leaf.Feedback(static_cast<uint32_t>(dst_leaf), now, sw_.rng_);
  *BthByte4(m, p.l4_offset) = static_cast<uint8_t>(
      kCongaValid | (fb ? kCongaFbValid | (fb->metric & 7) : 0));  // CE starts at 0
  const uint16_t word = static_cast<uint16_t>(leaf_id_ << 8 | path << 4 | (fb ? fb->path & 15 : 0));
  const uint16_t be = rte_cpu_to_be_16(word);
  std::memcpy(UdpChecksum(m, p.l4_offset), &be, 2);
  PacketMeta* meta = Meta(m);
  meta->flags |= kMetaConga;
  meta->l4_offset = static_cast<uint8_t>(p.l4_offset);
  ++tagged_;
  return path / hops;
}

// A leaf or spine: at a second hop of source-routed paths (follow_source_routes, from the
// planner: a leaf of a 3-tier Clos), a tagged frame takes the member its path names; anything
// else, and every other switch, goes by ECMP.
uint32_t CongaPaths::Transit(rte_mbuf* m, const ParsedFrame& p, uint32_t n, uint32_t hash) {
  if (!sw_.config().load_balancing.follow_source_routes) return sw_.EcmpMember(m, p, hash, n);
  if (!IsRoceWithBth(m, p) || sw_.FromAccessPort(m)) return sw_.EcmpMember(m, p, hash, n);
  if ((*BthByte4(m, p.l4_offset) & kCongaValid) == 0) return sw_.EcmpMember(m, p, hash, n);
  uint16_t be;
  std::memcpy(&be, UdpChecksum(m, p.l4_offset), 2);
  ++source_routed_;
  return ((rte_be_to_cpu_16(be) >> 4) & 15u) % n;
}

// Any switch: marks a tagged RoCE frame so its egress raises CE to the link's DRE metric.
void CongaPaths::OnRouted(rte_mbuf* m, const ParsedFrame& p) {
  if (Meta(m)->flags & kMetaConga) return;  // tagged here (Pick)
  if (!IsRoceWithBth(m, p) || p.l4_offset > UINT8_MAX || sw_.FromAccessPort(m)) return;
  if ((*BthByte4(m, p.l4_offset) & kCongaValid) == 0) return;
  PacketMeta* meta = Meta(m);
  meta->flags |= kMetaConga;
  meta->l4_offset = static_cast<uint8_t>(p.l4_offset);
}

// Destination ToR: records CE and the piggybacked feedback, scrubs the tag; never takes the
// frame.
bool CongaPaths::AtDestination(Time now, rte_mbuf* m, const ParsedFrame& p, uint16_t, const Mac&) {
  if (!leaf_ || !IsRoceWithBth(m, p) || sw_.FromAccessPort(m)) return false;
  uint8_t* b4 = BthByte4(m, p.l4_offset);
  if ((*b4 & kCongaValid) == 0) return false;
  uint8_t* ck = UdpChecksum(m, p.l4_offset);
  uint16_t be;
  std::memcpy(&be, ck, 2);
  const uint16_t word = rte_be_to_cpu_16(be);
  const uint32_t src_leaf = word >> 8, path = (word >> 4) & 15, fb_path = word & 15;
  const uint8_t ce = (*b4 >> 4) & 7;
  CongaLeaf& leaf = *leaf_;
  leaf.OnArrival(src_leaf, path, ce, now);
  if (*b4 & kCongaFbValid) leaf.OnFeedback(src_leaf, fb_path, *b4 & 7, now);
  *b4 = 0;
  ck[0] = ck[1] = 0;
  Meta(m)->flags &= static_cast<uint8_t>(~kMetaConga);
  ++scrubbed_;
  return false;
}

// Egress: DRE update for every frame; CE update for marked frames.
void CongaPaths::OnDequeue(Time now, uint16_t port, rte_mbuf* m) {
  Dre& dre = dre_[port];
  const PacketMeta* meta = Meta(m);
  if (meta->flags & kMetaConga) {
    uint8_t* b4 = BthByte4(m, meta->l4_offset);
    const uint8_t metric =
        dre.Metric(now, sw_.cfg_.ports[port].rate, sw_.cfg_.load_balancing.conga.quant_bits);
    if (metric > ((*b4 >> 4) & 7)) {
      *b4 = static_cast<uint8_t>((*b4 & 0x8F) | metric << 4);
      ++ce_raised_;
    }
  }
  dre.Add(now, rte_pktmbuf_pkt_len(m));
}

void CongaPaths::AddStats(nlohmann::json& j) const {
  nlohmann::json c = {{"tagged", tagged_},
                      {"scrubbed", scrubbed_},
                      {"ce_raised", ce_raised_},
                      {"source_routed", source_routed_}};
  if (leaf_) {
    const auto& st = leaf_->stats();
    c["leaf_id"] = leaf_id_;
    c["flowlets"] = st.flowlets;
    c["path_changes"] = st.path_changes;
    c["feedback_sent"] = st.feedback_sent;
    c["feedback_received"] = st.feedback_received;
    c["arrivals"] = st.arrivals;
    c["flows"] = leaf_->flows();
  }
  j["conga"] = c;
}

}  // namespace rocefab

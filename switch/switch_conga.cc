// CONGA in the switches: the wire side of switch/conga.h.
//
// Wire format (rocefab's; CONGA proper uses a VXLAN overlay header). Both fields are masked out
// of the RoCEv2 ICRC (IBA A17.8), so tagging keeps the frame length and its ICRC valid:
//   BTH byte 4 (resv8a):  1 (valid) | CE:3 | FB valid:1 | FB metric:3
//   UDP checksum:         source leaf id:8 | path:4 | FB path:4
// CE is the largest DRE metric of the links crossed so far; FB (feedback) is one entry of the
// sender's FromLeaf table for the destination leaf. The destination ToR writes both fields back
// to zero before the frame reaches a host. Only RoCE data is tagged: ACK/NAK/CNP take the ECMP
// path, as in the reference, so feedback rides on reverse data only.

#include <rte_byteorder.h>

#include <array>
#include <cstring>

#include "common/wire/roce_headers.h"
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

int SwitchNode::CongaLeafOf(Ipv4 ip) const {
  const auto& subnets = cfg_.load_balancing.leaf_subnets;
  for (size_t i = 0; i < subnets.size(); ++i) {
    const auto [net, len] = subnets[i];
    const Ipv4 mask = len == 0 ? 0 : static_cast<Ipv4>(~((1ull << (32 - len)) - 1));
    if ((ip & mask) == net) return static_cast<int>(i);
  }
  return -1;
}

uint32_t SwitchNode::CongaSource(Time now, rte_mbuf* m, const ParsedFrame& p, const RouteGroup& g,
                                 uint32_t hash) {
  const uint32_t n = static_cast<uint32_t>(g.members.size());
  const int dst_leaf = g.conga_leaf >= 0 ? g.conga_leaf : CongaLeafOf(p.dst_ip);
  if (!IsRoceWithBth(m, p) || dst_leaf < 0 || n > kCongaMaxPaths) return EcmpPick(hash, n);
  const CongaParams& cp = cfg_.load_balancing.conga;
  std::array<uint8_t, kCongaMaxPaths> local{};
  for (uint32_t i = 0; i < n; ++i) {
    const uint16_t port = g.members[i].port;
    local[i] = conga_->dre[port].Metric(now, cfg_.ports[port].rate, cp.quant_bits);
  }
  CongaLeaf& leaf = *conga_->leaf;
  const uint64_t flow = static_cast<uint64_t>(p.dst_ip) << 32 | hash;
  const uint32_t path =
      leaf.ChoosePath(flow, static_cast<uint32_t>(dst_leaf), std::span(local.data(), n), now, rng_);
  const auto fb = leaf.Feedback(static_cast<uint32_t>(dst_leaf), now, rng_);
  *BthByte4(m, p.l4_offset) = static_cast<uint8_t>(
      kCongaValid | (fb ? kCongaFbValid | (fb->metric & 7) : 0));  // CE starts at 0
  const uint16_t word =
      static_cast<uint16_t>(conga_->leaf_id << 8 | path << 4 | (fb ? fb->path & 15 : 0));
  const uint16_t be = rte_cpu_to_be_16(word);
  std::memcpy(UdpChecksum(m, p.l4_offset), &be, 2);
  PacketMeta* meta = Meta(m);
  meta->flags |= kMetaConga;
  meta->l4_offset = static_cast<uint8_t>(p.l4_offset);
  ++conga_->tagged;
  return path;
}

void SwitchNode::CongaTransit(rte_mbuf* m, const ParsedFrame& p) {
  if (!IsRoceWithBth(m, p) || p.l4_offset > UINT8_MAX || FromAccessPort(m)) return;
  if ((*BthByte4(m, p.l4_offset) & kCongaValid) == 0) return;
  PacketMeta* meta = Meta(m);
  meta->flags |= kMetaConga;
  meta->l4_offset = static_cast<uint8_t>(p.l4_offset);
}

void SwitchNode::CongaDestination(Time now, rte_mbuf* m, const ParsedFrame& p) {
  if (!IsRoceWithBth(m, p) || FromAccessPort(m)) return;
  uint8_t* b4 = BthByte4(m, p.l4_offset);
  if ((*b4 & kCongaValid) == 0) return;
  uint8_t* ck = UdpChecksum(m, p.l4_offset);
  uint16_t be;
  std::memcpy(&be, ck, 2);
  const uint16_t word = rte_be_to_cpu_16(be);
  const uint32_t src_leaf = word >> 8, path = (word >> 4) & 15, fb_path = word & 15;
  const uint8_t ce = (*b4 >> 4) & 7;
  CongaLeaf& leaf = *conga_->leaf;
  leaf.OnArrival(src_leaf, path, ce, now);
  if (*b4 & kCongaFbValid) leaf.OnFeedback(src_leaf, fb_path, *b4 & 7, now);
  *b4 = 0;
  ck[0] = ck[1] = 0;
  Meta(m)->flags &= static_cast<uint8_t>(~kMetaConga);
  ++conga_->scrubbed;
}

void SwitchNode::CongaOnDequeue(Time now, uint16_t port, rte_mbuf* m) {
  Dre& dre = conga_->dre[port];
  const PacketMeta* meta = Meta(m);
  if (meta->flags & kMetaConga) {
    uint8_t* b4 = BthByte4(m, meta->l4_offset);
    const uint8_t metric =
        dre.Metric(now, cfg_.ports[port].rate, cfg_.load_balancing.conga.quant_bits);
    if (metric > ((*b4 >> 4) & 7)) {
      *b4 = static_cast<uint8_t>((*b4 & 0x8F) | metric << 4);
      ++conga_->ce_raised;
    }
  }
  dre.Add(now, rte_pktmbuf_pkt_len(m));
}

}  // namespace rocefab

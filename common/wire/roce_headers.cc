#include "common/wire/roce_headers.h"

#include <isa-l/crc.h>
#include <rte_byteorder.h>
#include <rte_ip.h>
#include <rte_udp.h>

#include <cstring>

#include "common/eal.h"
#include "common/packet.h"

namespace rocefab {

const char* RoceOpName(RoceOp op) {
  switch (op) {
    case RoceOp::kSendFirst:
      return "SEND_FIRST";
    case RoceOp::kSendMiddle:
      return "SEND_MIDDLE";
    case RoceOp::kSendLast:
      return "SEND_LAST";
    case RoceOp::kSendOnly:
      return "SEND_ONLY";
    case RoceOp::kWriteFirst:
      return "RDMA_WRITE_FIRST";
    case RoceOp::kWriteMiddle:
      return "RDMA_WRITE_MIDDLE";
    case RoceOp::kWriteLast:
      return "RDMA_WRITE_LAST";
    case RoceOp::kWriteOnly:
      return "RDMA_WRITE_ONLY";
    case RoceOp::kReadRequest:
      return "RDMA_READ_REQUEST";
    case RoceOp::kReadResponseFirst:
      return "RDMA_READ_RESPONSE_FIRST";
    case RoceOp::kReadResponseMiddle:
      return "RDMA_READ_RESPONSE_MIDDLE";
    case RoceOp::kReadResponseLast:
      return "RDMA_READ_RESPONSE_LAST";
    case RoceOp::kReadResponseOnly:
      return "RDMA_READ_RESPONSE_ONLY";
    case RoceOp::kAck:
      return "ACKNOWLEDGE";
    case RoceOp::kAtomicAck:
      return "ATOMIC_ACKNOWLEDGE";
    case RoceOp::kCnp:
      return "CNP";
  }
  return "?";
}

namespace {

// ComputeIcrc's work; with `builder_resv7` the BTH resv7 bits (byte 8, bits 6..0) count as 0,
// the value BuildRoce writes there, whatever the frame holds now.
uint32_t Icrc(const uint8_t* frame, uint32_t frame_len, uint16_t l3_offset, bool builder_resv7) {
  // The IEEE 802.3 CRC-32 (init and final XOR included, equal to zlib's crc32) of the masked
  // pseudo-packet, in two chained passes of ISA-L's carry-less-multiplication CRC
  // (crc32_gzip_refl, folding 4 x 128 bits per step): the 48 bytes that carry masked fields
  // (8 bytes of 0xFF, IPv4, UDP, BTH) from a masked copy on the stack, then the rest of the frame
  // where it lies, without copying it. DPDK's rte_net_crc (one 128-bit lane, ~3 B/cycle) plus a
  // copy of the whole frame cost 2-3x more per KB (bench_rnic BM_Icrc).
  constexpr uint32_t kMasked = 20 + 8 + 12;  // IPv4 (no options), UDP, BTH
  if (frame_len < static_cast<uint32_t>(l3_offset) + kMasked + 4) {
    return 0;  // malformed: callers check lengths first
  }
  uint8_t hdr[8 + kMasked];
  std::memset(hdr, 0xFF, 8);
  uint8_t* ip = hdr + 8;
  std::memcpy(ip, frame + l3_offset, kMasked);
  ip[1] = 0xFF;                           // TOS (DSCP + ECN)
  ip[8] = 0xFF;                           // TTL
  ip[10] = ip[11] = 0xFF;                 // IPv4 header checksum
  ip[26] = ip[27] = 0xFF;                 // UDP checksum
  ip[28 + 4] = 0xFF;                      // BTH byte 4: FECN, BECN, resv6a
  if (builder_resv7) ip[28 + 8] &= 0x80;  // BTH byte 8: AckReq kept, resv7 as built
  const uint32_t crc = crc32_gzip_refl(0, hdr, sizeof hdr);
  const uint32_t rest = frame_len - 4 - l3_offset - kMasked;
  return crc32_gzip_refl(crc, frame + l3_offset + kMasked, rest);
}

// Computes the ICRC of the frame ending at `end` and writes it into its last 4 bytes,
// least-significant byte first (rxe_icrc.c).
void WriteIcrc(uint8_t* frame, uint32_t end, uint16_t l3_offset, bool builder_resv7 = false) {
  const uint32_t le = rte_cpu_to_le_32(Icrc(frame, end, l3_offset, builder_resv7));
  std::memcpy(frame + end - 4, &le, 4);
}

}  // namespace

bool FinalizeIcrc(rte_mbuf* m) {
  PacketMeta* meta = Meta(m);
  if (!(meta->flags & kMetaIcrcDeferred)) return true;
  ParsedFrame p;
  if (ParseFrame(m, &p) != ParseError::kOk || p.ether_type != kEtherTypeIpv4 ||
      p.proto != kIpProtoUdp || p.dport != kRoceUdpPort) {
    return false;
  }
  uint8_t* d = rte_pktmbuf_mtod(m, uint8_t*);
  const auto* ip = reinterpret_cast<const rte_ipv4_hdr*>(d + p.l3_offset);
  const uint32_t end = p.l3_offset + rte_be_to_cpu_16(ip->total_length);
  if (end > rte_pktmbuf_data_len(m) || end < p.l4_offset + 8u + 12u + 4u) return false;
  // Over the bytes as BuildRoce wrote them (resv7 0): on its way a ConWeave source ToR may have
  // put a source route there (switch/switch_conweave.cc; it tags only frames whose resv7 is 0),
  // which the destination ToR writes back to 0 before the host checks the ICRC.
  WriteIcrc(d, end, p.l3_offset, /*builder_resv7=*/true);
  meta->flags &= static_cast<uint8_t>(~kMetaIcrcDeferred);
  return true;
}

uint16_t RoceSourcePort(uint32_t qpn) {
  // include/linux/hash.h hash_32: (val * GOLDEN_RATIO_32) >> (32 - bits).
  const uint32_t h = (qpn * 0x61C88647u) >> (32 - 14);
  return static_cast<uint16_t>(0xC000 + (h & 0x3FFF));
}

uint32_t ComputeIcrc(const uint8_t* frame, uint32_t frame_len, uint16_t l3_offset) {
  return Icrc(frame, frame_len, l3_offset, /*builder_resv7=*/false);
}

rte_mbuf* BuildRoce(rte_mempool* pool, const RoceFrameSpec& s) {
  const uint32_t pad = (4 - (s.payload_len & 3)) & 3;
  uint32_t ext = 0;
  if (s.op == RoceOp::kCnp) {
    ext = 16;
  } else {
    if (OpHasReth(s.op)) ext += 16;
    if (OpHasAeth(s.op)) ext += 4;
  }
  const uint32_t udp_len = 8 + 12 + ext + s.payload_len + pad + 4;
  const uint32_t len = 14 + 20 + udp_len;
  rte_mbuf* m = AllocMbuf(pool);
  if (m == nullptr) return nullptr;
  uint8_t* d = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, static_cast<uint16_t>(len)));
  if (d == nullptr || len > UINT16_MAX) {
    rte_pktmbuf_free(m);
    return nullptr;
  }
  auto* eth = reinterpret_cast<rte_ether_hdr*>(d);
  eth->dst_addr = s.dst_mac;
  eth->src_addr = s.src_mac;
  eth->ether_type = rte_cpu_to_be_16(kEtherTypeIpv4);
  auto* ip = reinterpret_cast<rte_ipv4_hdr*>(d + 14);
  ip->version_ihl = RTE_IPV4_VHL_DEF;
  ip->type_of_service = static_cast<uint8_t>(s.dscp << 2 | (s.ecn & 3));
  ip->total_length = rte_cpu_to_be_16(static_cast<uint16_t>(20 + udp_len));
  ip->packet_id = rte_cpu_to_be_16(s.ip_id);
  ip->fragment_offset = rte_cpu_to_be_16(RTE_IPV4_HDR_DF_FLAG);
  ip->time_to_live = 64;
  ip->next_proto_id = kIpProtoUdp;
  ip->src_addr = rte_cpu_to_be_32(s.src_ip);
  ip->dst_addr = rte_cpu_to_be_32(s.dst_ip);
  ip->hdr_checksum = 0;
  ip->hdr_checksum = rte_ipv4_cksum(ip);
  auto* udp = reinterpret_cast<rte_udp_hdr*>(d + 34);
  udp->src_port = rte_cpu_to_be_16(s.sport);
  udp->dst_port = rte_cpu_to_be_16(kRoceUdpPort);
  udp->dgram_len = rte_cpu_to_be_16(static_cast<uint16_t>(udp_len));
  udp->dgram_cksum = 0;  // RoCEv2 senders leave the UDP checksum zero
  uint8_t* b = d + 42;
  b[0] = static_cast<uint8_t>(s.op);
  b[1] = static_cast<uint8_t>((s.solicited ? 0x80 : 0) | pad << 4);  // M = 0, TVer = 0
  b[2] = 0xFF;                                                       // P_Key 0xFFFF
  b[3] = 0xFF;
  b[4] = s.becn ? 0x40 : 0;
  b[5] = (s.dest_qp >> 16) & 0xFF;
  b[6] = (s.dest_qp >> 8) & 0xFF;
  b[7] = s.dest_qp & 0xFF;
  b[8] = s.ack_req ? 0x80 : 0;
  b[9] = (s.psn >> 16) & 0xFF;
  b[10] = (s.psn >> 8) & 0xFF;
  b[11] = s.psn & 0xFF;
  uint8_t* x = b + 12;
  if (s.op == RoceOp::kCnp) {
    std::memset(x, 0, 16);
    x += 16;
  } else {
    if (OpHasReth(s.op)) {
      const uint64_t va = rte_cpu_to_be_64(s.va);
      std::memcpy(x, &va, 8);
      const uint32_t rkey = rte_cpu_to_be_32(s.rkey), dlen = rte_cpu_to_be_32(s.dma_len);
      std::memcpy(x + 8, &rkey, 4);
      std::memcpy(x + 12, &dlen, 4);
      x += 16;
    }
    if (OpHasAeth(s.op)) {
      x[0] = s.syndrome;
      x[1] = (s.msn >> 16) & 0xFF;
      x[2] = (s.msn >> 8) & 0xFF;
      x[3] = s.msn & 0xFF;
      x += 4;
    }
  }
  if (s.payload != nullptr) {
    std::memcpy(x, s.payload, s.payload_len);
  } else {
    std::memset(x, s.fill, s.payload_len);
  }
  std::memset(x + s.payload_len, 0, pad);
  uint8_t* ic = d + len - 4;
  if (s.defer_icrc) {
    std::memset(ic, 0, 4);
    Meta(m)->flags = kMetaIcrcDeferred;
    return m;
  }
  Meta(m)->flags = 0;
  WriteIcrc(d, len, 14);
  return m;
}

RoceParseError ParseRoce(const rte_mbuf* m, const ParsedFrame& p, RoceView* v) {
  const uint8_t* d = rte_pktmbuf_mtod(m, const uint8_t*);
  const auto* ip = reinterpret_cast<const rte_ipv4_hdr*>(d + p.l3_offset);
  const uint32_t end = p.l3_offset + rte_be_to_cpu_16(ip->total_length);
  const uint32_t bth = p.l4_offset + 8;
  if (end < bth + 12 + 4) return RoceParseError::kTruncated;
  const uint8_t* b = d + bth;
  v->op = static_cast<RoceOp>(b[0]);
  v->pad = (b[1] >> 4) & 3;
  v->fecn = (b[4] & 0x80) != 0;
  v->becn = (b[4] & 0x40) != 0;
  v->dest_qp = static_cast<uint32_t>(b[5]) << 16 | b[6] << 8 | b[7];
  v->ack_req = (b[8] & 0x80) != 0;
  v->psn = static_cast<uint32_t>(b[9]) << 16 | b[10] << 8 | b[11];
  v->src_ip = p.src_ip;
  v->dst_ip = p.dst_ip;
  v->sport = p.sport;
  v->tos = p.tos;
  uint32_t x = bth + 12;
  const uint8_t op = b[0];
  const bool known = op <= 0x11 && op != 0x03 && op != 0x05 && op != 0x09 && op != 0x0B;
  if (!known && v->op != RoceOp::kCnp) return RoceParseError::kBadOpcode;
  if (v->op == RoceOp::kCnp) {
    x += 16;
  } else {
    if (OpHasReth(v->op)) {
      if (end < x + 16 + 4) return RoceParseError::kTruncated;
      uint64_t va;
      uint32_t rkey, dlen;
      std::memcpy(&va, d + x, 8);
      std::memcpy(&rkey, d + x + 8, 4);
      std::memcpy(&dlen, d + x + 12, 4);
      v->va = rte_be_to_cpu_64(va);
      v->rkey = rte_be_to_cpu_32(rkey);
      v->dma_len = rte_be_to_cpu_32(dlen);
      x += 16;
    }
    if (OpHasAeth(v->op)) {
      if (end < x + 4 + 4) return RoceParseError::kTruncated;
      v->syndrome = d[x];
      v->msn = static_cast<uint32_t>(d[x + 1]) << 16 | d[x + 2] << 8 | d[x + 3];
      x += 4;
    }
  }
  if (end < x + v->pad + 4) return RoceParseError::kTruncated;
  v->payload_len = end - x - v->pad - 4;
  v->payload_offset = x;
  if (Meta(m)->flags & kMetaIcrcDeferred) return RoceParseError::kOk;
  const uint32_t icrc = ComputeIcrc(d, end, p.l3_offset);
  const uint8_t* ic = d + end - 4;
  const uint32_t wire = ic[0] | ic[1] << 8 | ic[2] << 16 | static_cast<uint32_t>(ic[3]) << 24;
  if (icrc != wire) return RoceParseError::kBadIcrc;
  return RoceParseError::kOk;
}

}  // namespace rocefab

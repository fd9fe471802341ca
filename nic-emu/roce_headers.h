#pragma once
/// @file roce_headers.h
/// RoCEv2 on the wire (InfiniBand Architecture Spec. vol. 1 rel. 1.4 ch. 9, Annex A17 "RoCEv2"):
/// Ethernet / IPv4 (DF, DSCP of the QP's traffic class, ECT(0)) / UDP (dst 4791, per-QP source port
/// in 0xC000-0xFFFF, checksum 0) / BTH (12) / [RETH (16)] / [AETH (4)] / payload / pad to 4 bytes /
/// ICRC (4). CNP is BTH opcode 0x81 with BECN set, followed by 16 zero bytes.
///
/// ICRC exactly as Linux rdma_rxe (drivers/infiniband/sw/rxe/rxe_icrc.c): CRC-32 (IEEE 802.3,
/// zlib crc32) over 8 bytes of 0xFF, the IPv4 header with TOS, TTL and checksum set to all ones,
/// the UDP header with its checksum set to all ones, the BTH with byte 4 (FECN, BECN, resv6a) set
/// to 0xFF, then the rest of the transport headers, payload and pad; written least-significant
/// byte first.

#include <rte_mbuf.h>

#include <cstdint>

#include "common/headers.h"

namespace rocefab {

inline constexpr uint16_t kRoceUdpPort = 4791;

/// BTH opcodes of the RC transport (include/rdma/ib_pack.h) and the RoCEv2 CNP.
enum class RoceOp : uint8_t {
  kSendFirst = 0x00,
  kSendMiddle = 0x01,
  kSendLast = 0x02,
  kSendOnly = 0x04,
  kWriteFirst = 0x06,
  kWriteMiddle = 0x07,
  kWriteLast = 0x08,
  kWriteOnly = 0x0A,
  kReadRequest = 0x0C,
  kReadResponseFirst = 0x0D,
  kReadResponseMiddle = 0x0E,
  kReadResponseLast = 0x0F,
  kReadResponseOnly = 0x10,
  kAck = 0x11,
  kCnp = 0x81,
};

/// AETH syndromes (rxe_hdr.h): ACK with unlimited credits, NAK PSN sequence error.
inline constexpr uint8_t kAethAck = 0x1F;
inline constexpr uint8_t kAethNakPsnSeqErr = 0x60;
inline constexpr uint8_t kAethNakMask = 0xE0;

inline bool OpHasReth(RoceOp op) {
  return op == RoceOp::kWriteFirst || op == RoceOp::kWriteOnly || op == RoceOp::kReadRequest;
}
inline bool OpHasAeth(RoceOp op) {
  return op == RoceOp::kAck || op == RoceOp::kReadResponseFirst || op == RoceOp::kReadResponseLast ||
         op == RoceOp::kReadResponseOnly;
}
inline bool OpIsFirstOrOnly(RoceOp op) {
  return op == RoceOp::kSendFirst || op == RoceOp::kSendOnly || op == RoceOp::kWriteFirst ||
         op == RoceOp::kWriteOnly;
}
inline bool OpIsLastOrOnly(RoceOp op) {
  return op == RoceOp::kSendLast || op == RoceOp::kSendOnly || op == RoceOp::kWriteLast ||
         op == RoceOp::kWriteOnly;
}
const char* RoceOpName(RoceOp op);

/// Everything needed to build one RoCEv2 frame.
struct RoceFrameSpec {
  Mac src_mac, dst_mac;
  Ipv4 src_ip = 0, dst_ip = 0;
  uint16_t sport = 0xC000;
  uint8_t dscp = 26;
  uint8_t ecn = 2;  ///< ECT(0) for data; 0 for CNP/ACK by convention
  RoceOp op = RoceOp::kSendOnly;
  bool solicited = false, ack_req = false, becn = false;
  uint32_t dest_qp = 0;  ///< 24 bits
  uint32_t psn = 0;      ///< 24 bits
  // RETH
  uint64_t va = 0;
  uint32_t rkey = 0, dma_len = 0;
  // AETH
  uint8_t syndrome = kAethAck;
  uint32_t msn = 0;      ///< 24 bits
  uint32_t payload_len = 0;  ///< payload bytes (copied from `payload`, else filled with `fill`)
  const uint8_t* payload = nullptr;
  uint8_t fill = 0;
  uint16_t ip_id = 0;        ///< IPv4 identification
};

/// Builds the frame with a correct ICRC. nullptr if the pool is empty or it would not fit.
rte_mbuf* BuildRoce(rte_mempool* pool, const RoceFrameSpec& spec);

/// Parsed RoCEv2 frame (after ParseFrame found UDP dport 4791).
struct RoceView {
  RoceOp op = RoceOp::kAck;
  bool ack_req = false, becn = false, fecn = false;
  uint8_t pad = 0;
  uint32_t dest_qp = 0, psn = 0;
  uint64_t va = 0;
  uint32_t rkey = 0, dma_len = 0;
  uint8_t syndrome = 0;
  uint32_t msn = 0;
  uint32_t payload_len = 0;
  uint16_t sport = 0;
  Ipv4 src_ip = 0, dst_ip = 0;
  uint8_t tos = 0;
};

enum class RoceParseError : uint8_t { kOk, kTruncated, kBadIcrc, kBadOpcode };
/// Parses BTH and extension headers and checks the ICRC. `p` comes from ParseFrame.
RoceParseError ParseRoce(const rte_mbuf* m, const ParsedFrame& p, RoceView* out);

/// ICRC of the frame (IPv4 at `l3_offset`), over everything up to the last 4 bytes of the UDP
/// payload. Returned as the value whose little-endian bytes go on the wire.
uint32_t ComputeIcrc(const uint8_t* frame, uint32_t frame_len, uint16_t l3_offset);

/// RoCEv2 UDP source port of a QP, as rdma_rxe derives it: 0xC000 + (hash_32(qpn, 14) & 0x3FFF).
uint16_t RoceSourcePort(uint32_t qpn);

}  // namespace rocefab

#pragma once
/// @file frame_class.h
/// What kind of frame this is, for fault filters ("lose the 3rd CNP", "lose IP-ID 77"): read
/// from the headers only (no checksum or ICRC check, no copy). RoCEv2 opcodes: IBTA vol. 1
/// 9.2 table 38 (BTH opcode byte) and Annex A17 (CNP 0x81); ACK vs NAK from the AETH syndrome
/// (9.7.5.1: bits 7..5 of 011 = NAK).

#include <rte_mbuf.h>

#include <cstdint>
#include <string>

#include "common/result.h"

namespace rocefab {

enum class FrameClass : uint8_t {
  kAny,           ///< every frame
  kRoceData,      ///< SEND / RDMA WRITE packets (first, middle, last, only)
  kReadRequest,   ///< RDMA READ request
  kReadResponse,  ///< RDMA READ response packets
  kAck,           ///< RoCEv2 ACK (AETH syndrome ACK)
  kNak,           ///< RoCEv2 NAK (AETH syndrome 011xxxxx)
  kCnp,           ///< RoCEv2 CNP (opcode 0x81)
  kPfc,           ///< MAC control (EtherType 0x8808): PFC or PAUSE
  kArp,           ///< EtherType 0x0806
  kOtherIp,       ///< IPv4 that is not RoCEv2 (ICMP, TCP, other UDP)
};

/// "any", "data", "read_request", "read_response", "ack", "nak", "cnp", "pfc", "arp", "ip".
const char* FrameClassName(FrameClass c);
/// The inverse; the error lists the names.
Result<FrameClass> FrameClassFromName(const std::string& name);

/// The class of a frame (kOtherIp for IPv4 that is not UDP 4791, kAny for anything unparsable:
/// only a filter of kAny matches it).
FrameClass ClassifyFrame(const rte_mbuf* m);

/// A frame filter: its class and, optionally, its IPv4 Identification field.
struct FrameFilter {
  FrameClass cls = FrameClass::kAny;
  int ip_id = -1;  ///< 0..65535: only IPv4 frames with this Identification; -1: any
  bool any() const { return cls == FrameClass::kAny && ip_id < 0; }
  bool Matches(const rte_mbuf* m) const;
};

}  // namespace rocefab

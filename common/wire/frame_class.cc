#include "common/wire/frame_class.h"

#include <rte_ip.h>
#include <rte_udp.h>

#include "common/wire/headers.h"
#include "common/wire/roce_headers.h"

namespace rocefab {

namespace {
constexpr FrameClass kAll[] = {FrameClass::kAny,          FrameClass::kRoceData,
                               FrameClass::kReadRequest,  FrameClass::kReadResponse,
                               FrameClass::kAck,          FrameClass::kNak,
                               FrameClass::kCnp,          FrameClass::kPfc,
                               FrameClass::kArp,          FrameClass::kOtherIp};
constexpr uint16_t kBthBytes = 12;
}  // namespace

const char* FrameClassName(FrameClass c) {
  switch (c) {
    case FrameClass::kAny: return "any";
    case FrameClass::kRoceData: return "data";
    case FrameClass::kReadRequest: return "read_request";
    case FrameClass::kReadResponse: return "read_response";
    case FrameClass::kAck: return "ack";
    case FrameClass::kNak: return "nak";
    case FrameClass::kCnp: return "cnp";
    case FrameClass::kPfc: return "pfc";
    case FrameClass::kArp: return "arp";
    case FrameClass::kOtherIp: return "ip";
  }
  return "?";
}

Result<FrameClass> FrameClassFromName(const std::string& name) {
  std::string list;
  for (FrameClass c : kAll) {
    if (name == FrameClassName(c)) return c;
    list += std::string(list.empty() ? "" : ", ") + FrameClassName(c);
  }
  return Result<FrameClass>::Error("unknown frame type \"" + name + "\" (one of " + list + ")");
}

FrameClass ClassifyFrame(const rte_mbuf* m) {
  ParsedFrame p;
  if (ParseFrame(m, &p) != ParseError::kOk) return FrameClass::kAny;
  if (p.ether_type == kEtherTypeMacControl) return FrameClass::kPfc;
  if (p.ether_type == RTE_ETHER_TYPE_ARP) return FrameClass::kArp;
  if (p.ether_type != RTE_ETHER_TYPE_IPV4) return FrameClass::kAny;
  if (p.proto != IPPROTO_UDP || p.dport != kRoceUdpPort) return FrameClass::kOtherIp;
  const uint32_t bth = p.l4_offset + sizeof(rte_udp_hdr);
  if (rte_pktmbuf_data_len(m) < bth + kBthBytes + 1) return FrameClass::kOtherIp;
  const auto* b = rte_pktmbuf_mtod_offset(m, const uint8_t*, bth);
  switch (static_cast<RoceOp>(b[0])) {
    case RoceOp::kCnp: return FrameClass::kCnp;
    case RoceOp::kReadRequest: return FrameClass::kReadRequest;
    case RoceOp::kReadResponseFirst:
    case RoceOp::kReadResponseMiddle:
    case RoceOp::kReadResponseLast:
    case RoceOp::kReadResponseOnly: return FrameClass::kReadResponse;
    case RoceOp::kAck:
    case RoceOp::kAtomicAck: {
      const uint8_t syndrome = b[kBthBytes];  // AETH follows the BTH
      return (syndrome & kAethNakMask) == kAethNakPsnSeqErr ? FrameClass::kNak : FrameClass::kAck;
    }
    default: return FrameClass::kRoceData;
  }
}

bool FrameFilter::Matches(const rte_mbuf* m) const {
  if (ip_id >= 0) {
    ParsedFrame p;
    if (ParseFrame(m, &p) != ParseError::kOk || p.ether_type != RTE_ETHER_TYPE_IPV4) return false;
    const auto* ip = rte_pktmbuf_mtod_offset(m, const rte_ipv4_hdr*, p.l3_offset);
    if (rte_be_to_cpu_16(ip->packet_id) != static_cast<uint16_t>(ip_id)) return false;
  }
  return cls == FrameClass::kAny || ClassifyFrame(m) == cls;
}

}  // namespace rocefab

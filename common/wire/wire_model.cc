#include "common/wire/wire_model.h"

#include <rte_byteorder.h>
#include <rte_ether.h>

#include "common/time.h"
#include "common/wire/headers.h"
#include "common/wire/roce_headers.h"

namespace rocefab {

namespace {

constexpr uint32_t kBth = 12, kReth = 16, kAeth = 4, kIcrc = 4;

uint16_t Be16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }

// Extension header bytes after the BTH for the opcodes nic-emu and real RC peers send (IBTA
// vol. 1 9.2 table 38; immediate-data opcodes carry 4 more).
uint32_t ExtensionBytes(uint8_t op) {
  const auto o = static_cast<RoceOp>(op);
  uint32_t ext = 0;
  if (OpHasReth(o)) ext += kReth;
  if (OpHasAeth(o)) ext += kAeth;
  if (op == 0x03 || op == 0x05 || op == 0x09 || op == 0x0B) ext += 4;  // SEND/WRITE with ImmDt
  return ext;
}

}  // namespace

const EthernetWire& EthernetWire::Instance() {
  static const EthernetWire w;
  return w;
}

int64_t EthernetWire::FrameBytes(const rte_mbuf* m) const {
  return WireBytes(rte_pktmbuf_pkt_len(m));
}
int64_t EthernetWire::DataBytes(int64_t frame_len, uint32_t) const { return WireBytes(frame_len); }
int64_t EthernetWire::AckBytes(int64_t frame_len) const { return WireBytes(frame_len); }
int64_t EthernetWire::MinFrameBytes() const { return WireBytes(0); }

const Ns3PppWire& Ns3PppWire::Instance() {
  static const Ns3PppWire w;
  return w;
}

int64_t Ns3PppWire::DataBytes(int64_t, uint32_t payload) const { return payload + kDataOverhead; }
int64_t Ns3PppWire::AckBytes(int64_t) const { return kAck; }

int64_t Ns3PppWire::FrameBytes(const rte_mbuf* m) const {
  return Bytes(m, WireBytes(rte_pktmbuf_pkt_len(m)));
}

int64_t Ns3PppWire::Bytes(const rte_mbuf* m, int64_t unparsed) const {
  const uint32_t len = rte_pktmbuf_data_len(m);
  const auto* f = rte_pktmbuf_mtod(m, const uint8_t*);
  uint32_t l3 = 14;
  if (len < l3) return unparsed;
  uint16_t type = Be16(f + 12);
  if (type == RTE_ETHER_TYPE_VLAN) {
    l3 = 18;
    if (len < l3) return unparsed;
    type = Be16(f + 16);
  }
  if (type == kEtherTypeMacControl) return kPfc;
  if (type == RTE_ETHER_TYPE_ARP) return 28 + kPpp;
  if (type != RTE_ETHER_TYPE_IPV4 || len < l3 + 20) return unparsed;
  const uint8_t* ip = f + l3;
  const uint32_t ihl = (ip[0] & 0x0F) * 4u;
  const uint32_t ip_len = Be16(ip + 2);
  if (ihl < 20 || ip_len < ihl || len < l3 + ip_len) return unparsed;
  const uint8_t* udp = ip + ihl;
  if (ip[9] != 17 || ip_len < ihl + 8 + kBth || Be16(udp + 2) != kRoceUdpPort) {
    return ip_len + kPpp;
  }
  const uint8_t* bth = udp + 8;
  const uint8_t op = bth[0];
  if (op == static_cast<uint8_t>(RoceOp::kCnp)) return kCnp;
  if (op == static_cast<uint8_t>(RoceOp::kAck) || op == static_cast<uint8_t>(RoceOp::kAtomicAck))
    return kAck;
  const uint32_t pad = (bth[1] >> 4) & 3;
  const uint32_t headers = ihl + 8 + kBth + ExtensionBytes(op) + pad + kIcrc;
  const uint32_t payload = ip_len > headers ? ip_len - headers : 0;
  return payload + kDataOverhead;
}

}  // namespace rocefab

#include "switch/ecmp.h"

#include <murmurhash.h>
#include <rte_ip.h>

#include <cstring>

#include "common/wire/roce_headers.h"
#include "switch/conweave.h"

namespace rocefab {

uint32_t Ns3EcmpHash(Ipv4 src, Ipv4 dst, uint16_t sport, uint16_t dport, uint32_t seed) {
  const uint32_t words[3] = {src, dst, static_cast<uint32_t>(sport) | uint32_t{dport} << 16};
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the reference hashes x86 words");
  uint32_t h;
  lmmh_x86_32(words, sizeof(words), seed, &h);
  return h;
}

namespace {

Ipv4 Reference(const EcmpConfig& c, Ipv4 a) {
  if (c.reference_addresses == nullptr) return a;
  const auto it = c.reference_addresses->find(a);
  return it == c.reference_addresses->end() ? a : it->second;
}

}  // namespace

uint32_t Ns3EcmpMember(const EcmpConfig& c, Ipv4 src, Ipv4 dst, uint16_t sport, uint16_t dport,
                       uint32_t n) {
  return Ns3EcmpHash(Reference(c, src), Reference(c, dst), sport, dport, c.node_id) % n;
}

uint16_t Ns3ReferenceDport(uint8_t proto, uint16_t udp_dport, uint16_t ip_id) {
  const bool carried =
      proto == kIpProtoUdp && (udp_dport == kRoceUdpPort || udp_dport == kConweaveControlPort);
  return carried ? ip_id : udp_dport;
}

namespace {

uint16_t IpId(const rte_mbuf* m, const ParsedFrame& p) {
  return rte_be_to_cpu_16(rte_pktmbuf_mtod_offset(m, const rte_ipv4_hdr*, p.l3_offset)->packet_id);
}

}  // namespace

uint32_t Ns3Murmur3Ecmp::Member(const rte_mbuf* m, const ParsedFrame& p, uint32_t,
                                uint32_t n) const {
  return Ns3EcmpMember(c_, p.src_ip, p.dst_ip, p.sport,
                       Ns3ReferenceDport(p.proto, p.dport, IpId(m, p)), n);
}

void Ns3Murmur3Ecmp::StampReply(const rte_mbuf* data, const ParsedFrame& p, uint16_t* sport,
                                uint16_t* ip_id) const {
  *sport = IpId(data, p);
  *ip_id = p.sport;
}

std::unique_ptr<EcmpFunction> MakeEcmpFunction(const EcmpConfig& c) {
  switch (c.function) {
    case EcmpConfig::Function::kRteJhash:
      return std::make_unique<JhashEcmp>();
    case EcmpConfig::Function::kNs3Murmur3:
      return std::make_unique<Ns3Murmur3Ecmp>(c);
  }
  return std::make_unique<JhashEcmp>();
}

}  // namespace rocefab

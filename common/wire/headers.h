#pragma once
/// @file headers.h
/// Builders and parsers for the L2-L4 headers rocefab forwards: Ethernet II, 802.1Q, ARP
/// (RFC 826), IPv4 (RFC 791, header checksum RFC 1071, incremental update RFC 1624), UDP
/// (RFC 768), ICMP echo (RFC 792). Header layouts are DPDK's (rte_ether.h, rte_ip.h, ...).
/// IPv4 addresses are uint32_t in host byte order throughout rocefab.

#include <rte_ether.h>
#include <rte_mbuf.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace rocefab {

using Ipv4 = uint32_t;
using Mac = rte_ether_addr;

inline constexpr uint16_t kEtherTypeIpv4 = 0x0800;
inline constexpr uint16_t kEtherTypeArp = 0x0806;
inline constexpr uint16_t kEtherTypeVlan = 0x8100;
inline constexpr uint16_t kEtherTypeMacControl = 0x8808;
inline constexpr uint8_t kIpProtoIcmp = 1;
inline constexpr uint8_t kIpProtoTcp = 6;
inline constexpr uint8_t kIpProtoUdp = 17;

Result<Ipv4> ParseIpv4(std::string_view s);
/// "10.0.1.0/24" -> address and prefix length; a length outside min_len..max_len (at most
/// 0..32) is an error that states the range.
Result<std::pair<Ipv4, int>> ParseIpv4Prefix(std::string_view s, int min_len = 0, int max_len = 32);
std::string FormatIpv4(Ipv4 ip);
Result<Mac> ParseMac(std::string_view s);
std::string FormatMac(const Mac& m);
inline bool MacEq(const Mac& a, const Mac& b) { return rte_is_same_ether_addr(&a, &b); }
inline uint64_t MacKey(const Mac& m) {
  uint64_t k = 0;
  for (int i = 0; i < 6; ++i) k = (k << 8) | m.addr_bytes[i];
  return k;
}
Mac MacFromKey(uint64_t k);

/// What a parser found in a frame (offsets from the start of the frame).
struct ParsedFrame {
  uint16_t ether_type = 0;  ///< after any 802.1Q tag
  bool has_vlan = false;
  uint16_t vlan_id = 0;
  uint8_t pcp = 0;
  uint16_t l3_offset = 0;
  // IPv4 (valid when ether_type == 0x0800 and parse succeeded)
  Ipv4 src_ip = 0, dst_ip = 0;
  uint8_t proto = 0, ttl = 0, tos = 0;
  uint16_t l4_offset = 0;
  uint16_t sport = 0, dport = 0;  ///< UDP/TCP ports, 0 otherwise
};

/// Why a frame failed to parse. kOk means every header present was complete and valid.
enum class ParseError : uint8_t {
  kOk,
  kTruncatedL2,    ///< shorter than an Ethernet (+tag) header
  kTruncatedL3,    ///< IPv4/ARP header cut short, or IPv4 total length beyond the frame
  kBadIpVersion,   ///< version != 4 or IHL < 5
  kBadIpChecksum,  ///< RFC 1071 checksum over the header does not verify
  kTruncatedL4,    ///< UDP/TCP/ICMP header cut short
};
const char* ParseErrorName(ParseError e);

/// One's-complement sum (RFC 1071) of an IPv4 header of `ihl` bytes, folded to 16 bits, as
/// DPDK's rte_raw_cksum computes it (0xFFFF for a header whose checksum verifies); a 20-byte
/// header is summed as five 32-bit words.
uint16_t Ipv4HeaderSum(const void* ip, uint16_t ihl);

/// Parses Ethernet, an optional 802.1Q tag, and for IPv4 the IP header and UDP/TCP ports.
/// Frames must be in one segment (rocefab pools are single-segment).
ParseError ParseFrame(const rte_mbuf* m, ParsedFrame* out);

/// Decrements the IPv4 TTL at `ip_offset` and updates the header checksum incrementally
/// (RFC 1624 eqn. 3). Caller checks TTL > 1 first.
void DecrementTtl(rte_mbuf* m, uint16_t ip_offset);
/// Sets the ECN field of the IPv4 header at `ip_offset` to CE (11), updating the checksum
/// incrementally (RFC 1624).
void SetEcnCe(rte_mbuf* m, uint16_t ip_offset);

/// Builds a UDP/IPv4 frame with `payload_len` payload bytes (zero-filled) into a new mbuf from
/// `pool`. IPv4 DF set, TTL 64, tos = dscp << 2 | ecn, UDP checksum computed. nullptr if the pool
/// is empty or the frame would not fit the mbuf.
struct UdpSpec {
  Mac src_mac, dst_mac;
  Ipv4 src_ip = 0, dst_ip = 0;
  uint16_t sport = 0, dport = 0;
  uint8_t dscp = 0, ecn = 0, ttl = 64;
  uint16_t payload_len = 0;
  uint16_t ip_id = 0;  // IPv4 identification
};
rte_mbuf* BuildUdp(rte_mempool* pool, const UdpSpec& spec);

/// Builds an ARP request (broadcast) or reply (unicast to target).
rte_mbuf* BuildArp(rte_mempool* pool, bool reply, const Mac& sender_mac, Ipv4 sender_ip,
                   const Mac& target_mac, Ipv4 target_ip);

/// Builds an ICMP echo request (type 8) or reply (type 0) with `data_len` data bytes.
rte_mbuf* BuildIcmpEcho(rte_mempool* pool, bool reply, const Mac& src_mac, const Mac& dst_mac,
                        Ipv4 src_ip, Ipv4 dst_ip, uint16_t id, uint16_t seq, uint16_t data_len);

/// Pointer to the UDP/ICMP payload of a frame parsed by ParseFrame (nullptr if none).
uint8_t* L4Payload(rte_mbuf* m, const ParsedFrame& p, uint16_t* len);

}  // namespace rocefab

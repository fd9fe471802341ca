#include "common/wire/headers.h"

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <rte_arp.h>
#include <rte_icmp.h>
#include <rte_ip.h>
#include <rte_udp.h>

#include "common/rng.h"
#include "tests/support/test_pool.h"

namespace rocefab {
namespace {

class HeadersTest : public testing::PoolTest {};

UdpSpec Spec() {
  UdpSpec s;
  s.src_mac = ParseMac("02:00:00:00:00:01").value();
  s.dst_mac = ParseMac("02:00:00:00:00:02").value();
  s.src_ip = ParseIpv4("10.1.0.2").value();
  s.dst_ip = ParseIpv4("10.1.1.3").value();
  s.sport = 49152;
  s.dport = 4791;
  s.dscp = 26;
  s.ecn = 2;
  s.payload_len = 100;
  return s;
}

TEST_F(HeadersTest, UdpBuildParseRoundTripWithValidChecksums) {
  rte_mbuf* m = BuildUdp(pool_, Spec());
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(rte_pktmbuf_pkt_len(m), 14u + 20 + 8 + 100);
  ParsedFrame p;
  ASSERT_EQ(ParseFrame(m, &p), ParseError::kOk);
  EXPECT_EQ(p.ether_type, kEtherTypeIpv4);
  EXPECT_EQ(FormatIpv4(p.src_ip), "10.1.0.2");
  EXPECT_EQ(FormatIpv4(p.dst_ip), "10.1.1.3");
  EXPECT_EQ(p.proto, kIpProtoUdp);
  EXPECT_EQ(p.sport, 49152);
  EXPECT_EQ(p.dport, 4791);
  EXPECT_EQ(p.tos, 26 << 2 | 2);
  EXPECT_EQ(p.ttl, 64);
  auto* ip = rte_pktmbuf_mtod_offset(m, rte_ipv4_hdr*, 14);
  EXPECT_EQ(rte_raw_cksum(ip, 20), 0xFFFF);  // header checksum verifies
  auto* udp = rte_pktmbuf_mtod_offset(m, rte_udp_hdr*, 34);
  // The UDP checksum verifies: recomputing it over the pseudo-header gives the stored value.
  const uint16_t stored = udp->dgram_cksum;
  udp->dgram_cksum = 0;
  EXPECT_EQ(rte_ipv4_udptcp_cksum(ip, udp), stored);
  udp->dgram_cksum = stored;
  uint16_t len = 0;
  ASSERT_NE(L4Payload(m, p, &len), nullptr);
  EXPECT_EQ(len, 100);
  rte_pktmbuf_free(m);
}

TEST_F(HeadersTest, TtlDecrementKeepsChecksumValidForEveryTtl) {
  for (int ttl = 2; ttl <= 255; ++ttl) {
    UdpSpec s = Spec();
    s.ttl = static_cast<uint8_t>(ttl);
    rte_mbuf* m = BuildUdp(pool_, s);
    ASSERT_NE(m, nullptr);
    DecrementTtl(m, 14);
    auto* ip = rte_pktmbuf_mtod_offset(m, rte_ipv4_hdr*, 14);
    EXPECT_EQ(ip->time_to_live, ttl - 1);
    EXPECT_EQ(rte_raw_cksum(ip, 20), 0xFFFF) << "ttl " << ttl;
    const uint16_t incremental = ip->hdr_checksum;
    ip->hdr_checksum = 0;
    EXPECT_EQ(incremental, rte_ipv4_cksum(ip)) << "RFC 1624 result differs from recompute";
    rte_pktmbuf_free(m);
  }
}

TEST(Ipv4SumTest, EqualsDpdkRawChecksumOnRandomAndEdgeHeaders) {
  Rng rng(11);
  std::array<uint8_t, 60> h{};
  for (int i = 0; i < 200000; ++i) {
    const int kind = i % 4;
    for (uint8_t& b : h) {
      b = kind == 0 ? static_cast<uint8_t>(rng.Next())
          : kind == 1 ? 0xFF
          : kind == 2 ? static_cast<uint8_t>(rng.Next() | 0xF0)  // many carries
                      : static_cast<uint8_t>(rng.Next() & 0x01);
    }
    const uint16_t ihl = i % 7 == 0 ? static_cast<uint16_t>(20 + 4 * (i % 11)) : 20;
    ASSERT_EQ(Ipv4HeaderSum(h.data(), ihl), rte_raw_cksum(h.data(), ihl)) << i;
  }
  h.fill(0);
  EXPECT_EQ(Ipv4HeaderSum(h.data(), 20), 0);
}

TEST_F(HeadersTest, ArpAndIcmpBuilders) {
  const Mac a = ParseMac("02:00:00:00:00:0a").value();
  rte_mbuf* m = BuildArp(pool_, false, a, 0x0A010002, Mac{}, 0x0A010001);
  ASSERT_NE(m, nullptr);
  ParsedFrame p;
  ASSERT_EQ(ParseFrame(m, &p), ParseError::kOk);
  EXPECT_EQ(p.ether_type, kEtherTypeArp);
  auto* eth = rte_pktmbuf_mtod(m, rte_ether_hdr*);
  EXPECT_TRUE(rte_is_broadcast_ether_addr(&eth->dst_addr));
  auto* arp = rte_pktmbuf_mtod_offset(m, rte_arp_hdr*, 14);
  EXPECT_EQ(rte_be_to_cpu_16(arp->arp_opcode), RTE_ARP_OP_REQUEST);
  EXPECT_EQ(rte_be_to_cpu_32(arp->arp_data.arp_tip), 0x0A010001u);
  rte_pktmbuf_free(m);

  m = BuildIcmpEcho(pool_, false, a, a, 0x0A010002, 0x0A010102, 7, 3, 56);
  ASSERT_NE(m, nullptr);
  ASSERT_EQ(ParseFrame(m, &p), ParseError::kOk);
  EXPECT_EQ(p.proto, kIpProtoIcmp);
  auto* icmp = rte_pktmbuf_mtod_offset(m, rte_icmp_hdr*, 34);
  EXPECT_EQ(rte_raw_cksum(icmp, 8 + 56), 0xFFFF);  // ICMP checksum verifies
  EXPECT_EQ(rte_be_to_cpu_16(icmp->icmp_seq_nb), 3);
  rte_pktmbuf_free(m);
}

TEST_F(HeadersTest, ParserNamesEachKindOfBrokenFrame) {
  ParsedFrame p;
  rte_mbuf* m = BuildUdp(pool_, Spec());
  // Truncated Ethernet header.
  rte_pktmbuf_trim(m, rte_pktmbuf_pkt_len(m) - 10);
  EXPECT_EQ(ParseFrame(m, &p), ParseError::kTruncatedL2);
  rte_pktmbuf_free(m);
  // IPv4 header cut short.
  m = BuildUdp(pool_, Spec());
  rte_pktmbuf_trim(m, rte_pktmbuf_pkt_len(m) - 30);
  EXPECT_EQ(ParseFrame(m, &p), ParseError::kTruncatedL3);
  rte_pktmbuf_free(m);
  // Total length larger than the frame.
  m = BuildUdp(pool_, Spec());
  rte_pktmbuf_trim(m, 50);
  EXPECT_EQ(ParseFrame(m, &p), ParseError::kTruncatedL3);
  rte_pktmbuf_free(m);
  // Bad header checksum.
  m = BuildUdp(pool_, Spec());
  rte_pktmbuf_mtod_offset(m, rte_ipv4_hdr*, 14)->hdr_checksum ^= 0x0101;
  EXPECT_EQ(ParseFrame(m, &p), ParseError::kBadIpChecksum);
  rte_pktmbuf_free(m);
  // Wrong version.
  m = BuildUdp(pool_, Spec());
  rte_pktmbuf_mtod_offset(m, rte_ipv4_hdr*, 14)->version_ihl = 0x65;
  EXPECT_EQ(ParseFrame(m, &p), ParseError::kBadIpVersion);
  rte_pktmbuf_free(m);
}

TEST_F(HeadersTest, ParsesVlanTag) {
  rte_mbuf* m = BuildUdp(pool_, Spec());
  uint8_t* d = reinterpret_cast<uint8_t*>(rte_pktmbuf_prepend(m, 4));
  ASSERT_NE(d, nullptr);
  uint8_t macs[12];  // the two MAC addresses move up by the tag's 4 bytes
  std::memcpy(macs, d + 4, sizeof macs);
  std::memcpy(d, macs, sizeof macs);
  d[12] = 0x81;
  d[13] = 0x00;
  d[14] = (3 << 5) | 0x00;  // PCP 3, VID 0x064 = 100
  d[15] = 0x64;
  ParsedFrame p;
  ASSERT_EQ(ParseFrame(m, &p), ParseError::kOk);
  EXPECT_TRUE(p.has_vlan);
  EXPECT_EQ(p.vlan_id, 100);
  EXPECT_EQ(p.pcp, 3);
  EXPECT_EQ(p.ether_type, kEtherTypeIpv4);
  EXPECT_EQ(p.l3_offset, 18);
  EXPECT_EQ(p.sport, 49152);
  rte_pktmbuf_free(m);
}

TEST(AddressTest, ParsesAndRejects) {
  EXPECT_EQ(ParseIpv4("10.1.2.3").value(), 0x0A010203u);
  EXPECT_FALSE(ParseIpv4("10.1.2").ok());
  EXPECT_FALSE(ParseIpv4("10.1.2.300").ok());
  auto p = ParseIpv4Prefix("10.1.0.0/24");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p.value().second, 24);
  EXPECT_FALSE(ParseIpv4Prefix("10.1.0.0/33").ok());
  EXPECT_FALSE(ParseIpv4Prefix("10.1.0.0").ok());
  EXPECT_EQ(FormatMac(ParseMac("02:52:53:00:00:01").value()), "02:52:53:00:00:01");
  EXPECT_FALSE(ParseMac("02:52:53:00:00").ok());
}

}  // namespace
}  // namespace rocefab

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <vector>

#include "common/packet.h"
#include "common/rng.h"
#include "common/wire/pcap_writer.h"
#include "common/wire/roce_headers.h"
#include "tests/support/icrc_reference.h"
#include "tests/support/test_pool.h"

namespace rocefab {
namespace {

std::vector<uint8_t> Hex(const std::string& h) {
  std::vector<uint8_t> v;
  for (size_t i = 0; i + 1 < h.size(); i += 2)
    v.push_back(static_cast<uint8_t>(std::stoi(h.substr(i, 2), nullptr, 16)));
  return v;
}

TEST(IcrcTest, KnownAnswerCnpVector) {
  // libconntrack-cm test_cnp.cpp / Mellanox "RoCEv2 CNP Packet Format Example" (reference §1.7):
  // ICRC 0xEF1BFCDA, on the wire DA FC 1B EF.
  std::vector<uint8_t> f(14, 0);
  for (uint8_t b : Hex("4589003C98C640002011692716161608161616"
                       "07"
                       "DBAE12B700280000"
                       "8100FFFF400000D200000000"
                       "00000000000000000000000000000000"
                       "DAFC1BEF")) {
    f.push_back(b);
  }
  ASSERT_EQ(f.size(), 74u);
  EXPECT_EQ(ComputeIcrc(f.data(), static_cast<uint32_t>(f.size()), 14), 0xEF1BFCDAu);
}

class RoceTest : public testing::PoolTest {};

// A frame spec from host `from` to host `to` of the reference vectors: MAC 02:00:00:00:00:0N,
// IPv4 10.0.0.N.
RoceFrameSpec Between(int from, int to) {
  RoceFrameSpec s;
  s.src_mac = ParseMac("02:00:00:00:00:0" + std::to_string(from)).value();
  s.dst_mac = ParseMac("02:00:00:00:00:0" + std::to_string(to)).value();
  s.src_ip = ParseIpv4("10.0.0." + std::to_string(from)).value();
  s.dst_ip = ParseIpv4("10.0.0." + std::to_string(to)).value();
  return s;
}

TEST_F(RoceTest, BuildsTheReferenceSendOnlyAndAckFramesByteForByte) {
  // Reference §1.7 self-computed vectors (zlib crc32, decoded by tshark 4.0.17).
  RoceFrameSpec s = Between(1, 2);
  s.sport = 0xC123;
  s.dscp = 26;
  s.ecn = 2;
  s.op = RoceOp::kSendOnly;
  s.ack_req = true;
  s.dest_qp = 0x11;
  s.psn = 100;
  s.ip_id = 0x1234;
  const uint8_t hello[] = {'h', 'e', 'l', 'l', 'o'};
  s.payload = hello;
  s.payload_len = 5;
  rte_mbuf* m = BuildRoce(pool_, s);
  ASSERT_NE(m, nullptr);
  const auto want = Hex(
      "0200000000020200000000010800456a003412344000401114190a0000010a000002c12312b7002000000430ffff"
      "000000118000006468656c6c6f0000004bba7500");
  ASSERT_EQ(rte_pktmbuf_pkt_len(m), want.size());
  EXPECT_EQ(0, std::memcmp(rte_pktmbuf_mtod(m, uint8_t*), want.data(), want.size()));
  ParsedFrame p;
  ASSERT_EQ(ParseFrame(m, &p), ParseError::kOk);
  RoceView v;
  ASSERT_EQ(ParseRoce(m, p, &v), RoceParseError::kOk);
  EXPECT_EQ(v.op, RoceOp::kSendOnly);
  EXPECT_EQ(v.psn, 100u);
  EXPECT_EQ(v.payload_len, 5u);
  EXPECT_EQ(v.pad, 3);
  // One flipped payload bit: the ICRC no longer matches.
  rte_pktmbuf_mtod_offset(m, uint8_t*, 54)[0] ^= 1;
  EXPECT_EQ(ParseRoce(m, p, &v), RoceParseError::kBadIcrc);
  rte_pktmbuf_free(m);

  RoceFrameSpec a = Between(2, 1);
  a.sport = 0xC123;
  a.dscp = 26;
  a.ecn = 0;
  a.op = RoceOp::kAck;
  a.dest_qp = 0x22;
  a.psn = 0x65;
  a.msn = 7;
  a.ip_id = 0x1234;
  m = BuildRoce(pool_, a);
  const auto ack =
      Hex("020000000001020000000002080045680030123440004011141f0a0000020a000001c12312b7001c0000"
          "1100ffff00000022000000651f000007dbd8023e");
  ASSERT_EQ(rte_pktmbuf_pkt_len(m), ack.size());
  EXPECT_EQ(0, std::memcmp(rte_pktmbuf_mtod(m, uint8_t*), ack.data(), ack.size()));
  rte_pktmbuf_free(m);
}

TEST_F(RoceTest, DeferredIcrcIsSkippedOnlyWhileFlaggedAndFinalizesToTheRealBytes) {
  RoceFrameSpec s = Between(1, 2);
  s.op = RoceOp::kWriteFirst;
  s.dest_qp = 0x123;
  s.psn = 0xFFFFFE;
  s.payload_len = 1000;
  s.fill = 0x5A;
  rte_mbuf* real = BuildRoce(pool_, s);
  ASSERT_NE(real, nullptr);
  EXPECT_EQ(Meta(real)->flags & kMetaIcrcDeferred, 0);
  s.defer_icrc = true;
  rte_mbuf* m = BuildRoce(pool_, s);
  ASSERT_NE(m, nullptr);
  EXPECT_NE(Meta(m)->flags & kMetaIcrcDeferred, 0);
  const uint32_t len = rte_pktmbuf_pkt_len(m);
  ASSERT_EQ(len, rte_pktmbuf_pkt_len(real));
  const uint8_t* d = rte_pktmbuf_mtod(m, const uint8_t*);
  const uint8_t* r = rte_pktmbuf_mtod(real, const uint8_t*);
  EXPECT_EQ(0, std::memcmp(d, r, len - 4)) << "only the ICRC field differs";
  EXPECT_EQ(0u, static_cast<uint32_t>(d[len - 4] | d[len - 3] | d[len - 2] | d[len - 1]));
  ParsedFrame p;
  ASSERT_EQ(ParseFrame(m, &p), ParseError::kOk);
  RoceView v;
  EXPECT_EQ(ParseRoce(m, p, &v), RoceParseError::kOk)
      << "flagged: the check waits for FinalizeIcrc";
  EXPECT_EQ(v.psn, 0xFFFFFEu);
  // Without the flag (a frame from a real port) the zero field is a bad ICRC.
  Meta(m)->flags &= static_cast<uint8_t>(~kMetaIcrcDeferred);
  EXPECT_EQ(ParseRoce(m, p, &v), RoceParseError::kBadIcrc);
  Meta(m)->flags |= kMetaIcrcDeferred;
  // A switch rewrites masked fields on the way (TTL, DSCP/ECN, BTH byte 4): the finalized ICRC
  // is still the sender's.
  DecrementTtl(m, 14);
  SetEcnCe(m, 14);
  rte_pktmbuf_mtod(m, uint8_t*)[14 + 28 + 4] = 0x80;  // FECN
  ASSERT_TRUE(FinalizeIcrc(m));
  EXPECT_EQ(Meta(m)->flags & kMetaIcrcDeferred, 0);
  EXPECT_EQ(0, std::memcmp(d + len - 4, r + len - 4, 4));
  EXPECT_EQ(ParseRoce(m, p, &v), RoceParseError::kOk);
  EXPECT_TRUE(FinalizeIcrc(m)) << "a second call changes nothing";
  EXPECT_EQ(0, std::memcmp(d + len - 4, r + len - 4, 4));
  rte_pktmbuf_free(real);
  // Builders of other frames clear the bit the mbuf's previous use left in the private area.
  for (int i = 0; i < 4; ++i) {
    rte_mbuf* a = BuildArp(pool_, false, s.src_mac, s.src_ip, s.dst_mac, s.dst_ip);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(Meta(a)->flags, 0);
    Meta(a)->flags = kMetaIcrcDeferred;
    rte_pktmbuf_free(a);
  }
  rte_pktmbuf_free(m);
}

TEST_F(RoceTest, FramesDecodeInTsharkAsRoce) {
  ASSERT_EQ(std::system("command -v tshark >/dev/null 2>&1"), 0)
      << "tshark (the decoding oracle) is not installed: scripts/setup.sh installs it";
  const std::string path = ::testing::TempDir() + "/rocefab_roce.pcap";
  {
    auto w = PcapWriter::Open(path);
    ASSERT_TRUE(w.ok()) << w.message();
    std::unique_ptr<PcapWriter> pw(w.value());
    RoceFrameSpec s;
    s.src_mac = ParseMac("02:00:00:00:00:01").value();
    s.dst_mac = ParseMac("02:00:00:00:00:02").value();
    s.src_ip = 0x0A010002;
    s.dst_ip = 0x0A010102;
    const struct {
      RoceOp op;
      uint32_t qp, psn, len;
    } frames[] = {{RoceOp::kSendOnly, 0x11, 1, 512},         {RoceOp::kWriteFirst, 0x12, 2, 1024},
                  {RoceOp::kReadRequest, 0x13, 3, 0},        {RoceOp::kAck, 0x14, 4, 0},
                  {RoceOp::kReadResponseLast, 0x15, 5, 100}, {RoceOp::kCnp, 0x16, 0, 0}};
    Time t = 0;
    for (const auto& f : frames) {
      s.op = f.op;
      s.dest_qp = f.qp;
      s.psn = f.psn;
      s.payload_len = f.len;
      s.msn = 9;
      s.becn = f.op == RoceOp::kCnp;
      s.dma_len = 4096;
      s.fill = 0xAB;  // not mistaken for an RPC-over-RDMA header
      rte_mbuf* m = BuildRoce(pool_, s);
      ASSERT_NE(m, nullptr);
      pw->Write(t += kUs, m);
      rte_pktmbuf_free(m);
    }
  }
  FILE* p = popen(("tshark --disable-heuristic rpcrdma_infiniband -r " + path +
                   " -T fields -E separator=, -e infiniband.bth.opcode -e infiniband.bth.destqp "
                   "-e infiniband.bth.psn -e infiniband.aeth.syndrome -e infiniband.aeth.msn "
                   "-e infiniband.reth.dmalen 2>/dev/null")
                      .c_str(),
                  "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[256];
  while (fgets(buf, sizeof buf, p)) out += buf;
  pclose(p);
  std::istringstream in(out);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  ASSERT_EQ(lines.size(), 6u) << out;
  EXPECT_EQ(lines[0], "4,0x000011,1,,,");       // RC SEND_ONLY
  EXPECT_EQ(lines[1], "6,0x000012,2,,,4096");   // RC RDMA WRITE FIRST with RETH
  EXPECT_EQ(lines[2], "12,0x000013,3,,,4096");  // RC RDMA READ REQUEST
  EXPECT_EQ(lines[3], "17,0x000014,4,31,9,");   // RC ACKNOWLEDGE, AETH
  EXPECT_EQ(lines[4], "15,0x000015,5,31,9,");   // READ RESPONSE LAST, AETH
  EXPECT_EQ(lines[5].substr(0, 14), "129,0x000016,0") << "CNP: opcode 0x81, PSN 0";
}

using testing::ReferenceIcrc;

TEST_F(RoceTest, AcceleratedIcrcEqualsPlainCrc32ForAllLengths) {
  // Every payload length up to 300 bytes (ISA-L's CRC takes other paths below 16, 64 and 256
  // bytes) and larger ones, random bytes, every opcode shape (extension headers move where the
  // in-place part of the CRC starts).
  Rng rng(3);
  std::vector<uint32_t> lens;
  for (uint32_t len = 0; len <= 300; ++len) lens.push_back(len);
  for (uint32_t len : {511u, 512u, 513u, 1000u, 1024u, 1500u, 4096u}) lens.push_back(len);
  std::vector<uint8_t> payload(4096 + 512);
  for (uint8_t& b : payload) b = static_cast<uint8_t>(rng.Next());
  const RoceOp ops[] = {RoceOp::kWriteFirst, RoceOp::kSendMiddle, RoceOp::kReadResponseOnly};
  for (uint32_t len : lens) {
    RoceFrameSpec s;
    s.op = ops[len % 3];
    s.payload_len = len;
    s.payload = payload.data() + (len * 7) % 512;
    s.psn = static_cast<uint32_t>(rng.Next()) & 0xFFFFFF;
    s.dscp = 26;
    s.ecn = 2;
    rte_mbuf* m = BuildRoce(pool_, s);
    ASSERT_NE(m, nullptr) << len;
    const uint8_t* d = rte_pktmbuf_mtod(m, const uint8_t*);
    const uint32_t n = rte_pktmbuf_pkt_len(m);
    EXPECT_EQ(ComputeIcrc(d, n, 14), ReferenceIcrc(d, n)) << "payload " << len;
    rte_pktmbuf_free(m);
  }
}

TEST(RoceTest2, SourcePortIsInTheDynamicRange) {
  for (uint32_t qpn = 1; qpn < 5000; ++qpn) {
    const uint16_t sp = RoceSourcePort(qpn);
    EXPECT_GE(sp, 0xC000);
  }
  EXPECT_NE(RoceSourcePort(1), RoceSourcePort(2));
}

}  // namespace
}  // namespace rocefab

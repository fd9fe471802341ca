// SwitchNode against hand-made frames: every frame is forwarded or dropped under its named reason,
// garbage never crashes it, and no mbuf leaks.
#include <gtest/gtest.h>
#include <rte_ip.h>

#include <array>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/runtime/sim_runner.h"
#include "switch/ecmp.h"
#include "switch/switch_node.h"
#include "tests/support/test_pool.h"

namespace rocefab {
namespace {

// Sends the frames it is given on its only port, then records what comes back.
class Injector final : public Node {
 public:
  Injector() : Node("injector") {}
  void Add(rte_mbuf* m) { out_.Push(m); }
  uint16_t num_ports() const override { return 1; }
  void Start(Time) override { env_->WakeTx(0); }
  void Receive(Time, uint16_t, rte_mbuf* m) override {
    ++received_;
    rte_pktmbuf_free(m);
  }
  rte_mbuf* Dequeue(Time, uint16_t) override { return out_.empty() ? nullptr : out_.Pop(); }
  nlohmann::json Stats() const override { return {}; }
  uint64_t received_ = 0;

 private:
  MbufFifo out_;
};

class SwitchTest : public testing::PoolTest {
 protected:
  const Mac kRouter = Mac{{0x02, 0x52, 0x53, 0, 0, 1}};
  const Mac kHost = Mac{{0x02, 0x52, 0x48, 0, 0, 1}};

  std::unique_ptr<SwitchNode> MakeSwitch() {
    SwitchConfig c;
    c.name = "sw";
    c.router_mac = kRouter;
    c.loopback = 0x0AFF0001;
    c.ports = {{"sw/p0", 10 * kGbps, 100}, {"sw/p1", 10 * kGbps, 0}};  // p0 VLAN 100, p1 routed
    c.svis = {{100, 0x0A010001, 24}};
    RouteGroup up;
    up.members.push_back(NextHop{1, Mac{{0x02, 0x52, 0x53, 0, 0, 2}}});
    c.routes.push_back(RouteConfig{0x0A020000, 16, up});
    auto s = SwitchNode::Create(c);
    EXPECT_TRUE(s.ok()) << s.message();
    return std::move(s).value();
  }
  rte_mbuf* Udp(Ipv4 dst, uint8_t ttl = 64) {
    UdpSpec u;
    u.src_mac = kHost;
    u.dst_mac = kRouter;
    u.src_ip = 0x0A010002;
    u.dst_ip = dst;
    u.sport = 1000;
    u.dport = 2000;
    u.ttl = ttl;
    u.payload_len = 64;
    return BuildUdp(pool_, u);
  }
};

TEST_F(SwitchTest, EachBrokenFrameIsCountedUnderItsReason) {
  auto sw = MakeSwitch();
  Injector inj, peer;
  {
    SimRunner r(pool_);
    const uint32_t a = r.AddNode(&inj), b = r.AddNode(sw.get()), c = r.AddNode(&peer);
    ASSERT_TRUE(r.Connect(a, 0, b, 0, 10 * kGbps, 0).ok());
    ASSERT_TRUE(r.Connect(c, 0, b, 1, 10 * kGbps, 0).ok());
    // Forwarded: one routed frame to 10.2.0.5 leaves on p1.
    inj.Add(Udp(0x0A020005));
    // Truncated L2 (10 bytes).
    rte_mbuf* m = Udp(0x0A020005);
    rte_pktmbuf_trim(m, rte_pktmbuf_pkt_len(m) - 10);
    inj.Add(m);
    // Truncated L3 (IPv4 header cut).
    m = Udp(0x0A020005);
    rte_pktmbuf_trim(m, rte_pktmbuf_pkt_len(m) - 20);
    inj.Add(m);
    // Bad IPv4 checksum.
    m = Udp(0x0A020005);
    rte_pktmbuf_mtod_offset(m, rte_ipv4_hdr*, 14)->hdr_checksum ^= 0x00FF;
    inj.Add(m);
    // No route.
    inj.Add(Udp(0x0B000001));
    // TTL expired.
    inj.Add(Udp(0x0A020005, 1));
    // Unknown EtherType (IPv6).
    m = Udp(0x0A020005);
    rte_pktmbuf_mtod(m, rte_ether_hdr*)->ether_type = rte_cpu_to_be_16(0x86DD);
    inj.Add(m);
    // VLAN tag of another VLAN.
    m = Udp(0x0A020005);
    uint8_t* d = reinterpret_cast<uint8_t*>(rte_pktmbuf_prepend(m, 4));
    std::memmove(d, d + 4, 12);
    d[12] = 0x81, d[13] = 0x00, d[14] = 0x00, d[15] = 0xC8;  // VID 200
    inj.Add(m);
    // Broadcast source MAC.
    m = Udp(0x0A020005);
    std::memset(rte_pktmbuf_mtod(m, rte_ether_hdr*)->src_addr.addr_bytes, 0xFF, 6);
    inj.Add(m);
    // UDP to the switch itself.
    inj.Add(Udp(0x0AFF0001));
    r.Run(kMs);
    EXPECT_EQ(sw->rx_packets(0), 10u);
    EXPECT_EQ(sw->tx_packets(1), 1u);
    EXPECT_EQ(peer.received_, 1u);
    EXPECT_EQ(sw->drops(DropReason::kTruncatedL2), 1u);
    EXPECT_EQ(sw->drops(DropReason::kTruncatedL3), 1u);
    EXPECT_EQ(sw->drops(DropReason::kBadIpChecksum), 1u);
    EXPECT_EQ(sw->drops(DropReason::kNoRoute), 1u);
    EXPECT_EQ(sw->drops(DropReason::kTtlExpired), 1u);
    EXPECT_EQ(sw->drops(DropReason::kUnknownEtherType), 1u);
    EXPECT_EQ(sw->drops(DropReason::kVlanMismatch), 1u);
    EXPECT_EQ(sw->drops(DropReason::kBadSourceMac), 1u);
    EXPECT_EQ(sw->drops(DropReason::kUnhandledForUs), 1u);
    EXPECT_EQ(sw->total_drops(), 9u);
    const FrameBalance bal = sw->frame_balance().value();
    EXPECT_EQ(bal.received, 10u);
    EXPECT_EQ(bal.transmitted, 1u);
    EXPECT_EQ(bal.dropped, 9u);
    EXPECT_EQ(bal.created + bal.consumed + bal.held, 0u);
    EXPECT_EQ(bal.imbalance(), 0);
  }
  sw.reset();
}

TEST_F(SwitchTest, RandomGarbageNeverCrashesOrLeaks) {
  auto sw = MakeSwitch();
  Injector inj, peer;
  std::mt19937_64 rng(12345);
  constexpr int kFrames = 5000;
  {
    SimRunner r(pool_);
    const uint32_t a = r.AddNode(&inj), b = r.AddNode(sw.get()), c = r.AddNode(&peer);
    ASSERT_TRUE(r.Connect(a, 0, b, 0, 10 * kGbps, 0).ok());
    ASSERT_TRUE(r.Connect(c, 0, b, 1, 10 * kGbps, 0).ok());
    for (int i = 0; i < kFrames; ++i) {
      rte_mbuf* m;
      if (i % 2 == 0) {
        // A valid frame with random bytes flipped and a random length cut.
        m = Udp(0x0A020000 | (rng() & 0xFFFF));
        uint8_t* d = rte_pktmbuf_mtod(m, uint8_t*);
        const uint32_t len = rte_pktmbuf_pkt_len(m);
        for (int k = 0; k < 4; ++k) d[rng() % len] ^= static_cast<uint8_t>(rng());
        rte_pktmbuf_trim(m, rng() % len);
      } else {
        m = rte_pktmbuf_alloc(pool_);
        ASSERT_NE(m, nullptr);
        const uint16_t len = rng() % 200;
        uint8_t* d = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, len));
        for (uint16_t k = 0; k < len; ++k) d[k] = static_cast<uint8_t>(rng());
      }
      inj.Add(m);
    }
    r.Run(100 * kMs);
    EXPECT_EQ(sw->rx_packets(0), static_cast<uint64_t>(kFrames));
    const auto st = sw->Stats();
    // Every frame is accounted for: forwarded out of p1/p0, flooded, consumed as ARP, or dropped.
    EXPECT_GT(sw->total_drops(), kFrames / 2u) << st.dump();
    const FrameBalance bal = sw->frame_balance().value();
    EXPECT_EQ(bal.received, static_cast<uint64_t>(kFrames));
    EXPECT_EQ(bal.imbalance(), 0) << "received " << bal.received << " created " << bal.created
                                  << " transmitted " << bal.transmitted << " dropped "
                                  << bal.dropped << " consumed " << bal.consumed << " held "
                                  << bal.held;
  }
  sw.reset();  // pool in-use count is checked in TearDown
}

TEST_F(SwitchTest, MovedMbufFifosKeepTheirFramesAndLeaveTheSourceEmpty) {
  // The live runner replaces a port's backlog by a moved FIFO (live_runner.cc); the moved-from
  // FIFO is destroyed and must not free frames it handed over.
  MbufFifo a;
  for (int i = 0; i < 40; ++i) {  // grows the ring past its first 16 slots
    rte_mbuf* m = rte_pktmbuf_alloc(pool_);
    ASSERT_NE(rte_pktmbuf_append(m, static_cast<uint16_t>(100 + i)), nullptr);
    a.Push(m);
  }
  rte_mbuf* first = a.Pop();  // head no longer at 0
  ASSERT_NE(first, nullptr);
  {
    MbufFifo b(std::move(a));
    EXPECT_EQ(b.size(), 39u);
    EXPECT_EQ(b.FrontLen(), 101u);
    EXPECT_TRUE(a.empty());
    EXPECT_EQ(a.bytes(), 0u);
    MbufFifo c;
    c.Push(rte_pktmbuf_alloc(pool_));
    c = std::move(b);  // frees c's own frame, takes b's
    EXPECT_EQ(c.size(), 39u);
    EXPECT_TRUE(b.empty());
    b.Push(rte_pktmbuf_alloc(pool_));  // the moved-from FIFO is usable
    EXPECT_EQ(b.size(), 1u);
  }  // b, c: every frame freed exactly once
  EXPECT_EQ(rte_mempool_in_use_count(pool_), 1u) << "only the frame popped above";
  rte_pktmbuf_free(first);
}

TEST(SwitchConfigTest, RejectsImpossibleConfigsWithTheField) {
  SwitchConfig c;
  c.name = "sw";
  EXPECT_EQ(SwitchNode::Create(c).message(), "sw: a switch needs at least one port");
  c.ports = {{"p0", BitRate(), 0}};
  EXPECT_EQ(SwitchNode::Create(c).message(), "sw.ports[0].rate: must be > 0");
  c.ports = {{"p0", kGbps, 5000}};
  EXPECT_EQ(SwitchNode::Create(c).message(), "sw.ports[0].vlan: must be 0 (routed) or 1..4094");
}

}  // namespace
}  // namespace rocefab

namespace rocefab {
namespace {

// Keeps the bytes of every frame it receives.
class Recorder final : public Node {
 public:
  Recorder() : Node("recorder") {}
  uint16_t num_ports() const override { return 1; }
  void Receive(Time, uint16_t, rte_mbuf* m) override {
    const auto* d = rte_pktmbuf_mtod(m, const uint8_t*);
    frames.emplace_back(d, d + rte_pktmbuf_data_len(m));
    rte_pktmbuf_free(m);
  }
  rte_mbuf* Dequeue(Time, uint16_t) override { return nullptr; }
  nlohmann::json Stats() const override { return {}; }
  std::vector<std::vector<uint8_t>> frames;
};

// A NIC's own BTH byte 4 (FECN/BECN) and UDP checksum on a frame between two hosts of the same
// ToR are not a ConWeave or CONGA tag: the ToR must deliver them untouched (tags only come from
// the fabric ports).
class AccessPortTagTest : public testing::PoolTest,
                          public ::testing::WithParamInterface<LoadBalancingConfig::Scheme> {};

TEST_P(AccessPortTagTest, HostSetBthByte4IsNotTakenForATag) {
  const Mac router{{0x02, 0x52, 0x53, 0, 0, 1}}, ha{{0x02, 0x48, 0, 0, 0, 1}},
      hb{{0x02, 0x48, 0, 0, 0, 2}};
  SwitchConfig c;
  c.name = "tor";
  c.router_mac = router;
  c.ports = {{"tor/p0", 10 * kGbps, 100}, {"tor/p1", 10 * kGbps, 0}, {"tor/p2", 10 * kGbps, 100}};
  c.svis = {{100, 0x0A010001, 24}};
  c.load_balancing.scheme = GetParam();
  c.load_balancing.conweave_base_rtt = 4 * kUs;
  c.load_balancing.leaf_subnets = {{0x0A010000, 24}, {0x0A020000, 24}};
  RouteGroup up;
  up.members.push_back(NextHop{1, Mac{{0x02, 0x52, 0x53, 0, 0, 2}}});
  c.routes.push_back(RouteConfig{0x0A020000, 16, up});
  auto sw = SwitchNode::Create(c).value();
  Injector a;
  Recorder uplink;
  Recorder b;
  {
    SimRunner r(pool_);
    const uint32_t ia = r.AddNode(&a), is = r.AddNode(sw.get()), iu = r.AddNode(&uplink),
                   ib = r.AddNode(&b);
    ASSERT_TRUE(r.Connect(ia, 0, is, 0, 10 * kGbps, 0).ok());
    ASSERT_TRUE(r.Connect(iu, 0, is, 1, 10 * kGbps, 0).ok());
    ASSERT_TRUE(r.Connect(ib, 0, is, 2, 10 * kGbps, 0).ok());
    sw->AddStaticNeighbor(0, 0x0A010002, ha, 0);
    sw->AddStaticNeighbor(0, 0x0A010003, hb, 2);
    UdpSpec u;
    u.src_mac = ha;
    u.dst_mac = router;
    u.src_ip = 0x0A010002;
    u.dst_ip = 0x0A010003;
    u.sport = 49152;
    u.dport = 4791;
    u.payload_len = 12 + 64 + 4;  // BTH, payload, ICRC
    rte_mbuf* m = BuildUdp(pool_, u);
    uint8_t* d = rte_pktmbuf_mtod(m, uint8_t*);
    d[14 + 20 + 8 + 4] = 0xC0;  // FECN and BECN as a NIC might set them
    d[14 + 20 + 6] = 0x12;      // a UDP checksum
    d[14 + 20 + 7] = 0x34;
    a.Add(m);
    // A forged tag on a frame leaving for the fabric untagged (an ACK takes the ECMP path): the
    // ToR clears the tag's valid bit so no switch downstream trusts it.
    u.dst_ip = 0x0A020005;
    rte_mbuf* f = BuildUdp(pool_, u);
    uint8_t* fd = rte_pktmbuf_mtod(f, uint8_t*);
    fd[14 + 20 + 8] = 0x11;      // BTH opcode: RC Acknowledge
    fd[14 + 20 + 8 + 4] = 0xFF;  // every tag bit set
    a.Add(f);
    r.Run(kMs);
  }
  ASSERT_EQ(b.frames.size(), 1u) << sw->Stats().dump();
  EXPECT_EQ(b.frames[0][14 + 20 + 8 + 4], 0xC0);
  EXPECT_EQ(b.frames[0][14 + 20 + 6], 0x12);
  EXPECT_EQ(b.frames[0][14 + 20 + 7], 0x34);
  ASSERT_EQ(uplink.frames.size(), 1u) << sw->Stats().dump();
  EXPECT_EQ(uplink.frames[0][14 + 20 + 8 + 4], 0x7F)
      << "the valid bit must be cleared, the rest left";
  EXPECT_EQ(sw->Stats()["host_tag_bits_cleared"], 1);
  sw.reset();
}

INSTANTIATE_TEST_SUITE_P(Schemes, AccessPortTagTest,
                         ::testing::Values(LoadBalancingConfig::Scheme::kConga,
                                           LoadBalancingConfig::Scheme::kConweave),
                         [](const auto& info) {
                           return std::string(LoadBalancingSchemeName(info.param));
                         });

}  // namespace
}  // namespace rocefab

namespace rocefab {
namespace {

// ConWeave's destination ToR holds new-path frames until the old path's TAIL (or a deadline).
// Held frames take buffer (the shared pool, their ingress PG, their egress queue's count: PFC and
// the thresholds see them) but wait outside the egress queue, so ECN marking does not count them:
// in the reference they sit in VOQs outside any queue, on Tofino2 in a reorder queue of their own.
// A frame of another flow that leaves for the same host while 20 frames are held is not marked,
// although the held bytes are 10 times ECN's Kmax.
// ConWeave's destination ToR "tor1" of 10.2.0.0/24: its host on port 0 (VLAN 100), one uplink
// per MAC of `uplinks` on ports 1.. (an ECMP group towards the source ToR's 10.1.0.0/16), 10 Gb/s.
SwitchConfig ConweaveDestinationTor(const Mac& router, const std::vector<Mac>& uplinks) {
  SwitchConfig c;
  c.name = "tor1";
  c.router_mac = router;
  c.ports = {{"tor1/p0", 10 * kGbps, 100}};
  RouteGroup up;
  for (size_t i = 0; i < uplinks.size(); ++i) {
    c.ports.push_back({"tor1/p" + std::to_string(i + 1), 10 * kGbps, 0});
    up.members.push_back(NextHop{static_cast<uint16_t>(i + 1), uplinks[i]});
  }
  c.svis = {{100, 0x0A020001, 24}};
  c.load_balancing.scheme = LoadBalancingConfig::Scheme::kConweave;
  c.load_balancing.conweave_base_rtt = 4 * kUs;
  c.load_balancing.leaf_subnets = {{0x0A010000, 24}, {0x0A020000, 24}};
  c.routes.push_back(RouteConfig{0x0A010000, 16, up});
  return c;
}

class ConweaveHeldEcnTest : public testing::PoolTest {};

TEST_F(ConweaveHeldEcnTest, HeldFramesTakeBufferButAreNotInTheQueueEcnMarksBy) {
  const Mac router{{0x02, 0x52, 0x53, 0, 0, 1}}, host{{0x02, 0x48, 0, 0, 0, 1}},
      spine{{0x02, 0x52, 0x53, 0, 0, 2}};
  SwitchConfig c = ConweaveDestinationTor(router, {spine});
  const uint8_t q = c.qos.tc_to_queue[c.qos.Classify(26, false, 0)];
  c.wred[q].enabled = true;
  c.wred[q].kmin = 1'000;
  c.wred[q].kmax = 2'000;
  c.wred[q].pmax = 1.0;
  c.wred[q].mark_on_dequeue = true;
  auto sw = SwitchNode::Create(c).value();
  Injector fabric;
  Recorder h;
  // A RoCEv2 frame from a host behind another ToR to the host here: ECT(0), DSCP 26, with a
  // ConWeave tag (valid, DATA, phase `phase`, epoch 1) or none.
  auto frame = [&](uint16_t sport, bool tagged) {
    UdpSpec u;
    u.src_mac = spine;
    u.dst_mac = router;
    u.src_ip = 0x0A010002;
    u.dst_ip = 0x0A020002;
    u.sport = sport;
    u.dport = 4791;
    u.dscp = 26;
    u.ecn = 2;
    u.payload_len = 12 + 1024 + 4;  // BTH, payload, ICRC
    rte_mbuf* m = BuildUdp(pool_, u);
    uint8_t* d = rte_pktmbuf_mtod(m, uint8_t*);
    d[14 + 20 + 8] = 0x0A;                                    // BTH opcode: RDMA WRITE middle
    if (tagged) d[14 + 20 + 8 + 4] = 0x80 | 1 << 4 | 1 << 2;  // valid, DATA, phase 1, epoch 1
    return m;
  };
  // The first frame the destination sees of this flow's epoch is phase 1: the old path's TAIL
  // has not come, so all 20 are held (for the default wait).
  for (int i = 0; i < 20; ++i) fabric.Add(frame(50000, true));
  fabric.Add(frame(50001, false));  // another flow, untagged: forwarded at once
  nlohmann::json during;
  {
    SimRunner r(pool_);
    const uint32_t ifab = r.AddNode(&fabric), is = r.AddNode(sw.get()), ih = r.AddNode(&h);
    ASSERT_TRUE(r.Connect(ifab, 0, is, 1, 10 * kGbps, 0).ok());
    ASSERT_TRUE(r.Connect(ih, 0, is, 0, 10 * kGbps, 0).ok());
    sw->AddStaticNeighbor(0, 0x0A020002, host, 0);
    r.Run(50 * kUs);  // all 21 frames arrived; the 20 are still held
    ASSERT_EQ(h.frames.size(), 1u) << sw->Stats().dump();
    EXPECT_GE(sw->queue_bytes(0, q), 20 * 1000) << "held frames count in the egress queue's buffer";
    during = sw->Stats();
    r.Run(kMs);  // the default wait ends: released, in order
  }
  ASSERT_EQ(h.frames.size(), 21u) << sw->Stats().dump();
  EXPECT_EQ(h.frames[0][14 + 1] & 3, 2) << "marked CE by the depth of frames that were held";
  EXPECT_EQ(h.frames[0][14 + 20 + 1], 0x51) << "the untagged flow's frame came first";
  for (size_t i = 1; i < h.frames.size(); ++i) {
    EXPECT_EQ(h.frames[i][14 + 20 + 8 + 4], 0) << i << ": the tag is scrubbed";
  }
  EXPECT_GE(during["conweave"]["held_bytes_peak"].get<int64_t>(), 20 * 1000) << during.dump();
  EXPECT_EQ(sw->queue_bytes(0, q), 0) << "released frames left and gave their buffer back";
  sw.reset();
}

// Under the reference's ECMP (switch/ecmp.h) a ConWeave RTT_REPLY goes back along its flow's
// ACK path, as the reference's SendReply does (the data's ports swapped, hashed by its flow
// ECMP): the destination ToR writes the data's IPv4 identification (the reference's destination
// port) into the reply's UDP source port and the data's UDP source port into the reply's IPv4
// identification, and takes the member MurmurHash3 gives (reply source, reply destination,
// sport, dport) at its node id.
class ConweaveReplyPathTest : public testing::PoolTest {};

TEST_F(ConweaveReplyPathTest, RepliesTakeTheFlowsAckPathUnderTheReferencesEcmp) {
  const Mac router{{0x02, 0x52, 0x53, 0, 0, 1}}, host{{0x02, 0x48, 0, 0, 0, 1}},
      spine{{0x02, 0x52, 0x53, 0, 0, 2}};
  std::vector<Mac> spines;
  for (uint8_t i = 1; i <= 4; ++i) spines.push_back(Mac{{0x02, 0x52, 0x53, 0, 1, i}});
  SwitchConfig c = ConweaveDestinationTor(router, spines);
  c.ecmp.function = EcmpConfig::Function::kNs3Murmur3;
  c.ecmp.node_id = 131;
  auto addresses = std::make_shared<FlatMap<Ipv4, Ipv4>>();
  (*addresses)[0x0A010002] = Ns3NodeAddress(3);
  (*addresses)[0x0A020002] = Ns3NodeAddress(20);
  c.ecmp.reference_addresses = addresses;
  auto sw = SwitchNode::Create(c).value();
  Injector fabric;  // on uplink 1: also takes the replies drawn onto member 0
  Recorder h;
  std::array<Recorder, 3> uplinks;
  constexpr int kFlows = 16;
  std::map<uint16_t, uint16_t> want_port;  // data sport -> the uplink its reply must take
  for (int i = 0; i < kFlows; ++i) {
    UdpSpec u;
    u.src_mac = spine;
    u.dst_mac = router;
    u.src_ip = 0x0A010002;
    u.dst_ip = 0x0A020002;
    u.sport = static_cast<uint16_t>(10000 + i);  // the reference's ports of flow i
    u.ip_id = static_cast<uint16_t>(100 + 3 * i);
    u.dport = 4791;
    u.dscp = 26;
    u.payload_len = 12 + 1024 + 4;  // BTH, payload, ICRC
    rte_mbuf* m = BuildUdp(pool_, u);
    uint8_t* d = rte_pktmbuf_mtod(m, uint8_t*);
    d[14 + 20 + 8] = 0x0A;                                 // BTH opcode: RDMA WRITE middle
    d[14 + 20 + 8 + 4] = 0x80 | 1 << 5 | 0 << 4 | 1 << 2;  // valid, RTT_REQUEST, phase 0, epoch 1
    fabric.Add(m);
    want_port[u.sport] = static_cast<uint16_t>(
        1 + Ns3EcmpMember(c.ecmp, 0x0A020002, 0x0A010002, u.ip_id, u.sport, 4));
  }
  {
    SimRunner r(pool_);
    const uint32_t is = r.AddNode(sw.get());
    ASSERT_TRUE(r.Connect(r.AddNode(&h), 0, is, 0, 10 * kGbps, 0).ok());
    ASSERT_TRUE(r.Connect(r.AddNode(&fabric), 0, is, 1, 10 * kGbps, 0).ok());
    for (uint16_t i = 0; i < 3; ++i) {
      ASSERT_TRUE(r.Connect(r.AddNode(&uplinks[i]), 0, is, 2 + i, 10 * kGbps, 0).ok());
    }
    sw->AddStaticNeighbor(0, 0x0A020002, host, 0);
    r.Run(kMs);
  }
  ASSERT_EQ(h.frames.size(), static_cast<size_t>(kFlows)) << sw->Stats().dump();
  size_t replies = fabric.received_, on_member0 = 0;
  for (const auto& [sport, port] : want_port) on_member0 += port == 1;
  EXPECT_EQ(fabric.received_, on_member0) << "replies drawn onto uplink 1";
  std::set<uint16_t> used;
  for (uint16_t i = 0; i < 3; ++i) {
    for (const auto& f : uplinks[i].frames) {
      ASSERT_GE(f.size(), 14u + 20 + 8 + 6);
      const uint16_t reply_sport = static_cast<uint16_t>(f[14 + 20] << 8 | f[14 + 20 + 1]);
      const uint16_t reply_ip_id = static_cast<uint16_t>(f[14 + 4] << 8 | f[14 + 5]);
      const uint16_t data_sport =
          static_cast<uint16_t>(f[14 + 20 + 8 + 2] << 8 | f[14 + 20 + 8 + 3]);
      EXPECT_EQ(reply_ip_id, data_sport) << "the reply's dport is the data's sport";
      EXPECT_EQ(reply_sport, 100 + 3 * (data_sport - 10000)) << "its sport the data's dport";
      ASSERT_TRUE(want_port.count(data_sport)) << data_sport;
      EXPECT_EQ(want_port[data_sport], 2 + i) << "flow " << data_sport;
      ++replies;
      used.insert(static_cast<uint16_t>(2 + i));
    }
  }
  EXPECT_EQ(replies, static_cast<size_t>(kFlows)) << sw->Stats().dump();
  EXPECT_GE(used.size() + (on_member0 > 0), 3u) << "16 flows spread over the uplinks";
  sw.reset();
}

}  // namespace
}  // namespace rocefab

// The "compat" models (topo/compat.h): link bytes per frame under Ethernet and under the reference
// ns-3 simulator's point-to-point links, the two ideal-FCT rules, and the reference's buffer
// admission (a lossless PG over its threshold is paused but keeps taking shared-pool bytes).
#include "topo/compat.h"

#include <gtest/gtest.h>

#include "common/wire/headers.h"
#include "common/wire/pfc_frame.h"
#include "common/wire/roce_headers.h"
#include "common/wire/wire_model.h"
#include "fabric/plan.h"
#include "switch/ecmp.h"
#include "switch/mmu.h"
#include "tests/support/test_pool.h"
#include "topo/scenario.h"

namespace rocefab {
namespace {

using Pair = std::pair<int64_t, int64_t>;

class WireModelTest : public testing::PoolTest {
 protected:
  rte_mbuf* Roce(RoceOp op, uint32_t payload) {
    RoceFrameSpec s;
    s.src_ip = 0x0A010002;
    s.dst_ip = 0x0A020002;
    s.op = op;
    s.payload_len = payload;
    s.dma_len = payload;
    return BuildRoce(pool_, s);
  }
  // Both models' bytes for `m`, which is freed.
  std::pair<int64_t, int64_t> Bytes(rte_mbuf* m) {
    EXPECT_NE(m, nullptr);
    if (m == nullptr) return {-1, -1};
    const auto r = std::make_pair(EthernetWire::Instance().FrameBytes(m),
                                  Ns3PppWire::Instance().FrameBytes(m));
    EXPECT_EQ(r.first, WireBytes(rte_pktmbuf_pkt_len(m)));
    rte_pktmbuf_free(m);
    return r;
  }
};

TEST_F(WireModelTest, DataPacketsCarryTheReferencesThirtySixHeaderBytes) {
  // 1000-byte payload: Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 + ICRC 4 + FCS 4 + preamble/IFG 20.
  EXPECT_EQ(Bytes(Roce(RoceOp::kWriteMiddle, 1000)), Pair(1082, 1036));
  // The RETH of the first packet is not payload: the reference sends none.
  EXPECT_EQ(Bytes(Roce(RoceOp::kWriteFirst, 1000)).second, 1036);
  EXPECT_EQ(Bytes(Roce(RoceOp::kWriteOnly, 1000)).first, 1098);
  // A payload that is not a multiple of 4 is padded in RoCEv2, not in the reference.
  EXPECT_EQ(Bytes(Roce(RoceOp::kSendOnly, 995)).second, 995 + 36);
  EXPECT_EQ(Bytes(Roce(RoceOp::kReadResponseOnly, 500)).second, 536);  // AETH is a header
}

TEST_F(WireModelTest, AcksPfcAndCnpsTakeTheReferencesSizes) {
  EXPECT_EQ(Bytes(Roce(RoceOp::kAck, 0)), Pair(86, 48));
  EXPECT_EQ(Bytes(Roce(RoceOp::kCnp, 0)).second, 0) << "the reference flags its ACK instead";
  const Mac mac{{2, 0, 0, 0, 0, 1}};
  std::array<uint16_t, 8> quanta{};
  quanta[3] = 977;
  EXPECT_EQ(Bytes(BuildPfc(pool_, mac, 1 << 3, quanta)), Pair(84, 31));
  EXPECT_EQ(Bytes(BuildArp(pool_, false, mac, 0x0A010001, mac, 0x0A010002)).second, 30);
  // Other IPv4: its total length + PPP. ICMP echo with 56 data bytes: IPv4 20 + ICMP 8 + 56.
  EXPECT_EQ(Bytes(BuildIcmpEcho(pool_, false, mac, mac, 1, 2, 7, 1, 56)).second, 86);
  EXPECT_EQ(Ns3PppWire::Instance().MinFrameBytes(), 0);
}

TEST_F(WireModelTest, GarbageIsChargedAsEthernet) {
  rte_mbuf* m = rte_pktmbuf_alloc(pool_);
  ASSERT_NE(m, nullptr);
  uint8_t* p = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, 40));
  std::memset(p, 0, 40);
  p[12] = 0x08;  // IPv4 EtherType, then an IHL of 0
  EXPECT_EQ(Ns3PppWire::Instance().FrameBytes(m), WireBytes(40));
  rte_pktmbuf_trim(m, 30);  // 10 bytes: not even an Ethernet header
  EXPECT_EQ(Ns3PppWire::Instance().FrameBytes(m), WireBytes(10));
  rte_pktmbuf_free(m);
}

// A switch buffer holds what the reference's MMU charges (p->GetSize(): the packet with its PPP
// header), the link's bytes; Ethernet buffers hold the frame without FCS, not preamble or gap.
TEST_F(WireModelTest, BuffersHoldTheReferencesPacketSizes) {
  const auto buffer = [](rte_mbuf* m) {
    const auto r = std::make_pair(EthernetWire::Instance().BufferBytes(m),
                                  Ns3PppWire::Instance().BufferBytes(m));
    rte_pktmbuf_free(m);
    return r;
  };
  EXPECT_EQ(buffer(Roce(RoceOp::kWriteMiddle, 1000)), Pair(1058, 1036));
  EXPECT_EQ(buffer(Roce(RoceOp::kAck, 0)), Pair(62, 48));
  EXPECT_EQ(buffer(Roce(RoceOp::kCnp, 0)).second, 0);
  rte_mbuf* m = rte_pktmbuf_alloc(pool_);
  ASSERT_NE(m, nullptr);
  std::memset(rte_pktmbuf_append(m, 40), 0, 40);  // does not parse: its length
  EXPECT_EQ(buffer(m), Pair(40, 40));
}

TEST(CompatTest, TheReferencesIdealFctRule) {
  auto m = CompatModel::Named("conweave-ns3");
  ASSERT_TRUE(m.ok()) << m.message();
  const CompatModel& ns3 = *m.value();
  const PathShape cross{4, 1 * kUs, 100 * kGbps}, local{2, 1 * kUs, 100 * kGbps};
  // Cross-ToR: 2 x 4 us + 4 x 80 ns = 8.32 us (the reference's 1 BDP of 104,000 B at 100 Gb/s).
  EXPECT_EQ(ns3.BaseRtt(cross, 1000), 8320 * kNs);
  EXPECT_EQ(ns3.BaseRtt(local, 1000), 4160 * kNs);
  // 4,995 B = 5 packets: (4,995 + 5 x 48) x 8 / 100 = 418.8 ns, truncated to 418.
  EXPECT_EQ(ns3.IdealFct(4995, 1000, 100 * kGbps, 8320 * kNs), (8320 + 418) * kNs);
  EXPECT_EQ(ns3.IdealFct(1000, 1000, 100 * kGbps, 0), 83 * kNs);  // one packet, 1,048 B
  EXPECT_EQ(ns3.IdealFct(1001, 1000, 100 * kGbps, 0), 87 * kNs);  // two packets, 1,097 B: 87.76
  EXPECT_EQ(ns3.ConweaveBaseRtt(1 * kUs, 100 * kGbps, 1000), 4 * kUs);
  EXPECT_EQ(ns3.wire().name(), "conweave-ns3");
  // rocefab's own rule: every wire byte (82 per packet + RETH 16) and store-and-forward.
  const CompatModel& none = CompatModel::None();
  EXPECT_EQ(none.IdealFct(1000, 1000, 100 * kGbps, 0), TxTime(1000 + 82 + 16, 100 * kGbps));
  EXPECT_EQ(none.BaseRtt(cross, 1000),
            8 * kUs + 3 * TxTime(1082, 100 * kGbps) + 4 * TxTime(86, 100 * kGbps));
  EXPECT_FALSE(CompatModel::Named("ns3").ok());
}

// The reference's flow ECMP (switch-node.cc EcmpHash, MurmurHash3_x86_32 over 12 bytes): values
// computed with the reference's own function, compiled here once (2026-12-06).
TEST(CompatTest, TheReferencesEcmpHashIsMurmurHash3OfItsAddressesAndPorts) {
  EXPECT_EQ(Ns3NodeAddress(0), 0x0b000001u);
  EXPECT_EQ(Ns3NodeAddress(9), 0x0b000901u);
  EXPECT_EQ(Ns3NodeAddress(256), 0x0b010001u);
  EXPECT_EQ(Ns3EcmpHash(0x0b000901, 0x0b000501, 10000, 100, 128), 0x5af3036cu);
  EXPECT_EQ(Ns3EcmpHash(0x0b000101, 0x0b007f01, 10007, 123, 143), 0x71197a38u);
  EXPECT_EQ(Ns3EcmpHash(0x0b010001, 0x0b000001, 65535, 4791, 320), 0x5ee7a1a1u);
  // rocefab addresses are translated to the reference's, then the member is hash % n.
  EcmpConfig c;
  c.function = EcmpConfig::Function::kNs3Murmur3;
  c.node_id = 128;
  auto m = std::make_shared<FlatMap<Ipv4, Ipv4>>();
  (*m)[0x0a010002] = Ns3NodeAddress(9);
  (*m)[0x0a010003] = Ns3NodeAddress(5);
  c.reference_addresses = m;
  EXPECT_EQ(Ns3EcmpMember(c, 0x0a010002, 0x0a010003, 10000, 100, 8), 0x5af3036cu % 8);
  EXPECT_EQ(Ns3EcmpMember(c, 0x0b000901, 0x0b000501, 10000, 100, 7), 0x5af3036cu % 7)
      << "an address outside the map is hashed as it is";
}

// Under the model the planner gives each switch the reference's node id (hosts 0..H-1 first,
// then the switches in topology order), every switch the host address map, every NIC a constant
// IPv4 identification per QP, and orders each ECMP group by ascending node id, whatever the
// link order.
TEST(CompatTest, TheReferencesEcmpTakesItsNodeIdsAddressesAndNextHopOrder) {
  nlohmann::json j = nlohmann::json::parse(R"({
    "name": "ecmp", "duration": "1ms",
    "topology": {
      "switches": [{"name": "tor0", "role": "tor", "subnet": "10.1.0.0/24"},
                   {"name": "tor1", "role": "tor", "subnet": "10.2.0.0/24"},
                   {"name": "spine0", "role": "spine"}, {"name": "spine1", "role": "spine"}],
      "hosts": [{"name": "h0", "tor": "tor0", "ip": "10.1.0.2", "kind": "builtin"},
                {"name": "h1", "tor": "tor1", "ip": "10.2.0.2", "kind": "builtin"}],
      "links": [{"a": "tor0", "b": "h0", "rate": "100Gbps"}, {"a": "tor1", "b": "h1", "rate": "100Gbps"},
                {"a": "tor0", "b": "spine1", "rate": "100Gbps"}, {"a": "tor0", "b": "spine0", "rate": "100Gbps"},
                {"a": "tor1", "b": "spine0", "rate": "100Gbps"}, {"a": "tor1", "b": "spine1", "rate": "100Gbps"}]
    }
  })");
  auto plain = Scenario::FromJson(j, ".");
  ASSERT_TRUE(plain.ok()) << plain.message();
  auto pp = PlanFabric(plain.value());
  ASSERT_TRUE(pp.ok()) << pp.message();
  EXPECT_EQ(pp.value().switches[0].ecmp.function, EcmpConfig::Function::kRteJhash);
  EXPECT_FALSE(pp.value().hosts[0].rnic.ip_id_per_qp);
  j["compat"] = "conweave-ns3";
  auto ns3 = Scenario::FromJson(j, ".");
  ASSERT_TRUE(ns3.ok()) << ns3.message();
  auto np = PlanFabric(ns3.value());
  ASSERT_TRUE(np.ok()) << np.message();
  const FabricPlan& plan = np.value();
  for (size_t i = 0; i < plan.switches.size(); ++i) {
    const EcmpConfig& e = plan.switches[i].ecmp;
    EXPECT_EQ(e.function, EcmpConfig::Function::kNs3Murmur3) << plan.switches[i].name;
    EXPECT_EQ(e.node_id, 2 + i) << plan.switches[i].name;
    ASSERT_NE(e.reference_addresses, nullptr);
    EXPECT_EQ(e.reference_addresses->at(0x0a010002), Ns3NodeAddress(0));
    EXPECT_EQ(e.reference_addresses->at(0x0a020002), Ns3NodeAddress(1));
  }
  EXPECT_TRUE(plan.hosts[0].rnic.ip_id_per_qp);
  EXPECT_TRUE(plan.hosts[1].rnic.ip_id_per_qp);
  // The reference's first DCQCN cut one T_dec after the first CNP; the default cuts at once.
  EXPECT_EQ(plan.hosts[0].rnic.dcqcn_cfg.first_decrease_delay,
            plan.hosts[0].rnic.dcqcn_cfg.decrease_interval);
  EXPECT_GT(plan.hosts[0].rnic.dcqcn_cfg.first_decrease_delay, 0);
  EXPECT_EQ(pp.value().hosts[0].rnic.dcqcn_cfg.first_decrease_delay, 0);
  // tor0 (ports: h0, spine1, spine0): towards tor1's subnet, spine0 (node 4) before spine1 (5);
  // without the model, link order.
  auto group_to_tor1 = [](const FabricPlan& p) {
    for (const auto& r : p.switches[0].routes) {
      if (r.prefix == 0x0a020000 && r.len == 24) return r.group.members;
    }
    return std::vector<NextHop>{};
  };
  const auto ordered = group_to_tor1(plan);
  ASSERT_EQ(ordered.size(), 2u);
  EXPECT_EQ(ordered[0].port, 2);
  EXPECT_EQ(ordered[1].port, 1);
  const auto linked = group_to_tor1(pp.value());
  ASSERT_EQ(linked.size(), 2u);
  EXPECT_EQ(linked[0].port, 1);
  EXPECT_EQ(linked[1].port, 2);
}

TEST(CompatTest, TheScenarioKeySetsPfcDefaultsThatExplicitKeysOverride) {
  auto base = [](nlohmann::json extra) {
    nlohmann::json j = {
        {"name", "c"},
        {"topology",
         {{"clos", {{"tors", 1}, {"spines", 1}, {"hosts_per_tor", 2}, {"host_kind", "builtin"}}}}}};
    if (extra.is_object()) j.update(extra);
    return Scenario::FromJson(j, ".");
  };
  auto plain = base(nlohmann::json::object());
  ASSERT_TRUE(plain.ok()) << plain.message();
  EXPECT_EQ(plain.value().compat->name(), "none");
  EXPECT_EQ(plain.value().sw.buffer.lossless.pg.xon_offset, 4608);
  EXPECT_FALSE(plain.value().sw.pfc.xoff_every_frame);
  EXPECT_TRUE(plain.value().sw.load_balancing.conweave.charge_held_to_buffer);
  auto ns3 = base({{"compat", "conweave-ns3"}});
  ASSERT_TRUE(ns3.ok()) << ns3.message();
  const Scenario& s = ns3.value();
  EXPECT_EQ(s.compat->name(), "conweave-ns3");
  EXPECT_EQ(s.sw.pfc.pause_time, 5 * kUs);
  EXPECT_TRUE(s.sw.pfc.xoff_every_frame);
  EXPECT_TRUE(s.sw.buffer.lossless_shared_beyond_limit);
  EXPECT_EQ(s.sw.buffer.lossless.pg.xon_offset, 16);
  EXPECT_FALSE(s.sw.load_balancing.conweave.charge_held_to_buffer) << "held frames outside the MMU";
  auto over = base({{"compat", "conweave-ns3"},
                    {"pfc", {{"pause_quanta", 65535}, {"xoff_every_frame", false}}},
                    {"buffer", {{"xon_offset", "2KiB"}}},
                    {"load_balancing",
                     {{"scheme", "conweave"}, {"conweave", {{"charge_held_to_buffer", true}}}}}});
  ASSERT_TRUE(over.ok()) << over.message();
  EXPECT_EQ(over.value().sw.pfc.pause_time, 0);
  EXPECT_FALSE(over.value().sw.pfc.xoff_every_frame);
  EXPECT_EQ(over.value().sw.buffer.lossless.pg.xon_offset, 2048);
  EXPECT_TRUE(over.value().sw.load_balancing.conweave.charge_held_to_buffer);
  auto bad = base({{"compat", "ns-3"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("compat"), std::string::npos) << bad.message();
  auto both = base({{"pfc", {{"pause_quanta", 100}, {"pause_time", "5us"}}}});
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.message().find("pfc.pause_time"), std::string::npos) << both.message();
}

// The reference's admission: over its dynamic threshold a lossless PG is paused, and its frames
// still go to the shared pool; only a full pool sends them to headroom.
TEST(CompatTest, LosslessPgOverItsThresholdKeepsTakingTheSharedPool) {
  MmuConfig c;
  c.buffer_bytes = 100'000;
  c.num_ports = 2;
  c.lossless_pg_mask = 1 << 3;
  c.lossless_queue_mask = 1 << 3;
  PgProfile ll;
  ll.dynamic_th = 0;  // alpha 1: XOFF at 40,000 B of an 80,000 B pool
  ll.xoff = 10'000;
  ll.xon_offset = 16;
  c.lossless_pg = {ll, ll};
  for (bool beyond : {false, true}) {
    c.lossless_shared_beyond_limit = beyond;
    auto r = SharedBufferMmu::Create(c);
    ASSERT_TRUE(r.ok()) << r.message();
    SharedBufferMmu& m = r.value();
    int xoffs = 0, headroom = 0, accepted = 0;
    for (int i = 0; i < 100; ++i) {
      const AdmitResult a = m.Admit(0, 3, 1, 3, 1000);
      if (a.verdict != AdmitResult::Verdict::kAccept) break;
      ++accepted;
      xoffs += a.xoff;
      headroom += a.bucket == MmuBucket::kHeadroom;
      if (accepted == 40) {
        EXPECT_TRUE(m.xoff(0, 3)) << "XOFF at the threshold either way";
      }
    }
    EXPECT_EQ(xoffs, 1);
    EXPECT_EQ(headroom, 10) << "headroom fills last";
    EXPECT_EQ(accepted, beyond ? 90 : 50) << "the shared pool (80 KB) before headroom (10 KB)";
    EXPECT_EQ(m.pg_shared_bytes(0, 3), beyond ? 80'000 : 40'000);
  }
}

}  // namespace
}  // namespace rocefab

// Scenario tests: whole fabrics in the sim runner, asserting the figures that matter.
#include <gtest/gtest.h>
#include <rte_ip.h>
#include <rte_udp.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "common/wire/roce_headers.h"
#include "run/sim_fabric.h"
#include "run/sim_run.h"
#include "tests/support/clos_scenario.h"
#include "tests/support/test_pool.h"
#include "topo/clos.h"

namespace rocefab {
namespace {

class FabricTest : public testing::PoolTest {
 protected:
  Scenario Clos(int spines, int tors, int hosts_per_tor, BitRate rate = 10 * kGbps) {
    Scenario s = testing::ClosScenario("test",
                                       {.spines = spines,
                                        .tors = tors,
                                        .hosts_per_tor = hosts_per_tor,
                                        .link_rate = rate,
                                        .cable_m = 5},
                                       5 * kMs);
    return s;
  }
  static TrafficItem Udp(std::string from, std::string to, BitRate rate, int count, Time start,
                         int size = 1000) {
    TrafficItem t;
    t.spec = UdpTraffic{};
    t.from = std::move(from);
    t.to = std::move(to);
    t.udp().rate = rate;
    t.udp().count = count;
    t.start = start;
    t.udp().size = size;
    return t;
  }
  static TrafficItem Ping(std::string from, std::string to, int count, Time start) {
    TrafficItem t;
    t.spec = PingTraffic{};
    t.from = std::move(from);
    t.to = std::move(to);
    t.ping().count = count;
    t.ping().interval = 100 * kUs;
    t.start = start;
    return t;
  }
};

// The progress line's estimate runs to the workload's last flow start, not to the duration (a
// run skips the idle time after its traffic): half of a 10 ms trace done in 4 s leaves ~4 s
// whatever the duration; from the last start it counts the flows still running instead.
TEST(ProgressTest, TimeLeftRunsToTheLastFlowStartThenCountsRunningFlows) {
  EXPECT_EQ(ProgressTimeLeft(5 * kMs, 30 * kMs, 10 * kMs, 4.0, 100), "about 4 s left");
  EXPECT_EQ(ProgressTimeLeft(5 * kMs, 30 * kMs, 30 * kMs, 4.0, -1), "about 20 s left");
  EXPECT_EQ(ProgressTimeLeft(12 * kMs, 30 * kMs, 10 * kMs, 9.0, 7), "all flows started, 7 running");
  EXPECT_EQ(ProgressTimeLeft(30 * kMs, 30 * kMs, 10 * kMs, 9.5, 0), "done");
  // A workload whose flows all start at once; the traffic end past the duration is the duration.
  EXPECT_EQ(ProgressTimeLeft(kMs, 5 * kMs, 0, 1.0, 9783), "all flows started, 9783 running");
  EXPECT_EQ(ProgressTimeLeft(kMs, 5 * kMs, 9 * kMs, 2.0, 3), "about 8 s left");
  EXPECT_EQ(ProgressTimeLeft(90 * kSec, 100 * kSec, 100 * kSec, 3600.0, -1),
            "about 6 min 40 s left");
}

TEST_F(FabricTest, AllPairsUdpDeliversEveryPacket) {
  Scenario s = Clos(2, 4, 2);
  s.traffic.push_back(Udp("all", "all", 200 * kMbps, 40, 0, 500));  // 56 flows
  auto f = SimFabric::Create(s, pool_);
  ASSERT_TRUE(f.ok()) << f.message();
  f.value()->Run();
  const auto sum = f.value()->Summary();
  ASSERT_EQ(sum["flows"].size(), 56u);
  for (const auto& fl : sum["flows"]) {
    EXPECT_EQ(fl["sent"], 40) << fl.dump();
    EXPECT_EQ(fl["received"], 40) << fl.dump();
    EXPECT_EQ(fl["out_of_order"], 0) << fl.dump();
  }
  for (size_t i = 0; i < f.value()->num_switches(); ++i) {
    EXPECT_EQ(f.value()->sw(i).total_drops(), 0u) << f.value()->sw(i).Stats().dump();
  }
}

TEST_F(FabricTest, PerHopLatencyIsSerializationPlusPropagationToThePicosecond) {
  Scenario s = Clos(2, 2, 1);
  s.traffic.push_back(Ping("h0", "h1", 2, 0));  // resolves ARP on both sides first
  s.traffic.push_back(Udp("h0", "h1", kGbps, 1, kMs, 1000));
  auto fr = SimFabric::Create(s, pool_);
  ASSERT_TRUE(fr.ok()) << fr.message();
  SimFabric& f = *fr.value();
  std::vector<std::pair<Time, uint32_t>> arrivals;
  f.runner().SetArriveTap([&](Time now, uint32_t node, uint16_t, const rte_mbuf* m) {
    ParsedFrame p;
    if (ParseFrame(m, &p) == ParseError::kOk && p.proto == kIpProtoUdp && p.dport == 5201) {
      arrivals.emplace_back(now, node);
    }
  });
  f.Run();
  ASSERT_EQ(arrivals.size(), 4u) << "host -> ToR -> spine -> ToR -> host";
  const Time hop = TxTime(WireBytes(14 + 20 + 8 + 1000), 10 * kGbps) + CableDelay(5);
  EXPECT_EQ(hop, 852'800 + 25'000);  // (1042 + 24) B x 800 ps + 5 m x 5 ns
  Time prev = kMs;                   // the host puts the frame on its idle wire at its start time
  for (const auto& [t, node] : arrivals) {
    EXPECT_EQ(t - prev, hop) << "node " << node;
    prev = t;
  }
}

TEST_F(FabricTest, SixteenFlowsUseEverySpine) {
  Scenario s = Clos(4, 2, 8);
  for (int i = 0; i < 8; ++i) {
    s.traffic.push_back(
        Udp("h" + std::to_string(i), "h" + std::to_string(8 + i), 100 * kMbps, 20, 0));
    s.traffic.push_back(
        Udp("h" + std::to_string(8 + i), "h" + std::to_string(i), 100 * kMbps, 20, 0));
  }
  auto fr = SimFabric::Create(s, pool_);
  ASSERT_TRUE(fr.ok()) << fr.message();
  SimFabric& f = *fr.value();
  std::map<uint32_t, std::set<uint16_t>> flows_per_node;  // node -> UDP source ports seen
  f.runner().SetArriveTap([&](Time, uint32_t node, uint16_t, const rte_mbuf* m) {
    ParsedFrame p;
    if (ParseFrame(m, &p) == ParseError::kOk && p.proto == kIpProtoUdp)
      flows_per_node[node].insert(p.sport);
  });
  f.Run();
  int spines_used = 0;
  for (uint32_t sp = 2; sp < 6; ++sp) {  // nodes 0,1 = ToRs; 2..5 = spines (Clos order)
    ASSERT_EQ(f.sw(sp).name(), "spine" + std::to_string(sp - 2));
    EXPECT_FALSE(flows_per_node[sp].empty()) << f.sw(sp).name() << " carried no flow";
    spines_used += !flows_per_node[sp].empty();
  }
  EXPECT_EQ(spines_used, 4);
  const auto sum = f.Summary();
  for (const auto& fl : sum["flows"]) EXPECT_EQ(fl["received"], 20) << fl.dump();
}

TEST_F(FabricTest, SwitchesAnswerPingToTheirAddresses) {
  Scenario s = Clos(2, 2, 1);
  auto fr = SimFabric::Create(s, pool_);
  ASSERT_TRUE(fr.ok());
  SimFabric& f = *fr.value();
  PingSpec p;
  p.id = 9;
  p.count = 3;
  p.interval = 10 * kUs;
  p.dst = s.topology.switches[3].loopback;  // spine1
  f.host(0).AddPing(p);
  p.id = 10;
  p.dst = s.topology.switches[1].gateway();  // the remote ToR's SVI address
  f.host(0).AddPing(p);
  f.Run();
  ASSERT_EQ(f.host(0).pings().size(), 2u);
  EXPECT_EQ(f.host(0).pings()[0].rtts.size(), 3u);
  EXPECT_EQ(f.host(0).pings()[1].rtts.size(), 3u);
  EXPECT_EQ(f.sw("spine1")->Stats()["icmp_echo_replies"], 3);
}

TEST_F(FabricTest, MacAgingFloodsUnknownUnicastThenRelearns) {
  Scenario s = Clos(1, 2, 2);  // tor0: h0, h1; tor1: h2, h3
  s.sw.mac_aging = 200 * kUs;
  s.traffic.push_back(Ping("h0", "h2", 1, 0));                      // ToR0 learns h0 at ~0
  s.traffic.push_back(Udp("h2", "h0", kGbps, 200, 10 * kUs, 500));  // ~4.2 us apart, 0.85 ms
  s.traffic.push_back(Ping("h0", "h2", 1, 600 * kUs));              // h0 speaks again: re-learned
  auto fr = SimFabric::Create(s, pool_);
  ASSERT_TRUE(fr.ok());
  SimFabric& f = *fr.value();
  SwitchNode& tor0 = *f.sw("tor0");
  f.runner().Run(150 * kUs);
  EXPECT_EQ(tor0.unknown_unicast_floods(), 0u) << "h0's entry is fresh";
  f.runner().Run(590 * kUs);
  const uint64_t floods_aged = tor0.unknown_unicast_floods();
  EXPECT_GT(floods_aged, 50u) << "entry aged out at 200 us: frames to h0 must be flooded";
  EXPECT_GT(f.host(1).not_for_me(), 50u) << "h1 receives h0's flooded frames";
  f.runner().Run(605 * kUs);
  const uint64_t after_relearn = tor0.unknown_unicast_floods();
  f.runner().Run(780 * kUs);
  EXPECT_EQ(tor0.unknown_unicast_floods(), after_relearn) << "re-learned: no more floods";
  f.Run();
  EXPECT_EQ(f.Summary()["flows"][0]["received"], 200) << "flooding still delivers to h0";
}

// Same scenario and seed: byte-identical output files.
TEST(DeterminismTest, SameSeedSameBytes) {
  auto sc = Scenario::Load(std::string(ROCEFAB_SOURCE_DIR) + "/configs/scenarios/quickstart.json");
  ASSERT_TRUE(sc.ok()) << sc.message();
  const std::string base = ::testing::TempDir() + "/rocefab_det";
  std::string files[2][3];
  for (int run = 0; run < 3; ++run) {
    SimRunOptions o;
    o.out_dir = base + std::to_string(run);
    o.quiet = true;
    if (run == 2) o.seed_override = 99;
    auto r = RunSim(sc.value(), o);
    ASSERT_TRUE(r.ok()) << r.message();
    EXPECT_EQ(r.value()["mbufs_in_use_after_run"], 0);
    if (run == 2) {
      std::ifstream in(o.out_dir + "/summary.json");
      std::stringstream ss;
      ss << in.rdbuf();
      EXPECT_NE(ss.str(), files[0][0]) << "the seed must change ECMP placement";
      break;
    }
    int k = 0;
    for (const char* name : {"summary.json", "flows.csv", "pings.csv"}) {
      std::ifstream in(o.out_dir + "/" + name);
      std::stringstream ss;
      ss << in.rdbuf();
      files[run][k++] = ss.str();
    }
  }
  for (int k = 0; k < 3; ++k) {
    EXPECT_FALSE(files[0][k].empty());
    EXPECT_EQ(files[0][k], files[1][k]) << "file " << k << " differs between identical runs";
  }
}

}  // namespace
}  // namespace rocefab

namespace rocefab {
namespace {

class DurationBoundTest : public testing::PoolTest {};

// A ping whose count outlasts the scenario stops at `duration` (no probe is sent afterwards),
// and every probe sent gets the drain period to come back: no fake loss at the end of a run.
TEST_F(DurationBoundTest, PingStopsAtDurationWithoutFakeLoss) {
  Scenario s = testing::ClosScenario(
      "bound", {.spines = 1, .tors = 2, .hosts_per_tor = 1, .link_rate = 10 * kGbps}, 1 * kMs);
  TrafficItem t;
  t.spec = PingTraffic{};
  t.from = "h0";
  t.to = "h1";
  t.ping().count = 100;
  t.ping().interval = 300 * kUs;  // probes at 0, 0.3, 0.6, 0.9 ms fit; the other 96 do not
  s.traffic.push_back(t);
  auto f = SimFabric::Create(s, pool_);
  ASSERT_TRUE(f.ok()) << f.message();
  f.value()->RunUntil(s.duration + 10 * kMs);
  const auto p = f.value()->Summary()["pings"][0];
  EXPECT_EQ(p["sent"], 4) << p.dump();
  EXPECT_EQ(p["received"], 4) << p.dump();
}

}  // namespace
}  // namespace rocefab

namespace rocefab {
namespace {

// The sim's frame pool grows as the fabric needs it up to its cap (sim.mbufs): at a cap the
// incast cannot fit in, the frames not built are counted (and warned of); without one the
// same run builds every frame, and a cap it never reaches changes nothing.
TEST(FramePoolTest, ACapTheFabricOutgrowsIsCountedAndAnUnreachedOneChangesNothing) {
  auto sc =
      Scenario::Load(std::string(ROCEFAB_SOURCE_DIR) + "/configs/scenarios/incast-dcqcn.json");
  ASSERT_TRUE(sc.ok()) << sc.message();
  nlohmann::json runs[3];
  const uint32_t caps[3] = {1023, 0, 4194303};
  for (int i = 0; i < 3; ++i) {
    Scenario s = sc.value();
    s.sim.mbufs = caps[i];
    SimRunOptions o;
    o.quiet = true;
    auto r = RunSim(s, o);
    ASSERT_TRUE(r.ok()) << r.message();
    runs[i] = r.value();
    EXPECT_EQ(runs[i]["mbufs_in_use_after_run"], 0) << "cap " << caps[i];
    runs[i].erase("sim_events");
    runs[i].erase("timing");
  }
  EXPECT_GT(runs[0]["mbuf_alloc_failures"].get<uint64_t>(), 100u);
  EXPECT_EQ(runs[1]["mbuf_alloc_failures"], 0);
  EXPECT_EQ(runs[1], runs[2]);
  runs[0].erase("mbuf_alloc_failures");
  runs[1].erase("mbuf_alloc_failures");
  EXPECT_NE(runs[0], runs[1]) << "frames not built change the run";
}

// The pool's data room is sized for the scenario's largest frame (LargestSimFrame): a
// RoCE-only fabric at MTU 4096 and 256 builds every frame; a 1472-byte ping (a 1514-byte frame)
// on a fabric whose RoCE MTU is 256 gets a room for it and is answered.
TEST(FramePoolTest, TheRoomHoldsTheScenariosLargestFrame) {
  auto sc =
      Scenario::Load(std::string(ROCEFAB_SOURCE_DIR) + "/configs/scenarios/incast-dcqcn.json");
  ASSERT_TRUE(sc.ok()) << sc.message();
  for (uint32_t mtu : {4096u, 256u}) {
    Scenario s = sc.value();
    s.nic.mtu = mtu;
    EXPECT_EQ(LargestSimFrame(s), mtu + kRoceMaxOverhead + 3);
    SimRunOptions o;
    o.quiet = true;
    auto r = RunSim(s, o);
    ASSERT_TRUE(r.ok()) << r.message();
    EXPECT_EQ(r.value()["mbuf_alloc_failures"], 0) << "MTU " << mtu;
    const auto& w = r.value()["workload"];
    EXPECT_GT(w["flows"].get<int>(), 0);
    EXPECT_EQ(w["finished"], w["flows"]) << "MTU " << mtu << ": " << w.dump();
  }
  Scenario s = sc.value();
  s.nic.mtu = 256;
  TrafficItem ping;
  ping.from = s.topology.hosts[1].name;
  ping.to = s.topology.hosts[0].name;
  ping.spec = PingTraffic{5, 10 * kUs, 1472};
  s.traffic.push_back(ping);
  EXPECT_EQ(LargestSimFrame(s), 1514);
  SimRunOptions o;
  o.quiet = true;
  auto r = RunSim(s, o);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r.value()["mbuf_alloc_failures"], 0);
  ASSERT_EQ(r.value()["pings"].size(), 1u) << r.value()["pings"].dump();
  EXPECT_EQ(r.value()["pings"][0]["received"], 5) << r.value()["pings"].dump();
}

}  // namespace
}  // namespace rocefab

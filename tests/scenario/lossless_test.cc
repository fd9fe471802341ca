// Lossless-switch scenarios in the sim runner: incast with PFC, pause propagation over hops,
// VLAN-PCP vs DSCP classification across a routed hop, and pcap captures decoded by tshark.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "common/wire/pfc_frame.h"
#include "run/sim_fabric.h"
#include "tests/support/clos_scenario.h"
#include "tests/support/shell.h"
#include "tests/support/test_pool.h"
#include "topo/clos.h"

namespace rocefab {
namespace {

class LosslessTest : public testing::PoolTest {
 protected:
  Scenario Clos(int tors, int hosts_per_tor, BitRate host_rate, BitRate fabric_rate) {
    Scenario s = testing::ClosScenario("lossless",
                                       {.spines = 1,
                                        .tors = tors,
                                        .hosts_per_tor = hosts_per_tor,
                                        .host_rate = host_rate,
                                        .link_rate = fabric_rate,
                                        .cable_m = 5},
                                       20 * kMs);
    s.sw.buffer.size = 4 << 20;
    s.sw.buffer.lossless.pg.xon_offset = 4608;
    return s;
  }
  static void AddIncast(Scenario* s, int first, int last, int to, int dscp, BitRate rate, int count,
                        bool ecn = false) {
    for (int h = first; h <= last; ++h) {
      TrafficItem t;
      t.spec = UdpTraffic{};
      t.from = "h" + std::to_string(h);
      t.to = "h" + std::to_string(to);
      t.udp().rate = rate;
      t.udp().count = count;
      t.udp().size = 1000;
      t.udp().dscp = dscp;
      t.udp().ecn = ecn;
      t.start = 50 * kUs;  // after ARP settles
      s->traffic.push_back(t);
    }
  }
  static uint64_t Delivered(const nlohmann::json& sum) {
    uint64_t n = 0;
    for (const auto& f : sum["flows"]) n += f["received"].get<uint64_t>();
    return n;
  }
};

TEST_F(LosslessTest, EightToOneIncastIsLosslessWithPauseToEverySender) {
  Scenario s = Clos(1, 9, 10 * kGbps, 10 * kGbps);  // h0 receives; h1..h8 send
  AddIncast(&s, 1, 8, 0, 26, 10 * kGbps, 2000);
  auto fr = SimFabric::Create(s, pool_);
  ASSERT_TRUE(fr.ok()) << fr.message();
  SimFabric& f = *fr.value();
  f.Run();
  SwitchNode& tor = *f.sw("tor0");
  EXPECT_EQ(tor.total_drops(), 0u) << tor.Stats()["drops"].dump();
  EXPECT_EQ(tor.drops(DropReason::kLosslessHeadroom), 0u);
  EXPECT_EQ(Delivered(f.Summary()), 16000u);
  const SharedBufferMmu& mmu = *tor.mmu();
  for (uint16_t port = 1; port <= 8; ++port) {  // ToR port p faces host h<p>
    EXPECT_GT(tor.pfc_tx_xoff(port, 3), 0u) << "no XOFF to h" << port;
    EXPECT_GT(tor.pfc_tx_xon(port, 3), 0u) << "no XON to h" << port;
    EXPECT_GT(f.host(port).pause().rx_frames(3), 0u) << "h" << port << " never paused";
    const int64_t xoff = mmu.config().lossless_pg[port].xoff;
    EXPECT_LE(mmu.pg_watermark(port, 3), mmu.shared_pool_bytes() / 8 + xoff)
        << "PG occupancy above its XOFF point plus headroom";
    EXPECT_GT(mmu.pg_watermark(port, 3), 0);
  }
  EXPECT_EQ(tor.pfc_tx_xoff(0, 3), 0u) << "the receiver was never congested";
  EXPECT_EQ(mmu.total_used(), 0) << "buffer drains to zero";
}

TEST_F(LosslessTest, SameIncastInALossyClassDropsAndSendsNoPause) {
  Scenario s = Clos(1, 9, 10 * kGbps, 10 * kGbps);
  AddIncast(&s, 1, 8, 0, 0, 10 * kGbps, 2000);  // DSCP 0: TC0, lossy
  auto fr = SimFabric::Create(s, pool_);
  ASSERT_TRUE(fr.ok());
  SimFabric& f = *fr.value();
  f.Run();
  SwitchNode& tor = *f.sw("tor0");
  EXPECT_GT(tor.drops(DropReason::kEgressLimit) + tor.drops(DropReason::kIngressLimit), 1000u);
  EXPECT_EQ(tor.drops(DropReason::kLosslessHeadroom), 0u);
  for (uint16_t port = 0; port <= 8; ++port) {
    for (uint8_t prio = 0; prio < 8; ++prio) EXPECT_EQ(tor.pfc_tx_xoff(port, prio), 0u);
  }
  EXPECT_EQ(Delivered(f.Summary()) + tor.total_drops(), 16000u)
      << "every frame delivered or counted";
}

TEST_F(LosslessTest, PausePropagatesHopByHopAndClearsAfterTraffic) {
  // Hosts at 10G, fabric at 40G: 4 senders under tor0 fill tor1's port to h4, not the uplinks.
  Scenario s = Clos(2, 4, 10 * kGbps, 40 * kGbps);
  s.output.sample_interval = 20 * kUs;
  AddIncast(&s, 0, 3, 4, 26, 10 * kGbps, 3000);
  auto fr = SimFabric::Create(s, pool_);
  ASSERT_TRUE(fr.ok());
  SimFabric& f = *fr.value();
  const std::string dir = ::testing::TempDir() + "/rocefab_propagation";
  std::filesystem::create_directories(dir);
  ASSERT_TRUE(f.OpenOutputs(dir).ok());
  // Node order: tor0, tor1, spine0, then hosts h0..h7.
  std::map<uint32_t, Time> first_xoff;
  f.runner().SetArriveTap([&](Time now, uint32_t node, uint16_t, const rte_mbuf* m) {
    const auto* d = rte_pktmbuf_mtod(m, const uint8_t*);
    if (d[12] == 0x88 && d[13] == 0x08) {
      PfcFrame pf;
      if (ParsePfc(m, &pf) && pf.quanta[3] != 0 && !first_xoff.count(node)) first_xoff[node] = now;
    }
  });
  f.Run();
  ASSERT_TRUE(first_xoff.count(2)) << "spine never paused by tor1";
  ASSERT_TRUE(first_xoff.count(0)) << "tor0 never paused by the spine";
  Time first_host = kTimeNever;
  for (uint32_t h = 3; h < 7; ++h) {  // h0..h3 are nodes 3..6
    ASSERT_TRUE(first_xoff.count(h)) << "sender h" << h - 3 << " never paused";
    first_host = std::min(first_host, first_xoff[h]);
  }
  EXPECT_LT(first_xoff[2], first_xoff[0]) << "spine pauses before tor0";
  EXPECT_LT(first_xoff[0], first_host) << "tor0 pauses before the senders";
  const Time end = f.runner().now();
  for (size_t i = 0; i < f.num_switches(); ++i) {
    SwitchNode& sw = f.sw(i);
    EXPECT_EQ(sw.total_drops(), 0u) << sw.name();
    EXPECT_EQ(sw.mmu()->total_used(), 0) << sw.name() << " did not drain";
    for (uint16_t p = 0; p < sw.num_ports(); ++p) {
      EXPECT_EQ(sw.xoff_mask(p), 0) << sw.name() << "/p" << p << " still XOFF";
      EXPECT_EQ(sw.paused_mask(p, end), 0) << sw.name() << "/p" << p << " still paused";
      if (sw.pfc_tx_xoff(p, 3) > 0) {
        EXPECT_GT(sw.pfc_tx_xon(p, 3), 0u) << sw.name() << "/p" << p;
      }
    }
  }
  EXPECT_EQ(Delivered(f.Summary()), 12000u);
  // The time series saw the pause.
  std::ifstream ts(dir + "/timeseries.csv");
  std::string line;
  int rows = 0, paused_rows = 0;
  std::getline(ts, line);
  EXPECT_EQ(line.rfind("time_us,switch,port", 0), 0u);
  while (std::getline(ts, line)) {
    ++rows;
    std::vector<std::string> cols;
    std::stringstream ss(line);
    for (std::string c; std::getline(ss, c, ',');) cols.push_back(c);
    ASSERT_EQ(cols.size(), 17u) << line;  // 12 + 2 ConWeave reorder + 3 ingress occupancy columns
    paused_rows += cols[5] != "0";
  }
  EXPECT_GT(rows, 100);
  EXPECT_GT(paused_rows, 0);
}

TEST_F(LosslessTest, VlanPcpLosesLosslessAfterARoutedHopDscpKeepsIt) {
  for (QosTrust trust : {QosTrust::kDscp, QosTrust::kPcp}) {
    Scenario s = Clos(2, 2, 10 * kGbps, 40 * kGbps);
    s.sw.qos.trust = trust;
    AddIncast(&s, 0, 1, 2, 26, 10 * kGbps, 3000);  // h0, h1 (tor0) -> h2 (tor1)
    auto fr = SimFabric::Create(s, pool_);
    ASSERT_TRUE(fr.ok());
    SimFabric& f = *fr.value();
    f.Run();
    SwitchNode& tor0 = *f.sw("tor0");
    SwitchNode& tor1 = *f.sw("tor1");
    // tor0 sees the tag (PCP 3) or DSCP 26: lossless PG3 either way.
    EXPECT_GT(tor0.mmu()->pg_watermark(0, 3), 0);
    EXPECT_EQ(tor0.total_drops(), 0u);
    if (trust == QosTrust::kDscp) {
      EXPECT_EQ(tor1.total_drops(), 0u) << "DSCP survives the routed hop: lossless end to end";
      EXPECT_EQ(Delivered(f.Summary()), 6000u);
    } else {
      EXPECT_GT(tor1.drops(DropReason::kEgressLimit) + tor1.drops(DropReason::kIngressLimit), 0u)
          << tor1.Stats()["drops"].dump() << f.Summary()["flows"].dump()
          << "PCP is gone after the routed hop: the second switch treats the traffic as lossy";
      EXPECT_EQ(tor1.pfc_tx_xoff(2, 3), 0u) << "no PFC from tor1: its PG3 never fills";
    }
  }
}

// Runs tshark with `args` (or, with `raw`, `args` as the whole command) and returns its stdout.
std::string Tshark(const std::string& args, bool raw = false) {
  return testing::ShellOutput(raw ? args : "tshark --disable-heuristic rpcrdma_infiniband " + args);
}

TEST_F(LosslessTest, CapturesDecodeInTsharkWithClassVectorTimesAndEcn) {
  ASSERT_EQ(std::system("command -v tshark >/dev/null 2>&1"), 0)
      << "tshark (the decoding oracle) is not installed: scripts/setup.sh installs it";
  Scenario s = Clos(1, 9, 10 * kGbps, 10 * kGbps);
  s.sw.wred[3].enabled = true;
  s.sw.wred[3].kmin = 20'000;
  s.sw.wred[3].kmax = 100'000;
  s.sw.wred[3].pmax = 1.0;
  AddIncast(&s, 1, 8, 0, 26, 10 * kGbps, 1000, /*ecn=*/true);
  s.output.capture = {"tor0/p0", "tor0/p1"};
  const std::string dir = ::testing::TempDir() + "/rocefab_capture";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  {
    auto fr = SimFabric::Create(s, pool_);
    ASSERT_TRUE(fr.ok());
    ASSERT_TRUE(fr.value()->OpenOutputs(dir).ok());
    fr.value()->Run();
    EXPECT_GT(fr.value()->sw("tor0")->ecn_marked(0, 3), 0u);
  }  // closes the pcaps
  // One capture.pcapng (the default format) with an interface per captured port, named as the
  // scenario names it, with its link speed; capinfos reads the interface blocks.
  const std::string file = dir + "/capture.pcapng";
  const std::string ifaces = Tshark("-r " + file + " -T fields -e frame.interface_name | sort -u");
  EXPECT_EQ(ifaces, "tor0/p0\ntor0/p1\n");
  const std::string info = Tshark("capinfos -M " + file, /*raw=*/true);
  EXPECT_NE(info.find("Name = tor0/p1"), std::string::npos) << info;
  EXPECT_NE(info.find("Speed = 10000000000"), std::string::npos) << info;
  EXPECT_NE(info.find("Time precision = nanoseconds"), std::string::npos) << info;
  // PFC frames the ToR sent to sender h1 (outbound on tor0/p1): class-enable vector 0x0008,
  // times 65535 (XOFF) and 0 (XON).
  const std::string pfc = Tshark("-r " + file +
                                 " -Y 'frame.interface_name == \"tor0/p1\" && macc.opcode == "
                                 "0x0101' -T fields -e frame.packet_flags_direction -e eth.dst "
                                 "-e macc.cbfc.enbv -e macc.cbfc.pause_time.c3");
  ASSERT_FALSE(pfc.empty()) << "no PFC frame decoded";
  int xoff = 0, xon = 0;
  std::istringstream in(pfc);
  for (std::string line; std::getline(in, line);) {
    EXPECT_EQ(line.rfind("0x00000002\t01:80:c2:00:00:01\t0x0008\t", 0), 0u) << line;  // outbound
    xoff += line.ends_with("\t65535");
    xon += line.ends_with("\t0");
  }
  EXPECT_GT(xoff, 0);
  EXPECT_GT(xon, 0);
  // CE-marked data towards the receiver (outbound on tor0/p0): ECN 3 (CE), DSCP 26 kept; the
  // senders' data comes in on tor0/p1 (inbound, direction 1), never CE-marked before tor0.
  const std::string p0 = " -Y 'frame.interface_name == \"tor0/p0\" && ";
  const std::string ce = Tshark("-r " + file + p0 +
                                "ip.dsfield.ecn == 3' -T fields -e frame.packet_flags_direction "
                                "-e ip.dsfield.dscp | sort -u");
  EXPECT_EQ(ce, "0x00000002\t26\n") << "CE-marked frames: direction (outbound) and DSCP";
  const std::string ect =
      Tshark("-r " + file + p0 + "ip.dsfield.ecn == 2' -T fields -e ip.dsfield.dscp");
  EXPECT_FALSE(ect.empty()) << "unmarked ECT(0) frames expected below Kmin";
  const std::string in_ce = Tshark("-r " + file +
                                   " -Y 'frame.interface_name == \"tor0/p1\" && "
                                   "frame.packet_flags_direction == 1 && ip.dsfield.ecn == 3'");
  EXPECT_TRUE(in_ce.empty()) << "CE-marked frames arriving from a sender: " << in_ce;
}

}  // namespace
}  // namespace rocefab

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "common/json_reader.h"
#include "fabric/check.h"
#include "topo/clos.h"
#include "topo/scenario.h"

namespace rocefab {
namespace {

nlohmann::json Good() {
  return nlohmann::json::parse(R"({
    "name": "t", "duration": "1ms",
    "topology": {
      "switches": [{"name": "tor0", "role": "tor", "subnet": "10.1.0.0/24"},
                   {"name": "tor1", "role": "tor", "subnet": "10.1.1.0/24"},
                   {"name": "spine0", "role": "spine"}],
      "hosts": [{"name": "h0", "tor": "tor0", "ip": "10.1.0.2"},
                {"name": "h1", "tor": "tor1", "ip": "10.1.1.2"}],
      "links": [{"a": "tor0", "b": "h0", "rate": "10Gbps", "cable": "2m"},
                {"a": "tor1", "b": "h1", "rate": "10Gbps"},
                {"a": "tor0", "b": "spine0", "rate": "40Gbps"},
                {"a": "tor1", "b": "spine0", "rate": "40Gbps"}]
    },
    "traffic": [{"kind": "ping", "from": "h0", "to": "h1", "count": 3}]
  })");
}

std::string ErrorOf(const nlohmann::json& j) {
  auto r = Scenario::FromJson(j, ".");
  EXPECT_FALSE(r.ok()) << "accepted: " << j.dump();
  return r.message();
}

TEST(ScenarioConfigTest, AcceptsAValidScenario) {
  auto r = Scenario::FromJson(Good(), ".");
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r.value().topology.links[0].rate, 10 * kGbps);
  EXPECT_EQ(r.value().topology.links[0].delay(), 10 * kNs);
  EXPECT_EQ(r.value().duration, kMs);
}

TEST(ScenarioConfigTest, LargestSimFrameIsTheRoceMtuUnlessIcmpUdpOrRandomFramesAreSent) {
  nlohmann::json j = Good();
  j["nic"]["mtu"] = 1024;
  EXPECT_EQ(LargestSimFrame(Scenario::FromJson(j, ".").value()), 1514) << "a ping item";
  j["traffic"] = nlohmann::json::array(
      {{{"kind", "rdma"}, {"from", "h0"}, {"to", "h1"}, {"test", "write_bw"}, {"size", 65536}}});
  // Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 + RETH 16 + payload + pad (up to 3) + ICRC 4.
  EXPECT_EQ(LargestSimFrame(Scenario::FromJson(j, ".").value()), 1024 + 74 + 3);
  j["nic"]["mtu"] = 4096;
  EXPECT_EQ(LargestSimFrame(Scenario::FromJson(j, ".").value()), 4096 + 74 + 3);
  j["nic"]["mtu"] = 256;
  j["faults"] = nlohmann::json::array({{{"kind", "frame_injection"},
                                        {"at", "0s"},
                                        {"host", "h0"},
                                        {"frame", "random"},
                                        {"rate", 1000},
                                        {"count", 1}}});
  EXPECT_EQ(LargestSimFrame(Scenario::FromJson(j, ".").value()), 1514) << "random frames";
}

TEST(ScenarioConfigTest, NextPodsetIsForRdmaAndItsWordsAreReserved) {
  // A 2-tier fabric: the ToRs take the podsets' place. One entry becomes one item per host, and
  // messages about the items name the entry's position in the file.
  nlohmann::json j = Good();
  j["traffic"] = nlohmann::json::parse(R"([{"kind": "ping", "from": "h0", "to": "h1"},
      {"kind": "rdma", "from": "all", "to": "next_podset", "dscp": 0}])");
  auto r = Scenario::FromJson(j, ".");
  ASSERT_TRUE(r.ok()) << r.message();
  ASSERT_EQ(r.value().traffic.size(), 3u);
  EXPECT_EQ(r.value().traffic[1].from, "h0");
  EXPECT_EQ(r.value().traffic[1].to, "h1");
  EXPECT_EQ(r.value().traffic[2].from, "h1");
  EXPECT_EQ(r.value().traffic[2].to, "h0");
  EXPECT_EQ(TrafficPath(r.value().traffic[2], 2), "traffic[1]");
  bool flagged = false;  // DSCP 0 is not lossless: `check` names traffic[1], not [2]
  for (const auto& f : CheckScenario(r.value())) {
    if (f.check != "nic-dscp-lossless") continue;
    flagged = true;
    EXPECT_EQ(f.field, "traffic[1].dscp") << f.where;
  }
  EXPECT_TRUE(flagged);
  // Other kinds refuse the word; rdma refuses "all" towards one host; hosts cannot take the
  // words as names.
  j["traffic"] = nlohmann::json::parse(R"([{"kind": "ping", "from": "h0", "to": "next_podset"}])");
  EXPECT_NE(ErrorOf(j).find("traffic[0].to: \"next_podset\" is for rdma items only"),
            std::string::npos)
      << ErrorOf(j);
  j["traffic"] = nlohmann::json::parse(R"([{"kind": "rdma", "from": "all", "to": "h1"}])");
  EXPECT_NE(ErrorOf(j).find("traffic[0].from: must name one host"), std::string::npos)
      << ErrorOf(j);
  for (const char* word : {"all", "next_podset"}) {
    nlohmann::json k = Good();
    k["topology"]["hosts"][1]["name"] = word;
    k["topology"]["links"][1]["b"] = word;
    k["traffic"] = nlohmann::json::array();
    EXPECT_NE(ErrorOf(k).find("topology.hosts[1].name: \"" + std::string(word) + "\" is reserved"),
              std::string::npos)
        << ErrorOf(k);
  }
}

TEST(ScenarioConfigTest, UnknownKeyNamesItsPath) {
  auto j = Good();
  j["topology"]["links"][2]["speed"] = "1Gbps";
  EXPECT_EQ(ErrorOf(j), "topology.links[2].speed: unknown key");
  j = Good();
  j["colour"] = 1;
  EXPECT_EQ(ErrorOf(j), "colour: unknown key");
}

TEST(ScenarioConfigTest, NegativeRateNamesTheField) {
  auto j = Good();
  j["topology"]["links"][1]["rate"] = "-10Gbps";
  const std::string e = ErrorOf(j);
  EXPECT_EQ(e.rfind("topology.links[1].rate: ", 0), 0u) << e;
  EXPECT_NE(e.find("negative"), std::string::npos) << e;
  j["topology"]["links"][1]["rate"] = "0Gbps";
  EXPECT_EQ(ErrorOf(j), "topology.links[1].rate: rate must be > 0");
}

TEST(ScenarioConfigTest, LinkToMissingSwitch) {
  auto j = Good();
  j["topology"]["links"][3]["b"] = "spine9";
  EXPECT_EQ(ErrorOf(j), "topology.links[3].b: no switch or host named \"spine9\"");
}

TEST(ScenarioConfigTest, WrongTypesAndImpossibleValues) {
  auto j = Good();
  j["seed"] = "one";
  EXPECT_EQ(ErrorOf(j), "seed: must be an integer, got string");
  j = Good();
  j["topology"]["hosts"][1]["ip"] = "10.1.0.9";
  EXPECT_NE(ErrorOf(j).find("topology.hosts[1].ip: 10.1.0.9 is not a host address of tor1"),
            std::string::npos);
  j = Good();
  j["topology"]["hosts"][0]["ip"] = "10.1.0.1";  // the gateway
  EXPECT_NE(ErrorOf(j).find("gateway"), std::string::npos);
  j = Good();
  j["traffic"][0]["to"] = "h7";
  EXPECT_EQ(ErrorOf(j), "traffic[0].to: no host named \"h7\" (or \"all\")");
  j = Good();
  j["traffic"][0]["kind"] = "nc";
  EXPECT_NE(ErrorOf(j).find("traffic[0].kind: must be"), std::string::npos);
  j = Good();
  j["topology"]["switches"][2]["role"] = "core";
  EXPECT_NE(ErrorOf(j).find("topology.switches[2].role"), std::string::npos);
  j = Good();
  j["topology"]["links"].push_back({{"a", "tor0"}, {"b", "h0"}, {"rate", "1Gbps"}});
  EXPECT_NE(ErrorOf(j).find("second link"), std::string::npos);
  j = Good();
  j["topology"]["switches"][1]["name"] = "tor0";
  EXPECT_NE(ErrorOf(j).find("topology.switches[1].name"), std::string::npos);
  j = Good();
  j["duration"] = "1 fortnight";
  EXPECT_EQ(ErrorOf(j).rfind("duration: expected a duration", 0), 0u);
  j = Good();
  j["live"]["mbufs"] = 100;  // fewer than one port's receive ring
  EXPECT_NE(ErrorOf(j).find("live.mbufs"), std::string::npos);
  j["live"]["mbufs"] = 65535;
  EXPECT_EQ(Scenario::FromJson(j, ".").value().live.mbufs, 65535u);
}

TEST(ScenarioConfigTest, RejectsWhatWouldSilentlyMisbehave) {
  auto j = Good();
  j["topology"]["switches"][1]["subnet"] = "10.0.0.0/8";  // contains tor0's /24
  EXPECT_EQ(ErrorOf(j), "topology.switches[1].subnet: overlaps the subnet of tor0");
  j = Good();
  j["faults"] = {{{"kind", "link_down"}, {"at", "0s"}, {"a", "h0"}, {"b", "spine0"}}};
  EXPECT_EQ(ErrorOf(j), "faults[0].b: no link between \"h0\" and \"spine0\"");
  j = Good();
  j["faults"] = {
      {{"kind", "link_down"}, {"at", "0s"}, {"a", "tor0"}, {"b", "h0"}, {"reroute_after", "1ms"}}};
  EXPECT_EQ(ErrorOf(j),
            "faults[0].reroute_after: only a link between two switches can be routed around");
  j = Good();
  j["faults"] = {{{"kind", "link_down"},
                  {"at", "0s"},
                  {"a", "tor0"},
                  {"b", "spine0"},
                  {"reroute_after", "1ms"}}};
  j["load_balancing"] = {{"scheme", "conweave"}};
  EXPECT_NE(ErrorOf(j).find("faults[0].reroute_after: rerouting is not supported with "
                            "load_balancing conweave"),
            std::string::npos)
      << ErrorOf(j);
  j = Good();
  j["faults"] = {{{"kind", "link_loss"},
                  {"at", "0s"},
                  {"from", "tor0"},
                  {"to", "h0"},
                  {"every", 5},
                  {"rate", 0.1}}};
  EXPECT_NE(ErrorOf(j).find("not both"), std::string::npos);
  j = Good();
  j["faults"] = {{{"kind", "pause_injection"}, {"at", "0s"}, {"switch", "tor0"}, {"port", 2}}};
  EXPECT_EQ(ErrorOf(j), "faults[0].port: switch \"tor0\" has ports 0..1");
  j = Good();
  j["output"] = {{"sample_interval", "1ps"}};
  EXPECT_EQ(ErrorOf(j), "output.sample_interval: must be 0 (off) or at least 100ns");
  j = Good();
  j["output"] = {{"capture", {"tor0/p2"}}};
  EXPECT_EQ(ErrorOf(j), "output.capture[0]: no switch port \"tor0/p2\" (tor0 has p0..p1)");
  j["output"] = {{"capture", {"tor0/p1"}}, {"capture_format", "pcapng2"}};
  EXPECT_EQ(ErrorOf(j), "output.capture_format: must be \"pcapng\" or \"pcap\"");
  j = Good();
  j["load_balancing"] = {{"scheme", "spray"}};
  EXPECT_NE(ErrorOf(j).find("load_balancing.scheme: must be"), std::string::npos);
  j = Good();
  j["load_balancing"] = {{"scheme", "drill"}, {"drill_samples", 2}};
  auto r = Scenario::FromJson(j, ".");
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r.value().sw.load_balancing.scheme, LoadBalancingConfig::Scheme::kDrill);
}

// Issue 22 defect 3: the storm can only be declared at a poll, so a detection time below the
// poll interval silently becomes several poll intervals (50 ms / 100 ms was declared after
// 200 ms). SONiC's pfcwd CLI refuses it; so does the reader, naming both fields.
TEST(ScenarioConfigTest, WatchdogDetectionTimeBelowItsPollIntervalIsRejected) {
  auto j = Good();
  j["pfc_watchdog"] = {{"detection_time", "50ms"}, {"poll_interval", "100ms"}};
  EXPECT_EQ(ErrorOf(j),
            "pfc_watchdog.detection_time: 50ms is shorter than pfc_watchdog.poll_interval 100ms; "
            "a storm is declared only at a poll, so it must be at least the poll interval "
            "(SONiC's pfcwd refuses it too)");
  j = Good();
  j["pfc_watchdog"] = {{"detection_time", "100ms"}, {"poll_interval", "100ms"}};
  EXPECT_TRUE(Scenario::FromJson(j, ".").ok()) << "equal is fine";
  j = Good();
  j["pfc_watchdog"] = {{"poll_interval", "300ms"}};  // above the 200 ms default detection time
  EXPECT_NE(ErrorOf(j).find("pfc_watchdog.detection_time: 200ms is shorter than "
                            "pfc_watchdog.poll_interval 300ms"),
            std::string::npos)
      << ErrorOf(j);
}

TEST(ScenarioConfigTest, PerftestReportIntervalIsForBandwidthTestsAndTheTestEndIsTheRunEnd) {
  auto j = Good();
  j["traffic"] = {{{"kind", "rdma"}, {"from", "h0"}, {"to", "h1"}, {"report_interval", "100us"}}};
  auto r = Scenario::FromJson(j, ".");
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r.value().traffic[0].perftest().report_interval, 100 * kUs);
  EXPECT_EQ(r.value().traffic[0].perftest().end, kMs) << "the scenario's duration";
  j["traffic"][0]["report_interval"] = "500ns";
  EXPECT_EQ(ErrorOf(j), "traffic[0].report_interval: must be 0 (off) or at least 1us");
  j["traffic"][0]["report_interval"] = "1ms";
  j["traffic"][0]["test"] = "send_lat";
  EXPECT_EQ(ErrorOf(j), "traffic[0].report_interval: only for bandwidth tests (*_bw)");
}

TEST(ScenarioConfigTest, CongaParametersAreReadStrictly) {
  auto j = Good();
  j["load_balancing"] = {
      {"scheme", "conga"},
      {"conga",
       {{"flowlet_gap", "50us"}, {"dre_alpha", 0.5}, {"quant_bits", 2}, {"candidates", 2}}}};
  auto r = Scenario::FromJson(j, ".");
  ASSERT_TRUE(r.ok()) << r.message();
  const LoadBalancingConfig& lb = r.value().sw.load_balancing;
  EXPECT_EQ(lb.scheme, LoadBalancingConfig::Scheme::kConga);
  EXPECT_EQ(lb.conga.flowlet_gap, 50 * kUs);
  EXPECT_EQ(lb.conga.dre_alpha, 0.5);
  EXPECT_EQ(lb.conga.quant_bits, 2u);
  EXPECT_EQ(lb.conga.candidates, 2u);
  EXPECT_EQ(lb.conga.dre_period, 50 * kUs);  // default kept
  j["load_balancing"]["conga"]["quant_bits"] = 4;
  EXPECT_NE(ErrorOf(j).find("load_balancing.conga.quant_bits"), std::string::npos) << ErrorOf(j);
  j["load_balancing"]["conga"] = {{"dre_tau", "1us"}};
  EXPECT_NE(ErrorOf(j).find("load_balancing.conga.dre_tau"), std::string::npos) << ErrorOf(j);
  // Out-of-range numbers are quoted as written, not wrapped or spelled out to 300 digits.
  j["load_balancing"]["conga"] = {{"quant_bits", 9223372036854775808ull}};
  EXPECT_EQ(ErrorOf(j),
            "load_balancing.conga.quant_bits: must be in [1, 3], got 9223372036854775808");
  j["load_balancing"]["conga"] = {{"dre_alpha", 1e308}};
  EXPECT_EQ(ErrorOf(j),
            "load_balancing.conga.dre_alpha: must be in [0.001000, 0.999000], got 1e+308");
}

// CONGA and ConWeave source-route the second hop and take any Clos; the planner checks that the
// paths fit (PathTracerTest.SourceRoutingRefusesLeavesWithUnequalUplinks).
TEST(ScenarioConfigTest, CongaAndConweaveTakeAnyClos) {
  for (const char* scheme : {"conga", "conweave"}) {
    auto j = Good();
    j["load_balancing"] = {{"scheme", scheme}};
    j["topology"]["links"].push_back(
        {{"a", "tor0"}, {"b", "tor1"}, {"rate", "40Gbps"}});  // a ToR-ToR link
    EXPECT_TRUE(Scenario::FromJson(j, ".").ok()) << scheme << ": " << ErrorOf(j);
  }
}

TEST(ScenarioConfigTest, ConweaveOnAThreeTierClosTakesTheReferencesFatTreeDefaults) {
  nlohmann::json j = {
      {"name", "cw3"},
      {"duration", "1ms"},
      {"topology",
       {{"clos",
         {{"tiers", 3}, {"spines", 4}, {"tors", 1}, {"leaves_per_podset", 2}, {"podsets", 2}}}}},
      {"load_balancing", {{"scheme", "conweave"}}}};
  auto three = Scenario::FromJson(j, ".");
  ASSERT_TRUE(three.ok()) << three.message();
  const ConweaveParams& q = three.value().sw.load_balancing.conweave;
  EXPECT_EQ(q.inactive, kMs);  // conweave-ns3 run.py, 3-tier lossless
  EXPECT_EQ(q.default_wait, 600 * kUs);
  EXPECT_EQ(q.extra_flush, 64 * kUs);
  j["load_balancing"]["conweave"] = {{"extra_flush", "20us"}};  // the scenario's value wins
  EXPECT_EQ(Scenario::FromJson(j, ".").value().sw.load_balancing.conweave.extra_flush, 20 * kUs);
  j["topology"]["clos"] = {{"spines", 2}, {"tors", 2}};
  j["load_balancing"] = {{"scheme", "conweave"}};
  const ConweaveParams two = Scenario::FromJson(j, ".").value().sw.load_balancing.conweave;
  EXPECT_EQ(two.inactive, 300 * kUs);  // run.py, 2-tier leaf-spine
  EXPECT_EQ(two.default_wait, 200 * kUs);
  EXPECT_EQ(two.extra_flush, 16 * kUs);
}

TEST(ScenarioConfigTest, ConweaveHeldFramesCanStayOutsideTheBuffer) {
  auto j = Good();
  j["load_balancing"] = {{"scheme", "conweave"}, {"conweave", {{"charge_held_to_buffer", false}}}};
  auto r = Scenario::FromJson(j, ".");
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_FALSE(r.value().sw.load_balancing.conweave.charge_held_to_buffer);
  j["load_balancing"]["conweave"]["charge_held_to_buffer"] = "no";
  EXPECT_NE(ErrorOf(j).find("load_balancing.conweave.charge_held_to_buffer"), std::string::npos)
      << ErrorOf(j);
}

TEST(ScenarioConfigTest, ExternalHostsNameADpdkDevice) {
  auto j = Good();
  j["topology"]["hosts"][1]["kind"] = "external";
  EXPECT_NE(ErrorOf(j).find("topology.hosts[1].device: required"), std::string::npos) << ErrorOf(j);
  j["topology"]["hosts"][1]["device"] = "eth0";
  EXPECT_NE(ErrorOf(j).find("neither a PCI address"), std::string::npos) << ErrorOf(j);
  j["topology"]["hosts"][1]["device"] = "net_tapx,iface=a";
  EXPECT_NE(ErrorOf(j).find("hosts[1].device"), std::string::npos);
  for (const char* ok : {"0000:3b:00.0", "3b:00.1", "net_tap0,iface=rf0", "net_memif2,role=client",
                         "net_af_xdp1,iface=ens1f0", "net_af_packet0,iface=eth1"}) {
    j["topology"]["hosts"][1]["device"] = ok;
    auto r = Scenario::FromJson(j, ".");
    ASSERT_TRUE(r.ok()) << ok << ": " << r.message();
    EXPECT_EQ(r.value().topology.hosts[1].kind, HostKind::kExternal);
    EXPECT_EQ(r.value().topology.hosts[1].device, ok);
  }
  j["topology"]["hosts"][0]["device"] = "net_tap3";
  EXPECT_NE(ErrorOf(j).find("hosts[0].device: only for \"kind\": \"external\""), std::string::npos)
      << ErrorOf(j);
}

TEST(ScenarioConfigTest, DuplicateKeyIsRejected) {
  const std::string path = testing::TempDir() + "/dup_key.json";
  std::ofstream(path) << R"({"name": "a", "name": "b", "topology": {"clos": {"tors": 1}}})";
  auto r = Scenario::Load(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.message(), path + ": name: duplicate key in the same object");
}

TEST(ScenarioConfigTest, WorkloadCdfByAbsolutePathAndByName) {
  auto j = Good();
  const std::string abs = std::string(ROCEFAB_SOURCE_DIR) + "/configs/workloads/AliStorage2019.txt";
  j["traffic"] = {{{"kind", "workload"}, {"cdf", abs}, {"load", 0.3}}};
  auto r = Scenario::FromJson(j, "/nonexistent");
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r.value().traffic[0].workload().cdf_path, abs);
  j["traffic"][0]["cdf"] = "AliStorage2019";  // a name resolves from any scenario folder
  r = Scenario::FromJson(j, "/nonexistent");
  ASSERT_TRUE(r.ok()) << r.message();
}

// A Poisson workload is generated whole before the run: one that would start more than 50 M
// flows (a CDF of 1-byte flows at 100 Gb/s) is refused with the figures, not generated until
// the memory is gone.
TEST(ScenarioConfigTest, AWorkloadOfTooManyFlowsIsRefusedWithTheFigures) {
  auto j = Good();
  const std::string cdf = ::testing::TempDir() + "/rocefab_tiny_flows.txt";
  std::ofstream(cdf) << "1 0\n1 100\n";
  j["traffic"] = {{{"kind", "workload"}, {"cdf", cdf}, {"load", 0.9}, {"duration", "10ms"}}};
  auto r = Scenario::FromJson(j, "/nonexistent");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("traffic[0].duration: would start about"), std::string::npos)
      << r.message();
  EXPECT_NE(r.message().find("at most 50000000"), std::string::npos) << r.message();
  j["traffic"][0]["duration"] = "1us";  // 1 us of it is few flows
  r = Scenario::FromJson(j, "/nonexistent");
  EXPECT_TRUE(r.ok()) << r.message();
}

// Found by a hostile-input session: group or zero MACs for a node and ping/udp from a host to
// itself ran and reported nonsense (100 % loss; items with no row). Each is refused, named.
TEST(ScenarioConfigTest, GroupMacsAndTrafficToItselfAreRefused) {
  for (const char* mac :
       {"ff:ff:ff:ff:ff:ff", "01:00:5e:00:00:01", "01:80:c2:00:00:01", "00:00:00:00:00:00"}) {
    auto j = Good();
    j["topology"]["hosts"][0]["mac"] = mac;
    auto r = Scenario::FromJson(j, "/nonexistent");
    ASSERT_FALSE(r.ok()) << mac;
    EXPECT_NE(r.message().find("topology.hosts[0].mac: must be a unicast address"),
              std::string::npos)
        << r.message();
  }
  auto j = Good();
  j["topology"]["hosts"][0]["mac"] = "02:00:00:00:00:07";
  EXPECT_TRUE(Scenario::FromJson(j, "/nonexistent").ok());
  for (const char* kind : {"ping", "udp"}) {
    j = Good();
    j["traffic"] = {
        {{"kind", kind}, {"from", "h0"}, {"to", "h0"}, {"rate", "1Gbps"}, {"count", 3}}};
    if (std::string(kind) == "ping") j["traffic"][0].erase("rate");
    auto r = Scenario::FromJson(j, "/nonexistent");
    ASSERT_FALSE(r.ok()) << kind;
    EXPECT_NE(r.message().find(std::string(kind) + " needs two different hosts"), std::string::npos)
        << r.message();
    j["traffic"][0]["to"] = "h1";
    EXPECT_TRUE(Scenario::FromJson(j, "/nonexistent").ok()) << kind;
  }
}

// Found by a hostile-input session: an XON threshold (or offset) at or above the buffer's size
// was accepted, and a PG then resumed as soon as its headroom drained. Refused, naming the key,
// for the buffer, a named profile and a switch whose own size is smaller.
TEST(ScenarioConfigTest, XonLargerThanTheBufferIsRefused) {
  auto j = Good();
  j["buffer"] = {{"size", "1MiB"}, {"xon", "2MiB"}};
  EXPECT_EQ(ErrorOf(j), "buffer.xon: 2MiB must be smaller than the buffer (buffer.size 1MiB)");
  j["buffer"] = {{"size", "1MiB"}, {"xon_offset", "1MiB"}};
  EXPECT_NE(ErrorOf(j).find("buffer.xon_offset: "), std::string::npos) << ErrorOf(j);
  j["buffer"] = {{"size", "1MiB"}, {"profiles", {{"big", {{"xon", "1MiB"}}}}}};
  EXPECT_NE(ErrorOf(j).find("buffer.profiles.big.xon: "), std::string::npos) << ErrorOf(j);
  j["buffer"] = {
      {"size", "1MiB"}, {"xon", "100KiB"}, {"switches", {{"tor0", {{"size", "64KiB"}}}}}};
  EXPECT_NE(ErrorOf(j).find("buffer.xon: 100KiB must be smaller than the buffer "
                            "(buffer.switches.tor0.size 64KiB)"),
            std::string::npos)
      << ErrorOf(j);
  j["buffer"] = {{"size", "1MiB"}, {"xon", "100KiB"}, {"xon_offset", "4KiB"}};
  EXPECT_TRUE(Scenario::FromJson(j, ".").ok()) << Scenario::FromJson(j, ".").message();
}

// A ToR's subnet must leave host addresses: the one message states the reader's whole range
// (a /33 said "0..32" while a /31 said "8..30").
TEST(ScenarioConfigTest, SubnetPrefixLengthStatesOneRange) {
  for (const char* subnet : {"10.1.0.0/33", "10.1.0.0/31", "10.1.0.0/4"}) {
    auto j = Good();
    j["topology"]["switches"][0]["subnet"] = subnet;
    EXPECT_EQ(ErrorOf(j), std::string("topology.switches[0].subnet: prefix length must be 8..30 "
                                      "in \"") +
                              subnet + "\"");
  }
}

// Each tier's cable: hosts, ToR uplinks, leaf uplinks, each defaulting to `cable`; the scenario
// reader takes the same keys.
TEST(ClosTest, EachTierHasItsOwnCable) {
  auto j = nlohmann::json::parse(R"({"name": "c", "topology": {"clos": {"tiers": 3, "podsets": 2,
      "tors": 2, "leaves_per_podset": 2, "spines": 2, "hosts_per_tor": 1, "cable": "10m",
      "tor_cable": "30m", "leaf_cable": "300m", "host_kind": "builtin"}}, "traffic": []})");
  auto r = Scenario::FromJson(j, ".");
  ASSERT_TRUE(r.ok()) << r.message();
  std::map<std::string, std::set<double>> cables;  // by the two ends' kinds
  const Topology& t = r.value().topology;
  auto kind = [&](const std::string& n) {
    const int i = t.SwitchIndex(n);
    return i < 0 ? std::string("host") : std::string(SwitchRoleName(t.switches[i].role));
  };
  for (const auto& l : t.links) cables[kind(l.a) + "-" + kind(l.b)].insert(l.cable_m);
  EXPECT_EQ(cables["tor-host"], std::set<double>{10});
  EXPECT_EQ(cables["tor-leaf"], std::set<double>{30});
  EXPECT_EQ(cables["leaf-spine"], std::set<double>{300});
  j["topology"]["clos"]["tiers"] = 2;
  EXPECT_NE(ErrorOf(j).find("leaf_cable: 3-tier only"), std::string::npos) << ErrorOf(j);
  j["topology"]["clos"].erase("leaf_cable");
  j["topology"]["clos"]["host_cable"] = "-1m";
  EXPECT_NE(ErrorOf(j).find("topology.clos.host_cable: "), std::string::npos) << ErrorOf(j);
}

TEST(ClosTest, BuildsTwoAndThreeTierFabrics) {
  ClosSpec s;
  s.spines = 4;
  s.tors = 3;
  s.hosts_per_tor = 5;
  auto t = BuildClos(s);
  ASSERT_TRUE(t.ok()) << t.message();
  EXPECT_EQ(t.value().switches.size(), 7u);
  EXPECT_EQ(t.value().hosts.size(), 15u);
  EXPECT_EQ(t.value().links.size(), 15u + 12u);
  EXPECT_EQ(FormatIpv4(t.value().hosts[5].ip), "10.1.1.2");  // first host of tor1
  s.tiers = 3;
  s.podsets = 2;
  s.tors = 2;
  s.leaves_per_podset = 2;
  s.spines = 4;
  s.hosts_per_tor = 1;
  t = BuildClos(s);
  ASSERT_TRUE(t.ok()) << t.message();
  // 4 ToRs + 4 leaves + 4 spines; links: 4 host + 8 ToR-leaf + 2 podsets x 2 leaves x 2 spines.
  EXPECT_EQ(t.value().switches.size(), 12u);
  EXPECT_EQ(t.value().links.size(), 4u + 8u + 8u);
  s.spines = 3;
  auto bad = BuildClos(s);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.message().rfind("spines:", 0), 0u);
}

TEST(ScenarioConfigTest, ShippedScenariosLoad) {
  for (const char* f : {"configs/scenarios/quickstart.json"}) {
    auto r = Scenario::Load(std::string(ROCEFAB_SOURCE_DIR) + "/" + f);
    EXPECT_TRUE(r.ok()) << r.message();
  }
}

// The CLI turns a malformed scenario into one line on stderr and a non-zero exit.
TEST(CliTest, MalformedScenarioExitsNonZeroWithOneLine) {
  const char* bin = std::getenv("ROCEFAB_BIN");
  ASSERT_NE(bin, nullptr) << "meson sets ROCEFAB_BIN";
  auto j = Good();
  j["topology"]["links"][3]["b"] = "spine9";
  const std::string path = ::testing::TempDir() + "/bad_scenario.json";
  std::ofstream(path) << j.dump();
  const std::string cmd = std::string(bin) + " sim " + path + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[512];
  while (fgets(buf, sizeof buf, p)) out += buf;
  const int status = pclose(p);
  EXPECT_NE(WEXITSTATUS(status), 0);
  EXPECT_EQ(out,
            "rocefab: " + path + ": topology.links[3].b: no switch or host named \"spine9\"\n");
}

// `topo clos` at its width limits writes a scenario whose buffer holds every switch's reserved and
// headroom bytes (the default 12 MiB cannot for 256-port spines), and says so.
TEST(CliTest, TopoClosSizesTheBufferForWideSwitches) {
  const char* bin = std::getenv("ROCEFAB_BIN");
  ASSERT_NE(bin, nullptr) << "meson sets ROCEFAB_BIN";
  const std::string path = ::testing::TempDir() + "/wide_clos.json";
  const std::string cmd = std::string(bin) +
                          " topo clos --spines 64 --leaves 256 --hosts-per-leaf 1 " +
                          "--host-kind builtin -o " + path + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[512];
  while (fgets(buf, sizeof buf, p)) out += buf;
  ASSERT_EQ(WEXITSTATUS(pclose(p)), 0) << out;
  EXPECT_NE(out.find("note: buffer.size set to"), std::string::npos) << out;
  auto sc = Scenario::Load(path);
  ASSERT_TRUE(sc.ok()) << sc.message();
  EXPECT_GT(sc.value().sw.buffer.size, 12 << 20);
  for (const auto& f : CheckScenario(sc.value()))
    EXPECT_NE(f.check, "buffer") << f.where << ": " << f.message;
}

// docs/scenario-reference.md lists every key the strict reader reads in the shipped scenarios,
// with the type, default and range the reader itself applies (JsonReader::RecordKeysInto), so
// the page cannot drift from the code. Regenerate it with
//   ROCEFAB_WRITE_DOCS=1 build/tests/test_config --gtest_filter=ScenarioReferenceTest.*
TEST(ScenarioReferenceTest, TheReferencePageListsEveryKeyTheReaderReads) {
  std::vector<std::string> files;
  for (const char* dir : {"/configs/scenarios", "/configs/scenarios/field",
                          "/configs/scenarios/large", "/tests/live"}) {
    for (const auto& e :
         std::filesystem::directory_iterator(std::string(ROCEFAB_SOURCE_DIR) + dir)) {
      if (e.path().extension() == ".json") files.push_back(e.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  std::map<std::string, JsonReader::KeyInfo> keys;
  JsonReader::RecordKeysInto(&keys);
  for (const auto& f : files) {
    // The ns-3 imports' flow traces live outside the repository (../shared): where a trace is
    // absent, the slice in tests/data stands in, so every key is read whatever the checkout.
    std::ifstream in(f);
    const nlohmann::json j = nlohmann::json::parse(in);
    std::vector<std::string> sets;
    const std::string dir = f.substr(0, f.find_last_of('/'));
    for (size_t i = 0; j.contains("traffic") && i < j["traffic"].size(); ++i) {
      const auto& item = j["traffic"][i];
      if (item.contains("file") &&
          !std::filesystem::exists(dir + "/" + item["file"].get<std::string>())) {
        sets.push_back("traffic." + std::to_string(i) + ".file=" + ROCEFAB_SOURCE_DIR +
                       "/tests/data/anchor_first_1ms.txt.xz");
      }
    }
    auto r = Scenario::Load(f, sets);
    EXPECT_TRUE(r.ok()) << r.message();
  }
  JsonReader::RecordKeysInto(nullptr);
  ASSERT_GT(keys.size(), 150u);
  std::string md =
      "# Scenario file reference\n\n"
      "Every key `rocefab sim`, `live`, `crosscheck` and `check` read from a scenario file, as "
      "the\n"
      "strict reader reads it in the shipped scenarios (`configs/scenarios`, `field/`, `large/`,\n"
      "`tests/live`): its type, its default when absent and the range the reader enforces. A key\n"
      "not listed here is refused (\"unknown key\"). `[]` stands for any array index. Units:\n"
      "durations `ps ns us ms s` (`\"100us\"`), rates `bps Kbps Mbps Gbps Tbps`, bytes `B KB\n"
      "KiB MB MiB` (`\"256KiB\"`), lengths `m`. What each key means: `topo/scenario.h` and the\n"
      "headers it names; examples: `configs/scenarios/README.md`. Any key can be set from the\n"
      "command line with `--set KEY=VALUE` (README). Generated and checked by\n"
      "`ScenarioReferenceTest` (tests/unit/config_test.cc); entries whose type is empty are "
      "objects\n"
      "or arrays, or values read by a reader of their own (traffic and fault kinds).\n\n"
      "| key | type | default | range |\n|---|---|---|---|\n";
  for (const auto& [key, info] : keys) {
    md += "| `" + key + "` | " + info.type + " | " + info.def + " | " + info.range + " |\n";
  }
  const std::string path = std::string(ROCEFAB_SOURCE_DIR) + "/docs/scenario-reference.md";
  if (std::getenv("ROCEFAB_WRITE_DOCS") != nullptr) std::ofstream(path) << md;
  std::ifstream in(path);
  const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(doc, md) << "docs/scenario-reference.md is out of date: ROCEFAB_WRITE_DOCS=1 "
                        "build/tests/test_config --gtest_filter=ScenarioReferenceTest.*";
}

// Runs `rocefab ARGS` (stderr folded into stdout); returns the exit code and fills *out.
int RunCli(const std::string& args, std::string* out) {
  const char* bin = std::getenv("ROCEFAB_BIN");
  if (bin == nullptr) return -1;
  FILE* p = popen((std::string(bin) + " " + args + " 2>&1").c_str(), "r");
  if (p == nullptr) return -1;
  char buf[512];
  out->clear();
  while (fgets(buf, sizeof buf, p)) *out += buf;
  return WEXITSTATUS(pclose(p));
}

// Switch and host names end up in namespace names, file names and tool arguments run as root:
// `rocefab check` refuses each hostile one in one line naming the field and the rule, before
// anything runs.
TEST(CliTest, HostileNodeNamesAreRefusedInOneLine) {
  const std::string sc = std::string(ROCEFAB_SOURCE_DIR) +
                         "/configs/scenarios/field/pfcwd-restore-reasserts-xoff.json";
  std::string out;
  ASSERT_EQ(RunCli("check " + sc, &out), 0) << out;
  const char* hostile[] = {"h0;reboot",
                           "../../etc/cron.d/x",
                           "-rf",
                           "h 0",
                           "h/0",
                           "$(id)",
                           "h0`id`",
                           "\"\"",
                           "a123456789012345678901234567890123"};
  for (const char* name : hostile) {
    EXPECT_EQ(RunCli("check " + sc + " --set 'topology.hosts.0.name=" + name + "'", &out), 2)
        << name;
    EXPECT_NE(out.find("topology.hosts[0].name: must be 1-32 letters, digits"), std::string::npos)
        << name << ": " << out;
    EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << "one line: " << out;
  }
  EXPECT_EQ(RunCli("check " + sc + " --set topology.switches.1.name=tor0", &out), 2) << out;
  EXPECT_NE(out.find("topology.switches[1].name: must be unique, \"tor0\" is used twice"),
            std::string::npos)
      << out;
  // The names rocefab's own generator and the shipped files use pass.
  EXPECT_EQ(RunCli("check " + sc + " --set topology.hosts.0.name=srv-0.rack_1", &out), 2)
      << "the links still name h0: " << out;
  EXPECT_NE(out.find("no switch or host named \"h0\""), std::string::npos) << out;
}

// A symbolic link planted in a results folder is not written through: the run stops naming it,
// and what it points at is untouched.
TEST(CliTest, ResultsAreNotWrittenThroughAPlantedSymlink) {
  const std::string dir = ::testing::TempDir() + "/rocefab_symlink_out";
  const std::string target = ::testing::TempDir() + "/rocefab_symlink_target";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(target) << "precious\n";
  for (const char* planted : {"summary.json", "flows.csv", "capture.pcapng"}) {
    std::filesystem::remove(dir + "/" + planted);
    std::filesystem::create_symlink(target, dir + "/" + planted);
    std::string out;
    const std::string sc = std::string(ROCEFAB_SOURCE_DIR) + "/configs/scenarios/quickstart.json";
    EXPECT_NE(RunCli("sim " + sc +
                         " -q --duration 1ms --set output.capture=[\\\"tor0/p0\\\"] --out " + dir,
                     &out),
              0)
        << planted << ": " << out;
    EXPECT_NE(out.find(std::string(planted) + ": is a symbolic link"), std::string::npos)
        << planted << ": " << out;
    std::ifstream in(target);
    std::string line;
    std::getline(in, line);
    EXPECT_EQ(line, "precious") << planted;
    std::filesystem::remove(dir + "/" + planted);
  }
}

// Every command and subcommand answers --help on stdout with exit 0; --version names the build.
TEST(CliTest, EveryCommandAnswersHelpAndTheBinaryItsVersion) {
  ASSERT_NE(std::getenv("ROCEFAB_BIN"), nullptr) << "meson sets ROCEFAB_BIN";
  std::string out;
  for (const char* cmd : {"--help", "topo --help", "topo clos --help", "sim --help", "live --help",
                          "crosscheck --help", "check --help", "report --help", "diff --help",
                          "topo draw --help", "inspect --help", "exec --help", "destroy --help",
                          "topo import-sonic --help", "export-sonic --help"}) {
    EXPECT_EQ(RunCli(cmd, &out), 0) << "rocefab " << cmd << ": " << out;
    EXPECT_NE(out.find("usage"), std::string::npos) << "rocefab " << cmd << ": " << out;
  }
  EXPECT_EQ(RunCli("--version", &out), 0);
  EXPECT_EQ(out.rfind("rocefab 0.", 0), 0u) << out;
  EXPECT_NE(out.find("("), std::string::npos) << "the commit: " << out;
  EXPECT_EQ(RunCli("", &out), 2) << "no command is an error";
  EXPECT_EQ(RunCli("topo", &out), 2);
}

// The SONiC commands as README shows them: export a switch, import the file back into the same
// base (a loadable scenario, notes and check findings on stderr), and refuse a bad file naming
// the file and field.
TEST(CliTest, SonicExportThenImportThroughTheCli) {
  ASSERT_NE(std::getenv("ROCEFAB_BIN"), nullptr) << "meson sets ROCEFAB_BIN";
  const std::string src = ROCEFAB_SOURCE_DIR, tmp = ::testing::TempDir();
  const std::string base = src + "/configs/scenarios/quickstart-rdma.json";
  const std::string db = tmp + "/rocefab_cli_tor0_config_db.json";
  const std::string out = tmp + "/rocefab_cli_tor0_sonic.json";
  std::string text;
  ASSERT_EQ(RunCli("export-sonic " + base + " tor0 -o " + db, &text), 0) << text;
  std::ifstream dbin(db);
  const auto exported = nlohmann::json::parse(dbin);
  EXPECT_EQ(exported["DEVICE_METADATA"]["localhost"]["hostname"], "tor0");
  EXPECT_TRUE(exported.contains("BUFFER_PROFILE")) << exported.dump();
  ASSERT_EQ(RunCli("topo import-sonic --base " + base + " " + db + " -o " + out, &text), 0) << text;
  EXPECT_NE(text.find("wrote " + out), std::string::npos) << text;
  EXPECT_NE(text.find("0 check findings"), std::string::npos)
      << "its own export checks clean: " << text;
  EXPECT_EQ(RunCli("check " + out, &text), 0) << text;
  // The documented example sets DSCP 3-4 lossless; the quickstart's NICs send DSCP 26: said now.
  ASSERT_EQ(RunCli("topo import-sonic --base " + base + " tor0=" + src +
                       "/configs/sonic/arista-7050cx3-tor.json -o " + out,
                   &text),
            0)
      << text;
  EXPECT_NE(text.find("check: [nic-dscp-lossless]"), std::string::npos) << text;
  EXPECT_NE(text.find("note: "), std::string::npos) << text;
  // A bad value: exit 1, one line naming the file, table, key and field.
  auto bad = exported;
  std::string prof;
  for (const auto& [name, body] : bad["BUFFER_PROFILE"].items()) {
    if (name.starts_with("pg_lossless")) prof = name;
  }
  ASSERT_FALSE(prof.empty()) << bad["BUFFER_PROFILE"].dump();
  bad["BUFFER_PROFILE"][prof]["xoff"] = "160k";
  std::ofstream(db) << bad.dump(2);
  EXPECT_NE(RunCli("topo import-sonic --base " + base + " " + db + " -o " + out, &text), 0);
  EXPECT_NE(text.find("BUFFER_PROFILE|" + prof + ".xoff: \"160k\""), std::string::npos) << text;
  // A base whose trace file is relative to its folder, written elsewhere: the path is rebased.
  const std::string ns3 = src + "/configs/scenarios/ns3-alistorage-128h.json";
  const std::string trace = src + "/tests/data/anchor_first_1ms.txt.xz";
  ASSERT_EQ(
      RunCli("export-sonic " + ns3 + " tor0 --set traffic.0.file=" + trace + " -o " + db, &text), 0)
      << text;
  const std::string sub = tmp + "/rocefab_cli_sonic_base";
  std::filesystem::create_directories(sub);
  {
    std::ifstream in(ns3);
    auto j = nlohmann::json::parse(in);
    j["traffic"][0]["file"] = std::filesystem::relative(trace, sub).string();  // ../../...
    std::ofstream(sub + "/base.json") << j.dump();
  }
  ASSERT_EQ(RunCli("topo import-sonic --base " + sub + "/base.json " + db + " -o " + out, &text), 0)
      << text;
  std::filesystem::remove_all(sub);
  EXPECT_NE(RunCli("check " + out, &text), 2) << "the trace is found from " << out << ": " << text;
  EXPECT_NE(RunCli("topo import-sonic --base " + base + " " + db + " -o " + db, &text), 0);
  EXPECT_NE(text.find("is one of the config_db files it reads"), std::string::npos) << text;
  EXPECT_NE(RunCli("export-sonic " + base + " nosuch", &text), 0);
  EXPECT_EQ(text.find("export-sonic: export-sonic"), std::string::npos) << text;
  EXPECT_NE(text.find("nosuch"), std::string::npos) << text;
}

// topo draw: the shipped quickstart as a PNG (matplotlib), named by -o.
TEST(CliTest, TopoDrawWritesThePicture) {
  ASSERT_NE(std::getenv("ROCEFAB_BIN"), nullptr) << "meson sets ROCEFAB_BIN";
  const std::string png = ::testing::TempDir() + "/rocefab_quickstart_topology.png";
  std::filesystem::remove(png);
  std::string out;
  ASSERT_EQ(RunCli("topo draw " + std::string(ROCEFAB_SOURCE_DIR) +
                       "/configs/scenarios/quickstart.json -o " + png,
                   &out),
            0)
      << out;
  ASSERT_TRUE(std::filesystem::exists(png)) << out;
  EXPECT_GT(std::filesystem::file_size(png), 10000u);
  std::ifstream f(png, std::ios::binary);
  char magic[4] = {};
  f.read(magic, 4);
  EXPECT_EQ(std::string(magic + 1, 3), "PNG");
  EXPECT_EQ(RunCli("topo draw /nonexistent.json", &out), 2) << out;
}

// topo draw starts python3 with an argument vector, never a shell: a scenario named like a shell
// command (the default picture's name comes from it) runs nothing, and a picture that cannot be
// written is an error naming the path and the reason.
TEST(CliTest, TopoDrawRunsNoShellAndReportsAFailedWrite) {
  ASSERT_NE(std::getenv("ROCEFAB_BIN"), nullptr) << "meson sets ROCEFAB_BIN";
  std::ifstream in(std::string(ROCEFAB_SOURCE_DIR) + "/configs/scenarios/quickstart.json");
  nlohmann::json j = nlohmann::json::parse(in);
  const std::string mark = ::testing::TempDir() + "/rocefab_topo_draw_ran_a_shell";
  std::filesystem::remove(mark);
  j["name"] = "x'; touch " + mark + "; echo '";
  const std::string dir = ::testing::TempDir() + "/rocefab_topo_draw_name";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/s.json") << j.dump();
  std::string out;
  EXPECT_EQ(RunCli("topo draw " + dir + "/s.json -o " + dir + "/named.png", &out), 0) << out;
  const std::string bin = std::getenv("ROCEFAB_BIN");
  FILE* p = popen(("cd " + dir + " && " + bin + " topo draw s.json 2>&1").c_str(), "r");
  ASSERT_NE(p, nullptr);
  char buf[512];
  out.clear();
  while (fgets(buf, sizeof buf, p)) out += buf;
  EXPECT_EQ(WEXITSTATUS(pclose(p)), 0) << out;
  EXPECT_FALSE(std::filesystem::exists(mark)) << "the name ran as a command: " << out;
  int pngs = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string f = e.path().filename().string();
    if (f.size() > 4 && f.substr(f.size() - 4) == ".png") ++pngs;
    EXPECT_EQ(f.find_first_of("'; /"), std::string::npos) << f;
  }
  EXPECT_EQ(pngs, 2) << out;
  EXPECT_NE(RunCli("topo draw " + dir + "/s.json -o /dev/full", &out), 0) << out;
  EXPECT_NE(out.find("cannot write /dev/full"), std::string::npos) << out;
}

// pfc.refresh shorter than a PFC frame's wire time queued XOFFs faster than the port sent them
// (1 ps: out of memory, found by a hostile-input session): the refresh runs at most once per
// frame time (84 B at 100 Mb/s: 6.72 us), so a 30 ms incast sends a bounded number.
TEST(CliTest, APfcRefreshShorterThanAFrameIsBoundedByTheWire) {
  ASSERT_NE(std::getenv("ROCEFAB_BIN"), nullptr) << "meson sets ROCEFAB_BIN";
  const std::string out_dir = ::testing::TempDir() + "/rocefab_refresh_1ps";
  std::string out;
  ASSERT_EQ(RunCli("sim " + std::string(ROCEFAB_SOURCE_DIR) +
                       "/configs/scenarios/incast-pfc-100m.json -q --out " + out_dir +
                       " --set duration=30ms --set pfc.refresh=1ps",
                   &out),
            0)
      << out;
  std::ifstream in(out_dir + "/summary.json");
  const nlohmann::json s = nlohmann::json::parse(in);
  uint64_t most = 0;
  for (const auto& [name, sw] : s["switches"].items()) {
    for (const auto& p : sw["ports"]) {
      for (const auto& [pg, c] : p["pfc"].items())
        most = std::max(most, c["tx_xoff"].get<uint64_t>());
    }
  }
  EXPECT_GT(most, 100u) << "refreshed while congested";
  EXPECT_LE(most, 30 * kMs / (84 * 8 * 10 * kNs)) << "at most one XOFF per frame time";
}

// --set overrides a field by its JSON path, through the strict reader; bad overrides name
// themselves and the rule.
TEST(CliTest, SetOverridesAFieldThroughTheStrictReader) {
  ASSERT_NE(std::getenv("ROCEFAB_BIN"), nullptr) << "meson sets ROCEFAB_BIN";
  const std::string sc =
      std::string(ROCEFAB_SOURCE_DIR) + "/configs/scenarios/quickstart-rdma.json";
  const std::string out_dir = ::testing::TempDir() + "/rocefab_set";
  std::string out;
  ASSERT_EQ(RunCli("sim " + sc + " -q --out " + out_dir +
                       " --set topology.clos.link_rate=1Gbps --set duration=5ms"
                       " --set traffic.0.iterations=3",
                   &out),
            0)
      << out;
  std::ifstream in(out_dir + "/summary.json");
  const nlohmann::json s = nlohmann::json::parse(in);
  EXPECT_EQ(s["rdma"][0]["iterations"], 3);
  EXPECT_LT(s["rdma"][0]["bw_avg_gbps"].get<double>(), 1.0) << "the links run at 1 Gb/s";
  struct Bad {
    const char* set;
    const char* message;
  } bad[] = {
      {"topology.clos.link_rate=fast", "topology.clos.link_rate: expected a rate"},
      {"topology.clos.lnk_rate=1Gbps", "lnk_rate"},
      {"traffic.9.iterations=3", "--set traffic.9.iterations=3: index 9 past the end (4 item(s))"},
      {"duration", "--set duration: expected KEY=VALUE"},
      {"seed.x=1", "--set seed.x=1: 'seed' is a number, not an object or array"},
  };
  for (const Bad& b : bad) {
    EXPECT_EQ(RunCli("sim " + sc + " -q --set " + b.set, &out), 2) << b.set;
    EXPECT_NE(out.find(b.message), std::string::npos) << b.set << ": " << out;
    EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << "one line: " << out;
  }
  // rocefab diff: the run with 1 Gb/s links against the shipped 10 Gb/s one (the same --set).
  const std::string base_dir = ::testing::TempDir() + "/rocefab_set_base";
  ASSERT_EQ(RunCli("sim " + sc + " -q --out " + base_dir +
                       " --set duration=5ms --set traffic.0.iterations=3",
                   &out),
            0)
      << out;
  EXPECT_EQ(RunCli("diff " + base_dir + " " + out_dir, &out), 1) << out;
  EXPECT_NE(out.find("rdma write_bw h0->h2 Gb/s"), std::string::npos) << out;
  EXPECT_NE(out.find("figures differ"), std::string::npos) << out;
  EXPECT_EQ(RunCli("diff " + base_dir + " " + base_dir + "/summary.json", &out), 0) << out;
  EXPECT_NE(out.find("0 of "), std::string::npos) << out;
  EXPECT_EQ(RunCli("diff " + base_dir + " /nonexistent", &out), 2) << out;
  // check takes it too: the ARP-flood incident's cure, without editing the file.
  const std::string arp =
      std::string(ROCEFAB_SOURCE_DIR) + "/configs/scenarios/arp-flood-deadlock.json";
  EXPECT_EQ(RunCli("check " + arp, &out), 1) << out;
  EXPECT_EQ(RunCli("check --set drop_lossless_on_incomplete_arp=true " + arp, &out), 0) << out;
  // ... after the file as well, and a bad one is refused there too (it was once ignored).
  EXPECT_EQ(RunCli("check " + arp + " --set drop_lossless_on_incomplete_arp=true", &out), 0) << out;
  EXPECT_EQ(RunCli("check " + arp + " --set topology.clos.link_rat=1Gbps", &out), 2) << out;
  EXPECT_NE(out.find("link_rat: unknown key"), std::string::npos) << out;
  EXPECT_EQ(RunCli("check " + arp + " --bogus", &out), 2) << out;
  EXPECT_EQ(out.find("problem(s)"), std::string::npos) << "refused before checking: " << out;
  // --duration is the scenario's duration as the reader sees it (perftest windows follow it).
  EXPECT_EQ(RunCli("sim " + sc + " -q --duration 0ns", &out), 2) << out;
  EXPECT_NE(out.find("duration: must be at least 1ns"), std::string::npos) << out;
}

}  // namespace
}  // namespace rocefab

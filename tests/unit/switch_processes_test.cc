// One switch per process (rocefab live --processes): the fabric builder's slice of one switch
// (FabricOptions::only_switch) and the merge of the switch processes' summaries.
#include "run/switch_processes.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>

#include "common/eal.h"
#include "common/runtime/sim_runner.h"
#include "fabric/fabric.h"
#include "run/prometheus.h"

namespace rocefab {
namespace {

Scenario QuickstartRdma() {
  std::ifstream in(std::string(ROCEFAB_SOURCE_DIR) + "/configs/scenarios/quickstart-rdma.json");
  auto s = Scenario::FromJson(nlohmann::json::parse(in), ROCEFAB_SOURCE_DIR);
  EXPECT_TRUE(s.ok()) << s.message();
  return s.value();
}

rte_mempool* Pool() {
  static rte_mempool* pool = CreateHostOnlyPktPool("switch_proc_test", 8191).value();
  return pool;
}

// Each switch's slice runs that switch and its hosts only, binds each link to another switch
// through attach_remote (both ends of every switch-switch link, once each, over all slices),
// and reports only its own switch, hosts and the RDMA tests its hosts measure; the slices add
// up to the whole fabric.
TEST(SwitchSliceTest, SlicesAddUpToTheWholeFabric) {
  const Scenario s = QuickstartRdma();
  SimRunner whole_runner(Pool());
  FabricOptions whole_opt;
  whole_opt.fib = FibLayout::kPrefixHash;
  auto whole = Fabric::Build(s, &whole_runner, whole_opt);
  ASSERT_TRUE(whole.ok()) << whole.message();
  const size_t whole_nodes = whole.value()->num_switches() + whole.value()->num_hosts();

  std::map<size_t, int> remote_ends;  // plan link -> ends bound by attach_remote
  size_t nodes = 0, rdma_tests = 0;
  std::set<std::string> switches_reported, hosts_reported;
  for (const auto& sw : s.topology.switches) {
    SimRunner runner(Pool());
    FabricOptions opt;
    opt.fib = FibLayout::kPrefixHash;
    opt.only_switch = sw.name;
    opt.attach_remote = [&](size_t link, uint32_t sw_node, uint16_t, BitRate rate) {
      ++remote_ends[link];
      EXPECT_EQ(sw_node, 0u) << "the slice's switch is its first node";
      EXPECT_EQ(rate, s.topology.links[link].rate);
      return Status();
    };
    auto f = Fabric::Build(s, &runner, opt);
    ASSERT_TRUE(f.ok()) << f.message();
    size_t local_hosts = 0;
    for (size_t h = 0; h < s.topology.hosts.size(); ++h) {
      const bool mine = s.topology.hosts[h].tor == sw.name;
      EXPECT_EQ(f.value()->local_host(h), mine);
      EXPECT_EQ(f.value()->host_node(h) != UINT32_MAX, mine) << s.topology.hosts[h].name;
      local_hosts += mine;
    }
    // The slice's nodes: its switch, its hosts and no observer that would act on all (the
    // scenario asks for deadlock detection).
    ASSERT_TRUE(s.detect_deadlocks);
    EXPECT_EQ(f.value()->observer_nodes().size(), 0u);
    nodes += 1 + local_hosts;
    const nlohmann::json sum = f.value()->Summary();
    ASSERT_EQ(sum["switches"].size(), 1u) << sum["switches"].dump();
    EXPECT_TRUE(sum["switches"].contains(sw.name));
    EXPECT_TRUE(switches_reported.insert(sw.name).second);
    EXPECT_EQ(sum["hosts"].size(), local_hosts);
    for (const auto& [name, h] : sum["hosts"].items())
      EXPECT_TRUE(hosts_reported.insert(name).second);
    for (const auto& r : sum["rdma"]) {
      EXPECT_EQ(s.topology.hosts[s.topology.HostIndex(r["from"])].tor, sw.name) << r.dump();
      ++rdma_tests;
    }
  }
  EXPECT_EQ(nodes, whole_nodes);
  EXPECT_EQ(hosts_reported.size(), s.topology.hosts.size());
  EXPECT_EQ(rdma_tests, whole.value()->Summary()["rdma"].size());
  size_t switch_links = 0;
  for (size_t li = 0; li < s.topology.links.size(); ++li) {
    const auto& l = s.topology.links[li];
    const bool between_switches =
        s.topology.SwitchIndex(l.a) >= 0 && s.topology.SwitchIndex(l.b) >= 0;
    EXPECT_EQ(remote_ends.count(li) ? remote_ends[li] : 0, between_switches ? 2 : 0)
        << l.a << "-" << l.b;
    switch_links += between_switches;
  }
  EXPECT_EQ(switch_links, 4u);  // 2 ToRs x 2 spines
}

TEST(SwitchSliceTest, UnknownSwitchIsAnError) {
  SimRunner runner(Pool());
  FabricOptions opt;
  opt.fib = FibLayout::kPrefixHash;
  opt.only_switch = "tor9";
  auto f = Fabric::Build(QuickstartRdma(), &runner, opt);
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.message().find("tor9"), std::string::npos) << f.message();
}

nlohmann::json Part(const std::string& sw, const std::string& host, bool faithful,
                    double late_fraction, uint64_t lost) {
  return {{"scenario", "x"},
          {"runner", "live"},
          {"switches", {{sw, {{"rx", 1}}}}},
          {"hosts", {{host, {{"tx", 2}}}}},
          {"host_ports", {{host, {{"ethdev", {{"rx_packets", 3}}}}}}},
          {"pause_spread", {{sw, {{"first_paused_at_us", 0}}}}},
          {"nic_watchdogs", nlohmann::json::object()},
          {"links", {{sw + "/p2", {{"peer", "spine0/p0"}}}}},
          {"pings", {{{"from", host}}}},
          {"flows", nlohmann::json::array()},
          {"rdma", {{{"from", host}, {"test", "write_bw"}}}},
          {"events", nlohmann::json::array()},
          {"notes", {"live: same note", "live: " + sw}},
          {"lost_frames", lost},
          {"mbufs_in_use_after_run", 0},
          {"timing",
           {{"faithful", faithful},
            {"verdict", faithful ? "faithful within 1 us" : "NOT FAITHFUL: " + sw},
            {"deviation", {{"late_fraction", late_fraction}, {"max_us", 5.0}}}}}};
}

TEST(MergeSwitchSummariesTest, JoinsElementsSumsCountersAndKeepsTheLeastFaithfulTiming) {
  const auto m = MergeSwitchSummaries({{"tor0", Part("tor0", "h0", true, 0.0, 1)},
                                       {"tor1", Part("tor1", "h2", false, 0.2, 2)},
                                       {"spine0", Part("spine0", "hx", false, 0.5, 3)}});
  EXPECT_EQ(m["switches"].size(), 3u);
  EXPECT_EQ(m["hosts"].size(), 3u);
  EXPECT_EQ(m["host_ports"].size(), 3u);
  EXPECT_EQ(m["links"].size(), 3u);
  EXPECT_EQ(m["pings"].size(), 3u);
  EXPECT_EQ(m["rdma"].size(), 3u);
  EXPECT_EQ(m["rdma"][1]["from"], "h2");  // in the parts' order
  EXPECT_EQ(m["notes"].size(), 4u);       // the shared note once
  EXPECT_EQ(m["lost_frames"], 6u);
  EXPECT_FALSE(m["timing"]["faithful"].get<bool>());
  // spine0 has the largest fraction off schedule of the two not faithful.
  EXPECT_EQ(m["timing"]["verdict"],
            "NOT FAITHFUL: spine0 (switch process spine0, the least faithful of 3)");
  ASSERT_EQ(m["timing"]["processes"].size(), 3u);
  EXPECT_EQ(m["timing"]["processes"][0]["node"], "tor0");
  EXPECT_TRUE(m["timing"]["processes"][0]["faithful"].get<bool>());
}

// A UDP flow from tor0's host to tor1's: the sender's entry and the receiver's become one.
TEST(MergeSwitchSummariesTest, AFlowBetweenProcessesGetsItsReceiversCounts) {
  auto a = Part("tor0", "h0", true, 0.0, 0), b = Part("tor1", "h2", true, 0.0, 0);
  a["flows"] = {
      {{"id", 1},
       {"from", "h0"},
       {"to", "h2"},
       {"sent", 10},
       {"received", nullptr},
       {"lost", nullptr}},
      {{"id", 0}, {"from", "h0"}, {"to", "h1"}, {"sent", 5}, {"received", 5}, {"lost", 0}}};
  b["flows"] = {{{"id", 1},
                 {"from", "h0"},
                 {"to", "h2"},
                 {"sent", nullptr},
                 {"received", 7},
                 {"lost", nullptr},
                 {"latency_max_us", 3.5},
                 {"receiver_side", true}}};
  const auto m = MergeSwitchSummaries({{"tor0", a}, {"tor1", b}});
  ASSERT_EQ(m["flows"].size(), 2u) << m["flows"].dump();
  EXPECT_EQ(m["flows"][0]["id"], 0);
  const auto& f = m["flows"][1];
  EXPECT_EQ(f["sent"], 10);
  EXPECT_EQ(f["received"], 7);
  EXPECT_EQ(f["lost"], 3);
  EXPECT_EQ(f["latency_max_us"], 3.5);
  EXPECT_FALSE(f.contains("receiver_side"));
}

TEST(MergeSwitchSummariesTest, AllFaithfulIsFaithful) {
  const auto m = MergeSwitchSummaries(
      {{"tor0", Part("tor0", "h0", true, 0.0, 0)}, {"tor1", Part("tor1", "h2", true, 0.0, 0)}});
  EXPECT_TRUE(m["timing"]["faithful"].get<bool>());
  EXPECT_EQ(m["timing"]["verdict"].get<std::string>().rfind("faithful within 1 us", 0), 0u);
}

// A node whose frames do not add up is the run's error, naming it and its accounting; the
// processes' blocks merge into one that keeps it.
TEST(ConservationTest, AnUnbalancedNodeIsAnErrorThatNamesIt) {
  FrameBalance ok{
      .received = 10, .created = 2, .transmitted = 9, .dropped = 1, .consumed = 1, .held = 1};
  FrameBalance lost = ok;
  lost.transmitted -= 3;  // three frames gone without a counter
  FrameBalance duplicated = ok;
  duplicated.transmitted += 1;
  const auto good = ConservationBlock({{"tor0", ok}});
  EXPECT_TRUE(good["balanced"].get<bool>());
  EXPECT_EQ(good["received"], 10u);
  EXPECT_EQ(ConservationError({{"conservation", good}}), "");
  const auto bad = ConservationBlock({{"tor0", ok}, {"tor1", lost}, {"spine0", duplicated}});
  EXPECT_FALSE(bad["balanced"].get<bool>());
  ASSERT_EQ(bad["unbalanced"].size(), 2u);
  const std::string e = ConservationError({{"conservation", bad}});
  EXPECT_NE(e.find("tor1 lost 3 frame(s) without a counter (received 10 + created 2 != "
                   "transmitted 6 + dropped 1 + consumed 1 + held 1)"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("spine0 duplicated 1 frame(s)"), std::string::npos) << e;
  EXPECT_EQ(e.find("tor0"), std::string::npos) << "a balanced node is not named: " << e;
  const auto m =
      MergeSwitchSummaries({{"tor0", {{"conservation", good}}}, {"tor1", {{"conservation", bad}}}});
  EXPECT_FALSE(m["conservation"]["balanced"].get<bool>());
  EXPECT_EQ(m["conservation"]["nodes"], 4u);
  EXPECT_EQ(m["conservation"]["unbalanced"].size(), 2u);
  EXPECT_NE(ConservationError(m).find("tor1 lost 3"), std::string::npos);
}

// --processes --metrics-port: the parent's one exposition of the switch processes' own. Each
// family once with its HELP and TYPE, every node's samples under it, a node that did not answer
// marked down. The live test (tests/live/metrics_test.py) reads a real one with Prometheus'
// parser and promtool.
TEST(SwitchProcessesTest, MetricsOfTheProcessesMergeIntoOneExposition) {
  const std::string tor0 =
      "# HELP rocefab_run_time_seconds The live run's time since its time 0.\n"
      "# TYPE rocefab_run_time_seconds gauge\n"
      "rocefab_run_time_seconds{node=\"tor0\"} 0.5\n"
      "# HELP rocefab_port_transmitted_bytes_total Bytes sent.\n"
      "# TYPE rocefab_port_transmitted_bytes_total counter\n"
      "rocefab_port_transmitted_bytes_total{switch=\"tor0\",port=\"tor0/p0\"} 10\n"
      "rocefab_port_transmitted_bytes_total{switch=\"tor0\",port=\"tor0/p1\"} 11\n";
  auto replace_all = [](std::string t, const std::string& a, const std::string& b) {
    for (size_t p = t.find(a); p != std::string::npos; p = t.find(a, p + b.size())) {
      t.replace(p, a.size(), b);
    }
    return t;
  };
  const std::string spine0 = replace_all(tor0, "tor0", "spine0");
  const std::string merged = MergeExpositions(
      {{"tor0", true, tor0}, {"spine0", true, spine0}, {"tor1", false, "ignored 1\n"}});
  const std::string expect =
      "# HELP rocefab_run_time_seconds The live run's time since its time 0.\n"
      "# TYPE rocefab_run_time_seconds gauge\n"
      "rocefab_run_time_seconds{node=\"tor0\"} 0.5\n"
      "rocefab_run_time_seconds{node=\"spine0\"} 0.5\n"
      "# HELP rocefab_port_transmitted_bytes_total Bytes sent.\n"
      "# TYPE rocefab_port_transmitted_bytes_total counter\n"
      "rocefab_port_transmitted_bytes_total{switch=\"tor0\",port=\"tor0/p0\"} 10\n"
      "rocefab_port_transmitted_bytes_total{switch=\"tor0\",port=\"tor0/p1\"} 11\n"
      "rocefab_port_transmitted_bytes_total{switch=\"spine0\",port=\"spine0/p0\"} 10\n"
      "rocefab_port_transmitted_bytes_total{switch=\"spine0\",port=\"spine0/p1\"} 11\n"
      "# HELP rocefab_node_up 1 if the switch process answered this scrape, 0 if not (its "
      "samples are missing).\n"
      "# TYPE rocefab_node_up gauge\n"
      "rocefab_node_up{node=\"tor0\"} 1\n"
      "rocefab_node_up{node=\"spine0\"} 1\n"
      "rocefab_node_up{node=\"tor1\"} 0\n";
  EXPECT_EQ(merged, expect);
  // Nothing up: only the up gauge.
  EXPECT_EQ(MergeExpositions({{"tor0", false, tor0}}).find("rocefab_run_time"), std::string::npos);
  // A process's own gauges carry its node label, so the merge has no two samples of a series.
  FabricGauges g;
  g.node = "tor0";
  const std::string own = PrometheusText({}, g);
  EXPECT_NE(own.find("rocefab_mbufs_in_use{node=\"tor0\"} 0\n"), std::string::npos) << own;
  EXPECT_NE(PrometheusText({}, FabricGauges{}).find("rocefab_mbufs_in_use 0\n"), std::string::npos);
  // A scrape of a port nobody serves is an error naming it.
  auto none = ScrapeMetrics(1, 100 * kMs);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.message().find("127.0.0.1:1/metrics"), std::string::npos) << none.message();
}

}  // namespace
}  // namespace rocefab

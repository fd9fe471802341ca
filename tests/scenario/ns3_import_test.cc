// The reference simulator's inputs and outputs: the first millisecond of the shared anchor trace
// (shipped as tests/data/anchor_first_1ms.txt.xz: its 9,783 flows starting in [2.000 s, 2.001 s),
// in the reference's own file format) through the ns3-alistorage-128h scenarios (ECMP and
// ConWeave): import, every flow completes, FCT export layout, and the same results, byte for
// byte, on one thread and on two (SimRunner partitions). The full trace lives outside the
// repository (../shared/data/anchor-ns3/, used by bench/ns3_anchor.sh); the slice makes this test
// run anywhere.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "run/sim_fabric.h"
#include "tests/support/test_pool.h"
#include "topo/faults.h"

namespace rocefab {
namespace {

class Ns3ImportTest : public testing::PoolTest, public ::testing::WithParamInterface<const char*> {
 protected:
  struct Outcome {
    std::string fct;         // the exported fct.txt
    nlohmann::json summary;  // without "sim_events" (runner internals)
    nlohmann::json sim_events;
  };
  // Runs the slice through the scenario file `name` on `threads` threads and checks what every
  // run must satisfy.
  Outcome RunSlice(const std::string& name, int threads) {
    Outcome out;
    const std::string dir = std::string(ROCEFAB_SOURCE_DIR) + "/configs/scenarios";
    std::ifstream scenario_file(dir + "/" + name);
    auto j = nlohmann::json::parse(scenario_file);
    EXPECT_EQ(j["traffic"].size(), 1u);
    j["traffic"][0]["file"] =
        std::string(ROCEFAB_SOURCE_DIR) + "/tests/data/anchor_first_1ms.txt.xz";
    auto sc = Scenario::FromJson(j, dir);
    EXPECT_TRUE(sc.ok()) << sc.message();
    if (!sc.ok()) return out;
    Scenario s = sc.value();
    s.traffic[0].workload().duration = kMs;  // flows starting in [2.000 s, 2.001 s)
    s.traffic[0].workload().measure_from = 0;
    s.duration = 5 * kMs;
    auto fr = SimFabric::Create(s, pool_);
    EXPECT_TRUE(fr.ok()) << fr.message();
    if (!fr.ok()) return out;
    SimFabric& f = *fr.value();
    std::string why_one;
    auto used = f.SetThreads(threads, &why_one);
    EXPECT_TRUE(used.ok()) << used.message();
    EXPECT_EQ(used.value(), threads) << why_one;
    const FlowWorkload& w = *f.rdma()->workload();
    // The trace's first millisecond (counted by hand from the file: first line 97984 flows).
    EXPECT_EQ(w.records().size(), 9783u);
    EXPECT_EQ(w.records()[0].flow.src, 13);
    EXPECT_EQ(w.records()[0].flow.dst, 47);
    EXPECT_EQ(w.records()[0].flow.size, 4995u);
    EXPECT_EQ(w.records()[0].flow.start, 27 * kNs);
    f.Run();
    EXPECT_EQ(w.finished(), w.records().size()) << "every flow completes";
    for (size_t i = 0; i < f.num_switches(); ++i) {
      EXPECT_EQ(f.sw(i).drops(DropReason::kLosslessHeadroom), 0u) << f.sw(i).name();
    }
    const std::string path = ::testing::TempDir() + "/rocefab_fct.txt";
    EXPECT_TRUE(f.rdma()->WriteFct(path).ok());
    std::ifstream in(path);
    std::string line;
    size_t lines = 0;
    while (std::getline(in, line)) {
      out.fct += line + "\n";
      std::istringstream ls(line);
      int64_t src, dst, sport, dport, size, start, fct, ideal;
      EXPECT_TRUE(ls >> src >> dst >> sport >> dport >> size >> start >> fct >> ideal) << line;
      std::string extra;
      EXPECT_FALSE(ls >> extra)
          << "8 columns: sip dip sport dport size start_ns fct_ns standalone_fct_ns";
      EXPECT_GE(sport, 0xC000);
      EXPECT_GT(fct, 0);
      EXPECT_GE(fct, ideal * 97 / 100) << "FCT below the empty-fabric ideal: " << line;
      ++lines;
    }
    EXPECT_EQ(lines, w.records().size());
    const auto sum = f.rdma()->WorkloadSummary();
    EXPECT_GE(sum["slowdown_avg"].get<double>(), 1.0);
    out.summary = f.Summary();
    out.sim_events = out.summary["sim_events"];
    out.summary.erase("sim_events");
    return out;
  }
};

TEST_P(Ns3ImportTest, OneMillisecondSliceCompletesExportsTheReferenceLayoutOnAnyThreadCount) {
  const Outcome one = RunSlice(GetParam(), 1);
  const Outcome two = RunSlice(GetParam(), 2);
  EXPECT_EQ(one.sim_events["partitions"], 1);
  EXPECT_EQ(two.sim_events["partitions"], 2);
  // Two partitions (4 ToRs with their hosts, 4 spines each) meet every 1 us (the ToR-spine
  // links' propagation delay): at least one window per microsecond with traffic.
  EXPECT_EQ(two.sim_events["lookahead_ps"], kUs);
  EXPECT_GT(two.sim_events["windows"].get<uint64_t>(), 1000u);
  EXPECT_EQ(one.sim_events["arrive"], two.sim_events["arrive"]);
  EXPECT_EQ(one.sim_events["tx_free"], two.sim_events["tx_free"]);
  EXPECT_EQ(one.sim_events["timer"], two.sim_events["timer"]);
  ASSERT_FALSE(one.fct.empty());
  // 8 + 8 switches and 128 NICs, every frame of the slice accounted for.
  EXPECT_TRUE(one.summary["conservation"]["balanced"].get<bool>()) << one.summary["conservation"];
  EXPECT_EQ(one.summary["conservation"]["nodes"], 144u);
  EXPECT_TRUE(one.fct == two.fct) << "fct.txt differs between 1 and 2 threads";
  EXPECT_EQ(one.summary, two.summary) << "summary.json differs between 1 and 2 threads";
}

// A source stops at the scenario's duration: with the run cut to 400 us, the slice's flows that
// would start later are not started, and the workload summary counts them.
class Ns3DurationTest : public testing::PoolTest {};

TEST_F(Ns3DurationTest, FlowsStartingAfterTheDurationAreNotStartedAndCounted) {
  const std::string dir = std::string(ROCEFAB_SOURCE_DIR) + "/configs/scenarios";
  std::ifstream scenario_file(dir + "/ns3-alistorage-128h.json");
  auto j = nlohmann::json::parse(scenario_file);
  j["traffic"][0]["file"] = std::string(ROCEFAB_SOURCE_DIR) + "/tests/data/anchor_first_1ms.txt.xz";
  j["duration"] = "400us";
  j["traffic"][0]["measure_from"] = "0ms";
  auto sc = Scenario::FromJson(j, dir);
  ASSERT_TRUE(sc.ok()) << sc.message();
  auto fr = SimFabric::Create(sc.value(), pool_);
  ASSERT_TRUE(fr.ok()) << fr.message();
  const FlowWorkload& w = *fr.value()->rdma()->workload();
  ASSERT_GT(w.records().size(), 0u);
  for (const auto& r : w.records()) ASSERT_LT(r.flow.start, 400 * kUs);
  const auto sum = fr.value()->rdma()->WorkloadSummary();
  const uint64_t after = sum["flows_after_duration"].get<uint64_t>();
  EXPECT_GT(after, 0u);
  EXPECT_EQ(w.records().size() + after, 9783u) << "every flow of the slice started or counted";
}

INSTANTIATE_TEST_SUITE_P(Schemes, Ns3ImportTest,
                         ::testing::Values("ns3-alistorage-128h.json",
                                           "ns3-alistorage-128h-conweave.json"),
                         [](const auto& info) {
                           return std::string(info.index == 0 ? "Ecmp" : "ConWeave");
                         });

// The reference's topology file through scripts/ns3_to_rocefab.py: a 16-host leaf-spine in its
// format ("nodes switches links", switch ids, "src dst rate delay error_rate" lines) and a flow
// file in its format become a scenario rocefab loads and runs to completion.
TEST(Ns3ConverterTest, TopologyAndFlowFilesBecomeARunnableScenario) {
  const std::string dir = ::testing::TempDir() + "/rocefab_ns3conv";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  {
    std::ofstream t(dir + "/topo.txt");
    t << "22 6 24\n16 17 18 19 20 21\n";  // hosts 0..15, ToRs 16..19, spines 20..21
    for (int h = 0; h < 16; ++h) t << h << " " << 16 + h / 4 << " 100Gbps 1000ns 0\n";
    for (int tor = 16; tor < 20; ++tor) {
      for (int spine = 20; spine < 22; ++spine) {
        t << tor << " " << spine << " 100Gbps 1000ns " << (tor == 16 && spine == 20 ? "0.001" : "0")
          << "\n";
      }
    }
    std::ofstream f(dir + "/flows.txt");
    f << "24\n";
    for (int i = 0; i < 24; ++i) {
      f << i % 16 << " " << (i * 7 + 5) % 16 << " 3 " << 1000 * (i + 1) << " 2.0000" << 10 + i
        << "\n";
    }
  }
  const std::string cmd = std::string("/usr/bin/python3 ") + ROCEFAB_SOURCE_DIR +
                          "/scripts/ns3_to_rocefab.py " + dir + "/topo.txt " + dir + "/flows.txt";
  ASSERT_EQ(std::system((cmd + " -o " + dir + "/scenario.json > /dev/null").c_str()), 0) << cmd;
  ASSERT_EQ(std::system((cmd + " --compat none -o " + dir + "/plain.json > /dev/null").c_str()), 0);
  auto plain = Scenario::Load(dir + "/plain.json");
  ASSERT_TRUE(plain.ok()) << plain.message();
  EXPECT_EQ(plain.value().compat->name(), "none");
  auto sc = Scenario::Load(dir + "/scenario.json");
  ASSERT_TRUE(sc.ok()) << sc.message();
  Scenario s = sc.value();
  ASSERT_EQ(s.topology.switches.size(), 6u);
  ASSERT_EQ(s.topology.hosts.size(), 16u);
  ASSERT_EQ(s.topology.links.size(), 24u);
  EXPECT_EQ(s.topology.switches[0].name, "tor0");
  EXPECT_EQ(s.topology.switches[0].role, SwitchRole::kTor);
  EXPECT_EQ(s.topology.switches[5].name, "spine1");
  EXPECT_EQ(s.topology.switches[5].role, SwitchRole::kSpine);
  EXPECT_EQ(s.topology.hosts[5].name, "h5");
  EXPECT_EQ(s.topology.hosts[5].tor, "tor1");
  EXPECT_EQ(s.compat->name(), "conweave-ns3") << "a converted scenario models the reference";
  EXPECT_EQ(s.sw.buffer.lossless.pg.xon_offset, 16) << "the compat model's, not the template's";
  EXPECT_EQ(s.topology.links[0].delay(), kUs) << "1000ns of delay: a 200 m cable";
  ASSERT_EQ(s.faults.size(), 2u) << "the link with an error rate: loss both ways";
  EXPECT_EQ(s.faults[0].kind, Fault::Kind::kLinkLoss);
  EXPECT_DOUBLE_EQ(s.faults[0].rate, 0.001);
  EXPECT_EQ(s.traffic[0].workload().trace_path,
            std::filesystem::path(dir + "/flows.txt").lexically_normal().string());
  s.duration = 2 * kMs;
  auto pool = CreateHostOnlyPktPool("ns3conv", 32767, 2048);
  ASSERT_TRUE(pool.ok()) << pool.message();
  {
    auto f = SimFabric::Create(s, pool.value());
    ASSERT_TRUE(f.ok()) << f.message();
    f.value()->Run();
    const FlowWorkload& w = *f.value()->rdma()->workload();
    EXPECT_EQ(w.records().size(), 24u);
    EXPECT_EQ(w.finished(), 24u) << "every flow completes (go-back-N recovers the lost packets)";
  }
  EXPECT_EQ(rte_mempool_in_use_count(pool.value()), 0u);
  rte_mempool_free(pool.value());
}

}  // namespace
}  // namespace rocefab

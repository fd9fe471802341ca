// The reference simulator's inputs and outputs: the first millisecond of the shared anchor trace
// (shipped as tests/data/anchor_first_1ms.txt.xz: its 9,783 flows starting in [2.000 s, 2.001 s),
// in the reference's own file format) through the ns3-alistorage-128h scenarios (ECMP and
// ConWeave): import, every flow completes, FCT export layout, and the same results, byte for
// byte, on one thread and on two (SimRunner partitions). The full trace lives outside the
// repository (../shared/data/anchor-ns3/, used by bench/ns3_anchor.sh); the slice makes this test
// run anywhere.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/support/test_pool.h"
#include "topo/fabric.h"

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
    s.traffic[0].duration = kMs;  // flows starting in [2.000 s, 2.001 s)
    s.traffic[0].measure_from = 0;
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
  EXPECT_TRUE(one.fct == two.fct) << "fct.txt differs between 1 and 2 threads";
  EXPECT_EQ(one.summary, two.summary) << "summary.json differs between 1 and 2 threads";
}

INSTANTIATE_TEST_SUITE_P(Schemes, Ns3ImportTest,
                         ::testing::Values("ns3-alistorage-128h.json",
                                           "ns3-alistorage-128h-conweave.json"),
                         [](const auto& info) {
                           return std::string(info.index == 0 ? "Ecmp" : "ConWeave");
                         });

}  // namespace
}  // namespace rocefab

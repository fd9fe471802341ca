// The reference simulator's inputs and outputs: the first millisecond of the shared anchor trace
// (shipped as tests/data/anchor_first_1ms.txt.xz: its 9,783 flows starting in [2.000 s, 2.001 s),
// in the reference's own file format) through the ns3-alistorage-128h scenario (ECMP): import,
// every flow completes, FCT export layout. The full trace lives outside the repository
// (../shared/data/anchor-ns3/, used by bench/ns3_anchor.sh); the slice makes this test run anywhere.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/support/test_pool.h"
#include "topo/fabric.h"

namespace rocefab {
namespace {

class Ns3ImportTest : public testing::PoolTest {};

TEST_F(Ns3ImportTest, OneMillisecondSliceCompletesAndExportsTheReferenceLayout) {
  const std::string dir = std::string(ROCEFAB_SOURCE_DIR) + "/configs/scenarios";
  std::ifstream scenario_file(dir + "/ns3-alistorage-128h.json");
  auto j = nlohmann::json::parse(scenario_file);
  ASSERT_EQ(j["traffic"].size(), 1u);
  j["traffic"][0]["file"] = std::string(ROCEFAB_SOURCE_DIR) + "/tests/data/anchor_first_1ms.txt.xz";
  auto sc = Scenario::FromJson(j, dir);
  ASSERT_TRUE(sc.ok()) << sc.message();
  Scenario s = sc.value();
  ASSERT_EQ(s.traffic.size(), 1u);
  s.traffic[0].duration = kMs;     // flows starting in [2.000 s, 2.001 s)
  s.traffic[0].measure_from = 0;
  s.duration = 5 * kMs;
  auto fr = SimFabric::Create(s, pool_);
  ASSERT_TRUE(fr.ok()) << fr.message();
  SimFabric& f = *fr.value();
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
  ASSERT_TRUE(f.rdma()->WriteFct(path).ok());
  std::ifstream in(path);
  std::string line;
  size_t lines = 0;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    int64_t src, dst, sport, dport, size, start, fct, ideal;
    ASSERT_TRUE(ls >> src >> dst >> sport >> dport >> size >> start >> fct >> ideal) << line;
    std::string extra;
    EXPECT_FALSE(ls >> extra) << "8 columns: sip dip sport dport size start_ns fct_ns standalone_fct_ns";
    EXPECT_GE(sport, 0xC000);
    EXPECT_GT(fct, 0);
    EXPECT_GE(fct, ideal * 97 / 100) << "FCT below the empty-fabric ideal: " << line;
    ++lines;
  }
  EXPECT_EQ(lines, w.records().size());
  const auto sum = f.rdma()->WorkloadSummary();
  EXPECT_GE(sum["slowdown_avg"].get<double>(), 1.0);
}

}  // namespace
}  // namespace rocefab

// The reference simulator's inputs and outputs: a 1 ms slice of the shared anchor trace through
// the ns3-alistorage-128h scenario (ECMP): import, every flow completes, FCT export layout.
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
  auto sc = Scenario::Load(std::string(ROCEFAB_SOURCE_DIR) + "/configs/scenarios/ns3-alistorage-128h.json");
  if (!sc.ok() && sc.message().find("cannot open") != std::string::npos) {
    GTEST_SKIP() << "the anchor trace (shared/data/anchor-ns3) is not beside the repository: " << sc.message();
  }
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
  EXPECT_GT(w.records().size(), 9000u);
  EXPECT_LT(w.records().size(), 11000u);
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

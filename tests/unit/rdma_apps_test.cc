#include "nic-emu/rdma_apps.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace rocefab {
namespace {

// One finished flow of `size` bytes with slowdown 2.
FlowWorkload::Record Finished(uint64_t size) {
  FlowWorkload::Record r;
  r.flow.size = size;
  r.flow.start = 10 * kUs;
  r.ideal = 5 * kUs;
  r.fct = 10 * kUs;
  return r;
}

// The reference simulator's size buckets: edges 4,000 / 16,000 / 64,000 / 256,000 B (decimal
// KB), intervals (lo, hi] (shared/data/anchor-ns3/README.md).
TEST(SlowdownSummaryTest, SizeBucketsAreDecimalKbWithUpperEdgeIncluded) {
  const std::vector<std::pair<uint64_t, std::string>> cases = {
      {4000, "le_4k"},    {4001, "4k_16k"},     {4095, "4k_16k"},
      {4096, "4k_16k"},   {16000, "4k_16k"},    {16001, "16k_64k"},
      {64000, "16k_64k"}, {256000, "64k_256k"}, {256001, "gt_256k"}};
  const char* sizes[] = {"le_4k", "4k_16k", "16k_64k", "64k_256k", "gt_256k"};
  for (const auto& [size, want] : cases) {
    const auto s = SlowdownSummary({Finished(size)}, 0);
    for (const char* name : sizes) {
      EXPECT_EQ(s["buckets"][name]["count"].get<size_t>(), name == want ? 1u : 0u)
          << size << " B flow, bucket " << name << " (expected in " << want << ")";
    }
    EXPECT_EQ(s["buckets"]["all"]["count"].get<size_t>(), 1u);
    EXPECT_DOUBLE_EQ(s["buckets"][want]["avg"].get<double>(), 2.0);
  }
}

TEST(SlowdownSummaryTest, BdpSplitIsBelow104000Bytes) {
  const auto s = SlowdownSummary({Finished(103999), Finished(104000), Finished(104001)}, 0);
  EXPECT_EQ(s["buckets"]["lt_bdp"]["count"].get<size_t>(), 1u);
  EXPECT_EQ(s["buckets"]["ge_bdp"]["count"].get<size_t>(), 2u);
}

TEST(SlowdownSummaryTest, CountsOnlyFinishedFlowsFromMeasureStart) {
  FlowWorkload::Record early = Finished(1000), unfinished = Finished(1000);
  early.flow.start = 1 * kUs;
  unfinished.fct = -1;
  const auto s = SlowdownSummary({early, unfinished, Finished(1000)}, 5 * kUs);
  EXPECT_EQ(s["flows"].get<size_t>(), 3u);
  EXPECT_EQ(s["finished"].get<size_t>(), 2u);
  EXPECT_EQ(s["counted"].get<size_t>(), 1u);
  EXPECT_EQ(s["buckets"]["le_4k"]["count"].get<size_t>(), 1u);
}

TEST(ClosedLoopStallsTest, NoStallNoWarning) {
  const auto r = AnalyzeClosedLoop({2 * kUs, 2 * kUs, 3 * kUs, 19 * kUs});  // max < 10 x median
  EXPECT_FALSE(r.warning);
  EXPECT_EQ(r.stalls, 0u);
  EXPECT_EQ(r.suppressed, 0u);
  EXPECT_EQ(r.corrected_p99, 19 * kUs);
}

TEST(ClosedLoopStallsTest, AStallCountsTheOperationsItSuppressedAndPutsThemBack) {
  std::vector<Time> lat(99, 2 * kUs);
  lat.push_back(201 * kUs);  // one stall: 201 us at a 2 us median
  const auto r = AnalyzeClosedLoop(lat);
  EXPECT_TRUE(r.warning);
  EXPECT_EQ(r.median, 2 * kUs);
  EXPECT_EQ(r.stalls, 1u);
  EXPECT_EQ(r.suppressed, 99u);  // floor(201 / 2) - 1 operations never posted
  // Put back: 199, 197, ..., 3 us (99 samples) with the 100 measured ones: 199 samples, whose
  // p99 (the 198th smallest, rank ceil(0.99 x 199) = 198) is 199 us.
  EXPECT_EQ(r.corrected_p99, 199 * kUs);
  EXPECT_GT(r.corrected_avg, 50.0 * kUs);
}

// The reference simulator's flow files, and what bench/fuzz/fuzz_flow_trace found in them.
class FlowTraceTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = ::testing::TempDir() + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
};

TEST_F(FlowTraceTest, ReadsFlowsRelativeToTheTimeBase) {
  auto r =
      ReadFlowTrace(Write("ok.txt", "2\n0 1 3 1000 2.000001\n2 3 3 100 5000 2.5\n"), 4, 2 * kSec);
  ASSERT_TRUE(r.ok()) << r.message();
  ASSERT_EQ(r.value().size(), 2u);
  EXPECT_EQ(r.value()[0].src, 0);
  EXPECT_EQ(r.value()[0].size, 1000u);
  EXPECT_EQ(r.value()[0].start, kUs);
  EXPECT_EQ(r.value()[1].dst, 3);
  EXPECT_EQ(r.value()[1].size, 5000u) << "with a dport column, size is the next to last";
  EXPECT_EQ(r.value()[1].start, 500 * kMs);
}

TEST_F(FlowTraceTest, AHugeFlowCountIsAnErrorNotAnAllocation) {
  // fuzz crash-4854092f: "32333032333000=..." as the count made the reader reserve 7e12 bytes.
  auto r = ReadFlowTrace(Write("huge.txt", "32333032333000\n0 1 3 1000 2.0\n"), 4, 2 * kSec);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("header says 32333032333000 flows, file has 1"), std::string::npos)
      << r.message();
}

TEST_F(FlowTraceTest, OutOfRangeNumbersNameTheLineAndTheRule) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"1\n0 9 3 1000 2.0\n", ":2: host index out of range 0..3"},
      {"1\n1e300 1 3 1000 2.0\n", ":2: host index out of range"},
      {"1\n0 1 3 -5 2.0\n", ":2: size must be 1..1e15 bytes"},
      {"1\n0 1 3 1e300 2.0\n", ":2: size must be 1..1e15 bytes"},
      {"1\n0 1 3 1000 1e300\n", ":2: start must be 0..1e6 s"},
      {"1\n0 1 3 1000 1.0\n", ":2: start before time_base"},
      {"1\n0 1 3 nan 2.0\n", ":2: expected"},
      {"x\n", ":1: expected the flow count"},
  };
  for (const auto& [text, want] : cases) {
    auto r = ReadFlowTrace(Write("bad.txt", text), 4, 2 * kSec);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.message().find(want), std::string::npos) << text << ": " << r.message();
  }
}

// Flow-size CDFs a hostile-input session fed the workload generator: a mean of 0 bytes made it
// start flows without advancing time, a 1e18-byte point overflowed the start times; both ran
// until the memory was gone (std::bad_alloc after 12 GB). Each is refused naming the rule.
TEST_F(FlowTraceTest, FlowSizeCdfsThatCannotMakeFlowsAreRefused) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"0 0\n0 100\n", "the mean flow size is 0"},
      {"0 0\n1e18 100\n", ":2: flow size 1e+18 bytes is over the limit of 1e15"},
      {"100 0\n200 50 7\n300 100\n", ":2: expected \"<bytes> <percent>\""},
      {"100 0\nnan 100\n", ":2: expected"},
      {"100 0\n200 150\n", ":2: expected"},
      {"200 0\n100 100\n", ":2: CDF must be non-decreasing"},
      {"100 100\n", "at least two points"},
  };
  for (const auto& [text, want] : cases) {
    auto r = FlowSizeCdf::Load(Write("cdf.txt", text));
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.message().find(want), std::string::npos) << text << ": " << r.message();
  }
  auto ok = FlowSizeCdf::Load(Write("cdf.txt", "# size pct\n100 0\n\n300 100\n"));
  ASSERT_TRUE(ok.ok()) << ok.message();
  EXPECT_DOUBLE_EQ(ok.value().Mean(), 200);
}

TEST_F(FlowTraceTest, AnXzPathIsNeverSeenByAShell) {
  // The old reader ran popen("xz -dc '" + path + "'"): a quote in the path reached a shell.
  const std::string dir = ::testing::TempDir() + "/it's; touch pwned";
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/flows.txt";
  std::ofstream(path) << "1\n0 1 3 1000 2.0\n";
  ASSERT_EQ(std::system(("xz -kf \"" + path + "\"").c_str()), 0) << "xz-utils (scripts/setup.sh)";
  auto r = ReadFlowTrace(path + ".xz", 4, 2 * kSec);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r.value().size(), 1u);
  EXPECT_FALSE(std::filesystem::exists("pwned"));
  auto missing = ReadFlowTrace(dir + "/none.txt.xz", 4, 2 * kSec);
  EXPECT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("xz -dc failed"), std::string::npos) << missing.message();
}

}  // namespace
}  // namespace rocefab

// CompareSummaries: the figures it compares between a sim and a live summary, each against its
// stated tolerance (docs/crosscheck.md).
#include "run/crosscheck.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace rocefab {
namespace {

nlohmann::json Summary(double bw, double typical, double p99, uint64_t xoff,
                       uint64_t lossless_drops, uint64_t spine0_rx, uint64_t spine1_rx) {
  nlohmann::json s;
  s["rdma"] = {{{"test", "write_bw"}, {"from", "h0"}, {"to", "h2"}, {"bw_avg_gbps", bw}},
               {{"test", "write_lat"},
                {"from", "h1"},
                {"to", "h3"},
                {"samples", 1000},
                {"t_typical_us", typical},
                {"t_p99_us", p99},
                {"t_p999_us", p99}}};
  s["pingmesh"] = nullptr;
  s["workload"] = nullptr;
  s["pings"] = nlohmann::json::array();
  s["flows"] = nlohmann::json::array();
  s["hosts"] = nlohmann::json::object();
  auto sw = [](uint64_t rx, uint64_t xoff, uint64_t drops) {
    nlohmann::json port = {{"rx_packets", rx}, {"pfc", {{"3", {{"tx_xoff", xoff}}}}}};
    nlohmann::json d = nlohmann::json::object();
    if (drops > 0) d["lossless_headroom_exhausted"] = drops;
    return nlohmann::json{{"ports", {port}}, {"drops", d}};
  };
  s["switches"] = {{"tor0", sw(0, xoff, lossless_drops)},
                   {"spine0", sw(spine0_rx, 0, 0)},
                   {"spine1", sw(spine1_rx, 0, 0)}};
  return s;
}

std::map<std::string, bool> Verdicts(const nlohmann::json& a, const nlohmann::json& b) {
  std::map<std::string, bool> v;
  for (const auto& r : CompareSummaries(a, b, {"spine0", "spine1"}, 1.0)) v[r.figure] = r.agree;
  return v;
}

// rocefab diff: changed figures first, largest relative change first; equal runs: none.
TEST(DiffTest, ChangedFiguresComeFirstByRelativeChange) {
  const auto a = Summary(8.0, 2.0, 100.0, 40, 0, 500, 500);
  size_t changed = 99;
  auto rows = DiffSummaries(a, a, &changed);
  EXPECT_EQ(changed, 0u);
  EXPECT_EQ(rows.size(), 10u);
  EXPECT_EQ(FormatDiff(rows, changed, "A", "B"), "0 of 10 figures differ (A = A, B = B)\n");
  // p99 and p99.9 (the helper sets both) +50 %, then write_bw -25 %.
  rows = DiffSummaries(a, Summary(6.0, 2.0, 150.0, 40, 0, 500, 500), &changed);
  ASSERT_EQ(changed, 3u);
  EXPECT_EQ(rows[0].figure.rfind("rdma write_lat h1->h3 t_p99", 0), 0u) << rows[0].figure;
  EXPECT_DOUBLE_EQ(rows[0].relative, 0.5);
  EXPECT_DOUBLE_EQ(rows[1].relative, 0.5);
  EXPECT_EQ(rows[2].figure, "rdma write_bw h0->h2 Gb/s");
  EXPECT_DOUBLE_EQ(rows[2].relative, -0.25);
  EXPECT_EQ(rows[3].a, rows[3].b) << "the unchanged come after";
  const std::string table = FormatDiff(rows, changed, "A", "B");
  EXPECT_NE(table.find("+50.0%"), std::string::npos) << table;
  EXPECT_NE(table.find("-25.0%"), std::string::npos) << table;
  EXPECT_NE(table.find("3 of 10 figures differ"), std::string::npos) << table;
}

TEST(CrosscheckTest, EqualSummariesAgreeOnEveryFigure) {
  const auto s = Summary(8.0, 2.0, 100.0, 40, 0, 500, 500);
  const auto v = Verdicts(s, s);
  EXPECT_EQ(v.size(), 1u + 4u + 3u + 2u) << "bw, lat x4, PFC per switch, spine shares";
  for (const auto& [figure, agree] : v) EXPECT_TRUE(agree) << figure;
}

TEST(CrosscheckTest, EachFigureDisagreesBeyondItsTolerance) {
  const auto sim = Summary(8.0, 2.0, 100.0, 40, 0, 500, 500);
  // Within: bw -4 %, p99 +10 %, typical +1.9 us (under 2 x the 1 us tolerance), XOFF +20 %.
  auto v = Verdicts(sim, Summary(7.7, 3.9, 110.0, 48, 0, 540, 460));
  for (const auto& [figure, agree] : v) EXPECT_TRUE(agree) << figure;
  // Beyond: bw -6 %, p99 +15 %, XOFF +30 %, a lossless drop, spine shares 10 points apart.
  v = Verdicts(sim, Summary(7.5, 2.0, 115.0, 52, 1, 600, 400));
  EXPECT_FALSE(v["rdma write_bw h0->h2 Gb/s"]);
  EXPECT_FALSE(v["rdma write_lat h1->h3 t_p99_us"]);
  EXPECT_TRUE(v["rdma write_lat h1->h3 t_typical_us"]);
  EXPECT_FALSE(v["tor0 PFC XOFF sent"]);
  EXPECT_FALSE(v["tor0 drops lossless_headroom_exhausted"]);
  EXPECT_FALSE(v["spine0 share of spine packets %"]);
}

// A real program starts when its set-up is done: the sim's stand-in of each perftest item starts
// where the live program's first data packet left; built-in tests and the rest keep theirs.
TEST(CrosscheckTest, SimStandInsStartWhereTheRealProgramsDid) {
  auto sc = Scenario::Load(std::string(ROCEFAB_SOURCE_DIR) +
                           "/configs/scenarios/perftest-pause-storm-100m.json");
  ASSERT_TRUE(sc.ok()) << sc.message();
  nlohmann::json live;
  live["rdma"] = {{{"test", "write_bw"},
                   {"from", "h2"},
                   {"to", "h7"},
                   {"app", "builtin"},
                   {"first_tx_at_us", 3.0}},
                  {{"test", "write_bw"},
                   {"from", "h0"},
                   {"to", "h5"},
                   {"app", "perftest"},
                   {"first_tx_at_us", 1010469.979}}};
  EXPECT_EQ(AlignedStarts(sc.value(), live),
            std::vector<std::string>{"traffic.2.start=1010469979ns"});
  live["rdma"][1].erase("first_tx_at_us");  // the program never sent: nothing to align
  EXPECT_TRUE(AlignedStarts(sc.value(), live).empty());
  live["rdma"][1]["first_tx_at_us"] = 5.0;
  live["rdma"][1]["to"] = "h6";  // no such item in the scenario
  EXPECT_TRUE(AlignedStarts(sc.value(), live).empty());
}

}  // namespace
}  // namespace rocefab

// The first millisecond of every trace committed for the fidelity comparison
// (bench/fidelity/traces.json; bench/fidelity.py runs them whole) through the reference's setup
// with "compat": "conweave-ns3": the trace imports (as many flows as the reference simulated in
// that millisecond), every flow completes, every flow's ideal FCT is the reference's
// standalone_fct_ns to the nanosecond (its yardstick) and its UDP ports are the reference's (what
// its ECMP hashes: switch/ecmp.h), and the flows that start on an empty
// fabric take the reference's time (FidelityWireTest: its wire accounting; with real Ethernet
// framing they are slower).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

#include "run/sim_fabric.h"
#include "tests/support/test_pool.h"

namespace rocefab {
namespace {

const std::string kDir = std::string(ROCEFAB_SOURCE_DIR) + "/bench/fidelity/";

nlohmann::json Manifest() {
  std::ifstream in(kDir + "traces.json");
  return nlohmann::json::parse(in);
}

struct RefFlow {
  int64_t fct_ns = 0, standalone_ns = 0;
  int sport = 0, dport = 0;
};
using FlowKey = std::tuple<int, int, uint64_t, int64_t>;  // src, dst, size, start (ns)

// The reference's FCT file (xz): flows that start before `until_ns` (relative to its 2 s base).
std::map<FlowKey, RefFlow> ReadReference(const std::string& path, int64_t until_ns) {
  std::map<FlowKey, RefFlow> out;
  FILE* f = popen(("xz -dc " + path).c_str(), "r");  // a path of the test's own tree
  if (f == nullptr) return out;
  int src, dst, sport, dport;
  unsigned long long size;
  long long start, fct, standalone;
  while (fscanf(f, "%d %d %d %d %llu %lld %lld %lld", &src, &dst, &sport, &dport, &size, &start,
                &fct, &standalone) == 8) {
    start -= 2'000'000'000LL;
    if (start < until_ns) out[{src, dst, size, start}] = RefFlow{fct, standalone, sport, dport};
  }
  pclose(f);
  return out;
}

struct Slice {
  std::string trace, scheme;
};

class FidelitySliceTest : public testing::PoolTest, public ::testing::WithParamInterface<Slice> {};

TEST_P(FidelitySliceTest, ImportsCompletesAndTakesTheReferencesYardstick) {
  const Slice& p = GetParam();
  const nlohmann::json m = Manifest();
  const auto t = std::find_if(m["traces"].begin(), m["traces"].end(),
                              [&](const nlohmann::json& x) { return x["name"] == p.trace; });
  ASSERT_NE(t, m["traces"].end()) << p.trace << " not in bench/fidelity/traces.json";
  const std::string scen =
      std::string(ROCEFAB_SOURCE_DIR) + "/configs/scenarios/" +
      (p.scheme == "ecmp" ? "ns3-alistorage-128h.json" : "ns3-alistorage-128h-conweave.json");
  std::ifstream sf(scen);
  auto j = nlohmann::json::parse(sf);
  j["traffic"][0]["file"] = kDir + (*t)["flows"].get<std::string>();
  if (t->contains("topology")) {  // another fabric of the reference's (bench/fidelity.py)
    std::ifstream tf(kDir + (*t)["topology"].get<std::string>());
    j["topology"] = nlohmann::json::parse(tf);
  }
  j["compat"] = "conweave-ns3";
  j["buffer"].erase("xon_offset");  // the compat model's
  auto sc = Scenario::FromJson(j, ".");
  ASSERT_TRUE(sc.ok()) << sc.message();
  Scenario s = sc.value();
  s.traffic[0].workload().duration = kMs;
  s.traffic[0].workload().measure_from = 0;
  s.duration = 20 * kMs;
  const auto ref =
      ReadReference(kDir + (*t)["reference"][p.scheme]["fct"].get<std::string>(), 1'000'000);
  ASSERT_GT(ref.size(), 1000u) << "the reference's first millisecond";
  auto fr = SimFabric::Create(s, pool_);
  ASSERT_TRUE(fr.ok()) << fr.message();
  SimFabric& f = *fr.value();
  std::string why_one;
  ASSERT_TRUE(f.SetThreads(2, &why_one).ok());
  const FlowWorkload& w = *f.rdma()->workload();
  EXPECT_EQ(w.records().size(), ref.size()) << "flows starting in [2.000 s, 2.001 s)";
  f.Run();
  EXPECT_EQ(w.finished(), w.records().size()) << "every flow completes";
  size_t matched = 0, ideal_equal = 0, ports_equal = 0;
  for (const auto& r : w.records()) {
    // The reference truncates a start time of "2.000000449" s to 448 ns; rocefab rounds.
    const int64_t start = r.flow.start / kNs;
    auto it = ref.find({r.flow.src, r.flow.dst, r.flow.size, start});
    if (it == ref.end()) it = ref.find({r.flow.src, r.flow.dst, r.flow.size, start - 1});
    if (it == ref.end()) continue;
    ++matched;
    ideal_equal += r.ideal == it->second.standalone_ns * kNs;
    ports_equal += r.sport == it->second.sport && r.dport == it->second.dport;
  }
  EXPECT_EQ(matched, ref.size()) << "every flow found in the reference's file";
  EXPECT_EQ(ideal_equal, matched) << "the ideal FCT is the reference's standalone_fct_ns";
  // The reference's ECMP hashes these ports (switch/ecmp.h): each flow has the reference's.
  EXPECT_EQ(ports_equal, matched) << "every flow's UDP ports are the reference's";
  for (size_t i = 0; i < f.num_switches(); ++i)
    EXPECT_EQ(f.sw(i).drops(DropReason::kLosslessHeadroom), 0u) << f.sw(i).name();
}

std::vector<Slice> Slices() {
  std::vector<Slice> v;
  const nlohmann::json m = Manifest();  // a local: the loop must not range over a temporary's part
  for (const auto& t : m["traces"]) {
    v.push_back({t["name"], "ecmp"});
    // ConWeave on one leaf-spine trace and on every trace of another fabric (the 3-tier one's
    // source routing).
    if (t["name"] == "alistorage-40" || t.contains("topology")) {
      v.push_back({t["name"], "conweave"});
    }
  }
  return v;
}

INSTANTIATE_TEST_SUITE_P(Traces, FidelitySliceTest, ::testing::ValuesIn(Slices()),
                         [](const ::testing::TestParamInfo<Slice>& i) {
                           std::string n = i.param.trace + "_" + i.param.scheme;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

// The wire: on the 25 % traces (at 40 % no cross-ToR flow over 50 KB goes unqueued there).
class FidelityWireTest : public testing::PoolTest,
                         public ::testing::WithParamInterface<const char*> {};

TEST_P(FidelityWireTest, AFlowTheReferenceCarriedAloneTakesItsTimeHere) {
  const std::string trace = GetParam();
  const nlohmann::json m = Manifest();
  const auto t = std::find_if(m["traces"].begin(), m["traces"].end(),
                              [&](const nlohmann::json& x) { return x["name"] == trace; });
  ASSERT_NE(t, m["traces"].end()) << trace;
  std::ifstream sf(std::string(ROCEFAB_SOURCE_DIR) + "/configs/scenarios/ns3-alistorage-128h.json");
  auto j = nlohmann::json::parse(sf);
  j["buffer"].erase("xon_offset");
  const std::string scheme = "ecmp";
  // The wire: the first cross-ToR flow over 50 KB that the reference carried without queueing
  // (within 1 % of its ideal, which counts 48 header bytes per packet where its links carry 36),
  // run alone here, takes the reference's time; with real Ethernet framing (46 bytes more per
  // 1,036-byte packet) it is over 1.5 % slower. (Flows under one ToR take the reference 1-2 %
  // longer than here, cross-ToR ones within 0.4 %: not explained yet, so the check takes a
  // cross-ToR one; hosts 16 per ToR, as the reference's leaf_spine_128.)
  const auto whole =
      ReadReference(kDir + (*t)["reference"][scheme]["fct"].get<std::string>(), INT64_MAX);
  const auto alone = std::find_if(whole.begin(), whole.end(), [](const auto& e) {
    return std::get<0>(e.first) / 16 != std::get<1>(e.first) / 16 &&
           std::get<2>(e.first) > 50'000 && e.second.fct_ns * 1000 <= e.second.standalone_ns * 995;
  });
  ASSERT_NE(alone, whole.end());
  const auto [src, dst, size, start] = alone->first;
  const std::string one = ::testing::TempDir() + "/rocefab_alone_" + trace + ".txt";
  std::ofstream(one) << "1\n" << src << " " << dst << " 3 " << size << " 2.0\n";
  auto fct_alone = [&](const char* compat) -> Time {
    nlohmann::json k = j;
    k["traffic"][0]["file"] = one;
    k["compat"] = compat;
    auto ks = Scenario::FromJson(k, ".");
    EXPECT_TRUE(ks.ok()) << ks.message();
    if (!ks.ok()) return -1;
    auto kf = SimFabric::Create(ks.value(), pool_);
    EXPECT_TRUE(kf.ok()) << kf.message();
    if (!kf.ok()) return -1;
    kf.value()->Run();
    return kf.value()->rdma()->workload()->records().at(0).fct;
  };
  const double ref_fct = static_cast<double>(alone->second.fct_ns * kNs);
  const Time compat = fct_alone("conweave-ns3");
  EXPECT_NEAR(compat / ref_fct, 1.0, 0.01) << size << " B from h" << src << " to h" << dst
                                           << " (reference " << alone->second.fct_ns << " ns)";
  EXPECT_GT(static_cast<double>(fct_alone("none")) / static_cast<double>(compat), 1.015)
      << "Ethernet framing";
}

INSTANTIATE_TEST_SUITE_P(Traces, FidelityWireTest, ::testing::Values("fbhdp-25", "solar-25"),
                         [](const ::testing::TestParamInfo<const char*>& i) {
                           std::string n = i.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

// The reference's ECMP draw, flow by flow (bench/fidelity/path-probe/: path_probe.py's flows and
// the reference's FCT file for them, run here). Groups of three 1 MB flows between two ToRs
// start together every 400 us: a flow alone on its spine takes ~91 us there, a flow that shares
// its spine with another of its group several times as long. Under "compat": "conweave-ns3"
// (switch/ecmp.h) every flow is alone or shares exactly where the reference says; rocefab's own
// hash (compat "none") agreed on 110 of the 180 (2026-12-06).
class PathProbeTest : public testing::PoolTest {};

TEST_F(PathProbeTest, EveryFlowSharesItsSpineExactlyWhereTheReferencesEcmpPutsIt) {
  const std::string dir = kDir + "path-probe/";
  std::ifstream sf(std::string(ROCEFAB_SOURCE_DIR) +
                   "/configs/scenarios/ns3-alistorage-128h-compat.json");
  auto j = nlohmann::json::parse(sf);
  j["traffic"][0]["file"] = dir + "flows.txt";
  j["traffic"][0]["measure_from"] = "0ms";
  auto sc = Scenario::FromJson(j, ".");
  ASSERT_TRUE(sc.ok()) << sc.message();
  Scenario s = sc.value();
  s.duration = 40 * kMs;
  auto fr = SimFabric::Create(s, pool_);
  ASSERT_TRUE(fr.ok()) << fr.message();
  SimFabric& f = *fr.value();
  f.Run();
  const FlowWorkload& w = *f.rdma()->workload();
  ASSERT_EQ(w.finished(), 180u);
  // (src, dst, sport, dport) -> FCT (ns): the reference's ports are each flow's (checked above).
  std::map<std::tuple<int, int, int, int>, int64_t> ref;
  std::ifstream in(dir + "reference-ecmp.fct.txt");
  int src, dst, sport, dport;
  int64_t size, start, fct, standalone;
  while (in >> src >> dst >> sport >> dport >> size >> start >> fct >> standalone) {
    ref[{src, dst, sport, dport}] = fct;
  }
  ASSERT_EQ(ref.size(), 180u);
  constexpr int64_t kAloneNs = 100'000;  // alone ~91 us; sharing a spine > 300 us in both
  size_t found = 0, same_fate = 0, alone = 0, alone_within_1pct = 0;
  for (const auto& r : w.records()) {
    auto it = ref.find({r.flow.src, r.flow.dst, r.sport, r.dport});
    if (it == ref.end()) continue;
    ++found;
    const int64_t mine = r.fct / kNs;
    same_fate += (mine < kAloneNs) == (it->second < kAloneNs);
    if (it->second < kAloneNs) {
      ++alone;
      alone_within_1pct += std::abs(mine - it->second) * 100 <= it->second;
    }
  }
  EXPECT_EQ(found, 180u) << "every flow under the reference's (src, dst, sport, dport)";
  EXPECT_EQ(same_fate, 180u) << "flows alone on their spine or sharing it, as in the reference";
  EXPECT_EQ(alone, 129u);
  EXPECT_EQ(alone_within_1pct, alone) << "a flow alone takes the reference's time";
}

}  // namespace
}  // namespace rocefab

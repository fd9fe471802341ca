// Load balancing in ECMP groups on a whole fabric: a 2-ToR, 2-spine leaf-spine where two
// long RDMA flows leave the same ToR for the other one. ECMP may hash both onto one spine
// (goodput halves); DRILL spreads packets over both spines but hosts see out-of-order arrivals;
// LetFlow with back-to-back flows (no flowlet gaps) behaves like a random per-flow choice.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "run/sim_fabric.h"
#include "tests/support/clos_scenario.h"
#include "tests/support/test_pool.h"
#include "topo/clos.h"

namespace rocefab {
namespace {

// A perftest write_bw item: `from` -> `to`, `iterations` messages of 64 KiB from `start`.
TrafficItem WriteBw(const std::string& from, const std::string& to, int iterations,
                    Time start = 0) {
  TrafficItem t;
  t.spec = PerftestSpec{};
  t.from = from;
  t.to = to;
  t.perftest().start = start;
  t.perftest().test = PerftestSpec::Test::kWriteBw;
  t.perftest().size = 65536;
  t.perftest().iterations = iterations;
  return t;
}

// WRED/ECN on the lossless queues (DCQCN paper CP: Kmin 5 KB, Kmax 200 KB, Pmax 1 %) and DCQCN
// in the NICs, the setting of the ConWeave paper's lossless runs.
void EnableEcnAndDcqcn(Scenario& s) {
  for (uint8_t q : {3, 4}) {
    s.sw.wred[q].enabled = true;
    s.sw.wred[q].kmin = 5'000;
    s.sw.wred[q].kmax = 200'000;
    s.sw.wred[q].pmax = 0.01;
  }
  s.nic.dcqcn = true;
}

struct LbOutcome {
  double gbps[2] = {0, 0};
  uint64_t ooo = 0;               // out-of-order data packets seen by the receiving NICs
  uint64_t spine_rx[2] = {0, 0};  // data bytes the two spines routed
  uint64_t lossless_drops = 0;
  int64_t mmu_used_at_end = 0;  // shared-buffer bytes still charged after the run, all switches
};

class LoadBalanceTest : public testing::PoolTest {
 protected:
  // `dcqcn`: EnableEcnAndDcqcn.
  // `second_start`: when h1 -> h3 starts (h0 -> h2 starts at 0); `reverse`: also h3 -> h1, so
  // data flows back from tor1 to tor0 (CONGA's feedback rides on reverse data).
  LbOutcome Run(LoadBalancingConfig::Scheme scheme, uint64_t seed, bool dcqcn = false,
                nlohmann::json* tor1_conweave = nullptr, Time second_start = 0,
                bool reverse = false, nlohmann::json* all_stats = nullptr) {
    Scenario s = testing::ClosScenario(
        "lb", {.spines = 2, .tors = 2, .hosts_per_tor = 2, .link_rate = 10 * kGbps}, 30 * kMs);
    s.seed = seed;
    s.nic.mtu = 1024;
    s.sw.load_balancing.scheme = scheme;
    if (dcqcn) EnableEcnAndDcqcn(s);
    std::vector<std::pair<const char*, const char*>> flows = {{"h0", "h2"}, {"h1", "h3"}};
    if (reverse) flows.emplace_back("h3", "h1");
    for (auto [from, to] : flows) {
      // 120 x 64 KiB = 7.9 MB: about 6.5 ms at 10 Gb/s
      s.traffic.push_back(WriteBw(from, to, 120, std::string(from) == "h1" ? second_start : 0));
    }
    auto f = SimFabric::Create(s, pool_);
    EXPECT_TRUE(f.ok()) << f.message();
    LbOutcome o;
    if (!f.ok()) return o;
    SimFabric& fab = *f.value();
    fab.Run();
    const auto res = fab.rdma()->PerftestResults();
    for (int i = 0; i < 2; ++i) {
      EXPECT_TRUE(res[i]["completed"].get<bool>()) << res[i].dump();
      o.gbps[i] = res[i]["bw_avg_gbps"].get<double>();
    }
    o.ooo = fab.host("h2")->rnic().out_of_order() + fab.host("h3")->rnic().out_of_order();
    for (int i = 0; i < 2; ++i) {
      o.spine_rx[i] = fab.sw("spine" + std::to_string(i))->Stats()["routed"].get<uint64_t>();
    }
    for (size_t i = 0; i < fab.num_switches(); ++i) o.lossless_drops += fab.sw(i).total_drops();
    for (size_t i = 0; i < fab.num_switches(); ++i) {
      if (fab.sw(i).mmu() != nullptr) o.mmu_used_at_end += fab.sw(i).mmu()->total_used();
    }
    if (tor1_conweave != nullptr) *tor1_conweave = fab.sw("tor1")->Stats()["conweave"];
    if (all_stats != nullptr) {
      for (size_t i = 0; i < fab.num_switches(); ++i)
        (*all_stats)[fab.sw(i).name()] = fab.sw(i).Stats();
    }
    return o;
  }
};

TEST_F(LoadBalanceTest, DrillFillsBothSpinesWhereEcmpCollidesButReorders) {
  // Find a seed whose ECMP hashes put both flows on one spine (half the seeds do).
  uint64_t seed = 0;
  LbOutcome ecmp;
  for (uint64_t s = 1; s <= 16 && seed == 0; ++s) {
    ecmp = Run(LoadBalancingConfig::Scheme::kEcmp, s);
    if (ecmp.spine_rx[0] == 0 || ecmp.spine_rx[1] == 0) seed = s;
  }
  ASSERT_NE(seed, 0u) << "no ECMP collision in 16 seeds";
  EXPECT_LT(ecmp.gbps[0] + ecmp.gbps[1], 11.0);  // two flows share one 10G spine link
  EXPECT_EQ(ecmp.ooo, 0u);
  const LbOutcome drill = Run(LoadBalancingConfig::Scheme::kDrill, seed);
  // Measured (seed 10): ECMP 4.63 + 4.63 Gb/s on one spine; DRILL 9.24 + 9.24 Gb/s, 10 OoO.
  EXPECT_GT(drill.gbps[0] + drill.gbps[1], 15.0) << drill.gbps[0] << " " << drill.gbps[1];
  EXPECT_GT(drill.spine_rx[0], 0u);
  EXPECT_GT(drill.spine_rx[1], 0u);
  EXPECT_GT(drill.ooo, 0u);  // per-packet spraying reorders at the receivers
  EXPECT_EQ(drill.lossless_drops, 0u);
  EXPECT_EQ(ecmp.lossless_drops, 0u);
}

TEST_F(LoadBalanceTest, ConweaveReroutesAroundTheCollisionAndDeliversInOrder) {
  // Seed 10: ECMP puts both flows on spine0 (checked in the DRILL test above and here).
  const uint64_t seed = 10;
  const LbOutcome ecmp = Run(LoadBalancingConfig::Scheme::kEcmp, seed, true);
  ASSERT_TRUE(ecmp.spine_rx[0] == 0 || ecmp.spine_rx[1] == 0) << "no ECMP collision with this seed";
  nlohmann::json cw;
  const LbOutcome conweave = Run(LoadBalancingConfig::Scheme::kConweave, seed, true, &cw);
  const LbOutcome drill = Run(LoadBalancingConfig::Scheme::kDrill, seed, true);
  // Measured: ECMP 4.07 + 4.24 Gb/s; ConWeave 7.04 + 8.68 Gb/s over both spines, 0 packets out of
  // order at the NICs, 366 packets held in reorder queues, 19 queues released by TAILs;
  // DRILL 10 packets out of order.
  const double e = ecmp.gbps[0] + ecmp.gbps[1], c = conweave.gbps[0] + conweave.gbps[1];
  std::printf(
      "ECMP %.2f + %.2f Gb/s; ConWeave %.2f + %.2f Gb/s, %llu OoO; DRILL %llu OoO; tor1 %s\n",
      ecmp.gbps[0], ecmp.gbps[1], conweave.gbps[0], conweave.gbps[1],
      static_cast<unsigned long long>(conweave.ooo), static_cast<unsigned long long>(drill.ooo),
      cw["rx"].dump().c_str());
  EXPECT_GT(c, 1.5 * e) << "ConWeave " << c << " vs ECMP " << e;
  EXPECT_GT(conweave.spine_rx[0], 0u);
  EXPECT_GT(conweave.spine_rx[1], 0u);
  EXPECT_EQ(conweave.ooo, 0u) << cw.dump();
  EXPECT_GT(cw["rx"]["held"].get<uint64_t>(), 0u)
      << "the reorder stage was never exercised: " << cw.dump();
  EXPECT_GT(cw["rx"]["releases_by_tail"].get<uint64_t>(), 0u) << cw.dump();
  EXPECT_EQ(cw["rx"]["fallbacks"].get<uint64_t>(), 0u) << cw.dump();
  EXPECT_EQ(cw["scrubbed"].get<uint64_t>(),
            15360u);  // every data packet (2 x 120 x 64 KiB / 1 KiB)
  EXPECT_EQ(conweave.lossless_drops, 0u);
  // Held frames are charged to the shared buffer while held and released after: nothing leaks.
  EXPECT_GT(cw["held_bytes_peak"].get<uint64_t>(), 0u);
  EXPECT_EQ(conweave.mmu_used_at_end, 0);
  EXPECT_GE(drill.ooo, conweave.ooo);
}

TEST_F(LoadBalanceTest, CongaSteersTheLaterFlowOffTheBusyUplinkAndFeedsBackRemoteCongestion) {
  // Seed 10 puts h0->h2 and h1->h3 on the same spine under ECMP. With CONGA, h1->h3 starts 1 ms
  // after h0->h2: tor0's DRE on h0->h2's uplink then reads ~7 of 7, the other ~0, so the new
  // flow takes the free spine; h3->h1 sends data back, carrying tor1's FromLeaf entries.
  const uint64_t seed = 10;
  const Time later = kMs;
  const LbOutcome ecmp = Run(LoadBalancingConfig::Scheme::kEcmp, seed, true, nullptr, later, true);
  ASSERT_LT(ecmp.gbps[0] + ecmp.gbps[1], 11.0) << "ECMP should put both forward flows on one spine";
  nlohmann::json st;
  const LbOutcome conga =
      Run(LoadBalancingConfig::Scheme::kConga, seed, true, nullptr, later, true, &st);
  const double e = ecmp.gbps[0] + ecmp.gbps[1], c = conga.gbps[0] + conga.gbps[1];
  std::printf("ECMP %.2f + %.2f Gb/s; CONGA %.2f + %.2f Gb/s; tor0 %s; spine0 %s\n", ecmp.gbps[0],
              ecmp.gbps[1], conga.gbps[0], conga.gbps[1], st["tor0"]["conga"].dump().c_str(),
              st["spine0"]["conga"].dump().c_str());
  EXPECT_GT(c, 1.5 * e) << "CONGA " << c << " vs ECMP " << e;
  EXPECT_GT(conga.spine_rx[0], 0u);
  EXPECT_GT(conga.spine_rx[1], 0u);
  EXPECT_EQ(conga.ooo, 0u) << "flowlets of a continuous stream never move";
  EXPECT_EQ(conga.lossless_drops, 0u);
  // Tags: every data packet tagged at its source ToR and scrubbed at the other one (3 flows x
  // 120 x 64 KiB / 1 KiB); spines raised CE; tor0 received feedback about its paths to tor1.
  const auto& t0 = st["tor0"]["conga"];
  const auto& t1 = st["tor1"]["conga"];
  EXPECT_EQ(t0["tagged"].get<uint64_t>() + t1["tagged"].get<uint64_t>(), 3u * 7680u);
  EXPECT_EQ(t0["scrubbed"].get<uint64_t>() + t1["scrubbed"].get<uint64_t>(), 3u * 7680u);
  EXPECT_GT(st["spine0"]["conga"]["ce_raised"].get<uint64_t>() +
                st["spine1"]["conga"]["ce_raised"].get<uint64_t>(),
            0u);
  EXPECT_GT(t0["feedback_received"].get<uint64_t>(), 0u);
  EXPECT_GT(t1["feedback_sent"].get<uint64_t>(), 0u);
}

// timeseries.csv carries the ConWeave reorder state per egress port over time: on the hotspot
// scenario frames are held at tor1's host ports at some sample, never on more queues than a
// port has, and nothing stays held at the end.
TEST_F(LoadBalanceTest, TimeseriesShowsReorderQueueOccupancy) {
  auto sc =
      Scenario::Load(std::string(ROCEFAB_SOURCE_DIR) + "/configs/scenarios/conweave-hotspot.json");
  ASSERT_TRUE(sc.ok()) << sc.message();
  Scenario s = sc.value();
  s.seed = 4;  // ECMP collides and ConWeave holds (966 frames in 36 queues with this seed)
  s.output.sample_interval = 2 * kUs;
  auto f = SimFabric::Create(s, pool_);
  ASSERT_TRUE(f.ok()) << f.message();
  const std::string dir = ::testing::TempDir() + "/rocefab_cw_timeseries";
  std::filesystem::create_directories(dir);
  ASSERT_TRUE(f.value()->OpenOutputs(dir).ok());
  f.value()->Run();
  f = Result<std::unique_ptr<SimFabric>>::Error("closed");  // flush and close the CSV
  std::ifstream in(dir + "/timeseries.csv");
  std::string header, line;
  std::getline(in, header);
  ASSERT_NE(header.find(",reorder_queues_in_use,reorder_held_frames"), std::string::npos) << header;
  uint64_t max_held = 0, last_held = 0;
  uint32_t max_queues = 0;
  while (std::getline(in, line)) {
    std::vector<std::string> c;
    std::stringstream ls(line);
    for (std::string x; std::getline(ls, x, ',');) c.push_back(x);
    ASSERT_EQ(c.size(), 17u) << line;
    if (c[1] != "tor1") continue;
    max_queues = std::max<uint32_t>(max_queues, static_cast<uint32_t>(std::stoul(c[12])));
    max_held = std::max<uint64_t>(max_held, std::stoull(c[13]));
    last_held = std::stoull(c[13]);
  }
  EXPECT_GT(max_held, 0u) << "no sample saw held frames";
  EXPECT_GT(max_queues, 0u);
  EXPECT_LE(max_queues, s.sw.load_balancing.conweave.reorder_queues_per_port);
  EXPECT_EQ(last_held, 0u);
}

// ConWeave and CONGA on a 3-tier Clos: 2 podsets of 2 ToRs (one host each) and 2 leaves, 4 spines
// (2 per leaf's plane), 10G, ECN + DCQCN. Two long flows, p0-tor0 -> p1-tor0 and p0-tor1 ->
// p1-tor1, have 2 leaves x 2 spines = 4 paths each; they collide only where they share a
// (leaf, spine) pair, i.e. a leaf's uplink to a spine, which the source ToR does not own. The
// source ToR source-routes the leaf's uplink (RouteGroup::second_hops 2), so ConWeave can move a
// flow off a shared leaf-spine link where ECMP, hashing at the ToR and again at the leaf, keeps
// both on it.
struct ThreeTierOutcome {
  double gbps = 0;                 // sum of the two flows
  std::vector<uint64_t> spine_rx;  // frames each spine routed (data and ACKs)
  uint64_t ooo = 0, drops = 0;
  int64_t mmu_used_at_end = 0;
  nlohmann::json stats;  // every switch's Stats()
};

class ThreeTierTest : public testing::PoolTest {
 protected:
  static constexpr uint64_t kDataFrames = 2 * 120 * 64;  // 2 flows x 120 x 64 KiB / 1 KiB MTU

  ThreeTierOutcome Run(LoadBalancingConfig::Scheme scheme, uint64_t seed) {
    Scenario s = testing::ClosScenario("lb3",
                                       {.tiers = 3,
                                        .spines = 4,
                                        .tors = 2,
                                        .leaves_per_podset = 2,
                                        .podsets = 2,
                                        .hosts_per_tor = 1,
                                        .link_rate = 10 * kGbps},
                                       30 * kMs);
    s.seed = seed;
    s.nic.mtu = 1024;
    EnableEcnAndDcqcn(s);
    s.sw.load_balancing.scheme = scheme;
    s.traffic = {WriteBw("h0", "h2", 120), WriteBw("h1", "h3", 120)};
    auto f = SimFabric::Create(s, pool_);
    EXPECT_TRUE(f.ok()) << f.message();
    ThreeTierOutcome o;
    if (!f.ok()) return o;
    SimFabric& fab = *f.value();
    fab.Run();
    for (const auto& r : fab.rdma()->PerftestResults()) {
      EXPECT_TRUE(r["completed"].get<bool>()) << r.dump();
      o.gbps += r["bw_avg_gbps"].get<double>();
    }
    o.ooo = fab.host("h2")->rnic().out_of_order() + fab.host("h3")->rnic().out_of_order();
    for (int i = 0; i < 4; ++i) {
      o.spine_rx.push_back(fab.sw("spine" + std::to_string(i))->Stats()["routed"].get<uint64_t>());
    }
    for (size_t i = 0; i < fab.num_switches(); ++i) {
      o.drops += fab.sw(i).total_drops();
      if (fab.sw(i).mmu() != nullptr) o.mmu_used_at_end += fab.sw(i).mmu()->total_used();
      o.stats[fab.sw(i).name()] = fab.sw(i).Stats();
    }
    return o;
  }
  // The sum of `key` in block `scheme` over switches `names`.
  static uint64_t Sum(const ThreeTierOutcome& o, const char* scheme, const char* key,
                      std::initializer_list<const char*> names) {
    uint64_t n = 0;
    for (const char* name : names) n += o.stats[name][scheme][key].get<uint64_t>();
    return n;
  }
};

// Seeds 1-12 (configs/scenarios/conweave-3tier.json is this fabric): ECMP puts both flows on one
// leaf-spine link on seeds 7 and 11 (8.05-8.13 Gb/s in all); ConWeave's random first paths
// collide on seeds 2, 6, 8 and 12, and each time it moves a flow (2-3 reroutes, 31-54 frames
// held and released in order), ending at 17.72-18.5 Gb/s on every seed with no frame out of
// order.
TEST_F(ThreeTierTest, ConweaveSourceRoutesTheLeafsUplinkOffASharedSpineLink) {
  int ecmp_collisions = 0, conweave_moves = 0;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const ThreeTierOutcome ecmp = Run(LoadBalancingConfig::Scheme::kEcmp, seed);
    const ThreeTierOutcome cw = Run(LoadBalancingConfig::Scheme::kConweave, seed);
    const uint64_t reroutes = cw.stats["p0-tor0"]["conweave"]["tx"]["reroutes"].get<uint64_t>() +
                              cw.stats["p0-tor1"]["conweave"]["tx"]["reroutes"].get<uint64_t>();
    const uint64_t held = cw.stats["p1-tor0"]["conweave"]["rx"]["held"].get<uint64_t>() +
                          cw.stats["p1-tor1"]["conweave"]["rx"]["held"].get<uint64_t>();
    std::printf(
        "seed %2llu: ECMP %5.2f Gb/s; ConWeave %5.2f Gb/s, %llu reroutes, %llu held, "
        "%llu OoO, spines %s\n",
        static_cast<unsigned long long>(seed), ecmp.gbps, cw.gbps,
        static_cast<unsigned long long>(reroutes), static_cast<unsigned long long>(held),
        static_cast<unsigned long long>(cw.ooo), nlohmann::json(cw.spine_rx).dump().c_str());
    ecmp_collisions += ecmp.gbps < 11.0 ? 1 : 0;
    conweave_moves += reroutes > 0 && held > 0 ? 1 : 0;
    EXPECT_GT(cw.gbps, 17.5) << "both flows near line rate (18.5 Gb/s of RDMA goodput)";
    // Every data frame is tagged at its source ToR, follows its source route through a p0 leaf
    // (one hop only: down the tree every switch has one next hop) and is scrubbed at the
    // destination ToR (BTH resv7 written back: the live test checks it, where the NICs verify
    // the ICRC).
    EXPECT_EQ(Sum(cw, "conweave", "tagged", {"p0-tor0", "p0-tor1"}), kDataFrames);
    EXPECT_EQ(Sum(cw, "conweave", "scrubbed", {"p1-tor0", "p1-tor1"}), kDataFrames);
    EXPECT_EQ(Sum(cw, "conweave", "source_routed", {"p0-leaf0", "p0-leaf1"}), kDataFrames);
    EXPECT_EQ(Sum(cw, "conweave", "source_routed", {"p1-leaf0", "p1-leaf1"}), 0u);
    EXPECT_EQ(Sum(cw, "conweave", "untagged_resv7", {"p0-tor0", "p0-tor1"}), 0u);
    EXPECT_EQ(cw.ooo, 0u);
    EXPECT_EQ(cw.drops, 0u);
    EXPECT_EQ(cw.mmu_used_at_end, 0);
  }
  EXPECT_GE(ecmp_collisions, 1) << "no seed made ECMP share a leaf-spine link";
  EXPECT_GE(conweave_moves, 1) << "no seed made ConWeave reroute and reorder";
}

// CONGA on the same fabric: the source ToR's path id names a (leaf, spine) pair, the p0 leaf takes
// the spine it names, and the DREs of every hop raise CE on the way.
TEST_F(ThreeTierTest, CongaSourceRoutesItsPathIdThroughTheLeaves) {
  const ThreeTierOutcome c = Run(LoadBalancingConfig::Scheme::kConga, 1);
  std::printf("CONGA %.2f Gb/s, spines %s\np0-tor0 %s\n", c.gbps,
              nlohmann::json(c.spine_rx).dump().c_str(),
              c.stats["p0-tor0"]["conga"].dump().c_str());
  EXPECT_EQ(Sum(c, "conga", "tagged", {"p0-tor0", "p0-tor1"}), kDataFrames);
  EXPECT_EQ(Sum(c, "conga", "scrubbed", {"p1-tor0", "p1-tor1"}), kDataFrames);
  EXPECT_EQ(Sum(c, "conga", "arrivals", {"p1-tor0", "p1-tor1"}), kDataFrames);
  EXPECT_EQ(Sum(c, "conga", "source_routed", {"p0-leaf0", "p0-leaf1"}), kDataFrames);
  uint64_t ce = 0;
  for (const auto& [name, st] : c.stats.items()) ce += st["conga"]["ce_raised"].get<uint64_t>();
  EXPECT_GT(ce, 0u);
  EXPECT_EQ(c.ooo, 0u);
  EXPECT_EQ(c.drops, 0u);
  EXPECT_EQ(c.mmu_used_at_end, 0);
}

TEST_F(LoadBalanceTest, LetFlowKeepsEachFlowOnOnePathWithoutGaps) {
  const LbOutcome lf = Run(LoadBalancingConfig::Scheme::kLetFlow, 3);
  EXPECT_EQ(lf.ooo, 0u);  // flowlet switching never reorders within a flowlet
  EXPECT_EQ(lf.lossless_drops, 0u);
  EXPECT_GT(lf.gbps[0], 4.5);
  EXPECT_GT(lf.gbps[1], 4.5);
}

}  // namespace
}  // namespace rocefab

namespace rocefab {
namespace {

// ECMP's throughput bound (Guo et al., SIGCOMM 2016 §6): configs/scenarios/ecmp-bound.json (3-tier,
// 2 podsets, every server writing to its peer in the other podset) at 10G, over four seeds. The
// loss below the bisection is what hash collisions cost, the same as the balls-into-bins model of
// the same flows predicts, and the lossless class drops nothing.
class EcmpBoundTest : public testing::PoolTest {};

TEST_F(EcmpBoundTest, HashCollisionsCapGoodputAsBallsIntoBinsPredictsWithoutLosslessDrops) {
  constexpr Time kFrom = 5 * kMs, kTo = 20 * kMs;  // after DCQCN's first cuts
  double sum_ecmp_fraction = 0, p5 = 0, p95 = 0;
  const int seeds[] = {1, 2, 3, 4};
  for (int seed : seeds) {
    auto sc = Scenario::Load(
        std::string(ROCEFAB_SOURCE_DIR) + "/configs/scenarios/ecmp-bound.json",
        {"topology.clos.link_rate=10Gbps", "duration=20ms", "seed=" + std::to_string(seed)});
    ASSERT_TRUE(sc.ok()) << sc.message();
    auto fr = SimFabric::Create(sc.value(), pool_);
    ASSERT_TRUE(fr.ok()) << fr.message();
    SimFabric& f = *fr.value();
    f.RunUntil(kTo);
    const nlohmann::json sum = f.Summary();
    const nlohmann::json& m = sum["ecmp_model"];
    ASSERT_TRUE(m.is_object()) << m.dump();
    ASSERT_EQ(m["flows"], 32);
    const double capacity = m["unconstrained_gbps"].get<double>();
    ASSERT_DOUBLE_EQ(capacity, 320) << "32 servers at 10G, no oversubscription";
    double measured = 0;
    for (size_t i = 0; i < 32; ++i) measured += f.rdma()->perftest(i).GbpsBetween(kFrom, kTo);
    const double ecmp = m["ecmp_max_min_gbps"].get<double>();
    const auto& rnd = m["random_hash_gbps"];
    std::printf(
        "seed %d: measured %.1f Gb/s (%.0f %% of %.0f), max-min on the hashed paths %.1f (%.0f "
        "%%), random paths p5/p50/p95 %.1f/%.1f/%.1f\n",
        seed, measured, 100 * measured / capacity, capacity, ecmp, 100 * ecmp / capacity,
        rnd["p5"].get<double>(), rnd["p50"].get<double>(), rnd["p95"].get<double>());
    EXPECT_LT(measured, 0.8 * capacity) << "collisions keep ECMP well below the bisection";
    EXPECT_GT(measured, 0.7 * ecmp) << "DCQCN gets most of what the hashed paths allow";
    EXPECT_LT(measured, rnd["p99"].get<double>());
    sum_ecmp_fraction += ecmp / capacity;
    p5 = rnd["p5"].get<double>() / capacity, p95 = rnd["p95"].get<double>() / capacity;

    uint64_t pauses = 0;
    double min_with_flow = 1e18, max_without = 0;
    const auto& per_port = m["ecmp_flows_per_port"];
    for (const auto& [name, sw] : sum["switches"].items()) {
      for (const char* tc : {"3", "4"}) {
        EXPECT_FALSE(sw["drops_by_tc"].contains(tc)) << name << ": " << sw["drops_by_tc"].dump();
      }
      for (const auto& p : sw["ports"]) {
        for (const auto& [prio, c] : p["pfc"].items()) pauses += c["tx_xoff"].get<uint64_t>();
        // The traced paths are the data path's: ports no flow is hashed onto carry only ACKs
        // and CNPs, less than any port a flow takes.
        const double bytes = p["tx_bytes"].get<double>();
        if (per_port.contains(p["name"].get<std::string>())) {
          min_with_flow = std::min(min_with_flow, bytes);
        } else {
          max_without = std::max(max_without, bytes);
        }
      }
    }
    EXPECT_LT(max_without, min_with_flow);
    std::printf("  PFC XOFF frames sent by switches: %llu\n",
                static_cast<unsigned long long>(pauses));
  }
  // The hash behaves as balls thrown into bins: over the seeds, what the hashed paths allow is
  // within the random-path model's 5-95 % range (a polarised hash, the same choice at every
  // stage, would fall below it).
  const double mean = sum_ecmp_fraction / std::size(seeds);
  EXPECT_GE(mean, p5);
  EXPECT_LE(mean, p95);
}

}  // namespace
}  // namespace rocefab

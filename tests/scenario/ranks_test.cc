// A distributed sim run (SimFabric::SetRanks) with its ranks as threads of this process
// (tests/support/thread_ranks.h): the same runner, observer and merge code an MPI run uses
// (tests/mpi/mpi_test.py runs the real mpirun), here in the scenario suite and under the
// sanitizers. Each case runs a shipped scenario on one process and on 2 and 3 ranks and
// compares the merged summary (sim_events aside), the fault log and the FCTs.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <thread>

#include "run/sim_fabric.h"
#include "run/sim_ranks.h"
#include "tests/support/test_pool.h"
#include "tests/support/thread_ranks.h"
#include "topo/clos.h"

namespace rocefab {
namespace {

class RanksTest : public testing::PoolTest {
 protected:
  struct Outcome {
    nlohmann::json summary;  // without sim_events
    nlohmann::json sim_events;
    std::vector<std::string> fault_log;
    std::vector<Time> fct;
    uint64_t collectives = 0;
  };
  static Scenario Load(const std::string& name) {
    auto s = Scenario::Load(std::string(ROCEFAB_SOURCE_DIR) + "/configs/scenarios/" + name);
    EXPECT_TRUE(s.ok()) << s.message();
    return s.value();
  }
  static std::vector<Time> Fct(SimFabric& f) {
    std::vector<Time> v;
    if (f.rdma() != nullptr && f.rdma()->workload() != nullptr) {
      for (const auto& r : f.rdma()->workload()->records()) v.push_back(r.fct);
    }
    return v;
  }
  Outcome RunOne(const Scenario& s, Time until) {
    Outcome o;
    auto fr = SimFabric::Create(s, pool_);
    EXPECT_TRUE(fr.ok()) << fr.message();
    if (!fr.ok()) return o;
    fr.value()->RunUntil(until);
    o.summary = fr.value()->Summary();
    o.sim_events = o.summary["sim_events"];
    o.summary.erase("sim_events");
    o.fault_log = fr.value()->fault_log();
    o.fct = Fct(*fr.value());
    return o;
  }
  // `n` ranks, one thread each; the fabrics are built here, each rank runs on its own thread.
  Outcome RunRanks(const Scenario& s, int n, Time until) {
    Outcome o;
    auto group = testing::ThreadRanks::Group(n);
    std::vector<std::unique_ptr<SimFabric>> fabs;
    for (int r = 0; r < n; ++r) {
      auto fr = SimFabric::Create(s, pool_);
      EXPECT_TRUE(fr.ok()) << fr.message();
      if (!fr.ok()) return o;
      fabs.push_back(std::move(fr).value());
      auto mine = fabs.back()->SetRanks(group[r].get(), 1);  // not collective: may fail alone
      EXPECT_TRUE(mine.ok()) << mine.message();
      if (!mine.ok()) return o;
      EXPECT_EQ(mine.value(), 1) << "rank " << r << " runs one partition";
    }
    std::vector<nlohmann::json> parts(static_cast<size_t>(n));
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r) {
      threads.emplace_back([&, r] {
        SimFabric& f = *fabs[r];
        f.RunUntil(until);
        if (f.rdma() != nullptr && f.rdma()->workload() != nullptr)
          f.rdma()->workload()->ShareFct(*group[r]);
        parts[r] = f.Summary();
      });
    }
    for (auto& t : threads) t.join();
    o.summary = MergeRankSummaries(fabs[0]->fabric(), parts);
    o.sim_events = o.summary["sim_events"];
    o.summary.erase("sim_events");
    o.fault_log = fabs[0]->fault_log();
    o.fct = Fct(*fabs[0]);
    o.collectives = group[0]->collectives();
    for (int r = 1; r < n; ++r) {
      EXPECT_EQ(fabs[r]->fault_log(), o.fault_log) << "rank " << r << ": the same fault log";
      EXPECT_EQ(Fct(*fabs[r]), o.fct) << "rank " << r << ": every rank has every FCT";
    }
    return o;
  }
  void ExpectSameRun(const Outcome& one, const Outcome& ranks, int n) {
    EXPECT_EQ(ranks.sim_events["ranks"], n);
    EXPECT_EQ(ranks.sim_events["partitions"], n);
    EXPECT_GT(ranks.sim_events["windows"].get<uint64_t>(), 0u);
    EXPECT_GT(ranks.sim_events["cross_rank_frames"].get<uint64_t>(), 0u) << "frames crossed ranks";
    EXPECT_GT(ranks.collectives, 2 * ranks.sim_events["windows"].get<uint64_t>())
        << "at least a Min and an exchange per window";
    for (const char* k : {"arrive", "tx_free", "timer"})
      EXPECT_EQ(one.sim_events[k], ranks.sim_events[k]) << "sim_events." << k << " summed";
    EXPECT_EQ(one.fault_log, ranks.fault_log);
    EXPECT_EQ(one.fct, ranks.fct);
    for (const auto& [k, v] : one.summary.items())
      EXPECT_EQ(v, ranks.summary.value(k, nlohmann::json())) << "summary key " << k;
    EXPECT_EQ(one.summary.dump(), ranks.summary.dump()) << "summary.json text";
  }
};

// The fault timeline (an ARP flood, then hosts answering) and the deadlock detector, which
// needs every rank's switches to see the cycle of paused queues.
TEST_F(RanksTest, FaultsAndTheDeadlockDetectorGiveTheSameRunOnTwoRanks) {
  const Scenario s = Load("arp-flood-deadlock.json");
  ASSERT_FALSE(s.faults.empty());
  ASSERT_TRUE(s.detect_deadlocks);
  const Outcome one = RunOne(s, 30 * kMs);
  ASSERT_GE(one.summary["deadlocks"].size(), 1u) << "the single run finds the cycle";
  ASSERT_FALSE(one.fault_log.empty());
  ExpectSameRun(one, RunRanks(s, 2, 30 * kMs), 2);
}

// A 3-tier Clos (8 ToRs in 2 podsets, leaves, 16 spines) on 3 ranks: blocks of uneven size, and
// leaves and spines dealt out over the ranks.
TEST_F(RanksTest, AThreeTierClosGivesTheSameRunOnThreeRanks) {
  Scenario s = Load("ecmp-bound.json");
  s.duration = 500 * kUs;  // 5 m cables: windows of 25 ns, about 40,000 in this run
  const Outcome one = RunOne(s, 2 * s.duration);
  ASSERT_GT(one.summary["rdma"].size(), 0u);
  ExpectSameRun(one, RunRanks(s, 3, 2 * s.duration), 3);
}

// The split keeps a podset's ToR-leaf links inside a partition where the ToR blocks allow it
// (each leaf goes where most of its ToRs are) and deals each upper tier out evenly: ecmp-bound's
// 3-tier Clos (2 podsets x 4 ToRs and 4 leaves, 16 spines). Leaves and spines dealt out in name
// order, as before, put every leaf in partition 0 on 2 partitions and every spine in partition 1.
TEST_F(RanksTest, ThePartitionPlanKeepsAPodsetsToRLeafLinksInside) {
  const Scenario s = Load("ecmp-bound.json");
  auto fr = SimFabric::Create(s, pool_);
  ASSERT_TRUE(fr.ok()) << fr.message();
  const Fabric& fab = fr.value()->fabric();
  size_t num_nodes = 0;
  for (size_t i = 0; i < fab.num_switches(); ++i)
    num_nodes = std::max<size_t>(num_nodes, fab.switch_node(i) + 1);
  for (size_t h = 0; h < fab.num_hosts(); ++h)
    num_nodes = std::max<size_t>(num_nodes, fab.host_node(h) + 1);
  const Topology& t = s.topology;
  for (int parts : {2, 3, 4}) {
    int used = 0;
    const std::vector<uint32_t> plan =
        fab.PlanPartitions(parts, SimRunner::kObserver, num_nodes, &used);
    ASSERT_EQ(used, parts);
    auto part = [&](const std::string& name) {
      const int i = t.SwitchIndex(name);
      EXPECT_GE(i, 0) << name;
      return plan[fab.switch_node(static_cast<size_t>(i))];
    };
    std::map<SwitchRole, std::vector<int>> per_part;  // switches of each role per partition
    for (const auto& sw : t.switches) {
      auto& v = per_part[sw.role];
      v.resize(parts);
      ++v[part(sw.name)];
    }
    for (const auto& [role, counts] : per_part) {  // at most a partition's share of a tier
      int n = 0;
      for (int c : counts) n += c;
      EXPECT_LE(*std::max_element(counts.begin(), counts.end()), (n + parts - 1) / parts)
          << parts << " partitions, role " << static_cast<int>(role);
      EXPECT_GT(*std::min_element(counts.begin(), counts.end()), 0)
          << parts << " partitions, role " << static_cast<int>(role);
    }
    size_t inside = 0, tor_leaf = 0;
    for (const auto& l : t.links) {
      const int a = t.SwitchIndex(l.a), b = t.SwitchIndex(l.b);
      if (a < 0 || b < 0) continue;
      const bool tor_side =
          t.switches[a].role == SwitchRole::kTor || t.switches[b].role == SwitchRole::kTor;
      if (!tor_side) continue;
      ++tor_leaf;
      inside += part(l.a) == part(l.b);
    }
    ASSERT_EQ(tor_leaf, 2u * 4 * 4);
    // 2 and 4 partitions: ToR blocks of whole podsets or halves, each leaf with its ToRs' block
    // where the caps allow. 3 partitions (ToR blocks 3/3/2): most links still inside.
    if (parts == 2) {
      EXPECT_EQ(inside, tor_leaf);
    }
    EXPECT_GE(inside * 2, tor_leaf) << parts << " partitions";
  }
}

// With longer cables up the tiers (tor_cable, leaf_cable), the window is the leaf-spine link's
// delay: only those links cross between the two partitions. The old split (leaves in name order)
// cut ToR-leaf links too, and its windows were the 30 m cable's 150 ns.
TEST_F(RanksTest, WindowsAreTheLongestCableThePlanCuts) {
  Scenario s = Load("ecmp-bound.json");
  ClosSpec c{.tiers = 3,
             .spines = 16,
             .tors = 4,
             .leaves_per_podset = 4,
             .podsets = 2,
             .hosts_per_tor = 4,
             .link_rate = 40 * kGbps,
             .cable_m = 2,
             .tor_cable_m = 30,
             .leaf_cable_m = 300,
             .host_kind = HostKind::kBuiltin};
  auto t = BuildClos(c);
  ASSERT_TRUE(t.ok()) << t.message();
  ASSERT_EQ(t.value().hosts.size(), s.topology.hosts.size());
  s.topology = t.value();
  s.duration = 200 * kUs;
  const Outcome one = RunOne(s, s.duration);
  auto fr = SimFabric::Create(s, pool_);
  ASSERT_TRUE(fr.ok()) << fr.message();
  std::string note;
  ASSERT_TRUE(fr.value()->SetThreads(2, &note).ok());
  fr.value()->RunUntil(s.duration);
  nlohmann::json two = fr.value()->Summary();
  EXPECT_EQ(two["sim_events"]["lookahead_ps"], 300 * 5 * kNs) << "300 m at 5 ns/m";
  two.erase("sim_events");
  EXPECT_EQ(one.summary.dump(), two.dump()) << "the same run on two threads";
}

// Perftest-style RDMA tests, pings and UDP flows between hosts of different ranks (the merge
// joins a flow's halves and keeps the tests in the scenario's order).
TEST_F(RanksTest, RdmaTestsPingsAndUdpFlowsAcrossRanksMergeAsOneRun) {
  const Scenario s = Load("quickstart-rdma.json");
  const Outcome one = RunOne(s, s.duration + 10 * kMs);
  ASSERT_FALSE(one.summary["rdma"].empty());
  ExpectSameRun(one, RunRanks(s, 2, s.duration + 10 * kMs), 2);
}

// The test's own ranks: each collective gives every rank the same answer.
TEST(ThreadRanksTest, CollectivesGiveEveryRankTheSameAnswer) {
  auto g = testing::ThreadRanks::Group(3);
  std::vector<std::thread> threads;
  std::vector<std::string> errors(3);
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      testing::ThreadRanks& me = *g[r];
      std::vector<uint64_t> sum{uint64_t(r + 1), 10};
      me.Sum(&sum);
      std::vector<uint8_t> bits{uint8_t(1u << r)};
      me.Or(&bits);
      std::vector<int64_t> mx{-r, r};
      me.Max(&mx);
      std::vector<std::string> out(3);
      for (int to = 0; to < 3; ++to) out[to] = std::to_string(r) + ">" + std::to_string(to);
      const auto in = me.AllToAll(out);
      const auto root = me.GatherToRoot("r" + std::to_string(r));
      std::string& e = errors[r];
      if (me.Min(10 - r) != 8) e += "min ";
      if (me.Max(int64_t{r}) != 2) e += "max1 ";
      if (sum != std::vector<uint64_t>{6, 30}) e += "sum ";
      if (bits[0] != 7) e += "or ";
      if (mx != std::vector<int64_t>{0, 2}) e += "max ";
      for (int from = 0; from < 3; ++from) {
        if (in[from] != std::to_string(from) + ">" + std::to_string(r)) e += "alltoall ";
        if (root[from] != (r == 0 ? "r" + std::to_string(from) : std::string())) e += "gather ";
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < 3; ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
}

// What SetRanks refuses, naming the key, before anything runs.
TEST_F(RanksTest, RefusesWhatADistributedRunDoesNotGatherYet) {
  auto group = testing::ThreadRanks::Group(2);
  auto refused = [&](Scenario s) {
    auto fr = SimFabric::Create(s, pool_);
    EXPECT_TRUE(fr.ok()) << fr.message();
    auto r = fr.value()->SetRanks(group[0].get(), 1);
    EXPECT_FALSE(r.ok());
    return r.ok() ? std::string() : r.message();
  };
  Scenario s = Load("quickstart-rdma.json");
  s.output.capture = {"tor0/p0"};
  EXPECT_NE(refused(s).find("output.capture"), std::string::npos);
  s = Load("quickstart-rdma.json");
  s.output.sample_interval = 10 * kUs;
  EXPECT_NE(refused(s).find("output.sample_interval"), std::string::npos);
  EXPECT_NE(refused(Load("pingmesh.json")).find("Pingmesh"), std::string::npos);
  EXPECT_NE(refused(Load("incast-dcqcn.json")).find("2 ranks need at least 2 ToRs"),
            std::string::npos);
  auto fr = SimFabric::Create(Load("quickstart-rdma.json"), pool_);
  ASSERT_TRUE(fr.ok());
  ASSERT_TRUE(fr.value()->SetRanks(group[0].get(), 1).ok());
  EXPECT_FALSE(fr.value()->SetRanks(group[0].get(), 1).ok()) << "a second call";
  auto fr2 = SimFabric::Create(Load("quickstart-rdma.json"), pool_);
  EXPECT_FALSE(fr2.value()->SetRanks(group[0].get(), 0).ok()) << "0 threads";
}

}  // namespace
}  // namespace rocefab

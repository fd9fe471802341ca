// A distributed sim run (SimFabric::SetRanks) with its ranks as threads of this process
// (tests/support/thread_ranks.h): the same runner, observer and merge code an MPI run uses
// (tests/mpi/mpi_test.py runs the real mpirun), here in the scenario suite and under the
// sanitizers. Each case runs a shipped scenario on one process and on 2 and 3 ranks and
// compares the merged summary (sim_events aside), the fault log and the FCTs.
#include <gtest/gtest.h>

#include <thread>

#include "run/sim_fabric.h"
#include "run/sim_ranks.h"
#include "tests/support/test_pool.h"
#include "tests/support/thread_ranks.h"

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

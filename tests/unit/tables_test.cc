#include <gtest/gtest.h>

#include <algorithm>
#include <list>
#include <set>

#include "common/rng.h"
#include "nic-emu/mtt_cache.h"
#include "switch/mac_table.h"
#include "switch/route_table.h"

namespace rocefab {
namespace {

const Mac kA = Mac{{0x02, 0, 0, 0, 0, 0x0a}};
const Mac kB = Mac{{0x02, 0, 0, 0, 0, 0x0b}};

TEST(MacTableTest, LearnsLooksUpAndAgesAtTheExactBoundary) {
  MacTable t(300 * kSec);
  EXPECT_TRUE(t.Learn(0, 100, kA, 3));
  EXPECT_EQ(t.Lookup(300 * kSec, 100, kA), std::optional<uint16_t>(3));  // age == limit: valid
  EXPECT_FALSE(t.Lookup(300 * kSec + 1, 100, kA).has_value());           // one ps later: gone
  EXPECT_EQ(t.aged_out(), 1u);
  EXPECT_EQ(t.size(), 0u);
}

TEST(MacTableTest, RefreshMoveAndVlanSeparation) {
  MacTable t(kSec);
  t.Learn(0, 100, kA, 1);
  EXPECT_FALSE(t.Learn(kSec / 2, 100, kA, 1));                                // refresh only
  EXPECT_EQ(t.Lookup(kSec + kSec / 4, 100, kA), std::optional<uint16_t>(1));  // refreshed at 0.5 s
  EXPECT_TRUE(t.Learn(kSec + kSec / 4, 100, kA, 2));                          // station moved
  EXPECT_EQ(t.moves(), 1u);
  EXPECT_EQ(t.Lookup(kSec + kSec / 4, 100, kA), std::optional<uint16_t>(2));
  EXPECT_FALSE(t.Lookup(0, 200, kA).has_value());  // other VLAN
  EXPECT_FALSE(t.Lookup(0, 100, kB).has_value());
  EXPECT_TRUE(t.Flush(100, kA));
  EXPECT_FALSE(t.Lookup(kSec + kSec / 4, 100, kA).has_value());
}

TEST(ArpTableTest, AgesLikeTheMacTable) {
  ArpTable t(4 * 3600 * kSec);
  t.Update(0, 0x0A010002, kA);
  EXPECT_TRUE(MacEq(*t.Lookup(4 * 3600 * kSec, 0x0A010002), kA));
  EXPECT_FALSE(t.Lookup(4 * 3600 * kSec + 1, 0x0A010002).has_value());
  EXPECT_EQ(t.aged_out(), 1u);
}

RouteGroup Ecmp(int n) {
  RouteGroup g;
  for (int i = 0; i < n; ++i) g.members.push_back(NextHop{static_cast<uint16_t>(i), kA});
  return g;
}

class RouteTableTest : public ::testing::TestWithParam<FibLayout> {};

TEST_P(RouteTableTest, LongestPrefixWins) {
  static int n = 0;
  auto r = RouteTable::Create("rt_test" + std::to_string(n++), 16, GetParam());
  ASSERT_TRUE(r.ok()) << r.message();
  std::unique_ptr<RouteTable> t(r.value());
  ASSERT_TRUE(t->Add(0x0A000000, 8, Ecmp(1)).ok());
  ASSERT_TRUE(t->Add(0x0A010100, 24, Ecmp(4)).ok());
  RouteGroup local;
  local.kind = RouteGroup::Kind::kLocal;
  ASSERT_TRUE(t->Add(0x0A010101, 32, local).ok());
  EXPECT_EQ(t->Lookup(0x0A010102)->members.size(), 4u);
  EXPECT_EQ(t->Lookup(0x0A020304)->members.size(), 1u);
  EXPECT_EQ(t->Lookup(0x0A010101)->kind, RouteGroup::Kind::kLocal);
  EXPECT_EQ(t->Lookup(0x0B000001), nullptr);
  EXPECT_FALSE(t->Add(0x0A000000, 33, Ecmp(1)).ok());
  EXPECT_FALSE(t->Add(0x0A000000, 16, RouteGroup{}).ok());  // ECMP group without members
}

TEST_P(RouteTableTest, RoutesAddedAfterLookupsTakeEffect) {
  // The prefix hash caches recent answers; a more specific route added later must win at once,
  // also for addresses looked up (and cached) before, and misses must not stick either.
  static int n = 0;
  auto r = RouteTable::Create("rt_late" + std::to_string(n++), 16, GetParam());
  ASSERT_TRUE(r.ok()) << r.message();
  std::unique_ptr<RouteTable> t(r.value());
  EXPECT_EQ(t->Lookup(0x0A010102), nullptr);
  ASSERT_TRUE(t->Add(0x0A000000, 8, Ecmp(1)).ok());
  for (Ipv4 a = 0x0A010100; a < 0x0A010200; ++a) ASSERT_EQ(t->Lookup(a)->members.size(), 1u);
  ASSERT_TRUE(t->Add(0x0A010100, 24, Ecmp(3)).ok());
  for (Ipv4 a = 0x0A010100; a < 0x0A010200; ++a) EXPECT_EQ(t->Lookup(a)->members.size(), 3u) << a;
  EXPECT_EQ(t->Lookup(0x0A020001)->members.size(), 1u);
}

TEST_P(RouteTableTest, RemovedRoutesStopMatchingAndLessSpecificOnesTakeOver) {
  static int n = 0;
  auto r = RouteTable::Create("rt_rm" + std::to_string(n++), 16, GetParam());
  ASSERT_TRUE(r.ok()) << r.message();
  std::unique_ptr<RouteTable> t(r.value());
  ASSERT_TRUE(t->Add(0x0A000000, 8, Ecmp(1)).ok());
  ASSERT_TRUE(t->Add(0x0A010100, 24, Ecmp(2)).ok());
  ASSERT_TRUE(t->Add(0x0A010105, 32, Ecmp(3)).ok());
  EXPECT_EQ(t->Lookup(0x0A010105)->members.size(), 3u);
  t->Remove(0x0A010105, 32);  // the only /32: its length goes too
  EXPECT_EQ(t->Lookup(0x0A010105)->members.size(), 2u);
  t->Remove(0x0A0101FF, 24);  // host bits are masked off, as in Add
  EXPECT_EQ(t->Lookup(0x0A010105)->members.size(), 1u);
  t->Remove(0x0A000000, 8);
  EXPECT_EQ(t->Lookup(0x0A010105), nullptr);
  t->Remove(0x0A000000, 8);  // absent: no effect
  EXPECT_EQ(t->size(), 0u);
  EXPECT_EQ(t->groups(), 0u);
  ASSERT_TRUE(t->Add(0x0A010100, 24, Ecmp(4)).ok());
  EXPECT_EQ(t->Lookup(0x0A010105)->members.size(), 4u);
  EXPECT_EQ(t->size(), 1u);
}

TEST_P(RouteTableTest, EqualGroupsAreStoredOnceAndReplacingARouteMovesIt) {
  static int n = 0;
  auto r = RouteTable::Create("rt_groups" + std::to_string(n++), 1100, GetParam());
  ASSERT_TRUE(r.ok()) << r.message();
  std::unique_ptr<RouteTable> t(r.value());
  for (Ipv4 i = 0; i < 1000; ++i) ASSERT_TRUE(t->Add(0x0A000000 + (i << 8), 24, Ecmp(16)).ok());
  EXPECT_EQ(t->size(), 1000u);
  EXPECT_EQ(t->groups(), 1u);
  RouteGroup other = Ecmp(16);
  other.members[3].port = 99;  // one member differs: another group
  ASSERT_TRUE(t->Add(0x0A000500, 24, other).ok());
  EXPECT_EQ(t->groups(), 2u);
  EXPECT_EQ(t->Lookup(0x0A000501)->members[3].port, 99);
  EXPECT_EQ(t->Lookup(0x0A000601)->members[3].port, 3);
  EXPECT_EQ(t->Find(0x0A0005FF, 24)->members[3].port, 99);
  EXPECT_EQ(t->Find(0x0A000500, 23), nullptr);
  ASSERT_TRUE(t->Add(0x0A000500, 24, Ecmp(16)).ok());  // back: the other group is freed
  EXPECT_EQ(t->groups(), 1u);
  EXPECT_EQ(t->Lookup(0x0A000501)->members[3].port, 3);
  RouteGroup leaf = Ecmp(16);
  leaf.conga_leaf = 7;  // per-prefix fields make a group of its own
  ASSERT_TRUE(t->Add(0x0A000700, 24, leaf).ok());
  EXPECT_EQ(t->groups(), 2u);
  EXPECT_EQ(t->Lookup(0x0A000701)->conga_leaf, 7);
  EXPECT_EQ(t->Lookup(0x0A000801)->conga_leaf, -1);
  EXPECT_EQ(t->size(), 1000u);
}

INSTANTIATE_TEST_SUITE_P(BothLayouts, RouteTableTest,
                         ::testing::Values(FibLayout::kDir24_8, FibLayout::kPrefixHash));

TEST(RouteTableTest, PrefixHashTablesTakeNoMemzones) {
  // Debian's DPDK 22.11 has 2,560 memzones in all (RTE_MAX_MEMZONE) and rte_fib's RIB takes 3
  // per table: a 1,024-switch fabric (16k hosts, 3-tier) stopped at the 852nd. The sim's layout
  // must not touch them.
  std::vector<std::unique_ptr<RouteTable>> tables;
  for (int i = 0; i < 3000; ++i) {
    auto r = RouteTable::Create("rt_many" + std::to_string(i), 600, FibLayout::kPrefixHash);
    ASSERT_TRUE(r.ok()) << i << ": " << r.message();
    tables.emplace_back(r.value());
    ASSERT_TRUE(tables.back()->Add(0x0A000000 + (static_cast<Ipv4>(i) << 8), 24, Ecmp(1)).ok());
  }
  EXPECT_EQ(tables[2999]->Lookup(0x0A000000 + (2999u << 8) + 7)->members.size(), 1u);
  EXPECT_EQ(tables[2999]->Lookup(0x0A000007), nullptr);
}

TEST(EcmpTest, DeterministicSeededAndBalanced) {
  // Same 5-tuple and seed: same hash. Different seed: (almost always) different choices.
  EXPECT_EQ(EcmpHash(1, 2, 17, 3, 4, 7), EcmpHash(1, 2, 17, 3, 4, 7));
  int differ = 0;
  int counts[4] = {0, 0, 0, 0};
  for (uint16_t sport = 49152; sport < 49152 + 4000; ++sport) {
    const uint32_t h1 = EcmpHash(0x0A010002, 0x0A010103, 17, sport, 4791, 1);
    const uint32_t h2 = EcmpHash(0x0A010002, 0x0A010103, 17, sport, 4791, 2);
    differ += EcmpPick(h1, 4) != EcmpPick(h2, 4);
    counts[EcmpPick(h1, 4)]++;
  }
  EXPECT_GT(differ, 2500);  // ~3000 expected for independent seeds
  for (int c : counts) EXPECT_NEAR(c, 1000, 150) << "members not used evenly";
  for (uint32_t h : {0u, 1u, 0x7FFFFFFFu, 0xFFFFFFFFu}) EXPECT_LT(EcmpPick(h, 3), 3u);
}

TEST(MttCacheTest, HitsAndEvictionsEqualAListLru) {
  // The flat cache against the plain definition: a std::list in recency order, most recent
  // first, the last one evicted when an insert makes it one too long.
  for (uint32_t cap : {1u, 2u, 7u, 64u}) {
    MttCache c(cap);
    std::list<uint64_t> ref;
    Rng rng(cap);
    uint64_t hits = 0;
    for (int i = 0; i < 20000; ++i) {
      const uint64_t key = rng.Below(cap * 3 / 2 + 2) | (i % 5 == 0 ? 1ull << 40 : 0);
      auto it = std::find(ref.begin(), ref.end(), key);
      const bool hit = it != ref.end();
      if (hit) {
        ref.splice(ref.begin(), ref, it);
      } else {
        ref.push_front(key);
        if (ref.size() > cap) ref.pop_back();
      }
      ASSERT_EQ(c.Touch(key), hit) << "cap " << cap << " step " << i;
      hits += hit;
      ASSERT_EQ(c.size(), ref.size());
    }
    EXPECT_GT(hits, 0u);
    EXPECT_LT(hits, 20000u);
  }
}

}  // namespace
}  // namespace rocefab

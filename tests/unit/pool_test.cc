// The sim's growable frame pool (common/eal.h CreateGrowablePktPool): it starts small, grows
// when empty until its cap, and every frame of a new chunk is a whole mbuf before any thread
// can take it.
#include <gtest/gtest.h>
#include <rte_mbuf.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/eal.h"
#include "common/packet.h"

namespace rocefab {
namespace {

constexpr uint16_t kRoom = RTE_MBUF_DEFAULT_BUF_SIZE;

std::string PoolName() {
  static int n = 0;
  return "growtest" + std::to_string(n++);
}

// What rte_pktmbuf_init and rte_pktmbuf_alloc leave in a frame fresh from `mp`.
void ExpectWholeMbuf(const rte_mbuf* m, const rte_mempool* mp) {
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->pool, mp);
  EXPECT_EQ(m->buf_len, kRoom);
  EXPECT_EQ(m->priv_size, kMbufPrivSize);
  EXPECT_EQ(m->data_off, RTE_PKTMBUF_HEADROOM);
  EXPECT_EQ(m->data_len, 0);
  EXPECT_EQ(m->pkt_len, 0u);
  EXPECT_EQ(m->nb_segs, 1);
  EXPECT_EQ(m->next, nullptr);
  EXPECT_EQ(rte_mbuf_refcnt_read(m), 1);
  EXPECT_EQ(m->buf_addr, reinterpret_cast<const char*>(m) + sizeof(rte_mbuf) + kMbufPrivSize);
}

struct PoolFree {
  void operator()(rte_mempool* mp) const { rte_mempool_free(mp); }
};
using PoolPtr = std::unique_ptr<rte_mempool, PoolFree>;

PoolPtr Growable(unsigned cap, unsigned initial) {
  auto p = CreateGrowablePktPool(PoolName(), cap, initial, kRoom);
  EXPECT_TRUE(p.ok()) << p.message();
  return PoolPtr(p.ok() ? p.value() : nullptr);
}

TEST(GrowablePoolTest, StartsSmallGrowsWhenEmptyAndNeverShrinks) {
  PoolPtr pool = Growable(100000, 1000);
  ASSERT_NE(pool, nullptr);
  rte_mempool* mp = pool.get();
  const unsigned first = PoolFrames(mp);
  // At least the initial count; at most that plus one 2 MiB page of frames (chunks are whole
  // transparent huge pages).
  EXPECT_GE(first, 1000u);
  EXPECT_LE(first, 1000u + (2u << 20) / kRoom);
  EXPECT_EQ(PoolInUse(mp), 0u);

  std::vector<rte_mbuf*> held;
  for (int i = 0; i < 5000; ++i) {
    rte_mbuf* m = AllocMbuf(mp);
    ExpectWholeMbuf(m, mp);
    if (m == nullptr) break;
    // The whole data room is the frame's: write a pattern to the last byte.
    char* d = rte_pktmbuf_append(m, kRoom - RTE_PKTMBUF_HEADROOM);
    ASSERT_NE(d, nullptr);
    std::memset(d, i & 0xff, kRoom - RTE_PKTMBUF_HEADROOM);
    held.push_back(m);
  }
  ASSERT_EQ(held.size(), 5000u);
  EXPECT_EQ(std::set<rte_mbuf*>(held.begin(), held.end()).size(), 5000u);
  EXPECT_GE(PoolFrames(mp), 5000u);
  EXPECT_EQ(PoolInUse(mp), 5000u);
  for (size_t i = 0; i < held.size(); ++i) {  // no frame overlaps another
    const auto* d = rte_pktmbuf_mtod(held[i], const uint8_t*);
    ASSERT_EQ(d[0], i & 0xff);
    ASSERT_EQ(d[kRoom - RTE_PKTMBUF_HEADROOM - 1], i & 0xff);
  }
  // A copy grows the pool as an allocation does.
  const unsigned before_copy = PoolFrames(mp);
  std::vector<rte_mbuf*> copies;
  while (PoolFrames(mp) == before_copy) {
    rte_mbuf* c = CopyMbuf(held[copies.size() % held.size()], mp);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->pkt_len, kRoom - RTE_PKTMBUF_HEADROOM);
    copies.push_back(c);
  }
  const unsigned grown = PoolFrames(mp);
  for (rte_mbuf* m : held) rte_pktmbuf_free(m);
  for (rte_mbuf* m : copies) rte_pktmbuf_free(m);
  EXPECT_EQ(PoolInUse(mp), 0u);
  EXPECT_EQ(PoolFrames(mp), grown);  // memory once taken stays with the pool
}

TEST(GrowablePoolTest, StopsAtItsCapExactly) {
  PoolPtr pool = Growable(3000, 1000);
  ASSERT_NE(pool, nullptr);
  rte_mempool* mp = pool.get();
  std::vector<rte_mbuf*> held;
  while (rte_mbuf* m = AllocMbuf(mp)) held.push_back(m);
  EXPECT_EQ(held.size(), 3000u);
  EXPECT_EQ(PoolFrames(mp), 3000u);
  EXPECT_FALSE(GrowPool(mp));
  EXPECT_EQ(CopyMbuf(held[0], mp), nullptr);
  rte_pktmbuf_free(held.back());  // a frame comes back: it is the next one out
  held.pop_back();
  held.push_back(AllocMbuf(mp));
  EXPECT_NE(held.back(), nullptr);
  for (rte_mbuf* m : held) rte_pktmbuf_free(m);
}

TEST(GrowablePoolTest, EndsWithinAQuarterOfTheMostFramesHeld) {
  PoolPtr pool = Growable(1000000, 2048);
  ASSERT_NE(pool, nullptr);
  rte_mempool* mp = pool.get();
  std::vector<rte_mbuf*> held;
  for (int i = 0; i < 60000; ++i) held.push_back(AllocMbuf(mp));
  EXPECT_EQ(std::count(held.begin(), held.end(), nullptr), 0);
  EXPECT_LE(PoolFrames(mp), 60000u * 5 / 4 + 2048u + (2u << 20) / kRoom);
  for (rte_mbuf* m : held) rte_pktmbuf_free(m);
}

TEST(GrowablePoolTest, AFixedPoolDoesNotGrow) {
  auto p = CreateHostOnlyPktPool(PoolName(), 1023, kRoom);
  ASSERT_TRUE(p.ok()) << p.message();
  PoolPtr pool(p.value());
  std::vector<rte_mbuf*> held;
  while (rte_mbuf* m = AllocMbuf(pool.get())) held.push_back(m);
  EXPECT_EQ(held.size(), 1023u);
  EXPECT_FALSE(GrowPool(pool.get()));
  EXPECT_EQ(PoolFrames(pool.get()), 1023u);
  EXPECT_EQ(PoolInUse(pool.get()), 1023u);
  for (rte_mbuf* m : held) rte_pktmbuf_free(m);
}

TEST(GrowablePoolTest, BadSizesAreRefused) {
  auto p = CreateGrowablePktPool(PoolName(), 0, 1, kRoom);
  EXPECT_FALSE(p.ok());
  EXPECT_NE(p.message().find("cap 0"), std::string::npos) << p.message();
  auto q = CreateGrowablePktPool(PoolName(), 10, 0, kRoom);
  EXPECT_FALSE(q.ok());
}

// Two threads take and return frames while the pool grows under them (the sim's partitions on
// their threads): every frame either gets is whole and its own. The threads suite runs this in
// the ThreadSanitizer build.
TEST(GrowablePoolTest, GrowsWhileTwoThreadsAllocateAndFreeOnTwoThreads) {
  PoolPtr pool = Growable(400000, 512);
  ASSERT_NE(pool, nullptr);
  rte_mempool* mp = pool.get();
  std::vector<std::vector<rte_mbuf*>> kept(2);
  auto work = [&](int id) {
    std::vector<rte_mbuf*>& mine = kept[id];
    for (int round = 0; round < 6; ++round) {
      std::vector<rte_mbuf*> batch;
      for (int i = 0; i < 8000; ++i) {
        rte_mbuf* m = AllocMbuf(mp);
        if (m == nullptr || m->pool != mp || m->buf_len != kRoom || m->data_len != 0) {
          ADD_FAILURE() << "thread " << id << " got a bad frame";
          return;
        }
        auto* tag = reinterpret_cast<uint32_t*>(rte_pktmbuf_append(m, 8));
        tag[0] = static_cast<uint32_t>(id);
        tag[1] = static_cast<uint32_t>(round * 8000 + i);
        batch.push_back(m);
      }
      // Keep every other round's frames (the pool must grow), return the rest.
      for (rte_mbuf* m : batch) {
        if (round % 2 == 0) {
          mine.push_back(m);
        } else {
          rte_pktmbuf_free(m);
        }
      }
    }
  };
  std::thread a(work, 0), b(work, 1);
  a.join();
  b.join();
  std::set<rte_mbuf*> all;
  for (int id = 0; id < 2; ++id) {
    EXPECT_EQ(kept[id].size(), 3u * 8000);
    for (rte_mbuf* m : kept[id]) {
      EXPECT_EQ(rte_pktmbuf_mtod(m, const uint32_t*)[0], static_cast<uint32_t>(id));
      all.insert(m);
    }
  }
  EXPECT_EQ(all.size(), 2u * 3 * 8000) << "a frame was handed to both threads";
  EXPECT_GE(PoolFrames(mp), 2u * 3 * 8000);
  EXPECT_EQ(PoolInUse(mp), 2u * 3 * 8000);
  for (auto& v : kept) {
    for (rte_mbuf* m : v) rte_pktmbuf_free(m);
  }
  EXPECT_EQ(PoolInUse(mp), 0u);
}

}  // namespace
}  // namespace rocefab

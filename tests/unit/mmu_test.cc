#include "switch/mmu.h"

#include <gtest/gtest.h>

namespace rocefab {
namespace {

// One switch, 2 ports, PG3 lossless; 100 KB buffer, no reserved; static headroom 10 KB.
MmuConfig Small(int dynamic_th = 0) {
  MmuConfig c;
  c.buffer_bytes = 100'000;
  c.num_ports = 2;
  c.lossless_pg_mask = 1 << 3;
  c.lossless_queue_mask = 1 << 3;
  PgProfile ll;
  ll.dynamic_th = dynamic_th;
  ll.xoff = 10'000;
  ll.xon = 2'000;
  ll.xon_offset = 3'000;
  c.lossless_pg = {ll, ll};
  c.lossy_pg.dynamic_th = 0;
  c.lossy_queue.dynamic_th = -1;
  return c;
}

TEST(MmuTest, SharedPoolIsBufferMinusHeadroom) {
  auto m = SharedBufferMmu::Create(Small());
  ASSERT_TRUE(m.ok()) << m.message();
  // 2 ports x 1 lossless PG x 10 KB headroom.
  EXPECT_EQ(m.value().shared_pool_bytes(), 80'000);
  auto bad = Small();
  bad.buffer_bytes = 20'000;
  EXPECT_FALSE(SharedBufferMmu::Create(bad).ok());
}

TEST(MmuTest, DynamicThresholdMatchesHandComputedValues) {
  for (int th : {-2, 0, 1}) {
    auto r = SharedBufferMmu::Create(Small(th));
    ASSERT_TRUE(r.ok());
    SharedBufferMmu& m = r.value();
    // Empty pool: limit = 2^th x 80,000.
    const int64_t expect0 = th >= 0 ? 80'000LL << th : 80'000LL >> -th;
    EXPECT_EQ(m.PgLimit(0, 3), expect0) << "th " << th;
    // 10 KB in the shared pool from port 1: limit = 2^th x 70,000.
    for (int i = 0; i < 10; ++i)
      ASSERT_EQ(m.Admit(1, 0, 0, 0, 1000).verdict, AdmitResult::Verdict::kAccept);
    const int64_t expect1 = th >= 0 ? 70'000LL << th : 70'000LL >> -th;
    EXPECT_EQ(m.PgLimit(0, 3), expect1) << "th " << th;
  }
}

TEST(MmuTest, ExactXoffAndXonBytes) {
  // alpha = 1: PG3 of port 0 alone gets limit = free = 80,000 - shared; XOFF when its shared
  // bytes reach the limit: s = 80,000 - s  =>  s = 40,000.
  auto r = SharedBufferMmu::Create(Small(0));
  ASSERT_TRUE(r.ok());
  SharedBufferMmu& m = r.value();
  int64_t admitted = 0;
  while (true) {
    const AdmitResult a = m.Admit(0, 3, 1, 3, 1000);
    ASSERT_EQ(a.verdict, AdmitResult::Verdict::kAccept);
    admitted += 1000;
    if (a.xoff) break;
    ASSERT_LT(admitted, 80'000);
  }
  EXPECT_EQ(admitted, 40'000);
  EXPECT_EQ(m.pg_bytes(0, 3), 40'000);
  EXPECT_TRUE(m.xoff(0, 3));
  // Next frames would exceed the limit: they go to headroom, up to exactly 10,000 bytes.
  for (int i = 0; i < 10; ++i) {
    const AdmitResult a = m.Admit(0, 3, 1, 3, 1000);
    ASSERT_EQ(a.verdict, AdmitResult::Verdict::kAccept);
    EXPECT_EQ(a.bucket, MmuBucket::kHeadroom);
  }
  EXPECT_EQ(m.pg_headroom_bytes(0, 3), 10'000);
  EXPECT_EQ(m.Admit(0, 3, 1, 3, 1000).verdict, AdmitResult::Verdict::kDropLosslessHeadroom);
  // Drain: headroom first (no XON while headroom holds bytes), then shared. XON when usage
  // <= max(xon, limit - xon_offset): with s shared, limit = 80,000 - s, so s <= 77,000 - s,
  // i.e. s <= 38,500 -> at 38,000 (1,000-byte steps).
  for (int i = 0; i < 10; ++i) EXPECT_FALSE(m.Release(0, 3, MmuBucket::kHeadroom, 1, 3, 1000));
  int64_t shared = 40'000;
  bool xon = false;
  while (!xon) {
    xon = m.Release(0, 3, MmuBucket::kShared, 1, 3, 1000);
    shared -= 1000;
    ASSERT_GT(shared, 0);
  }
  EXPECT_EQ(shared, 38'000);
  EXPECT_FALSE(m.xoff(0, 3));
  EXPECT_EQ(m.pg_watermark(0, 3), 50'000);
}

// The PG's buckets are counters: frames that spilled into headroom and stay queued (a ConWeave
// reorder queue holding them for a TAIL) do not keep the PG in XOFF once as many bytes have left
// as spilled. Charged per frame, the headroom would stay in use until those very frames left, and
// a TAIL queued behind the PG's own pause would never release them (the collapse of ConWeave
// under the default model, docs/experiments.md).
TEST(MmuTest, HeadroomEmptiesWhenAsManyBytesLeftAsSpilledWhileTheSpilledFramesStay) {
  auto r = SharedBufferMmu::Create(Small(0));
  ASSERT_TRUE(r.ok());
  SharedBufferMmu& m = r.value();
  while (!m.Admit(0, 3, 1, 3, 1000).xoff) ASSERT_LT(m.pg_bytes(0, 3), 80'000);
  ASSERT_EQ(m.pg_bytes(0, 3), 40'000);
  for (int i = 0; i < 5; ++i) ASSERT_EQ(m.Admit(0, 3, 1, 3, 1000).bucket, MmuBucket::kHeadroom);
  // The 40 earlier frames (admitted to shared) leave one by one; the 5 spilled frames stay.
  for (int i = 0; i < 5; ++i) {
    EXPECT_FALSE(m.Release(0, 3, MmuBucket::kShared, 1, 3, 1000)) << i;
    EXPECT_EQ(m.pg_headroom_bytes(0, 3), 4'000 - 1'000 * i);
  }
  EXPECT_EQ(m.pg_bytes(0, 3), 40'000);
  EXPECT_EQ(m.shared_pool_bytes() - m.shared_used(), 40'000) << "the shared count is untouched";
  // Usage 40,000 (the 5 held frames among it): XON at usage <= limit - xon_offset, i.e. at
  // s <= 77,000 - s -> 38,000, two more departures.
  EXPECT_FALSE(m.Release(0, 3, MmuBucket::kShared, 1, 3, 1000));
  EXPECT_TRUE(m.Release(0, 3, MmuBucket::kShared, 1, 3, 1000));
  EXPECT_EQ(m.pg_bytes(0, 3), 38'000);
  EXPECT_EQ(m.shared_used(), 38'000);
  // The held frames leave last, from the shared count: nothing goes negative.
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(m.Release(0, 3, MmuBucket::kHeadroom, 1, 3, 1000));
  EXPECT_EQ(m.pg_headroom_bytes(0, 3), 0);
  EXPECT_EQ(m.pg_bytes(0, 3), 33'000);
  EXPECT_EQ(m.shared_used(), 33'000);
}

// SAI_BUFFER_POOL_ATTR_XOFF_SIZE: one shared headroom pool instead of dedicated per-PG headroom.
// The buffer no longer reserves 10 KB per lossless PG; each PG still takes at most its xoff of
// the pool, and a full pool drops even a PG below its own xoff.
TEST(MmuTest, SharedHeadroomPoolCapsAllPgsTogether) {
  MmuConfig c = Small(0);
  c.shared_headroom_pool = 15'000;
  auto r = SharedBufferMmu::Create(c);
  ASSERT_TRUE(r.ok()) << r.message();
  SharedBufferMmu& m = r.value();
  EXPECT_EQ(m.shared_pool_bytes(), 85'000) << "100,000 - 15,000 shared headroom, none per PG";
  // Both ingress ports' PG3 to XOFF: limit = alpha x free; fill until each says XOFF.
  for (uint16_t in : {0, 1}) {
    while (!m.Admit(in, 3, 1 - in, 3, 1000).xoff) ASSERT_LT(m.pg_bytes(in, 3), 85'000);
  }
  // Port 0 takes 10,000 (its xoff) of the pool; port 1 gets only the 5,000 left.
  int port0 = 0, port1 = 0;
  while (m.Admit(0, 3, 1, 3, 1000).verdict == AdmitResult::Verdict::kAccept) ++port0;
  while (m.Admit(1, 3, 0, 3, 1000).verdict == AdmitResult::Verdict::kAccept) ++port1;
  EXPECT_EQ(port0, 10);
  EXPECT_EQ(port1, 5);
  EXPECT_EQ(m.shared_headroom_used(), 15'000);
  EXPECT_EQ(m.pg_headroom_bytes(1, 3), 5'000);
  // Releasing port 0's headroom frees the pool for port 1.
  EXPECT_FALSE(m.Release(0, 3, MmuBucket::kHeadroom, 1, 3, 1000));
  EXPECT_EQ(m.shared_headroom_used(), 14'000);
  EXPECT_EQ(m.Admit(1, 3, 0, 3, 1000).bucket, MmuBucket::kHeadroom);
}

// A lossless PG with xoff 0 (SONiC accepts the profile): it still sends XOFF at its limit, and
// every frame beyond the limit is a lossless drop (fabric/check.cc names the configuration).
TEST(MmuTest, ZeroHeadroomDropsEveryFrameOverTheLimit) {
  MmuConfig c = Small(0);
  for (auto& pg : c.lossless_pg) pg.xoff = 0;
  auto r = SharedBufferMmu::Create(c);
  ASSERT_TRUE(r.ok()) << r.message();
  SharedBufferMmu& m = r.value();
  EXPECT_EQ(m.shared_pool_bytes(), 100'000);
  bool xoff = false;
  while (!xoff) {
    const AdmitResult a = m.Admit(0, 3, 1, 3, 1000);
    ASSERT_EQ(a.verdict, AdmitResult::Verdict::kAccept);
    xoff = a.xoff;
  }
  EXPECT_EQ(m.Admit(0, 3, 1, 3, 1000).verdict, AdmitResult::Verdict::kDropLosslessHeadroom);
  EXPECT_EQ(m.pg_headroom_bytes(0, 3), 0);
}

TEST(MmuTest, LossyQueueDropsAtItsEgressLimit) {
  auto r = SharedBufferMmu::Create(Small(0));
  ASSERT_TRUE(r.ok());
  SharedBufferMmu& m = r.value();
  // Egress alpha 1/2 of the free buffer (100,000): q <= (100,000 - q) / 2  =>  q <= 33,333.
  int64_t q = 0;
  while (m.Admit(SharedBufferMmu::kNoPort, 0, 1, 0, 1000).verdict ==
         AdmitResult::Verdict::kAccept) {
    q += 1000;
  }
  EXPECT_EQ(q, 33'000);
  EXPECT_EQ(m.Admit(SharedBufferMmu::kNoPort, 0, 1, 0, 1000).verdict,
            AdmitResult::Verdict::kDropEgressLimit);
  // A lossless queue is never dropped at egress.
  EXPECT_EQ(m.Admit(0, 3, 1, 3, 1000).verdict, AdmitResult::Verdict::kAccept);
}

TEST(HeadroomTest, SonicWorkedExamples) {
  struct Row {
    BitRate speed;
    double cable;
    int64_t xoff, xon, size;
  };
  // sonic-swss buffer_headroom_mellanox.lua with Spectrum-1 parameters (reference §3.5 table).
  const Row rows[] = {{25 * kGbps, 5, 31'744, 18'432, 50'176},
                      {100 * kGbps, 5, 72'704, 18'432, 91'136},
                      {100 * kGbps, 40, 80'896, 18'432, 99'328},
                      {100 * kGbps, 300, 144'384, 18'432, 162'816},
                      {400 * kGbps, 5, 140'288, 18'432, 158'720}};
  for (const auto& r : rows) {
    HeadroomParams p;
    p.speed = r.speed;
    p.cable_m = r.cable;
    const Headroom h = ComputeHeadroom(p);
    EXPECT_EQ(h.xoff, r.xoff) << r.speed / kGbps << "G " << r.cable << "m";
    EXPECT_EQ(h.xon, r.xon);
    EXPECT_EQ(h.size, r.size);
  }
  EXPECT_EQ(PeerResponseQuanta(100 * kGbps), 394);
  EXPECT_EQ(PeerResponseQuanta(10 * kGbps), 67);
}

}  // namespace
}  // namespace rocefab

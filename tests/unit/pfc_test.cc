#include <gtest/gtest.h>

#include <deque>
#include <map>

#include "common/pause_state.h"
#include "common/rng.h"
#include "common/wire/pfc_frame.h"
#include "switch/ecn.h"
#include "switch/scheduler.h"
#include "tests/support/test_pool.h"

namespace rocefab {
namespace {

PfcFrame Xoff(uint8_t enable, uint16_t quanta) {
  PfcFrame f;
  f.class_enable = enable;
  f.quanta.fill(quanta);
  return f;
}

TEST(PauseStateTest, ExpiresAtQuantaTimes512BitTimesToThePicosecond) {
  EXPECT_EQ(PauseQuantaTime(0xFFFF, 100 * kGbps), 335'539'200);  // 335.5 us (reference §2.2)
  EXPECT_EQ(PauseQuantaTime(1, 25 * kGbps), 20'480);             // 20.48 ns
  EXPECT_EQ(PauseQuantaTime(0xFFFF, 40 * kGbps), 838'848'000);   // 838.8 us
  PauseState s;
  const Time t0 = 5 * kUs;
  s.Apply(t0, Xoff(1 << 3, 100), 100 * kGbps, 0x18);
  const Time end = t0 + 100 * 512 * 10;  // 10 ps per bit at 100G
  EXPECT_TRUE(s.Paused(3, end - 1));
  EXPECT_FALSE(s.Paused(3, end));
  EXPECT_EQ(s.NextExpiry(t0, 0xFF), end);
  EXPECT_EQ(s.PausedTime(3, end + kUs), end - t0);
  EXPECT_EQ(s.on2off(3), 1u);
}

TEST(PauseStateTest, RefreshXonAndLossyPrioritiesIgnored) {
  PauseState s;
  s.Apply(0, Xoff(0x18, 1000), 10 * kGbps, 0x18);         // 1000 quanta at 10G = 51.2 us
  s.Apply(40 * kUs, Xoff(0x08, 1000), 10 * kGbps, 0x18);  // refresh before expiry
  EXPECT_TRUE(s.Paused(3, 90 * kUs));
  EXPECT_FALSE(s.Paused(4, 60 * kUs));
  EXPECT_EQ(s.on2off(3), 1u) << "a refresh is not a new XOFF transition";
  s.Apply(50 * kUs, Xoff(0x08, 0), 10 * kGbps, 0x18);  // XON
  EXPECT_FALSE(s.Paused(3, 50 * kUs));
  EXPECT_EQ(s.PausedTime(3, 100 * kUs), 50 * kUs);
  s.Apply(60 * kUs, Xoff(0x01, 0xFFFF), 10 * kGbps, 0x18);  // priority 0 is lossy
  EXPECT_FALSE(s.Paused(0, 61 * kUs));
  EXPECT_EQ(s.rx_frames(0), 0u);
}

class PfcFrameTest : public testing::PoolTest {};

TEST_F(PfcFrameTest, BuildParseRoundTripAndLayout) {
  std::array<uint16_t, 8> q{};
  q[3] = 0xFFFF;
  q[4] = 0x1234;
  rte_mbuf* m = BuildPfc(pool_, Mac{{2, 0, 0, 0, 0, 3}}, 0x18, q);
  ASSERT_NE(m, nullptr);
  ASSERT_EQ(rte_pktmbuf_pkt_len(m), 60u);
  const uint8_t* d = rte_pktmbuf_mtod(m, const uint8_t*);
  const uint8_t head[] = {0x01, 0x80, 0xC2, 0,    0,    1,    2,    0,    0,
                          0,    0,    3,    0x88, 0x08, 0x01, 0x01, 0x00, 0x18};
  for (size_t i = 0; i < sizeof head; ++i) EXPECT_EQ(d[i], head[i]) << "byte " << i;
  EXPECT_EQ(d[18 + 6], 0xFF);  // time[3]
  EXPECT_EQ(d[18 + 8], 0x12);  // time[4]
  PfcFrame f;
  ASSERT_TRUE(ParsePfc(m, &f));
  EXPECT_EQ(f.class_enable, 0x18);
  EXPECT_EQ(f.quanta[3], 0xFFFF);
  EXPECT_EQ(f.quanta[4], 0x1234);
  EXPECT_EQ(f.quanta[0], 0);
  rte_pktmbuf_free(m);
}

TEST(EcnTest, MarkingProbabilityIsLinearBetweenKminAndKmax) {
  WredProfile w;
  w.enabled = true;
  w.kmin = 100'000;
  w.kmax = 200'000;
  w.pmax = 0.5;
  Rng rng(42);
  EXPECT_EQ(EcnMarker::Decide(w, 100'000, true, rng), EcnAction::kNone);
  EXPECT_EQ(EcnMarker::Decide(w, 200'001, true, rng), EcnAction::kMark);
  EXPECT_EQ(EcnMarker::Decide(w, 200'001, false, rng), EcnAction::kNone);
  w.drop_non_ect = true;
  EXPECT_EQ(EcnMarker::Decide(w, 200'001, false, rng), EcnAction::kDrop);
  // q = 150,000: p = 0.5 * 0.5 = 0.25; q = 180,000: p = 0.4. 200k trials: 4.5 sigma < 0.005.
  for (auto [q, p] : std::map<int64_t, double>{{150'000, 0.25}, {180'000, 0.4}, {110'000, 0.05}}) {
    int marks = 0;
    constexpr int kTrials = 200'000;
    for (int i = 0; i < kTrials; ++i)
      marks += EcnMarker::Decide(w, q, true, rng) == EcnAction::kMark;
    EXPECT_NEAR(static_cast<double>(marks) / kTrials, p, 0.005) << "q " << q;
  }
}

class SchedulerTest : public testing::PoolTest {
 protected:
  rte_mbuf* Frame(uint16_t len) {
    rte_mbuf* m = rte_pktmbuf_alloc(pool_);
    rte_pktmbuf_append(m, len);
    return m;
  }
};

TEST_F(SchedulerTest, DwrrByteSharesFollowTheWeights) {
  SchedulerConfig c;
  c.strict_mask = 0;
  c.weights = {1, 2, 4, 1, 1, 1, 1, 1};
  EgressScheduler s(c);
  // Queues 0..2 always backlogged with mixed frame sizes.
  const uint16_t sizes[] = {64, 1500, 700, 1024, 300};
  std::array<int64_t, 3> bytes{};
  int k = 0;
  for (uint8_t q = 0; q < 3; ++q) {
    for (int i = 0; i < 64; ++i) s.Enqueue(q, Frame(sizes[(k++) % 5]));
  }
  for (int i = 0; i < 30000; ++i) {
    uint8_t q;
    rte_mbuf* m = s.Dequeue(0, &q);
    ASSERT_NE(m, nullptr);
    ASSERT_LT(q, 3);
    bytes[q] += rte_pktmbuf_pkt_len(m);
    s.Enqueue(q, m);  // keep it backlogged with the same size mix
  }
  const double total = static_cast<double>(bytes[0] + bytes[1] + bytes[2]);
  EXPECT_NEAR(bytes[0] / total, 1.0 / 7, 0.02 / 7);
  EXPECT_NEAR(bytes[1] / total, 2.0 / 7, 0.02 * 2 / 7);
  EXPECT_NEAR(bytes[2] / total, 4.0 / 7, 0.02 * 4 / 7);
  s.Clear();
}

TEST_F(SchedulerTest, StrictPriorityControlFirstAndPausedQueuesHold) {
  SchedulerConfig c;
  c.strict_mask = 0xC0;  // 6, 7 strict; 0..5 DWRR
  EgressScheduler s(c);
  s.Enqueue(3, Frame(100));
  s.Enqueue(6, Frame(100));
  s.EnqueueControl(Frame(60));
  uint8_t q;
  rte_mbuf* m = s.Dequeue(0, &q);
  EXPECT_EQ(q, 8);  // PFC frame first
  rte_pktmbuf_free(m);
  m = s.Dequeue(0, &q);
  EXPECT_EQ(q, 6);
  rte_pktmbuf_free(m);
  EXPECT_EQ(s.Dequeue(1 << 3, &q), nullptr) << "queue 3 is paused";
  EXPECT_TRUE(s.HasPausedBacklog(1 << 3));
  m = s.Dequeue(0, &q);
  EXPECT_EQ(q, 3);
  rte_pktmbuf_free(m);
  EXPECT_TRUE(s.empty());
}

TEST_F(SchedulerTest, WatchdogPopsAndClearsLeaveNothingEligible) {
  // The scheduler decides from its non-empty mask: queues emptied from outside Dequeue (the
  // watchdog's PopQueue and ClearQueue) must leave it, and a paused strict queue must not hide
  // the DWRR queues.
  SchedulerConfig c;
  c.strict_mask = 0x80;
  EgressScheduler s(c);
  s.Enqueue(7, Frame(100));
  s.Enqueue(3, Frame(100));
  s.Enqueue(3, Frame(200));
  s.Enqueue(2, Frame(300));
  uint8_t q = 0;
  rte_mbuf* m = s.Dequeue(1 << 7, &q);
  ASSERT_NE(m, nullptr);
  EXPECT_NE(q, 7) << "queue 7 is paused: a DWRR queue goes";
  rte_pktmbuf_free(m);
  while (rte_mbuf* f = s.PopQueue(3)) rte_pktmbuf_free(f);
  EXPECT_EQ(s.ClearQueue(2) + s.ClearQueue(3), q == 2 ? 0u : 1u);
  EXPECT_FALSE(s.HasPausedBacklog(0x7F));
  EXPECT_TRUE(s.HasPausedBacklog(0x80));
  EXPECT_EQ(s.Dequeue(0x80, &q), nullptr) << "only the paused strict queue holds a frame";
  EXPECT_FALSE(s.empty());
  m = s.Dequeue(0, &q);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(q, 7);
  rte_pktmbuf_free(m);
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(s.Dequeue(0, &q), nullptr);
}

// The DWRR of Shreedhar & Varghese walked one queue at a time, as the scheduler did before it
// learned to skip to the next eligible queue: the order the skipping scheduler must reproduce.
class StepByStepDwrr {
 public:
  explicit StepByStepDwrr(const SchedulerConfig& c) : c_(c) {}
  void Enqueue(uint8_t q, int64_t len) { q_[q].push_back(len); }
  // The queue the next frame leaves from (8: none eligible).
  uint8_t Dequeue(uint8_t paused) {
    uint8_t eligible = 0;
    for (uint8_t q = 0; q < 8; ++q) {
      if (!q_[q].empty() && !((paused >> q) & 1)) eligible |= static_cast<uint8_t>(1u << q);
    }
    if (const uint8_t strict = eligible & c_.strict_mask; strict != 0) {
      const auto q = static_cast<uint8_t>(31 - __builtin_clz(strict));
      q_[q].pop_front();
      return q;
    }
    const uint8_t dwrr = eligible & static_cast<uint8_t>(~c_.strict_mask);
    if (dwrr == 0) return 8;
    for (;;) {
      const uint8_t q = rr_;
      if ((dwrr >> q) & 1) {
        if (fresh_) deficit_[q] += int64_t{c_.weights[q]} * 1536;
        fresh_ = false;
        if (q_[q].front() <= deficit_[q]) {
          deficit_[q] -= q_[q].front();
          q_[q].pop_front();
          if (q_[q].empty()) {
            deficit_[q] = 0;
            rr_ = (rr_ + 1) & 7;
            fresh_ = true;
          }
          return q;
        }
      } else if (q_[q].empty()) {
        deficit_[q] = 0;
      }
      rr_ = (rr_ + 1) & 7;
      fresh_ = true;
    }
  }
  void Clear(uint8_t q) { q_[q].clear(); }
  bool PopFront(uint8_t q) {
    if (q_[q].empty()) return false;
    q_[q].pop_front();
    return true;
  }

 private:
  SchedulerConfig c_;
  std::array<std::deque<int64_t>, 8> q_;
  std::array<int64_t, 8> deficit_{};
  uint8_t rr_ = 0;
  bool fresh_ = true;
};

TEST_F(SchedulerTest, DwrrSkippingToTheNextEligibleQueueKeepsTheStepByStepOrder) {
  // Random arrivals of random sizes to random queues, random pause masks, and the watchdog's
  // ClearQueue and PopQueue now and then: every dequeue must come from the queue the step-by-step
  // walk picks.
  Rng rng(7);
  for (const uint8_t strict : {uint8_t{0}, uint8_t{0xC0}}) {
    SchedulerConfig c;
    c.strict_mask = strict;
    c.weights = {1, 3, 1, 2, 1, 1, 4, 1};
    EgressScheduler s(c);
    StepByStepDwrr ref(c);
    int dequeued = 0;
    for (int step = 0; step < 60000; ++step) {
      const uint64_t r = rng.Next();
      if (r % 3 == 0) {
        const auto q = static_cast<uint8_t>((r >> 8) % 8);
        const auto len = static_cast<uint16_t>(64 + (r >> 16) % 4000);
        s.Enqueue(q, Frame(len));
        ref.Enqueue(q, len);
      } else if (r % 997 == 1) {
        const auto q = static_cast<uint8_t>((r >> 8) % 8);
        s.ClearQueue(q);
        ref.Clear(q);
      } else if (r % 997 < 12) {
        const auto q = static_cast<uint8_t>((r >> 8) % 8);
        rte_mbuf* m = s.PopQueue(q);
        ASSERT_EQ(m != nullptr, ref.PopFront(q)) << "step " << step;
        rte_pktmbuf_free(m);
      } else {
        const auto paused = static_cast<uint8_t>((r >> 8) % 4 == 0 ? (r >> 16) & 0xFF : 0);
        uint8_t q = 8;
        rte_mbuf* m = s.Dequeue(paused, &q);
        ASSERT_EQ(m == nullptr ? 8 : q, ref.Dequeue(paused)) << "step " << step;
        if (m != nullptr) {
          ++dequeued;
          rte_pktmbuf_free(m);
        }
      }
    }
    EXPECT_GT(dequeued, 10000);
    s.Clear();
  }
}

}  // namespace
}  // namespace rocefab

// The sim runner's event order: timers near and far (the far ones wait outside the heap) fire at
// their exact time in (time, scheduling order); frames on a link arrive in order at
// t + serialization + propagation; frames still on the wire are freed with the runner.
#include <gtest/gtest.h>

#include <algorithm>
#include <tuple>
#include <vector>

#include "common/headers.h"
#include "common/runtime/sim_runner.h"
#include "tests/support/test_pool.h"

namespace rocefab {
namespace {

// Schedules a list of (time, cookie) timers at Start and records what fires; a timer whose
// cookie is odd schedules another one `far` later (timers scheduled while running).
class TimerNode final : public Node {
 public:
  TimerNode(std::vector<std::pair<Time, uint64_t>> plan, Time far)
      : Node("timers"), plan_(std::move(plan)), far_(far) {}
  uint16_t num_ports() const override { return 1; }
  void Start(Time) override {
    for (auto [t, c] : plan_) env_->ScheduleTimer(t, c);
  }
  void OnTimer(Time now, uint64_t cookie) override {
    fired.emplace_back(now, cookie);
    if (cookie % 2 == 1 && cookie < 1000) env_->ScheduleTimer(now + far_, cookie + 1000);
  }
  void Receive(Time, uint16_t, rte_mbuf* m) override { rte_pktmbuf_free(m); }
  rte_mbuf* Dequeue(Time, uint16_t) override { return nullptr; }
  nlohmann::json Stats() const override { return {}; }
  std::vector<std::pair<Time, uint64_t>> fired;

 private:
  std::vector<std::pair<Time, uint64_t>> plan_;
  Time far_;
};

TEST(SimRunnerTest, NearAndFarTimersFireAtTheirTimeInSchedulingOrder) {
  // Times straddle the far-queue buckets (2^24 ps = 16.8 us): same time, same bucket, next bucket,
  // many buckets ahead, and far beyond the run.
  std::vector<std::pair<Time, uint64_t>> plan;
  uint64_t cookie = 0;
  for (Time t : {Time{5}, Time{5}, 16 * kUs, 17 * kUs, 3 * kMs, 3 * kMs, 50 * kUs, 1 * kUs,
                 40 * kMs, 3 * kMs + 1}) {
    plan.emplace_back(t, cookie += 2);
  }
  for (Time t : {Time{0}, 20 * kUs, 2 * kMs})
    plan.emplace_back(t, ++cookie * 2 + 1);  // odd: re-arm far
  TimerNode n(plan, 5 * kMs);
  SimRunner r(nullptr);
  r.AddNode(&n);
  r.Run(10 * kMs);
  // Expected: every planned timer before 10 ms, plus the re-armed ones, sorted by (time, order
  // of scheduling); the re-armed ones were scheduled after all the planned ones.
  std::vector<std::tuple<Time, int, uint64_t>> want;
  for (size_t i = 0; i < plan.size(); ++i) {
    if (plan[i].first <= 10 * kMs)
      want.emplace_back(plan[i].first, static_cast<int>(i), plan[i].second);
  }
  std::vector<std::tuple<Time, int, uint64_t>> rearm;
  for (auto [t, c] : plan) {
    if (c % 2 == 1 && t + 5 * kMs <= 10 * kMs) rearm.emplace_back(t + 5 * kMs, 0, c + 1000);
  }
  std::sort(want.begin(), want.end());
  for (size_t i = 0; i < rearm.size(); ++i) std::get<1>(rearm[i]) = 100 + static_cast<int>(i);
  want.insert(want.end(), rearm.begin(), rearm.end());
  std::stable_sort(want.begin(), want.end(), [](const auto& a, const auto& b) {
    return std::get<0>(a) != std::get<0>(b) ? std::get<0>(a) < std::get<0>(b)
                                            : std::get<1>(a) < std::get<1>(b);
  });
  ASSERT_EQ(n.fired.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(n.fired[i].first, std::get<0>(want[i])) << i;
    EXPECT_EQ(n.fired[i].second, std::get<2>(want[i])) << i;
  }
  EXPECT_FALSE(r.idle()) << "the 40 ms timer is still pending";
  EXPECT_EQ(r.now(), 10 * kMs);
  r.Run(kTimeNever);
  EXPECT_EQ(n.fired.back(), (std::pair<Time, uint64_t>{40 * kMs, plan[8].second}));
  EXPECT_TRUE(r.idle());
}

// Sends `count` frames of `len` bytes back to back at Start; records arrivals.
class Blaster final : public Node {
 public:
  Blaster(rte_mempool* pool, int count, uint32_t len)
      : Node("blaster"), pool_(pool), left_(count), len_(len) {}
  uint16_t num_ports() const override { return 1; }
  void Start(Time) override { env_->WakeTx(0); }
  void Receive(Time now, uint16_t, rte_mbuf* m) override {
    arrivals.emplace_back(now, *rte_pktmbuf_mtod(m, uint8_t*));
    rte_pktmbuf_free(m);
  }
  rte_mbuf* Dequeue(Time, uint16_t) override {
    if (left_ == 0) return nullptr;
    rte_mbuf* m = rte_pktmbuf_alloc(pool_);
    auto* d = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, static_cast<uint16_t>(len_)));
    d[0] = static_cast<uint8_t>(sent_++);
    --left_;
    return m;
  }
  nlohmann::json Stats() const override { return {}; }
  std::vector<std::pair<Time, uint8_t>> arrivals;

 private:
  rte_mempool* pool_;
  int left_;
  uint32_t len_;
  int sent_ = 0;
};

class SimRunnerFrameTest : public testing::PoolTest {};

TEST_F(SimRunnerFrameTest, FramesArriveInOrderAfterSerializationAndPropagation) {
  Blaster a(pool_, 50, 1000), b(pool_, 0, 0);
  SimRunner r(pool_);
  const uint32_t ia = r.AddNode(&a), ib = r.AddNode(&b);
  ASSERT_TRUE(r.Connect(ia, 0, ib, 0, 10 * kGbps, 2 * kUs).ok());
  r.Run(kTimeNever);
  ASSERT_EQ(b.arrivals.size(), 50u);
  const Time ser = TxTime(WireBytes(1000), 10 * kGbps);
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(b.arrivals[i].first, (i + 1) * ser + 2 * kUs) << i;
    EXPECT_EQ(b.arrivals[i].second, i);
  }
}

// Queues one frame at each of `at` (timers) and says TxDrained when its queue is empty, as a
// switch port does; optionally never says so (the default of Node).
class Trickle final : public Node {
 public:
  Trickle(rte_mempool* pool, std::vector<Time> at, bool report_drained)
      : Node("trickle"), pool_(pool), at_(std::move(at)), report_drained_(report_drained) {}
  uint16_t num_ports() const override { return 1; }
  void Start(Time) override {
    for (size_t i = 0; i < at_.size(); ++i) env_->ScheduleTimer(at_[i], i);
  }
  void OnTimer(Time, uint64_t cookie) override {
    rte_mbuf* m = rte_pktmbuf_alloc(pool_);
    auto* d = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, 1000));
    d[0] = static_cast<uint8_t>(cookie);
    queue_.push_back(m);
    env_->WakeTx(0);
  }
  void Receive(Time, uint16_t, rte_mbuf* m) override { rte_pktmbuf_free(m); }
  rte_mbuf* Dequeue(Time now, uint16_t) override {
    ++dequeue_calls;
    if (queue_.empty()) return nullptr;
    rte_mbuf* m = queue_.front();
    queue_.erase(queue_.begin());
    sent.emplace_back(now, *rte_pktmbuf_mtod(m, uint8_t*));
    return m;
  }
  bool TxDrained(uint16_t) const override { return report_drained_ && queue_.empty(); }
  nlohmann::json Stats() const override { return {}; }
  std::vector<std::pair<Time, uint8_t>> sent;
  int dequeue_calls = 0;

 private:
  rte_mempool* pool_;
  std::vector<Time> at_;
  bool report_drained_;
  std::vector<rte_mbuf*> queue_;
};

TEST_F(SimRunnerFrameTest, DrainedPortsSkipTheTransmitterFreeEventButNeverOverlapFrames) {
  const Time ser = TxTime(WireBytes(1000), 10 * kGbps);
  // Frame 1 at 0; frame 2 queued while frame 1 is still leaving (must wait for the wire);
  // frame 3 queued long after the port went idle (starts at once).
  const std::vector<Time> at = {0, ser / 2, 10 * ser};
  std::vector<std::vector<std::pair<Time, uint8_t>>> sent;
  std::vector<uint64_t> events;
  std::vector<int> calls;
  for (bool drained : {false, true}) {
    Trickle a(pool_, at, drained);
    Blaster b(pool_, 0, 0);
    SimRunner r(pool_);
    const uint32_t ia = r.AddNode(&a), ib = r.AddNode(&b);
    ASSERT_TRUE(r.Connect(ia, 0, ib, 0, 10 * kGbps, 2 * kUs).ok());
    r.Run(kTimeNever);
    ASSERT_EQ(b.arrivals.size(), 3u);
    EXPECT_EQ(b.arrivals[0].first, ser + 2 * kUs);
    EXPECT_EQ(b.arrivals[1].first, 2 * ser + 2 * kUs) << "frame 2 waits for frame 1's last bit";
    EXPECT_EQ(b.arrivals[2].first, 11 * ser + 2 * kUs);
    sent.push_back(a.sent);
    events.push_back(r.events_executed());
    calls.push_back(a.dequeue_calls);
  }
  EXPECT_EQ(sent[0], sent[1]);
  // Without TxDrained: a dequeue for each frame, one that finds the queue empty after frame 2
  // and one after frame 3 (a frame 1 follow-up found frame 2). With it: just the three.
  EXPECT_EQ(calls[0], 5);
  EXPECT_EQ(calls[1], 3);
  EXPECT_EQ(events[0] - events[1], 2u) << "two transmitter-free events saved";
}

TEST_F(SimRunnerFrameTest, FramesStillOnTheWireAreFreedWithTheRunner) {
  Blaster a(pool_, 30, 1000), b(pool_, 0, 0);
  {
    SimRunner r(pool_);
    const uint32_t ia = r.AddNode(&a), ib = r.AddNode(&b);
    ASSERT_TRUE(r.Connect(ia, 0, ib, 0, 10 * kGbps, 100 * kUs).ok());
    r.Run(20 * kUs);  // about 24 frames are on the 100 us wire, none has arrived
    EXPECT_TRUE(b.arrivals.empty());
    EXPECT_GT(rte_mempool_in_use_count(pool_), 0u);
  }
  EXPECT_EQ(rte_mempool_in_use_count(pool_), 0u) << "in-flight frames leaked";
}

}  // namespace
}  // namespace rocefab

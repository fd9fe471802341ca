// The sim runner's event order: timers near and far (the far ones wait outside the heap) fire at
// their exact time in (time, scheduling order); frames on a link arrive in order at
// t + serialization + propagation; frames still on the wire are freed with the runner.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "common/wire/headers.h"
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

// Exchanges frames with its neighbours at random and logs everything it sees, in order: timers
// on a 100 ns grid (frames are sized so that wire times are on the grid too, so a node often
// has a frame arrival, a timer and a transmitter-free event at the same picosecond), and
// forwards half of what it receives. Used to check that partitions change nothing.
class Gossip final : public Node {
 public:
  struct Entry {
    Time t;
    char what;  // 'T' timer, 'R' receive, 'S' send
    uint16_t port;
    uint64_t id;
    bool operator==(const Entry&) const = default;
  };
  Gossip(rte_mempool* pool, uint32_t me, uint16_t ports, uint32_t len, int budget)
      : Node("gossip" + std::to_string(me)),
        pool_(pool),
        me_(me),
        len_(len),
        budget_(budget),
        rng_(me + 1),
        queues_(ports) {}
  uint16_t num_ports() const override { return static_cast<uint16_t>(queues_.size()); }
  void Start(Time) override {
    for (int k = 0; k < 3; ++k) env_->ScheduleTimer(Grid(20), k);
  }
  void OnTimer(Time now, uint64_t cookie) override {
    log.push_back({now, 'T', 0, cookie});
    if (sent_ >= budget_) return;
    Send(now, (uint64_t{me_} << 32) | static_cast<uint64_t>(sent_++));
    env_->ScheduleTimer(now + Grid(8), cookie);
  }
  void Receive(Time now, uint16_t port, rte_mbuf* m) override {
    const uint64_t id = *rte_pktmbuf_mtod(m, uint64_t*);
    rte_pktmbuf_free(m);
    log.push_back({now, 'R', port, id});
    ++received[port];
    if (rng_.Next() % 2 == 0) Send(now, id);
  }
  rte_mbuf* Dequeue(Time now, uint16_t port) override {
    auto& q = queues_[port];
    if (q.empty()) return nullptr;
    rte_mbuf* m = q.front();
    q.erase(q.begin());
    log.push_back({now, 'S', port, *rte_pktmbuf_mtod(m, uint64_t*)});
    return m;
  }
  bool TxDrained(uint16_t port) const override { return queues_[port].empty(); }
  ~Gossip() override {
    for (auto& q : queues_) {
      for (rte_mbuf* m : q) rte_pktmbuf_free(m);
    }
  }
  nlohmann::json Stats() const override { return {}; }
  /// An outside actor (an observer node) makes the node send a frame now.
  void Poke(Time now) { Send(now, (uint64_t{1} << 63) | (uint64_t{me_} << 32) | pokes_++); }
  /// An outside actor makes the node schedule a timer at `now` (its own event at that time).
  void Nudge(Time now) { env_->ScheduleTimer(now, 1000 + pokes_++); }
  std::vector<Entry> log;
  std::map<uint16_t, int> received;

 private:
  Time Grid(int max_steps) { return static_cast<Time>(1 + rng_.Next() % max_steps) * 100 * kNs; }
  void Send(Time, uint64_t id) {
    rte_mbuf* m = rte_pktmbuf_alloc(pool_);
    auto* d = reinterpret_cast<uint64_t*>(rte_pktmbuf_append(m, static_cast<uint16_t>(len_)));
    *d = id;
    const auto port = static_cast<uint16_t>(rng_.Next() % queues_.size());
    queues_[port].push_back(m);
    env_->WakeTx(port);
  }
  rte_mempool* pool_;
  uint32_t me_;
  uint32_t len_;
  int budget_;
  int sent_ = 0;
  uint64_t pokes_ = 0;
  Rng rng_;
  std::vector<std::vector<rte_mbuf*>> queues_;
};

// A port-less node that runs `action` at every multiple of `period`.
class Every final : public Node {
 public:
  Every(std::string name, Time period, std::function<void(Time)> action)
      : Node(std::move(name)), period_(period), action_(std::move(action)) {}
  uint16_t num_ports() const override { return 0; }
  void Start(Time now) override { env_->ScheduleTimer(now + period_, 0); }
  void OnTimer(Time now, uint64_t) override {
    action_(now);
    env_->ScheduleTimer(now + period_, 0);
  }
  void Receive(Time, uint16_t, rte_mbuf* m) override { rte_pktmbuf_free(m); }
  rte_mbuf* Dequeue(Time, uint16_t) override { return nullptr; }
  nlohmann::json Stats() const override { return {}; }

 private:
  Time period_;
  std::function<void(Time)> action_;
};

// Six Gossip nodes: a ring 0-1-2-3-4-5-0 (port 0 clockwise, port 1 counter-clockwise) plus
// chords 0-1 (zero delay) and 3-4 (zero delay) on port 2; `part` assigns the nodes to
// partitions (none: one partition). Returns the logs, or nothing after a failed assertion.
struct GossipRun {
  std::vector<std::vector<Gossip::Entry>> logs;
  std::vector<size_t> poker_seen;  // with an observer
  uint64_t events = 0, windows = 0;
  Time lookahead = 0;
  int cross_receives = 0;  // frames received over a link between partitions
};

GossipRun RunGossip(rte_mempool* pool, const std::vector<uint32_t>& part, Time until,
                    bool poker = false) {
  GossipRun out;
  // A frame whose wire time (10 Gb/s) is a whole number of 100 ns steps: 125 bytes per step.
  uint32_t len = 0;
  for (uint32_t l = 200; l < 1500 && len == 0; ++l) {
    if (WireBytes(l) % 125 == 0) len = l;
  }
  EXPECT_NE(len, 0u);
  std::vector<std::unique_ptr<Gossip>> nodes;
  SimRunner r(pool);
  for (uint32_t i = 0; i < 6; ++i) {
    nodes.push_back(std::make_unique<Gossip>(pool, i, 3, len, 40));
    r.AddNode(nodes.back().get());
  }
  const Time delays[6] = {kUs, 700 * kNs, kUs, 1500 * kNs, 900 * kNs, 2 * kUs};
  for (uint32_t i = 0; i < 6; ++i) {
    EXPECT_TRUE(r.Connect(i, 0, (i + 1) % 6, 1, 10 * kGbps, delays[i]).ok());
  }
  EXPECT_TRUE(r.Connect(0, 2, 1, 2, 10 * kGbps, 0).ok());
  EXPECT_TRUE(r.Connect(3, 2, 4, 2, 10 * kGbps, 0).ok());
  std::vector<Gossip*> raw;
  for (auto& n : nodes) raw.push_back(n.get());
  // The observer runs between windows: every 700 ns it records how many events each node has
  // logged (reading every partition's nodes) and makes one of them send a frame.
  std::vector<size_t> seen;
  size_t k = 0;
  Every observer("poker", 700 * kNs, [&](Time now) {
    for (const Gossip* g : raw) seen.push_back(g->log.size());
    raw[k++ % raw.size()]->Poke(now);
  });
  std::vector<uint32_t> part_with = part;
  if (poker) {
    r.AddNode(&observer);
    if (!part.empty()) part_with.push_back(SimRunner::kObserver);
  }
  if (!part.empty()) {
    const Status st = r.SetPartitions(part_with);
    EXPECT_TRUE(st.ok()) << st.message();
    if (!st.ok()) return out;
  }
  r.Run(until);
  for (uint32_t i = 0; i < 6; ++i) {
    out.logs.push_back(nodes[i]->log);
    if (part.empty()) continue;
    for (auto [port, n] : nodes[i]->received) {
      uint32_t peer = 0;
      uint16_t peer_port = 0;
      EXPECT_TRUE(r.Peer(i, port, &peer, &peer_port));
      if (part[i] != part[peer]) out.cross_receives += n;
    }
  }
  out.poker_seen = seen;
  out.events = r.events_executed();
  out.windows = r.windows();
  out.lookahead = r.lookahead();
  return out;
}

TEST_F(SimRunnerFrameTest, PartitionsOnTheirOwnThreadsChangeNothing) {
  const Time until = 40 * kUs;  // frames are still in flight then: the leak check covers them
  const GossipRun one = RunGossip(pool_, {}, until);
  ASSERT_EQ(one.logs.size(), 6u);
  // The tie rule is exercised: some node has two kinds of events at the same picosecond.
  int ties = 0;
  for (const auto& log : one.logs) {
    for (size_t k = 1; k < log.size(); ++k) {
      if (log[k].t == log[k - 1].t && log[k].what != log[k - 1].what) ++ties;
    }
  }
  EXPECT_GT(ties, 10);
  struct Split {
    std::vector<uint32_t> part;
    Time lookahead;  // the smallest delay of a link between partitions
  };
  for (const Split& s : {Split{{0, 0, 0, 1, 1, 1}, kUs}, Split{{0, 0, 1, 1, 1, 2}, 700 * kNs},
                         Split{{1, 1, 0, 2, 2, 0}, 700 * kNs}}) {
    const GossipRun many = RunGossip(pool_, s.part, until);
    ASSERT_EQ(many.logs.size(), 6u);
    EXPECT_EQ(many.lookahead, s.lookahead);
    EXPECT_GT(many.windows, 10u);
    EXPECT_GT(many.cross_receives, 20);
    EXPECT_EQ(many.events, one.events);
    for (size_t i = 0; i < 6; ++i) {
      ASSERT_EQ(many.logs[i].size(), one.logs[i].size()) << "node " << i;
      EXPECT_TRUE(many.logs[i] == one.logs[i]) << "node " << i << " saw another sequence";
    }
  }
}

TEST_F(SimRunnerFrameTest, ObserversRunBetweenWindowsAsOnOnePartition) {
  const Time until = 40 * kUs;
  const GossipRun one = RunGossip(pool_, {}, until, /*poker=*/true);
  ASSERT_EQ(one.poker_seen.size(), 6u * (until / (700 * kNs)));
  for (const std::vector<uint32_t>& part :
       {std::vector<uint32_t>{0, 0, 0, 1, 1, 1}, std::vector<uint32_t>{1, 1, 0, 2, 2, 0}}) {
    const GossipRun many = RunGossip(pool_, part, until, /*poker=*/true);
    EXPECT_EQ(many.poker_seen, one.poker_seen) << "the observer saw other states";
    EXPECT_EQ(many.events, one.events);
    for (size_t i = 0; i < 6; ++i) {
      EXPECT_TRUE(many.logs[i] == one.logs[i]) << "node " << i << " saw another sequence";
    }
  }
}

TEST_F(SimRunnerFrameTest, AnObserversEventForANodeAtItsOwnTimeRunsBeforeTheNextObserver) {
  // Observer A makes gossip node 1 schedule a timer at A's own time; observer B, due at the same
  // time, reads node 1's log. On one partition node 1's timer (a node key) runs between A and B.
  auto run = [&](bool partitioned) {
    uint32_t len = 0;
    for (uint32_t l = 200; l < 1500 && len == 0; ++l) {
      if (WireBytes(l) % 125 == 0) len = l;
    }
    Gossip g0(pool_, 0, 1, len, 5), g1(pool_, 1, 1, len, 5);
    std::vector<size_t> seen;
    Every a("nudger", 500 * kNs, [&](Time now) { g1.Nudge(now); });
    Every b("reader", 500 * kNs, [&](Time) { seen.push_back(g1.log.size()); });
    SimRunner r(pool_);
    r.AddNode(&g0);
    r.AddNode(&g1);
    r.AddNode(&a);
    r.AddNode(&b);
    EXPECT_TRUE(r.Connect(0, 0, 1, 0, 10 * kGbps, kUs).ok());
    if (partitioned) {
      EXPECT_TRUE(r.SetPartitions({0, 1, SimRunner::kObserver, SimRunner::kObserver}).ok());
    }
    r.Run(20 * kUs);
    return std::make_pair(seen, g1.log);
  };
  const auto one = run(false);
  const auto two = run(true);
  ASSERT_EQ(one.first.size(), 40u);
  EXPECT_EQ(one.first, two.first) << "observer B saw node 1 before its nudged timer ran";
  EXPECT_TRUE(one.second == two.second);
}

TEST_F(SimRunnerFrameTest, PartitionsThatCannotBeRunAreRefusedWithTheReason) {
  Blaster a(pool_, 0, 0), b(pool_, 0, 0), c(pool_, 0, 0);
  SimRunner r(pool_);
  r.AddNode(&a);
  r.AddNode(&b);
  r.AddNode(&c);
  ASSERT_TRUE(r.Connect(0, 0, 1, 0, 10 * kGbps, 0).ok());
  auto refused = [&](const std::vector<uint32_t>& part, const std::string& why) {
    const Status st = r.SetPartitions(part);
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message().find(why), std::string::npos) << st.message();
  };
  refused({0, 1}, "2 entries for 3 nodes");
  refused({0, 2, 2}, "partition 1 has no node");
  refused({0, 1, 1}, "zero propagation delay");
  refused({0, 0, 65}, "at most 64");
  refused({SimRunner::kObserver, 1, 1}, "observer blaster has ports");
  ASSERT_TRUE(r.SetPartitions({0, 0, 1}).ok()) << "a zero-delay link inside a partition is fine";
  EXPECT_EQ(r.num_partitions(), 2u);
  refused({0, 0, 1}, "already set");
  EXPECT_EQ(r.lookahead(), kTimeNever) << "no link between the partitions";
  EXPECT_FALSE(r.Connect(1, 0, 2, 0, 10 * kGbps, kUs).ok()) << "links are fixed once partitioned";
  r.Run(kUs);
  refused({0, 0, 0}, "before the first Run");
  {
    Every obs("obs", kUs, [](Time) {});
    Blaster d(pool_, 0, 0);
    SimRunner late(pool_);
    late.AddNode(&obs);
    late.AddNode(&d);
    const Status st = late.SetPartitions({SimRunner::kObserver, 0});
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message().find("observers must be the last nodes added"), std::string::npos)
        << st.message();
  }
}

}  // namespace
}  // namespace rocefab

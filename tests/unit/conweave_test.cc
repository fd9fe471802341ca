// ConWeave decisions against hand-built timelines: the worked timeline of
// shared/reference/rdma-simulators.md section 1.3b (cases 1-3), the destination ToR's reorder
// stage, the fallback when reorder queues run out, and both ends driven together over two paths
// of different delay (the host must see every packet once and in order).

#include "switch/conweave.h"

#include <gtest/gtest.h>

#include <map>
#include <queue>
#include <vector>

#include "fabric/results.h"

namespace rocefab {
namespace {

constexpr uint32_t kPathA = 0x0101;
constexpr uint32_t kPathB = 0x0202;
constexpr uint64_t kFlow = 42;
constexpr Time kBaseRtt = 4 * kUs;  // theta_reply = 4 us + 4 us extra = 8 us, as in the reference

ConweaveParams Params() { return ConweaveParams{}; }

// The path the Tx would choose if the current path became unusable: replays the two samples it
// will draw from a copy of the RNG (the same rule the class implements, checked independently).
uint32_t ExpectedSample(Rng rng, std::span<const uint32_t> paths, const ConweaveTx& tx, Time now) {
  const uint32_t p1 = paths[rng.Below(paths.size())];
  const uint32_t p2 = paths[rng.Below(paths.size())];
  if (!tx.PathBusy(p1, now)) return p1;
  if (!tx.PathBusy(p2, now)) return p2;
  return 0;
}

TEST(ConweaveTxTest, FirstPacketOpensEpochOneWithRttRequest) {
  ConweaveTx tx(Params());
  Rng rng(7);
  const std::vector<uint32_t> paths{kPathA, kPathB};
  ConweaveTag t = tx.OnData(kFlow, paths, kBaseRtt, 10 * kUs, rng);
  EXPECT_EQ(t.epoch, 1u);
  EXPECT_EQ(t.phase, 0);
  EXPECT_EQ(t.flag, ConweaveFlag::kRttRequest);
  EXPECT_EQ(t.ts_tx, 10 * kUs);
  EXPECT_EQ(t.ts_tail, 0);
  EXPECT_TRUE(t.path == kPathA || t.path == kPathB);
  // Packets before the deadline are plain DATA of the same epoch and path.
  ConweaveTag t2 = tx.OnData(kFlow, paths, kBaseRtt, 11 * kUs, rng);
  EXPECT_EQ(t2.flag, ConweaveFlag::kData);
  EXPECT_EQ(t2.epoch, 1u);
  EXPECT_EQ(t2.path, t.path);
  EXPECT_EQ(tx.stats().rtt_requests, 1u);
}

TEST(ConweaveTxTest, Case1TimelyReplyStabilizesAndNextPacketOpensEpochTwoOnSamePath) {
  ConweaveTx tx(Params());
  Rng rng(3);
  const std::vector<uint32_t> paths{kPathA, kPathB};
  const Time t0 = 100 * kUs;
  ConweaveTag first = tx.OnData(kFlow, paths, kBaseRtt, t0, rng);
  tx.OnData(kFlow, paths, kBaseRtt, t0 + 1 * kUs, rng);
  EXPECT_TRUE(tx.OnRttReply(kFlow, 1, t0 + 5 * kUs));  // before t0 + 8 us
  ConweaveTag next = tx.OnData(kFlow, paths, kBaseRtt, t0 + 9 * kUs, rng);
  EXPECT_EQ(next.flag, ConweaveFlag::kRttRequest);
  EXPECT_EQ(next.epoch, 2u);
  EXPECT_EQ(next.path, first.path);
  EXPECT_EQ(tx.stats().timely_replies, 1u);
  EXPECT_EQ(tx.stats().tails, 0u);
}

TEST(ConweaveTxTest, Case2LateReplyGivesTailOnOldPathThenPhaseOneOnNewPath) {
  ConweaveTx tx(Params());
  Rng rng(11);
  const std::vector<uint32_t> paths{kPathA, kPathB};
  const Time t0 = 100 * kUs;
  ConweaveTag first = tx.OnData(kFlow, paths, kBaseRtt, t0, rng);
  const uint32_t old_path = first.path;
  const uint32_t other = old_path == kPathA ? kPathB : kPathA;
  tx.OnNotify(old_path, t0 + 1 * kUs);                   // the old path saw ECN: busy for 16 us
  tx.OnData(kFlow, paths, kBaseRtt, t0 + 8 * kUs, rng);  // at the deadline: still in time
  const Time t_tail = t0 + 8 * kUs + 1;
  const uint32_t want = ExpectedSample(rng, paths, tx, t_tail);
  ConweaveTag tail = tx.OnData(kFlow, paths, kBaseRtt, t_tail, rng);
  EXPECT_EQ(tail.flag, ConweaveFlag::kTail);
  EXPECT_EQ(tail.phase, 0);
  EXPECT_EQ(tail.epoch, 1u);
  EXPECT_EQ(tail.path, old_path);
  EXPECT_EQ(tail.ts_tail, t_tail);
  ConweaveTag after = tx.OnData(kFlow, paths, kBaseRtt, t_tail + 1 * kUs, rng);
  EXPECT_EQ(after.flag, ConweaveFlag::kData);
  EXPECT_EQ(after.phase, 1);
  EXPECT_EQ(after.ts_tail, t_tail);
  // The busy old path is never chosen; with no free sample the flow stays where it is.
  EXPECT_EQ(after.path, want == 0 ? old_path : other);
  EXPECT_EQ(tx.stats().late_replies, 1u);
  EXPECT_EQ(tx.stats().tails, 1u);
  // A reply for the epoch's RTT_REQUEST now is late and ignored.
  EXPECT_FALSE(tx.OnRttReply(kFlow, 1, t_tail + 2 * kUs));
  // At most one reroute per epoch: no second TAIL however long the CLEAR takes.
  for (int i = 2; i < 200; ++i) {
    ConweaveTag t = tx.OnData(kFlow, paths, kBaseRtt, t_tail + i * kUs, rng);
    EXPECT_EQ(t.flag, ConweaveFlag::kData);
    EXPECT_EQ(t.phase, 1);
    EXPECT_EQ(t.path, after.path);
  }
  EXPECT_EQ(tx.stats().tails, 1u);
  // CLEAR ends the epoch; the next packet opens epoch 2 on the new path.
  EXPECT_FALSE(tx.OnClear(kFlow, 2, t_tail + 200 * kUs));  // wrong epoch
  EXPECT_TRUE(tx.OnClear(kFlow, 1, t_tail + 200 * kUs));
  ConweaveTag next = tx.OnData(kFlow, paths, kBaseRtt, t_tail + 201 * kUs, rng);
  EXPECT_EQ(next.flag, ConweaveFlag::kRttRequest);
  EXPECT_EQ(next.epoch, 2u);
  EXPECT_EQ(next.phase, 0);
  EXPECT_EQ(next.path, after.path);
}

TEST(ConweaveTxTest, RerouteAvoidsBusyPathOverManySeeds) {
  // Statistical form of the sampling rule: with the old path busy, the new path differs whenever
  // either of the two samples is the other path (3 of 4 draws with two paths).
  int moved = 0;
  const int kRuns = 400;
  for (int seed = 1; seed <= kRuns; ++seed) {
    ConweaveTx tx(Params());
    Rng rng(seed);
    const std::vector<uint32_t> paths{kPathA, kPathB};
    ConweaveTag first = tx.OnData(kFlow, paths, kBaseRtt, 0, rng);
    tx.OnNotify(first.path, 1 * kUs);
    tx.OnData(kFlow, paths, kBaseRtt, 9 * kUs, rng);  // TAIL
    ConweaveTag after = tx.OnData(kFlow, paths, kBaseRtt, 10 * kUs, rng);
    if (after.path != first.path) ++moved;
  }
  EXPECT_GT(moved, kRuns * 65 / 100);
  EXPECT_LT(moved, kRuns * 85 / 100);
}

TEST(ConweaveTxTest, Case3IdleFlowStartsFreshEpochAndMayMoveWithoutTail) {
  ConweaveTx tx(Params());
  Rng rng(5);
  const std::vector<uint32_t> paths{kPathA, kPathB};
  ConweaveTag first = tx.OnData(kFlow, paths, kBaseRtt, 0, rng);
  // Mark the old path busy right before the flow resumes, so the fresh epoch must avoid it.
  const Time resume = 301 * kUs;
  tx.OnNotify(first.path, resume - 1 * kUs);
  const uint32_t want = ExpectedSample(rng, paths, tx, resume);
  ConweaveTag t = tx.OnData(kFlow, paths, kBaseRtt, resume, rng);
  EXPECT_EQ(t.flag, ConweaveFlag::kRttRequest);  // no TAIL: nothing of the flow is in flight
  EXPECT_EQ(t.epoch, 2u);
  EXPECT_EQ(t.phase, 0);
  EXPECT_EQ(t.path, want == 0 ? first.path : want);
  EXPECT_EQ(tx.stats().tails, 0u);
  // A gap of exactly theta_inactive is not idle yet.
  ConweaveTag u = tx.OnData(kFlow, paths, kBaseRtt, resume + 300 * kUs, rng);
  EXPECT_NE(u.flag, ConweaveFlag::kRttRequest);
}

TEST(ConweaveTxTest, MeasuredMinimumRttRaisesTheComputedBase) {
  // The computed base RTT is 4 us but every round trip really takes 20 us (e.g. the live
  // runner's processing): the first reply is late, later epochs use the measured 20 us.
  ConweaveTx tx(Params());
  Rng rng(2);
  const std::vector<uint32_t> paths{kPathA};
  EXPECT_EQ(tx.measured_min_rtt(), kTimeNever);
  tx.OnData(kFlow, paths, kBaseRtt, 0, rng);        // RTT_REQUEST, due at 8 us
  EXPECT_FALSE(tx.OnRttReply(kFlow, 1, 20 * kUs));  // late, but timed
  EXPECT_EQ(tx.measured_min_rtt(), 20 * kUs);
  tx.OnData(kFlow, paths, kBaseRtt, 21 * kUs, rng);  // TAIL (deadline missed)
  EXPECT_TRUE(tx.OnClear(kFlow, 1, 40 * kUs));
  ConweaveTag t = tx.OnData(kFlow, paths, kBaseRtt, 41 * kUs, rng);  // epoch 2, due 41+20+4 us
  ASSERT_EQ(t.flag, ConweaveFlag::kRttRequest);
  EXPECT_TRUE(tx.OnRttReply(kFlow, 2, 41 * kUs + 23 * kUs));
  EXPECT_EQ(tx.stats().timely_replies, 1u);
  EXPECT_EQ(tx.measured_min_rtt(), 20 * kUs);
}

TEST(ConweaveTxTest, AgingForgetsIdleFlowsAndBusyMarks) {
  ConweaveTx tx(Params());
  Rng rng(1);
  const std::vector<uint32_t> paths{kPathA};
  tx.OnData(1, paths, kBaseRtt, 0, rng);
  tx.OnData(2, paths, kBaseRtt, 1 * kMs, rng);
  tx.OnNotify(kPathA, 1 * kMs);
  tx.Age(2 * kMs + 1);
  EXPECT_EQ(tx.flows(), 1u);
  EXPECT_EQ(tx.PathOf(1), 0u);
  EXPECT_EQ(tx.PathOf(2), kPathA);
  EXPECT_FALSE(tx.PathBusy(kPathA, 2 * kMs + 1));
}

// A NOTIFY marks a path busy towards the ToR that sent it only: the reference's path id holds the
// spine's port towards the destination ToR, so the spine's links to the other ToRs stay usable
// (without this, ConWeave at AliStorage 40 % host load rerouted half as often as the reference
// and sent 19x its PFC frames; docs/experiments.md).
TEST(ConweaveTxTest, ABusyMarkHoldsForTheDestinationToRThatSentIt) {
  ConweaveTx tx(Params());
  constexpr uint32_t kTorA = 1, kTorB = 2;
  tx.OnNotify(kPathA, 1 * kUs, kTorA);
  EXPECT_TRUE(tx.PathBusy(kPathA, 2 * kUs, kTorA));
  EXPECT_FALSE(tx.PathBusy(kPathA, 2 * kUs, kTorB));
  EXPECT_FALSE(tx.PathBusy(kPathB, 2 * kUs, kTorA));
  // New flows take the first of two uniform samples that is not busy: towards ToR A path A only
  // when both samples were A (1 in 4), towards ToR B whenever the first was A (1 in 2).
  Rng rng(3);
  const std::vector<uint32_t> paths{kPathA, kPathB};
  int a_towards_a = 0, a_towards_b = 0;
  for (uint64_t f = 0; f < 200; ++f) {
    a_towards_a += tx.OnData(100 + f, paths, kBaseRtt, 2 * kUs, rng, kTorA).path == kPathA;
    a_towards_b += tx.OnData(500 + f, paths, kBaseRtt, 2 * kUs, rng, kTorB).path == kPathA;
  }
  EXPECT_LT(a_towards_a, 75) << "expected about 50 of 200";
  EXPECT_GT(a_towards_b, 75) << "expected about 100 of 200";
}

ConweaveTag Tag(uint32_t epoch, uint8_t phase, ConweaveFlag flag, Time tx, Time tail,
                uint32_t path) {
  ConweaveTag t;
  t.epoch = epoch;
  t.phase = phase;
  t.flag = flag;
  t.ts_tx = tx;
  t.ts_tail = tail;
  t.path = path;
  return t;
}

using Deliver = ConweaveRx::Action::Deliver;

TEST(ConweaveRxTest, RttRequestIsAnsweredAndForwarded) {
  ConweaveRx rx(Params(), 4);
  auto a = rx.OnData(kFlow, 1, Tag(1, 0, ConweaveFlag::kRttRequest, 0, 0, kPathA), false, 5 * kUs);
  EXPECT_EQ(a.deliver, Deliver::kForward);
  EXPECT_TRUE(a.send_rtt_reply);
  EXPECT_FALSE(a.send_clear);
  EXPECT_FALSE(a.send_notify);
  auto b = rx.OnData(kFlow, 1, Tag(1, 0, ConweaveFlag::kData, 1 * kUs, 0, kPathA), true, 6 * kUs);
  EXPECT_EQ(b.deliver, Deliver::kForward);
  EXPECT_FALSE(b.send_rtt_reply);
  EXPECT_TRUE(b.send_notify);  // ECN-CE: NOTIFY the path back to the source
  EXPECT_EQ(rx.stats().rtt_replies, 1u);
  EXPECT_EQ(rx.stats().notifies, 1u);
}

TEST(ConweaveRxTest, NewPathPacketsWaitForTailThenReleaseInOrder) {
  ConweaveRx rx(Params(), 4);
  const uint32_t port = 2;
  // Epoch 1 phase 0 on path A: sent at 0 and 1 us, arrive 20 us later (path A is queued).
  rx.OnData(kFlow, port, Tag(1, 0, ConweaveFlag::kRttRequest, 0, 0, kPathA), false, 20 * kUs);
  rx.OnData(kFlow, port, Tag(1, 0, ConweaveFlag::kData, 1 * kUs, 0, kPathA), false, 21 * kUs);
  // TAIL sent at 9 us on A; phase-1 packets sent at 10, 11 us on the fast path B arrive first.
  const Time tail_tx = 9 * kUs;
  auto h1 = rx.OnData(kFlow, port, Tag(1, 1, ConweaveFlag::kData, 10 * kUs, tail_tx, kPathB), false,
                      22 * kUs);
  EXPECT_EQ(h1.deliver, Deliver::kHold);
  EXPECT_FALSE(h1.send_notify);
  auto h2 = rx.OnData(kFlow, port, Tag(1, 1, ConweaveFlag::kData, 11 * kUs, tail_tx, kPathB), true,
                      23 * kUs);
  EXPECT_EQ(h2.deliver, Deliver::kHold);
  EXPECT_EQ(h2.queue, h1.queue);
  EXPECT_EQ(rx.queues_in_use(port), 1u);
  // Predicted TAIL arrival: rx(last phase 0) + (tail_tx - tx(last phase 0)) + 16 us.
  EXPECT_EQ(rx.next_deadline(), 21 * kUs + (tail_tx - 1 * kUs) + 16 * kUs);
  // TAIL arrives: forwarded, CLEAR sent, queue released right behind it.
  auto t = rx.OnData(kFlow, port, Tag(1, 0, ConweaveFlag::kTail, tail_tx, tail_tx, kPathA), false,
                     29 * kUs);
  EXPECT_EQ(t.deliver, Deliver::kForward);
  EXPECT_TRUE(t.send_clear);
  EXPECT_TRUE(t.release_after);
  EXPECT_EQ(t.release_queue, h1.queue);
  EXPECT_EQ(rx.queues_in_use(port), 0u);
  EXPECT_EQ(rx.next_deadline(), kTimeNever);
  // Later phase-1 packets go straight through.
  auto p = rx.OnData(kFlow, port, Tag(1, 1, ConweaveFlag::kData, 12 * kUs, tail_tx, kPathB), false,
                     30 * kUs);
  EXPECT_EQ(p.deliver, Deliver::kForward);
  EXPECT_FALSE(p.out_of_order);
  EXPECT_EQ(rx.stats().held, 2u);
  EXPECT_EQ(rx.stats().releases_by_tail, 1u);
  EXPECT_EQ(rx.stats().releases_by_timeout, 0u);
}

TEST(ConweaveRxTest, LostTailReleasesAtPredictedDeadline) {
  ConweaveRx rx(Params(), 4);
  rx.OnData(kFlow, 0, Tag(1, 0, ConweaveFlag::kRttRequest, 0, 0, kPathA), false, 20 * kUs);
  rx.OnData(kFlow, 0, Tag(1, 1, ConweaveFlag::kData, 10 * kUs, 9 * kUs, kPathB), false, 22 * kUs);
  const Time due = 20 * kUs + 9 * kUs + 16 * kUs;
  EXPECT_EQ(rx.next_deadline(), due);
  EXPECT_TRUE(rx.DueReleases(due - 1).empty());
  auto r = rx.DueReleases(due);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].port, 0u);
  EXPECT_EQ(r[0].flow, kFlow);
  EXPECT_EQ(rx.stats().releases_by_timeout, 1u);
  // After the release the flow is in phase 1: more new-path packets are in order.
  auto p = rx.OnData(kFlow, 0, Tag(1, 1, ConweaveFlag::kData, 11 * kUs, 9 * kUs, kPathB), false,
                     due + 1);
  EXPECT_EQ(p.deliver, Deliver::kForward);
  // A late TAIL still gets its CLEAR, and nothing is left to release.
  auto t =
      rx.OnData(kFlow, 0, Tag(1, 0, ConweaveFlag::kTail, 9 * kUs, 9 * kUs, kPathA), false, due + 2);
  EXPECT_TRUE(t.send_clear);
  EXPECT_FALSE(t.release_after);
}

TEST(ConweaveRxTest, PhaseOneFirstUsesDefaultWait) {
  ConweaveRx rx(Params(), 1);
  // The first packet the destination sees of epoch 3 is already phase 1 (the RTT_REQUEST and the
  // TAIL are both still on the slow path).
  auto a = rx.OnData(kFlow, 0, Tag(3, 1, ConweaveFlag::kData, 10 * kUs, 9 * kUs, kPathB), false,
                     50 * kUs);
  EXPECT_EQ(a.deliver, Deliver::kHold);
  EXPECT_EQ(rx.next_deadline(), 50 * kUs + 200 * kUs + 16 * kUs);
}

TEST(ConweaveRxTest, PreviousEpochStragglerIsForwardedAtOnce) {
  ConweaveRx rx(Params(), 1);
  rx.OnData(kFlow, 0, Tag(2, 0, ConweaveFlag::kRttRequest, 0, 0, kPathA), false, 1 * kUs);
  auto a = rx.OnData(kFlow, 0, Tag(1, 1, ConweaveFlag::kData, 0, 0, kPathB), true, 2 * kUs);
  EXPECT_EQ(a.deliver, Deliver::kForward);
  EXPECT_FALSE(a.send_notify);
  EXPECT_EQ(rx.stats().prev_epoch, 1u);
}

TEST(ConweaveRxTest, FallbackToOutOfOrderWhenReorderQueuesRunOut) {
  ConweaveParams p = Params();
  p.reorder_queues_per_port = 2;
  ConweaveRx rx(p, 2);
  // Three flows reroute at once towards hosts behind port 0; a fourth towards port 1.
  for (uint64_t f = 1; f <= 3; ++f)
    rx.OnData(f, 0, Tag(1, 0, ConweaveFlag::kRttRequest, 0, 0, kPathA), false, 10 * kUs);
  rx.OnData(4, 1, Tag(1, 0, ConweaveFlag::kRttRequest, 0, 0, kPathA), false, 10 * kUs);
  auto a1 =
      rx.OnData(1, 0, Tag(1, 1, ConweaveFlag::kData, 5 * kUs, 4 * kUs, kPathB), false, 11 * kUs);
  auto a2 =
      rx.OnData(2, 0, Tag(1, 1, ConweaveFlag::kData, 5 * kUs, 4 * kUs, kPathB), false, 11 * kUs);
  auto a3 =
      rx.OnData(3, 0, Tag(1, 1, ConweaveFlag::kData, 5 * kUs, 4 * kUs, kPathB), false, 11 * kUs);
  auto a4 =
      rx.OnData(4, 1, Tag(1, 1, ConweaveFlag::kData, 5 * kUs, 4 * kUs, kPathB), false, 11 * kUs);
  EXPECT_EQ(a1.deliver, Deliver::kHold);
  EXPECT_EQ(a2.deliver, Deliver::kHold);
  EXPECT_NE(a1.queue, a2.queue);
  EXPECT_EQ(a3.deliver, Deliver::kForward);  // no queue left on port 0
  EXPECT_TRUE(a3.out_of_order);
  EXPECT_EQ(a4.deliver, Deliver::kHold);  // port 1 has its own queues
  EXPECT_EQ(rx.stats().fallbacks, 1u);
  EXPECT_EQ(rx.queues_in_use(0), 2u);
  EXPECT_EQ(rx.queues_in_use_total(), 3u);
  EXPECT_EQ(rx.stats().max_queues_in_use, 3u);
  // Flow 3 keeps delivering its new-path packets out of order until its TAIL; each is counted.
  auto b3 =
      rx.OnData(3, 0, Tag(1, 1, ConweaveFlag::kData, 6 * kUs, 4 * kUs, kPathB), false, 12 * kUs);
  EXPECT_TRUE(b3.out_of_order);
  auto t3 =
      rx.OnData(3, 0, Tag(1, 0, ConweaveFlag::kTail, 4 * kUs, 4 * kUs, kPathA), false, 13 * kUs);
  EXPECT_TRUE(t3.send_clear);
  EXPECT_FALSE(t3.release_after);
  auto c3 =
      rx.OnData(3, 0, Tag(1, 1, ConweaveFlag::kData, 7 * kUs, 4 * kUs, kPathB), false, 14 * kUs);
  EXPECT_FALSE(c3.out_of_order);
  EXPECT_EQ(rx.stats().out_of_order, 2u);
  // When flow 1's TAIL frees a queue, a new rerouting flow on port 0 gets it.
  auto t1 =
      rx.OnData(1, 0, Tag(1, 0, ConweaveFlag::kTail, 4 * kUs, 4 * kUs, kPathA), false, 15 * kUs);
  EXPECT_TRUE(t1.release_after);
  rx.OnData(5, 0, Tag(1, 0, ConweaveFlag::kRttRequest, 0, 0, kPathA), false, 16 * kUs);
  auto a5 =
      rx.OnData(5, 0, Tag(1, 1, ConweaveFlag::kData, 5 * kUs, 4 * kUs, kPathB), false, 17 * kUs);
  EXPECT_EQ(a5.deliver, Deliver::kHold);
  EXPECT_EQ(a5.queue, a1.queue);
}

// The destination ToR's one-lookup path (OnWireData: widen the wire's 2-bit epoch and run the
// state machine) against the two calls it replaced (WidenEpoch, then OnData): the same actions,
// epochs, releases and counters over random packets of a few flows, epochs that move on, stay,
// or fall back one, and every flag and phase.
TEST(ConweaveRxTest, OneLookupWireDataMatchesWidenThenOnData) {
  ConweaveParams p = Params();
  p.reorder_queues_per_port = 2;
  ConweaveRx two_calls(p, 2), one_call(p, 2);
  Rng rng(7);
  std::map<uint64_t, uint32_t> sent_epoch;  // the epoch each flow's source is in
  uint64_t holds = 0, releases = 0;
  for (int i = 0; i < 200000; ++i) {
    const uint64_t flow = 1 + rng.Below(6);
    uint32_t& cur = sent_epoch[flow];
    const uint64_t step = rng.Below(16);
    if (step == 0) ++cur;                                         // a new epoch
    const uint32_t epoch = step == 1 && cur > 0 ? cur - 1 : cur;  // a straggler of the last one
    ConweaveTag tag =
        Tag(epoch, static_cast<uint8_t>(rng.Below(2)), static_cast<ConweaveFlag>(rng.Below(3)),
            static_cast<Time>(i) * kNs, static_cast<Time>(i / 2) * kNs, kPathA);
    const Time now = static_cast<Time>(i) * 100 * kNs + (i / 1000) * 200 * kUs;  // idle gaps
    const uint32_t port = static_cast<uint32_t>(flow & 1);
    const bool ce = rng.Below(8) == 0, can_hold = rng.Below(16) != 0;
    ConweaveTag wide = tag;
    wide.epoch = two_calls.WidenEpoch(flow, static_cast<uint8_t>(epoch & 3));
    const auto a = two_calls.OnData(flow, port, wide, ce, now, can_hold);
    ConweaveTag wire = tag;
    wire.epoch = epoch & 3;
    uint32_t widened = 0;
    const auto b = one_call.OnWireData(flow, port, wire, ce, now, can_hold, &widened);
    ASSERT_EQ(widened, wide.epoch) << "packet " << i;
    ASSERT_EQ(a.deliver, b.deliver) << "packet " << i;
    ASSERT_EQ(a.queue, b.queue) << "packet " << i;
    ASSERT_EQ(a.out_of_order, b.out_of_order) << "packet " << i;
    ASSERT_EQ(a.send_rtt_reply, b.send_rtt_reply) << "packet " << i;
    ASSERT_EQ(a.send_clear, b.send_clear) << "packet " << i;
    ASSERT_EQ(a.send_notify, b.send_notify) << "packet " << i;
    ASSERT_EQ(a.release_before, b.release_before) << "packet " << i;
    ASSERT_EQ(a.release_after, b.release_after) << "packet " << i;
    ASSERT_EQ(a.release_queue, b.release_queue) << "packet " << i;
    holds += a.deliver == Deliver::kHold;
    const auto ra = two_calls.DueReleases(now), rb = one_call.DueReleases(now);
    ASSERT_EQ(ra.size(), rb.size()) << "packet " << i;
    for (size_t k = 0; k < ra.size(); ++k) ASSERT_EQ(ra[k].flow, rb[k].flow) << "packet " << i;
    releases += ra.size();
    if (i % 50000 == 49999) {
      two_calls.Age(now);
      one_call.Age(now);
    }
  }
  EXPECT_EQ(two_calls.stats().held, one_call.stats().held);
  EXPECT_EQ(two_calls.stats().prev_epoch, one_call.stats().prev_epoch);
  EXPECT_EQ(two_calls.stats().releases_by_new_epoch, one_call.stats().releases_by_new_epoch);
  // The sequence reached the cases that matter: holds, deadline releases, stragglers.
  EXPECT_GT(holds, 1000u);
  EXPECT_GT(releases, 10u);
  EXPECT_GT(one_call.stats().prev_epoch, 1000u);
  EXPECT_GT(one_call.stats().releases_by_new_epoch, 0u);
}

// Both ends together: one flow, one packet per microsecond; path A is congested (30 us one way,
// every packet CE-marked, so the destination NOTIFYs it), path B is idle (3 us). Control packets
// return in 2 us on the highest-priority queue. The host must receive every packet exactly once
// and in order, and the flow must end up on B.
TEST(ConweaveEndToEndTest, RerouteOverFastPathDeliversInOrder) {
  ConweaveParams p = Params();
  ConweaveTx tx(p);
  ConweaveRx rx(p, 1);
  Rng rng(9);
  const std::vector<uint32_t> paths{kPathA, kPathB};
  const std::vector<uint32_t> only_a{kPathA};
  std::map<uint32_t, Time> one_way{{kPathA, 30 * kUs}, {kPathB, 3 * kUs}};
  struct Arrival {
    Time at;
    int seq;
    ConweaveTag tag;
    bool operator>(const Arrival& o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };
  enum class Kind { kReply, kClear, kNotify };
  struct Ctrl {
    Time at;
    Kind kind;
    uint32_t value;  // epoch, or path for NOTIFY
    bool operator>(const Ctrl& o) const { return at > o.at; }
  };
  std::priority_queue<Arrival, std::vector<Arrival>, std::greater<>> wire;
  std::priority_queue<Ctrl, std::vector<Ctrl>, std::greater<>> back;
  std::vector<int> held, host;
  auto release = [&] {
    host.insert(host.end(), held.begin(), held.end());
    held.clear();
  };
  const int kPackets = 300;
  int sent = 0;
  for (Time now = 0; now < 2 * kMs; now += 100 * kNs) {
    while (!back.empty() && back.top().at <= now) {
      const Ctrl c = back.top();
      back.pop();
      if (c.kind == Kind::kReply) tx.OnRttReply(kFlow, c.value, now);
      if (c.kind == Kind::kClear) tx.OnClear(kFlow, c.value, now);
      if (c.kind == Kind::kNotify) tx.OnNotify(c.value, now);
    }
    if (!rx.DueReleases(now).empty()) release();
    while (!wire.empty() && wire.top().at <= now) {
      const Arrival a = wire.top();
      wire.pop();
      const auto act = rx.OnData(kFlow, 0, a.tag, a.tag.path == kPathA, now);
      if (act.release_before) release();
      if (act.deliver == Deliver::kHold) {
        held.push_back(a.seq);
      } else {
        host.push_back(a.seq);
      }
      if (act.release_after) release();
      const Time ctrl_at = now + 2 * kUs;
      if (act.send_rtt_reply) back.push({ctrl_at, Kind::kReply, a.tag.epoch});
      if (act.send_clear) back.push({ctrl_at, Kind::kClear, a.tag.epoch});
      if (act.send_notify) back.push({ctrl_at, Kind::kNotify, a.tag.path});
    }
    if (sent < kPackets && now % kUs == 0) {
      // The flow starts on A (its first sample); after that ConWeave chooses.
      const ConweaveTag t = tx.OnData(kFlow, sent == 0 ? only_a : paths, kBaseRtt, now, rng);
      wire.push({now + one_way[t.path], sent, t});
      ++sent;
    }
  }
  ASSERT_EQ(host.size(), static_cast<size_t>(kPackets));
  for (int i = 0; i < kPackets; ++i) ASSERT_EQ(host[i], i) << "out of order at " << i;
  EXPECT_EQ(tx.PathOf(kFlow), kPathB);
  EXPECT_GE(tx.stats().reroutes, 1u);
  const auto hist = tx.RerouteHistogram();  // one flow; its bucket holds all its reroutes
  EXPECT_EQ(hist[0] + hist[1] + hist[2] + hist[3] + hist[4], 1u);
  EXPECT_EQ(hist[0], 0u);
  if (tx.stats().reroutes == 1) {
    EXPECT_EQ(hist[1], 1u);
  }
  tx.Age(10 * kSec);  // aged out: still counted, once
  EXPECT_EQ(tx.RerouteHistogram(), hist);
  EXPECT_GE(tx.stats().timely_replies, 10u);  // once on B, every epoch's reply is in time
  EXPECT_GE(rx.stats().held, 10u);            // new-path packets overtook the TAIL on A
  EXPECT_EQ(rx.stats().fallbacks, 0u);
  EXPECT_EQ(rx.stats().out_of_order, 0u);
  EXPECT_EQ(rx.queues_in_use_total(), 0u);
}

}  // namespace
}  // namespace rocefab

namespace rocefab {
namespace {

nlohmann::json CwSwitch(uint64_t reroutes, uint64_t by_tail, uint64_t by_timeout) {
  return {{"conweave",
           {{"tx", {{"reroutes", reroutes}}},
            {"rx", {{"releases_by_tail", by_tail}, {"releases_by_timeout", by_timeout}}}}}};
}

// The end-of-run ConWeave line sums every ToR and NIC; more than 2 % of reorder releases by
// deadline adds the warning, which names the held-frames setting and the doc section.
TEST(ConweaveAccountTest, SumsTheToRsAndWarnsAboveTwoPercentOfReleasesByDeadline) {
  nlohmann::json s = {{"switches",
                       {{"spine0", {{"drops", nlohmann::json::object()}}},
                        {"tor0", CwSwitch(3, 50, 1)},
                        {"tor1", CwSwitch(4, 48, 0)}}},
                      {"hosts", {{"h0", {{"rnic", {{"out_of_order", 7}}}}}, {"h1", {}}}}};
  auto lines = ConweaveAccount(s);
  ASSERT_EQ(lines.size(), 1u);  // 1 of 99 by deadline: 1.0 %
  EXPECT_EQ(lines[0],
            "conweave: 7 reroutes; reorder queues released 98 by TAIL, 1 by deadline; 7 packets "
            "out of order at the NICs");
  s["switches"]["tor1"] = CwSwitch(4, 48, 2);  // 3 of 101: 3.0 %
  lines = ConweaveAccount(s);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_NE(lines[1].find("3.0 % of the reorder queues were released by their deadline"),
            std::string::npos)
      << lines[1];
  EXPECT_NE(lines[2].find("charge_held_to_buffer"), std::string::npos) << lines[2];
  s["switches"].erase("tor0");
  s["switches"].erase("tor1");
  EXPECT_TRUE(ConweaveAccount(s).empty()) << "no ConWeave, no line";
}

}  // namespace
}  // namespace rocefab

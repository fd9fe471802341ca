// The emulated RNIC on a fabric in the sim runner: the paper's livelock (go-back-0 vs go-back-N
// vs selective repeat), exact retransmission timeout, retry-exceeded completion.
#include <gtest/gtest.h>

#include <vector>

#include "run/sim_fabric.h"
#include "tests/support/clos_scenario.h"
#include "tests/support/test_pool.h"
#include "topo/clos.h"

namespace rocefab {
namespace {

class RnicTest : public testing::PoolTest {
 protected:
  std::unique_ptr<SimFabric> Fabric(const RnicConfig& nic, BitRate rate = 10 * kGbps,
                                    int hosts = 2) {
    Scenario s = testing::ClosScenario(
        "rnic", {.spines = 1, .tors = 1, .hosts_per_tor = hosts, .link_rate = rate}, kSec);
    s.nic = nic;
    auto f = SimFabric::Create(s, pool_);
    EXPECT_TRUE(f.ok()) << f.message();
    return std::move(f).value();
  }
  // RC connection between two hosts' NICs (out of band, as perftest exchanges QPN/PSN).
  static std::pair<uint32_t, uint32_t> Connect(EmulatedHost& a, EmulatedHost& b, uint32_t psn_a,
                                               uint32_t psn_b) {
    const uint32_t qa = a.rnic().NextQpn(), qb = b.rnic().NextQpn();
    a.rnic().CreateQp(b.config().ip, qb, psn_a, psn_b);
    b.rnic().CreateQp(a.config().ip, qa, psn_b, psn_a);
    return {qa, qb};
  }
};

struct LivelockResult {
  int completed = 0;
  double goodput_gbps = 0;
  uint64_t retransmitted = 0;
};

TEST_F(RnicTest, LivelockGoBack0NeverCompletesGoBackNAndSelectiveRepeatDeliver) {
  std::map<LossRecovery, LivelockResult> res;
  for (LossRecovery mode :
       {LossRecovery::kGoBack0, LossRecovery::kGoBackN, LossRecovery::kSelectiveRepeat}) {
    RnicConfig nic;
    nic.recovery = mode;
    nic.dcqcn = false;
    nic.ack_every = 16;
    nic.timeout_exp = 12;  // 16.8 ms
    auto f = Fabric(nic);
    EmulatedHost& a = f->host(0);
    EmulatedHost& b = f->host(1);
    auto [qa, qb] = Connect(a, b, 0xFFF000, 0xFFF000);  // PSNs wrap during the run
    LivelockResult& r = res[mode];
    constexpr uint64_t kMsg = 4 << 20;
    uint64_t next_id = 0;
    a.rnic().SetCompletionHandler([&, qa = qa](Time now, const WorkCompletion& wc) {
      ASSERT_EQ(wc.status, WorkCompletion::Status::kSuccess);
      ++r.completed;
      a.rnic().PostSend(now, qa,
                        WorkRequest{WorkRequest::Op::kWrite, next_id++, kMsg, 0x10000000, 7});
    });
    for (int i = 0; i < 2; ++i)
      a.rnic().PostAt(10 * kUs, qa,
                      WorkRequest{WorkRequest::Op::kWrite, next_id++, kMsg, 0x10000000, 7});
    // h0's link to the ToR (ToR port 0 <-> h0): drop 1 frame in 256 leaving h0.
    ASSERT_TRUE(
        f->runner().SetLoss(2, 0, SimRunner::LossModel{256, {}, 0, 1}).ok());  // node 2 = h0
    f->runner().Run(kSec);
    r.goodput_gbps = r.completed * kMsg * 8.0 / 1e9;  // over 1 s
    r.retransmitted = a.rnic().retransmitted();
    EXPECT_GT(f->runner().lost_frames(), 1000u);
  }
  EXPECT_EQ(res[LossRecovery::kGoBack0].completed, 0)
      << "go-back-0 livelock: no 4 MB message completes";
  EXPECT_GT(res[LossRecovery::kGoBack0].retransmitted, 100000u)
      << "while retransmitting all the time";
  EXPECT_GT(res[LossRecovery::kGoBackN].goodput_gbps, 5.0) << "go-back-N delivers";
  EXPECT_GT(res[LossRecovery::kSelectiveRepeat].goodput_gbps,
            res[LossRecovery::kGoBackN].goodput_gbps)
      << "selective repeat beats go-back-N";
  RecordProperty("goodput_gbn_gbps", std::to_string(res[LossRecovery::kGoBackN].goodput_gbps));
  RecordProperty("goodput_sr_gbps",
                 std::to_string(res[LossRecovery::kSelectiveRepeat].goodput_gbps));
  std::printf(
      "livelock goodput (Gb/s of 10): go-back-0 %.3f, go-back-N %.3f, selective repeat %.3f\n",
      res[LossRecovery::kGoBack0].goodput_gbps, res[LossRecovery::kGoBackN].goodput_gbps,
      res[LossRecovery::kSelectiveRepeat].goodput_gbps);
}

TEST_F(RnicTest, LostFinalAckIsRecoveredAfterExactlyTheLocalAckTimeout) {
  RnicConfig nic;
  nic.dcqcn = false;
  nic.timeout_exp = 8;  // 4.096 us x 256 = 1.048576 ms
  // Pass 1: find which frame towards h0 carries the ACK; pass 2: lose exactly that frame.
  uint64_t ack_index = 0;
  for (int pass = 0; pass < 2; ++pass) {
    auto f = Fabric(nic);
    EmulatedHost& a = f->host(0);
    EmulatedHost& b = f->host(1);
    auto [qa, qb] = Connect(a, b, 100, 200);
    std::vector<Time> writes;  // arrivals of the WRITE at the ToR
    uint64_t to_h0 = 0;
    Time completed = -1;
    f->runner().SetArriveTap([&](Time now, uint32_t node, uint16_t, const rte_mbuf* m) {
      ParsedFrame p;
      if (ParseFrame(m, &p) != ParseError::kOk || p.dport != kRoceUdpPort) {
        if (node == 2) ++to_h0;
        return;
      }
      RoceView v;
      ASSERT_EQ(ParseRoce(m, p, &v), RoceParseError::kOk);
      if (node == 0 && v.op == RoceOp::kWriteOnly) writes.push_back(now);
      if (node == 2 && ++to_h0 && v.op == RoceOp::kAck && ack_index == 0) ack_index = to_h0;
    });
    a.rnic().SetCompletionHandler([&](Time now, const WorkCompletion& wc) {
      EXPECT_EQ(wc.status, WorkCompletion::Status::kSuccess);
      completed = now;
    });
    a.rnic().PostAt(50 * kUs, qa, WorkRequest{WorkRequest::Op::kWrite, 1, 512, 0x1000, 1});
    if (pass == 1) {
      ASSERT_TRUE(f->runner().SetLoss(0, 0, SimRunner::LossModel{0, {ack_index}, 0, 1}).ok());
    }
    f->runner().Run(10 * kMs);
    ASSERT_GT(completed, 0);
    if (pass == 0) {
      ASSERT_EQ(writes.size(), 1u);
      ASSERT_GT(ack_index, 0u);
      continue;
    }
    ASSERT_EQ(writes.size(), 2u) << "one retransmission";
    EXPECT_EQ(writes[1] - writes[0], RnicConfig::Timeout(8));
    EXPECT_EQ(RnicConfig::Timeout(8), 1'048'576'000);
    EXPECT_EQ(a.rnic().timeouts(), 1u);
    EXPECT_GE(b.rnic().Stats(0)["duplicates"].get<uint64_t>(), 1u)
        << "responder re-ACKs the duplicate";
  }
}

TEST_F(RnicTest, PeerGoneQpErrorsAfterRetryCountPlusOneAttempts) {
  RnicConfig nic;
  nic.dcqcn = false;
  nic.timeout_exp = 10;  // 4.194304 ms
  nic.retry_cnt = 3;
  auto f = Fabric(nic);
  EmulatedHost& a = f->host(0);
  EmulatedHost& b = f->host(1);
  auto [qa, qb] = Connect(a, b, 1, 1);
  // A first WRITE completes (ARP resolved, peer alive); then the peer dies.
  std::vector<WorkCompletion> wcs;
  a.rnic().SetCompletionHandler([&](Time, const WorkCompletion& wc) { wcs.push_back(wc); });
  a.rnic().PostAt(10 * kUs, qa, WorkRequest{WorkRequest::Op::kWrite, 41, 1000, 0x1000, 1});
  f->runner().Run(kMs);
  ASSERT_EQ(wcs.size(), 1u);
  ASSERT_EQ(wcs[0].status, WorkCompletion::Status::kSuccess);
  wcs.clear();
  b.SetDead(true);
  std::vector<Time> sends;
  f->runner().SetArriveTap([&](Time now, uint32_t node, uint16_t, const rte_mbuf* m) {
    ParsedFrame p;
    if (node == 0 && ParseFrame(m, &p) == ParseError::kOk && p.dport == kRoceUdpPort)
      sends.push_back(now);
  });
  const Time post = 2 * kMs;
  a.rnic().PostAt(post, qa, WorkRequest{WorkRequest::Op::kWrite, 42, 2048, 0x1000, 1});
  a.rnic().PostAt(post, qa, WorkRequest{WorkRequest::Op::kSend, 43, 100, 0, 0});
  f->runner().Run(100 * kMs);
  ASSERT_EQ(wcs.size(), 2u) << "sends " << sends.size() << " " << a.rnic().Stats(0).dump();
  EXPECT_EQ(wcs[0].wr_id, 42u);
  EXPECT_EQ(wcs[0].status, WorkCompletion::Status::kRetryExceeded);
  EXPECT_EQ(wcs[1].status, WorkCompletion::Status::kFlushed);
  EXPECT_TRUE(a.rnic().qp_error(qa));
  // retry_cnt + 1 = 4 attempts of the 3 packets, one timeout apart; the error one timeout later.
  ASSERT_EQ(sends.size(), 4u * 3u);
  const Time hop = sends[0] - post;  // the first packet leaves h0 at `post` and crosses one link
  for (int attempt = 0; attempt < 4; ++attempt) {
    EXPECT_EQ(sends[attempt * 3] - sends[0], attempt * RnicConfig::Timeout(10))
        << "attempt " << attempt;
  }
  EXPECT_EQ(wcs[0].completed, post + 4 * RnicConfig::Timeout(10));
  EXPECT_GT(hop, 0);
  EXPECT_FALSE(a.rnic().PostSend(f->runner().now(), qa, WorkRequest{}));
}

// A per-QP window (nic.window) that fills makes PullData skip the QP; the ACKs that open it must
// get it sent again, with no timeout (the provider's port, which asks for frames only after a
// wake-up, once left a live ib_write_bw waiting for good: Rnic::Activate now wakes the port).
TEST_F(RnicTest, AFullWindowResumesWhenAnAckOpensIt) {
  RnicConfig nic;
  nic.dcqcn = false;  // no pacing timer to wake the port by chance
  nic.max_inflight_bytes = 2048;  // two packets: less than the round trip, so it fills
  auto f = Fabric(nic);
  EmulatedHost& a = f->host(0);
  EmulatedHost& b = f->host(1);
  auto [qa, qb] = Connect(a, b, 1, 1);
  std::vector<WorkCompletion> wcs;
  a.rnic().SetCompletionHandler([&](Time, const WorkCompletion& wc) { wcs.push_back(wc); });
  a.rnic().PostAt(10 * kUs, qa, WorkRequest{WorkRequest::Op::kWrite, 1, 256 << 10, 0x1000, 1});
  f->runner().Run(10 * kMs);
  ASSERT_EQ(wcs.size(), 1u) << "the 256 KiB WRITE (128 windows of 2 KiB) completes";
  EXPECT_EQ(wcs[0].status, WorkCompletion::Status::kSuccess);
  EXPECT_EQ(a.rnic().timeouts(), 0u) << "resumed by the ACKs, not by a timeout";
}

// One registered region per PD, as a verbs provider keeps them: rkey, start, length, access.
class OneRegion : public RnicMemory {
 public:
  OneRegion(size_t bytes, uint32_t rkey, uint8_t access)
      : buf(bytes), rkey_(rkey), access_(access) {}
  uint8_t* Resolve(uint32_t rkey, uint64_t va, uint64_t len, Access a) override {
    const auto start = reinterpret_cast<uint64_t>(buf.data());
    if (rkey != rkey_ || (access_ & a) == 0 || va < start || va + len > start + buf.size()) {
      return nullptr;
    }
    return buf.data() + (va - start);
  }
  uint64_t va() { return reinterpret_cast<uint64_t>(buf.data()); }
  std::vector<uint8_t> buf;

 private:
  uint32_t rkey_;
  uint8_t access_;
};

class RnicMemoryTest : public RnicTest {
 protected:
  static constexpr uint8_t kRw = RnicMemory::kRemoteWrite | RnicMemory::kRemoteRead;
  void SetUp() override {
    RnicTest::SetUp();
    RnicConfig nic;
    nic.dcqcn = false;
    nic.timeout_exp = 10;
    f = Fabric(nic);
    a = &f->host(0);
    b = &f->host(1);
    for (size_t i = 0; i < ma.buf.size(); ++i) ma.buf[i] = static_cast<uint8_t>(i * 7 + 1);
    QpOptions oa, ob;
    oa.memory = &ma;
    ob.memory = &mb;
    oa.receive_queue = ob.receive_queue = true;
    qa = a->rnic().AllocateQp();
    qb = b->rnic().AllocateQp();
    ASSERT_TRUE(a->rnic().ConnectQp(qa, b->config().ip, qb, 500, oa));
    ASSERT_TRUE(b->rnic().ConnectQp(qb, a->config().ip, qa, 300, ob));
    ASSERT_TRUE(a->rnic().StartSending(qa, 300, -1, -1, -1));
    ASSERT_TRUE(b->rnic().StartSending(qb, 500, -1, -1, -1));
    a->rnic().SetCompletionHandler([&](Time, const WorkCompletion& wc) { wa.push_back(wc); });
    b->rnic().SetCompletionHandler([&](Time, const WorkCompletion& wc) { wb.push_back(wc); });
  }
  WorkRequest Wr(WorkRequest::Op op, uint64_t id, size_t off, uint32_t len, uint64_t remote_va,
                 uint32_t rkey) {
    WorkRequest w{op, id, len, remote_va, rkey};
    w.local = {Sge{ma.buf.data() + off, len}};
    return w;
  }
  void Run(Time t) { f->runner().Run(f->runner().now() + t); }
  std::unique_ptr<SimFabric> f;
  EmulatedHost *a = nullptr, *b = nullptr;
  uint32_t qa = 0, qb = 0;
  OneRegion ma{64 << 10, 11, kRw}, mb{64 << 10, 22, kRw};
  std::vector<WorkCompletion> wa, wb;
};

TEST_F(RnicMemoryTest, WriteReadAndSendMoveTheApplicationsBytes) {
  // A 10,000-byte WRITE (10 packets at MTU 1024) lands at the rkey's address.
  ASSERT_TRUE(
      a->rnic().PostSend(0, qa, Wr(WorkRequest::Op::kWrite, 1, 0, 10000, mb.va() + 100, 22)));
  Run(kMs);
  ASSERT_EQ(wa.size(), 1u);
  EXPECT_EQ(wa[0].status, WorkCompletion::Status::kSuccess);
  EXPECT_TRUE(std::equal(ma.buf.begin(), ma.buf.begin() + 10000, mb.buf.begin() + 100));
  EXPECT_EQ(mb.buf[99], 0);
  EXPECT_EQ(mb.buf[10100], 0);
  // READ 5000 bytes back into a's buffer at offset 20000, split over two SGEs.
  WorkRequest rd{WorkRequest::Op::kRead, 2, 5000, mb.va() + 100, 22};
  rd.local = {Sge{ma.buf.data() + 20000, 3000}, Sge{ma.buf.data() + 23000, 2000}};
  ASSERT_TRUE(a->rnic().PostSend(f->runner().now(), qa, rd));
  Run(kMs);
  ASSERT_EQ(wa.size(), 2u);
  EXPECT_EQ(wa[1].status, WorkCompletion::Status::kSuccess);
  EXPECT_TRUE(std::equal(ma.buf.begin(), ma.buf.begin() + 5000, ma.buf.begin() + 20000));
  // A SEND lands in the posted receive, which completes with its length and the sender's QPN.
  ASSERT_TRUE(b->rnic().PostRecv(f->runner().now(), qb,
                                 RecvRequest{77, {Sge{mb.buf.data() + 40000, 4096}}}));
  ASSERT_TRUE(
      a->rnic().PostSend(f->runner().now(), qa, Wr(WorkRequest::Op::kSend, 3, 30, 3000, 0, 0)));
  Run(kMs);
  ASSERT_EQ(wb.size(), 1u);
  EXPECT_EQ(wb[0].op, WorkRequest::Op::kRecv);
  EXPECT_EQ(wb[0].wr_id, 77u);
  EXPECT_EQ(wb[0].bytes, 3000u);
  EXPECT_EQ(wb[0].src_qp, qa);
  EXPECT_TRUE(std::equal(ma.buf.begin() + 30, ma.buf.begin() + 3030, mb.buf.begin() + 40000));
}

TEST_F(RnicMemoryTest, ABadRkeyIsARemoteAccessErrorAndBothQpsGoToError) {
  ASSERT_TRUE(a->rnic().PostSend(0, qa, Wr(WorkRequest::Op::kWrite, 1, 0, 2000, mb.va(), 23)));
  ASSERT_TRUE(a->rnic().PostSend(0, qa, Wr(WorkRequest::Op::kWrite, 2, 0, 100, mb.va(), 22)));
  Run(kMs);
  ASSERT_EQ(wa.size(), 2u);
  EXPECT_EQ(wa[0].status, WorkCompletion::Status::kRemoteAccessError);
  EXPECT_EQ(wa[1].status, WorkCompletion::Status::kFlushed);
  EXPECT_TRUE(a->rnic().qp_error(qa));
  EXPECT_TRUE(b->rnic().qp_error(qb));
  EXPECT_EQ(b->rnic().Stats(0)["remote_access_naks_sent"].get<uint64_t>(), 1u);
  EXPECT_TRUE(std::all_of(mb.buf.begin(), mb.buf.end(), [](uint8_t x) { return x == 0; }));
  // A range past the region's end and a READ of a write-only region are refused alike.
  OneRegion wo{4096, 5, RnicMemory::kRemoteWrite};
  EXPECT_EQ(wo.Resolve(5, wo.va(), 4097, RnicMemory::kRemoteWrite), nullptr);
  EXPECT_EQ(wo.Resolve(5, wo.va(), 16, RnicMemory::kRemoteRead), nullptr);
}

TEST_F(RnicMemoryTest, ASendWithoutAReceiveIsRnrNakedUntilOneIsPosted) {
  ASSERT_TRUE(a->rnic().PostSend(0, qa, Wr(WorkRequest::Op::kSend, 1, 0, 2500, 0, 0)));
  Run(3 * kMs);
  EXPECT_TRUE(wa.empty());
  const uint64_t rnr = b->rnic().Stats(0)["rnr_naks_sent"].get<uint64_t>();
  EXPECT_GE(rnr, 3u) << "one per 0.64 ms RNR timer";
  ASSERT_TRUE(
      b->rnic().PostRecv(f->runner().now(), qb, RecvRequest{9, {Sge{mb.buf.data(), 4096}}}));
  Run(2 * kMs);
  ASSERT_EQ(wa.size(), 1u);
  EXPECT_EQ(wa[0].status, WorkCompletion::Status::kSuccess);
  ASSERT_EQ(wb.size(), 1u);
  EXPECT_EQ(wb[0].bytes, 2500u);
  EXPECT_TRUE(std::equal(ma.buf.begin(), ma.buf.begin() + 2500, mb.buf.begin()));
  EXPECT_EQ(RnrTimerValue(12), 640 * kUs);
  EXPECT_EQ(RnrTimerValue(0), 655360 * kUs);
}

TEST_F(RnicMemoryTest, RnrRetryZeroFailsAndASendLongerThanTheReceiveIsAnError) {
  // A second pair on the same hosts with rnr_retry 0.
  QpOptions oa;
  oa.memory = &ma;
  oa.receive_queue = true;
  oa.rnr_retry = 0;
  QpOptions ob = oa;
  ob.memory = &mb;
  const uint32_t qa2 = a->rnic().AllocateQp(), qb2 = b->rnic().AllocateQp();
  ASSERT_TRUE(a->rnic().ConnectQp(qa2, b->config().ip, qb2, 1, oa));
  ASSERT_TRUE(b->rnic().ConnectQp(qb2, a->config().ip, qa2, 1, ob));
  ASSERT_TRUE(a->rnic().StartSending(qa2, 1, -1, -1, 0));
  ASSERT_TRUE(b->rnic().StartSending(qb2, 1, -1, -1, 0));
  ASSERT_TRUE(a->rnic().PostSend(0, qa2, Wr(WorkRequest::Op::kSend, 5, 0, 100, 0, 0)));
  // On the first pair, 3000 bytes into a 1000-byte receive.
  ASSERT_TRUE(b->rnic().PostRecv(0, qb, RecvRequest{8, {Sge{mb.buf.data(), 1000}}}));
  ASSERT_TRUE(a->rnic().PostSend(0, qa, Wr(WorkRequest::Op::kSend, 6, 0, 3000, 0, 0)));
  Run(5 * kMs);
  std::map<uint64_t, WorkCompletion::Status> got;
  for (const auto& wc : wa) got[wc.wr_id] = wc.status;
  EXPECT_EQ(got[5], WorkCompletion::Status::kRnrRetryExceeded);
  EXPECT_EQ(got[6], WorkCompletion::Status::kRemoteInvalidRequest);
  ASSERT_EQ(wb.size(), 1u);
  EXPECT_EQ(wb[0].wr_id, 8u);
  EXPECT_EQ(wb[0].status, WorkCompletion::Status::kLocalLengthError);
  EXPECT_STREQ(WcStatusName(wb[0].status), "IBV_WC_LOC_LEN_ERR");
}

TEST_F(RnicMemoryTest, FlushingAQpCompletesEveryPostedRequestWithFlushError) {
  ASSERT_TRUE(b->rnic().PostRecv(0, qb, RecvRequest{1, {}}));
  ASSERT_TRUE(b->rnic().PostRecv(0, qb, RecvRequest{2, {}}));
  b->rnic().FlushQp(0, qb);
  ASSERT_EQ(wb.size(), 2u);
  for (const auto& wc : wb) {
    EXPECT_EQ(wc.status, WorkCompletion::Status::kFlushed);
    EXPECT_EQ(wc.op, WorkRequest::Op::kRecv);
  }
  EXPECT_FALSE(b->rnic().PostRecv(0, qb, RecvRequest{3, {}}));
  EXPECT_FALSE(b->rnic().PostSend(0, qb, WorkRequest{}));
}

}  // namespace
}  // namespace rocefab

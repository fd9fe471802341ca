#include "nic-emu/rnic.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "common/lean_fifo.h"
#include "common/packet.h"
#include "nic-emu/emulated_host.h"

namespace rocefab {
namespace {

constexpr uint32_t kPsnMask = 0xFFFFFF;
inline uint32_t PsnAdd(uint32_t a, int64_t n) { return static_cast<uint32_t>((a + n) & kPsnMask); }
/// Signed distance a - b in 24-bit PSN space.
inline int32_t PsnDiff(uint32_t a, uint32_t b) {
  return static_cast<int32_t>(((a - b) & kPsnMask) << 8) >> 8;
}
constexpr int kAckReqEvery = 64;  // rxe RXE_MAX_PKT_PER_ACK

}  // namespace

const char* LossRecoveryName(LossRecovery r) {
  switch (r) {
    case LossRecovery::kGoBack0:
      return "go-back-0";
    case LossRecovery::kGoBackN:
      return "go-back-N";
    case LossRecovery::kSelectiveRepeat:
      return "selective-repeat";
  }
  return "?";
}

const char* WcStatusName(WorkCompletion::Status s) {
  switch (s) {
    case WorkCompletion::Status::kSuccess:
      return "IBV_WC_SUCCESS";
    case WorkCompletion::Status::kRetryExceeded:
      return "IBV_WC_RETRY_EXC_ERR";
    case WorkCompletion::Status::kFlushed:
      return "IBV_WC_WR_FLUSH_ERR";
    case WorkCompletion::Status::kRemoteAccessError:
      return "IBV_WC_REM_ACCESS_ERR";
    case WorkCompletion::Status::kRemoteInvalidRequest:
      return "IBV_WC_REM_INV_REQ_ERR";
    case WorkCompletion::Status::kRemoteOperationalError:
      return "IBV_WC_REM_OP_ERR";
    case WorkCompletion::Status::kRnrRetryExceeded:
      return "IBV_WC_RNR_RETRY_EXC_ERR";
    case WorkCompletion::Status::kLocalLengthError:
      return "IBV_WC_LOC_LEN_ERR";
  }
  return "?";
}

Time RnrTimerValue(int code) {
  // IBTA vol. 1 table 45, in units of 10 us (code 0 is the longest, 655.36 ms).
  static constexpr int64_t k10Us[32] = {65536, 1,    2,    3,     4,     6,     8,     12,
                                        16,    24,   32,   48,    64,    96,    128,   192,
                                        256,   384,  512,  768,   1024,  1536,  2048,  3072,
                                        4096,  6144, 8192, 12288, 16384, 24576, 32768, 49152};
  return k10Us[code & 31] * 10 * kUs;
}

struct Rnic::Qp {
  struct Wqe {
    WorkRequest wr;
    uint32_t first_psn = 0;
    uint32_t npkts = 0;
    Time posted = 0;
    uint32_t last_psn() const { return PsnAdd(first_psn, npkts - 1); }
  };
  struct ReadResp {
    uint32_t first_psn;
    uint32_t npkts;
    uint64_t len;
    const uint8_t* base = nullptr;  // the requested bytes (QPs with memory), else zeros
    uint32_t next = 0;
  };
  struct OooPkt {
    bool last;
    uint32_t bytes;
  };

  uint32_t qpn = 0, remote_qpn = 0;
  uint32_t mtu = 1024;  // path MTU: payload bytes per packet
  Ipv4 remote_ip = 0;
  uint16_t sport = 0;
  uint16_t ip_id = 0;  // RnicConfig::ip_id_per_qp: every frame's IPv4 identification
  uint8_t dscp = 26, ack_dscp = 26, prio = 3;
  int timeout_exp = 14, retry_cnt = 7, ack_req_every = kAckReqEvery;
  bool error = false;
  bool connected = false;  // RTR: the responder runs
  bool sending = false;    // RTS: the requester runs
  bool in_active = false;
  bool window_blocked = false;  // PullData skipped it: max_inflight_bytes in flight
  RnicMemory* memory = nullptr;
  bool receive_queue = false;
  int min_rnr_timer = 12, rnr_retry = 7, rnr_retries = 0;
  LossRecovery recovery = LossRecovery::kGoBackN;
  // Requester.
  LeanFifo<Wqe> sq;
  uint32_t next_psn = 0, snd_nxt = 0, snd_una = 0;
  uint32_t high = 0;  // one past the highest PSN ever sent (retransmission accounting)
  LeanFifo<uint32_t> sr_retx;
  Time rto_deadline = kTimeNever;
  bool rto_timer_pending = false;
  int retries = 0;
  Time next_avail = 0;
  std::unique_ptr<DcqcnRateController> cc;
  // Responder.
  uint32_t epsn = 0, msn = 0, msg_start = 0;
  uint32_t last_nak = UINT32_MAX;
  int unacked = 0;
  // Selective repeat: packets received ahead of epsn, keyed by PSN distance from ooo_base (the
  // epsn when the first of them arrived), so the keys stay put as epsn advances.
  std::map<int32_t, OooPkt> ooo;
  uint32_t ooo_base = 0;
  LeanFifo<ReadResp> reads;
  std::deque<RecvRequest> rq;
  bool msg_is_send = false;
  uint8_t* resp_ptr = nullptr;  // WRITE target (QPs with memory)
  uint64_t resp_len = 0;
  uint64_t resp_va = 0;
  uint64_t msg_bytes = 0;
  Time last_cnp = -kSec;
  Rnic::CompletionFn on_completion;
  Rnic::ArrivalFn on_arrival;
  // Stats.
  uint64_t tx_packets = 0, retx_packets = 0, completed = 0;

  bool HasWork() const {
    if (error || !connected) return false;
    return !reads.empty() || !sr_retx.empty() || PsnDiff(snd_nxt, next_psn) < 0;
  }
  Wqe* Find(uint32_t psn) {
    for (auto& w : sq) {
      const int32_t d = PsnDiff(psn, w.first_psn);
      if (d >= 0 && d < static_cast<int32_t>(w.npkts)) return &w;
    }
    return nullptr;
  }
};

Rnic::Rnic(EmulatedHost* host, const RnicConfig& cfg, BitRate line_rate)
    : host_(host),
      cfg_(cfg),
      line_rate_(line_rate),
      mtt_(static_cast<uint32_t>(std::max(cfg.mtt_entries, 1))) {
  data_prio_ = host_->config().qos.dscp_to_tc[cfg_.data_dscp & 63];
  data_prio_mask_ = static_cast<uint8_t>(1 << data_prio_);
}

Rnic::~Rnic() { rx_fifo_.Clear(); }

const Rnic::Qp* Rnic::FindQp(uint32_t qpn) const {
  if (qpn <= qpn_base_ || qpn - qpn_base_ > qps_.size()) return nullptr;
  return qps_[qpn - qpn_base_ - 1].get();
}

Rnic::Qp* Rnic::GetQp(uint32_t qpn) { return const_cast<Qp*>(FindQp(qpn)); }

bool Rnic::qp_error(uint32_t qpn) const {
  const Qp* q = FindQp(qpn);
  return q == nullptr || q->error;
}

BitRate Rnic::qp_rate(uint32_t qpn) const {
  const Qp* q = FindQp(qpn);
  if (q == nullptr) return BitRate();
  return q->cc ? q->cc->rate() : line_rate_;
}

std::vector<Rnic::CcSample> Rnic::CcSamples(Time now) const {
  std::vector<CcSample> out;
  for (const auto& q : qps_) {
    if (!q->cc) continue;
    out.push_back({q->qpn, q->cc->rate(), q->cc->target(), q->cc->PeekAlpha(now)});
  }
  return out;
}

uint16_t Rnic::qp_sport(uint32_t qpn) const {
  const Qp* q = FindQp(qpn);
  return q == nullptr ? 0 : q->sport;
}

uint32_t Rnic::CreateQp(Ipv4 remote_ip, uint32_t remote_qpn, uint32_t initial_psn,
                        uint32_t remote_initial_psn, const QpOptions& opt) {
  const uint32_t qpn = AllocateQp();
  ConnectQp(qpn, remote_ip, remote_qpn, remote_initial_psn, opt);
  StartSending(qpn, initial_psn, -1, -1, -1);
  return qpn;
}

uint32_t Rnic::AllocateQp() {
  auto q = std::make_unique<Qp>();
  q->qpn = NextQpn();
  q->mtu = cfg_.mtu;
  qps_.push_back(std::move(q));
  return qps_.back()->qpn;
}

bool Rnic::ConnectQp(uint32_t qpn, Ipv4 remote_ip, uint32_t remote_qpn, uint32_t remote_initial_psn,
                     const QpOptions& opt) {
  Qp* q = GetQp(qpn);
  if (q == nullptr || q->connected || q->error) return false;
  q->connected = true;
  q->remote_qpn = remote_qpn;
  q->remote_ip = remote_ip;
  q->sport =
      opt.udp_sport != 0 ? opt.udp_sport : RoceSourcePort(q->qpn ^ (host_->config().ip << 8));
  q->ip_id = opt.ip_id;
  q->dscp = static_cast<uint8_t>((opt.dscp >= 0 ? opt.dscp : cfg_.data_dscp) & 63);
  const int ack = opt.ack_dscp >= 0 ? opt.ack_dscp : cfg_.ack_dscp;
  q->ack_dscp = static_cast<uint8_t>((ack >= 0 ? ack : q->dscp) & 63);
  q->prio = host_->config().qos.dscp_to_tc[q->dscp];
  data_prio_mask_ |= static_cast<uint8_t>(1 << q->prio);
  q->timeout_exp = opt.timeout_exp >= 0 ? opt.timeout_exp : cfg_.timeout_exp;
  q->retry_cnt = opt.retry_cnt >= 0 ? opt.retry_cnt : cfg_.retry_cnt;
  q->ack_req_every = opt.ack_req_every >= 0 ? opt.ack_req_every : kAckReqEvery;
  q->recovery = cfg_.recovery;
  if (opt.mtu != 0) q->mtu = opt.mtu;
  q->memory = opt.memory;
  q->receive_queue = opt.receive_queue;
  q->min_rnr_timer = opt.min_rnr_timer & 31;
  q->rnr_retry = opt.rnr_retry;
  if (q->memory != nullptr && q->recovery == LossRecovery::kSelectiveRepeat) {
    q->recovery = LossRecovery::kGoBackN;  // no out-of-order payload is buffered
  }
  q->epsn = q->msg_start = remote_initial_psn & kPsnMask;
  if (cfg_.dcqcn) q->cc = std::make_unique<DcqcnRateController>(cfg_.dcqcn_cfg, line_rate_);
  return true;
}

bool Rnic::StartSending(uint32_t qpn, uint32_t initial_psn, int timeout_exp, int retry_cnt,
                        int rnr_retry) {
  Qp* q = GetQp(qpn);
  if (q == nullptr || !q->connected || q->sending || q->error) return false;
  q->sending = true;
  q->next_psn = q->snd_nxt = q->snd_una = q->high = initial_psn & kPsnMask;
  if (timeout_exp >= 0) q->timeout_exp = timeout_exp;
  if (retry_cnt >= 0) q->retry_cnt = retry_cnt;
  if (rnr_retry >= 0) q->rnr_retry = rnr_retry;
  return true;
}

void Rnic::CloseQp(uint32_t qpn) {
  Qp* q = GetQp(qpn);
  if (q == nullptr) return;
  q->error = true;
  q->sq.clear();
  q->rq.clear();
  q->reads.clear();
  q->sr_retx.clear();
  q->rto_deadline = kTimeNever;
  q->on_completion = nullptr;
  q->on_arrival = nullptr;
}

void Rnic::FlushQp(Time now, uint32_t qpn) {
  Qp* q = GetQp(qpn);
  if (q != nullptr && !q->error) FailQp(now, q, WorkCompletion::Status::kFlushed);
}

bool Rnic::PostRecv(Time /*now*/, uint32_t qpn, RecvRequest r) {
  Qp* q = GetQp(qpn);
  if (q == nullptr || q->error) return false;
  q->rq.push_back(std::move(r));
  return true;
}

void Rnic::SetQpHandlers(uint32_t qpn, CompletionFn on_completion, ArrivalFn on_arrival) {
  if (Qp* q = GetQp(qpn)) {
    q->on_completion = std::move(on_completion);
    q->on_arrival = std::move(on_arrival);
  }
}

void Rnic::Complete(Time now, Qp* q, const WorkCompletion& wc) {
  if (q->on_completion) {
    q->on_completion(now, wc);
  } else if (on_completion_) {
    on_completion_(now, wc);
  }
}

void Rnic::SetRecovery(uint32_t qpn, LossRecovery r) {
  if (Qp* q = GetQp(qpn)) q->recovery = r;
}

void Rnic::Activate(Qp* q) {
  if (!q->in_active && q->HasWork()) {
    q->in_active = true;
    active_.push_back(q->qpn);
    host_->Kick();
  } else if (q->window_blocked && q->HasWork()) {
    // PullData found the window full and the host stopped asking; an ACK, NAK or timeout that
    // moved the window must wake the port, or the QP waits for good (nothing else would).
    q->window_blocked = false;
    host_->Kick();
  }
}

bool Rnic::PostSend(Time now, uint32_t qpn, const WorkRequest& wr) {
  Qp* q = GetQp(qpn);
  if (q == nullptr || q->error || !q->sending) return false;
  Qp::Wqe w;
  w.wr = wr;
  w.first_psn = q->next_psn;
  const uint64_t len = std::max<uint64_t>(wr.length, 1);
  w.npkts = static_cast<uint32_t>((len + q->mtu - 1) / q->mtu);
  w.posted = now;
  q->next_psn = PsnAdd(q->next_psn, w.npkts);
  q->sq.push_back(w);
  Activate(q);
  return true;
}

void Rnic::PostAt(Time at, uint32_t qpn, const WorkRequest& wr) {
  posts_.emplace(at, std::make_pair(qpn, wr));
  // One pending timer per NIC, for the earliest post (10^5 scheduled flows stay out of the
  // runner's event queue until they are due).
  if (post_timer_at_ < 0 || at < post_timer_at_) {
    post_timer_at_ = at;
    host_->ScheduleRnicTimer(at, Cookie(TimerKind::kPost, 0));
  }
}

void Rnic::ArmRto(Qp* q, Time now) {
  q->rto_deadline = now + RnicConfig::Timeout(q->timeout_exp);
  if (!q->rto_timer_pending) {
    q->rto_timer_pending = true;
    host_->ScheduleRnicTimer(q->rto_deadline, Cookie(TimerKind::kRto, q->qpn));
  }
}

rte_mbuf* Rnic::PullData(Time now, uint8_t prio, Time* wake) {
  for (size_t n = active_.size(); n > 0; --n) {
    const uint32_t qpn = active_.front();
    active_.pop_front();
    Qp* q = GetQp(qpn);
    if (!q->HasWork()) {
      q->in_active = false;
      continue;
    }
    if (q->prio != prio) {
      active_.push_back(qpn);  // another priority's turn (its queue may be paused)
      continue;
    }
    if (q->next_avail > now) {
      *wake = std::min(*wake, q->next_avail);
      active_.push_back(qpn);
      continue;
    }
    if (cfg_.max_inflight_bytes > 0 &&
        static_cast<int64_t>(PsnDiff(q->snd_nxt, q->snd_una)) * q->mtu >= cfg_.max_inflight_bytes &&
        q->reads.empty() && q->sr_retx.empty()) {
      q->window_blocked = true;  // an ACK will make room (Activate wakes the port then)
      active_.push_back(qpn);
      continue;
    }
    rte_mbuf* m = BuildNext(q, now);
    active_.push_back(qpn);
    if (m != nullptr) return m;
  }
  return nullptr;
}

uint16_t Rnic::NextIpId(const Qp& q) { return cfg_.ip_id_per_qp ? q.ip_id : next_ip_id_++; }

rte_mbuf* Rnic::BuildNext(Qp* q, Time now) {
  auto mac = host_->NextHopMac(now, q->remote_ip);
  if (!mac) return nullptr;  // ARP in progress; the host kicks us when it resolves
  RoceFrameSpec s;
  s.defer_icrc = cfg_.defer_icrc;
  s.ip_id = NextIpId(*q);
  s.src_mac = host_->config().mac;
  s.dst_mac = *mac;
  s.src_ip = host_->config().ip;
  s.dst_ip = q->remote_ip;
  s.sport = q->sport;
  s.dscp = q->dscp;
  s.ecn = 2;
  s.dest_qp = q->remote_qpn;
  bool retx = false;
  if (!q->reads.empty()) {
    // Responder side: READ response packets.
    Qp::ReadResp& r = q->reads.front();
    const uint32_t i = r.next++;
    s.psn = PsnAdd(r.first_psn, i);
    const uint64_t off = static_cast<uint64_t>(i) * q->mtu;
    s.payload_len = static_cast<uint32_t>(std::min<uint64_t>(q->mtu, r.len - std::min(r.len, off)));
    if (r.npkts == 1) {
      s.op = RoceOp::kReadResponseOnly;
    } else if (i == 0) {
      s.op = RoceOp::kReadResponseFirst;
    } else if (i + 1 == r.npkts) {
      s.op = RoceOp::kReadResponseLast;
    } else {
      s.op = RoceOp::kReadResponseMiddle;
    }
    s.syndrome = kAethAck;
    s.msn = q->msn;
    if (r.base != nullptr) s.payload = r.base + off;
    if (r.next == r.npkts) q->reads.pop_front();
  } else {
    uint32_t psn;
    if (!q->sr_retx.empty()) {
      psn = q->sr_retx.front();
      q->sr_retx.pop_front();
      retx = true;
    } else {
      psn = q->snd_nxt;
      retx = PsnDiff(psn, q->high) < 0;
    }
    Qp::Wqe* w = q->Find(psn);
    if (w == nullptr) return nullptr;  // acknowledged meanwhile
    const uint32_t i = static_cast<uint32_t>(PsnDiff(psn, w->first_psn));
    const uint64_t off = static_cast<uint64_t>(i) * q->mtu;
    const uint64_t len = w->wr.length;
    s.psn = psn;
    if (w->wr.op == WorkRequest::Op::kRead) {
      s.op = RoceOp::kReadRequest;
      s.va = w->wr.remote_va + off;
      s.rkey = w->wr.rkey;
      s.dma_len = static_cast<uint32_t>(len - std::min(len, off));
      s.ack_req = true;
      const uint32_t after = PsnAdd(w->last_psn(), 1);  // the request covers every response PSN
      if (PsnDiff(after, q->snd_nxt) > 0) q->snd_nxt = after;
    } else {
      const bool send = w->wr.op == WorkRequest::Op::kSend;
      s.payload_len = static_cast<uint32_t>(std::min<uint64_t>(q->mtu, len - std::min(len, off)));
      if (!w->wr.local.empty() && s.payload_len > 0) {
        s.payload = GatherPayload(w->wr, off, s.payload_len);
      }
      const bool first = i == 0, last = i + 1 == w->npkts;
      if (first && last) {
        s.op = send ? RoceOp::kSendOnly : RoceOp::kWriteOnly;
      } else if (first) {
        s.op = send ? RoceOp::kSendFirst : RoceOp::kWriteFirst;
      } else if (last) {
        s.op = send ? RoceOp::kSendLast : RoceOp::kWriteLast;
      } else {
        s.op = send ? RoceOp::kSendMiddle : RoceOp::kWriteMiddle;
      }
      if (first && !send) {
        s.va = w->wr.remote_va;
        s.rkey = w->wr.rkey;
        s.dma_len = static_cast<uint32_t>(len);
      }
      s.ack_req = last || (q->ack_req_every > 0 && (i + 1) % q->ack_req_every == 0);
      if (psn == q->snd_nxt) q->snd_nxt = PsnAdd(psn, 1);
    }
  }
  rte_mbuf* m = host_->Created(BuildRoce(host_->pool(), s));
  if (m == nullptr) {
    ++no_mbuf_;  // the pool is empty: nothing sent now, the QP tries again
    return nullptr;
  }
  if (PsnDiff(q->snd_nxt, q->high) > 0) q->high = q->snd_nxt;
  const int64_t wire = host_->wire().FrameBytes(m);
  ++q->tx_packets;
  if (tx_data_packets_++ == 0) first_data_tx_at_ = now;
  if (retx) {
    ++q->retx_packets;
    ++retransmitted_;
  }
  if (q->cc) {
    q->cc->OnBytesSent(wire, now);
    q->next_avail = std::max(q->next_avail, now) + TxTime(wire, std::max(q->cc->rate(), kBps));
  }
  if (s.op != RoceOp::kReadResponseFirst && s.op != RoceOp::kReadResponseMiddle &&
      s.op != RoceOp::kReadResponseLast && s.op != RoceOp::kReadResponseOnly) {
    if (q->rto_deadline == kTimeNever) ArmRto(q, now);
  }
  return m;
}

namespace {

// Copies `len` bytes into a scatter list at byte offset `off`; false if they do not fit.
bool Scatter(const std::vector<Sge>& sgl, uint64_t off, const uint8_t* src, uint64_t len) {
  for (const Sge& e : sgl) {
    if (len == 0) return true;
    if (off >= e.length) {
      off -= e.length;
      continue;
    }
    const uint64_t n = std::min<uint64_t>(len, e.length - off);
    std::memcpy(e.addr + off, src, n);
    src += n;
    len -= n;
    off = 0;
  }
  return len == 0;
}

}  // namespace

const uint8_t* Rnic::GatherPayload(const WorkRequest& wr, uint64_t off, uint32_t len) {
  for (const Sge& e : wr.local) {
    if (off >= e.length) {
      off -= e.length;
      continue;
    }
    if (off + len <= e.length) return e.addr + off;  // one element holds it: no copy
    break;
  }
  gather_.assign(len, 0);
  uint8_t* dst = gather_.data();
  uint64_t skip = off, left = len;
  for (const Sge& e : wr.local) {
    if (left == 0) break;
    if (skip >= e.length) {
      skip -= e.length;
      continue;
    }
    const uint64_t n = std::min<uint64_t>(left, e.length - skip);
    std::memcpy(dst, e.addr + skip, n);
    dst += n;
    left -= n;
    skip = 0;
  }
  return gather_.data();
}

void Rnic::OnFrame(Time now, rte_mbuf* m, const ParsedFrame& p) {
  RoceView v;
  const RoceParseError e = ParseRoce(m, p, &v);
  if (e != RoceParseError::kOk) {
    (e == RoceParseError::kBadIcrc ? bad_icrc_ : rx_other_)++;
    host_->Discard(m);
    return;
  }
  const bool pipeline = cfg_.rx_per_packet > 0 || cfg_.mtt_entries > 0 || now < stall_until_;
  if (!pipeline && rx_fifo_.empty()) {
    Process(now, m, v);
    host_->Consume(m);
    return;
  }
  const int64_t len = rte_pktmbuf_pkt_len(m);
  if (rx_bytes_ + len > cfg_.rx_buffer) {
    ++rx_buffer_drops_;
    host_->Discard(m);
    return;
  }
  rx_fifo_.Push(m);
  rx_bytes_ += len;
  UpdateRxPfc(now);
  RxPump(now);
}

Time Rnic::RxCost(const RoceView& v, Qp* q) {
  Time cost = cfg_.rx_per_packet;
  if (cfg_.mtt_entries > 0 && q != nullptr && v.payload_len > 0 && v.op != RoceOp::kAck) {
    // The page this packet's data lands in, per QP memory region (each QP its own MR).
    uint64_t va = q->resp_va;
    if (OpHasReth(v.op)) va = v.va;
    const uint64_t key =
        static_cast<uint64_t>(q->qpn) << 40 | (va / static_cast<uint64_t>(cfg_.page_size));
    if (mtt_.Touch(key)) {
      ++mtt_hits_;
    } else {
      ++mtt_misses_;
      cost += cfg_.mtt_miss_penalty;
    }
  }
  return cost;
}

void Rnic::RxPump(Time now) {
  while (!rx_fifo_.empty()) {
    if (now < stall_until_) {
      if (!rx_timer_pending_) {
        rx_timer_pending_ = true;
        host_->ScheduleRnicTimer(stall_until_, Cookie(TimerKind::kRxDone, 0));
      }
      return;
    }
    if (stall_since_ >= 0) stall_since_ = -1;
    if (rx_busy_until_ > now) {
      if (!rx_timer_pending_) {
        rx_timer_pending_ = true;
        host_->ScheduleRnicTimer(rx_busy_until_, Cookie(TimerKind::kRxDone, 0));
      }
      return;
    }
    rte_mbuf* m = rx_fifo_.Pop();
    rx_bytes_ -= rte_pktmbuf_pkt_len(m);
    ParsedFrame p;
    RoceView v;
    if (ParseFrame(m, &p) == ParseError::kOk && ParseRoce(m, p, &v) == RoceParseError::kOk) {
      Qp* q = v.op == RoceOp::kCnp || v.op == RoceOp::kAck ? nullptr : GetQp(v.dest_qp);
      rx_busy_until_ = now + RxCost(v, q);
      Process(now, m, v);
      host_->Consume(m);
    } else {
      host_->Discard(m);  // parsed when it was queued; defensive
    }
    UpdateRxPfc(now);
  }
}

void Rnic::StallRx(Time now, Time until) {
  stall_until_ = std::max(stall_until_, until);
  if (stall_since_ < 0) stall_since_ = now;
}

uint8_t Rnic::RxPauseMask() const {
  // The receive buffer is shared by every QP: pause each lossless priority data arrives on.
  const uint8_t m = data_prio_mask_ & host_->config().qos.lossless_mask;
  return m != 0 ? m : static_cast<uint8_t>(1 << data_prio_);
}

void Rnic::UpdateRxPfc(Time now) {
  if (cfg_.rx_xoff <= 0) return;
  // NIC watchdog: a pipeline stalled longer than the threshold stops generating pause.
  const bool stalled_long = cfg_.watchdog_enabled && stall_since_ >= 0 && now < stall_until_ &&
                            now - stall_since_ >= cfg_.watchdog;
  if (stalled_long && !pfc_suppressed_) {
    pfc_suppressed_ = true;
    ++watchdog_fired_;
    if (watchdog_fired_at_ < 0) watchdog_fired_at_ = now;
    if (xoff_) {
      xoff_ = false;
      host_->SendPfc(now, RxPauseMask(), 0);
      ++pfc_xon_sent_;
    }
  }
  if (pfc_suppressed_ && !(now < stall_until_)) pfc_suppressed_ = false;
  if (pfc_suppressed_) return;
  if (!xoff_ && rx_bytes_ > cfg_.rx_xoff) {
    xoff_ = true;
    host_->SendPfc(now, RxPauseMask(), cfg_.pause_quanta);
    ++pfc_xoff_sent_;
    if (!refresh_pending_) {
      refresh_pending_ = true;
      host_->ScheduleRnicTimer(now + PauseQuantaTime(cfg_.pause_quanta, line_rate_) / 2,
                               Cookie(TimerKind::kPfcRefresh, 0));
    }
  } else if (xoff_ && rx_bytes_ <= cfg_.rx_xon) {
    xoff_ = false;
    host_->SendPfc(now, RxPauseMask(), 0);
    ++pfc_xon_sent_;
  }
}

void Rnic::OnTimer(Time now, TimerKey key) {
  const uint32_t arg = key.arg;
  switch (key.kind_as<TimerKind>()) {
    case TimerKind::kRto: {
      Qp* q = GetQp(arg);
      if (q == nullptr) return;
      q->rto_timer_pending = false;
      if (q->error || q->rto_deadline == kTimeNever) return;
      if (now < q->rto_deadline) {  // moved later by progress: re-arm
        q->rto_timer_pending = true;
        host_->ScheduleRnicTimer(q->rto_deadline, Cookie(TimerKind::kRto, q->qpn));
        return;
      }
      OnRto(q, now);
      return;
    }
    case TimerKind::kDcqcnDec: {
      Qp* q = GetQp(arg);
      if (q == nullptr || !q->cc) return;
      const Time inc = q->cc->OnDecreaseTimer(now);
      if (inc != kTimeNever) host_->ScheduleRnicTimer(inc, Cookie(TimerKind::kDcqcnInc, q->qpn));
      return;
    }
    case TimerKind::kDcqcnInc: {
      Qp* q = GetQp(arg);
      if (q == nullptr || !q->cc) return;
      const Time inc = q->cc->OnIncreaseTimer(now);
      if (inc != kTimeNever) host_->ScheduleRnicTimer(inc, Cookie(TimerKind::kDcqcnInc, q->qpn));
      return;
    }
    case TimerKind::kRxDone:
      rx_timer_pending_ = false;
      RxPump(now);
      return;
    case TimerKind::kPost: {
      // Timers may fire late in real time; an early (superseded) one finds nothing due.
      if (post_timer_at_ < 0 || now < post_timer_at_) return;
      post_timer_at_ = -1;
      while (!posts_.empty() && posts_.begin()->first <= now) {
        auto [qpn, wr] = posts_.begin()->second;
        posts_.erase(posts_.begin());
        PostSend(now, qpn, wr);
      }
      if (!posts_.empty()) {
        post_timer_at_ = posts_.begin()->first;
        host_->ScheduleRnicTimer(post_timer_at_, Cookie(TimerKind::kPost, 0));
      }
      return;
    }
    case TimerKind::kPfcRefresh:
      refresh_pending_ = false;
      UpdateRxPfc(now);  // the NIC watchdog is evaluated here too: no frames arrive while paused
      if (xoff_ && !pfc_suppressed_) {
        host_->SendPfc(now, RxPauseMask(), cfg_.pause_quanta);
        ++pfc_xoff_sent_;
        refresh_pending_ = true;
        host_->ScheduleRnicTimer(now + PauseQuantaTime(cfg_.pause_quanta, line_rate_) / 2,
                                 Cookie(TimerKind::kPfcRefresh, 0));
      }
      return;
  }
}

void Rnic::OnRto(Qp* q, Time now) {
  const bool outstanding = PsnDiff(q->snd_nxt, q->snd_una) > 0 || !q->sr_retx.empty();
  if (!outstanding) {
    q->rto_deadline = kTimeNever;
    return;
  }
  ++timeouts_;
  last_timeout_at_ = now;
  if (++q->retries > q->retry_cnt) {
    FailQp(now, q, WorkCompletion::Status::kRetryExceeded);
    return;
  }
  q->sr_retx.clear();
  uint32_t from = q->snd_una;
  if (q->recovery == LossRecovery::kGoBack0) {
    if (Qp::Wqe* w = q->Find(q->snd_una)) from = w->first_psn;
  }
  q->snd_nxt = from;
  q->rto_deadline = kTimeNever;  // re-armed by the retransmission
  Activate(q);
}

void Rnic::FailQp(Time now, Qp* q, WorkCompletion::Status first) {
  q->error = true;
  bool first_done = false;
  for (const auto& w : q->sq) {
    WorkCompletion wc;
    wc.wr_id = w.wr.wr_id;
    wc.qpn = q->qpn;
    wc.op = w.wr.op;
    wc.status = first_done ? WorkCompletion::Status::kFlushed : first;
    first_done = true;
    wc.posted = w.posted;
    wc.completed = now;
    Complete(now, q, wc);
  }
  q->sq.clear();
  q->sr_retx.clear();
  q->reads.clear();
  q->rto_deadline = kTimeNever;
  while (!q->rq.empty()) CompleteRecv(now, q, WorkCompletion::Status::kFlushed, 0);
}

void Rnic::CompleteWqes(Time now, Qp* q) {
  while (!q->sq.empty() && PsnDiff(q->sq.front().last_psn(), q->snd_una) < 0) {
    const Qp::Wqe w = std::move(q->sq.front());  // its gather list and owned bytes move too
    q->sq.pop_front();
    ++q->completed;
    WorkCompletion wc;
    wc.wr_id = w.wr.wr_id;
    wc.qpn = q->qpn;
    wc.op = w.wr.op;
    wc.bytes = w.wr.length;
    wc.posted = w.posted;
    wc.completed = now;
    Complete(now, q, wc);
  }
}

void Rnic::AckUpTo(Time now, Qp* q, uint32_t psn) {
  const uint32_t una = PsnAdd(psn, 1);
  if (PsnDiff(una, q->snd_una) <= 0) return;  // nothing new
  if (PsnDiff(una, q->snd_nxt) > 0) return;   // acknowledges what we never sent: ignore
  q->snd_una = una;
  q->retries = 0;
  q->rnr_retries = 0;
  while (!q->sr_retx.empty() && PsnDiff(q->sr_retx.front(), una) < 0) q->sr_retx.pop_front();
  CompleteWqes(now, q);
  if (PsnDiff(q->snd_nxt, q->snd_una) > 0) {
    q->rto_deadline = now + RnicConfig::Timeout(q->timeout_exp);  // restart on progress
  } else {
    q->rto_deadline = kTimeNever;
  }
  Activate(q);
}

void Rnic::OnNak(Time now, Qp* q, const RoceView& v) {
  AckUpTo(now, q, PsnAdd(v.psn, -1));  // everything before the NAKed PSN arrived
  if ((v.syndrome & kAethNakMask) == kAethRnrNak) {
    // Receiver not ready (IBTA vol. 1 9.7.5.2.8): resend from that PSN after its timer.
    ++rnr_naks_received_;
    if (q->rnr_retry != 7 && ++q->rnr_retries > q->rnr_retry) {
      FailQp(now, q, WorkCompletion::Status::kRnrRetryExceeded);
      return;
    }
    if (PsnDiff(v.psn, q->snd_nxt) < 0) q->snd_nxt = v.psn;
    q->next_avail = std::max(q->next_avail, now + RnrTimerValue(v.syndrome & 31));
    Activate(q);
    return;
  }
  switch (v.syndrome) {
    case kAethNakInvalidRequest:
      FailQp(now, q, WorkCompletion::Status::kRemoteInvalidRequest);
      return;
    case kAethNakRemoteAccess:
      FailQp(now, q, WorkCompletion::Status::kRemoteAccessError);
      return;
    default:
      FailQp(now, q, WorkCompletion::Status::kRemoteOperationalError);
      return;
  }
}

void Rnic::ScatterReadResponse(Qp* q, const RoceView& v, const uint8_t* payload) {
  Qp::Wqe* w = q->Find(v.psn);
  if (w == nullptr || w->wr.local.empty() || v.payload_len == 0) return;
  const uint64_t off = static_cast<uint64_t>(PsnDiff(v.psn, w->first_psn)) * q->mtu;
  Scatter(w->wr.local, off, payload, v.payload_len);
}

void Rnic::RequesterRx(Time now, Qp* q, const RoceView& v, const uint8_t* payload) {
  if (v.op == RoceOp::kAck) {
    const uint8_t cls = v.syndrome & kAethNakMask;
    if (cls == kAethRnrNak || (cls == kAethNakPsnSeqErr && v.syndrome != kAethNakPsnSeqErr)) {
      OnNak(now, q, v);
      return;
    }
    if (v.syndrome == kAethNakPsnSeqErr) {
      // NAK: everything before the expected PSN arrived.
      const uint32_t e = v.psn;
      AckUpTo(now, q, PsnAdd(e, -1));
      if (q->recovery == LossRecovery::kSelectiveRepeat) {
        if (std::find(q->sr_retx.begin(), q->sr_retx.end(), e) == q->sr_retx.end() &&
            PsnDiff(e, q->snd_nxt) < 0) {
          q->sr_retx.push_back(e);
        }
      } else {
        // Go-back-N resends from the expected PSN; with go-back-0 the responder has already
        // reset its expected PSN to the message start, so both restart the message.
        if (PsnDiff(e, q->snd_nxt) < 0) {
          q->snd_nxt = e;
          if (PsnDiff(q->snd_una, e) > 0) q->snd_una = e;
        }
      }
      Activate(q);
      return;
    }
    AckUpTo(now, q, v.psn);
    return;
  }
  // READ responses: in-order responses acknowledge their PSN.
  const int32_t d = PsnDiff(v.psn, q->snd_una);
  if (d == 0) {
    ScatterReadResponse(q, v, payload);
    AckUpTo(now, q, v.psn);
  } else if (d > 0) {
    // A response was lost: re-request from the first missing PSN.
    ++ooo_;
    if (PsnDiff(q->snd_una, q->snd_nxt) < 0) {
      q->snd_nxt = q->snd_una;
      Activate(q);
    }
  } else {
    ++duplicates_;
  }
}

void Rnic::CompleteRecv(Time now, Qp* q, WorkCompletion::Status status, uint64_t bytes) {
  WorkCompletion wc;
  wc.wr_id = q->rq.front().wr_id;
  wc.qpn = q->qpn;
  wc.src_qp = q->remote_qpn;
  wc.op = WorkRequest::Op::kRecv;
  wc.status = status;
  wc.bytes = bytes;
  wc.completed = now;
  q->rq.pop_front();
  Complete(now, q, wc);
}

void Rnic::MessageArrived(Time now, Qp* q) {
  ++q->msn;
  if (q->msg_is_send && q->receive_queue && !q->rq.empty()) {
    CompleteRecv(now, q, WorkCompletion::Status::kSuccess, q->msg_bytes);
  }
  if (q->on_arrival) {
    q->on_arrival(now, q->qpn, q->msg_bytes);
  } else if (on_arrival_) {
    on_arrival_(now, q->qpn, q->msg_bytes);
  }
  q->msg_start = q->epsn;
  q->msg_bytes = 0;
}

void Rnic::ResponderError(Time now, Qp* q, uint8_t syndrome, uint32_t psn) {
  if (syndrome == kAethNakRemoteAccess) ++remote_access_naks_sent_;
  SendAck(now, q, syndrome, psn);
  FailQp(now, q, WorkCompletion::Status::kFlushed);
}

bool Rnic::ResponderPlace(Time now, Qp* q, const RoceView& v, const uint8_t* payload) {
  const bool send = v.op <= RoceOp::kSendOnly;
  if (OpIsFirstOrOnly(v.op)) {
    q->msg_is_send = send;
    if (send && q->receive_queue && q->rq.empty()) {
      ++rnr_naks_sent_;
      SendAck(now, q, static_cast<uint8_t>(kAethRnrNak | q->min_rnr_timer), v.psn);
      return false;
    }
    if (!send && q->memory != nullptr) {
      q->resp_len = v.dma_len;
      q->resp_ptr = v.dma_len == 0
                        ? nullptr
                        : q->memory->Resolve(v.rkey, v.va, v.dma_len, RnicMemory::kRemoteWrite);
      if (q->resp_ptr == nullptr && v.dma_len > 0) {
        ResponderError(now, q, kAethNakRemoteAccess, v.psn);
        return false;
      }
    }
  }
  if (v.payload_len == 0) return true;
  if (send && q->receive_queue) {
    RecvRequest& r = q->rq.front();
    if (!Scatter(r.local, q->msg_bytes, payload, v.payload_len)) {
      CompleteRecv(now, q, WorkCompletion::Status::kLocalLengthError, 0);
      ResponderError(now, q, kAethNakInvalidRequest, v.psn);
      return false;
    }
  } else if (!send && q->memory != nullptr) {
    if (q->msg_bytes + v.payload_len > q->resp_len) {
      ResponderError(now, q, kAethNakInvalidRequest, v.psn);  // more than the RETH's length
      return false;
    }
    std::memcpy(q->resp_ptr + q->msg_bytes, payload, v.payload_len);
  }
  return true;
}

void Rnic::ResponderRx(Time now, Qp* q, const RoceView& v, const uint8_t* payload) {
  ++rx_data_packets_;
  const int32_t d = PsnDiff(v.psn, q->epsn);
  const bool is_read = v.op == RoceOp::kReadRequest;
  if (d < 0) {
    ++duplicates_;
    if (is_read) {
      // Re-execute the READ from the requested PSN (its responses were lost).
      const uint32_t n =
          static_cast<uint32_t>((std::max<uint32_t>(v.dma_len, 1) + q->mtu - 1) / q->mtu);
      const uint8_t* base =
          q->memory == nullptr || v.dma_len == 0
              ? nullptr
              : q->memory->Resolve(v.rkey, v.va, v.dma_len, RnicMemory::kRemoteRead);
      if (q->memory != nullptr && base == nullptr && v.dma_len > 0) return;  // NAKed before
      q->reads.push_back(Qp::ReadResp{v.psn, n, v.dma_len, base});
      Activate(q);
      return;
    }
    SendAck(now, q, kAethAck, PsnAdd(q->epsn, -1));  // duplicate: re-ACK (C9-110)
    return;
  }
  if (d > 0) {
    ++ooo_;
    if (q->recovery == LossRecovery::kGoBack0) {
      q->epsn = q->msg_start;  // drop the partial message (ns3-rdma L2BackToZero)
    }
    if (q->recovery == LossRecovery::kSelectiveRepeat && !is_read && d < (1 << 16)) {
      if (q->ooo.empty()) q->ooo_base = q->epsn;
      q->ooo.emplace(PsnDiff(v.psn, q->ooo_base), Qp::OooPkt{OpIsLastOrOnly(v.op), v.payload_len});
    }
    if (q->last_nak != q->epsn) {
      q->last_nak = q->epsn;
      SendAck(now, q, kAethNakPsnSeqErr, q->epsn);
      if (cfg_.dcqcn && cfg_.dcqcn_cfg.cnp_on_ooo &&
          now - q->last_cnp >= cfg_.dcqcn_cfg.cnp_interval) {
        SendCnp(now, q);
        ++cnps_sent_ooo_;
      }
    }
    return;
  }
  // In order: a later sequence error may be NAKed again, even for the same expected PSN.
  q->last_nak = UINT32_MAX;
  if (OpIsFirstOrOnly(v.op)) {
    q->msg_start = v.psn;
    q->msg_bytes = 0;
    if (OpHasReth(v.op)) q->resp_va = v.va;
  }
  if (is_read) {
    const uint32_t n =
        static_cast<uint32_t>((std::max<uint32_t>(v.dma_len, 1) + q->mtu - 1) / q->mtu);
    const uint8_t* base = nullptr;
    if (q->memory != nullptr && v.dma_len > 0) {
      base = q->memory->Resolve(v.rkey, v.va, v.dma_len, RnicMemory::kRemoteRead);
      if (base == nullptr) {
        ResponderError(now, q, kAethNakRemoteAccess, v.psn);
        return;
      }
    }
    q->reads.push_back(Qp::ReadResp{v.psn, n, v.dma_len, base});
    q->epsn = PsnAdd(v.psn, n);
    q->msg_start = q->epsn;
    ++q->msn;
    Activate(q);
    return;
  }
  if ((q->memory != nullptr || q->receive_queue) && !ResponderPlace(now, q, v, payload)) return;
  q->resp_va += v.payload_len;
  q->msg_bytes += v.payload_len;
  bool last = OpIsLastOrOnly(v.op);
  q->epsn = PsnAdd(v.psn, 1);
  if (last) MessageArrived(now, q);
  // Selective repeat: consume buffered packets that are now in order (entries behind epsn, if
  // any, are stale and dropped).
  if (!q->ooo.empty()) {
    int32_t next = PsnDiff(q->epsn, q->ooo_base);
    while (!q->ooo.empty() && q->ooo.begin()->first < next) q->ooo.erase(q->ooo.begin());
    while (!q->ooo.empty() && q->ooo.begin()->first == next) {
      const Qp::OooPkt pkt = q->ooo.begin()->second;
      q->ooo.erase(q->ooo.begin());
      q->msg_bytes += pkt.bytes;
      q->epsn = PsnAdd(q->epsn, 1);
      ++next;
      if (pkt.last) MessageArrived(now, q);
    }
    if (!q->ooo.empty() && q->last_nak != q->epsn) {  // the next hole: ask for it now
      q->last_nak = q->epsn;
      SendAck(now, q, kAethNakPsnSeqErr, q->epsn);
      return;
    }
  }
  if (++q->unacked >= cfg_.ack_every || v.ack_req) {
    q->unacked = 0;
    SendAck(now, q, kAethAck, PsnAdd(q->epsn, -1));
  }
}

void Rnic::Process(Time now, rte_mbuf* m, const RoceView& v) {
  if (v.op == RoceOp::kCnp) {
    ++cnps_received_;
    Qp* q = GetQp(v.dest_qp);
    if (q == nullptr || !q->cc) return;
    const Time due = q->cc->OnCnp(now);
    if (due != kTimeNever) host_->ScheduleRnicTimer(due, Cookie(TimerKind::kDcqcnDec, q->qpn));
    return;
  }
  Qp* q = GetQp(v.dest_qp);
  if (q == nullptr || q->error || !q->connected) {
    ++rx_other_;
    return;
  }
  const uint8_t* payload = rte_pktmbuf_mtod(m, const uint8_t*) + v.payload_offset;
  // DCQCN notification point: a CNP back to the sender for every CE-marked packet (at most one
  // per cnp_interval per QP), whatever its opcode, so READ responses arriving at the requester
  // slow the responder as WRITEs arriving at the responder slow the requester.
  const bool ce = (v.tos & 3) == 3;
  if (ce && cfg_.dcqcn && now - q->last_cnp >= cfg_.dcqcn_cfg.cnp_interval) SendCnp(now, q);
  switch (v.op) {
    case RoceOp::kAck:
    case RoceOp::kReadResponseFirst:
    case RoceOp::kReadResponseMiddle:
    case RoceOp::kReadResponseLast:
    case RoceOp::kReadResponseOnly:
      RequesterRx(now, q, v, payload);
      return;
    default:
      ResponderRx(now, q, v, payload);
      return;
  }
}

void Rnic::SendAck(Time now, Qp* q, uint8_t syndrome, uint32_t psn) {
  RoceFrameSpec s;
  s.defer_icrc = cfg_.defer_icrc;
  s.ip_id = NextIpId(*q);
  s.src_mac = host_->config().mac;
  s.src_ip = host_->config().ip;
  s.dst_ip = q->remote_ip;
  s.sport = q->sport;
  s.dscp = q->ack_dscp;
  s.ecn = 0;
  s.op = RoceOp::kAck;
  s.dest_qp = q->remote_qpn;
  s.psn = psn;
  s.syndrome = syndrome;
  s.msn = q->msn;
  rte_mbuf* m = host_->Created(BuildRoce(host_->pool(), s));
  if (m == nullptr) {
    ++no_mbuf_;
    return;
  }
  if ((syndrome & kAethNakMask) == kAethNakPsnSeqErr) {
    ++naks_sent_;  // every NAK code; RNR NAKs count as rnr_naks_sent
  } else {
    ++acks_sent_;
  }
  host_->SendFrame(now, m, q->remote_ip, host_->config().qos.dscp_to_tc[s.dscp & 63]);
}

void Rnic::SendCnp(Time now, Qp* q) {
  RoceFrameSpec s;
  s.defer_icrc = cfg_.defer_icrc;
  s.ip_id = NextIpId(*q);
  s.src_mac = host_->config().mac;
  s.src_ip = host_->config().ip;
  s.dst_ip = q->remote_ip;
  s.sport = q->sport;
  s.dscp = cfg_.cnp_dscp;
  s.ecn = 0;
  s.op = RoceOp::kCnp;
  s.becn = true;
  s.dest_qp = q->remote_qpn;
  s.psn = 0;
  rte_mbuf* m = host_->Created(BuildRoce(host_->pool(), s));
  if (m == nullptr) {
    ++no_mbuf_;
    return;
  }
  q->last_cnp = now;
  ++cnps_sent_;
  host_->SendFrame(now, m, q->remote_ip, host_->config().qos.dscp_to_tc[cfg_.cnp_dscp & 63]);
}

nlohmann::json Rnic::Stats(Time now) const {
  (void)now;
  return {{"qps", qps_.size()},
          {"tx_data_packets", tx_data_packets_},
          {"first_data_tx_ps", first_data_tx_at_},
          {"rx_data_packets", rx_data_packets_},
          {"retransmitted", retransmitted_},
          {"timeouts", timeouts_},
          {"acks_sent", acks_sent_},
          {"naks_sent", naks_sent_},
          {"rnr_naks_sent", rnr_naks_sent_},
          {"rnr_naks_received", rnr_naks_received_},
          {"remote_access_naks_sent", remote_access_naks_sent_},
          {"duplicates", duplicates_},
          {"out_of_order", ooo_},
          {"cnps_sent", cnps_sent_},
          {"cnps_sent_out_of_order", cnps_sent_ooo_},
          {"cnps_received", cnps_received_},
          {"bad_icrc", bad_icrc_},
          {"pfc_xoff_sent", pfc_xoff_sent_},
          {"pfc_xon_sent", pfc_xon_sent_},
          {"rx_buffer_drops", rx_buffer_drops_},
          {"no_mbuf", no_mbuf_},
          {"mtt_hits", mtt_hits_},
          {"mtt_misses", mtt_misses_},
          {"watchdog_fired", watchdog_fired_}};
}

}  // namespace rocefab

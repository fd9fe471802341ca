#pragma once
/// @file rnic.h
/// Rnic: the emulated RoCEv2 RNIC engine of a host (EmulatedHost owns one). It speaks the real wire
/// protocol (roce_headers.h) and implements:
///  - RC queue pairs (IBTA vol. 1 ch. 9): SEND, RDMA WRITE and RDMA READ segmented at the path
///    MTU; 24-bit PSNs with wrap; the responder ACKs on AckReq and at least every `ack_every`
///    packets (ACK coalescing), re-ACKs duplicates, NAKs a PSN sequence error once per expected
///    PSN; READ requests consume one PSN per response packet; local ACK timeout of
///    4.096 us x 2^timeout_exp with retry_cnt retries, then a retry-exceeded completion and the
///    QP in the error state.
///  - loss recovery per QP: go-back-0 (responder and requester restart the message: the
///    Microsoft livelock), go-back-N (resend from the NAKed PSN), selective repeat (responder
///    keeps out-of-order packets, requester resends only the NAKed PSN).
///  - DCQCN (dcqcn.h): notification point (a CNP per QP at most every cnp_interval on a CE-marked
///    packet of any opcode, READ responses included; optionally on out-of-order arrival) and
///    reaction point (per-QP pacing at the DCQCN rate).
///  - a receive pipeline with a receive buffer and PFC generation from its occupancy, a per-packet
///    cost and an MTT translation cache (LRU of `mtt_entries` pages of `page_size`; a miss costs
///    `mtt_miss_penalty`), a stall hook (pause storm) and the NIC-side PFC watchdog.
///  - perftest-style apps (bw and lat) and flow workloads with FCT (rnic_apps in this file).
/// The engine never reads a clock; all times come from the host's calls.

#include <rte_mbuf.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/mbuf_fifo.h"
#include "common/time.h"
#include "common/timer_key.h"
#include "common/wire/headers.h"
#include "common/wire/roce_headers.h"
#include "nic-emu/dcqcn.h"
#include "nic-emu/mtt_cache.h"

namespace rocefab {

class EmulatedHost;

enum class LossRecovery : uint8_t { kGoBack0, kGoBackN, kSelectiveRepeat };
const char* LossRecoveryName(LossRecovery r);

struct RnicConfig {
  uint32_t mtu = 1024;   ///< payload bytes per packet (IB path MTU 256..4096)
  int ack_every = 1;     ///< responder ACKs at least every N in-order packets
  int timeout_exp = 14;  ///< local ACK timeout = 4.096 us x 2^timeout_exp (1..31)
  int retry_cnt = 7;     ///< retries before a retry-exceeded completion (0..7)
  LossRecovery recovery = LossRecovery::kGoBackN;
  bool dcqcn = true;
  DcqcnConfig dcqcn_cfg;
  uint8_t data_dscp = 26;  ///< data (the QP's traffic class)
  int ack_dscp = -1;       ///< ACK/NAK DSCP; -1 = the data DSCP (as a QP's traffic class)
  uint8_t cnp_dscp = 48;
  int64_t max_inflight_bytes = 0;  ///< per-QP window; 0 = none (rate-based, as DCQCN NICs)
  // Receive pipeline and PFC generation (0 = not modelled: frames are processed on arrival).
  Time rx_per_packet = 0;         ///< processing time per received RoCE frame
  int64_t rx_buffer = 256 << 10;  ///< receive buffer bytes; frames beyond it are dropped
  int64_t rx_xoff = 0;            ///< send PFC XOFF above this occupancy (0 = never)
  int64_t rx_xon = 0;             ///< send XON at or below this occupancy
  uint16_t pause_quanta = 0xFFFF;
  int mtt_entries = 0;  ///< MTT cache entries (0 = no translation model)
  int64_t page_size = 4096;
  Time mtt_miss_penalty = 1 * kUs;
  Time watchdog = 100 * kMs;  ///< stop generating pause after the pipeline stalled this long
  bool watchdog_enabled = true;
  /// Build frames with RoceFrameSpec::defer_icrc (FabricOptions::defer_icrc, both runners).
  bool defer_icrc = false;
  /// IPv4 identification of every frame a QP sends: false, a counter per NIC (as Linux and
  /// RNICs number datagrams); true, the QP's own constant QpOptions::ip_id. The reference
  /// simulator's compat model carries the peer's port of its per-flow port numbering there, so
  /// that its ECMP hash can be drawn from the frame (switch/ecmp.h).
  bool ip_id_per_qp = false;

  static Time Timeout(int exp) { return static_cast<Time>(4096) * kNs * (int64_t{1} << exp); }
};

/// One scatter/gather element in host memory: a verbs provider's SGE after its lkey check
/// (IBTA vol. 1 10.7.1).
struct Sge {
  uint8_t* addr = nullptr;
  uint32_t length = 0;  ///< bytes
};

/// The memory a QP's peer reaches through rkeys: a protection domain's registered regions.
/// QPs without one (the built-in perftest-style apps) send zeros and store nothing.
class RnicMemory {
 public:
  enum Access : uint8_t { kRemoteWrite = 1, kRemoteRead = 2 };
  virtual ~RnicMemory() = default;
  /// Host address of [va, va + len) if a region with this rkey covers it and allows `access`;
  /// nullptr otherwise (the responder NAKs with a remote access error, IBTA vol. 1 9.7.5.2.5).
  virtual uint8_t* Resolve(uint32_t rkey, uint64_t va, uint64_t len, Access access) = 0;
};

/// IBTA vol. 1 table 45: the RNR NAK timer field (0..31) in picoseconds (0 = 655.36 ms).
Time RnrTimerValue(int code);

/// Per-QP settings that override the NIC's (RnicConfig) for one QP, as an application sets them
/// with ibv_modify_qp (traffic class, timeout, retry_cnt) or a driver picks them (UDP source
/// port). -1 / 0 = the NIC's value.
struct QpOptions {
  int dscp = -1;           ///< data DSCP (0..63): the QP's traffic class (GRH traffic class >> 2)
  int ack_dscp = -1;       ///< ACK/NAK DSCP (0..63); -1: RnicConfig::ack_dscp, else the data DSCP
  uint16_t udp_sport = 0;  ///< RoCEv2 UDP source port (1..65535); 0: hashed from the QPN
  /// IPv4 identification of the QP's frames when RnicConfig::ip_id_per_qp (0..65535).
  uint16_t ip_id = 0;
  int timeout_exp = -1;  ///< local ACK timeout exponent (1..31), IBTA vol. 1 9.7.6.1.3
  int retry_cnt = -1;    ///< retries before IBV_WC_RETRY_EXC_ERR (0..7)
  /// Requester sets BTH AckReq on the last packet of each message and on every Nth packet
  /// (1..2^24); -1: 64 (rdma_rxe RXE_MAX_PKT_PER_ACK); 0: on last packets only.
  int ack_req_every = -1;
  /// Memory behind rkeys and work requests (a verbs provider's PD); nullptr: zeros, nothing
  /// stored. QPs with memory use go-back-N even where the NIC is set to selective repeat (the
  /// model buffers no out-of-order payload).
  RnicMemory* memory = nullptr;
  uint32_t mtu = 0;  ///< path MTU (256, 512, 1024, 2048, 4096 payload bytes); 0: RnicConfig::mtu
  /// SENDs consume receive requests (PostRecv) and an empty receive queue answers RNR NAK;
  /// false: every SEND is accepted (the built-in apps post no receives).
  bool receive_queue = false;
  int min_rnr_timer = 12;  ///< responder's RNR NAK timer code (table 45; 12 = 0.64 ms)
  int rnr_retry = 7;       ///< requester's RNR retries (0..7; 7 = infinite)
};

struct WorkRequest {
  enum class Op : uint8_t { kSend, kWrite, kRead, kRecv };
  Op op = Op::kWrite;
  uint64_t wr_id = 0;
  uint64_t length = 0;
  uint64_t remote_va = 0;
  uint32_t rkey = 0x1234;
  /// Gather list (SEND, WRITE) or scatter list (READ) summing to `length`; empty: no memory.
  std::vector<Sge> local;
  /// Bytes the request owns (inline data copied at post time); `local` may point into them.
  std::shared_ptr<const void> owned;
};

/// A receive request (ibv_post_recv): SENDs arriving at the QP are scattered into `local`.
struct RecvRequest {
  uint64_t wr_id = 0;
  std::vector<Sge> local;
};

struct WorkCompletion {
  /// The verbs completion statuses the engine produces (enum ibv_wc_status).
  enum class Status : uint8_t {
    kSuccess,
    kRetryExceeded,           ///< IBV_WC_RETRY_EXC_ERR: local ACK timeout retry_cnt + 1 times
    kFlushed,                 ///< IBV_WC_WR_FLUSH_ERR: outstanding when the QP went to error
    kRemoteAccessError,       ///< IBV_WC_REM_ACCESS_ERR: the responder NAKed an rkey or range
    kRemoteInvalidRequest,    ///< IBV_WC_REM_INV_REQ_ERR: e.g. a SEND longer than the receive
    kRemoteOperationalError,  ///< IBV_WC_REM_OP_ERR
    kRnrRetryExceeded,        ///< IBV_WC_RNR_RETRY_EXC_ERR: no receive posted, rnr_retry used up
    kLocalLengthError,        ///< IBV_WC_LOC_LEN_ERR: a received SEND overflowed the receive
  };
  uint64_t wr_id = 0;
  uint32_t qpn = 0;
  uint32_t src_qp = 0;  ///< receive completions: the sender's QPN
  Status status = Status::kSuccess;
  WorkRequest::Op op = WorkRequest::Op::kWrite;
  uint64_t bytes = 0;
  Time posted = 0, completed = 0;
};
const char* WcStatusName(WorkCompletion::Status s);

class Rnic {
 public:
  /// Completion and message-arrival callbacks (apps).
  using CompletionFn = std::function<void(Time now, const WorkCompletion& wc)>;
  using ArrivalFn = std::function<void(Time now, uint32_t qpn, uint64_t bytes)>;

  Rnic(EmulatedHost* host, const RnicConfig& cfg, BitRate line_rate);
  ~Rnic();

  const RnicConfig& config() const { return cfg_; }
  /// Creates an RC QP (RTS) towards (remote_ip, remote_qpn) with `opt` overriding the NIC's
  /// settings. Returns its QPN (>= 1).
  uint32_t CreateQp(Ipv4 remote_ip, uint32_t remote_qpn, uint32_t initial_psn,
                    uint32_t remote_initial_psn, const QpOptions& opt = {});
  /// Reserves the next QPN without creating it (for out-of-band connection setup).
  uint32_t NextQpn() const { return qpn_base_ + static_cast<uint32_t>(qps_.size()) + 1; }
  /// QPNs are qpn_base + 1, + 2, ... (a verbs process offsets them so that two processes on one
  /// host never share a QPN). Set before the first QP; base + count must stay below 2^24.
  void SetQpnBase(uint32_t base) { qpn_base_ = base; }
  /// A verbs QP's life (IBTA vol. 1 10.3.1): Allocate in RESET (a QPN, no traffic), Connect at
  /// RTR (peer, expected PSN; the responder runs), StartSending at RTS (send PSN, timeout,
  /// retries). Close drops everything without completions and ignores the QPN from then on.
  uint32_t AllocateQp();
  bool ConnectQp(uint32_t qpn, Ipv4 remote_ip, uint32_t remote_qpn, uint32_t remote_initial_psn,
                 const QpOptions& opt);
  bool StartSending(uint32_t qpn, uint32_t initial_psn, int timeout_exp, int retry_cnt,
                    int rnr_retry);
  void CloseQp(uint32_t qpn);
  /// Moves the QP to the error state: every outstanding send and receive request completes
  /// with IBV_WC_WR_FLUSH_ERR (ibv_modify_qp to IBV_QPS_ERR).
  void FlushQp(Time now, uint32_t qpn);
  /// Posts a receive request (QPs with QpOptions::receive_queue). False if the QP is in error.
  bool PostRecv(Time now, uint32_t qpn, RecvRequest r);
  void SetRecovery(uint32_t qpn, LossRecovery r);
  /// Posts a work request now. False if the QP is in the error state.
  bool PostSend(Time now, uint32_t qpn, const WorkRequest& wr);
  /// Posts a work request at `at` (>= now).
  void PostAt(Time at, uint32_t qpn, const WorkRequest& wr);
  /// Handlers for every QP without its own (SetQpHandlers).
  void SetCompletionHandler(CompletionFn fn) { on_completion_ = std::move(fn); }
  void SetArrivalHandler(ArrivalFn fn) { on_arrival_ = std::move(fn); }
  /// Handlers for one QP: completions of its requests, and arrivals of whole messages at it.
  void SetQpHandlers(uint32_t qpn, CompletionFn on_completion, ArrivalFn on_arrival);
  bool qp_error(uint32_t qpn) const;

  // --- host side ---
  /// A RoCEv2 frame arrived (UDP 4791); the engine owns it.
  void OnFrame(Time now, rte_mbuf* m, const ParsedFrame& p);
  /// The NIC's default data priority (RnicConfig::data_dscp's TC).
  uint8_t data_priority() const { return data_prio_; }
  /// Bit p set: some QP sends data at priority p (the default priority always).
  uint8_t data_priority_mask() const { return data_prio_mask_; }
  /// Next data frame of a QP whose data priority is `prio` to put on the wire, or nullptr;
  /// *wake gets the earliest time a paced QP becomes ready (unchanged if none).
  rte_mbuf* PullData(Time now, uint8_t prio, Time* wake);
  void OnTimer(Time now, TimerKey key);
  /// Fault hook: the receive pipeline processes nothing until `until`.
  void StallRx(Time now, Time until);

  /// Counters as JSON; "first_data_tx_ps" is when the first data packet left (ps, -1: none),
  /// the start the runners align when they compare a real program with its stand-in.
  nlohmann::json Stats(Time now) const;
  Time first_data_tx_at() const { return first_data_tx_at_; }
  uint64_t bad_icrc() const { return bad_icrc_; }
  uint64_t pfc_xoff_sent() const { return pfc_xoff_sent_; }
  uint64_t cnps_sent() const { return cnps_sent_; }
  /// CNPs sent because a data packet arrived out of order (dcqcn cnp_on_ooo), a subset of
  /// cnps_sent(); the reference ConWeave simulator counts these separately.
  uint64_t cnps_sent_out_of_order() const { return cnps_sent_ooo_; }
  /// Data packets (or READ responses) that arrived ahead of the expected PSN.
  uint64_t out_of_order() const { return ooo_; }
  uint64_t cnps_received() const { return cnps_received_; }
  uint64_t retransmitted() const { return retransmitted_; }
  uint64_t timeouts() const { return timeouts_; }
  uint64_t rx_buffer_drops() const { return rx_buffer_drops_; }
  /// Frames waiting in the receive pipeline (for the host's frame balance).
  size_t rx_pipeline_frames() const { return rx_fifo_.size(); }
  int64_t rx_buffer_bytes() const { return rx_bytes_; }
  /// Time of the last retransmission timeout (for tests).
  Time last_timeout_at() const { return last_timeout_at_; }
  BitRate qp_rate(uint32_t qpn) const;
  /// DCQCN reaction-point state of one QP (for traces).
  struct CcSample {
    uint32_t qpn = 0;
    BitRate rate, target;  ///< current (RC) and target (RT) rate, bits/s
    double alpha = 1;
  };
  /// One sample per QP with DCQCN state, reading nothing that changes the run.
  std::vector<CcSample> CcSamples(Time now) const;
  /// The RoCEv2 UDP source port of a QP (0 if unknown).
  uint16_t qp_sport(uint32_t qpn) const;
  /// When the NIC watchdog first stopped pause generation (-1: never).
  Time watchdog_fired_at() const { return watchdog_fired_at_; }

 private:
  struct Qp;
  struct ReadResp;
  /// Timer kinds (TimerKey::kind; arg: the QPN for kRto, kDcqcnDec and kDcqcnInc).
  enum class TimerKind : uint8_t {
    kRto = 1,
    kDcqcnDec = 2,
    kDcqcnInc = 3,
    kRxDone = 4,
    kPost = 5,
    kPfcRefresh = 6,
  };
  static TimerKey Cookie(TimerKind k, uint32_t arg) { return TimerKey::Of(k, arg); }

  Qp* GetQp(uint32_t qpn);
  const Qp* FindQp(uint32_t qpn) const;
  void Activate(Qp* q);
  rte_mbuf* BuildNext(Qp* q, Time now);
  void ArmRto(Qp* q, Time now);
  void OnRto(Qp* q, Time now);
  void Process(Time now, rte_mbuf* m, const RoceView& v);
  void RequesterRx(Time now, Qp* q, const RoceView& v, const uint8_t* payload);
  void ResponderRx(Time now, Qp* q, const RoceView& v, const uint8_t* payload);
  void AckUpTo(Time now, Qp* q, uint32_t psn);  // everything up to and including psn acked
  void CompleteWqes(Time now, Qp* q);
  void Complete(Time now, Qp* q, const WorkCompletion& wc);
  void FailQp(Time now, Qp* q, WorkCompletion::Status first);
  void OnNak(Time now, Qp* q, const RoceView& v);
  /// Responder: a NAK other than a sequence error ends the QP (rdma_rxe: the QP goes to error).
  void ResponderError(Time now, Qp* q, uint8_t syndrome, uint32_t psn);
  /// Completes the head receive request of `q` (IBV_WC_RECV) with `status` and `bytes`.
  void CompleteRecv(Time now, Qp* q, WorkCompletion::Status status, uint64_t bytes);
  /// A whole message arrived in order: MSN, the receive completion for a SEND, the arrival hook.
  void MessageArrived(Time now, Qp* q);
  bool ResponderPlace(Time now, Qp* q, const RoceView& v, const uint8_t* payload);
  void ScatterReadResponse(Qp* q, const RoceView& v, const uint8_t* payload);
  const uint8_t* GatherPayload(const WorkRequest& wr, uint64_t off, uint32_t len);
  void SendAck(Time now, Qp* q, uint8_t syndrome, uint32_t psn);
  void SendCnp(Time now, Qp* q);
  void ScheduleDcqcn(Qp* q, Time at, TimerKind k);
  Time RxCost(const RoceView& v, Qp* q);
  void RxPump(Time now);
  void UpdateRxPfc(Time now);
  uint8_t RxPauseMask() const;

  EmulatedHost* host_;
  RnicConfig cfg_;
  BitRate line_rate_;
  uint8_t data_prio_ = 3;
  uint8_t data_prio_mask_ = 1 << 3;
  /// IPv4 Identification of the next frame: one counter per NIC, +1 per frame (rdma_rxe takes
  /// it from the kernel's __ip_select_ident; a fixed 0 would make loss by IP-ID meaningless).
  uint16_t next_ip_id_ = 1;
  uint16_t NextIpId(const Qp& q);  // RnicConfig::ip_id_per_qp
  uint32_t qpn_base_ = 0;
  std::vector<std::unique_ptr<Qp>> qps_;  // index qpn - qpn_base_ - 1
  std::vector<uint8_t> gather_;           // a payload gathered from several SGEs
  std::deque<uint32_t> active_;           // QPs with something to send (round robin)
  std::multimap<Time, std::pair<uint32_t, WorkRequest>> posts_;
  Time post_timer_at_ = -1;
  CompletionFn on_completion_;
  ArrivalFn on_arrival_;
  // Receive pipeline.
  MbufFifo rx_fifo_;
  int64_t rx_bytes_ = 0;
  Time rx_busy_until_ = 0;
  bool rx_timer_pending_ = false;
  Time stall_until_ = 0;
  Time stall_since_ = -1;
  bool xoff_ = false;
  bool pfc_suppressed_ = false;  // NIC watchdog fired
  bool refresh_pending_ = false;
  MttCache mtt_;  ///< mtt_entries pages (used when mtt_entries > 0)
  // Counters.
  uint64_t bad_icrc_ = 0, rx_other_ = 0, pfc_xoff_sent_ = 0, pfc_xon_sent_ = 0, cnps_sent_ = 0;
  uint64_t cnps_received_ = 0, retransmitted_ = 0, timeouts_ = 0, rx_buffer_drops_ = 0;
  uint64_t cnps_sent_ooo_ = 0;
  uint64_t rnr_naks_sent_ = 0, rnr_naks_received_ = 0, remote_access_naks_sent_ = 0;
  uint64_t no_mbuf_ = 0;  // frames not built: the mbuf pool was empty
  uint64_t naks_sent_ = 0, acks_sent_ = 0, duplicates_ = 0, ooo_ = 0, mtt_misses_ = 0,
           mtt_hits_ = 0;
  uint64_t tx_data_packets_ = 0, rx_data_packets_ = 0, watchdog_fired_ = 0;
  Time last_timeout_at_ = -1;
  Time first_data_tx_at_ = -1;  ///< when the first data packet left (request or response)
  Time watchdog_fired_at_ = -1;
};

}  // namespace rocefab

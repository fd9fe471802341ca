#pragma once
/// @file switch_node.h
/// SwitchNode: an L2/L3 data-center switch (ToR, leaf or spine) with a lossless RoCE data path.
///
/// Ingress (Receive): parse -> classify (DSCP or 802.1Q PCP -> TC -> PG/queue, qos.h) ->
///   PFC/PAUSE frames update the port's pause timers (pfc.h) ->
///   [802.1Q tag check] -> learn source MAC (VLAN ports) ->
///   to router MAC: IPv4 routing (LPM, ECMP, TTL, MAC rewrite) or ICMP echo reply for our
///   addresses; broadcast: ARP processing + flooding within the VLAN; other unicast: bridging by
///   the MAC table, flooding unknown unicast within the VLAN (counted).
/// Output: ECN/WRED decision (ecn.h) -> shared-buffer admission charged to ingress (port, PG)
///   and egress (port, queue) (mmu.h); a lossless PG passing its limit sends PFC XOFF out of its
///   ingress port, refreshed while it stays congested, and XON when it drains.
/// Egress (Dequeue): control queue (PFC), strict priority, DWRR (scheduler.h); queues paused by
///   received PFC hold their frames; the MMU is released as frames leave.
/// Delivery to a connected host: ARP table (IP -> MAC), then the MAC table (MAC -> port); an ARP
/// hit with a MAC-table miss floods the frame in the VLAN, as a real ToR does (the "incomplete
/// ARP" state of Guo et al., SIGCOMM 2016, §4.2). Unresolved next hops get ARP requests (every
/// arp_retry, arp_retries times) while up to arp_queue_len frames wait.
///
/// Counters: per-port rx/tx, per-priority PFC tx/rx, XOFF transitions and paused time, PG and
/// queue watermarks, ECN marks; drops by DropReason (see Stats()). Runs on one thread; never
/// reads a clock. Assumes TC -> queue is the identity and PFC priority = TC.

#include <array>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "common/mbuf_fifo.h"
#include "common/node.h"
#include "common/packet.h"
#include "common/pause_state.h"
#include "common/result.h"
#include "common/rng.h"
#include "common/timer_key.h"
#include "common/wire/headers.h"
#include "switch/drop_reason.h"
#include "switch/ecmp.h"
#include "switch/mac_table.h"
#include "switch/mmu.h"
#include "switch/path_selection.h"
#include "switch/route_table.h"
#include "switch/scheduler.h"
#include "switch/switch_config.h"

namespace rocefab {

class SwitchNode final : public Node {
 public:
  /// Validates `cfg` and builds the tables. Errors name the field (e.g. "ports[2].vlan").
  /// cfg.routes moves into the route table: config().routes is empty afterwards.
  static Result<std::unique_ptr<SwitchNode>> Create(SwitchConfig cfg);
  ~SwitchNode() override;
  /// Replaces the remote routes (cfg.routes) with `routes`, as a routing protocol converging on
  /// a changed topology would: prefixes missing from `routes` are withdrawn (their packets are
  /// then dropped as no_route), the others point at their new ECMP groups from the next packet
  /// on. Not for ConWeave or CONGA switches (their per-path state follows the old groups).
  /// Errors: a next hop port out of range (routes installed before it stay).
  Status ReplaceRoutes(const std::vector<RouteConfig>& routes);
  uint64_t route_updates() const { return route_updates_; }

  uint16_t num_ports() const override { return static_cast<uint16_t>(ports_.size()); }
  void Start(Time now) override;
  void Receive(Time now, uint16_t port, rte_mbuf* m) override;
  rte_mbuf* Dequeue(Time now, uint16_t port) override;
  void PrefetchTx(uint16_t port) const override { ports_[port].sched.PrefetchHeads(); }
  bool TxDrained(uint16_t port) const override { return ports_[port].sched.empty(); }
  void OnTimer(Time now, uint64_t cookie) override;
  nlohmann::json Stats() const override;
  /// Called (at `now`) when a received PFC frame pauses a port that had no paused priority (the
  /// deadlock detector's wake-up). Runs on the switch's thread.
  void set_pause_listener(std::function<void(Time)> f) { pause_listener_ = std::move(f); }
  /// Installs the ARP entry ip -> mac and the MAC-table entry mac -> `port` (in the port's VLAN)
  /// as if learned at `now`: a neighbour known before traffic starts ("neighbors": "static").
  void AddStaticNeighbor(Time now, Ipv4 ip, const Mac& mac, uint16_t port);

  const SwitchConfig& config() const { return cfg_; }
  MacTable& mac_table() { return mac_table_; }
  ArpTable& arp_table() { return arp_table_; }
  uint64_t drops(DropReason r) const { return drops_[static_cast<size_t>(r)]; }
  /// Every frame received or created is transmitted, dropped by reason, consumed (PFC, ARP,
  /// ConWeave control, a flooded original) or still held (egress queues, ARP wait queues,
  /// ConWeave reorder queues).
  std::optional<FrameBalance> frame_balance() const override;
  uint64_t total_drops() const;
  uint64_t rx_packets(uint16_t port) const { return ports_[port].rx_packets; }
  uint64_t tx_packets(uint16_t port) const { return ports_[port].tx_packets; }
  uint64_t rx_bytes(uint16_t port) const { return ports_[port].rx_bytes; }
  uint64_t tx_bytes(uint16_t port) const { return ports_[port].tx_bytes; }
  /// ConWeave destination stage on egress `port`: reorder queues in use, frames held in them
  /// (0 when ConWeave is off).
  uint32_t reorder_queues_in_use(uint16_t port) const {
    return paths_->reorder_queues_in_use(port);
  }
  uint64_t reorder_held_frames(uint16_t port) const { return paths_->reorder_held_frames(port); }
  /// ECMP member (in [0, n)) of data frame `m`, parsed as `p`, whose EcmpHash is `flow_hash`,
  /// in a group of n >= 1 (SwitchConfig::ecmp: switch/ecmp.h).
  uint32_t EcmpMember(const rte_mbuf* m, const ParsedFrame& p, uint32_t flow_hash,
                      uint32_t n) const {
    return ecmp_->Member(m, p, flow_hash, n);
  }
  /// Frames sent from egress queue `q` (0..7) of `port`.
  uint64_t tx_queue_packets(uint16_t port, uint8_t q) const {
    return ports_[port].tx_queue_packets[q];
  }
  uint64_t unknown_unicast_floods() const { return unknown_unicast_floods_; }
  /// PFC frames sent out of `port` for priority `prio` (XOFF and XON separately).
  uint64_t pfc_tx_xoff(uint16_t port, uint8_t prio) const { return ports_[port].pfc_tx_xoff[prio]; }
  uint64_t pfc_tx_xon(uint16_t port, uint8_t prio) const { return ports_[port].pfc_tx_xon[prio]; }
  const PauseState& rx_pause(uint16_t port) const { return ports_[port].rx_pause; }
  /// Egress queue bytes now (shared mode: as the MMU counts them).
  int64_t queue_bytes(uint16_t port, uint8_t q) const;
  /// Bit p: priority p of `port` is paused by received PFC at `now` (lossless priorities only).
  uint8_t paused_mask(uint16_t port, Time now) const {
    return ports_[port].rx_pause.PausedMask(now) & cfg_.qos.lossless_mask & ~IgnoredPause(port);
  }
  /// Bit g: PG g of ingress `port` is in XOFF (we are pausing our upstream peer).
  uint8_t xoff_mask(uint16_t port) const;
  const SharedBufferMmu* mmu() const { return mmu_ ? &*mmu_ : nullptr; }
  uint64_t ecn_marked(uint16_t port, uint8_t q) const { return ports_[port].ecn_marked[q]; }
  /// Runtime changes (fault timeline "config" events).
  void SetWatchdog(Time now, const PfcWatchdogConfig& wd);
  void SetDropLosslessOnIncompleteArp(bool on) { cfg_.drop_lossless_on_incomplete_arp = on; }
  /// Bit p: priority p of `port` is in a PFC storm declared by the watchdog.
  uint8_t storm_mask(uint16_t port) const { return ports_[port].storm_mask; }
  uint64_t watchdog_storms() const;
  uint64_t watchdog_restores() const;
  /// Time of the first storm declared on any port (-1 if none).
  Time first_storm_at() const { return first_storm_at_; }
  /// When this switch first received a PFC XOFF on any port (-1: never).
  Time first_paused_at() const { return first_paused_at_; }

 private:
  struct PortState {
    EgressScheduler sched;
    PauseState rx_pause;
    uint64_t rx_packets = 0, rx_bytes = 0, tx_packets = 0, tx_bytes = 0;
    int64_t plain_bytes = 0, plain_watermark = 0;  // plain (non-shared) buffer mode
    std::array<uint64_t, 8> pfc_tx_xoff{}, pfc_tx_xon{}, xoff_transitions{}, ecn_marked{};
    std::array<uint64_t, 8> tx_queue_packets{};
    // Bytes of queue q held in ConWeave reorder queues while charged to the buffer
    // (charge_held_to_buffer): in the MMU's egress count of q, not in the scheduler's queue.
    std::array<int64_t, 8> held_bytes{};
    std::array<bool, 8> refresh_pending{};
    std::array<PfcWatchdog, 8> wd{};
    uint8_t storm_mask = 0;
    uint64_t wd_dropped = 0;
    struct WatchdogEvent {
      Time at;
      uint8_t prio;
      bool storm;  // false: restored
    };
    std::vector<WatchdogEvent> wd_events;  // the first kMaxWatchdogEvents storms and restores
    Time expiry_timer_at = -1;             // pending pause-expiry wake-up, -1 = none
    explicit PortState(const SchedulerConfig& sc) : sched(sc) {}
  };
  struct PendingArp {
    MbufFifo frames;
    uint16_t svi = 0;
    int requests_sent = 0;
  };

  // Timer kinds (TimerKey::kind): the argument and port each uses.
  enum class TimerKind : uint8_t {
    kArp = 1,          ///< arg: the IPv4 address being resolved
    kPfcRefresh = 2,   ///< port, arg: the priority group
    kPauseExpiry = 3,  ///< port
    kWatchdog = 4,
    kConweave = 5,  ///< reorder-queue flush deadline
  };
  void OnArpTimer(Time now, Ipv4 ip);
  void Schedule(Time at, TimerKind k, uint32_t arg = 0, uint16_t port = 0) {
    env_->ScheduleTimer(at, TimerKey::Of(k, arg, port).Pack());
  }

  explicit SwitchNode(SwitchConfig cfg);
  void Drop(rte_mbuf* m, DropReason r);
  /// Queues `m` on `port`, queue Meta(m)->queue, through ECN and MMU admission.
  void Output(Time now, uint16_t port, rte_mbuf* m);
  /// Output's first half: watchdog, WRED/ECN and MMU admission (charges the shared buffer).
  /// False if `m` was dropped (with its reason). ConWeave holds admitted frames, then Enqueue.
  bool Admit(Time now, uint16_t port, rte_mbuf* m);
  /// Output's second half: puts an admitted frame on the port's scheduler.
  void Enqueue(uint16_t port, rte_mbuf* m);
  /// Sends PFC for the priorities of ingress PG `pg` out of `port` (XOFF or XON).
  void SendPfc(Time now, uint16_t port, uint8_t pg, bool xoff);
  /// The XOFF pause quanta on `port`: pfc.pause_time at its rate, else pfc.pause_quanta.
  uint16_t PauseQuanta(uint16_t port) const;
  void HandleMacControl(Time now, uint16_t port, rte_mbuf* m);
  // The egress queue depth ECN marking compares with Kmin/Kmax: queue_bytes less the frames
  // held in ConWeave reorder queues. Held frames take buffer (PFC and the dynamic thresholds see
  // them) but wait outside the queue: in the reference (conweave-ns3's VOQs) they are in no
  // egress queue at all, on Tofino2 (the paper's switch) in a reorder queue of their own whose
  // depth the normal queue's marking does not see.
  // (Without an MMU queue_bytes is the scheduler's count, which holds no held frame.)
  int64_t EcnDepth(uint16_t port, uint8_t q) const {
    return mmu_ ? mmu_->queue_bytes(port, q) - ports_[port].held_bytes[q]
                : static_cast<int64_t>(ports_[port].sched.queued_bytes(q));
  }
  void MarkCe(rte_mbuf* m);
  /// Sends a copy of `m` to every access port of `vlan` except `except` (and, for unknown
  /// unicast, to its trunk ports too); consumes `m`.
  void Flood(Time now, uint16_t vlan, uint16_t except, rte_mbuf* m, bool unknown_unicast = false);
  void HandleArp(Time now, uint16_t port, rte_mbuf* m, const ParsedFrame& p);
  void RouteIpv4(Time now, rte_mbuf* m, const ParsedFrame& p);
  static bool IsControlPacket(const rte_mbuf* m, const ParsedFrame& p);
  void DeliverConnected(Time now, uint16_t svi, Ipv4 dst, rte_mbuf* m);
  void SendToHost(Time now, uint16_t vlan, const Mac& mac, rte_mbuf* m);
  void RequestArp(Time now, uint16_t svi, Ipv4 ip);
  void ReplyEcho(Time now, rte_mbuf* m, const ParsedFrame& p);
  bool IsOwnIp(Ipv4 ip) const;
  static void SetOriginated(rte_mbuf* m) {
    PacketMeta* meta = Meta(m);
    meta->in_port = SharedBufferMmu::kNoPort;
    meta->tc = meta->pg = meta->queue = meta->flags = 0;
    meta->mmu_bucket = static_cast<uint8_t>(MmuBucket::kNone);
  }

  SwitchConfig cfg_;
  std::vector<PortState> ports_;
  std::unique_ptr<RouteTable> routes_;
  std::vector<std::pair<Ipv4, int>> remote_routes_;  // the prefixes of cfg.routes, in order
  uint64_t route_updates_ = 0;
  Status InstallRoute(const RouteConfig& r);
  std::optional<SharedBufferMmu> mmu_;
  Rng rng_;
  /// The load-balancing scheme: ECMP member choice and the scheme's own stages
  /// (path_selection.h). ConWeave and CONGA reach the switch's internals as friends.
  std::unique_ptr<PathSelection> paths_;
  bool paths_tag_ = false;      // paths_->Tags(), asked once
  bool paths_observe_ = false;  // paths_->ObservesFrames(), asked once
  /// The ECMP member choice (switch/ecmp.h: rocefab's hash or the reference simulator's).
  std::unique_ptr<EcmpFunction> ecmp_;
  friend class ConweavePaths;
  friend class CongaPaths;
  /// True if `m` entered on a server-facing access port (its BTH byte 4 is the NIC's, never a
  /// ConWeave/CONGA tag: tags only come from the fabric).
  bool FromAccessPort(const rte_mbuf* m) const {
    const uint16_t in = Meta(m)->in_port;
    return in < cfg_.ports.size() && cfg_.ports[in].vlan != 0 && !cfg_.ports[in].trunk;
  }
  Time last_now_ = 0;  // latest time seen, for Stats() (paused time so far)
  std::function<void(Time)> pause_listener_;
  uint64_t host_tag_bits_cleared_ = 0;  ///< server frames whose BTH byte 4 looked like a tag
  bool wd_timer_ = false;
  Time first_storm_at_ = -1;
  Time first_paused_at_ = -1;
  void PollWatchdog(Time now);
  void ScheduleWatchdogPoll(Time now);
  void RecordWatchdogEvent(PortState* ps, Time now, uint8_t prio, bool storm);
  static constexpr size_t kMaxWatchdogEvents = 1000;
  /// Priorities whose PFC the switch ignores on `port` (watchdog drop/forward in a storm).
  uint8_t IgnoredPause(uint16_t port) const {
    return cfg_.watchdog.action == WatchdogAction::kAlert ? 0 : ports_[port].storm_mask;
  }
  bool WdDrops(uint16_t port, uint8_t prio) const {
    return cfg_.watchdog.action == WatchdogAction::kDrop && ((ports_[port].storm_mask >> prio) & 1);
  }
  MacTable mac_table_;
  ArpTable arp_table_;
  std::map<uint16_t, std::vector<uint16_t>> vlan_ports_;   ///< VLAN -> access ports (sorted)
  std::map<uint16_t, std::vector<uint16_t>> trunk_ports_;  ///< VLAN -> trunk ports (sorted)
  std::map<Ipv4, PendingArp> pending_arp_;                 ///< ordered: deterministic timers
  std::array<uint64_t, static_cast<size_t>(DropReason::kCount)> drops_{};
  // The same drops by the frame's traffic class (frames dropped before classification, e.g.
  // unparsable ones, count in TC 0).
  std::array<std::array<uint64_t, static_cast<size_t>(DropReason::kCount)>, 8> drops_by_tc_{};
  uint64_t routed_ = 0, bridged_ = 0, unknown_unicast_floods_ = 0, broadcast_floods_ = 0;
  uint64_t mac_learned_ = 0, arp_requests_sent_ = 0, arp_replies_sent_ = 0;
  uint64_t icmp_echo_replies_ = 0;
  uint64_t frames_created_ = 0, frames_consumed_ = 0;  ///< for frame_balance()
  /// Counts a frame the switch made (PFC, ARP, a flood copy, a ConWeave control packet); a null
  /// `m` (the pool was empty) is counted created and dropped as no_buffer. Returns `m`.
  rte_mbuf* NoteCreated(rte_mbuf* m);
  /// Frees a frame that ended here without being a drop.
  void Consume(rte_mbuf* m);
};

}  // namespace rocefab

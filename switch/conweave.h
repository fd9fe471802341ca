#pragma once
/// @file conweave.h
/// ConWeave decisions (Song et al., "Network Load Balancing with In-network Reordering Support for
/// RDMA", SIGCOMM 2023), as pure classes: the switch passes in time, the flow key, the candidate
/// paths and an RNG, and applies the returned decision (which path, which tag, which control
/// packet, hold or release). Semantics follow the authors' ns-3 model (conweave-routing.cc, as
/// collected in shared/reference/rdma-simulators.md section 1.2/1.3) with two deliberate
/// differences, both from the Tofino2 implementation (CW-p4, section 1.6):
///  - reorder queues are a bounded resource per egress port (12 at 25G, 24 at 100G on Tofino2);
///    when none is free the flow falls back to out-of-order delivery and the fallback is counted
///    (the P4 code resets the flow to phase 1, reordering off);
///  - a TAIL that finds a reorder queue releases it right behind the TAIL itself (no 1 ns timer).
///
/// Terms: an *epoch* is one round of RTT_REQUEST -> RTT_REPLY (or TAIL -> CLEAR); *phase* 0 is
/// the path the epoch started on, phase 1 the path after the (at most one) reroute; TAIL is the
/// last packet on the old path. Paths are opaque 32-bit ids chosen by the switch (ns-3 packs one
/// out-port per hop into the bytes of a u32). Epochs are counted in 32 bits here; the wire
/// carries them modulo 4 and the switch widens them before calling ConweaveRx.
///
/// Not thread-safe; one instance per ToR switch.

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "common/flat_map.h"
#include "common/rng.h"
#include "common/time.h"

namespace rocefab {

/// Most source-routed paths from one ToR to another (3-tier Clos): the path index + 1 rides in
/// 9 bits of the frame (switch_conweave.cc), 0 meaning "no source route".
inline constexpr uint32_t kConweaveMaxRoutedPaths = 511;
/// UDP destination port of rocefab's ConWeave control packets (RTT_REPLY, CLEAR, NOTIFY; their
/// format: switch/switch_conweave.cc). A private port: the reference carries them as IPv4
/// protocol 0xFD packets (conweave-routing.cc SendReply).
inline constexpr uint16_t kConweaveControlPort = 49791;

/// ConWeave parameters. Defaults are the ConWeave artifact's 2-tier leaf-spine setting (`run.py`,
/// reference table 1.5): theta_reply = base RTT + 4 us, theta_path_busy 16 us, theta_inactive
/// 300 us, default reorder wait 200 us, extra flush slack 16 us, state aging 2 ms.
struct ConweaveParams {
  Time reply_extra = 4 * kUs;     ///< added to the path's base RTT to make the reply deadline
  Time path_busy = 16 * kUs;      ///< how long a NOTIFY marks a path busy (theta_path_busy)
  Time inactive = 300 * kUs;      ///< idle gap after which a flow starts a fresh epoch
  Time default_wait = 200 * kUs;  ///< reorder wait when no phase-0 packet of the epoch was seen
  Time extra_flush = 16 * kUs;    ///< slack added to the predicted TAIL arrival
  Time state_aging = 2 * kMs;     ///< per-flow state idle longer than this is forgotten
  uint32_t reorder_queues_per_port = 24;  ///< Tofino2 at 100G: 8 queues x 3 hash chances; 1..1024
  /// Held frames occupy the shared buffer from the moment they are held (true: as on Tofino2,
  /// where the reorder queues are queues of the shared buffer), or only once released (false:
  /// the reference ns-3 model, whose reorder queues are unlimited and outside the MMU).
  bool charge_held_to_buffer = true;
};

/// What a data packet carries between the ToRs (BTH reserved bits + the 4-byte ConWeave header).
enum class ConweaveFlag : uint8_t {
  kData,        ///< ordinary packet of the epoch
  kRttRequest,  ///< first packet of an epoch: asks the destination ToR for an RTT_REPLY
  kTail,        ///< last packet on the old path before a reroute
};
const char* ConweaveFlagName(ConweaveFlag f);

struct ConweaveTag {
  uint32_t path = 0;   ///< the path the packet takes (source-routed through leaves/spines)
  uint32_t epoch = 0;  ///< 1, 2, ...
  uint8_t phase = 0;   ///< 0 before the reroute, 1 after; TAIL itself is phase 0
  ConweaveFlag flag = ConweaveFlag::kData;
  Time ts_tx = 0;    ///< time the source ToR sent this packet
  Time ts_tail = 0;  ///< time the source ToR sent this epoch's TAIL (0 before the reroute)
};

/// Source-ToR state machine (paper section 3.1 and Appendix A; ns-3 `RouteInput` TxToR branch).
class ConweaveTx {
 public:
  explicit ConweaveTx(const ConweaveParams& p) : p_(p) {}

  /// Decides the path and tag of one inter-ToR data packet of flow `flow` at time `now`.
  /// `paths` are the candidate paths to the destination ToR (non-empty, same order every call);
  /// `base_rtt` is the computed unloaded round-trip time of those paths, in ps (> 0). The reply
  /// deadline uses the larger of it and the smallest RTT_REQUEST -> RTT_REPLY time measured so
  /// far (timely or late), so fixed costs the computation does not know (the live runner's
  /// processing, a slower NIC path) are learned instead of rerouting every epoch.
  /// Two uniform samples are drawn from `rng` for every packet, as in the reference.
  /// `dst_tor` names the destination ToR (any stable id, e.g. its leaf index): busy marks are
  /// per (destination ToR, path), as the reference's path ids are (its path id holds the
  /// spine's port towards the destination ToR: conweave-ns3 network-load-balance.cc), so a
  /// NOTIFY about the spine's link to one ToR does not steer flows to the other ToRs away.
  ConweaveTag OnData(uint64_t flow, std::span<const uint32_t> paths, Time base_rtt, Time now,
                     Rng& rng, uint32_t dst_tor = 0);

  /// RTT_REPLY (reply to the RTT_REQUEST of `epoch`) arrived. Ignored unless it matches the flow's
  /// current epoch, phase 0, and arrives before the deadline. Returns true if it stabilized the
  /// flow.
  bool OnRttReply(uint64_t flow, uint32_t epoch, Time now);
  /// CLEAR (reply to the TAIL of `epoch`) arrived. Returns true if it stabilized the flow.
  bool OnClear(uint64_t flow, uint32_t epoch, Time now);
  /// NOTIFY from destination ToR `dst_tor`: `path` to it saw ECN-CE; avoid it for
  /// theta_path_busy (for flows to that ToR).
  void OnNotify(uint32_t path, Time now, uint32_t dst_tor = 0);
  /// Forgets flows idle longer than state_aging and expired busy marks. Call now and then.
  void Age(Time now);

  bool PathBusy(uint32_t path, Time now, uint32_t dst_tor = 0) const;
  /// The flow's current epoch whose low two bits are `wire_epoch` (the wire carries epochs
  /// modulo 4; replies only ever match the current epoch), or 0 if the flow is unknown.
  uint32_t WidenEpoch(uint64_t flow, uint8_t wire_epoch) const;
  size_t flows() const { return flows_.size(); }
  /// Smallest measured request -> reply time, kTimeNever before the first reply.
  Time measured_min_rtt() const { return min_rtt_; }
  /// Current path of `flow`, or 0 if unknown (tests and telemetry).
  uint32_t PathOf(uint64_t flow) const;

  struct Stats {
    uint64_t rtt_requests = 0;    ///< epochs started
    uint64_t tails = 0;           ///< TAILs sent (reply deadline missed, the flow goes to phase 1)
    uint64_t reroutes = 0;        ///< of those, TAILs after which the path actually changed
    uint64_t late_replies = 0;    ///< reply deadlines missed
    uint64_t timely_replies = 0;  ///< RTT_REPLYs that stabilized a flow
    uint64_t clears = 0;          ///< CLEARs that stabilized a flow
    uint64_t stale_replies = 0;   ///< replies for an old epoch or after the deadline
    uint64_t notifies = 0;        ///< NOTIFYs received
    uint64_t inactive_switches = 0;  ///< path changes at the start of an epoch after idleness
  };
  const Stats& stats() const { return stats_; }
  /// Flows by the number of reroutes they had: buckets 0, 1, 2-3, 4-7, 8+. A flow is one lifetime
  /// of per-flow state (a 5-tuple idle for longer than state_aging counts again when it resumes);
  /// flows whose state is still held are included.
  std::array<uint64_t, 5> RerouteHistogram() const;

 private:
  static size_t RerouteBucket(uint32_t n) {
    return n == 0 ? 0 : n == 1 ? 1 : n < 4 ? 2 : n < 8 ? 3 : 4;
  }
  struct Flow {
    uint32_t reroutes = 0;
    bool stabilized = true;
    Time active = 0;
    Time reply_due = kTimeNever;
    uint32_t epoch = 0;
    uint8_t phase = 0;
    uint32_t path = 0;
    Time tail_time = 0;
    Time request_at = -1;  ///< when this epoch's RTT_REQUEST left, -1 once its reply was timed
  };
  ConweaveParams p_;
  Time min_rtt_ = kTimeNever;
  FlatMap<uint64_t, Flow> flows_;
  FlatMap<uint64_t, Time> busy_until_;  ///< by dst_tor << 32 | path
  Stats stats_;
  std::array<uint64_t, 5> aged_reroute_hist_{};  ///< flows whose state was aged out
};

/// Destination-ToR reorder stage (ns-3 `RouteInput` RxToR branch, `ConWeaveVOQ`). It decides;
/// the switch keeps the held frames in `ReorderQueue` FIFOs indexed by (egress port, queue).
class ConweaveRx {
 public:
  ConweaveRx(const ConweaveParams& p, uint32_t num_ports);

  struct Action {
    enum class Deliver : uint8_t {
      kForward,  ///< send to the host now
      kHold,     ///< append to reorder queue (port, queue) of this flow
    } deliver = Deliver::kForward;
    uint32_t queue = 0;           ///< kHold: reorder queue index on the packet's egress port
    bool out_of_order = false;    ///< forwarded ahead of packets still on the old path (fallback)
    bool send_rtt_reply = false;  ///< answer the RTT_REQUEST (highest-priority queue)
    bool send_clear = false;      ///< answer the TAIL
    bool send_notify = false;     ///< the packet carried ECN-CE: NOTIFY its path to the source
    bool release_before = false;  ///< drain queue `release_queue` to the host before this packet
    bool release_after = false;   ///< drain queue `release_queue` right after this packet (TAIL)
    uint32_t release_queue = 0;   ///< the queue (on the packet's egress port) to drain
  };

  /// One tagged data packet of `flow` that will leave on `egress_port` (< num_ports).
  /// `can_hold` false: the switch cannot hold this packet (its egress port is not resolved yet,
  /// e.g. ARP pending); the state machine still runs and a packet it would hold is delivered
  /// out of order as in the fallback.
  Action OnData(uint64_t flow, uint32_t egress_port, const ConweaveTag& tag, bool ecn_ce, Time now,
                bool can_hold = true);
  /// OnData for a packet as it comes off the wire: `tag.epoch` is the wire's epoch modulo 4,
  /// widened as WidenEpoch does (returned in `*epoch`) with the same single flow-table lookup
  /// that OnData makes (the destination ToR's per-packet path).
  Action OnWireData(uint64_t flow, uint32_t egress_port, ConweaveTag tag, bool ecn_ce, Time now,
                    bool can_hold, uint32_t* epoch);

  /// A reorder queue whose deadline passed: the switch drains it in order to the host.
  struct Release {
    uint32_t port = 0;
    uint32_t queue = 0;
    uint64_t flow = 0;
  };
  /// Returns (and frees) every reorder queue whose flush deadline is <= now.
  std::vector<Release> DueReleases(Time now);
  /// Earliest pending flush deadline, kTimeNever if none.
  Time next_deadline() const;
  /// Forgets flows idle longer than state_aging that hold no queue.
  void Age(Time now);

  uint32_t queues_in_use(uint32_t port) const;
  /// Full epoch number for a packet whose wire epoch (modulo 4) is `wire_epoch`: the current
  /// epoch, one of the next two (new), or the previous one. (The switch uses OnWireData, which
  /// applies this rule inside its own lookup; this query is its test's oracle.)
  uint32_t WidenEpoch(uint64_t flow, uint8_t wire_epoch) const;
  uint32_t queues_in_use_total() const { return in_use_total_; }

  struct Stats {
    uint64_t held = 0;  ///< packets put in a reorder queue
    uint64_t rtt_replies = 0;
    uint64_t clears = 0;
    uint64_t notifies = 0;
    uint64_t releases_by_tail = 0;
    uint64_t releases_by_timeout = 0;
    uint64_t releases_by_new_epoch = 0;  ///< a new epoch began while the old one still held packets
    uint64_t fallbacks = 0;              ///< no free reorder queue: flow delivered out of order
    uint64_t out_of_order = 0;           ///< packets forwarded ahead of the old path (fallback)
    uint64_t prev_epoch = 0;             ///< packets of an older epoch, forwarded at once
    uint32_t max_queues_in_use = 0;      ///< peak over all ports
  };
  const Stats& stats() const { return stats_; }

 private:
  struct Flow {
    uint32_t epoch = 0;
    uint8_t phase = 0;
    Time phase0_tx = 0;
    Time phase0_rx = 0;
    bool phase0_cache = false;
    Time tail_time = 0;
    bool reordering = false;
    bool fallback = false;  ///< phase-1 packets are being forwarded ahead of the TAIL
    uint32_t port = 0;
    uint32_t queue = 0;
    Time deadline = kTimeNever;
    Time active = 0;
  };
  void Free(Flow& f);
  /// WidenEpoch's rule for a flow whose current epoch is `cur`.
  static uint32_t Widen(uint32_t cur, uint8_t wire_epoch);
  Action OnFlowData(uint64_t flow, Flow& e, bool is_new, uint32_t egress_port,
                    const ConweaveTag& tag, bool ecn_ce, Time now, bool can_hold);

  ConweaveParams p_;
  FlatMap<uint64_t, Flow> flows_;
  /// Per port, per queue: the flow that owns it (valid when owned_[port][q]).
  std::vector<std::vector<uint64_t>> owner_;
  std::vector<std::vector<bool>> owned_;
  std::vector<uint32_t> in_use_;      ///< per port
  std::vector<uint64_t> reordering_;  ///< flows that hold a queue (small: <= ports x queues)
  uint32_t in_use_total_ = 0;
  Stats stats_;
};

}  // namespace rocefab

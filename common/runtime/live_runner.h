#pragma once
/// @file live_runner.h
/// Real-time runner: drives nodes from a DPDK lcore poll loop with TSC time.
///
/// Loop shape (one clock read per iteration): observers -> frames from other partitions' rings
/// join the delay lines -> every timer, delay-line delivery and wire slot due by the clock runs,
/// one at a time in exact time order (a late iteration replays the window it missed as the sim
/// runner would) -> RX bursts from ethdev ports (no timestamp: at the clock) -> TX bursts ->
/// idle backoff. Ports are either DPDK ethdevs (af_packet/af_xdp on veth, PCI NICs)
/// or in-process links between two nodes, emulated exactly: a frame pulled at t leaves the wire
/// at t + TxTime(bytes, rate) (bytes: the wire model's FrameBytes, Runner::SetWireModel) and
/// reaches the peer after the propagation delay (a delay line). Ethdev ports are paced at their
/// configured rate the same way, so queues build in the switch (where the MMU sees them), not in
/// the kernel.
///
/// Idle backoff: after `busy_poll` of no work the loop sleeps (nanosleep, 1 us timer slack) for
/// growing intervals up to `max_sleep`, and wakes `sleep_margin` before the next timer or
/// delay-line delivery (nanosleep oversleeps by tens of microseconds on a busy VM), so an
/// oversubscribed 2-core host stays usable without making due events late. Any work resets it.
///
/// Lateness (lateness.h): every delay-line delivery (actual Receive time minus the time its last
/// bit reaches the peer), node timer (actual minus due time) and wire slot (a frame pulled after
/// its port's wire became free while the node had frames waiting: actual pull time minus the
/// time the wire became free) is recorded, per kind and per node/port, against `tolerance`.
/// Frames from ethdev ports carry no arrival timestamp, so their RX lateness is not measured
/// (it is bounded by the loop's iteration time, or max_sleep while idle). PFC frames (EtherType
/// 0x8808) pulled onto a wire record their reaction time: wire start minus the time the node
/// queued them (PacketMeta::enqueue_time, set by the switch and host at the XOFF/XON decision).
/// Timing() reports all of it.
///
/// Time the nodes see: the exact time of the event, not the clock: a timer's due time, a delay-line
/// frame's delivery time, a wire slot's start (ethdev frames, which carry no timestamp: the
/// clock), kept monotonic per node and at most the catch-up window behind the clock. So a
/// node's reactions (its timers, the frames it makes ready) follow the schedule the sim runner
/// would give it as long as the loop is less late than the catch-up window, and lateness shows
/// in the monitor, not as drift; a loop that falls further behind makes a uniformly slower
/// fabric, and says so. Timing::deviation (what faithfulness is judged by) is how much later
/// than exact a node was told an event ran, or, at a node with an ethdev port, its lateness.
///
/// Lcores (SetPartitions): by default every node runs on the thread that calls Loop(). With
/// partitions, partition 0 runs there and each other one on a thread of its own, each with its
/// own timers, clock reads, lateness histograms and idle backoff; a node's state is only ever
/// touched by its partition's thread. A link between two partitions carries each frame, with
/// its exact delivery time in PacketMeta::deliver_at, through a single-producer single-consumer
/// rte_ring into the receiving port's delay line, so the delay-line arithmetic is unchanged.
/// The partitions are synchronised conservatively, so frames between them arrive in exact time
/// order: each publishes, per link to another partition, a bound before which no frame of it
/// arrives (max(its earliest event or its own bound, the wire's free time) + the shortest
/// frame's wire time + the propagation delay), and a partition runs no event at or after the
/// smallest bound of its incoming links, read before it drains their rings. As that bound
/// advances one lookahead per exchange, each partition also publishes (seqlock) its earliest
/// event and its frame counts; a double-collect snapshot in which all partitions sent as many
/// frames as they received (none between them) lets a partition run up to the earliest event
/// of the others plus the shortest lookahead (its own plus two), so idle partitions hold no
/// one back.
/// Observer nodes (no ports: the fault timeline, the deadlock detector, the samplers, which act
/// on or read the whole fabric) are given kObserver: their timers run on the Loop() thread
/// while every other partition is parked at the top of its iteration or in its idle sleep
/// (stop the world, as the sim runner runs them between windows), once every partition has
/// reached the observer's time (no partition runs past the next observer), so what they do to a
/// node (Receive, WakeTx, timers) happens while its owner is not running. The arrival tap is called
/// under a lock when there are several partitions.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <queue>
#include <vector>

#include "common/mbuf_fifo.h"
#include "common/node.h"
#include "common/packet.h"
#include "common/result.h"
#include "common/runtime/due_tree.h"
#include "common/runtime/lateness.h"
#include "common/runtime/loss_model.h"
#include "common/runtime/runner.h"

struct rte_ring;

namespace rocefab {

struct LiveRunnerOptions {
  Time busy_poll = 2 * kMs;   ///< keep spinning this long after the last work (covers 1 ms pings)
  Time max_sleep = 20 * kUs;  ///< longest idle sleep
  Time sleep_margin = 50 * kUs;  ///< idle sleeps end this long before the next due event
  /// The catch-up windows (ps, > 0): how far behind the clock a node's time may lag, and a
  /// wire slot of its ports start, before the schedule moves (a slip). `catch_up` is for nodes
  /// with an ethdev port (they meet the real world, whose clock does not wait): `rocefab live`
  /// sets max(50 us, 2 x tolerance), two frame times at the fastest link. `internal_catch_up`
  /// is for nodes with in-process ports only: their events are replayed in exact time order,
  /// so a stall shorter than this moves no frame of theirs (this VM's hypervisor stalls a
  /// spinning core for 20-100 us several hundred times a second, now and then for 1-3 ms, and
  /// in some runs slows it threefold for tens of ms, so a loop busy at 1 Gb/s falls 3-8 ms
  /// behind), while a loop that cannot keep up at all still degrades into a uniformly slower
  /// fabric, and says so, instead of lagging without bound. Where such a node feeds one with
  /// an ethdev port, its lag shows there as that node's lateness.
  Time catch_up = 50 * kUs;
  Time internal_catch_up = 20 * kMs;
  /// Scheduling priority of the poll thread (setpriority, -20..19; outside: left as it is).
  /// On a small machine the namespace hosts' tools (a Python TCP Pingmesh prober starting
  /// takes tens of ms of CPU) otherwise preempt the poll thread for milliseconds (pingmesh.json
  /// here: RDMA Pingmesh p50 ~5 ms at nice 0, 0.4-0.8 ms at -5, 45 us at -20, where the
  /// kernel's softirq work on the poll thread's core starves and TCP Pingmesh p50 became
  /// 0.5 s; at -5 TCP Pingmesh p50 stays 120-145 us).
  int nice = -5;
  /// CPUs for the poll threads: partition k runs on cpus[k % size] (empty: where it is
  /// started). With several partitions this matters: a thread started after rte_eal_init
  /// inherits the main lcore's single CPU, so the partitions would share one core.
  std::vector<int> cpus;
  /// An event more than this off its schedule counts against faithfulness (ps, > 0): by
  /// default one 1500-byte frame at 10 Gb/s; `rocefab live` sets one MTU-sized frame at the
  /// fastest link of the scenario. See Timing::deviation for what "off" means.
  Time tolerance = TxTime(WireBytes(1514), 10 * kGbps);
  /// A run is faithful when at most this fraction of its timed events were off their schedule
  /// by more than the tolerance (0..1; default 0.1 %: the p99.9 deviation is within it).
  double max_late_fraction = 0.001;
};

class LiveRunner final : public Runner {
 public:
  LiveRunner(rte_mempool* pool, LiveRunnerOptions opt = {});
  ~LiveRunner();
  LiveRunner(const LiveRunner&) = delete;
  LiveRunner& operator=(const LiveRunner&) = delete;

  uint32_t AddNode(Node* node) override;
  /// In-process link (both directions) with exact serialization and propagation delay.
  Status Connect(uint32_t a, uint16_t pa, uint32_t b, uint16_t pb, BitRate rate,
                 Time delay) override;
  /// Binds port `p` of node `n` to a started ethdev (queue 0), paced at `rate`. A device with a
  /// wire of its own (a NIC, a veth into a kernel) takes each frame at the start of its wire
  /// slot. `wire_delay` >= 0 (ps): the device has none (net_memif to another rocefab process,
  /// which copies a frame across at once), so the runner emulates it: a frame is handed over
  /// when its last bit would reach the peer, TxTime(bytes, rate) + wire_delay after its
  /// slot starts, as an in-process link delivers it.
  Status AttachEthdev(uint32_t n, uint16_t p, uint16_t ethdev, BitRate rate, Time wire_delay = -1);

  /// Loss on the direction leaving (n, p), as in the sim runner (loss_model.h).
  Status SetLoss(uint32_t n, uint16_t p, const LossModel& loss) override;
  uint64_t lost_frames() const override;
  void SetArriveTap(ArriveTap tap) override { tap_ = std::move(tap); }
  void SetDepartTap(ArriveTap tap) override { depart_tap_ = std::move(tap); }
  /// The node and port at the other end of an in-process link (false for ethdev ports).
  bool Peer(uint32_t node, uint16_t port, uint32_t* peer_node, uint16_t* peer_port) const override {
    if (node >= ports_.size() || port >= ports_[node].size() ||
        ports_[node][port].kind != PortState::Kind::kInternal) {
      return false;
    }
    *peer_node = ports_[node][port].peer_node;
    *peer_port = ports_[node][port].peer_port;
    return true;
  }

  /// Runs node i on partition part_of_node[i] (0..P-1, each non-empty, P <= 64), or, for a
  /// node without ports that acts on others, kObserver (see the file comment). Call once, after
  /// the last Connect/AttachEthdev and before Loop. Errors: a size other than the number of
  /// nodes, a partition out of range or empty, an observer with ports, called twice or after
  /// Loop.
  static constexpr uint32_t kObserver = UINT32_MAX;
  Status SetPartitions(const std::vector<uint32_t>& part_of_node);
  size_t num_partitions() const { return parts_.size(); }
  size_t num_nodes() const { return nodes_.size(); }

  /// Polls until `stop` becomes true: partition 0 on the calling thread, the others on threads
  /// of their own, joined before it returns.
  void Loop(const std::atomic<bool>& stop);

  /// Blocks until Loop has set time 0 (after every node's Start, which may take tens of
  /// milliseconds), then returns that instant on the steady clock. Whoever schedules by the wall
  /// clock alongside the fabric (traffic start offsets, the run's end) counts from it; counting
  /// from an instant before it would end the run that much early in the fabric's time.
  std::chrono::steady_clock::time_point WaitEpoch() const;

  /// Time 0 at instant `t` of the steady clock (CLOCK_MONOTONIC: one clock for every process of
  /// the machine) instead of the instant every node has started: processes started together
  /// (`rocefab live --processes`) then share one time 0 and their times compare (one-way
  /// latencies, captures, traffic start offsets). Time 0 is `t` even if this process's nodes
  /// finish starting (or its thread wakes) after it: the events it then runs late count as
  /// lateness as any late event, and TimingJson's `start_late_us` says how late it started.
  /// Call before Loop.
  void StartAt(std::chrono::steady_clock::time_point t) { start_at_ = t; }
  /// The run's last instant (ps of runner time), as the sim runner's RunUntil(end): no event
  /// after it runs, and Loop returns by itself once every partition has run all events up to it
  /// and its clock has passed it (then reached_end() is true). Only for fabrics without ethdev
  /// ports (their frames come when the outside world sends them, and their runs end by the
  /// wall clock): Error otherwise, or after Loop started. Default: no end (Loop runs until stop).
  Status StopAt(Time end);
  bool reached_end() const { return reached_end_.load(std::memory_order_acquire); }

  /// Loop iterations of partition 0 (the calling thread); per partition in TimingJson().
  uint64_t iterations() const { return parts_[0]->iterations; }
  uint64_t idle_sleeps() const;
  uint64_t ethdev_tx_dropped() const { return ethdev_tx_dropped_; }
  /// Picoseconds since Loop started, as partition 0 last read it (after Loop: the end).
  Time now() const override { return parts_[0]->now; }
  /// The clock as runner time (ps since time 0, negative before it): callable from any thread
  /// (a TSC read and a multiply; the metrics endpoint's time).
  Time ClockNow() const { return Now(); }

  /// Lateness against the exact schedule (readable after Loop returns; see the file comment).
  struct Timing {
    /// Lateness: how far behind the clock the loop ran each event (diagnostic).
    LatenessHistogram delivery, timer, wire, all;
    /// Deviation, which decides faithfulness: at a node with an ethdev port (it meets the real
    /// world), the event's lateness; at a node with in-process ports only, how much later than
    /// its exact time the node was told it ran (the catch-up clamp, or a frame from another
    /// partition, or an observer's act, reaching it after its own later events). In-process
    /// events replayed in exact order deviate by 0 however late the loop ran them.
    LatenessHistogram deviation;
    LatenessHistogram pfc_reaction;  ///< PFC frames: decision to first bit on the wire
    /// The node/port with the most events off schedule beyond the tolerance (port -1: timers).
    std::string worst_node;
    int worst_port = -1;
    uint64_t worst_late_events = 0;
    Time worst_max = 0;
    Time worst_at = 0;  ///< when the worst node/port's latest event happened (runner time)
    /// The node that took the largest share of its poll thread's event time (TSC cycles
    /// spent in its Receive, Dequeue and OnTimer calls over all its partition's nodes'), over
    /// the partitions: where a loop that fell behind spent its time (empty: no event ran).
    std::string busiest_node;
    double busiest_share = 0;  ///< 0..1
    /// Wire slots that started later than their exact time because the loop was more than
    /// the catch-up window behind, and the largest total such shift of one port's schedule.
    uint64_t slips = 0;
    Time max_port_slip = 0;
    /// How far behind the clock the loop was when the run stopped (its earliest pending
    /// event); beyond the internal catch-up window the run is not faithful.
    Time end_lag = 0;
    /// At most max_late_fraction of the events deviated beyond the tolerance, and no port's
    /// schedule moved by more than the tolerance in all.
    bool faithful = true;
  };
  Timing timing() const;
  /// Timing() as the summary's `timing` block (docs/results.md), with `verdict` the one line
  /// the run ends with: "faithful within X us" or "NOT FAITHFUL: ...".
  nlohmann::json TimingJson() const;
  const LiveRunnerOptions& options() const { return opt_; }

  /// The idle sleep the loop takes at `now` with the next due event at `next_event` (kTimeNever:
  /// none) and the current backoff step `backoff`: at most max_sleep, ending sleep_margin before
  /// the next event; 0 (spin) when that leaves less than 1 us. Pure (for tests).
  static Time IdleNap(Time now, Time next_event, Time backoff, const LiveRunnerOptions& opt);

 private:
  class Env;
  struct PortState {
    enum class Kind : uint8_t { kNone, kInternal, kEthdev } kind = Kind::kNone;
    uint32_t peer_node = 0;
    uint16_t peer_port = 0;
    uint16_t ethdev = 0;
    BitRate rate;
    Time delay = 0;
    Time next_free = 0;       ///< when the wire is free again
    bool wake = false;        ///< node has frames to pull
    bool idle = true;         ///< the last pull found the node's queues empty
    bool tx_blocked = false;  ///< ethdev: the PMD refused frames this iteration (no new slot)
    /// Its slot in the partition's `due` tree (set when Loop starts): the earlier of the delay
    /// line's head delivery and the next wire slot's start (kTimeNever: none), kept current by
    /// Refresh() wherever they change.
    DueTree* due = nullptr;
    uint32_t slot = 0;
    Time lookahead = 0;  ///< in-process: the shortest frame's wire time plus the delay
    /// Links between partitions: the sender's published bound (no frame of it on this link
    /// arrives earlier; in its partition's out_bounds), and at the receiver, the peer's.
    std::atomic<Time>* out_bound = nullptr;
    const std::atomic<Time>* peer_bound = nullptr;
    Time ready_at = 0;  ///< node time of the WakeTx that ended the last idle period
    /// Tie keys (EventKey) of its two slots: deliveries ArriveKey(node, port); the wire slot
    /// the own key taken when its frame was pulled (reserved while the port is drained, as
    /// the sim's wire_free_key), or a wake's key: the waking event's, with the wake's `sub`.
    uint64_t arrive_key = 0, wire_key = 0, wire_sub = 0;
    MbufFifo inbound;     ///< delay line towards this port (deliver_at in PacketMeta)
    MbufFifo tx_backlog;  ///< ethdev frames the PMD did not take yet
    /// Ethdev with an emulated wire (AttachEthdev's wire_delay): frames until their last bit
    /// reaches the peer (deliver_at), in time order.
    bool emulate_wire = false;
    MbufFifo tx_hold;
    /// A link from another partition: its frames arrive here (SP/SC), then join `inbound`.
    rte_ring* cross_in = nullptr;
    MbufFifo cross_backlog;  ///< frames for the peer's cross_in that did not fit yet (sender)
    std::unique_ptr<LossState> loss;
    uint64_t late_events = 0;  ///< deliveries to and wire slots of this port off schedule
    Time max_late = 0;         ///< the largest deviation of those
    Time max_late_at = 0;      ///< runner time of the latest event
    Time slipped = 0;          ///< wire time lost beyond the catch-up window (schedule moved)
  };
  struct Timer {
    Time t;
    uint64_t key;  ///< the node's own key (LocalKey), as the sim's
    uint32_t node;
    uint64_t cookie;
    bool operator>(const Timer& o) const { return t != o.t ? t > o.t : key > o.key; }
  };
  /// Event keys, the sim runner's (sim_runner.h): at one picosecond nodes take turns by index,
  /// a node its frame arrivals (by port) before its own events (timers and wire slots, in the
  /// order it scheduled them); a wake runs right after the event that took it. So both runners
  /// run the events of one instant in the same order and give the same results at ties.
  static constexpr int kNodeShift = 40;
  static constexpr uint64_t kOwnBit = uint64_t{1} << 39;
  static uint64_t ArriveKey(uint32_t node, uint16_t port) {
    return (uint64_t{node} << kNodeShift) | port;
  }
  uint64_t LocalKey(uint32_t node) {
    return (uint64_t{node} << kNodeShift) | kOwnBit | node_seq_[node]++;
  }

  struct PortRef {
    PortState* state;
    uint32_t node;
    uint16_t port;
  };

  /// One partition's nodes, timers and measurements; touched only by the thread that runs it
  /// (and by the observers while it is parked).
  struct Part {
    explicit Part(Time tolerance)
        : delivery(tolerance),
          timer(tolerance),
          wire(tolerance),
          pfc_reaction(tolerance),
          deviation(tolerance) {}
    std::vector<uint32_t> nodes;
    std::vector<PortRef> ports, ethdev_ports;  ///< its nodes' ports (built when Loop starts)
    std::vector<PortRef> cross_in_ports;       ///< of them, those linked to another partition
    std::vector<PortRef> intake_ports;  ///< of them, those Intake has work on (cross, ethdev)
    std::unique_ptr<std::atomic<Time>[]> out_bounds;  ///< per port in `ports`
    DueTree due;  ///< one slot per port in `ports`: its earlier event (PortState::due, Refresh)
    std::priority_queue<Timer, std::vector<Timer>, std::greater<Timer>> timers;
    uint64_t cur_key = 0;   ///< key of the event being run (a wake's key)
    uint64_t wake_sub = 0;  ///< wakes taken so far (their order within one event)
    Time now = 0;
    uint64_t iterations = 0, idle_sleeps = 0, lost_frames = 0, slips = 0;
    double cpu_s = 0;        ///< the poll thread's CPU time in the loop (RUSAGE_THREAD)
    Time end_lag = 0;        ///< when it stopped: the clock minus its earliest pending event
    bool at_end = false;     ///< it ran every event up to StopAt's end and returned by itself
    uint64_t preempted = 0;  ///< its involuntary context switches in the loop (CPU taken away)
    LatenessHistogram delivery, timer, wire, pfc_reaction, deviation;
    std::atomic<bool> parked{false};  ///< not touching its nodes (stop the world may proceed)
    /// Several partitions: it will run no event earlier than this again (exact time, ps);
    /// an observer due at t runs once every partition's progress reached t (the links'
    /// bounds are PortState::out_bound).
    std::atomic<Time> progress{0};
    /// Frames it sent to and received from other partitions (its thread only).
    uint64_t sent = 0, received = 0;
    /// Published for the others (seqlock: `seq` odd while written): its earliest pending
    /// event and its counts, rewritten only when one of them changes.
    struct alignas(64) Record {
      std::atomic<uint64_t> seq{0};
      std::atomic<Time> pending{0};
      std::atomic<uint64_t> sent{0}, received{0};
    } record;
  };

  Time Now() const;
  Time TscTime(uint64_t tsc) const;  ///< a TSC reading as runner time (ps since time 0)
  void SetTscHz(uint64_t hz);        ///< the TSC rate TscTime uses (ticks per second)
  std::string BusiestOf(const Part& part) const;  ///< its node with the most event cycles
  /// The poll threads' time, all lcores together: the fabric's events (TSC), CPU (s) and
  /// involuntary context switches, from each loop's start.
  struct LoopTime {
    double event_s = 0, cpu_s = 0;
    uint64_t preempted = 0;
  };
  /// TimingJson's `verdict` line for `t`: faithful, or the rule broken, then where the loop's
  /// time went and the busiest node.
  std::string Verdict(const Timing& t, const LoopTime& loop) const;
  Part& PartOf(uint32_t node) { return *parts_[part_of_[node] == kObserver ? 0 : part_of_[node]]; }
  /// Runs partition `k` until `stop`; partition 0 also runs the observers' timers.
  void RunPart(size_t k, const std::atomic<bool>& stop);
  /// Per iteration and port: frames from another partition's ring join the delay line; held
  /// frames go to another partition's ring or to the PMD. True if it moved a frame.
  bool Intake(Part& part, PortState& ps, Time now, Time* next_event);
  /// Runs the partition's events due by `horizon` (timers, delay-line deliveries, wire slots;
  /// now + kAhead in an iteration) one at a time in their exact time order; the earliest later
  /// one goes to *next_event and *pending (if not null). True if it ran any.
  bool Replay(Part& part, Time now, Time horizon, Time* next_event, Time* pending);
  /// Publishes the partition's links' out bounds from `bound` (no event of it earlier: its
  /// earliest pending event, the other partitions' bound and the next observer's time, at
  /// which the observer may make events) and part.progress = `progress` (every event before it
  /// has run: the same, with the observer's time + 1), held frames for another partition and
  /// the clock (ethdev ports) considered.
  void PublishProgress(Part& part, Time now, Time bound, Time progress);
  /// After an observer ran at t with `part` parked: its published progress and record are
  /// lowered to t, so that the next observer waits until it has run what this one made due.
  void HoldBack(Part& part, Time t);
  /// The partition's earliest pending event (the clock, if it has ethdev ports).
  Time PendingOf(const Part& part, Time now) const;
  void PublishRecord(Part& part, Time pending);
  /// A consistent snapshot of every partition's record in which no frame is between
  /// partitions: true, with the earliest pending event of the others than `reader`.
  bool QuietSnapshot(size_t reader, Time* others) const;
  /// No frame from another partition can arrive at this partition before this (exact time):
  /// the minimum of what its links' senders published (read before the rings are drained).
  Time UpstreamBound(const Part& part) const;
  /// The same from a quiet snapshot (QuietSnapshot; publishes this partition's record first),
  /// or the smallest Time when none was quiet; the caller takes the larger of the two bounds.
  Time QuietBound(size_t k, Time now);
  void TimerOne(Part& part, Time now);
  void DeliverOne(Part& part, uint32_t n, uint16_t p, Time now);
  void PullOne(Part& part, uint32_t n, uint16_t p, Time now);
  /// One RX burst from an ethdev port, told to the node at the clock (no arrival timestamp).
  bool ReceiveEthdev(Part& part, uint32_t n, uint16_t p, Time now);
  void FlushEthdevTx(PortState& ps);
  /// Emulated wire: frames of ps.tx_hold whose last bit has reached the peer by `now` go to
  /// the PMD's backlog; the next one's time goes to *next_event.
  static void ReleaseHeld(PortState& ps, Time now, Time* next_event);
  /// The exact start of port ps's next wire slot: when the wire frees, or after an idle
  /// period when the node made the frame ready.
  static Time WireDue(const PortState& ps) {
    return ps.idle ? std::max(ps.next_free, ps.ready_at) : ps.next_free;
  }
  /// Recomputes ps's slot of its partition's `due` tree from its state: the earlier of its
  /// head delivery (tag kDueDelivery) and its next wire slot (kDueWire), by (time, key, sub);
  /// the delivery first on a full tie (as when each had a slot of its own, delivery first).
  static constexpr uint8_t kDueDelivery = 0, kDueWire = 1;
  static void Refresh(PortState& ps) {
    if (ps.due == nullptr) return;
    const Time d = ps.inbound.empty() ? kTimeNever : Meta(ps.inbound.Front())->deliver_at;
    const Time w = ps.wake && !ps.tx_blocked ? WireDue(ps) : kTimeNever;
    // (w, wire_key, wire_sub) < (d, arrive_key, 0): a sub is never below 0.
    const bool wire_first = w < d || (w == d && w != kTimeNever && ps.wire_key < ps.arrive_key);
    if (wire_first) {
      ps.due->Set(ps.slot, w, ps.wire_key, ps.wire_sub, kDueWire);
    } else {
      ps.due->Set(ps.slot, d, ps.arrive_key, 0, kDueDelivery);
    }
  }
  /// Events up to this far ahead of the clock run in the current iteration (a wire slot may
  /// start up to 1 us in the future, so back-to-back frames at 100 Gb/s need no iteration each).
  static constexpr Time kAhead = 1 * kUs;
  /// Stop the world: parks every other partition, runs the observer timers due at `now` that
  /// every partition has reached (its progress). True if it ran any.
  bool RunObservers(Time now);
  /// Parks this partition while an observer runs (other partitions' threads).
  void ParkIfAsked(Part& part);
  /// Calls `tap` (tap_ or depart_tap_), one partition's thread at a time.
  void Tap(const ArriveTap& tap, Time now, uint32_t n, uint16_t p, const rte_mbuf* m);
  /// The time node `n` is told for an event whose exact time is `exact`: that time, kept
  /// monotonic per node (a frame from another partition may reach a node after its later
  /// events) and never more than the node's catch-up window behind the clock, so that a loop
  /// that fell far behind degrades into a uniformly slower fabric (every node's time near the
  /// clock) instead of nodes whose clocks drift apart.
  Time NodeTime(const Part& part, uint32_t n, Time exact) {
    Time& t = node_now_[n];
    t = std::max({t, exact, part.now - node_catch_up_[n]});
    return t;
  }
  /// Timing::deviation of an event of node n due at `exact`, run at `now`, told `told`.
  Time Deviation(uint32_t n, Time now, Time exact, Time told) const {
    return node_boundary_[n] ? std::max(now, told) - exact : told - exact;
  }
  /// Records a delivery's or wire slot's lateness in h and its deviation, per port.
  void RecordPort(Part& part, LatenessHistogram& h, PortState& ps, Time late, Time dev) {
    h.Record(late);
    part.deviation.Record(dev);
    if (dev > opt_.tolerance) ++ps.late_events;
    if (dev > ps.max_late) {
      ps.max_late = dev;
      ps.max_late_at = part.now;
    }
  }
  void RecordTimer(Part& part, uint32_t n, Time late, Time dev);

  rte_mempool* pool_;
  LiveRunnerOptions opt_;
  std::vector<Node*> nodes_;
  std::vector<std::unique_ptr<Env>> envs_;
  std::vector<std::vector<PortState>> ports_;
  std::vector<std::unique_ptr<Part>> parts_;  ///< at least one
  std::vector<uint32_t> part_of_;             ///< per node: partition or kObserver
  std::priority_queue<Timer, std::vector<Timer>, std::greater<Timer>> observer_timers_;
  std::atomic<bool> pause_req_{false};  ///< an observer is about to run: park
  std::atomic<Time> next_observer_{kTimeNever};
  Time min_lookahead_ = kTimeNever;
  void PreparePartitions();  ///< the shortest lookahead of any link between partitions ///<
                             ///< the observers' next timer (partition 0 sets)
  std::atomic_flag tap_lock_ = ATOMIC_FLAG_INIT;
  std::vector<void*> ring_mem_;  ///< cross-partition rings (freed with the runner)
  bool partitioned_ = false, looped_ = false;
  uint64_t tsc0_ = 0;
  std::chrono::steady_clock::time_point epoch_{};
  std::atomic<bool> epoch_set_{false};                // release-stored after tsc0_ and epoch_
  std::chrono::steady_clock::time_point start_at_{};  // StartAt (epoch 0: not set)
  Time start_late_ = -1;   // StartAt: how far past it time 0 came (-1: not set)
  Time end_ = kTimeNever;  // StopAt
  std::atomic<bool> reached_end_{false};
  uint64_t tsc_hz_ = 0;
  uint64_t ps_per_tick_q32_ = 0;  ///< ps per TSC tick << 32 (SetTscHz)
  uint64_t ethdev_tx_dropped_ = 0;
  ArriveTap tap_;
  ArriveTap depart_tap_;
  std::vector<Time> node_now_;             ///< per node: the last time it was told (NodeTime)
  std::vector<Time> node_catch_up_;        ///< per node: its catch-up window (options)
  std::vector<bool> node_boundary_;        ///< per node: has an ethdev port
  std::vector<uint64_t> node_timer_late_;  ///< timers beyond tolerance, by node
  std::vector<Time> node_timer_max_, node_timer_max_at_;
  std::vector<uint64_t> node_seq_;     ///< per node: own keys taken (LocalKey)
  std::vector<uint64_t> node_cycles_;  ///< TSC cycles of its events (its partition's thread)
};

}  // namespace rocefab

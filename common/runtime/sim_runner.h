#pragma once
/// @file sim_runner.h
/// Discrete-event runner in virtual time (int64 ps), on one thread or on several (partitions).
///
/// Order: events run in (time, key) order, where the key is (node, class, port or the node's own
/// sequence number): at one picosecond a node takes its frame arrivals (by port) before its
/// timers and transmitter-free events (in the order it scheduled them), and nodes take their
/// turns by node index. The key depends only on the node and what it did, never on which thread
/// ran it, so the same nodes, inputs and seeds give byte-identical results on any number of
/// partitions (tests/unit/runner_test.cc, tests/scenario/ns3_import_test.cc).
///
/// Links: a frame Dequeued at time t onto a link of rate R and propagation delay P occupies the
/// wire for TxTime(bytes, R) and reaches the peer's Receive at
/// t + TxTime(bytes, R) + P, bytes being the runner's wire model's FrameBytes
/// (Runner::SetWireModel; Ethernet framing, WireBytes in time.h, by default). A port without a link
/// has its frames pulled and freed, counted in unconnected_tx_drops().
///
/// Partitions (SetPartitions): each runs its nodes' events on its own thread; they meet at the
/// end of windows of L ps, L being the smallest propagation delay of a link between two
/// partitions (conservative synchronisation: a frame sent in a window cannot arrive before the
/// window ends, so no partition ever receives an event in its past). Frames crossing partitions
/// are handed over at the window's end. Nodes of different partitions must share no state
/// except through links; the caller guarantees it (SimFabric::SetThreads lists what it refuses).
///
/// Ranks (SetRanks): the partitions are spread over the processes of an MPI run (ranks.h), every
/// process holding the same nodes and links and running only its own partitions' events. Frames
/// for a partition of another rank are copied (bytes and PacketMeta) and sent at the window's
/// end, in the order they were sent, and enter the peer's link as on one process; with them each
/// rank sends its next event time, so all ranks start the next window at the same time
/// (Ranks::AllToAllMin; one Min more after an observer ran). Observers run on every rank at
/// the same times; what they do to another rank's nodes has no effect there (the node does not
/// run), so an observer that must act on one node only acts where the node is owned
/// (owned()). Results are the same as on one partition.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "common/node.h"
#include "common/result.h"
#include "common/ring.h"
#include "common/rng.h"
#include "common/runtime/event_heap.h"
#include "common/runtime/loss_model.h"
#include "common/runtime/ranks.h"
#include "common/runtime/runner.h"

namespace rocefab {

class SimRunner final : public Runner {
 public:
  explicit SimRunner(rte_mempool* pool);
  ~SimRunner();  // stops the partition threads; frees frames still in flight
  SimRunner(const SimRunner&) = delete;
  SimRunner& operator=(const SimRunner&) = delete;

  /// Most nodes one runner holds (the node index fills 24 bits of the event key).
  static constexpr uint32_t kMaxNodes = uint32_t{1} << 24;
  /// Adds a node (not owned; must outlive the runner). Returns its index. Aborts beyond kMaxNodes.
  uint32_t AddNode(Node* node) override;
  size_t num_nodes() const { return nodes_.size(); }
  /// Connects port `pa` of node `a` with port `pb` of node `b` (full duplex, both directions at
  /// `rate` bits/s with propagation `delay` ps). Errors: unknown node/port, port already linked,
  /// rate <= 0, delay < 0.
  Status Connect(uint32_t a, uint16_t pa, uint32_t b, uint16_t pb, BitRate rate,
                 Time delay) override;

  /// Runs node i in partition part_of_node[i] (0..P-1, every partition non-empty, P <= 64); one
  /// thread per partition (the caller's thread runs partition 0). A node given kObserver instead
  /// (it must have no ports and come after every partitioned node) runs between windows while
  /// every partition waits, at each of its event times: it may read and act on any node (a
  /// fault timeline, a deadlock detector); node calls it makes (Receive, WakeTx, timers) take
  /// effect at its time exactly as on one partition. Nodes must not throw (on a partition
  /// thread the process ends). Call once, after the last Connect and before the first Run.
  /// Results are the same as on one partition. Errors: called after Run or twice, a size other
  /// than the number of nodes, an empty or out-of-range partition, an observer with ports or
  /// before a partitioned node, a link with zero propagation delay between two partitions (no
  /// lookahead).
  static constexpr uint32_t kObserver = UINT32_MAX;
  Status SetPartitions(const std::vector<uint32_t>& part_of_node);
  size_t num_partitions() const { return parts_.size(); }
  /// Runs partition p on rank rank_of_part[p] of `ranks` (not owned; outlives the runner); this
  /// process runs the partitions of ranks->rank(), one thread each. Call after SetPartitions and
  /// before the first Run, on every rank with the same nodes, links, partitions and
  /// rank_of_part. Errors: no partitions set, a size other than num_partitions(), a rank out of
  /// range or without a partition, a second call.
  Status SetRanks(Ranks* ranks, std::vector<uint32_t> rank_of_part);
  /// Whether node i runs in this process (always, without ranks; observers run on every rank).
  bool owned(uint32_t node) const { return owned_node_.empty() || owned_node_[node]; }
  Ranks* ranks() const { return ranks_; }
  /// Frames this rank sent to other ranks so far, and the bytes their copies took.
  uint64_t cross_rank_frames() const { return cross_rank_frames_; }
  /// Frames sent over a link between two partitions (this rank's partitions with ranks): each is
  /// handed over at a window's end instead of going straight onto the peer's delay line.
  uint64_t cross_partition_frames() const;
  uint64_t cross_rank_bytes() const { return cross_rank_bytes_; }
  /// The synchronisation window (ps): the smallest delay of a link between partitions; 0 on one.
  Time lookahead() const { return lookahead_; }
  /// Windows run in parallel so far (0 on one partition).
  uint64_t windows() const { return windows_; }
  /// Per partition of this rank (empty on one): events executed and wall-clock seconds spent
  /// running windows and waiting for the other partitions at their ends (load imbalance plus
  /// synchronisation). Wall-clock values: for progress output, never for results.
  struct PartitionLoad {
    uint64_t events;
    double busy_s;
    double wait_s;
  };
  std::vector<PartitionLoad> partition_load() const;

  /// Runs events with time <= `until`. Starts nodes on the first call. Returns when the event
  /// queue is empty or the next event lies after `until`; now() is then `until` (or the last
  /// event's time if the queue ran dry earlier and `until` is kTimeNever).
  void Run(Time until);
  Time now() const override { return now_; }
  bool idle() const;
  /// Events executed (sums over partitions; with ranks, over this rank's partitions, the
  /// observers' events counted on rank 0 only, so that the ranks' figures add up to one run's).
  uint64_t events_executed() const;
  /// Events executed by kind (frame arrivals, transmitter-free, node timers) and the largest
  /// number of events pending at once in one partition's heap (events due within about 2
  /// far-buckets of now; later ones wait outside it); for profiling (summary.json "sim_events").
  uint64_t arrive_events() const { return frames_delivered(); }
  uint64_t tx_free_events() const;
  uint64_t timer_events() const;
  size_t max_pending_events() const;
  uint64_t frames_delivered() const;
  uint64_t unconnected_tx_drops() const;

  /// Loss on the direction leaving (node, port) (loss_model.h); counted in lost_frames().
  /// Frame indices count from the first frame on that direction of the link.
  using LossModel = rocefab::LossModel;
  Status SetLoss(uint32_t node, uint16_t port, const LossModel& loss) override;
  uint64_t lost_frames() const override;

  /// Observer called for every frame delivered to a node, before Receive (tests, pcap taps).
  /// With partitions it is called on the receiving node's partition thread, so calls for nodes
  /// of different partitions run concurrently: a tap must then only touch per-partition state
  /// and hand its results over in the window-end hook.
  void SetArriveTap(ArriveTap tap) override { tap_ = std::move(tap); }
  /// Called after each parallel window (every partition has run its events up to the window's
  /// last time and waits) before the observers; not called on one partition.
  void SetWindowEndHook(std::function<void()> hook) { window_end_ = std::move(hook); }
  /// The (node, port) at the other end of a link; false if the port is not linked.
  bool Peer(uint32_t node, uint16_t port, uint32_t* peer_node, uint16_t* peer_port) const override {
    if (node >= ports_.size() || port >= ports_[node].size() || !ports_[node][port].linked)
      return false;
    *peer_node = ports_[node][port].peer_node;
    *peer_port = ports_[node][port].peer_port;
    return true;
  }

 private:
  enum class Kind : uint8_t { kArrive, kTxFree, kTimer };
  struct Event {
    Time t;
    uint64_t key;  // see ArriveKey / LocalKey
    uint32_t node;
    uint16_t port;
    Kind kind;
    uint64_t cookie;  // kTimer: the node's cookie; kArrive: the frame (rte_mbuf*), for Prefetch
  };
  struct Earlier {
    bool operator()(const Event& a, const Event& b) const {
      return a.t != b.t ? a.t < b.t : a.key < b.key;
    }
  };
  // Key: node index in bits 63..40; bit 39 clear for a frame arrival (low bits: the port; one
  // link delivers one frame at a time, so (time, node, port) is unique), set for the node's own
  // events (low bits: the node's sequence number, in the order it scheduled them).
  static constexpr int kNodeShift = 40;
  static constexpr uint64_t kOwnBit = uint64_t{1} << 39;
  static uint64_t ArriveKey(uint32_t node, uint16_t port) {
    return (uint64_t{node} << kNodeShift) | port;
  }
  uint64_t LocalKey(uint32_t node);

  struct PortState {
    bool linked = false;
    bool busy = false;           // a transmitter-free event or a wake is pending
    Time wire_free = 0;          // when the last frame sent has left (ps); see WakeTx
    uint64_t wire_free_key = 0;  // key reserved for the skipped event
    uint32_t peer_node = 0;
    uint16_t peer_port = 0;
    BitRate rate;
    Time delay = 0;
    uint64_t tx_frames = 0;
    std::unique_ptr<LossState> loss;
    // Frames on the wire towards this port, in arrival order (one link direction delivers in
    // FIFO order, so only the head needs an event in the heap: the heap stays at about one
    // event per busy link instead of one per frame in flight). Owned by this node's partition.
    Ring<std::pair<Time, rte_mbuf*>> inbound;  // (arrival time, frame), in arrival order
  };
  // A frame sent to a node of another partition, handed over at the end of the window.
  struct CrossFrame {
    Time t;
    uint32_t node;
    uint16_t port;
    rte_mbuf* m;
  };
  // One partition's event queue and clock. Touched only by its thread while a window runs.
  struct alignas(64) Part {
    uint32_t id = 0;
    EventHeap<Event, Earlier> events;
    // Events due two or more buckets of 2^kFarShift ps (16.8 us) after now wait here, by
    // bucket, and move into the heap when the heap's next event reaches their bucket. Far
    // timers (RTOs of finished QPs, flow starts, watchdog polls) would otherwise make the heap
    // ~30x deeper; their keys are kept, so the execution order is exactly the single heap's.
    std::map<int64_t, std::vector<Event>> far;
    int64_t far_cached_bucket = -1;
    std::vector<Event>* far_cached = nullptr;
    Time now = 0;
    uint64_t cur_key = 0;  // key of the event being executed (all keys: between runs)
    // Ports woken during the current event; their transmitters start right after it, at the
    // same virtual time, without a round trip through the heap.
    std::vector<std::pair<uint32_t, uint16_t>> wakes;
    std::vector<std::vector<CrossFrame>> outbox;  // by destination partition
    uint64_t events_executed = 0;
    uint64_t frames_delivered = 0;
    uint64_t tx_free_events = 0;
    uint64_t timer_events = 0;
    size_t max_pending = 0;
    uint64_t unconnected_tx_drops = 0;
    uint64_t lost_frames = 0;
    uint64_t cross_frames = 0;  // frames sent to a node of another partition
    std::atomic<Time> next{0};  // published between windows
    uint64_t busy_cycles = 0;   // TSC cycles running windows (wall clock, for partition_load)
    uint64_t wait_cycles = 0;   // TSC cycles waiting for the other partitions
  };
  static constexpr int kFarShift = 24;
  class Env;
  class Barrier;

  Part& PartOf(uint32_t node) { return *part_of_[node]; }
  void Push(Part& p, Time t, uint64_t key, uint32_t node, uint16_t port, Kind kind,
            uint64_t payload);
  void OnTxFree(Part& p, uint32_t node, uint16_t port);
  void WakeTx(uint32_t node, uint16_t port);
  void RunPendingWakes(Part& p);
  void Prefetch(const Event& next) const;
  // Moves the first far bucket into the heap if the heap's next event has reached it; true if
  // it did (call again: the next bucket may be due too).
  static bool MoveDueFarBucket(Part& p);
  // Moves due far buckets into the heap; the time of the part's next event or kTimeNever.
  static Time NextTime(Part& p);
  // Runs the part's events with time <= last.
  void RunEvents(Part& p, Time last);
  void MergeInbox(Part& p);
  void RunParallel(Time until);
  // noexcept: a node that throws on a partition thread ends the process at once (the other
  // threads would otherwise wait at the barrier forever).
  void PartLoop(Part& p, Time until) noexcept;
  void Worker(uint32_t part);
  // Runs the observers' events with time <= last, each with every partition's clock at its time
  // and the wakes it caused run right after it (as on one partition).
  void RunObserverEvents(Time last);
  uint64_t Sum(uint64_t Part::*field) const;
  bool OwnedPart(const Part& p) const { return owned_part_.empty() || owned_part_[p.id]; }
  // With ranks, at a window's end: sends the frames of this rank's partitions for partitions of
  // other ranks and puts those received into the sending partition's outbox (MergeInbox takes
  // them from there).
  void ExchangeAcrossRanks();
  // With ranks: whether any rank has an event due at or before t.
  bool AnyDue(Time t);

  rte_mempool* pool_;
  std::vector<Node*> nodes_;
  std::vector<std::unique_ptr<Env>> envs_;
  std::vector<std::vector<PortState>> ports_;
  struct alignas(64) NodeSeq {  // a cache line each: partitions count in parallel
    uint64_t v = 0;
  };
  std::vector<NodeSeq> node_seq_;
  std::vector<std::unique_ptr<Part>> parts_;
  std::vector<Part*> part_of_;       // by node
  std::unique_ptr<Part> observers_;  // the kObserver nodes' events (null: none)
  Time lookahead_ = 0;
  Time now_ = 0;
  bool started_ = false;
  uint64_t windows_ = 0;
  ArriveTap tap_;
  std::function<void()> window_end_;
  // Partition threads (partitions 1..P-1), started by the first Run on several partitions.
  std::unique_ptr<Barrier> barrier_;
  std::vector<std::thread> threads_;
  Time until_ = 0;        // the current Run's limit, for the threads
  Time window_last_ = 0;  // last time of the current window; -1: the run is over
  bool stop_ = false;     // set by the destructor
  Ranks* ranks_ = nullptr;
  std::vector<uint32_t> rank_of_part_;
  std::vector<char> owned_part_, owned_node_;  // empty: everything runs here
  uint64_t cross_rank_frames_ = 0, cross_rank_bytes_ = 0;
  // The next window's start, agreed in the last exchange (valid until an observer runs).
  bool next_known_ = false;
  Time known_next_ = 0;
};

}  // namespace rocefab

#pragma once
/// @file sim_runner.h
/// Discrete-event runner in virtual time (int64 ps). One thread; events ordered by (time, sequence
/// number), so the same nodes, inputs and seeds give byte-identical results.
///
/// Links: a frame Dequeued at time t onto a link of rate R and propagation delay P occupies the
/// wire for TxTime(WireBytes(len), R) and reaches the peer's Receive at
/// t + TxTime(WireBytes(len), R) + P (see time.h for WireBytes). A port without a link has its
/// frames pulled and freed, counted in unconnected_tx_drops().

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <queue>
#include <vector>

#include "common/node.h"
#include "common/result.h"
#include "common/ring.h"
#include "common/rng.h"
#include "common/runtime/event_heap.h"
#include "common/runtime/loss_model.h"

namespace rocefab {

class SimRunner {
 public:
  explicit SimRunner(rte_mempool* pool);
  ~SimRunner();  // frees frames still in flight
  SimRunner(const SimRunner&) = delete;
  SimRunner& operator=(const SimRunner&) = delete;

  /// Adds a node (not owned; must outlive the runner). Returns its index.
  uint32_t AddNode(Node* node);
  /// Connects port `pa` of node `a` with port `pb` of node `b` (full duplex, both directions at
  /// `rate` bits/s with propagation `delay` ps). Errors: unknown node/port, port already linked,
  /// rate <= 0, delay < 0.
  Status Connect(uint32_t a, uint16_t pa, uint32_t b, uint16_t pb, BitRate rate, Time delay);

  /// Runs events with time <= `until`. Starts nodes on the first call. Returns when the event
  /// queue is empty or the next event lies after `until`; now() is then `until` (or the last
  /// event's time if the queue ran dry earlier and `until` is kTimeNever).
  void Run(Time until);
  Time now() const { return now_; }
  bool idle() const { return events_.empty() && far_.empty(); }
  uint64_t events_executed() const { return events_executed_; }
  /// Events executed by kind (frame arrivals, transmitter-free, node timers) and the largest
  /// number of events pending at once in the heap (events due within about 2 far-buckets of
  /// now; later ones wait outside it); for profiling (summary.json "sim_events").
  uint64_t arrive_events() const { return frames_delivered_; }
  uint64_t tx_free_events() const { return tx_free_events_; }
  uint64_t timer_events() const { return timer_events_; }
  size_t max_pending_events() const { return max_pending_; }
  uint64_t frames_delivered() const { return frames_delivered_; }
  uint64_t unconnected_tx_drops() const { return unconnected_tx_drops_; }

  /// Loss on the direction leaving (node, port) (loss_model.h); counted in lost_frames().
  /// Frame indices count from the first frame on that direction of the link.
  using LossModel = rocefab::LossModel;
  Status SetLoss(uint32_t node, uint16_t port, const LossModel& loss);
  uint64_t lost_frames() const { return lost_frames_; }

  /// Observer called for every frame delivered to a node, before Receive (tests, pcap taps).
  using ArriveTap = std::function<void(Time now, uint32_t node, uint16_t port, const rte_mbuf* m)>;
  void SetArriveTap(ArriveTap tap) { tap_ = std::move(tap); }
  /// The (node, port) at the other end of a link; false if the port is not linked.
  bool Peer(uint32_t node, uint16_t port, uint32_t* peer_node, uint16_t* peer_port) const {
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
    uint64_t seq;
    uint32_t node;
    uint16_t port;
    Kind kind;
    uint64_t cookie;  // kTimer: the node's cookie; kArrive: the frame (rte_mbuf*), for Prefetch
  };
  struct Earlier {
    bool operator()(const Event& a, const Event& b) const {
      return a.t != b.t ? a.t < b.t : a.seq < b.seq;
    }
  };
  struct PortState {
    bool linked = false;
    bool busy = false;           // a transmitter-free event or a wake is pending
    Time wire_free = 0;          // when the last frame sent has left (ps); see WakeTx
    uint64_t wire_free_seq = 0;  // sequence number reserved for the skipped event
    uint32_t peer_node = 0;
    uint16_t peer_port = 0;
    BitRate rate = 0;
    Time delay = 0;
    uint64_t tx_frames = 0;
    std::unique_ptr<LossState> loss;
    // Frames on the wire towards this port, in arrival order (one link direction delivers in
    // FIFO order, so only the head needs an event in the heap: the heap stays at about one
    // event per busy link instead of one per frame in flight).
    Ring<std::pair<Time, rte_mbuf*>> inbound;  // (arrival time, frame), in arrival order
  };
  class Env;

  void Push(Time t, uint32_t node, uint16_t port, Kind kind, uint64_t payload);
  void PushWithSeq(Time t, uint64_t seq, uint32_t node, uint16_t port, Kind kind, uint64_t payload);
  void OnTxFree(uint32_t node, uint16_t port);
  void WakeTx(uint32_t node, uint16_t port);
  void RunPendingWakes();
  void Prefetch(const Event& next) const;

  rte_mempool* pool_;
  std::vector<Node*> nodes_;
  std::vector<std::unique_ptr<Env>> envs_;
  std::vector<std::vector<PortState>> ports_;
  EventHeap<Event, Earlier> events_;
  // Events due two or more buckets of 2^kFarShift ps (16.8 us) after now wait here, by bucket,
  // and move into the heap when the heap's next event reaches their bucket. Far timers (RTOs of
  // finished QPs, flow starts, watchdog polls) would otherwise make the heap ~30x deeper; their
  // sequence numbers are kept, so the execution order is exactly the single heap's.
  static constexpr int kFarShift = 24;
  std::map<int64_t, std::vector<Event>> far_;
  int64_t far_cached_bucket_ = -1;
  std::vector<Event>* far_cached_ = nullptr;
  Time now_ = 0;
  uint64_t seq_ = 0;
  uint64_t cur_seq_ = 0;  // sequence number of the event being executed
  bool started_ = false;
  uint64_t events_executed_ = 0;
  uint64_t frames_delivered_ = 0;
  uint64_t tx_free_events_ = 0;
  uint64_t timer_events_ = 0;
  size_t max_pending_ = 0;
  // Ports woken during the current event; their transmitters start right after it, at the same
  // virtual time, without a round trip through the heap.
  std::vector<std::pair<uint32_t, uint16_t>> wakes_;
  uint64_t unconnected_tx_drops_ = 0;
  uint64_t lost_frames_ = 0;
  ArriveTap tap_;
};

}  // namespace rocefab

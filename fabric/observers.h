#pragma once
/// @file fault_nodes.h
/// Port-less nodes that any runner drives with timers, so faults, deadlock detection and the time
/// series work the same in virtual and real time:
///  - FaultInjector applies the scenario's fault timeline (topo/faults.h) at its times;
///  - DeadlockDetector samples the wait-for graph of paused queues every `interval`: a node per
///    (switch, port, lossless priority) that is paused by received PFC and holds frames; an edge
///    from it to every such queue of the next switch (the link's peer) other than the one facing
///    back, when the peer's ingress PG for that priority is in XOFF. A cycle that persists for
///    `persist` is reported with its members and the time it formed;
///  - TimeSeriesSampler writes one timeseries.csv line per switch port every `interval`.
/// Both act through a FabricView, which the sim and live runs fill in.

#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "common/node.h"
#include "common/result.h"
#include "common/rng.h"
#include "common/runtime/loss_model.h"
#include "common/runtime/ranks.h"
#include "fabric/plan.h"
#include "nic-emu/emulated_host.h"
#include "switch/switch_node.h"
#include "topo/scenario.h"

namespace rocefab {

struct FabricView {
  const Scenario* scenario = nullptr;
  const FabricPlan* plan = nullptr;
  std::vector<SwitchNode*> switches;  ///< by plan switch index
  std::vector<EmulatedHost*> hosts;   ///< by plan host index; null for Linux namespace hosts
  std::vector<uint32_t> switch_node;  ///< runner node index of each switch
  std::vector<uint32_t> host_node;    ///< runner node index of each host (UINT32_MAX: none)
  std::function<Status(uint32_t node, uint16_t port, const LossModel&)> set_loss;
  std::function<bool(uint32_t node, uint16_t port, uint32_t* peer_node, uint16_t* peer_port)> peer;
  std::function<void(Time, const std::string&)> log;
  /// Whether runner node `node` runs in this process (a sim rank, SimRunner::owned); null:
  /// every node does. An observer acts on a node only where it runs.
  std::function<bool(uint32_t node)> owned;
  /// The ranks of a distributed sim run (null: one process): the deadlock detector shares what
  /// each rank's switches show before it looks for a cycle.
  Ranks* ranks = nullptr;

  bool owns(uint32_t node) const { return !owned || owned(node); }
  SwitchNode* sw(const std::string& name) const;
  EmulatedHost* host(const std::string& name) const;
};

/// The part every port-less observer shares: no ports, nothing to send, frames (none arrive)
/// freed, no stats of its own.
class PortlessNode : public Node {
 public:
  explicit PortlessNode(std::string name) : Node(std::move(name)) {}
  uint16_t num_ports() const override { return 0; }
  void Receive(Time, uint16_t, rte_mbuf* m) override { rte_pktmbuf_free(m); }
  rte_mbuf* Dequeue(Time, uint16_t) override { return nullptr; }
  nlohmann::json Stats() const override { return {}; }
};

class FaultInjector final : public PortlessNode {
 public:
  explicit FaultInjector(const FabricView* v) : PortlessNode("faults"), v_(v) {}
  void Start(Time now) override;
  void OnTimer(Time now, uint64_t cookie) override;

 private:
  // One injected frame of fault `idx` (pause, CNP or malformed) and the next one's timer.
  void Inject(Time now, uint64_t idx);
  rte_mbuf* BuildInjected(const Fault& fl);
  rte_mbuf* BuildGarbage(const Fault& fl, const Mac& dst_mac, Ipv4 dst_ip);
  // Hands a frame to the fault's target (a switch port, or a host's emulated NIC); false if
  // there is none (a Linux namespace host): the frame is freed.
  bool Deliver(Time now, const Fault& fl, rte_mbuf* m);
  void SetLinkLoss(const std::string& from, const std::string& to, const LossModel& lm);
  // Index in plan->links of the first link joining `a` and `b` (-1: none).
  int LinkIndex(const std::string& a, const std::string& b) const;
  const std::string& EndName(const FabricPlan::Endpoint& e) const;  // switch or host name
  // Recomputes every switch's routes without the links routing knows to be down.
  void Reroute(Time now);
  const FabricView* v_;
  Rng rng_{1};
  std::map<uint64_t, Time> active_;        // injections running: fault index -> end
  std::map<uint64_t, uint64_t> injected_;  // frames injected per fault
  // By plan->links index: active link_down faults (the link loses everything while > 0), and
  // the same count as routing sees it, each change reroute_after later (routes avoid the link
  // while > 0).
  std::vector<int> phys_down_, route_down_;
  // By fault index: its changes (true = down) not yet seen by routing, oldest first.
  std::map<uint64_t, std::deque<bool>> pending_;
};

class DeadlockDetector final : public PortlessNode {
 public:
  struct Deadlock {
    Time formed = -1, detected = -1;
    Time cleared = -1;  ///< when the cycle was last seen gone; -1: still there at the last pass
    std::vector<std::string> cycle;
  };
  /// Polls every `interval`. With `sleep_when_clear` (the live runner) it polls only while some
  /// switch port is paused (and while a cycle is being watched) and otherwise sleeps until
  /// Wake() (a switch received an XOFF that paused an idle port), so an idle or pause-free run
  /// costs no detector events. Without it (the sim) it polls at every multiple of `interval`
  /// from the start: its times are then known in advance, which lets it run between the windows
  /// of a partitioned sim (SimRunner::kObserver), and runs on any number of threads agree.
  DeadlockDetector(const FabricView* v, Time interval = 100 * kUs, Time persist = kMs,
                   bool sleep_when_clear = true)
      : PortlessNode("deadlock-detector"),
        v_(v),
        interval_(interval),
        persist_(persist),
        sleep_when_clear_(sleep_when_clear) {}
  void Start(Time now) override {
    polling_ = true;
    env_->ScheduleTimer(now + interval_, 0);
  }
  void OnTimer(Time now, uint64_t) override {
    Detect(now);
    polling_ = !sleep_when_clear_ || any_paused_ || cycle_since_ >= 0;
    if (polling_) env_->ScheduleTimer(now + interval_, 0);
  }
  /// A switch port went from no paused priority to some: resume polling at `now`.
  void Wake(Time now) {
    if (polling_ || env_ == nullptr) return;
    polling_ = true;
    env_->ScheduleTimer(now, 0);
  }
  nlohmann::json Stats() const override;
  const std::vector<Deadlock>& deadlocks() const { return deadlocks_; }
  /// One detection pass at `t` (public for tests).
  void Detect(Time t);
  /// The cycle seen so far ends (gone, changed, or moving again); a recorded one is marked
  /// cleared at `t`.
  void EndCycle(Time t);

 private:
  const FabricView* v_;
  Time interval_, persist_;
  bool sleep_when_clear_;
  std::vector<Deadlock> deadlocks_;
  Time cycle_since_ = -1;
  std::vector<std::string> cycle_now_;
  uint64_t cycle_sent_ = 0;        // frames the cycle's queues had sent when it was first seen
  bool any_paused_ = false;        // some switch port had a paused priority at the last pass
  std::vector<size_t> port_base_;  // by switch: its first port's index over all switch ports
  bool polling_ = false;
};

class TimeSeriesSampler final : public PortlessNode {
 public:
  /// The CSV header (docs/results.md, timeseries.csv).
  static constexpr const char* kHeader =
      "time_us,switch,port,queue_bytes,lossless_queue_bytes,rx_paused_mask,xoff_pg_mask,tx_bytes,"
      "pfc_xoff_sent,pfc_rx,ecn_marked,switch_drops,reorder_queues_in_use,reorder_held_frames,"
      "ingress_reserved_bytes,ingress_shared_bytes,ingress_headroom_bytes\n";
  /// Samples at 0, interval, 2 interval, ... (interval > 0) into `out` (not owned).
  TimeSeriesSampler(const FabricView* v, Time interval, std::ostream* out)
      : PortlessNode("timeseries"), v_(v), interval_(interval), out_(out) {}
  void Start(Time now) override { env_->ScheduleTimer(now, 0); }
  void OnTimer(Time now, uint64_t) override;

 private:
  const FabricView* v_;
  Time interval_;
  std::ostream* out_;
  Time next_ = 0;
};

/// Publishes every `interval` whether the emulated hosts' traffic is done (`done_fn`), for a
/// thread that is not the fabric's (the live driver deciding when to stop): as an observer it
/// reads the apps while every poll thread is parked, and the answer crosses threads atomically.
class DoneWatcher final : public PortlessNode {
 public:
  DoneWatcher(std::function<bool()> done_fn, Time interval)
      : PortlessNode("done_watch"), done_fn_(std::move(done_fn)), interval_(interval) {}
  void Start(Time now) override { env_->ScheduleTimer(now, 0); }
  void OnTimer(Time now, uint64_t) override {
    done_.store(done_fn_(), std::memory_order_release);
    env_->ScheduleTimer(now + interval_, 0);
  }
  bool done() const { return done_.load(std::memory_order_acquire); }

 private:
  std::function<bool()> done_fn_;
  Time interval_;
  std::atomic<bool> done_{false};
};

/// dcqcn.csv: every `interval`, one line per DCQCN QP of the traced hosts' emulated NICs
/// (output.dcqcn_trace): the reaction point's current rate, target rate and alpha.
class DcqcnSampler final : public PortlessNode {
 public:
  static constexpr const char* kHeader = "time_us,host,qpn,rate_gbps,target_gbps,alpha\n";
  /// `hosts`: plan host indices to trace; `out` not owned.
  DcqcnSampler(const FabricView* v, std::vector<int> hosts, Time interval, std::ostream* out)
      : PortlessNode("dcqcn_trace"),
        v_(v),
        hosts_(std::move(hosts)),
        interval_(interval),
        out_(out) {}
  void Start(Time now) override { env_->ScheduleTimer(now, 0); }
  void OnTimer(Time now, uint64_t) override;

 private:
  const FabricView* v_;
  std::vector<int> hosts_;
  Time interval_;
  std::ostream* out_;
  Time next_ = 0;
};

}  // namespace rocefab

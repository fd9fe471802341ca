#pragma once
/// @file live_runner.h
/// Real-time runner: drives nodes from a DPDK lcore poll loop with TSC time.
///
/// Loop shape (one clock read per iteration): expire timers -> RX bursts from ethdev ports ->
/// deliver frames whose delay line time has come -> pull frames from nodes onto free wires ->
/// TX bursts -> idle backoff. Ports are either DPDK ethdevs (af_packet/af_xdp on veth, PCI NICs)
/// or in-process links between two nodes, emulated exactly: a frame pulled at t leaves the wire
/// at t + TxTime(WireBytes(len), rate) and reaches the peer after the propagation delay (a delay
/// line). Ethdev ports are paced at their configured rate the same way, so queues build in the
/// switch (where the MMU sees them), not in the kernel.
///
/// Idle backoff: after `busy_poll` of no work the loop sleeps (nanosleep, 1 us timer slack) for
/// growing intervals up to `max_sleep`, never past the next timer or delay-line delivery, so an
/// oversubscribed 2-core host stays usable. Any work resets it.
///
/// All nodes of one LiveRunner run on the lcore that calls Loop(); a node's state never crosses
/// lcores.

#include <atomic>
#include <cstdint>
#include <memory>
#include <queue>
#include <vector>

#include "common/mbuf_fifo.h"
#include "common/node.h"
#include "common/packet.h"
#include "common/result.h"
#include "common/runtime/loss_model.h"

namespace rocefab {

struct LiveRunnerOptions {
  Time busy_poll = 2 * kMs;    ///< keep spinning this long after the last work (covers 1 ms pings)
  Time max_sleep = 20 * kUs;   ///< longest idle sleep
};

class LiveRunner {
 public:
  LiveRunner(rte_mempool* pool, LiveRunnerOptions opt = {});
  ~LiveRunner();
  LiveRunner(const LiveRunner&) = delete;
  LiveRunner& operator=(const LiveRunner&) = delete;

  uint32_t AddNode(Node* node);
  /// In-process link (both directions) with exact serialization and propagation delay.
  Status ConnectInternal(uint32_t a, uint16_t pa, uint32_t b, uint16_t pb, BitRate rate, Time delay);
  /// Binds port `p` of node `n` to a started ethdev (queue 0), paced at `rate`.
  Status AttachEthdev(uint32_t n, uint16_t p, uint16_t ethdev, BitRate rate);

  /// Loss on the direction leaving (n, p), as in the sim runner (loss_model.h).
  Status SetLoss(uint32_t n, uint16_t p, const LossModel& loss);
  uint64_t lost_frames() const { return lost_frames_; }
  /// The node and port at the other end of an in-process link (false for ethdev ports).
  bool Peer(uint32_t node, uint16_t port, uint32_t* peer_node, uint16_t* peer_port) const {
    if (node >= ports_.size() || port >= ports_[node].size() ||
        ports_[node][port].kind != PortState::Kind::kInternal) {
      return false;
    }
    *peer_node = ports_[node][port].peer_node;
    *peer_port = ports_[node][port].peer_port;
    return true;
  }

  /// Polls until `stop` becomes true. Call on the lcore that owns these nodes.
  void Loop(const std::atomic<bool>& stop);

  uint64_t iterations() const { return iterations_; }
  uint64_t idle_sleeps() const { return idle_sleeps_; }
  uint64_t ethdev_tx_dropped() const { return ethdev_tx_dropped_; }
  /// Nanoseconds since Loop started (readable after it returns).
  Time now() const { return now_; }

 private:
  class Env;
  struct PortState {
    enum class Kind : uint8_t { kNone, kInternal, kEthdev } kind = Kind::kNone;
    uint32_t peer_node = 0;
    uint16_t peer_port = 0;
    uint16_t ethdev = 0;
    BitRate rate = 0;
    Time delay = 0;
    Time next_free = 0;  ///< when the wire is free again
    bool wake = false;   ///< node has frames to pull
    bool idle = true;    ///< the last pull found the node's queues empty
    MbufFifo inbound;    ///< delay line towards this port (deliver_at in PacketMeta)
    MbufFifo tx_backlog; ///< ethdev frames the PMD did not take yet
    std::unique_ptr<LossState> loss;
  };
  struct Timer {
    Time t;
    uint64_t seq;
    uint32_t node;
    uint64_t cookie;
    bool operator>(const Timer& o) const { return t != o.t ? t > o.t : seq > o.seq; }
  };

  Time Now() const;
  bool PullPort(uint32_t n, uint16_t p, Time now, Time* next_event);

  rte_mempool* pool_;
  LiveRunnerOptions opt_;
  std::vector<Node*> nodes_;
  std::vector<std::unique_ptr<Env>> envs_;
  std::vector<std::vector<PortState>> ports_;
  std::priority_queue<Timer, std::vector<Timer>, std::greater<Timer>> timers_;
  uint64_t timer_seq_ = 0;
  uint64_t tsc0_ = 0;
  uint64_t tsc_hz_ = 0;
  Time now_ = 0;
  uint64_t iterations_ = 0, idle_sleeps_ = 0, ethdev_tx_dropped_ = 0, lost_frames_ = 0;
};

}  // namespace rocefab

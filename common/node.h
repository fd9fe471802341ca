#pragma once
/// @file node.h
/// The contract between nodes (switches, NICs, hosts) and the runners that drive them.
///
/// A node never reads a clock: every call carries `now` (ps). Ingress pushes (Receive), egress
/// pulls (Dequeue): a node that has a frame for a port calls env->WakeTx(port), and the runner
/// calls Dequeue(port) each time that port's wire is free, until it returns nullptr. The runner
/// owns the wire (serialization at the link rate, propagation delay) and the clock; a node runs
/// unchanged under SimRunner (virtual time) and LiveRunner (DPDK lcores, TSC time).
///
/// Ownership: a frame passed to Receive belongs to the node, which must forward it (queue it for
/// a Dequeue) or free it and count the drop under a named reason. A frame returned by Dequeue
/// belongs to the runner.

#include <rte_mbuf.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/time.h"
#include "common/wire/wire_model.h"

namespace rocefab {

/// A node's frame accounting over its life. The ownership rule below makes it an identity:
/// received + created == transmitted + dropped + consumed + held, for every node at any instant
/// between events. A run checks it at its end (summary.json `conservation`); a node for which it
/// does not hold has lost or duplicated a frame without a counter.
struct FrameBalance {
  uint64_t received = 0;     ///< frames passed to Receive
  uint64_t created = 0;      ///< frames the node made (or tried to: a failed allocation is both
                             ///< created and dropped under no_buffer)
  uint64_t transmitted = 0;  ///< frames returned by Dequeue
  uint64_t dropped = 0;      ///< frames freed under a named drop reason
  uint64_t consumed = 0;     ///< frames that ended in the node, not dropped (a PFC frame acted
                             ///< on, an ARP answered, a flooded frame's original after its copies)
  uint64_t held = 0;         ///< frames in the node's queues now
  /// Frames in minus frames accounted for: 0 when balanced; > 0 lost, < 0 duplicated.
  int64_t imbalance() const {
    return static_cast<int64_t>(received + created) -
           static_cast<int64_t>(transmitted + dropped + consumed + held);
  }
  FrameBalance& operator+=(const FrameBalance& o) {
    received += o.received;
    created += o.created;
    transmitted += o.transmitted;
    dropped += o.dropped;
    consumed += o.consumed;
    held += o.held;
    return *this;
  }
};
/// As JSON: the six counts under their field names (summary.json `conservation`).
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(FrameBalance, received, created, transmitted, dropped, consumed,
                                   held)

/// Services a runner gives to one node. Calls are made from the thread that owns the node.
class NodeEnv {
 public:
  virtual ~NodeEnv() = default;
  /// The node has frames for `port`; the runner calls Node::Dequeue(port) when the wire is free.
  virtual void WakeTx(uint16_t port) = 0;
  /// Calls Node::OnTimer(cookie) at time `at` (clamped to now if in the past). Timers cannot be
  /// cancelled; nodes ignore stale cookies.
  virtual void ScheduleTimer(Time at, uint64_t cookie) = 0;
  /// The pool nodes allocate frames they originate from (ARP, ICMP, PFC, traffic).
  virtual rte_mempool* pool() = 0;
  /// How many bytes a frame occupies a link for (common/wire/wire_model.h): the runner's model,
  /// which a NIC's rate limiter paces by. Ethernet framing unless the runner was given another.
  virtual const WireModel& wire() const { return EthernetWire::Instance(); }
};

class Node {
 public:
  virtual ~Node() = default;
  const std::string& name() const { return name_; }
  virtual uint16_t num_ports() const = 0;
  /// Called once before the first event.
  void Attach(NodeEnv* env) { env_ = env; }
  /// Called once at time `now` when the run starts.
  virtual void Start(Time /*now*/) {}
  virtual void Receive(Time now, uint16_t port, rte_mbuf* m) = 0;
  virtual rte_mbuf* Dequeue(Time now, uint16_t port) = 0;
  /// A hint that Dequeue(port) comes next: start loading what it will read (the frames at the
  /// head of that port's queues) into the CPU cache. No effect on behaviour; the sim runner calls
  /// it one event ahead so the memory latency overlaps the current event.
  virtual void PrefetchTx(uint16_t /*port*/) const {}
  /// True if Dequeue(port) would return nullptr from now until this node next calls
  /// WakeTx(port) (nothing queued, nothing generated on demand). The sim runner asks after each
  /// frame sent: a port with nothing left needs no "transmitter free" event, and a WakeTx before
  /// the frame has left waits for it. The default (false) is always safe.
  virtual bool TxDrained(uint16_t /*port*/) const { return false; }
  virtual void OnTimer(Time /*now*/, uint64_t /*cookie*/) {}
  /// Counters and state for reports, as JSON (keys stable; values deterministic).
  virtual nlohmann::json Stats() const = 0;
  /// The node's frame accounting (see FrameBalance); nullopt for a node that does not keep one.
  virtual std::optional<FrameBalance> frame_balance() const { return std::nullopt; }

 protected:
  explicit Node(std::string name) : name_(std::move(name)) {}
  NodeEnv* env_ = nullptr;

 private:
  std::string name_;
};

}  // namespace rocefab

#pragma once
/// @file runner.h
/// What the fabric builder (fabric/fabric.h) needs from a runner: nodes, full-duplex links with
/// exact serialization and propagation, loss on a link direction, the peer of a port, the
/// runner's time and a tap on frame arrivals. SimRunner (virtual time) and LiveRunner (TSC time)
/// implement it; everything else about them (events vs delay lines and ethdevs) stays theirs.

#include <rte_mbuf.h>

#include <cstdint>
#include <functional>

#include "common/node.h"
#include "common/result.h"
#include "common/runtime/loss_model.h"
#include "common/time.h"
#include "common/wire/wire_model.h"

namespace rocefab {

class Runner {
 public:
  virtual ~Runner() = default;
  /// Adds a node (not owned; must outlive the runner). Returns its index (0, 1, ...).
  virtual uint32_t AddNode(Node* node) = 0;
  /// Full-duplex link between port `pa` of node `a` and port `pb` of node `b`, both directions at
  /// `rate` bits/s with propagation `delay` ps. Errors: unknown node/port, port already in use,
  /// rate <= 0, delay < 0.
  virtual Status Connect(uint32_t a, uint16_t pa, uint32_t b, uint16_t pb, BitRate rate,
                         Time delay) = 0;
  /// Loss on the direction leaving (node, port) (loss_model.h), counted in lost_frames().
  virtual Status SetLoss(uint32_t node, uint16_t port, const LossModel& loss) = 0;
  virtual uint64_t lost_frames() const = 0;
  /// The (node, port) at the other end of a link; false if the port is not linked to a node.
  virtual bool Peer(uint32_t node, uint16_t port, uint32_t* peer_node,
                    uint16_t* peer_port) const = 0;
  /// The runner's time (ps since the run started).
  virtual Time now() const = 0;
  /// Called for every frame delivered to a node, before Receive (pcap taps, tests), on the
  /// thread that runs the receiving node.
  using ArriveTap = std::function<void(Time now, uint32_t node, uint16_t port, const rte_mbuf* m)>;
  virtual void SetArriveTap(ArriveTap tap) = 0;
  /// Called for every frame a node sends out of a port whose other end is not a node of the
  /// runner (live: an ethdev port towards a namespace host, an external device or another
  /// process), stamped when its last bit has crossed the port's wire (plus the wire's delay
  /// when emulated), on the sending node's thread. Runners without such ports ignore it.
  virtual void SetDepartTap(ArriveTap tap) { (void)tap; }
  /// How many bytes a frame occupies a link for (common/wire/wire_model.h): EthernetWire unless
  /// set. Set before the run; the model must outlive the runner. Nodes see it as NodeEnv::wire().
  void SetWireModel(const WireModel& w) { wire_ = &w; }
  const WireModel& wire_model() const { return *wire_; }

 protected:
  const WireModel* wire_ = &EthernetWire::Instance();
};

}  // namespace rocefab

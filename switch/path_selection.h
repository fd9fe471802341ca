#pragma once
/// @file path_selection.h
/// How a switch picks the member of an ECMP group for a routed frame, and what else its load
/// balancing scheme does on the way: one class per scheme, chosen once when the switch is built
/// (MakePathSelection), so SwitchNode::RouteIpv4 calls the same hooks whatever the scheme.
///
///   EcmpPaths      ECMP: the member is the flow hash modulo the group size.
///   BalancerPaths  LetFlow, DRILL: a LoadBalancer (load_balancer.h) decides per data frame.
///   ConweavePaths  ConWeave (Song et al., SIGCOMM 2023) in a ToR: tags RoCE data at the source
///                  ToR, reroutes per epoch, holds and releases out-of-order frames at the
///                  destination ToR (switch_conweave.cc; the algorithm in conweave.h).
///   ConweaveTransitPaths  ConWeave in a leaf or spine: a tagged frame that carries a source
///                  route (3-tier Clos, between podsets) takes the uplink it names; else ECMP.
///   CongaPaths     CONGA (Alizadeh et al., SIGCOMM 2014): a DRE per egress port in every
///                  switch; in a leaf, congestion-aware flowlet choice, CE and feedback tags
///                  (switch_conga.cc; the algorithm in conga.h). In a 3-tier Clos the source ToR
///                  source-routes the leaf's uplink (the path id), which leaves follow.
///
/// The hooks, in the order RouteIpv4 calls them: ConsumeControl (a frame for a connected subnet,
/// before TTL: a scheme's own control packet is consumed), AtDestination (a frame routed to a
/// connected subnet: the scheme may take it, e.g. to hold it), Pick (a data frame on a group of
/// more than one member; ACK/NAK/CNP and ICMP take EcmpPick), OnRouted (every frame routed onto
/// a group). OnDequeue sees every frame leaving an egress port, OnTimer the scheme's timers
/// (TimerKind::kConweave). Errors: none; a frame a hook cannot use (too short, not RoCEv2) is
/// left to ECMP. Runs on the switch's thread; never reads a clock.

#include <rte_mbuf.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "common/mbuf_fifo.h"
#include "common/wire/headers.h"
#include "switch/conga.h"
#include "switch/conweave.h"
#include "switch/load_balancer.h"
#include "switch/route_table.h"
#include "switch/switch_config.h"

namespace rocefab {

class SwitchNode;

class PathSelection {
 public:
  explicit PathSelection(SwitchNode& sw) : sw_(sw) {}
  virtual ~PathSelection() = default;
  PathSelection(const PathSelection&) = delete;
  PathSelection& operator=(const PathSelection&) = delete;

  /// A frame for one of the switch's connected subnets, before TTL and MAC rewrite: true if it
  /// was the scheme's control packet and is consumed (freed; not a drop).
  virtual bool ConsumeControl(Time /*now*/, rte_mbuf* /*m*/, const ParsedFrame& /*p*/) {
    return false;
  }
  /// A frame routed to connected subnet `svi` that came from `prev_hop` (its source MAC before
  /// rewrite): true if the scheme took it (delivered, held or dropped it).
  virtual bool AtDestination(Time /*now*/, rte_mbuf* /*m*/, const ParsedFrame& /*p*/,
                             uint16_t /*svi*/, const Mac& /*prev_hop*/) {
    return false;
  }
  /// True if the scheme writes tags into RoCEv2 frames (BTH byte 4, ICRC-masked): frames from
  /// servers then have what would look like a tag's valid bit cleared on entry.
  virtual bool Tags() const { return false; }
  /// Index of the member of `g` (more than one member) for data frame `m`, whose ECMP hash is
  /// `hash`.
  virtual uint32_t Pick(Time now, rte_mbuf* m, const ParsedFrame& p, const RouteGroup& g,
                        uint32_t hash) = 0;
  /// True if OnRouted and OnDequeue do anything (the switch skips both calls otherwise; asked
  /// once, when the switch is built).
  virtual bool ObservesFrames() const { return false; }
  /// Every frame routed onto a group, after the choice (if ObservesFrames()).
  virtual void OnRouted(rte_mbuf* /*m*/, const ParsedFrame& /*p*/) {}
  /// Every frame leaving egress `port` (if ObservesFrames()).
  virtual void OnDequeue(Time /*now*/, uint16_t /*port*/, rte_mbuf* /*m*/) {}
  /// A timer the scheme scheduled (TimerKind::kConweave).
  virtual void OnTimer(Time /*now*/) {}
  /// The scheme's block(s) of the switch's Stats().
  virtual void AddStats(nlohmann::json& /*j*/) const {}
  /// Decisions the scheme made per data frame and those that changed a flow's member.
  virtual uint64_t decisions() const { return 0; }
  virtual uint64_t path_changes() const { return 0; }
  /// ConWeave destination stage on egress `port`: reorder queues in use, frames held (0 else).
  virtual uint32_t reorder_queues_in_use(uint16_t /*port*/) const { return 0; }
  virtual uint64_t reorder_held_frames(uint16_t /*port*/) const { return 0; }

 protected:
  SwitchNode& sw_;
};

class EcmpPaths final : public PathSelection {
 public:
  using PathSelection::PathSelection;
  uint32_t Pick(Time now, rte_mbuf* m, const ParsedFrame& p, const RouteGroup& g,
                uint32_t hash) override;
};

class BalancerPaths final : public PathSelection {
 public:
  BalancerPaths(SwitchNode& sw, std::unique_ptr<LoadBalancer> lb)
      : PathSelection(sw), lb_(std::move(lb)) {}
  uint32_t Pick(Time now, rte_mbuf* m, const ParsedFrame& p, const RouteGroup& g,
                uint32_t hash) override;
  uint64_t decisions() const override { return decisions_; }
  uint64_t path_changes() const override { return lb_->path_changes(); }

 private:
  std::unique_ptr<LoadBalancer> lb_;
  uint64_t decisions_ = 0;
};

class ConweavePaths final : public PathSelection {
 public:
  ConweavePaths(SwitchNode& sw, const ConweaveParams& p, uint32_t ports);
  bool ConsumeControl(Time now, rte_mbuf* m, const ParsedFrame& p) override;
  bool AtDestination(Time now, rte_mbuf* m, const ParsedFrame& p, uint16_t svi,
                     const Mac& prev_hop) override;
  bool Tags() const override { return true; }
  uint32_t Pick(Time now, rte_mbuf* m, const ParsedFrame& p, const RouteGroup& g,
                uint32_t hash) override;
  void OnTimer(Time now) override;
  void AddStats(nlohmann::json& j) const override;
  uint32_t reorder_queues_in_use(uint16_t port) const override { return rx_.queues_in_use(port); }
  uint64_t reorder_held_frames(uint16_t port) const override;

 private:
  void Release(Time now, uint32_t port, uint32_t queue);
  // `data` is the data frame (parsed as `p`) that the control packet answers.
  void SendControl(Time now, const rte_mbuf* data, const ParsedFrame& p, uint8_t kind,
                   uint32_t epoch, uint32_t path);
  /// The destination ToR of host address `ip` (route group `g`'s leaf when it has one): its leaf
  /// index + 1, or 0 when no leaf subnet holds it.
  uint32_t DstTor(const RouteGroup* g, Ipv4 ip) const;
  void ArmTimer();

  ConweaveTx tx_;
  ConweaveRx rx_;
  std::vector<std::vector<MbufFifo>> held_;    ///< [egress port][reorder queue]
  std::vector<std::vector<Time>> held_since_;  ///< when each queue got its first frame
  Time max_hold_ = 0, total_hold_ = 0;         ///< reorder hold times (first frame to release)
  uint64_t holds_ = 0;
  Time timer_at_ = kTimeNever;
  uint64_t tagged_ = 0, scrubbed_ = 0, ctrl_sent_ = 0, ctrl_consumed_ = 0, packets_ = 0;
  uint64_t untagged_resv7_ = 0;  ///< data frames not tagged: their sender set BTH resv7
  uint64_t held_bytes_ = 0, held_bytes_peak_ = 0;
};

class ConweaveTransitPaths final : public PathSelection {
 public:
  using PathSelection::PathSelection;
  uint32_t Pick(Time now, rte_mbuf* m, const ParsedFrame& p, const RouteGroup& g,
                uint32_t hash) override;
  void AddStats(nlohmann::json& j) const override;

 private:
  uint64_t source_routed_ = 0;  ///< tagged frames sent on the member their source route names
};

class CongaPaths final : public PathSelection {
 public:
  /// `leaf_id`: this switch's leaf (the index of its subnet in leaf_subnets), or -1 (a spine).
  CongaPaths(SwitchNode& sw, const CongaParams& p, uint32_t ports, int leaf_id, uint32_t leaves);
  bool AtDestination(Time now, rte_mbuf* m, const ParsedFrame& p, uint16_t svi,
                     const Mac& prev_hop) override;
  bool Tags() const override { return true; }
  uint32_t Pick(Time now, rte_mbuf* m, const ParsedFrame& p, const RouteGroup& g,
                uint32_t hash) override;
  bool ObservesFrames() const override { return true; }
  void OnRouted(rte_mbuf* m, const ParsedFrame& p) override;
  void OnDequeue(Time now, uint16_t port, rte_mbuf* m) override;
  void AddStats(nlohmann::json& j) const override;

 private:
  /// A non-ToR switch's choice among `n` members: a tagged frame's path mod n, else ECMP.
  uint32_t Transit(rte_mbuf* m, const ParsedFrame& p, uint32_t n, uint32_t hash);

  std::vector<Dre> dre_;           ///< per egress port
  std::optional<CongaLeaf> leaf_;  ///< ToRs whose subnet is in leaf_subnets
  uint32_t leaf_id_ = 0;
  uint64_t tagged_ = 0, scrubbed_ = 0, ce_raised_ = 0;
  uint64_t source_routed_ = 0;  ///< tagged frames a non-ToR switch sent where their path says
};

/// The scheme's class for switch `sw` with configuration `cfg` (its load_balancing section).
/// `port_load(port)`: bytes queued on an egress port (DRILL).
std::unique_ptr<PathSelection> MakePathSelection(SwitchNode& sw, const SwitchConfig& cfg,
                                                 PortLoadFn port_load);

/// The leaf whose subnet in `lb.leaf_subnets` holds `ip`, or -1 (CONGA).
int CongaLeafOf(const LoadBalancingConfig& lb, Ipv4 ip);
/// A ConWeave path id: the low 32 bits of a next hop's router MAC (in a 2-tier leaf-spine, the
/// spine), which the source ToR writes as next hop and the destination ToR sees as source.
uint32_t ConweavePathId(const Mac& mac);

}  // namespace rocefab

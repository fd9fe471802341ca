#pragma once
/// @file compat.h
/// Scenario key "compat": model what another simulator models where it differs from rocefab on
/// purpose, so that a side-by-side comparison measures the fabric, not the accounting.
///
///   "none"          (default) real Ethernet framing, rocefab's PFC generation and yardstick.
///   "conweave-ns3"  the reference ConWeave ns-3 simulator (conweave-project/conweave-ns3,
///                   commit 236a801, read for facts; configs/scenarios/README.md lists each item
///                   with its source file):
///     wire          Ns3PppWire (common/wire/wire_model.h): PPP links without preamble or gap,
///                   its header sizes, no CNP packets.
///     ideal FCT     scratch/network-load-balance.cc qp_finish: base RTT = 2 x the path's
///                   propagation + one payload's serialization per link (CalculateRoute's
///                   txDelay), plus (size + packets x 48 header bytes) at the NIC rate, in whole
///                   ns (integer division as there).
///     PFC           switch-node.cc CheckAndSendPfc: an XOFF for every frame admitted to a PG
///                   that is over its threshold, pausing the peer for 5 us (PAUSE_TIME default,
///                   network-load-balance.cc), no timed refresh; switch-mmu.cc GetResumeClasses:
///                   XON 16 bytes below the XOFF threshold (m_pg_shared_alpha_cell_off_diff).
///     buffer        switch-mmu.cc CheckIngressAdmission: a lossless PG over its dynamic
///                   threshold is paused but still admitted to the shared pool; headroom is used
///                   only once the pool is full (MmuConfig::lossless_shared_beyond_limit).
///                   Set as defaults before "pfc" and "buffer" are read: explicit keys there win.
///     ConWeave      base RTT = 4 x the ToR's uplink propagation, no serialization
///                   (network-load-balance.cc: m_rxToRId2BaseRTT = one_hop_delay x 4).
///                   Frames held in a reorder queue are outside the buffer: switch-node.cc
///                   SendToDev hands ConWeave's packets to conweave-routing.cc RouteInput
///                   before DoSwitchSend's admission, and a held packet meets the MMU only when
///                   its queue releases it (ConweaveParams::charge_held_to_buffer = false;
///                   explicit keys win).
///     ECMP          switch-node.cc DoLbFlowECMP: MurmurHash3 of the reference's addresses and
///                   per-flow ports, seeded by node id, modulo the group (switch/ecmp.h), so
///                   every flow takes the path it takes there. Hosts are the reference's nodes
///                   0..H-1 in rocefab's host order, switches H.. in rocefab's switch order
///                   (the order of the reference's topology file as scripts/ns3_to_rocefab.py
///                   writes it; a generated Clos: ToRs, leaves, spines).
///     DCQCN         rdma-hw.cc cnp_received_mlx: the first cut one T_dec after the first CNP
///                   (CheckRateDecreaseMlx at T_dec + 1 ns; DcqcnConfig::first_decrease_delay).
///     buffer bytes  switch-mmu.cc charges p->GetSize(), the packet with its PPP header
///                   (WireModel::BufferBytes of Ns3PppWire).

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"
#include "common/time.h"
#include "common/wire/wire_model.h"

namespace rocefab {

struct PfcConfig;
struct BufferConfig;
struct ConweaveParams;
struct DcqcnConfig;

/// An unloaded path between two hosts, for the yardsticks.
struct PathShape {
  int links = 2;  ///< links host to host (2 under one ToR, 4 across a leaf-spine), >= 1
  Time prop = 0;  ///< propagation per link, ps
  BitRate rate;   ///< the sending host's link rate (every link assumed as fast)
};

class CompatModel {
 public:
  virtual ~CompatModel() = default;
  /// "none" or "conweave-ns3".
  virtual std::string_view name() const = 0;
  virtual const WireModel& wire() const = 0;
  /// Round trip of `path` with nothing queued (the ideal FCT's fixed term).
  virtual Time BaseRtt(const PathShape& path, uint32_t mtu) const = 0;
  /// Ideal completion time of a `size`-byte message on an empty path with round trip `base_rtt`.
  virtual Time IdealFct(uint64_t size, uint32_t mtu, BitRate rate, Time base_rtt) const = 0;
  /// ConWeave's unloaded ToR-to-ToR round trip over `links` switch-to-switch links each way (2
  /// in a leaf-spine, 4 between the podsets of a 3-tier Clos), each of `prop` propagation and
  /// `rate` (the reply deadline's base; switch/conweave.h).
  virtual Time ConweaveBaseRtt(Time prop, BitRate rate, uint32_t mtu, int links = 2) const = 0;
  /// The PFC and lossless-buffer defaults of this model (before the scenario's keys are read).
  virtual void LosslessDefaults(PfcConfig* pfc, BufferConfig* buffer) const = 0;
  /// The ConWeave defaults of this model (before the scenario's load_balancing is read).
  virtual void ConweaveDefaults(ConweaveParams* conweave) const = 0;
  /// True: switches draw ECMP members with the reference's hash, addresses, ports and node ids
  /// (EcmpConfig::Function::kNs3Murmur3), NICs write a constant IPv4 identification per QP
  /// (RnicConfig::ip_id_per_qp) and trace flows take the reference's port numbers
  /// (FlowWorkload's reference_ports); the planner does it (fabric/plan.cc).
  virtual bool ReferenceEcmp() const = 0;
  /// Applies this model's DCQCN rules to a host's reaction point (after its profile and the
  /// scenario's overrides).
  virtual void DcqcnRules(DcqcnConfig* dcqcn) const = 0;

  /// The models by name; the error lists them.
  static Result<const CompatModel*> Named(const std::string& name);
  static const CompatModel& None();
};

}  // namespace rocefab

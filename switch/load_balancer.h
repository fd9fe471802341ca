#pragma once
/// @file load_balancer.h
/// Hop-local choice of one member of an ECMP next-hop group for a data packet. Three schemes, as
/// classes (the scenario's `load_balancing.scheme` picks one per fabric):
///  - EcmpBalancer: the member indexed by the 5-tuple hash (RFC 2992 hash-threshold style); every
///    packet of a flow takes the same path. Per-switch seed.
///  - LetFlowBalancer: flowlet switching (Vanini et al., NSDI 2017): a flow whose previous packet
///    through this switch is older than `flowlet_gap` picks a uniformly random member, otherwise
///    it keeps its member. Defaults from the ConWeave artifact (reference section 2): gap 100 us,
///    table entries aged out after 2 ms idle. Hop-local as in the LetFlow paper; the ConWeave
///    artifact instead decides at the source ToR and source-routes.
///  - DrillBalancer: per packet (Ghorbani et al., SIGCOMM 2017, DRILL(d=2, m=1)): two random
///    members plus the one that was best last time for this destination, the one with the fewest
///    bytes queued on its egress port (all priorities) wins. Memory keyed by destination IP, as in
///    the ConWeave artifact.
/// Control traffic (ACK/NAK/CNP, ICMP, ARP) is routed by the caller with the ECMP hash whatever
/// the scheme, as in the reference. Pure: time, the group and the port loads come in; randomness
/// from an injected Rng. Not thread-safe; one instance per switch.

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/flat_map.h"
#include "common/rng.h"
#include "common/time.h"
#include "switch/conga.h"
#include "switch/conweave.h"
#include "switch/route_table.h"

namespace rocefab {

struct LoadBalancingConfig {
  /// kConweave: ConWeave in the ToRs (switch/conweave.h), ECMP elsewhere; 2-tier fabrics only.
  /// kConga: CONGA (switch/conga.h): path choice in the source ToR, DREs in every switch;
  /// 2-tier fabrics with at most 16 uplinks per ToR and 256 ToRs.
  enum class Scheme : uint8_t { kEcmp, kLetFlow, kDrill, kConweave, kConga };
  Scheme scheme = Scheme::kEcmp;
  Time flowlet_gap = 100 * kUs;  ///< LetFlow: idle gap that opens a new flowlet, > 0
  Time flowlet_aging = 2 * kMs;  ///< LetFlow: flow entries idle longer than this are forgotten
  uint32_t drill_samples = 2;    ///< DRILL d: random members sampled per packet, 1..8
  ConweaveParams conweave;       ///< ConWeave thresholds and reorder-queue count
  CongaParams conga;             ///< CONGA flowlet gap, DRE and table aging
  /// CONGA: the server subnet of every ToR, indexed by leaf id (filled by the fabric builder;
  /// a ToR's own id is the entry holding its SVI). Same list in every switch.
  std::vector<std::pair<Ipv4, int>> leaf_subnets;
  /// ConWeave: unloaded RTT between two ToRs through a spine (the reply deadline's base), ps;
  /// the fabric builder computes it from the ToR's uplinks unless the scenario gives one.
  Time conweave_base_rtt = 0;
  /// ConWeave and CONGA: this switch is the second hop of a ToR's source-routed paths (a leaf of
  /// a 3-tier Clos between podsets): a tagged frame takes the member its path index names. Set
  /// by the planner (fabric/plan.cc); elsewhere transit switches route by ECMP.
  bool follow_source_routes = false;
};
const char* LoadBalancingSchemeName(LoadBalancingConfig::Scheme s);

/// What a balancer may look at besides the packet: bytes queued on an egress port.
using PortLoadFn = std::function<int64_t(uint16_t port)>;

class LoadBalancer {
 public:
  virtual ~LoadBalancer() = default;
  /// Index in [0, members.size()) of the member for a data packet of flow `flow_hash` (the
  /// switch's ECMP hash) to `dst` at `now`. `members` is non-empty.
  virtual uint32_t Pick(uint32_t flow_hash, Ipv4 dst, std::span<const NextHop> members,
                        Time now) = 0;
  virtual const char* name() const = 0;
  /// Decisions that sent a flow to a different member than its previous packet (LetFlow), or
  /// that differ from the memory (DRILL); 0 for ECMP.
  uint64_t path_changes() const { return path_changes_; }

 protected:
  uint64_t path_changes_ = 0;
};

class EcmpBalancer final : public LoadBalancer {
 public:
  uint32_t Pick(uint32_t flow_hash, Ipv4, std::span<const NextHop> members, Time) override {
    return EcmpPick(flow_hash, static_cast<uint32_t>(members.size()));
  }
  const char* name() const override { return "ecmp"; }
};

class LetFlowBalancer final : public LoadBalancer {
 public:
  LetFlowBalancer(const LoadBalancingConfig& c, uint64_t seed) : c_(c), rng_(seed) {}
  uint32_t Pick(uint32_t flow_hash, Ipv4 dst, std::span<const NextHop> members, Time now) override;
  const char* name() const override { return "letflow"; }
  size_t flows() const { return table_.size(); }

 private:
  struct Entry {
    uint32_t member = 0;
    Time last = 0;
  };
  LoadBalancingConfig c_;
  Rng rng_;
  FlatMap<uint64_t, Entry> table_;  ///< key: flow hash and destination
  uint32_t picks_since_sweep_ = 0;
};

class DrillBalancer final : public LoadBalancer {
 public:
  DrillBalancer(const LoadBalancingConfig& c, uint64_t seed, PortLoadFn load)
      : c_(c), rng_(seed), load_(std::move(load)) {}
  uint32_t Pick(uint32_t flow_hash, Ipv4 dst, std::span<const NextHop> members, Time now) override;
  const char* name() const override { return "drill"; }

 private:
  LoadBalancingConfig c_;
  Rng rng_;
  PortLoadFn load_;
  FlatMap<Ipv4, uint32_t> memory_;  ///< destination -> member chosen last time
};

/// The balancer for `c`; `load` is used by DRILL only.
std::unique_ptr<LoadBalancer> MakeLoadBalancer(const LoadBalancingConfig& c, uint64_t seed,
                                               PortLoadFn load);

}  // namespace rocefab

#pragma once
/// @file conga.h
/// CONGA decisions (Alizadeh et al., "CONGA: Distributed Congestion-Aware Load Balancing for
/// Datacenters", SIGCOMM 2014) as pure classes: the switch passes in time, the flow key, the
/// local link metrics and an RNG, and applies the returned path. Semantics and defaults follow
/// the ConWeave artifact's baseline (conga-routing.cc, collected in
/// shared/reference/rdma-simulators.md section 2):
///  - every switch runs a Discounting Rate Estimator (DRE) per egress link: X += bytes sent,
///    X *= (1 - alpha) every T_dre; its metric is floor(X * 8 / (C * T_dre / alpha) * 2^Q),
///    i.e. the link utilisation quantised to Q bits (capped at 2^Q - 1);
///  - a packet carries CE, the largest metric of the links it crossed (each hop: CE = max(CE,
///    metric of its egress link));
///  - the destination leaf stores CE per (source leaf, path) in its FromLeaf table and piggybacks
///    one entry, chosen at random, on each data packet it sends back to that leaf; the source
///    leaf stores it in its ToLeaf table (remote metric per (destination leaf, path));
///  - on a new flowlet (gap > 100 us) the source leaf examines 4 consecutive paths from a random
///    offset and takes the one with the smallest max(local uplink metric, remote metric); ties
///    are broken at random;
///  - table entries not refreshed for 500 us read as 0 (uncongested).
/// Paths are indices 0..n-1 into the source leaf's uplink group (a path = a spine in a 2-tier
/// leaf-spine), so both leaves of a pair name a path the same way.
///
/// Not thread-safe; one CongaLeaf per ToR, one Dre per egress port of every switch.

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "common/flat_map.h"
#include "common/rng.h"
#include "common/time.h"

namespace rocefab {

/// CONGA parameters; defaults are the ConWeave artifact's (reference section 2).
struct CongaParams {
  Time flowlet_gap = 100 * kUs;   ///< idle gap that opens a new flowlet, > 0
  Time dre_period = 50 * kUs;     ///< T_dre: the DRE decays once per period, > 0
  double dre_alpha = 0.2;         ///< DRE decay factor, (0, 1)
  uint32_t quant_bits = 3;        ///< Q: metrics are 0..2^Q-1; 1..3 (3 bits on the wire)
  Time metric_aging = 500 * kUs;  ///< table entries older than this read as 0, > 0
  uint32_t candidates = 4;        ///< consecutive paths examined per decision, 1..16
  Time flow_aging = 2 * kMs;      ///< flowlet-table entries idle longer than this are forgotten
};

/// Largest number of paths (uplinks) and leaves the wire format carries (4 and 8 bits).
inline constexpr uint32_t kCongaMaxPaths = 16;
inline constexpr uint32_t kCongaMaxLeaves = 256;

/// Discounting Rate Estimator of one link (CONGA section 3.2). Decay happens at multiples of
/// the period (absolute time), computed lazily on access, so it equals a periodic timer's.
class Dre {
 public:
  Dre() = default;
  Dre(Time period, double alpha) : period_(period), keep_(1.0 - alpha), alpha_(alpha) {}
  /// `bytes` left on the link at `now` (ps, non-decreasing across calls).
  void Add(Time now, uint32_t bytes) {
    Decay(now);
    x_ += bytes;
  }
  /// The quantised utilisation of a link of `rate` bits/s at `now`: 0..2^q_bits-1.
  uint8_t Metric(Time now, BitRate rate, uint32_t q_bits);
  /// The register X in bytes after decay up to `now` (tests).
  double bytes(Time now) {
    Decay(now);
    return x_;
  }

 private:
  void Decay(Time now);
  Time period_ = 50 * kUs;
  double keep_ = 0.8, alpha_ = 0.2;
  double x_ = 0;
  int64_t epoch_ = 0;  // index of the last period boundary applied
};

struct CongaFeedback {
  uint32_t path = 0;
  uint8_t metric = 0;
};

/// One leaf (ToR) of CONGA: source-side flowlet decisions and both congestion tables.
class CongaLeaf {
 public:
  /// `leaves`: number of leaf ids in the fabric, 1..kCongaMaxLeaves.
  CongaLeaf(const CongaParams& p, uint32_t leaves);

  /// Source leaf: the path in [0, local.size()) for a data packet of `flow` to leaf `dst_leaf`.
  /// `local[i]` is the metric of the uplink of path i (1..kCongaMaxPaths entries, same order
  /// every call). A packet within `flowlet_gap` of the flow's previous one keeps its path.
  uint32_t ChoosePath(uint64_t flow, uint32_t dst_leaf, std::span<const uint8_t> local, Time now,
                      Rng& rng);

  /// Destination leaf: a packet from `src_leaf` that took `path` arrived with `ce`.
  void OnArrival(uint32_t src_leaf, uint32_t path, uint8_t ce, Time now);
  /// What to piggyback on a packet to `dst_leaf`: one FromLeaf[dst_leaf] entry at random among
  /// the paths seen so far (aged entries report 0), or nothing if no packet from it has arrived.
  std::optional<CongaFeedback> Feedback(uint32_t dst_leaf, Time now, Rng& rng);
  /// Source leaf: `remote_leaf` reports that our packets on `path` met `metric`.
  void OnFeedback(uint32_t remote_leaf, uint32_t path, uint8_t metric, Time now);
  /// ToLeaf[leaf][path] after aging (0 if never set or older than metric_aging).
  uint8_t RemoteMetric(uint32_t leaf, uint32_t path, Time now) const;

  struct Stats {
    uint64_t flowlets = 0;      ///< decisions taken at a flowlet boundary
    uint64_t path_changes = 0;  ///< flowlet decisions that moved a known flow to another path
    uint64_t feedback_sent = 0;
    uint64_t feedback_received = 0;
    uint64_t arrivals = 0;  ///< tagged packets recorded in FromLeaf
  };
  const Stats& stats() const { return stats_; }
  size_t flows() const { return flows_.size(); }

 private:
  struct Entry {
    uint8_t metric = 0;
    bool seen = false;
    Time updated = 0;
  };
  struct Flow {
    uint32_t path = 0;
    Time last = 0;
  };
  /// Writes table[leaf][path]; false (nothing stored) if either id is out of range.
  bool Store(std::vector<Entry>& table, uint32_t leaf, uint32_t path, uint8_t metric, Time now);
  uint8_t Aged(const Entry& e, Time now) const {
    return e.seen && now - e.updated <= p_.metric_aging ? e.metric : 0;
  }

  CongaParams p_;
  uint32_t leaves_;
  std::vector<Entry> to_leaf_;    ///< [leaf * kCongaMaxPaths + path]
  std::vector<Entry> from_leaf_;  ///< [leaf * kCongaMaxPaths + path]
  FlatMap<uint64_t, Flow> flows_;
  uint32_t picks_since_sweep_ = 0;
  Stats stats_;
};

}  // namespace rocefab

#pragma once
/// @file ecn.h
/// RED/WRED ECN marking on an egress queue, the DCQCN congestion point (Zhu et al., SIGCOMM 2015;
/// same rule in the HPCC/ConWeave simulators' switch-node.cc): with q the queue's bytes,
///   q <= Kmin: no mark;  Kmin < q <= Kmax: mark with p = Pmax (q - Kmin) / (Kmax - Kmin);
///   q > Kmax: mark every ECT frame (and drop non-ECT frames if drop_non_ect).
/// Only ECT(0)/ECT(1) frames are marked CE (RFC 3168). Pure: the RNG is injected.

#include <cstdint>

#include "common/rng.h"

namespace rocefab {

struct WredProfile {
  bool enabled = false;
  int64_t kmin = 100'000;   ///< bytes (ConWeave/HPCC runs: 100 KB at 100G)
  int64_t kmax = 400'000;   ///< bytes, > kmin
  double pmax = 0.2;        ///< 0..1
  bool drop_non_ect = false;
  bool mark_on_dequeue = false;  ///< default: decide at enqueue (DCQCN CP); true: at dequeue
};

enum class EcnAction : uint8_t { kNone, kMark, kDrop };

class EcnMarker {
 public:
  /// Decision for a frame seeing `queue_bytes` in its queue; `ect` = frame is ECN-capable.
  static EcnAction Decide(const WredProfile& w, int64_t queue_bytes, bool ect, Rng& rng) {
    if (!w.enabled || queue_bytes <= w.kmin) return EcnAction::kNone;
    bool hit = true;
    if (queue_bytes <= w.kmax) {
      const double p = w.pmax * static_cast<double>(queue_bytes - w.kmin) /
                       static_cast<double>(w.kmax - w.kmin);
      hit = rng.Uniform() < p;
    }
    if (!hit) return EcnAction::kNone;
    if (ect) return EcnAction::kMark;
    return queue_bytes > w.kmax && w.drop_non_ect ? EcnAction::kDrop : EcnAction::kNone;
  }
};

}  // namespace rocefab

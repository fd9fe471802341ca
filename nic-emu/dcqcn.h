#pragma once
/// @file dcqcn.h
/// DCQCN reaction point (the sending NIC's per-QP rate limiter), Zhu et al., "Congestion Control
/// for Large-Scale RDMA Deployments", SIGCOMM 2015, in the Mellanox/NVIDIA form the HPCC and
/// ConWeave simulators use (rdma-hw.cc: cnp_received_mlx, UpdateAlphaMlx, CheckRateDecreaseMlx,
/// RateIncEventTimerMlx), plus the paper's byte counter:
///   first CNP:        alpha = initial_alpha; Rc = Rt = rate_on_first_cnp x Rc; timers start
///                     (the first decrease check first_decrease_delay + 1 ns later).
///   every T_alpha:    alpha = (1 - g) alpha + g [a CNP arrived in the period]  (else (1 - g)
///   alpha) every T_dec:      if a CNP arrived: (clamp or stage != 0: Rt = Rc); Rc = max(min_rate,
///                     Rc (1 - alpha / 2)); stages and byte count reset; increase timer restarts.
///   every T_inc (and every B bytes if byte_counter > 0): an increase event.
///     timer only (B = 0): stage < F: Rc = (Rt + Rc) / 2 (fast recovery); stage == F: Rt += R_AI
///       then Rc = (Rt + Rc) / 2; stage > F: Rt += R_HAI, Rc = (Rt + Rc) / 2; stage++.
///     with B: max(T, B) < F fast recovery; min(T, B) > F hyper (Rt += R_HAI); else additive.
///   Rt and Rc never exceed the line rate.
/// Pure: every call carries `now`; the owner arms timers at the times returned. The alpha timer is
/// evaluated lazily on the T_alpha grid anchored at the first CNP, so idle QPs cost nothing.

#include <cstdint>
#include <string>

#include "common/result.h"
#include "common/time.h"

namespace rocefab {

struct DcqcnConfig {
  double g = 1.0 / 256;                ///< alpha gain (0, 1]
  Time alpha_interval = 1 * kUs;       ///< T_alpha
  Time decrease_interval = 4 * kUs;    ///< T_dec (minimum time between cuts)
  Time increase_interval = 300 * kUs;  ///< T_inc (rate-increase timer)
  int64_t byte_counter = 0;            ///< B in bytes; 0 = timer-driven increase only
  int fast_recovery_steps = 1;         ///< F
  BitRate rate_ai = 40 * kMbps;        ///< R_AI
  BitRate rate_hai = 100 * kMbps;      ///< R_HAI
  BitRate min_rate = 100 * kMbps;
  double initial_alpha = 1.0;
  double rate_on_first_cnp = 1.0;  ///< fraction of the current rate set on the first CNP
  /// Delay of the first decrease check after the first CNP (then every T_dec): 0 = at once (1 ns
  /// later, after the alpha set-up). The reference simulators wait one T_dec (rdma-hw.cc
  /// cnp_received_mlx: ScheduleDecreaseRateMlx(q, 1), i.e. T_dec + 1 ns): "compat":
  /// "conweave-ns3" sets it to T_dec (topo/compat.h). Range [0, 1 s].
  Time first_decrease_delay = 0;
  bool clamp_target = false;    ///< Rt = Rc on every cut
  Time cnp_interval = 4 * kUs;  ///< NP: at most one CNP per QP per interval
  bool cnp_on_ooo = false;      ///< NP: also send a CNP with each out-of-order NAK (CX NICs)

  /// "paper": DCQCN paper/ns3-rdma (g 1/256, T_alpha 55 us, T_dec 50 us, T_inc 55 us,
  ///   B 10 MB, F 5, R_AI 40 Mb/s, R_HAI 200 Mb/s, min 100 Mb/s, clamp, CNP every 50 us);
  /// "nic": NVIDIA-like HPCC `dcqcn` profile (g 1/256, 1 us, 4 us, 300 us, F 1,
  ///   R_AI 5 Mb/s x line/25G, R_HAI 50 Mb/s x line/25G, min 1000 Mb/s, CNP every 4 us);
  /// "conweave": the ConWeave artifact/anchor run (as "nic" with R_AI 40, R_HAI 100, min 100 Mb/s,
  ///   CNP on ECN and on out-of-order arrival). "compat": "conweave-ns3" adds the reference's
  ///   first cut one T_dec after the first CNP (topo/compat.h).
  static Result<DcqcnConfig> Profile(const std::string& name, BitRate line_rate);
};

class DcqcnRateController {
 public:
  DcqcnRateController(const DcqcnConfig& cfg, BitRate line_rate);

  BitRate rate() const { return BitRate::Bps(static_cast<int64_t>(rc_)); }
  BitRate target() const { return BitRate::Bps(static_cast<int64_t>(rt_)); }
  /// Alpha at `now` (advances the lazy alpha timer).
  double alpha(Time now);
  /// Alpha at `now` without advancing anything (for traces: reading never changes the run).
  double PeekAlpha(Time now) const;
  bool active() const { return started_; }

  /// A CNP arrived. Returns when the owner must call OnDecreaseTimer (kTimeNever: already due).
  Time OnCnp(Time now);
  /// The decrease check at `now`. Returns the next increase-timer deadline to arm (or kTimeNever).
  Time OnDecreaseTimer(Time now);
  /// The increase timer fired at `now` (>= its deadline; timers may fire late in real time);
  /// calls before increase_deadline() are stale and do nothing.
  /// Returns the next deadline to arm, or kTimeNever when back at line rate.
  Time OnIncreaseTimer(Time now);
  /// `bytes` were sent at `now` (byte-counter increase events when configured).
  void OnBytesSent(int64_t bytes, Time now);
  Time increase_deadline() const { return inc_deadline_; }
  Time decrease_due() const { return dec_due_; }
  uint64_t cuts() const { return cuts_; }

 private:
  void Increase(bool by_timer);
  void AdvanceAlpha(Time now);

  DcqcnConfig cfg_;
  double line_;
  double rc_, rt_;
  double alpha_ = 1.0;
  bool started_ = false;
  bool alpha_cnp_ = false;  // CNP seen in the current alpha period
  bool dec_cnp_ = false;    // CNP seen since the last decrease check
  Time alpha_next_ = 0;     // next alpha boundary
  Time dec_anchor_ = 0;     // decrease-check grid origin
  Time dec_due_ = kTimeNever;
  Time inc_deadline_ = kTimeNever;
  int stage_t_ = 0, stage_b_ = 0;
  int64_t bytes_ = 0;
  uint64_t cuts_ = 0;
};

}  // namespace rocefab

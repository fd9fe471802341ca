#pragma once
/// @file pause_state.h
/// Receive side of PFC on one port: per-priority pause timers that expire on their own
/// (802.1Qbb: each frame restarts the timer of every enabled priority at quanta x 512 bit times
/// at this port's speed; quanta 0 = XON, resume now), plus the counters SONiC's watchdog reads
/// (SAI_PORT_STAT_PFC_<p>_RX_PKTS, _ON2OFF_RX_PKTS, _RX_PAUSE_DURATION). Pure: time comes in.

#include <array>
#include <cstdint>

#include "common/wire/pfc_frame.h"
#include "common/time.h"

namespace rocefab {

class PauseState {
 public:
  /// Applies a received frame at `now` on a port of `rate`; only priorities in `honoured_mask`
  /// (the lossless ones) are affected: lossy priorities ignore PFC.
  void Apply(Time now, const PfcFrame& f, BitRate rate, uint8_t honoured_mask);
  bool Paused(uint8_t prio, Time now) const { return until_[prio] > now; }
  /// Bit p set: priority p paused at `now`.
  uint8_t PausedMask(Time now) const { return now >= latest_until_ ? 0 : PausedMaskSlow(now); }
  /// Earliest expiry after `now` among priorities in `mask`, or kTimeNever.
  Time NextExpiry(Time now, uint8_t mask) const;
  /// Total time priority p spent paused up to `now`.
  Time PausedTime(uint8_t prio, Time now) const;
  uint64_t rx_frames(uint8_t prio) const { return rx_frames_[prio]; }
  /// Frames with a non-zero time for `prio` (XOFF, including refreshes).
  uint64_t rx_xoff_frames(uint8_t prio) const { return rx_xoff_[prio]; }
  uint64_t on2off(uint8_t prio) const { return on2off_[prio]; }

 private:
  uint8_t PausedMaskSlow(Time now) const;

  /// Upper bound of every until_ (the latest pause end ever set; XONs leave it): an unpaused
  /// port answers PausedMask from this one word.
  Time latest_until_ = 0;
  std::array<Time, 8> until_{};
  std::array<Time, 8> since_{};   // start of the current/last pause interval
  std::array<Time, 8> closed_{};  // total of finished intervals
  std::array<uint64_t, 8> rx_frames_{};
  std::array<uint64_t, 8> rx_xoff_{};
  std::array<uint64_t, 8> on2off_{};
};

}  // namespace rocefab

#pragma once
/// @file pfc_watchdog.h
/// PFC storm watchdog for one (port, lossless priority), with SONiC's semantics
/// (sonic-swss orchagent/pfc_detect_broadcom.lua, pfc_restore.lua; sonic-utilities pfcwd):
///  - every poll the detector compares the port's counters with the last poll; the storm
///    predicate is  dPFC_RX > 0  and  dON2OFF == 0  and the queue was paused at the last poll and
///    is paused now  (a continuous XOFF stream; ordinary congestion alternates XOFF/XON and so
///    has XON->XOFF transitions, and an XON-only stream never pauses the queue);
///  - while the predicate holds, the elapsed time is charged against detection_time; the storm is
///    declared when it is used up (so within detection_time + poll_interval); any poll without
///    the predicate restarts the count;
///  - in a storm, every poll without a received XOFF frame is charged against restoration_time
///    (XON frames do not count); any XOFF restarts it; at zero the storm is restored. With
///    `restore_after` (the paper's ToR behaviour: "re-enable lossless mode after 200 ms") the
///    storm ends restoration_time after detection whatever arrives.
/// Pure: counters and time come in; the switch applies the action (drop, forward or alert).
/// With the drop action the switch withholds its own PFC on the stormed priority (XON at
/// detection); at the restore it re-sends XOFF, and refreshes it, for a PG still over its threshold.

#include <cstdint>

#include "common/time.h"

namespace rocefab {

enum class WatchdogAction : uint8_t {
  kDrop,     ///< discard the queue, drop new frames to it and from its ingress PG, ignore its PFC
  kForward,  ///< ignore received PFC for the queue and keep transmitting
  kAlert,    ///< report only
};
const char* WatchdogActionName(WatchdogAction a);

struct PfcWatchdogConfig {
  bool enabled = false;
  Time detection_time = 200 * kMs;    ///< SONiC DEFAULT_DETECTION_TIME
  Time restoration_time = 200 * kMs;  ///< SONiC DEFAULT_RESTORATION_TIME
  Time poll_interval = 200 * kMs;     ///< SONiC DEFAULT_POLL_INTERVAL
  WatchdogAction action = WatchdogAction::kDrop;
  bool restore_after = false;         ///< paper mode: restore restoration_time after detection
  bool server_ports_only = false;     ///< watch only ports that face hosts (the paper's ToR rule)
  /// Each poll happens up to this much after it is due (uniform, from the switch's seeded RNG),
  /// the next one scheduled from the actual poll: SONiC's flex-counter polls are not exact.
  /// Each poll charges the time since the previous one, so a storm is declared within
  /// detection_time plus two polls (the first poll of a storm charges nothing, the last one may
  /// overshoot), each up to poll_interval + poll_jitter. 0 = exact polls. Range 0..poll_interval.
  Time poll_jitter = 0;
};

class PfcWatchdog {
 public:
  enum class Event : uint8_t { kNone, kStorm, kRestore };
  struct Sample {
    uint64_t rx_frames = 0;       ///< PFC frames received for the priority (XOFF and XON)
    uint64_t rx_xoff_frames = 0;  ///< of which XOFF
    uint64_t on2off = 0;          ///< XON->XOFF transitions
    bool paused = false;          ///< the queue is paused now
  };

  /// One poll at `now`. The first call only records the baseline.
  Event Poll(const PfcWatchdogConfig& cfg, Time now, const Sample& s);
  bool in_storm() const { return storm_; }
  uint64_t storms() const { return storms_; }
  uint64_t restores() const { return restores_; }
  Time storm_since() const { return storm_since_; }

 private:
  bool have_last_ = false;
  Sample last_;
  Time last_time_ = 0;
  Time detect_left_ = -1;
  Time restore_left_ = -1;
  bool storm_ = false;
  Time storm_since_ = -1;
  uint64_t storms_ = 0, restores_ = 0;
};

}  // namespace rocefab

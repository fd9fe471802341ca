#include "switch/pfc_watchdog.h"

#include <algorithm>

namespace rocefab {

const char* WatchdogActionName(WatchdogAction a) {
  switch (a) {
    case WatchdogAction::kDrop: return "drop";
    case WatchdogAction::kForward: return "forward";
    case WatchdogAction::kAlert: return "alert";
  }
  return "?";
}

PfcWatchdog::Event PfcWatchdog::Poll(const PfcWatchdogConfig& cfg, Time now, const Sample& s) {
  if (!have_last_) {
    have_last_ = true;
    last_ = s;
    last_time_ = now;
    detect_left_ = cfg.detection_time;
    return Event::kNone;
  }
  const Time elapsed = now - last_time_;
  Event ev = Event::kNone;
  if (!storm_) {
    const bool predicate = s.rx_frames > last_.rx_frames && s.on2off == last_.on2off && last_.paused &&
                           s.paused;
    if (predicate) {
      detect_left_ -= std::min(elapsed, cfg.detection_time);
      if (detect_left_ <= 0) {
        storm_ = true;
        storm_since_ = now;
        ++storms_;
        restore_left_ = cfg.restoration_time;
        ev = Event::kStorm;
      }
    } else {
      detect_left_ = cfg.detection_time;
    }
  } else {
    if (cfg.restore_after) {
      restore_left_ -= elapsed;
    } else if (s.rx_xoff_frames > last_.rx_xoff_frames) {
      restore_left_ = cfg.restoration_time;  // the storm goes on
    } else {
      restore_left_ -= elapsed;
    }
    if (restore_left_ <= 0) {
      storm_ = false;
      ++restores_;
      detect_left_ = cfg.detection_time;
      ev = Event::kRestore;
    }
  }
  last_ = s;
  last_time_ = now;
  return ev;
}

}  // namespace rocefab

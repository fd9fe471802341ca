#include "common/pause_state.h"

#include <algorithm>

namespace rocefab {

void PauseState::Apply(Time now, const PfcFrame& f, BitRate rate, uint8_t honoured_mask) {
  for (uint8_t p = 0; p < 8; ++p) {
    if (!((f.class_enable >> p) & 1) || !((honoured_mask >> p) & 1)) continue;
    ++rx_frames_[p];
    const bool was_paused = until_[p] > now;
    if (!was_paused && until_[p] > since_[p]) {
      closed_[p] += until_[p] - since_[p];  // the last interval ended on its own
      since_[p] = until_[p];
    }
    if (f.quanta[p] == 0) {  // XON
      if (was_paused) {
        closed_[p] += now - since_[p];
        since_[p] = now;
        until_[p] = now;
      }
      continue;
    }
    ++rx_xoff_[p];
    if (!was_paused) {
      ++on2off_[p];
      since_[p] = now;
    }
    until_[p] = now + PauseQuantaTime(f.quanta[p], rate);
    latest_until_ = std::max(latest_until_, until_[p]);
  }
}

uint8_t PauseState::PausedMaskSlow(Time now) const {
  uint8_t m = 0;
  for (uint8_t p = 0; p < 8; ++p) m |= static_cast<uint8_t>(Paused(p, now) << p);
  return m;
}

Time PauseState::NextExpiry(Time now, uint8_t mask) const {
  Time t = kTimeNever;
  for (uint8_t p = 0; p < 8; ++p) {
    if (((mask >> p) & 1) && until_[p] > now) t = std::min(t, until_[p]);
  }
  return t;
}

Time PauseState::PausedTime(uint8_t p, Time now) const {
  Time total = closed_[p];
  if (until_[p] > since_[p]) total += std::min(until_[p], now) - since_[p];
  return total;
}

}  // namespace rocefab

#include "switch/pfc_watchdog.h"

#include <gtest/gtest.h>

namespace rocefab {
namespace {

PfcWatchdogConfig Cfg() {
  PfcWatchdogConfig c;
  c.enabled = true;
  c.detection_time = 200 * kMs;
  c.restoration_time = 200 * kMs;
  c.poll_interval = 50 * kMs;
  return c;
}

TEST(PfcWatchdogTest, OrdinaryCongestionWithXoffAndXonNeverTriggers) {
  PfcWatchdog w;
  PfcWatchdog::Sample s;
  for (int i = 0; i <= 100; ++i) {  // 5 s of congestion: each poll sees XOFF, XON, XOFF again
    s.rx_frames += 10;
    s.rx_xoff_frames += 5;
    s.on2off += 3;
    s.paused = true;
    EXPECT_EQ(w.Poll(Cfg(), i * 50 * kMs, s), PfcWatchdog::Event::kNone);
  }
  EXPECT_FALSE(w.in_storm());
}

TEST(PfcWatchdogTest, ContinuousXoffTriggersWithinDetectionPlusPoll) {
  PfcWatchdog w;
  PfcWatchdog::Sample s;
  s.on2off = 1;
  s.paused = true;
  Time detected = -1;
  const Time storm_start = 0;
  for (int i = 0; i <= 20 && detected < 0; ++i) {
    if (i > 0) s.rx_frames += 7, s.rx_xoff_frames += 7;  // refreshed XOFF, never released
    if (w.Poll(Cfg(), storm_start + i * 50 * kMs, s) == PfcWatchdog::Event::kStorm) detected = i * 50 * kMs;
  }
  ASSERT_GE(detected, 0);
  EXPECT_LE(detected - storm_start, Cfg().detection_time + Cfg().poll_interval);
  EXPECT_GE(detected - storm_start, Cfg().detection_time);
  EXPECT_TRUE(w.in_storm());
}

TEST(PfcWatchdogTest, XonOnlyStreamNeverTriggers) {
  PfcWatchdog w;
  PfcWatchdog::Sample s;
  for (int i = 0; i <= 100; ++i) {
    s.rx_frames += 100;  // XON frames: counted as PFC RX, but the queue is never paused
    s.paused = false;
    EXPECT_EQ(w.Poll(Cfg(), i * 50 * kMs, s), PfcWatchdog::Event::kNone);
  }
}

TEST(PfcWatchdogTest, RestorationCountsOnlyXoffFrames) {
  PfcWatchdog w;
  PfcWatchdog::Sample s;
  s.paused = true;
  Time t = 0;
  w.Poll(Cfg(), t, s);
  while (!w.in_storm()) {
    t += 50 * kMs;
    s.rx_frames += 5;
    s.rx_xoff_frames += 5;
    w.Poll(Cfg(), t, s);
  }
  // XON frames keep arriving: they do not hold the storm.
  s.paused = false;
  Time restored = -1;
  for (int i = 1; i <= 10 && restored < 0; ++i) {
    s.rx_frames += 3;  // XON only
    if (w.Poll(Cfg(), t + i * 50 * kMs, s) == PfcWatchdog::Event::kRestore) restored = i * 50 * kMs;
  }
  EXPECT_EQ(restored, 200 * kMs);
  // A new storm; now XOFF frames keep arriving every poll: no restoration.
  s.paused = true;
  t += 10 * 50 * kMs;
  for (int i = 0; i < 10; ++i) {
    t += 50 * kMs;
    s.rx_frames += 5;
    s.rx_xoff_frames += 5;
    w.Poll(Cfg(), t, s);
  }
  ASSERT_TRUE(w.in_storm());
  for (int i = 0; i < 20; ++i) {
    t += 50 * kMs;
    s.rx_frames += 1;
    s.rx_xoff_frames += 1;
    EXPECT_NE(w.Poll(Cfg(), t, s), PfcWatchdog::Event::kRestore);
  }
  EXPECT_EQ(w.storms(), 2u);
  EXPECT_EQ(w.restores(), 1u);
}

TEST(PfcWatchdogTest, PaperModeRestoresAfterTheTimerWhateverArrives) {
  PfcWatchdogConfig c = Cfg();
  c.restore_after = true;
  PfcWatchdog w;
  PfcWatchdog::Sample s;
  s.paused = true;
  Time t = 0;
  w.Poll(c, t, s);
  while (!w.in_storm()) {
    t += 50 * kMs;
    ++s.rx_frames, ++s.rx_xoff_frames;
    w.Poll(c, t, s);
  }
  const Time since = t;
  while (w.in_storm()) {
    t += 50 * kMs;
    ++s.rx_frames, ++s.rx_xoff_frames;  // still storming
    w.Poll(c, t, s);
  }
  EXPECT_EQ(t - since, 200 * kMs);
}

}  // namespace
}  // namespace rocefab

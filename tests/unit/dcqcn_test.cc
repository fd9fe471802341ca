#include "nic-emu/dcqcn.h"

#include <gtest/gtest.h>

namespace rocefab {
namespace {

DcqcnConfig Cfg() {
  DcqcnConfig c;  // "nic"-like timers, easy numbers
  c.g = 1.0 / 16;
  c.alpha_interval = 10 * kUs;
  c.decrease_interval = 4 * kUs;
  c.increase_interval = 300 * kUs;
  c.fast_recovery_steps = 1;
  c.rate_ai = 40 * kMbps;
  c.rate_hai = 100 * kMbps;
  c.min_rate = 100 * kMbps;
  return c;
}

TEST(DcqcnTest, FirstCnpCutsByHalfAlphaAtTheNextCheck) {
  DcqcnRateController rp(Cfg(), 100 * kGbps);
  EXPECT_EQ(rp.rate(), 100 * kGbps);
  const Time due = rp.OnCnp(0);
  EXPECT_EQ(due, 1 * kNs);
  EXPECT_DOUBLE_EQ(rp.alpha(0), 1.0);
  const Time inc = rp.OnDecreaseTimer(due);
  EXPECT_EQ(inc, due + 300 * kUs);
  EXPECT_EQ(rp.rate(), 50 * kGbps);     // Rc (1 - 1/2)
  EXPECT_EQ(rp.target(), 100 * kGbps);  // no clamp, stage 0: target kept
  EXPECT_EQ(rp.cuts(), 1u);
}

// The reference simulators' first cut comes one T_dec after the first CNP (rdma-hw.cc
// cnp_received_mlx schedules CheckRateDecreaseMlx at T_dec + 1 ns), then every T_dec; CNPs
// between set the flag the check consumes ("compat": "conweave-ns3" sets the delay).
TEST(DcqcnTest, AFirstDecreaseDelayCutsOneDecreaseIntervalAfterTheFirstCnp) {
  auto c = DcqcnConfig::Profile("conweave", 100 * kGbps);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c.value().first_decrease_delay, 0) << "profiles cut at the first CNP";
  c.value().first_decrease_delay = c.value().decrease_interval;
  DcqcnRateController rp(c.value(), 100 * kGbps);
  const Time due = rp.OnCnp(10 * kUs);
  EXPECT_EQ(due, 14 * kUs + 1 * kNs);
  EXPECT_EQ(rp.OnCnp(12 * kUs), kTimeNever) << "the first check is already armed";
  EXPECT_EQ(rp.OnDecreaseTimer(due - 1), kTimeNever) << "early: stale";
  EXPECT_EQ(rp.rate(), 100 * kGbps) << "no cut before the check";
  EXPECT_EQ(rp.OnDecreaseTimer(due), due + 300 * kUs);
  // alpha 1 at the first CNP, decayed at 11 and 12 us, raised at 13 us by the CNP of [12, 13),
  // decayed at 14 us: just under 1, so the cut is just under half.
  EXPECT_LT(rp.rate(), 51 * kGbps);
  EXPECT_GT(rp.rate(), 50 * kGbps);
  EXPECT_EQ(rp.cuts(), 1u);
  // The next CNP's check is on the grid anchored at the first check: 14.001 + 4k us.
  EXPECT_EQ(rp.OnCnp(20 * kUs), 22 * kUs + 1 * kNs);
}

TEST(DcqcnTest, AlphaUpdatesAndDecaysOnItsGrid) {
  DcqcnRateController rp(Cfg(), 100 * kGbps);
  rp.OnCnp(0);        // alpha = 1, grid at 10, 20, 30 ... us
  rp.OnCnp(5 * kUs);  // CNP in period [0, 10)
  const double g = 1.0 / 16;
  EXPECT_DOUBLE_EQ(rp.alpha(10 * kUs), (1 - g) * 1 + g);              // = 1
  EXPECT_DOUBLE_EQ(rp.alpha(20 * kUs), (1 - g));                      // no CNP: decay
  EXPECT_DOUBLE_EQ(rp.alpha(45 * kUs), (1 - g) * (1 - g) * (1 - g));  // 30 and 40 us
}

TEST(DcqcnTest, SecondCutUsesTheDecayedAlpha) {
  DcqcnRateController rp(Cfg(), 100 * kGbps);
  rp.OnDecreaseTimer(rp.OnCnp(0));  // Rc 50G, alpha 1
  // CNP at 25 us: alpha decayed at 10 and 20 us to (15/16)^2, then flagged.
  const Time due = rp.OnCnp(25 * kUs);
  EXPECT_EQ(due, 1 * kNs + 7 * 4 * kUs);  // next 4 us grid point after 25 us: 28.001 us
  const double a = (15.0 / 16) * (15.0 / 16);
  rp.OnDecreaseTimer(due);
  EXPECT_NEAR(static_cast<double>(rp.rate().bps()), 50e9 * (1 - a / 2), 1.0);
  EXPECT_EQ(rp.target(), 100 * kGbps);
}

TEST(DcqcnTest, FastRecoveryThenAdditiveThenHyperIncrease) {
  DcqcnRateController rp(Cfg(), 100 * kGbps);
  Time t = rp.OnDecreaseTimer(rp.OnCnp(0));  // Rc 50G, Rt 100G
  // Stage 0 < F=1: fast recovery Rc = (100 + 50) / 2 = 75G.
  t = rp.OnIncreaseTimer(t);
  EXPECT_EQ(rp.rate(), 75 * kGbps);
  EXPECT_EQ(rp.target(), 100 * kGbps);
  // A cut with stage != 0 clamps the target to the current rate: Rt = 75G.
  const Time due = rp.OnCnp(t - 1 * kUs);
  const double a = rp.alpha(due);
  t = rp.OnDecreaseTimer(due);
  EXPECT_EQ(rp.target(), 75 * kGbps);
  const double rc = 75e9 * (1 - a / 2);
  EXPECT_NEAR(static_cast<double>(rp.rate().bps()), rc, 1.0);
  t = rp.OnIncreaseTimer(t);  // stage 0: fast recovery
  const double rc1 = (75e9 + rc) / 2;
  EXPECT_NEAR(static_cast<double>(rp.rate().bps()), rc1, 1.0);
  t = rp.OnIncreaseTimer(t);  // stage 1 == F: additive, Rt += 40 Mb/s
  EXPECT_EQ(rp.target(), 75 * kGbps + 40 * kMbps);
  const double rc2 = (75.04e9 + rc1) / 2;
  EXPECT_NEAR(static_cast<double>(rp.rate().bps()), rc2, 1.0);
  t = rp.OnIncreaseTimer(t);  // stage 2 > F: hyper, Rt += 100 Mb/s
  EXPECT_EQ(rp.target(), 75 * kGbps + 140 * kMbps);
  EXPECT_NEAR(static_cast<double>(rp.rate().bps()), (75.14e9 + rc2) / 2, 1.0);
  EXPECT_EQ(rp.OnIncreaseTimer(t - 1), kTimeNever) << "stale timer does nothing";
}

TEST(DcqcnTest, RateNeverBelowMinOrAboveLine) {
  DcqcnConfig c = Cfg();
  c.min_rate = 10 * kGbps;
  DcqcnRateController rp(c, 25 * kGbps);
  Time t = 0;
  for (int i = 0; i < 50; ++i) {
    const Time due = rp.OnCnp(t);
    if (due != kTimeNever) rp.OnDecreaseTimer(due);
    t += 10 * kUs;
  }
  EXPECT_EQ(rp.rate(), 10 * kGbps);
  Time inc = rp.increase_deadline();
  for (int i = 0; i < 10000 && inc != kTimeNever; ++i) inc = rp.OnIncreaseTimer(inc);
  EXPECT_EQ(rp.rate(), 25 * kGbps);
  EXPECT_EQ(rp.target(), 25 * kGbps);
}

TEST(DcqcnTest, PaperProfileByteCounterDrivesIncreases) {
  auto c = DcqcnConfig::Profile("paper", 40 * kGbps);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c.value().byte_counter, 10'000'000);
  EXPECT_EQ(c.value().fast_recovery_steps, 5);
  DcqcnRateController rp(c.value(), 40 * kGbps);
  rp.OnDecreaseTimer(rp.OnCnp(0));
  const double r0 = static_cast<double>(rp.rate().bps());  // 20G
  EXPECT_NEAR(r0, 20e9, 1.0);
  rp.OnBytesSent(10'000'000, 1 * kMs);  // one byte-counter event: fast recovery
  EXPECT_NEAR(static_cast<double>(rp.rate().bps()), (40e9 + r0) / 2, 1.0);
  EXPECT_FALSE(DcqcnConfig::Profile("fast", 40 * kGbps).ok());
}

}  // namespace
}  // namespace rocefab

// CONGA's pure parts (switch/conga.h): the DRE arithmetic, flowlet decisions against local and
// remote metrics, table aging, and the feedback choice. Time is supplied by the tests.
#include "switch/conga.h"

#include <gtest/gtest.h>

#include <array>
#include <set>

namespace rocefab {
namespace {

TEST(DreTest, DecaysByOneMinusAlphaPerPeriodBoundary) {
  Dre d(50 * kUs, 0.2);
  d.Add(10 * kUs, 1000);
  EXPECT_DOUBLE_EQ(d.bytes(49 * kUs), 1000.0);  // same period: no decay yet
  EXPECT_DOUBLE_EQ(d.bytes(50 * kUs), 800.0);   // first boundary
  EXPECT_NEAR(d.bytes(150 * kUs), 1000.0 * 0.8 * 0.8 * 0.8, 1e-9);
  d.Add(160 * kUs, 100);
  EXPECT_NEAR(d.bytes(160 * kUs), 612.0, 1e-9);
  EXPECT_DOUBLE_EQ(d.bytes(10 * kSec), 0.0);
}

// Feeds a link at `util` of `rate` in 1 KB frames for `periods` DRE periods and returns the
// metric sampled after every frame of the last period.
std::set<int> MetricsAtUtilisation(double util, BitRate rate, int periods) {
  Dre d(50 * kUs, 0.2);
  const Time gap = static_cast<Time>(1000 * 8 / (util * static_cast<double>(rate.bps())) * kSec);
  std::set<int> seen;
  for (Time t = 0; t < periods * 50 * kUs; t += gap) {
    d.Add(t, 1000);
    if (t >= (periods - 1) * 50 * kUs) seen.insert(d.Metric(t, rate, 3));
  }
  return seen;
}

TEST(DreTest, MetricIsUtilisationQuantisedToThreeBits) {
  // Steady state: X swings between u*C*T*(1-a)/a and u*C*T/a bytes, so the metric spans
  // floor(8u(1-a)) .. min(7, floor(8u)).
  for (int m : MetricsAtUtilisation(1.0, 100 * kGbps, 40)) EXPECT_TRUE(m == 6 || m == 7) << m;
  for (int m : MetricsAtUtilisation(0.5, 100 * kGbps, 40)) EXPECT_TRUE(m == 3 || m == 4) << m;
  for (int m : MetricsAtUtilisation(0.1, 10 * kGbps, 40)) EXPECT_EQ(m, 0) << m;
  Dre idle(50 * kUs, 0.2);
  EXPECT_EQ(idle.Metric(kMs, 100 * kGbps, 3), 0);
}

class CongaLeafTest : public testing::Test {
 protected:
  CongaParams p_;
  Rng rng_{7};
};

TEST_F(CongaLeafTest, NewFlowletsAvoidTheCongestedLocalUplinkAndKeepTheirPathWithinTheGap) {
  CongaLeaf leaf(p_, 4);
  const std::array<uint8_t, 4> busy0{7, 0, 7, 7};
  for (uint64_t f = 0; f < 200; ++f) {
    EXPECT_EQ(leaf.ChoosePath(f, 1, busy0, 0, rng_), 1u) << "flow " << f;
  }
  // Within the flowlet gap the flow stays put, even though path 1 is now the worst.
  const std::array<uint8_t, 4> busy1{0, 7, 0, 0};
  EXPECT_EQ(leaf.ChoosePath(5, 1, busy1, p_.flowlet_gap, rng_), 1u);
  // A gap longer than flowlet_gap opens a new flowlet: it moves.
  EXPECT_NE(leaf.ChoosePath(5, 1, busy1, 2 * p_.flowlet_gap + 1, rng_), 1u);
  EXPECT_EQ(leaf.stats().path_changes, 1u);
  EXPECT_EQ(leaf.stats().flowlets, 201u);
}

TEST_F(CongaLeafTest, RemoteFeedbackSteersAwayUntilItAges) {
  CongaLeaf leaf(p_, 4);
  const std::array<uint8_t, 4> idle{0, 0, 0, 0};
  leaf.OnFeedback(/*remote_leaf=*/2, /*path=*/3, /*metric=*/6, 0);
  EXPECT_EQ(leaf.RemoteMetric(2, 3, 0), 6);
  std::array<int, 4> to2{}, to1{};
  for (uint64_t f = 0; f < 4000; ++f) {
    ++to2[leaf.ChoosePath(f, 2, idle, 10 * kUs, rng_)];
    ++to1[leaf.ChoosePath(1'000'000 + f, 1, idle, 10 * kUs, rng_)];
  }
  EXPECT_EQ(to2[3], 0) << "path 3 to leaf 2 is congested remotely";
  for (int p = 0; p < 3; ++p) EXPECT_NEAR(to2[p], 4000 / 3, 150) << "ties are broken uniformly";
  for (int p = 0; p < 4; ++p) EXPECT_NEAR(to1[p], 1000, 120) << "no feedback about leaf 1";
  // Older than metric_aging: the entry reads 0 again.
  EXPECT_EQ(leaf.RemoteMetric(2, 3, p_.metric_aging), 6);
  EXPECT_EQ(leaf.RemoteMetric(2, 3, p_.metric_aging + 1), 0);
  EXPECT_EQ(leaf.stats().feedback_received, 1u);
}

TEST_F(CongaLeafTest, MaxOfLocalAndRemoteDecides) {
  CongaLeaf leaf(p_, 2);
  leaf.OnFeedback(1, 0, 5, 0);  // path 0: local 1, remote 5 -> 5
  leaf.OnFeedback(1, 1, 2, 0);  // path 1: local 4, remote 2 -> 4 (best)
  const std::array<uint8_t, 2> local{1, 4};
  for (uint64_t f = 0; f < 50; ++f) EXPECT_EQ(leaf.ChoosePath(f, 1, local, kUs, rng_), 1u);
}

TEST_F(CongaLeafTest, OnlyCandidatesConsecutiveFromARandomOffsetAreExamined) {
  CongaParams p = p_;
  p.candidates = 2;
  CongaLeaf leaf(p, 2);
  std::array<uint8_t, 8> local{};
  local.fill(7);
  local[5] = 0;
  std::array<int, 8> got{};
  for (uint64_t f = 0; f < 8000; ++f) ++got[leaf.ChoosePath(f, 1, local, 0, rng_)];
  // Path 5 wins whenever the window {o, o+1} holds it (offsets 4 and 5: 2 of 8); otherwise the
  // window's two equally bad paths tie.
  EXPECT_NEAR(got[5], 8000 * (2.0 / 8 + 0.0), 250);
  for (int q : {0, 1, 2, 3, 4, 6, 7}) EXPECT_GT(got[q], 0) << q;
}

TEST_F(CongaLeafTest, FeedbackReportsASeenFromLeafEntryAtRandomAndAgesToZero) {
  CongaLeaf leaf(p_, 3);
  EXPECT_FALSE(leaf.Feedback(2, 0, rng_).has_value()) << "nothing arrived from leaf 2 yet";
  leaf.OnArrival(/*src_leaf=*/2, /*path=*/1, /*ce=*/5, 0);
  auto fb = leaf.Feedback(2, 0, rng_);
  ASSERT_TRUE(fb.has_value());
  EXPECT_EQ(fb->path, 1u);
  EXPECT_EQ(fb->metric, 5);
  leaf.OnArrival(2, 3, 2, 0);
  std::set<uint32_t> paths;
  for (int i = 0; i < 100; ++i) paths.insert(leaf.Feedback(2, kUs, rng_)->path);
  EXPECT_EQ(paths, (std::set<uint32_t>{1, 3}));
  const auto aged = leaf.Feedback(2, p_.metric_aging + 1, rng_);
  ASSERT_TRUE(aged.has_value());
  EXPECT_EQ(aged->metric, 0) << "aged entries report an uncongested path, as in the reference";
  EXPECT_FALSE(leaf.Feedback(1, 0, rng_).has_value());
  // Out-of-range leaves and paths from the wire are ignored, not stored.
  leaf.OnArrival(200, 1, 7, 0);
  leaf.OnFeedback(1, 40, 7, 0);
  EXPECT_EQ(leaf.stats().arrivals, 2u);
  EXPECT_EQ(leaf.stats().feedback_received, 0u);
}

}  // namespace
}  // namespace rocefab

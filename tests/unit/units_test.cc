#include "common/units.h"

#include <gtest/gtest.h>

namespace rocefab {
namespace {

TEST(UnitsTest, ParsesDurations) {
  EXPECT_EQ(ParseDuration("2us").value(), 2 * kUs);
  EXPECT_EQ(ParseDuration("1.5ms").value(), 1500 * kUs);
  EXPECT_EQ(ParseDuration("300ns").value(), 300 * kNs);
  EXPECT_EQ(ParseDuration("7ps").value(), 7);
  EXPECT_EQ(ParseDuration("5min").value(), 300 * kSec);
  EXPECT_EQ(ParseDuration("4h").value(), 4 * 3600 * kSec);
  EXPECT_EQ(ParseDuration(" 3 s ").value(), 3 * kSec);
}

TEST(UnitsTest, ParsesRatesBytesLengths) {
  EXPECT_EQ(ParseRate("100Gbps").value(), 100 * kGbps);
  EXPECT_EQ(ParseRate("25Gb/s").value(), 25 * kGbps);
  EXPECT_EQ(ParseRate("400Mbps").value(), 400 * kMbps);
  EXPECT_EQ(ParseBytes("12MiB").value(), 12 << 20);
  EXPECT_EQ(ParseBytes("9MB").value(), 9'000'000);
  EXPECT_EQ(ParseBytes("1500B").value(), 1500);
  EXPECT_EQ(ParseBytes("4KiB").value(), 4096);
  EXPECT_DOUBLE_EQ(ParseLength("5m").value(), 5.0);
  EXPECT_DOUBLE_EQ(ParseLength("2km").value(), 2000.0);
}

TEST(UnitsTest, RejectsBadInputWithTheRule) {
  auto r = ParseRate("-5Gbps");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("negative"), std::string::npos) << r.message();
  r = ParseRate("100");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("100Gbps"), std::string::npos) << r.message();
  EXPECT_FALSE(ParseDuration("2 weeks").ok());
  EXPECT_FALSE(ParseDuration("us").ok());
  EXPECT_FALSE(ParseBytes("12MIB").ok());  // units are case-sensitive
  EXPECT_FALSE(ParseLength("5ft").ok());
}

TEST(UnitsTest, SerializationTimeIsExactInPicoseconds) {
  EXPECT_EQ(TxTime(1, 100 * kGbps), 80);
  EXPECT_EQ(TxTime(1, 400 * kGbps), 20);
  EXPECT_EQ(TxTime(1, 25 * kGbps), 320);
  EXPECT_EQ(TxTime(1500, 10 * kGbps), 1'200'000);
  EXPECT_EQ(TxTime(1, BitRate::Bps(3)), 2'666'666'666'667);  // rounded up to a whole ps
  EXPECT_EQ(WireBytes(1500), 1524);
  EXPECT_EQ(WireBytes(42), 84);  // padded to 60 + FCS + preamble + IFG: the 64-byte minimum frame
  EXPECT_EQ(CableDelay(5), 25 * kNs);
}

TEST(UnitsTest, FormatsForReports) {
  EXPECT_EQ(FormatDuration(2 * kUs), "2us");
  EXPECT_EQ(FormatRate(100 * kGbps), "100Gbps");
  EXPECT_EQ(FormatRate(BitRate::Bps(25'781'250'000)), "25.78125Gbps");
  // Every rate a scenario may give reads back exactly (a Clos is written out and read again):
  // no exponent at 10 Tbps, no rounding of odd rates.
  EXPECT_EQ(FormatRate(BitRate::Bps(10'000'000'000'000)), "10000Gbps");
  EXPECT_EQ(FormatRate(BitRate::Bps(1'234'567'891)), "1.234567891Gbps");
  EXPECT_EQ(FormatRate(BitRate::Bps(100'000'000)), "100Mbps");
  EXPECT_EQ(FormatRate(BitRate::Bps(999'999)), "999999bps");
  for (int64_t bps : {int64_t{1'234'567'891}, int64_t{10'000'000'000'000}, int64_t{123'456'789},
                      int64_t{40'000'000'001}}) {
    auto back = ParseRate(FormatRate(BitRate::Bps(bps)));
    ASSERT_TRUE(back.ok()) << FormatRate(BitRate::Bps(bps));
    EXPECT_EQ(back.value().bps(), bps) << FormatRate(BitRate::Bps(bps));
  }
  EXPECT_EQ(FormatBytes(12 << 20), "12MiB");
}

}  // namespace
}  // namespace rocefab

// The pcapng writer (common/wire/pcapng_writer.h): its block layout walked byte by byte, and
// what tshark and capinfos (Wireshark's readers, the oracle) read from it: interface names,
// descriptions and speeds, nanosecond timestamps, directions, lengths.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "common/wire/pcapng_writer.h"
#include "tests/support/shell.h"

namespace rocefab {
namespace {

using testing::ShellOutput;

uint32_t U32(const std::vector<uint8_t>& b, size_t off) {
  uint32_t v;
  std::memcpy(&v, &b[off], 4);
  return v;
}

std::vector<uint8_t> Frame(size_t len, uint8_t fill) {
  std::vector<uint8_t> f(len, fill);
  for (int i = 0; i < 6; ++i) f[i] = 0x02, f[6 + i] = 0x04;  // unicast dst and src MACs
  f[12] = 0x88, f[13] = 0xB5;  // an EtherType for local experiments (IEEE 802)
  return f;
}

class CaptureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(std::system("command -v tshark capinfos >/dev/null 2>&1"), 0)
        << "tshark and capinfos (the decoding oracle) are not installed: scripts/setup.sh "
           "installs them";
    path_ = ::testing::TempDir() + "/rocefab_capture_test.pcapng";
    std::filesystem::remove(path_);
    auto w = PcapngWriter::Open(path_, "rocefab-test");
    ASSERT_TRUE(w.ok()) << w.message();
    std::unique_ptr<PcapngWriter> pw(w.value());
    EXPECT_EQ(pw->AddInterface("tor0/p3", "link tor0/p3 <-> spine1/p0", 100'000'000'000), 0u);
    EXPECT_EQ(pw->AddInterface("tor1/p0", "", 0), 1u);
    // 61 bytes (three bytes of padding), 64, 1514; a timestamp past 2^32 ns (4.29 s).
    const auto a = Frame(61, 0xA1), b = Frame(64, 0xB2), c = Frame(1514, 0xC3);
    pw->Write(1'500 * kNs + 999, 0, CaptureDirection::kInbound, a.data(), 61, 61);
    pw->Write(2 * kUs, 1, CaptureDirection::kOutbound, b.data(), 64, 64);
    pw->Write(5 * kSec + 7 * kNs, 0, CaptureDirection::kUnknown, c.data(), 100, 1514);
    EXPECT_EQ(pw->frames(), 3u);
    ASSERT_TRUE(pw->Flush().ok());
  }
  std::string path_;
};

TEST_F(CaptureTest, BlocksAreWellFormed) {
  std::ifstream in(path_, std::ios::binary);
  const std::vector<uint8_t> d((std::istreambuf_iterator<char>(in)),
                               std::istreambuf_iterator<char>());
  ASSERT_GE(d.size(), 28u);
  EXPECT_EQ(U32(d, 0), 0x0A0D0D0Au) << "section header block first";
  EXPECT_EQ(U32(d, 8), 0x1A2B3C4Du) << "byte-order magic";
  std::vector<uint32_t> types;
  size_t off = 0;
  while (off + 12 <= d.size()) {
    const uint32_t len = U32(d, off + 4);
    ASSERT_EQ(len % 4, 0u) << "block at " << off << ": length not a multiple of 4";
    ASSERT_LE(off + len, d.size()) << "block at " << off << " runs past the end";
    EXPECT_EQ(U32(d, off + len - 4), len) << "block at " << off << ": trailing length";
    types.push_back(U32(d, off));
    if (U32(d, off) == 6) {
      const uint32_t caplen = U32(d, off + 20);
      // 28 bytes of header, the frame padded to 32 bits, options (12 bytes with a direction),
      // the trailing length.
      const uint32_t opts = len - 32 - ((caplen + 3) & ~3u);
      EXPECT_TRUE(opts == 0 || opts == 12) << "block at " << off << ": " << opts;
    }
    off += len;
  }
  EXPECT_EQ(off, d.size()) << "no bytes after the last block";
  EXPECT_EQ(types, (std::vector<uint32_t>{0x0A0D0D0A, 1, 1, 6, 6, 6}));
}

TEST_F(CaptureTest, TsharkReadsInterfacesTimesAndDirections) {
  EXPECT_EQ(ShellOutput("tshark -r " + path_ +
                        " -T fields -E separator=, -e frame.interface_id -e frame.interface_name "
                        "-e frame.time_epoch -e frame.packet_flags_direction -e frame.len "
                        "-e frame.cap_len"),
            "0,tor0/p3,0.000001500,0x00000001,61,61\n"
            "1,tor1/p0,0.000002000,0x00000002,64,64\n"
            "0,tor0/p3,5.000000007,,1514,100\n");
  const std::string info = ShellOutput("capinfos -M " + path_);
  EXPECT_NE(info.find("File type:           pcapng"), std::string::npos) << info;
  EXPECT_NE(info.find("Number of interfaces in file: 2"), std::string::npos) << info;
  EXPECT_NE(info.find("Name = tor0/p3"), std::string::npos) << info;
  EXPECT_NE(info.find("Description = link tor0/p3 <-> spine1/p0"), std::string::npos) << info;
  EXPECT_NE(info.find("Speed = 100000000000"), std::string::npos) << info;
  EXPECT_NE(info.find("Time precision = nanoseconds (9)"), std::string::npos) << info;
  EXPECT_NE(info.find("Capture application: rocefab-test"), std::string::npos) << info;
}

TEST(CaptureErrorTest, OpenNamesThePathAndTheReason) {
  auto w = PcapngWriter::Open("/nonexistent-dir/x.pcapng", "rocefab");
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.message(), "/nonexistent-dir/x.pcapng: No such file or directory");
}

}  // namespace
}  // namespace rocefab

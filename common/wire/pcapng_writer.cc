#include "common/wire/pcapng_writer.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "common/files.h"

namespace rocefab {
namespace {

// Block types and option codes (draft-ietf-opsawg-pcapng §4 and §4.2-4.3).
constexpr uint32_t kSectionHeaderBlock = 0x0A0D0D0A;
constexpr uint32_t kInterfaceDescriptionBlock = 0x00000001;
constexpr uint32_t kEnhancedPacketBlock = 0x00000006;
constexpr uint32_t kByteOrderMagic = 0x1A2B3C4D;
constexpr uint16_t kOptEndOfOpt = 0;
constexpr uint16_t kShbUserAppl = 4;
constexpr uint16_t kIfName = 2;
constexpr uint16_t kIfDescription = 3;
constexpr uint16_t kIfSpeed = 8;
constexpr uint16_t kIfTsresol = 9;
constexpr uint16_t kEpbFlags = 2;
constexpr uint16_t kLinkTypeEthernet = 1;   // LINKTYPE_ETHERNET
constexpr uint8_t kTsresolNanoseconds = 9;  // 10^-9 s per timestamp unit

constexpr uint32_t Pad4(uint32_t n) { return (n + 3u) & ~3u; }

// A block body under construction: fields in host byte order, options padded to 32 bits.
class Body {
 public:
  void U16(uint16_t v) { Raw(&v, 2); }
  void U32(uint32_t v) { Raw(&v, 4); }
  void U64(uint64_t v) { Raw(&v, 8); }
  void Option(uint16_t code, const void* value, uint16_t len) {
    U16(code);
    U16(len);
    Raw(value, len);
    bytes_.resize(Pad4(static_cast<uint32_t>(bytes_.size())), 0);
  }
  void EndOptions() { Option(kOptEndOfOpt, nullptr, 0); }
  // Writes type, total length, this body and the total length again.
  bool WriteBlock(std::FILE* f, uint32_t type) const {
    const uint32_t total = static_cast<uint32_t>(bytes_.size()) + 12;
    return std::fwrite(&type, 4, 1, f) == 1 && std::fwrite(&total, 4, 1, f) == 1 &&
           std::fwrite(bytes_.data(), 1, bytes_.size(), f) == bytes_.size() &&
           std::fwrite(&total, 4, 1, f) == 1;
  }

 private:
  void Raw(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    bytes_.insert(bytes_.end(), b, b + n);
  }
  std::vector<uint8_t> bytes_;
};

uint16_t OptionLength(const std::string& s) {
  return static_cast<uint16_t>(std::min<size_t>(s.size(), 0xFFFC));
}

}  // namespace

Result<PcapngWriter*> PcapngWriter::Open(const std::string& path, const std::string& application) {
  if (Status st = RefuseSymlink(path); !st.ok()) return Result<PcapngWriter*>::Error(st.message());
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return Result<PcapngWriter*>::Error(path + ": " + std::strerror(errno));
  std::setvbuf(f, nullptr, _IOFBF, 1 << 20);
  Body shb;
  shb.U32(kByteOrderMagic);
  shb.U16(1);             // major version
  shb.U16(0);             // minor version
  shb.U64(~uint64_t{0});  // section length: -1, not stated
  if (!application.empty()) {
    shb.Option(kShbUserAppl, application.data(), OptionLength(application));
    shb.EndOptions();
  }
  if (!shb.WriteBlock(f, kSectionHeaderBlock)) {
    std::fclose(f);
    return Result<PcapngWriter*>::Error(path + ": cannot write the section header");
  }
  return new PcapngWriter(f, path);
}

PcapngWriter::~PcapngWriter() { std::fclose(f_); }

uint32_t PcapngWriter::AddInterface(const std::string& name, const std::string& description,
                                    int64_t speed) {
  Body idb;
  idb.U16(kLinkTypeEthernet);
  idb.U16(0);  // reserved
  idb.U32(kSnapLen);
  idb.Option(kIfName, name.data(), OptionLength(name));
  if (!description.empty())
    idb.Option(kIfDescription, description.data(), OptionLength(description));
  if (speed > 0) {
    const uint64_t bps = static_cast<uint64_t>(speed);
    idb.Option(kIfSpeed, &bps, 8);
  }
  idb.Option(kIfTsresol, &kTsresolNanoseconds, 1);
  idb.EndOptions();
  (void)idb.WriteBlock(f_, kInterfaceDescriptionBlock);  // errors surface in Flush (ferror)
  return interfaces_++;
}

void PcapngWriter::Write(Time t, uint32_t interface, CaptureDirection dir, const uint8_t* data,
                         uint32_t caplen, uint32_t len) {
  caplen = std::min({caplen, len, kSnapLen});
  const uint64_t ns = static_cast<uint64_t>(t / kNs);
  const uint32_t padded = Pad4(caplen);
  const bool flags = dir != CaptureDirection::kUnknown;
  const uint32_t options = flags ? 8 + 4 : 0;  // epb_flags, opt_endofopt
  const uint32_t total = 32 + padded + options;
  const uint32_t head[7] = {
      kEnhancedPacketBlock,      total,  interface, static_cast<uint32_t>(ns >> 32),
      static_cast<uint32_t>(ns), caplen, len};
  std::fwrite(head, sizeof(head), 1, f_);
  std::fwrite(data, 1, caplen, f_);
  static constexpr uint8_t kZeros[4] = {};
  std::fwrite(kZeros, 1, padded - caplen, f_);
  if (flags) {
    const uint16_t code_len[2] = {kEpbFlags, 4};
    const uint32_t value = static_cast<uint32_t>(dir);
    const uint16_t end[2] = {kOptEndOfOpt, 0};
    std::fwrite(code_len, sizeof(code_len), 1, f_);
    std::fwrite(&value, 4, 1, f_);
    std::fwrite(end, sizeof(end), 1, f_);
  }
  std::fwrite(&total, 4, 1, f_);
  ++frames_;
}

Status PcapngWriter::Flush() {
  if (std::fflush(f_) != 0 || std::ferror(f_))
    return Status::Error(path_ + ": write failed: " + std::strerror(errno));
  return Status();
}

}  // namespace rocefab

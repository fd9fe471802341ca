#pragma once
/// @file pcapng_writer.h
/// One pcapng file (draft-ietf-opsawg-pcapng, "PCAP Next Generation Dump File Format") holding
/// the frames of several captured ports: one Section Header Block, one Interface Description
/// Block per port (if_name such as "tor0/p3", if_description, if_speed in bits/s, if_tsresol 9:
/// nanosecond timestamps, link type 1 = Ethernet) and one Enhanced Packet Block per frame with
/// its direction in epb_flags. Wireshark's and tshark's `frame.interface_name` and
/// `frame.packet_flags_direction` show them.
///
/// Written here rather than with DPDK's rte_pcapng: in DPDK 22.11 its interfaces are ethdev
/// ports (rte_pcapng_add_interface takes a port id and names it after the device), while most
/// captured ports of a fabric are in-process links or sim ports with no ethdev behind them.
/// Multi-byte fields are in the host's byte order, which the byte-order magic states.

#include <cstdio>
#include <string>

#include "common/wire/capture_file.h"

namespace rocefab {

class PcapngWriter final : public CaptureFile {
 public:
  /// Creates (truncates) `path` and writes the Section Header Block, with `application`
  /// (shb_userappl, e.g. "rocefab 0.x") when not empty. Errors name the path and the reason;
  /// a symbolic link is refused (files.h).
  static Result<PcapngWriter*> Open(const std::string& path, const std::string& application);
  ~PcapngWriter() override;
  PcapngWriter(const PcapngWriter&) = delete;
  PcapngWriter& operator=(const PcapngWriter&) = delete;

  /// Adds an Ethernet interface and returns its id (0, 1, ... in the order added; pass it to
  /// Write). `speed` in bits/s, 0: not stated. Call before the first Write that uses it.
  uint32_t AddInterface(const std::string& name, const std::string& description, int64_t speed);

  void Write(Time t, uint32_t interface, CaptureDirection dir, const uint8_t* data, uint32_t caplen,
             uint32_t len) override;
  Status Flush() override;
  uint64_t frames() const override { return frames_; }
  uint32_t interfaces() const { return interfaces_; }

  /// Snap length stated in each interface block: frames are written whole up to this length.
  static constexpr uint32_t kSnapLen = 65535;

 private:
  PcapngWriter(std::FILE* f, std::string path) : f_(f), path_(std::move(path)) {}
  std::FILE* f_;
  std::string path_;
  uint32_t interfaces_ = 0;
  uint64_t frames_ = 0;
};

}  // namespace rocefab

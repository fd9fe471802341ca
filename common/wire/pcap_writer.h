#pragma once
/// @file pcap_writer.h
/// Writes frames to a classic pcap file (libpcap, nanosecond timestamps, DLT_EN10MB) that
/// Wireshark and tshark open: one interface per file, no direction (a CaptureFile that ignores
/// both). Timestamps are whatever the caller passes: virtual time in the sim runner.

#include <rte_mbuf.h>

#include <string>

#include "common/wire/capture_file.h"

typedef struct pcap pcap_t;
typedef struct pcap_dumper pcap_dumper_t;

namespace rocefab {

class PcapWriter final : public CaptureFile {
 public:
  /// Errors name the path and libpcap's reason.
  static Result<PcapWriter*> Open(const std::string& path);
  ~PcapWriter() override;
  PcapWriter(const PcapWriter&) = delete;
  PcapWriter& operator=(const PcapWriter&) = delete;

  /// Appends `m` (single segment) stamped `t` ps (written with ns resolution).
  void Write(Time t, const rte_mbuf* m);
  /// Appends `caplen` bytes of a frame of `len` bytes stamped `t` ps.
  void Write(Time t, const uint8_t* data, uint32_t caplen, uint32_t len);
  void Write(Time t, uint32_t /*interface*/, CaptureDirection /*dir*/, const uint8_t* data,
             uint32_t caplen, uint32_t len) override {
    Write(t, data, caplen, len);
  }
  Status Flush() override;
  uint64_t frames() const override { return frames_; }

 private:
  PcapWriter(pcap_t* p, pcap_dumper_t* d, std::string path)
      : pcap_(p), dumper_(d), path_(std::move(path)) {}
  pcap_t* pcap_;
  pcap_dumper_t* dumper_;
  std::string path_;
  uint64_t frames_ = 0;
};

}  // namespace rocefab

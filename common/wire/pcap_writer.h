#pragma once
/// @file pcap_writer.h
/// Writes frames to a pcap file (libpcap, nanosecond timestamps, DLT_EN10MB) that Wireshark and
/// tshark open. Timestamps are whatever the caller passes: virtual time in the sim runner.

#include <rte_mbuf.h>

#include <string>

#include "common/result.h"
#include "common/time.h"

typedef struct pcap pcap_t;
typedef struct pcap_dumper pcap_dumper_t;

namespace rocefab {

class PcapWriter {
 public:
  /// Errors name the path and libpcap's reason.
  static Result<PcapWriter*> Open(const std::string& path);
  ~PcapWriter();
  PcapWriter(const PcapWriter&) = delete;
  PcapWriter& operator=(const PcapWriter&) = delete;

  /// Appends `m` (single segment) stamped `t` ps (written with ns resolution).
  void Write(Time t, const rte_mbuf* m);
  /// Appends `caplen` bytes of a frame of `len` bytes stamped `t` ps.
  void Write(Time t, const uint8_t* data, uint32_t caplen, uint32_t len);
  uint64_t frames() const { return frames_; }

 private:
  PcapWriter(pcap_t* p, pcap_dumper_t* d) : pcap_(p), dumper_(d) {}
  pcap_t* pcap_;
  pcap_dumper_t* dumper_;
  uint64_t frames_ = 0;
};

}  // namespace rocefab

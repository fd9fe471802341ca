#pragma once
/// @file capture_file.h
/// Where captured frames go: a packet-capture file that Wireshark and tshark read. Two formats
/// implement it: PcapWriter (pcap_writer.h, one classic pcap per captured port, libpcap) and
/// PcapngWriter (pcapng_writer.h, one pcapng per run with an interface per captured port).

#include <cstdint>

#include "common/result.h"
#include "common/time.h"

namespace rocefab {

/// Which way a captured frame crossed the captured port, as pcapng's epb_flags state it
/// (draft-ietf-opsawg-pcapng §4.3.1: bits 0-1, 1 = inbound, 2 = outbound).
enum class CaptureDirection : uint8_t {
  kUnknown = 0,
  kInbound = 1,   ///< received by the captured switch on that port
  kOutbound = 2,  ///< sent by the captured switch on that port (received by its peer)
};

class CaptureFile {
 public:
  virtual ~CaptureFile() = default;
  /// Appends `caplen` bytes of a frame of `len` bytes (caplen <= len) stamped `t` ps (written
  /// with nanosecond resolution), seen on interface `interface` (an id the format gave out;
  /// formats with one interface per file ignore it) in direction `dir`.
  virtual void Write(Time t, uint32_t interface, CaptureDirection dir, const uint8_t* data,
                     uint32_t caplen, uint32_t len) = 0;
  /// Writes what is buffered. Errors name the file and the system's reason.
  virtual Status Flush() = 0;
  /// Frames written so far.
  virtual uint64_t frames() const = 0;
};

}  // namespace rocefab

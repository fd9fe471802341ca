#pragma once
/// @file time.h
/// Time base of rocefab: signed 64-bit picoseconds (int64 covers about 106 days), and data rates in
/// bits per second. One byte at 400 Gb/s lasts 20 ps, so nanoseconds would round serialization
/// times; picoseconds keep every supported rate exact or rounded up by less than 1 ps.

#include <cstdint>

namespace rocefab {

/// A point in time or a duration, in picoseconds.
using Time = int64_t;

inline constexpr Time kPs = 1;
inline constexpr Time kNs = 1000 * kPs;
inline constexpr Time kUs = 1000 * kNs;
inline constexpr Time kMs = 1000 * kUs;
inline constexpr Time kSec = 1000 * kMs;
inline constexpr Time kTimeNever = INT64_MAX;

/// A data rate in bits per second (valid range 1 b/s .. 10 Tb/s).
using BitRate = int64_t;

inline constexpr BitRate kMbps = 1'000'000;
inline constexpr BitRate kGbps = 1'000'000'000;

/// Time to put `bytes` on a wire of `rate` bits/s, in ps, rounded up to a whole picosecond.
/// Exact for 10/25/40/50/100/200/400 Gb/s (800, 320, 200, 160, 80, 40, 20 ps per byte).
constexpr Time TxTime(int64_t bytes, BitRate rate) {
  const __int128 num = static_cast<__int128>(bytes) * 8 * kSec;
  return static_cast<Time>((num + rate - 1) / rate);
}

/// Bytes per second that a rate carries, as a double (for reports).
constexpr double RateBytesPerSec(BitRate rate) { return static_cast<double>(rate) / 8.0; }

/// Ethernet framing added on the wire to a frame of `frame_len` bytes (without FCS): the frame is
/// padded to 60 bytes, then FCS (4), preamble+SFD (8) and the inter-frame gap (12) are added
/// (IEEE 802.3 clause 4.4.2). A link is busy for TxTime(WireBytes(len)).
constexpr int64_t WireBytes(int64_t frame_len) {
  return (frame_len < 60 ? 60 : frame_len) + 4 + 8 + 12;
}

/// Propagation delay of `meters` of cable (fiber/DAC at 2/3 c, 5 ns per meter; SONiC's headroom
/// calculator uses 1.98e8 m/s, i.e. 5.05 ns/m).
constexpr Time CableDelay(double meters) { return static_cast<Time>(meters * 5.0 * kNs + 0.5); }

}  // namespace rocefab

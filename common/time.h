#pragma once
/// @file time.h
/// Time base of rocefab: signed 64-bit picoseconds (int64 covers about 106 days), and data rates in
/// bits per second. One byte at 400 Gb/s lasts 20 ps, so nanoseconds would round serialization
/// times; picoseconds keep every supported rate exact or rounded up by less than 1 ps.

#include <compare>
#include <concepts>
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

/// A data rate in bits per second (valid range 1 b/s .. 10 Tb/s; 0 where a field says "unset").
/// A type of its own, unlike Time: a rate cannot be passed where a time or a byte count is
/// expected, or the reverse (TxTime(rate, bytes) does not compile). Built from the unit
/// constants (`10 * kGbps`) or BitRate::Bps(n); read with bps().
class BitRate {
 public:
  constexpr BitRate() = default;
  static constexpr BitRate Bps(int64_t bits_per_second) {
    BitRate r;
    r.bps_ = bits_per_second;
    return r;
  }
  constexpr int64_t bps() const { return bps_; }
  constexpr double gbps() const { return static_cast<double>(bps_) / 1e9; }
  /// This rate times `f` (>= 0), rounded down to a whole bit/s.
  constexpr BitRate Scaled(double f) const {
    return Bps(static_cast<int64_t>(static_cast<double>(bps_) * f));
  }
  constexpr auto operator<=>(const BitRate&) const = default;
  constexpr BitRate& operator+=(BitRate o) {
    bps_ += o.bps_;
    return *this;
  }
  constexpr BitRate& operator-=(BitRate o) {
    bps_ -= o.bps_;
    return *this;
  }
  friend constexpr BitRate operator+(BitRate a, BitRate b) { return Bps(a.bps_ + b.bps_); }
  friend constexpr BitRate operator-(BitRate a, BitRate b) { return Bps(a.bps_ - b.bps_); }
  template <std::integral I>
  friend constexpr BitRate operator*(I k, BitRate r) {
    return Bps(static_cast<int64_t>(k) * r.bps_);
  }
  template <std::integral I>
  friend constexpr BitRate operator*(BitRate r, I k) {
    return Bps(static_cast<int64_t>(k) * r.bps_);
  }
  template <std::integral I>
  friend constexpr BitRate operator/(BitRate r, I k) {
    return Bps(r.bps_ / static_cast<int64_t>(k));
  }
  // Not with a double (it would truncate): scale with Scaled(), read bps() or gbps().
  template <std::floating_point F>
  friend BitRate operator*(F, BitRate) = delete;
  template <std::floating_point F>
  friend BitRate operator*(BitRate, F) = delete;
  template <std::floating_point F>
  friend BitRate operator/(BitRate, F) = delete;
  /// The ratio of two rates.
  friend constexpr double operator/(BitRate a, BitRate b) {
    return static_cast<double>(a.bps_) / static_cast<double>(b.bps_);
  }

 private:
  int64_t bps_ = 0;
};

inline constexpr BitRate kBps = BitRate::Bps(1);
inline constexpr BitRate kKbps = BitRate::Bps(1'000);
inline constexpr BitRate kMbps = BitRate::Bps(1'000'000);
inline constexpr BitRate kGbps = BitRate::Bps(1'000'000'000);

/// Time to put `bytes` on a wire of `rate` (> 0), in ps, rounded up to a whole picosecond.
/// Exact for 10/25/40/50/100/200/400 Gb/s (800, 320, 200, 160, 80, 40, 20 ps per byte).
constexpr Time TxTime(int64_t bytes, BitRate rate) {
  // Frames (under 1 MB) in 64-bit arithmetic: bytes * 8e12 + bps stays below 2^63, and a
  // 64-bit division is several times cheaper than the 128-bit one (__divti3) it replaces on
  // every wire slot of both runners. Same quotient.
  if (bytes >= 0 && bytes < 1'000'000) {
    const int64_t num = bytes * 8 * kSec;
    return (num + rate.bps() - 1) / rate.bps();
  }
  const __int128 num = static_cast<__int128>(bytes) * 8 * kSec;
  return static_cast<Time>((num + rate.bps() - 1) / rate.bps());
}

/// Bytes per second that a rate carries, as a double (for reports).
constexpr double RateBytesPerSec(BitRate rate) { return static_cast<double>(rate.bps()) / 8.0; }

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

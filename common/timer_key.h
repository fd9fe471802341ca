#pragma once
/// @file timer_key.h
/// A node's timer cookie (NodeEnv::ScheduleTimer, Node::OnTimer) as one typed key instead of
/// bit layouts packed by hand: the engine of the node that set it (0: the node itself; an
/// EmulatedHost's RNIC is engine 1), the timer's kind (that engine's own enum class), a port and
/// a 32-bit argument (an IPv4 address, a QPN, a flow or probe index, a priority group). It packs
/// into the 64-bit cookie and back without loss: engine 8 bits, kind 8, port 16, argument 32.

#include <cstdint>

namespace rocefab {

struct TimerKey {
  uint8_t engine = 0;
  uint8_t kind = 0;
  uint16_t port = 0;
  uint32_t arg = 0;

  /// A key of kind `k` (an enum class whose values fit 8 bits).
  template <class Kind>
  static constexpr TimerKey Of(Kind k, uint32_t arg = 0, uint16_t port = 0, uint8_t engine = 0) {
    return TimerKey{engine, static_cast<uint8_t>(k), port, arg};
  }
  template <class Kind>
  constexpr Kind kind_as() const {
    return static_cast<Kind>(kind);
  }
  constexpr uint64_t Pack() const {
    return uint64_t{engine} << 56 | uint64_t{kind} << 48 | uint64_t{port} << 32 | arg;
  }
  static constexpr TimerKey Unpack(uint64_t c) {
    return TimerKey{static_cast<uint8_t>(c >> 56), static_cast<uint8_t>(c >> 48),
                    static_cast<uint16_t>(c >> 32), static_cast<uint32_t>(c)};
  }
};

}  // namespace rocefab

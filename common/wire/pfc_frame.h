#pragma once
/// @file pfc_frame.h
/// IEEE 802.1Qbb priority flow control frames (IEEE 802.3 Annex 31D) and 802.3x PAUSE (Annex 31B):
/// DA 01-80-C2-00-00-01, EtherType 0x8808, opcode 0x0101 (PFC) or 0x0001 (PAUSE), then for PFC a
/// 2-byte class-enable vector (bit p = priority p; upper octet 0) and eight 2-byte pause times in
/// quanta of 512 bit times at the receiving port's speed; zero padding to 60 bytes (+FCS = 64).

#include <rte_mbuf.h>

#include <array>
#include <cstdint>

#include "common/wire/headers.h"
#include "common/time.h"

namespace rocefab {

inline constexpr uint16_t kMacControlOpPause = 0x0001;
inline constexpr uint16_t kMacControlOpPfc = 0x0101;
inline constexpr int kPfcFrameLen = 60;

struct PfcFrame {
  uint16_t opcode = kMacControlOpPfc;
  uint8_t class_enable = 0;              ///< PFC: bit p = priority p
  std::array<uint16_t, 8> quanta{};      ///< PFC: per priority; PAUSE: quanta[0] for all
};

/// Builds a PFC frame from `src` (the sending port's MAC). nullptr if the pool is empty.
rte_mbuf* BuildPfc(rte_mempool* pool, const Mac& src, uint8_t class_enable,
                   const std::array<uint16_t, 8>& quanta);

/// Parses a MAC control frame (EtherType already known to be 0x8808). Returns false for opcodes
/// other than PFC/PAUSE or a frame shorter than its fields.
bool ParsePfc(const rte_mbuf* m, PfcFrame* out);

/// Duration of `quanta` pause quanta on a link of `rate`: quanta x 512 bit times, in ps.
constexpr Time PauseQuantaTime(uint32_t quanta, BitRate rate) {
  return static_cast<Time>(static_cast<__int128>(quanta) * 512 * kSec / rate.bps());
}

}  // namespace rocefab

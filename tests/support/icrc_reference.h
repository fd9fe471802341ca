#pragma once
// The RoCEv2 ICRC computed the plain way (rdma_rxe's rxe_icrc.c): zlib CRC-32 over 8 bytes of
// 0xFF (the masked LRH stand-in) and the IPv4/UDP/BTH... pseudo-packet with the variant fields
// (TOS, TTL, IP checksum, UDP checksum, BTH reserved byte) set to 0xFF, up to the ICRC field.
// An oracle for our accelerated ComputeIcrc and for frames captured off a wire.
#include <zlib.h>

#include <cstdint>
#include <vector>

namespace rocefab::testing {

// `f`: an untagged Ethernet frame with IPv4 (no options) and UDP 4791, `len` bytes without FCS.
inline uint32_t ReferenceIcrc(const uint8_t* f, uint32_t len) {
  std::vector<uint8_t> b(8, 0xFF);
  b.insert(b.end(), f + 14, f + len - 4);
  uint8_t* ip = b.data() + 8;
  ip[1] = 0xFF;            // TOS
  ip[8] = 0xFF;            // TTL
  ip[10] = ip[11] = 0xFF;  // IPv4 header checksum
  ip[26] = ip[27] = 0xFF;  // UDP checksum
  ip[32] = 0xFF;           // BTH byte 4 (FECN, BECN, reserved)
  return static_cast<uint32_t>(crc32(0L, b.data(), static_cast<uInt>(b.size())));
}

}  // namespace rocefab::testing

#pragma once
/// @file packet.h
/// Packets are rte_mbuf in both runners. Per-packet metadata that the runners and nodes need
/// lives in the mbuf private area (the pool is created with priv_size >= sizeof(PacketMeta)).

#include <rte_mbuf.h>

#include <cstdint>

#include "common/time.h"

namespace rocefab {

/// Metadata carried in the mbuf private area. Set by runners and nodes; never on the wire.
struct PacketMeta {
  Time deliver_at;    ///< live runner delay lines: when the last bit reaches the peer (ps)
  Time enqueue_time;  ///< when the switch queued it on an egress port (ps)
  uint16_t in_port;   ///< ingress port index on the current node
  uint8_t tc;         ///< traffic class (0..7)
  uint8_t flags;
  uint32_t flow_hash;
  uint8_t pg;          ///< ingress priority group charged by the MMU
  uint8_t queue;       ///< egress queue (0..7)
  uint8_t mmu_bucket;  ///< MmuBucket the ingress side charged (see switch/mmu.h)
  uint8_t l4_offset;   ///< UDP header offset, valid with kMetaConga (CONGA's CE update at egress)
  uint16_t
      buffer_len;  ///< bytes the switch's MMU charged (WireModel::BufferBytes), set at admission
};
/// PacketMeta::flags bits.
inline constexpr uint8_t kMetaEct = 1;    ///< IPv4 frame with ECT(0), ECT(1) or CE
inline constexpr uint8_t kMetaConga = 2;  ///< RoCEv2 frame carrying a CONGA tag (switch_conga.cc)
/// RoCEv2 frame whose ICRC field has not been computed yet (built by a fabric's own NIC, see
/// common/wire/roce_headers.h FinalizeIcrc). Switches keep the bit; every frame builder clears it;
/// the live runner finalizes frames leaving through an ethdev port and clears the bit on frames
/// from one.
inline constexpr uint8_t kMetaIcrcDeferred = 4;

static_assert(sizeof(PacketMeta) <= 32, "PacketMeta must fit the 32-byte mbuf private area");

inline constexpr uint16_t kMbufPrivSize = 32;

inline PacketMeta* Meta(rte_mbuf* m) { return static_cast<PacketMeta*>(rte_mbuf_to_priv(m)); }
inline const PacketMeta* Meta(const rte_mbuf* m) {
  return static_cast<const PacketMeta*>(rte_mbuf_to_priv(const_cast<rte_mbuf*>(m)));
}

}  // namespace rocefab

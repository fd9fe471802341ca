#pragma once
/// @file route_table.h
/// IPv4 routes: longest-prefix match in DPDK's rte_fib, each route pointing to a next-hop group.
/// Two FIB layouts: DIR-24-8 (one memory access per lookup, but a 32 MiB table per switch: the
/// live runner's choice) and the RIB tree (a few KiB per switch, a tree walk per lookup: the sim
/// runner's choice, so fabrics of hundreds of switches fit in memory; a 512-entry direct-mapped
/// cache of recent destinations sits in front of the tree). Both give the same answers. A group is
/// either "connected" (deliver to a host on an SVI subnet, resolved by ARP), "local" (an address of
/// this switch) or an ECMP set of (port, neighbour MAC) next hops. ECMP picks a member by a 5-tuple
/// hash (rte_jhash over src IP, dst IP, ports, protocol) seeded per switch, so different switches
/// split flows independently (avoids hash polarization).

#include <rte_fib.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "common/wire/headers.h"

namespace rocefab {

struct NextHop {
  uint16_t port;
  Mac mac;  ///< destination MAC written on the frame (the neighbour's router MAC)
};

struct RouteGroup {
  enum class Kind : uint8_t { kEcmp, kConnected, kLocal };
  Kind kind = Kind::kEcmp;
  uint16_t svi = 0;              ///< kConnected: index of the SVI
  std::vector<NextHop> members;  ///< kEcmp: at least one
  /// CONGA and ConWeave: leaf id of the ToR whose server subnet is exactly this route's prefix, -1
  /// if none (set by SwitchNode::Create from load_balancing.leaf_subnets; saves a per-packet
  /// search).
  int16_t conga_leaf = -1;
  /// ConWeave: the path id of each member (bytes 2..5 of its neighbour MAC, what the source ToR
  /// tags and the destination ToR reads back), in member order; set by SwitchNode::Create.
  std::vector<uint32_t> conweave_paths;
};

/// 5-tuple ECMP hash (rte_jhash_3words). Same inputs and seed give the same value everywhere.
uint32_t EcmpHash(Ipv4 src, Ipv4 dst, uint8_t proto, uint16_t sport, uint16_t dport, uint32_t seed);
/// Member index in [0, n) from a 32-bit hash (multiply-shift, no modulo bias for small n).
inline uint32_t EcmpPick(uint32_t hash, uint32_t n) {
  return static_cast<uint32_t>((static_cast<uint64_t>(hash) * n) >> 32);
}

enum class FibLayout : uint8_t { kDir24_8, kTree };

class RouteTable {
 public:
  /// Creates the FIB (EAL must be up). `name` must be unique in the process. Up to `max_routes`
  /// routes (< 32767 groups). Errors: EAL memory exhausted (DIR-24-8 needs 32 MiB).
  static Result<RouteTable*> Create(const std::string& name, uint32_t max_routes,
                                    FibLayout layout = FibLayout::kDir24_8);
  ~RouteTable();
  RouteTable(const RouteTable&) = delete;
  RouteTable& operator=(const RouteTable&) = delete;

  /// Adds prefix/len -> group; an existing prefix gets the new group in its slot (so replacing
  /// routes does not use up slots). Errors: len outside 0..32, empty ECMP group, LPM full.
  Status Add(Ipv4 prefix, int len, RouteGroup group);
  /// Removes prefix/len (no effect if absent); its slot is reused by the next Add.
  void Remove(Ipv4 prefix, int len);
  /// Group for `dst`, or nullptr when no route matches.
  const RouteGroup* Lookup(Ipv4 dst) const {
    uint64_t idx;
    if (cache_.empty()) {
      rte_fib_lookup_bulk(fib_, &dst, &idx, 1);
    } else {
      // The tree layout walks several nodes per lookup; a fabric has few destinations, so a
      // direct-mapped cache of (address, group) in front of it answers most lookups with one
      // access. Add() empties it.
      CacheSlot& c = cache_[(dst * 0x9E3779B1u) >> (32 - kCacheBits)];
      if (c.valid && c.dst == dst) {
        idx = c.idx;
      } else {
        rte_fib_lookup_bulk(fib_, &dst, &idx, 1);
        c = CacheSlot{dst, static_cast<uint16_t>(idx), true};
      }
    }
    return idx == kNoRoute ? nullptr : &groups_[idx];
  }
  size_t size() const { return groups_.size(); }

 private:
  static constexpr uint64_t kNoRoute = 0x7FFF;  // largest 2-byte DIR-24-8 next hop
  static constexpr int kCacheBits = 9;
  struct CacheSlot {
    Ipv4 dst = 0;
    uint16_t idx = 0;
    bool valid = false;
  };
  RouteTable(rte_fib* fib, bool cached) : fib_(fib), cache_(cached ? size_t{1} << kCacheBits : 0) {}
  rte_fib* fib_;
  mutable std::vector<CacheSlot> cache_;  // tree layout only; see Lookup
  std::vector<RouteGroup> groups_;
  std::unordered_map<uint64_t, uint32_t> slot_of_;  // (masked prefix << 8 | len) -> groups_ slot
  std::vector<uint32_t> free_slots_;                // slots of removed routes
};

}  // namespace rocefab

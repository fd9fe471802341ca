#pragma once
/// @file route_table.h
/// IPv4 routes: longest-prefix match in DPDK's rte_lpm (DIR-24-8), each route pointing to a
/// next-hop group. A group is either "connected" (deliver to a host on an SVI subnet, resolved by
/// ARP), "local" (an address of this switch) or an ECMP set of (port, neighbour MAC) next hops.
/// ECMP picks a member by a 5-tuple hash (rte_jhash over src IP, dst IP, ports, protocol) seeded
/// per switch, so different switches split flows independently (avoids hash polarization).

#include <rte_lpm.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/headers.h"
#include "common/result.h"

namespace rocefab {

struct NextHop {
  uint16_t port;
  Mac mac;  ///< destination MAC written on the frame (the neighbour's router MAC)
};

struct RouteGroup {
  enum class Kind : uint8_t { kEcmp, kConnected, kLocal };
  Kind kind = Kind::kEcmp;
  uint16_t svi = 0;               ///< kConnected: index of the SVI
  std::vector<NextHop> members;   ///< kEcmp: at least one
};

/// 5-tuple ECMP hash (rte_jhash_3words). Same inputs and seed give the same value everywhere.
uint32_t EcmpHash(Ipv4 src, Ipv4 dst, uint8_t proto, uint16_t sport, uint16_t dport,
                  uint32_t seed);
/// Member index in [0, n) from a 32-bit hash (multiply-shift, no modulo bias for small n).
inline uint32_t EcmpPick(uint32_t hash, uint32_t n) {
  return static_cast<uint32_t>((static_cast<uint64_t>(hash) * n) >> 32);
}

class RouteTable {
 public:
  /// Creates the LPM (EAL must be up). `name` must be unique in the process. Up to `max_routes`.
  static Result<RouteTable*> Create(const std::string& name, uint32_t max_routes);
  ~RouteTable();
  RouteTable(const RouteTable&) = delete;
  RouteTable& operator=(const RouteTable&) = delete;

  /// Adds prefix/len -> group. Errors: len outside 0..32, empty ECMP group, LPM full.
  Status Add(Ipv4 prefix, int len, RouteGroup group);
  /// Group for `dst`, or nullptr when no route matches.
  const RouteGroup* Lookup(Ipv4 dst) const {
    uint32_t idx;
    if (rte_lpm_lookup(lpm_, dst, &idx) != 0) return nullptr;
    return &groups_[idx];
  }
  size_t size() const { return groups_.size(); }

 private:
  explicit RouteTable(rte_lpm* lpm) : lpm_(lpm) {}
  rte_lpm* lpm_;
  std::vector<RouteGroup> groups_;
};

}  // namespace rocefab

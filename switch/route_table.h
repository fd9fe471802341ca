#pragma once
/// @file route_table.h
/// IPv4 routes: longest-prefix match, each route pointing to a next-hop group. Two layouts:
/// DIR-24-8 in DPDK's rte_fib (one memory access per lookup, but a 32 MiB table per switch: the
/// live runner's choice) and a hash of prefixes probed once per distinct prefix length, longest
/// first (the per-length hash LPM of Waldvogel et al., SIGCOMM 1997, without its binary search: a
/// fabric's tables hold 2-4 lengths). The prefix hash takes a few KiB per switch and no EAL memory:
/// the sim runner's choice, so fabrics of a thousand switches and more fit in one process (DPDK's
/// RIB, which rte_fib's other layout walks, takes 3 memzones per table, and Debian's DPDK 22.11
/// has 2,560 in all, RTE_MAX_MEMZONE: ~850 switches per process). A 512-entry direct-mapped
/// cache of recent destinations sits in front of the hash. Both layouts give the same answers. A
/// group is either "connected" (deliver to a host on an SVI subnet, resolved by ARP), "local" (an
/// address of this switch) or an ECMP set of (port, neighbour MAC) next hops. ECMP picks a member
/// by a 5-tuple hash (rte_jhash over src IP, dst IP, ports, protocol) seeded per switch, so
/// different switches split flows independently (avoids hash polarization).

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
  /// ConWeave and CONGA at a source ToR: how many next hops each member has towards this route's
  /// ToR (1 in a 2-tier leaf-spine and inside a podset; the spines of a plane between the
  /// podsets of a 3-tier Clos), so the group holds members x second_hops source-routed paths;
  /// path i leaves on member i / second_hops and the next switch takes its member i mod n. Set
  /// by the planner (fabric/plan.cc), else 1.
  uint16_t second_hops = 1;
  /// ConWeave: the path id of each path, in path order (path p leaves on member p / fanout).
  /// second_hops 1: bytes 2..5 of the member's neighbour MAC (what the source ToR writes as next
  /// hop and the destination ToR sees as previous hop). More: p + 1, which the frame carries to
  /// the destination ToR (switch_conweave.cc). Set by SwitchNode::Create.
  std::vector<uint32_t> conweave_paths;
};

/// 5-tuple ECMP hash (rte_jhash_3words). Same inputs and seed give the same value everywhere.
uint32_t EcmpHash(Ipv4 src, Ipv4 dst, uint8_t proto, uint16_t sport, uint16_t dport, uint32_t seed);
/// Member index in [0, n) from a 32-bit hash (multiply-shift, no modulo bias for small n).
inline uint32_t EcmpPick(uint32_t hash, uint32_t n) {
  return static_cast<uint32_t>((static_cast<uint64_t>(hash) * n) >> 32);
}

enum class FibLayout : uint8_t { kDir24_8, kPrefixHash };

class RouteTable {
 public:
  /// Creates the table. DIR-24-8: the EAL must be up and `name` unique in the process; errors:
  /// EAL memory or memzones exhausted (it needs 32 MiB). Up to `max_routes` routes (< 32767
  /// groups; the prefix hash has no other limit).
  static Result<RouteTable*> Create(const std::string& name, uint32_t max_routes,
                                    FibLayout layout = FibLayout::kDir24_8);
  ~RouteTable();
  RouteTable(const RouteTable&) = delete;
  RouteTable& operator=(const RouteTable&) = delete;

  /// Adds prefix/len -> group, or gives an existing prefix the new group. Equal groups are
  /// stored once (a next-hop group table, as in switch ASICs): a fabric's routes to every other
  /// switch and ToR subnet share a handful of groups, so a 1,024-switch fabric's 1.6 M routes
  /// hold KiB of groups, not GiB. Errors: len outside 0..32, empty ECMP group, more than 32,766
  /// distinct groups, LPM full.
  Status Add(Ipv4 prefix, int len, RouteGroup group);
  /// Removes prefix/len (no effect if absent); a group no route uses any more is freed.
  void Remove(Ipv4 prefix, int len);
  /// The group of exactly prefix/len (host bits ignored), nullptr if there is no such route.
  const RouteGroup* Find(Ipv4 prefix, int len) const;
  /// Group for `dst`, or nullptr when no route matches.
  const RouteGroup* Lookup(Ipv4 dst) const {
    uint64_t idx;
    if (fib_ != nullptr) {
      rte_fib_lookup_bulk(fib_, &dst, &idx, 1);
    } else {
      // The prefix hash probes once per prefix length; a fabric has few destinations, so a
      // direct-mapped cache of (address, group) in front of it answers most lookups with one
      // access. Add() and Remove() empty it.
      CacheSlot& c = cache_[(dst * 0x9E3779B1u) >> (32 - kCacheBits)];
      if (c.valid && c.dst == dst) {
        idx = c.idx;
      } else {
        idx = HashLookup(dst);
        c = CacheSlot{dst, static_cast<uint16_t>(idx), true};
      }
    }
    return idx == kNoRoute ? nullptr : &groups_[idx];
  }
  /// Routes in the table.
  size_t size() const { return slot_of_.size(); }
  /// Distinct groups they point to.
  size_t groups() const { return groups_.size() - free_groups_.size(); }

 private:
  static constexpr uint64_t kNoRoute = 0x7FFF;  // largest 2-byte DIR-24-8 next hop
  static constexpr int kCacheBits = 9;
  struct CacheSlot {
    Ipv4 dst = 0;
    uint16_t idx = 0;
    bool valid = false;
  };
  explicit RouteTable(rte_fib* fib) : fib_(fib), cache_(fib ? 0 : size_t{1} << kCacheBits) {}
  static Ipv4 Mask(Ipv4 a, int len) { return len == 0 ? 0 : a & ~((1ull << (32 - len)) - 1); }
  static uint64_t Key(Ipv4 masked, int len) { return uint64_t{masked} << 8 | uint64_t(len); }
  /// The prefix hash's answer: the slot of the longest prefix holding `dst`, kNoRoute if none.
  uint64_t HashLookup(Ipv4 dst) const;
  void CountLength(int len, int delta);  // keeps lengths_ (prefix hash layout)
  /// The index of a group equal to `g` (one more route uses it), a new one if there is none.
  Result<uint32_t> Intern(RouteGroup g);
  void Release(uint32_t idx);  // one route fewer uses groups_[idx]
  static uint64_t GroupHash(const RouteGroup& g);
  void ForgetCache() {
    for (CacheSlot& c : cache_) c.valid = false;
  }
  rte_fib* fib_;                          // DIR-24-8; nullptr: the prefix hash
  mutable std::vector<CacheSlot> cache_;  // prefix hash only; see Lookup
  std::vector<RouteGroup> groups_;        // distinct groups; the FIB's next hops index them
  std::vector<uint32_t> users_;           // routes per group (0: free)
  std::vector<uint32_t> free_groups_;
  std::unordered_multimap<uint64_t, uint32_t> group_of_hash_;  // GroupHash -> groups_ index
  std::unordered_map<uint64_t, uint32_t> slot_of_;  // Key(masked prefix, len) -> groups_ index
  std::vector<std::pair<int, int>> lengths_;        // (prefix length, routes), longest first
};

}  // namespace rocefab

#pragma once
/// @file switch_config.h
/// Typed configuration of one switch, built from a scenario by topo/fabric (or by tests).

#include <cstdint>
#include <string>
#include <vector>

#include "common/headers.h"
#include "common/time.h"
#include "switch/route_table.h"

namespace rocefab {

struct SwitchPortConfig {
  std::string name;    ///< e.g. "tor0/p2" (for reports)
  BitRate rate = 0;    ///< link rate, bits/s (> 0)
  uint16_t vlan = 0;   ///< access VLAN (1..4094) of a server-facing L2 port; 0 = routed port
};

/// A switch virtual interface: the gateway of a server subnet (one per VLAN).
struct SviConfig {
  uint16_t vlan = 0;
  Ipv4 ip = 0;          ///< gateway address
  int prefix_len = 24;  ///< subnet length (8..30)
};

struct RouteConfig {
  Ipv4 prefix = 0;
  int len = 0;
  RouteGroup group;
};

struct SwitchConfig {
  std::string name;
  Mac router_mac{};                     ///< also the source MAC of every port
  Ipv4 loopback = 0;                    ///< answers ICMP echo (0 = none)
  std::vector<SwitchPortConfig> ports;
  std::vector<SviConfig> svis;
  std::vector<RouteConfig> routes;      ///< remote prefixes; SVI subnets are added automatically
  Time mac_aging = 300 * kSec;          ///< IEEE 802.1Q default ageing time (paper: 5 min)
  Time arp_aging = 4 * 3600 * kSec;     ///< the paper's ToR ARP timeout (4 h)
  Time arp_retry = 1 * kSec;            ///< interval between ARP requests for one address
  int arp_retries = 3;                  ///< requests before queued frames are dropped
  int arp_queue_len = 16;               ///< frames held per unresolved address
  uint32_t ecmp_seed = 0;               ///< per-switch ECMP hash seed
  int64_t egress_buffer_bytes = 1 << 20;  ///< per-port egress byte limit (until the MMU lands)
  FibLayout fib = FibLayout::kDir24_8;    ///< route table layout (see route_table.h)
};

}  // namespace rocefab

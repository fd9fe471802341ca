#pragma once
/// @file switch_config.h
/// Typed configuration of one switch, built from a scenario by topo/fabric (or by tests).

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/qos.h"
#include "common/time.h"
#include "common/wire/headers.h"
#include "switch/ecmp.h"
#include "switch/ecn.h"
#include "switch/load_balancer.h"
#include "switch/mmu.h"
#include "switch/pfc_watchdog.h"
#include "switch/route_table.h"
#include "switch/scheduler.h"

namespace rocefab {

/// A lossless PG's buffer profile as configured (SONiC BUFFER_PROFILE of a lossless PG): the
/// PgProfile fields, where headroom (xoff) and xon may be left to SONiC's headroom formula for
/// each port's speed and cable (ComputeHeadroom, mmu.h).
struct LosslessPgConfig {
  PgProfile pg{0, 0, 0, 0, 0, 0};  ///< pg.xoff / pg.xon count only where the auto flag is false
  bool auto_xoff = true;           ///< headroom from the formula; false: pg.xoff (>= 0; 0 is the
                                   ///< misconfiguration `rocefab check` names)
  bool auto_xon = true;            ///< XON_TH from the formula; false: pg.xon
};

struct SwitchPortConfig {
  std::string name;    ///< e.g. "tor0/p2" (for reports)
  BitRate rate;        ///< link rate, bits/s (> 0)
  uint16_t vlan = 0;   ///< access VLAN (1..4094) of a server-facing L2 port; 0 = routed port
  double cable_m = 5;  ///< cable length (headroom calculation)
  /// A routed fabric port that is also a member of `vlan` for unknown-unicast flooding and
  /// bridging (a server VLAN stretched over the uplinks). Broadcasts (ARP) stay on access ports.
  bool trunk = false;
  /// The PFC watchdog (if enabled for the switch) watches this port; false: never (SONiC's
  /// `pfcwd start --action ... PORTS` names the ports).
  bool pfc_watchdog = true;
  /// The lossless PGs' buffer profile of this port (SONiC BUFFER_PG -> BUFFER_PROFILE); empty:
  /// the switch's BufferConfig::lossless.
  std::optional<LosslessPgConfig> lossless;
  std::string buffer_profile;  ///< the profile's name in the scenario (reports), "" = switch-wide
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

/// Buffer settings; per-port lossless headroom is computed from each port's speed and cable
/// (SONiC formula, mmu.h) unless a profile sets it (LosslessPgConfig).
struct BufferConfig {
  bool shared = true;       ///< false: a plain per-port FIFO limit (foundation behaviour)
  int64_t size = 12 << 20;  ///< total buffer bytes (shared mode) or per-port limit (plain)
  /// Every port's lossless PGs unless the port has its own (SwitchPortConfig::lossless).
  LosslessPgConfig lossless;
  /// > 0: headroom is one shared pool of this many bytes (SAI BUFFER_POOL XOFF_SIZE, SONiC
  /// BUFFER_POOL|ingress_lossless_pool `xoff`) that every lossless PG draws from, each up to its
  /// own xoff; 0: each lossless PG has its xoff bytes of dedicated headroom.
  int64_t shared_headroom_pool = 0;
  /// Extra peer reaction time added to the formula (the live runner's poll-loop catch-up window:
  /// frames already pulled when an XOFF is processed), in ps.
  Time headroom_extra_delay = 0;
  PgProfile lossy_pg{0, 0, 0, 0, 0, 0};
  QueueProfile lossy_queue{0, 0, 0};
  /// MmuConfig::lossless_shared_beyond_limit (the reference ns-3 simulator's admission).
  bool lossless_shared_beyond_limit = false;
};

struct PfcConfig {
  bool enabled = true;             ///< generate PFC from lossless PGs (receiving is always on)
  uint16_t pause_quanta = 0xFFFF;  ///< XOFF pause time
  /// > 0: the XOFF pause time as a duration (ps) instead of pause_quanta, converted per port to
  /// quanta of 512 bit times at its rate (rounded up, at most 65535).
  Time pause_time = 0;
  /// XOFF refresh period while congested; 0 = half the pause time. At least one PFC frame's
  /// wire time at the port's rate (84 B: 6.72 ns at 100 Gb/s) whatever is given.
  Time refresh = 0;
  /// Send an XOFF for every frame admitted to a PG in XOFF, instead of refreshing on a timer:
  /// the reference ConWeave ns-3 simulator's rule (switch-node.cc CheckAndSendPfc; with its
  /// 5 us pause time the peer resumes by itself unless more frames arrive). topo/compat.h.
  bool xoff_every_frame = false;
};

/// The lossless PG profile the MMU uses for `port`: the port's own profile or the switch's, with
/// "auto" headroom and XON from SONiC's formula for the port's speed and cable
/// (buffer_headroom_mellanox.lua; 1518-byte frames; `headroom_extra_delay` as gearbox delay).
PgProfile ResolveLosslessPg(const BufferConfig& buffer, const SwitchPortConfig& port);

struct SwitchConfig {
  std::string name;
  Mac router_mac{};   ///< also the source MAC of every port
  Ipv4 loopback = 0;  ///< answers ICMP echo (0 = none)
  std::vector<SwitchPortConfig> ports;
  std::vector<SviConfig> svis;
  std::vector<RouteConfig> routes;      ///< remote prefixes; SVI subnets are added automatically
  Time mac_aging = 300 * kSec;          ///< IEEE 802.1Q default ageing time (paper: 5 min)
  Time arp_aging = 4 * 3600 * kSec;     ///< the paper's ToR ARP timeout (4 h)
  Time arp_retry = 1 * kSec;            ///< interval between ARP requests for one address
  int arp_retries = 3;                  ///< requests before queued frames are dropped
  int arp_queue_len = 16;               ///< frames held per unresolved address
  uint32_t ecmp_seed = 0;               ///< per-switch ECMP hash seed (EcmpHash: flow identity)
  EcmpConfig ecmp;                      ///< how an ECMP group's member is drawn (switch/ecmp.h)
  LoadBalancingConfig load_balancing;   ///< data-packet path choice in ECMP groups
  uint64_t rng_seed = 1;                ///< seeds ECN marking decisions
  FibLayout fib = FibLayout::kDir24_8;  ///< route table layout (see route_table.h)
  QosProfile qos = QosProfile::Named("roce").value();
  BufferConfig buffer;
  PfcConfig pfc;
  std::array<WredProfile, 8> wred{};  ///< per egress queue
  SchedulerConfig scheduler;
  PfcWatchdogConfig watchdog;
  /// Drop (instead of flooding) lossless frames whose next hop has an ARP entry but no MAC-table
  /// entry: the fix of Guo et al. §4.2 for the flooding deadlock.
  bool drop_lossless_on_incomplete_arp = false;
};

}  // namespace rocefab

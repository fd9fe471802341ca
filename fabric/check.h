#pragma once
/// @file check.h
/// `rocefab check SCENARIO`: configuration monitoring before a run, after the paper's
/// configuration-monitoring service (Guo et al. §5.1). Each finding names the switch, port or
/// host and the field. Checks:
///  1. nic-dscp-lossless: the NICs' data DSCP maps to a lossless priority on the switches;
///  2. pfc-generation: PFC generation enabled on the switches when a lossless class is in use;
///  3. headroom: a static headroom covers the bytes in flight during one cable round trip plus
///     three maximum frames (rocefab's MMU counts bytes and reacts at once; "auto" uses SONiC's
///     more conservative formula);
///  4. mtu: the NIC path MTU plus RoCE headers fits the switches' frame size (1518 B) and the NIC
///     MTU is a valid IB MTU (256, 512, 1024, 2048, 4096 or the 1000-byte simulator payload);
///  5. ecn-below-pfc: ECN Kmax is below the XOFF point of a lone congested lossless PG
///     (pool x alpha / (1 + alpha)), so ECN acts before PFC;
///  6. buffer: reserved buffer plus headroom leaves a shared pool (the MMU would refuse it);
///  7. cnp-priority: CNPs travel on a lossy strict-priority queue, not behind data;
///  8. watchdog-poll: the PFC watchdog polls no more often than XOFF is refreshed (poll_interval
///     >= the fastest refresh period, pfc.refresh or half the pause time): the storm predicate
///     needs a new XOFF frame in every poll, so a poll between two refreshes of a real storm
///     restarts the detection count and the storm is never declared. (detection_time below
///     poll_interval is refused by the scenario reader.)
///  9. pcp-across-routers: lossless classes chosen by VLAN PCP (qos.trust "pcp") in a fabric with
///     switch-switch links: the tag is gone after a routed hop (Guo et al. §3, why DSCP);
/// 10. pause-storm-watchdog: lossless traffic with both the switch PFC watchdog and the NIC
///     watchdog off: nothing stops a stalled NIC's endless XOFF (Guo et al. §4.3);
/// 11. arp-flood-deadlock: lossless traffic, the server VLAN on the uplinks (flooding domain over
///     the fabric), MAC ageing (switch.mac_aging or a mac_aging fault) shorter than ARP ageing and
///     no drop_lossless_on_incomplete_arp: flooded lossless frames can deadlock (Guo et al. §4.2).
/// Findings that differ only in where they apply (one per port) are one finding naming every place.
/// docs/check.md lists the rules.

#include <string>
#include <vector>

#include "topo/scenario.h"

namespace rocefab {

struct CheckFinding {
  std::string check;  ///< e.g. "headroom"
  std::string where;  ///< switch/port or host
  std::string field;  ///< scenario field
  std::string message;
};

std::vector<CheckFinding> CheckScenario(const Scenario& s);

}  // namespace rocefab

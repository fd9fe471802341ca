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
///  8. watchdog-poll: the PFC watchdog polls at least as often as XOFF is refreshed
///     (otherwise a real storm can escape its predicate).

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

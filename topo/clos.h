#pragma once
/// @file clos.h
/// Clos fabric generator: 2-tier leaf-spine (ToRs fully meshed to spines) and 3-tier (podsets of
/// ToRs fully meshed to their leaves; leaf j of every podset meshed to spine plane j, as in the
/// paper's podset design). Addressing: ToR i serves 10.(1 + i/256).(i%256).0/24, gateway .1,
/// hosts from .2; switch loopbacks 10.255.x.y; MACs 02:52:53:... (switches) and 02:52:48:...
/// (hosts). Links are listed host links first, then uplinks, so host ports come first on a ToR.

#include <string>

#include "common/result.h"
#include "topo/topology.h"

namespace rocefab {

struct ClosSpec {
  int tiers = 2;              ///< 2 or 3
  int spines = 2;             ///< 1..256
  int tors = 2;               ///< 2-tier: ToRs in total; 3-tier: ToRs per podset (1..256)
  int leaves_per_podset = 2;  ///< 3-tier only
  int podsets = 1;            ///< 3-tier only
  int hosts_per_tor = 2;      ///< 0..253
  BitRate host_rate;          ///< 0 = link_rate
  BitRate link_rate = 100 * kGbps;
  double cable_m = 5;        ///< metres, every link unless one of the three below is >= 0
  double host_cable_m = -1;  ///< host-ToR links (metres; < 0: cable_m)
  double tor_cable_m = -1;   ///< a ToR's uplinks: to the spines (2-tier), the leaves (3-tier)
  double leaf_cable_m = -1;  ///< 3-tier: leaf-spine links
  HostKind host_kind = HostKind::kLinux;
};

/// Errors name the field and the rule (e.g. "spines: 3-tier needs spines divisible by
/// leaves_per_podset").
Result<Topology> BuildClos(const ClosSpec& spec);

}  // namespace rocefab

#pragma once
/// @file plan.h
/// Turns a Scenario into the fabric's nodes and wires, before anything runs: switch configs with
/// ports (numbered in topology link order), SVIs and shortest-path ECMP routes (what BGP with
/// multipath converges to on a Clos), host configs (NIC, DCQCN profile at the host's link rate)
/// and the link list. Both runners build from the same plan (fabric/fabric.h).

#include <vector>

#include "common/result.h"
#include "common/time.h"
#include "nic-emu/emulated_host.h"
#include "switch/switch_node.h"
#include "topo/scenario.h"

namespace rocefab {

struct FabricPlan {
  struct Endpoint {
    bool is_host = false;
    int index = 0;      ///< into switches or hosts
    uint16_t port = 0;  ///< port on that node (hosts: 0)
  };
  struct Link {
    Endpoint a, b;
    BitRate rate;
    Time delay = 0;  ///< propagation (ps)
  };
  std::vector<SwitchConfig> switches;
  std::vector<EmulatedHostConfig> hosts;
  std::vector<Link> links;
};

/// Builds the plan. Errors: a switch graph that leaves some ToR unreachable, a DCQCN profile
/// that does not exist.
Result<FabricPlan> PlanFabric(const Scenario& s);

/// Shortest-path ECMP routes (what BGP with multipath converges to) from every switch to every
/// ToR subnet and every loopback, over the switch-to-switch links of `plan` whose entry in
/// `link_down` (indexed like plan.links; missing = up) is false; by switch index. A destination
/// a switch cannot reach is an error with `all_reachable`, else it gets no route. Under ConWeave
/// and CONGA a ToR's route to another ToR gets RouteGroup::second_hops; `second_hop_switches`,
/// when given, is sized to the switches and marks those that are the second hop of a
/// source-routed path (they follow the path index).
Result<std::vector<std::vector<RouteConfig>>> ShortestPathRoutes(
    const Topology& t, const FabricPlan& plan, const std::vector<bool>& link_down,
    bool all_reachable, std::vector<bool>* second_hop_switches = nullptr);

/// Empty-fabric round trip between two hosts of the plan under `compat`'s rule
/// (CompatModel::BaseRtt over the shortest path's links, the host link's propagation and rate;
/// by default propagation both ways plus the store-and-forward time of one `mtu` data packet per
/// switch hop, the first link's being in the flow's byte term, and of the ACK on every link).
Time BaseRtt(const FabricPlan& plan, const Topology& topo, int src, int dst, uint32_t mtu,
             const CompatModel& compat);

/// BaseRtt for many host pairs: the switch graph is read once and the hop counts from each
/// source ToR found once (one BFS per ToR, not per pair: 124k flows over 16k hosts took 80 s of
/// set-up with a BFS each). `plan` and `topo` must outlive it.
class BaseRttTable {
 public:
  BaseRttTable(const FabricPlan& plan, const Topology& topo);
  /// The same value as BaseRtt(plan, topo, src, dst, mtu, compat).
  Time Rtt(int src, int dst, uint32_t mtu, const CompatModel& compat);

 private:
  const FabricPlan& plan_;
  std::vector<int> tor_of_;                  // switch index of each host's ToR
  std::vector<std::vector<int>> adj_;        // switch-to-switch links
  std::vector<std::vector<int>> hops_from_;  // per switch: BFS distances (empty until asked)
  Time prop_ = 0;                            // the first host link's propagation delay
};

/// Nearest-rank percentile (p in (0, 1]) of `v` (sorted in place). 0 for an empty vector.
Time Percentile(std::vector<Time>& v, double p);

}  // namespace rocefab

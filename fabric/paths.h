#pragma once
/// @file paths.h
/// Where flows go and what they could get, computed from the plan (no frames, no clock): the
/// links a flow's frames cross under ECMP, the same walk with another member choice (uniformly
/// at random: the balls-into-bins model of ECMP), and max-min fair rates of long flows on fixed
/// paths. Used to annotate summary.json (`rdma[].ecmp_paths`) and by the ECMP throughput-bound
/// experiment (docs/experiments.md, Guo et al. SIGCOMM 2016 §6: ECMP hash collisions cap a
/// podset's goodput).

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/rng.h"
#include "fabric/plan.h"
#include "topo/topology.h"

namespace rocefab {

/// The 5-tuple a switch hashes (SwitchNode::RouteIpv4: EcmpHash over these).
struct FiveTuple {
  Ipv4 src = 0, dst = 0;
  uint8_t proto = 17;
  uint16_t sport = 0, dport = 4791;
  /// IPv4 identification of the flow's frames where its NIC writes one per QP (the reference
  /// simulator's compat model: switch/ecmp.h); unused otherwise.
  uint16_t ip_id = 0;
};

/// Chooses a member in [0, n) of switch `sw`'s ECMP group (plan.switches index) for a flow.
using MemberChoice = std::function<uint32_t(int sw, uint32_t n)>;

/// Walks the plan's routes (plan and topology must outlive it).
class PathTracer {
 public:
  PathTracer(const FabricPlan& plan, const Topology& topo);

  /// The links (indices into plan.links, in crossing order: host link first, destination
  /// host's link last) from host `src` to host `dst` (topology host indices) when every switch
  /// takes `choose`'s member of its route group for dst's subnet. Errors: a switch without a
  /// route for the destination (names it), more than 64 hops (a routing loop).
  Result<std::vector<int>> Trace(int src, int dst, const MemberChoice& choose) const;

  /// Trace with each switch's ECMP choice for `flow`: EcmpPick(EcmpHash(flow, the switch's
  /// ecmp_seed), n), or the reference simulator's draw where the switch's EcmpConfig says so,
  /// exactly as the data path picks for a frame of that 5-tuple (the member order is the plan's
  /// route group order, which SwitchNode installs unchanged).
  Result<std::vector<int>> Ecmp(int src, int dst, const FiveTuple& flow) const;

  /// Trace with a uniformly random member at every switch (`rng`): a ball thrown into the bins
  /// at each stage, the model of an ideal hash.
  Result<std::vector<int>> Random(int src, int dst, Rng& rng) const;

 private:
  const FabricPlan& plan_;
  const Topology& topo_;
  std::map<std::pair<int, uint16_t>, int> by_switch_port_;  // (switch, port) -> link
  std::vector<int> host_link_;                              // by host index, -1 if none
  std::vector<int> tor_of_;                                 // by host index
};

/// The name of each hop of `path` (a Trace result from host `src`): the source host's name for
/// its own link, then the "switch/pN" egress port each further link is entered from.
std::vector<std::string> PathPortNames(const FabricPlan& plan, const std::vector<int>& path,
                                       int src);

/// Max-min fair rates (progressive filling, Bertsekas & Gallager, Data Networks §6.5.2) of
/// long-lived flows: flow f crosses the links paths[f] (indices into `capacity`, bits/s, > 0).
/// Every flow's rate grows at the same pace until a link on its path is full; those flows
/// freeze, the rest go on. Returns bits/s per flow; a flow with an empty path is unconstrained
/// (+infinity). Pure; O(links x flows) per filling step, at most `links` steps.
std::vector<double> MaxMinFairRates(const std::vector<double>& capacity,
                                    const std::vector<std::vector<int>>& paths);

/// One long flow for EcmpModel: topology host indices and the 5-tuple of its data frames.
struct LongFlow {
  int src = 0, dst = 0;
  FiveTuple tuple;
};

/// What ECMP can give a set of long flows on this plan, without running them (every link carries
/// its rate in each direction; flows on one cable in opposite directions do not share it):
///   ecmp_gbps       the max-min fair total on the paths ECMP hashes them onto (PathTracer::Ecmp);
///   unconstrained_gbps  the same with only the hosts' own links (no fabric collisions);
///   random_gbps     the max-min fair total over `trials` draws of PathTracer::Random per flow (the
///                   balls-into-bins expectation), sorted ascending;
///   flows_per_port  the number of flows whose ECMP path leaves through each switch port
///                   ("switch/pN"; ports no flow takes are absent).
/// Totals in Gb/s, rounded to the kb/s. `trials` >= 0 draws from Rng(`seed`). Errors: a flow
/// PathTracer cannot route.
struct EcmpModel {
  double ecmp_gbps = 0, unconstrained_gbps = 0;
  std::vector<double> random_gbps;
  std::map<std::string, int> flows_per_port;
};
Result<EcmpModel> ModelEcmp(const FabricPlan& plan, const Topology& topo,
                            const std::vector<LongFlow>& flows, int trials, uint64_t seed);

}  // namespace rocefab

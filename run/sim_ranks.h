#pragma once
/// @file sim_ranks.h
/// The results of a distributed sim run (SimFabric::SetRanks): each rank's summary holds its own
/// switches and hosts; MergeRankSummaries makes them the one summary a single process gives,
/// key for key and in the same order (tests/mpi/mpi_test.sh compares them byte for byte).

#include <nlohmann/json.hpp>
#include <vector>

#include "fabric/fabric.h"

namespace rocefab {

/// `parts` by rank (Fabric::Summary of each rank's nodes, with the sim runner's keys). Keys by
/// switch or host (switches, hosts, pause_spread, nic_watchdogs) are joined; pings in host
/// order; UDP flows by id, the halves of a flow whose ends ran on two ranks joined (JoinFlows);
/// RDMA tests in the scenario's order, and the ECMP model recomputed from them; counters summed
/// (lost_frames, mbuf_alloc_failures, events_executed, frames_delivered, the sim_events
/// counts; max_pending the largest); the conservation block summed, its unbalanced nodes in
/// fabric order. What the observers and the shared records give (events, deadlocks, workload,
/// notes, timing) is the same on every rank and comes from rank 0. `fab` is any rank's fabric
/// (the scenario, plan and test order). Pure apart from reading `fab`.
nlohmann::json MergeRankSummaries(const Fabric& fab, const std::vector<nlohmann::json>& parts);

}  // namespace rocefab

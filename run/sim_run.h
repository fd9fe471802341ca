#pragma once
/// @file sim_run.h
/// `rocefab sim`: run a scenario in virtual time, print progress and a summary table, and write
/// the results folder: summary.json (deterministic for a given scenario and seed), flows.csv and
/// pings.csv.

#include <cstdint>
#include <string>

#include "common/result.h"
#include "fabric/results.h"  // WriteJsonFile, PrintSummaryTable
#include "topo/scenario.h"

namespace rocefab {

struct SimRunOptions {
  std::string out_dir;        ///< created if missing; empty = write nothing
  bool quiet = false;         ///< no progress lines
  int64_t seed_override = -1; ///< >= 0 replaces the scenario's seed
  int threads = 1;            ///< 1..64, or 0 = auto: SimFabric::SetThreads (same results)
};

/// Starts EAL (no hugepages) if needed, runs, reports. Returns the summary JSON.
Result<nlohmann::json> RunSim(Scenario scenario, const SimRunOptions& opt);

}  // namespace rocefab

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
  std::string out_dir;         ///< created if missing; empty = write nothing
  bool quiet = false;          ///< no progress lines
  int64_t seed_override = -1;  ///< >= 0 replaces the scenario's seed
  int threads = 1;             ///< 1..64, or 0 = auto: SimFabric::SetThreads (same results)
  /// One rank of an MPI run (`mpirun -np N rocefab sim`; run/mpi_ranks.h): the fabric is split
  /// over the ranks (SimFabric::SetRanks), `threads` per rank (0: 1), and rank 0 gathers the
  /// results and writes the folder, the same files a single process writes.
  bool mpi = false;
  /// With `mpi`: a hash of how this rank was started (scenario file bytes, --set values,
  /// --threads, --seed, --duration); the ranks refuse to run unless all have the same.
  uint64_t args_fingerprint = 0;
};

/// What a `rocefab sim` progress line says of the run's end, at virtual time `until` (ps) of
/// `duration` after `wall_s` wall seconds: "done" at `duration`; before `traffic_end` "about 8 s
/// left", assuming the rest runs at the pace so far (virtual time per wall second) up to
/// `traffic_end`, not to `duration`: a run skips the idle virtual time after its traffic, so an
/// estimate to `duration` overstates what is left (a trace that ends at 10 ms of a 30 ms run:
/// 2.5x). `flows_running` >= 0: the run has a flow workload, `traffic_end` its last flow's start,
/// and from then on the line says "all flows started, N running"; -1: no workload, the estimate
/// runs to `duration`.
std::string ProgressTimeLeft(Time until, Time duration, Time traffic_end, double wall_s,
                             int64_t flows_running);

/// Starts EAL (no hugepages) if needed, runs, reports. Returns the summary JSON (with `mpi`:
/// the merged one on rank 0, the rank's own elsewhere). Errors of one rank in an MPI run end
/// every rank (MPI_Abort) once the run has started; before that all ranks agree to stop.
Result<nlohmann::json> RunSim(Scenario scenario, SimRunOptions opt);

}  // namespace rocefab

#pragma once
/// @file sim_fabric.h
/// A scenario's fabric (fabric/fabric.h) on a SimRunner: virtual time, on one thread or on
/// several partitions with byte-identical results.

#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/runtime/sim_runner.h"
#include "fabric/fabric.h"

namespace rocefab {

class SimFabric {
 public:
  /// Errors: Fabric::Build's.
  static Result<std::unique_ptr<SimFabric>> Create(const Scenario& s, rte_mempool* pool);
  ~SimFabric();

  SimRunner& runner() { return *runner_; }
  Fabric& fabric() { return *fabric_; }
  const Fabric& fabric() const { return *fabric_; }
  const Scenario& scenario() const { return fabric_->scenario(); }
  size_t num_switches() const { return fabric_->num_switches(); }
  SwitchNode& sw(size_t i) { return fabric_->sw(i); }
  SwitchNode* sw(const std::string& name) { return fabric_->sw(name); }
  size_t num_hosts() const { return fabric_->num_hosts(); }
  EmulatedHost& host(size_t i) { return *fabric_->host(i); }  // every host is a node in the sim
  EmulatedHost* host(const std::string& name) { return fabric_->host(name); }
  const std::vector<std::string>& notes() const { return fabric_->notes(); }
  const std::vector<Fabric::FlowInfo>& flow_info() const { return fabric_->flow_info(); }
  RdmaTraffic* rdma() { return fabric_->rdma(); }
  size_t deadlocks() const { return fabric_->deadlocks(); }
  Time deadlock_formed_at() const { return fabric_->deadlock_formed_at(); }
  const std::vector<std::string>& fault_log() const { return fabric_->fault_log(); }

  /// Opens the scenario's outputs in `dir` (Fabric::OpenOutputs, streaming). Call before
  /// SetThreads. Errors: Fabric::OpenOutputs', after SetThreads.
  Status OpenOutputs(const std::string& dir);
  /// Runs to virtual time `t`.
  void RunUntil(Time t);
  /// Runs to the scenario's duration, then lets frames in flight drain (sources stop at the
  /// duration) for at most `drain` more virtual time.
  void Run(Time drain = kDrain) {
    RunUntil(scenario().duration);
    RunUntil(scenario().duration + drain);
  }
  /// Runs the nodes on up to `threads` threads (SimRunner partitions; call once, before the
  /// first run, after OpenOutputs): each ToR (a switch with hosts) with its hosts in one
  /// partition, the ToRs in contiguous blocks, the other switches spread evenly; at most one
  /// thread per ToR and per CPU in the process's affinity mask. The observers (fault timeline,
  /// deadlock detector, time-series sampler) run between windows (SimRunner::kObserver).
  /// Results are identical for every thread count (packet captures included: frames are
  /// written at the end of each window in arrival order). Returns the number of threads used;
  /// `note` says why when that is fewer than asked (one ToR; fewer ToRs or CPUs; a zero-delay
  /// link between blocks), else is empty. `threads` 0 means one per CPU and ToR (no note for
  /// those caps). Errors: threads outside 0..64, a second call.
  Result<int> SetThreads(int threads, std::string* note);
  /// A distributed run instead (`mpirun -np N rocefab sim`, run/mpi_ranks.h): the fabric is
  /// split into ranks->size() x `threads` partitions as SetThreads splits it (ToRs with their
  /// hosts, in contiguous blocks), partition p on rank p * ranks / partitions, this process
  /// running its own on `threads` threads (1..64). Every rank builds the same fabric and must
  /// call this with the same arguments. Summary() then reports this rank's nodes (plus the
  /// observers' results, the same on every rank); MergeRankSummaries (run/sim_ranks.h) joins
  /// them. Returns this rank's partitions. Errors: a second call (or after SetThreads), threads
  /// out of range, fewer ToRs than ranks, and what a distributed run does not do yet: packet
  /// captures, timeseries.csv and dcqcn.csv samplers, RDMA and TCP Pingmesh.
  Result<int> SetRanks(Ranks* ranks, int threads);
  /// A hash of what every rank of a distributed run must build alike: the scenario's name, seed
  /// and duration, the switches' and hosts' names, every link (ends, rate, delay) and every
  /// workload flow (ends, size, start). Ranks compare it before they run (rocefab sim), so ranks
  /// started with different files or --set values stop with an error instead of exchanging
  /// frames for nodes the other does not have.
  uint64_t Fingerprint() const;
  /// The run's results: Fabric::Summary plus the sim runner's own keys (deterministic: no
  /// wall-clock values).
  nlohmann::json Summary() const;
  /// Flushes and closes the outputs (call after the run).
  Status CloseOutputs() { return fabric_->CloseOutputs(); }

 private:
  SimFabric() = default;
  std::unique_ptr<SimRunner> runner_;
  std::unique_ptr<Fabric> fabric_;
  bool threads_set_ = false;
};

}  // namespace rocefab

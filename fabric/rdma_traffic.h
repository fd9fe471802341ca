#pragma once
/// @file rdma_traffic.h
/// The scenario's traffic on emulated NICs (perftest-style runs, flow workloads, RDMA Pingmesh),
/// built once from the plan for either runner.

#include <memory>
#include <string>
#include <vector>

#include "fabric/plan.h"
#include "nic-emu/emulated_host.h"
#include "nic-emu/rdma_apps.h"
#include "topo/scenario.h"

namespace rocefab {

/// `hosts[i]` is null for hosts without an emulated NIC (Linux namespaces in the live runner).
class RdmaTraffic {
 public:
  static Result<std::unique_ptr<RdmaTraffic>> Build(const Scenario& s, const FabricPlan& plan,
                                                    const std::vector<EmulatedHost*>& hosts);
  bool empty() const { return perftests_.empty() && !workload_ && !pingmesh_; }
  bool done() const;
  nlohmann::json PerftestResults() const;
  /// Workload summary (null when there is none); flows starting before `measure_from` are
  /// excluded. `flows_after_duration`: the trace or Poisson flows that would have started at or
  /// after the scenario's duration, so were never started.
  nlohmann::json WorkloadSummary() const;
  /// Pingmesh aggregates at `now` (null when the scenario has none).
  /// Every completed RDMA Pingmesh probe's RTT (empty without a pingmesh item).
  std::vector<Time> PingmeshRtts() const {
    return pingmesh_ ? pingmesh_->Rtts() : std::vector<Time>();
  }
  nlohmann::json PingmeshSummary(Time now) const {
    return pingmesh_ ? pingmesh_->Result(now) : nlohmann::json();
  }
  /// Per-flow FCT lines in the HPCC/ConWeave simulators' `*_out_fct.txt` layout:
  /// "src dst sport dport size start_ns fct_ns standalone_fct_ns" (host indices as node ids).
  Status WriteFct(const std::string& path) const;
  const FlowWorkload* workload() const { return workload_.get(); }
  FlowWorkload* workload() { return workload_.get(); }
  bool has_pingmesh() const { return pingmesh_ != nullptr; }
  const Perftest& perftest(size_t i) const { return *perftests_[i]; }
  size_t num_perftests() const { return perftests_.size(); }
  std::vector<std::string> Text() const;

 private:
  std::vector<std::unique_ptr<Perftest>> perftests_;
  std::unique_ptr<FlowWorkload> workload_;
  std::unique_ptr<Pingmesh> pingmesh_;
  Time measure_from_ = 0;
  uint64_t flows_after_end_ = 0;
};

}  // namespace rocefab

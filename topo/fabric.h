#pragma once
/// @file fabric.h
/// Turns a Scenario into nodes and links: switch configs with ports, SVIs and shortest-path ECMP
/// routes (what BGP with multipath converges to on a Clos), host configs, and the link list.
/// SimFabric then instantiates everything on a SimRunner with the scenario's traffic.

#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/pcap_writer.h"
#include "common/result.h"
#include "common/runtime/sim_runner.h"
#include "nic-emu/sim_host.h"
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
    BitRate rate = 0;
    Time delay = 0;
  };
  std::vector<SwitchConfig> switches;
  std::vector<SimHostConfig> hosts;
  std::vector<Link> links;
};

/// Builds the plan. Errors: a switch graph that leaves some ToR unreachable.
Result<FabricPlan> PlanFabric(const Scenario& s);

/// Shortest-path ECMP routes (what BGP with multipath converges to) from every switch to every
/// ToR subnet and every loopback, over the switch-to-switch links of `plan` whose entry in
/// `link_down` (indexed like plan.links; missing = up) is false; by switch index. A destination
/// a switch cannot reach is an error with `all_reachable`, else it gets no route.
Result<std::vector<std::vector<RouteConfig>>> ShortestPathRoutes(const Topology& t,
                                                                 const FabricPlan& plan,
                                                                 const std::vector<bool>& link_down,
                                                                 bool all_reachable);

/// The scenario's RDMA traffic (perftest runs and flow workloads) on a set of hosts' NICs; used
/// by both runners. `hosts[i]` is null for hosts without an emulated NIC (Linux namespaces live).
class RdmaTraffic {
 public:
  static Result<std::unique_ptr<RdmaTraffic>> Build(const Scenario& s, const FabricPlan& plan,
                                                    const std::vector<SimHost*>& hosts);
  bool empty() const { return perftests_.empty() && !workload_ && !pingmesh_; }
  bool done() const;
  nlohmann::json PerftestResults() const;
  /// Workload summary (null when there is none); `from` excludes flows starting before it.
  nlohmann::json WorkloadSummary() const;
  /// Pingmesh aggregates at `now` (null when the scenario has none).
  nlohmann::json PingmeshSummary(Time now) const { return pingmesh_ ? pingmesh_->Result(now) : nlohmann::json(); }
  /// Per-flow FCT lines in the HPCC/ConWeave simulators' `*_out_fct.txt` layout:
  /// "src dst sport dport size start_ns fct_ns standalone_fct_ns" (host indices as node ids).
  Status WriteFct(const std::string& path) const;
  const FlowWorkload* workload() const { return workload_.get(); }
  const Perftest& perftest(size_t i) const { return *perftests_[i]; }
  size_t num_perftests() const { return perftests_.size(); }
  std::vector<std::string> Text() const;

 private:
  std::vector<std::unique_ptr<Perftest>> perftests_;
  std::unique_ptr<FlowWorkload> workload_;
  std::unique_ptr<Pingmesh> pingmesh_;
  Time measure_from_ = 0;
};

/// Empty-fabric round trip between two hosts of the plan: propagation both ways plus the
/// store-and-forward time of one `mtu` data packet per switch hop (the first link's is in the
/// flow's byte term) and of the ACK on every link.
Time BaseRtt(const FabricPlan& plan, const Topology& topo, int src, int dst, uint32_t mtu);

/// Nearest-rank percentile (p in (0, 1]) of `v` (sorted in place). 0 for an empty vector.
Time Percentile(std::vector<Time>& v, double p);

/// All nodes of a scenario on one SimRunner.
struct FabricView;
class FaultInjector;
class DeadlockDetector;

class SimFabric {
 public:
  static Result<std::unique_ptr<SimFabric>> Create(const Scenario& s, rte_mempool* pool);

  SimRunner& runner() { return *runner_; }
  const Scenario& scenario() const { return scenario_; }
  size_t num_switches() const { return switches_.size(); }
  SwitchNode& sw(size_t i) { return *switches_[i]; }
  SwitchNode* sw(const std::string& name);
  size_t num_hosts() const { return hosts_.size(); }
  SimHost& host(size_t i) { return *hosts_[i]; }
  /// Notes about substitutions (e.g. iperf3 -> built-in UDP bulk flows), for the run's output.
  const std::vector<std::string>& notes() const { return notes_; }
  /// Flow id -> (from host, to host, traffic kind) for reports.
  struct FlowInfo {
    int from, to;
    TrafficItem::Kind kind;
  };
  const std::vector<FlowInfo>& flow_info() const { return flow_info_; }
  /// Opens the scenario's outputs in `dir`: one pcap per captured port ("<switch>_p<N>.pcap",
  /// both directions) and timeseries.csv when output.sample_interval > 0.
  Status OpenOutputs(const std::string& dir);
  /// Runs to virtual time `t`, sampling the time series on the way.
  void RunUntil(Time t);
  /// Runs to the scenario's duration, then lets frames in flight drain (sources stop at the
  /// duration) for at most `drain` more virtual time.
  void Run(Time drain = 10 * kMs) {
    RunUntil(scenario_.duration);
    RunUntil(scenario_.duration + drain);
  }
  /// Runs the nodes on up to `threads` threads (SimRunner partitions; call once, before the
  /// first run, after OpenOutputs): each ToR (a switch with hosts) with its hosts in one
  /// partition, the ToRs in contiguous blocks, the other switches spread evenly; at most one
  /// thread per ToR and per CPU in the process's affinity mask. The fault timeline and the
  /// deadlock detector run between windows (SimRunner::kObserver). Results are identical for
  /// every thread count (packet captures included: frames are written at the end of each
  /// window in arrival order). Returns the number of threads used; `note` says why when that is
  /// fewer than asked (one ToR; fewer ToRs or CPUs; a zero-delay link between blocks), else is
  /// empty.
  /// `threads` 0 means one per CPU and ToR (no note for those caps).
  /// Errors: threads outside 0..64, a second call.
  Result<int> SetThreads(int threads, std::string* note);
  /// The run's results (deterministic: no wall-clock values).
  nlohmann::json Summary() const;

 private:
  SimFabric() = default;
  Scenario scenario_;
  std::unique_ptr<SimRunner> runner_;
  std::vector<std::unique_ptr<SwitchNode>> switches_;
  std::vector<std::unique_ptr<SimHost>> hosts_;
  std::vector<FlowInfo> flow_info_;
  std::vector<std::string> notes_;
  std::unique_ptr<RdmaTraffic> rdma_;
 public:
  RdmaTraffic* rdma() { return rdma_.get(); }
 private:
  std::vector<uint32_t> switch_node_;  // runner index of each switch
  std::vector<uint32_t> host_node_;    // runner index of each host
  FabricPlan plan_;
  std::unique_ptr<FabricView> view_;
  std::unique_ptr<FaultInjector> injector_;
  std::unique_ptr<DeadlockDetector> detector_;
  std::vector<std::string> fault_log_;
 public:
  /// Deadlocks found so far: a cycle of paused, non-empty lossless queues whose pauses come from
  /// XOFF PGs of the next switch in the cycle, persisting for at least 1 ms.
  size_t deadlocks() const;
  Time deadlock_formed_at() const;
  const std::vector<std::string>& fault_log() const { return fault_log_; }
  void Log(Time t, const std::string& what);
  SimHost* host(const std::string& name);
  ~SimFabric();
 private:
  std::vector<std::unique_ptr<PcapWriter>> pcaps_;
  std::map<std::pair<uint32_t, uint16_t>, size_t> capture_;  // arrival (node, port) -> pcap
  // On several threads: frames captured in the current window, by partition (SetThreads).
  struct CapturedFrame {
    Time t;
    uint32_t node;
    uint16_t port;
    size_t pcap;
    uint32_t len;
    std::vector<uint8_t> bytes;
  };
  std::vector<std::vector<CapturedFrame>> capture_parts_;
  void FlushCaptures();
  std::unique_ptr<std::ofstream> timeseries_;
  Time next_sample_ = 0;
  void Sample(Time t);
};

/// One UDP/probe flow of the summary's "flows" array (results.md): packets sent by `src` and
/// received by `dst` for flow `id`, loss, and for received flows goodput between the first and
/// last arrival, first/last arrival times (us) and one-way latency. Both runners use it.
nlohmann::json UdpFlowSummary(uint32_t id, const char* kind, const std::string& from, const std::string& to,
                              const SimHost& src, const SimHost& dst);

}  // namespace rocefab

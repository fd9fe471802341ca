#pragma once
/// @file fabric.h
/// One fabric builder for both runners. Fabric::Build turns a scenario into nodes on any Runner
/// (common/runtime/runner.h): the switches and emulated hosts of the plan (fabric/plan.h), their
/// links in plan order, the built-in traffic (pings and UDP flows with one 5-tuple rule, all
/// stopping at the scenario's duration), the RDMA traffic (fabric/rdma_traffic.h) and the
/// observers (fault timeline, deadlock detector polling on a fixed 100 us grid, time-series
/// sampler). It also owns the outputs that do not depend on the runner: summary.json's shared
/// keys (Summary()), pcap captures through the runner's arrival tap, timeseries.csv.
///
/// What differs between the runners stays in them (run/sim_fabric.h, run/live_run.cc): the
/// clock, the wires (events vs delay lines and ethdevs), and in live runs the namespaces and
/// their tools. A host that is not a node (a Linux namespace host in a live run) is bound to its
/// switch port by FabricOptions::attach_host instead of a link.

#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/runtime/ranks.h"
#include "common/runtime/runner.h"
#include "common/wire/capture_file.h"
#include "fabric/plan.h"
#include "fabric/rdma_traffic.h"
#include "nic-emu/emulated_host.h"
#include "switch/switch_node.h"
#include "topo/scenario.h"

namespace rocefab {

/// After a scenario's duration both runners run this much longer (the emulated hosts have
/// stopped sending) so frames in flight drain: `rocefab sim` to duration + kDrain exactly, a
/// live fabric of in-process nodes too.
inline constexpr Time kDrain = 10 * kMs;

struct FabricView;
class FaultInjector;
class DeadlockDetector;
class TimeSeriesSampler;
class DcqcnSampler;
class DoneWatcher;

struct FabricOptions {
  /// "sim" or "live": the summary's `runner` and the prefix of notes.
  std::string runner = "sim";
  /// Linux namespace hosts and external hosts become emulated hosts (ICMP echo, UDP, probes): the
  /// sim, which has no kernel or device in virtual time. False: they are not nodes and
  /// attach_host binds their port.
  bool linux_hosts_as_nodes = true;
  /// NICs leave the ICRC to be computed where a frame is captured (fabric captures finalize it)
  /// or leaves the process (the live runner finalizes frames out of an ethdev port): valid
  /// where no node changes ICRC-covered bytes (BTH resv7 aside, see FinalizeIcrc) and nothing
  /// else reads them. Both runners set it.
  bool defer_icrc = false;
  /// Route table layout of the switches (route_table.h): the sim uses the compact tree so large
  /// fabrics fit; live runs the DIR-24-8 table.
  FibLayout fib = FibLayout::kDir24_8;
  /// Binds the switch end of the link of a host that is not a node: (host index, switch node
  /// index in the runner, switch port, link rate).
  std::function<Status(int host, uint32_t sw_node, uint16_t sw_port, BitRate rate)> attach_host;
  /// One switch per process (`rocefab live --node`): only this switch and the hosts behind it
  /// become nodes of the runner (empty: the whole fabric). The other switches and hosts are
  /// still built, never started, so that every process derives the same QPNs, PSNs, flows and
  /// pings from the scenario; Summary() reports the local ones only. A link to a switch of
  /// another process is bound by attach_remote. No deadlock detector (it needs every switch's
  /// queues); faults are an error (one timeline acts on the whole fabric).
  std::string only_switch;
  /// Binds the local end of plan link `link` (index into FabricPlan::links) whose other end is a
  /// switch of another process: (link, switch node index in the runner, switch port, link rate).
  std::function<Status(size_t link, uint32_t sw_node, uint16_t sw_port, BitRate rate)>
      attach_remote;
  /// Add a DoneWatcher observer (every 1 ms) so that traffic_done() may be called from a thread
  /// that is not the runner's (live).
  bool publish_done = false;
};

class Fabric {
 public:
  /// Builds every node and link on `runner` (not owned; outlives the fabric's use of it).
  /// Errors: the plan's (PlanFabric), traffic that needs an emulated NIC on a namespace host,
  /// a fault that names a namespace host where it needs an emulated NIC, attach_host's and
  /// attach_remote's, an only_switch that names no switch.
  static Result<std::unique_ptr<Fabric>> Build(const Scenario& s, Runner* runner,
                                               FabricOptions opt);
  ~Fabric();
  Fabric(const Fabric&) = delete;
  Fabric& operator=(const Fabric&) = delete;

  const Scenario& scenario() const { return scenario_; }
  const FabricPlan& plan() const { return plan_; }
  const FabricOptions& options() const { return opt_; }
  Runner& runner() { return *runner_; }
  size_t num_switches() const { return switches_.size(); }
  SwitchNode& sw(size_t i) { return *switches_[i]; }
  const SwitchNode& sw(size_t i) const { return *switches_[i]; }
  SwitchNode* sw(const std::string& name);
  size_t num_hosts() const { return hosts_.size(); }
  /// Host `i` of the topology; null for a host that is not a node (namespace host, live).
  EmulatedHost* host(size_t i) { return hosts_[i].get(); }
  EmulatedHost* host(const std::string& name);
  /// A distributed sim run (SimFabric::SetRanks): `owned(node)` says which runner nodes run in
  /// this process. Summary() then reports those only (MergeRankSummaries in run/sim_ranks.h
  /// joins the ranks'), the fault timeline acts only on them, and the deadlock detector shares
  /// its view of the switches through `ranks` (collective: every rank runs it at the same
  /// times). Call before the run.
  void SetOwnership(std::function<bool(uint32_t node)> owned, Ranks* ranks);
  /// Whether switch i / host i runs in this process (FabricOptions::only_switch, SetOwnership).
  bool local_switch(size_t i) const;
  bool local_host(size_t i) const;
  /// Runner node index of switch i / host i (UINT32_MAX: not a node of this runner).
  uint32_t switch_node(size_t i) const { return switch_node_[i]; }
  uint32_t host_node(size_t i) const { return host_node_[i]; }
  /// Runner node indices of the port-less observers (after every switch and host).
  const std::vector<uint32_t>& observer_nodes() const { return observer_nodes_; }
  /// Substitutions the builder made (e.g. iperf3 -> built-in UDP bulk flows) and faults that
  /// come after the duration, for the output (both runners print them under the header).
  const std::vector<std::string>& notes() const { return notes_; }
  /// Built-in UDP flows (both runners): flow id = index.
  struct FlowInfo {
    int from, to;
    TrafficItem::Kind kind;
  };
  const std::vector<FlowInfo>& flow_info() const { return flow_info_; }
  RdmaTraffic* rdma() { return rdma_.get(); }
  /// Whether every RDMA test and workload of the emulated hosts is done: from any thread with
  /// FabricOptions::publish_done (as of the watcher's last look, at most 1 ms old), else only
  /// from the runner's thread.
  bool traffic_done() const;
  const RdmaTraffic* rdma() const { return rdma_.get(); }

  /// How the fabric splits over `parts` threads, the same for both runners: the ToRs dealt out
  /// in order (k * parts / tors), each with its hosts; then tier by tier (leaves, then spines),
  /// each switch where most of its links to the tier below go, at most a partition's share of
  /// its tier each (a podset's leaves go with its ToRs; a 2-tier Clos's spines are dealt out
  /// in turn); the observers `observer` (they act on the whole fabric). Results never depend on
  /// the split; links kept inside a partition cost no hand-over at window ends. At most one
  /// partition per ToR: *used gets the number of partitions the plan has (1: don't partition).
  /// Nodes are runner node indices; `num_nodes` is the runner's node count.
  std::vector<uint32_t> PlanPartitions(int parts, uint32_t observer, size_t num_nodes,
                                       int* used) const;
  /// Switches with a host link.
  size_t num_tors() const;

  /// Deadlocks found so far (observers.h).
  size_t deadlocks() const;
  Time deadlock_formed_at() const;
  /// The fault timeline's and detector's log ("<t> us  what"), written by the node thread.
  const std::vector<std::string>& fault_log() const { return fault_log_; }
  void Log(Time t, const std::string& what);

  /// Opens the scenario's outputs in `dir` (existing): the captured ports (both directions of
  /// each port's link, timestamps the runner's time, through the runner's arrival tap) in
  /// capture.pcapng (an interface per port, its direction per frame) or with
  /// output.capture_format "pcap" one "<switch>_p<N>.pcap" per port, and timeseries.csv when
  /// output.sample_interval > 0 (a sampler observer node; with `buffer_timeseries` its lines are
  /// kept in memory until CloseOutputs, so a live poll thread does no file I/O). Call once, before
  /// the run starts. Errors: an unknown capture switch or port, a port captured twice, files that
  /// cannot be written.
  Status OpenOutputs(const std::string& dir, bool buffer_timeseries);
  /// Writes what was buffered and closes the files. Errors name the file.
  Status CloseOutputs();
  /// Sim partitions: captured frames are copied into the receiving partition's list (the tap
  /// runs on that partition's thread) and FlushCaptures writes them in (time, node, port) order.
  void CaptureByPartition(std::vector<uint32_t> part_of_node, size_t parts);
  void FlushCaptures();
  bool capturing() const { return !capture_.empty(); }

  /// The summary keys both runners share (docs/results.md), at the runner's now(); keys that
  /// only one runner fills are present with null values, for the driver to fill.
  nlohmann::json Summary() const;

  /// Keys of summary.json that only one runner fills (null in the other), by runner.
  static const std::vector<std::string>& RunnerSpecificKeys(const std::string& runner);

 private:
  Fabric() = default;
  Status BuildNodes();
  Status BindLinks();
  nlohmann::json FlowsJson() const;
  nlohmann::json ConservationJson() const;
  Status PlanBuiltinTraffic();
  Status AddObservers();
  // PlanPartitions' upper tiers: *part_of_switch holds the ToRs' partitions on entry.
  void PlaceUpperTiers(int parts, const std::vector<int>& tors,
                       const std::vector<std::vector<int>>& peers,
                       std::vector<uint32_t>* part_of_switch) const;
  // A note for each fault at or after the duration (it meets only the drain, or never happens).
  void NoteLateFaults();

  Scenario scenario_;
  FabricOptions opt_;
  Runner* runner_ = nullptr;
  FabricPlan plan_;
  std::unique_ptr<NodeEnv> remote_env_;  // of the nodes of other processes (only_switch)
  std::vector<std::unique_ptr<SwitchNode>> switches_;
  std::vector<std::unique_ptr<EmulatedHost>> hosts_;  // null: not a node
  std::vector<uint32_t> switch_node_, host_node_, observer_nodes_;
  std::vector<FlowInfo> flow_info_;
  std::vector<std::string> notes_;
  /// (host index, ping id) of the ICMP probes standing in for tcp_pingmesh on emulated hosts.
  std::set<std::pair<size_t, uint16_t>> tcp_pingmesh_pings_;
  std::unique_ptr<RdmaTraffic> rdma_;
  std::unique_ptr<FabricView> view_;
  std::function<bool(uint32_t)> owned_;  // SetOwnership; null: every node
  std::unique_ptr<FaultInjector> injector_;
  std::unique_ptr<DeadlockDetector> detector_;
  std::unique_ptr<TimeSeriesSampler> sampler_;
  std::unique_ptr<DcqcnSampler> dcqcn_sampler_;
  std::unique_ptr<DoneWatcher> done_watcher_;
  std::string dcqcn_path_;
  std::unique_ptr<std::ostream> dcqcn_out_;
  std::vector<std::string> fault_log_;

  Status OpenCaptures(const std::string& dir);
  /// Where frames arriving at one (node, port) are written.
  struct CaptureTarget {
    uint32_t file;       // index into capture_files_
    uint32_t interface;  // the file's interface id
    CaptureDirection dir;
  };
  std::vector<std::unique_ptr<CaptureFile>> capture_files_;
  std::map<std::pair<uint32_t, uint16_t>, CaptureTarget> capture_;  // arrival (node, port)
  // Departures out of a captured port whose peer is not a node (Runner::SetDepartTap).
  std::map<std::pair<uint32_t, uint16_t>, CaptureTarget> capture_depart_;
  void WriteCaptured(const CaptureTarget& to, Time t, const uint8_t* data, uint32_t caplen,
                     uint32_t len) {
    capture_files_[to.file]->Write(t, to.interface, to.dir, data, caplen, len);
  }
  struct CapturedFrame {
    Time t;
    uint32_t node;
    uint16_t port;
    CaptureTarget to;
    uint32_t len;
    std::vector<uint8_t> bytes;
  };
  std::vector<std::vector<CapturedFrame>> capture_parts_;
  std::string timeseries_path_;
  std::unique_ptr<std::ostream> timeseries_;
};

/// The capture files Fabric::OpenOutputs writes for `o`, each preceded by a comma ("" when
/// nothing is captured): ",capture.pcapng" or ",tor0_p2.pcap,tor1_p0.pcap".
std::string CaptureFileList(const OutputOptions& o);

/// The summary's `conservation` block (docs/results.md): every local node's FrameBalance summed,
/// with the nodes whose balance is not 0 listed under `unbalanced`.
nlohmann::json ConservationBlock(const std::vector<std::pair<std::string, FrameBalance>>& nodes);
/// The run's error when `summary` shows a frame lost or duplicated without a counter (a node of
/// its `conservation.unbalanced`), naming the node and its accounting; empty when balanced.
std::string ConservationError(const nlohmann::json& summary);

/// One UDP/probe flow of the summary's "flows" array (results.md): packets sent by `src` and
/// received by `dst` for flow `id`, loss, and for received flows goodput between the first and
/// last arrival, first/last arrival times (us) and one-way latency. `dst` null (a namespace
/// host): `received` and `lost` are null.
nlohmann::json UdpFlowSummary(uint32_t id, const char* kind, const std::string& from,
                              const std::string& to, const EmulatedHost& src,
                              const EmulatedHost* dst);

}  // namespace rocefab

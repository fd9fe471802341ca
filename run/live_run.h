#pragma once
/// @file live_run.h
/// `rocefab live`: run a scenario in real time. Linux hosts become network namespaces joined to
/// the fabric by veth pairs (switch side: a DPDK net_af_packet or net_af_xdp port; host side:
/// TX checksum offload off, since af_packet forwards partial checksums); links between switches
/// are in-process delay lines with exact serialization and propagation delay; the nodes run on
/// one DPDK poll thread or, with lcores > 1, on one per partition (as the sim partitions), or,
/// with `processes`, one DPDK process per switch joined by net_memif ports (`node`). The scenario's
/// traffic runs as ping and iperf3 inside the namespaces. Everything the run created (namespaces,
/// veths, hugepage files) is removed on normal exit, on error, on Ctrl-C and on SIGTERM.
///
/// The nodes come from the same builder as the sim (fabric/fabric.h); the run measures its own
/// lateness (common/runtime/lateness.h) and ends with the verdict line "timing: faithful within
/// X us" or "timing: NOT FAITHFUL ...".
///
/// Needs root (namespaces, veth, raw sockets).

#include <string>

#include "common/result.h"
#include "topo/scenario.h"

namespace rocefab {

struct LiveRunOptions {
  std::string out_dir;
  bool quiet = false;
  /// Keep the fabric up after the traffic until this long has passed (0 = stop when done;
  /// kTimeNever = until `rocefab destroy RUN`, SIGTERM or Ctrl-C).
  Time hold = 0;
  /// Exit with an error (after writing the results) when the run was not faithful.
  bool strict_timing = false;
  /// Poll threads: >= 1, 0 = auto (LiveOptions::lcores), -1 = the scenario's live.lcores.
  int lcores = -1;
  /// One switch per process (`--node SW`): this process runs only switch SW and the hosts behind
  /// it (their namespaces, emulated NICs and ports); each link to another switch is a DPDK
  /// net_memif port (role server at the end whose switch comes first in the topology, abstract
  /// socket "/rocefab/<run id>/link<N>", N the link's index in the fabric plan), so processes of
  /// the same scenario and run id started this way join into one fabric. It runs until SIGTERM
  /// or Ctrl-C (or `rocefab destroy`) and runs none of the namespace tools (ping, iperf3) itself.
  /// Not with faults, workloads or RDMA Pingmesh (they need the whole fabric in one process);
  /// deadlock detection and time series are off. Empty: the whole fabric.
  std::string node;
  /// The run id to use (`--run-id`, "rf" + 4 hex digits; empty: from this process's pid): the
  /// processes of one fabric share it.
  std::string run_id;
  /// Start the fabric as one process per switch (`--processes`): this process creates the
  /// namespaces, starts `rocefab live SCENARIO --node SW` for every switch (its own DPDK
  /// --file-prefix, results in OUT/nodes/SW), starts them together once every memif link is up,
  /// runs the scenario's namespace tools, stops every switch process at the end, on error, on
  /// Ctrl-C and SIGTERM, and when any of them dies, and merges their results (switch_processes.h).
  bool processes = false;
  /// For `processes`: the scenario file and the --set overrides each switch process is given.
  std::string scenario_path;
  std::vector<std::string> sets;
  /// Internal (`--parent-run`): this `--node` process belongs to a `--processes` run, which
  /// created the namespaces: attach to their veths, write OUT/ready once every memif link is up,
  /// wait for SIGUSR1 before time 0, exit when the parent dies.
  bool child_of_processes = false;
  /// Serve the switches' counters for Prometheus on http://127.0.0.1:PORT/metrics while the
  /// fabric is up (`--metrics-port`, run/prometheus.h): -1 off, 0 any free port (printed).
  int metrics_port = -1;
};

/// The poll threads a live run of a fabric with `tors` ToRs uses when `lcores` are asked for
/// (0 = auto: one per ToR, at most CPUs - 1, at least 1; else at most one per ToR), with a note
/// when fewer than asked are used.
int LiveLcores(int lcores, size_t tors, int cpus, std::string* note);

/// The lateness tolerance of a live run of `s` (ps): live.timing_tolerance when set, else the
/// serialization time of the largest frame (a RoCE frame of nic.mtu payload with its headers,
/// at least a 1514-byte Ethernet frame) on the scenario's fastest link.
Time LiveTimingTolerance(const Scenario& s);

Result<nlohmann::json> RunLive(const Scenario& scenario, const LiveRunOptions& opt);

/// What runs killed with SIGKILL left behind, removed by CleanupStaleLive: namespaces
/// ("rf<id>-*"), root-namespace veth ends ("rf<id>s<N>") and EAL runtime folders
/// (/var/run/dpdk/rf<id>[-<switch>]) of runs whose process is gone.
struct StaleLiveRemoved {
  int namespaces = 0, veths = 0, eal_folders = 0;
  int log_folders = 0;  ///< /tmp/rfXXXX-logs of runs started without --out
};
StaleLiveRemoved CleanupStaleLive();

}  // namespace rocefab

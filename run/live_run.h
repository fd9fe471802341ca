#pragma once
/// @file live_run.h
/// `rocefab live`: run a scenario in real time. Linux hosts become network namespaces joined to
/// the fabric by veth pairs (switch side: a DPDK net_af_packet or net_af_xdp port; host side:
/// TX checksum offload off, since af_packet forwards partial checksums); links between switches
/// are in-process delay lines with exact serialization and propagation delay; all switches run on
/// one DPDK worker lcore with an idle-backoff poll loop. The scenario's traffic runs as ping and
/// iperf3 inside the namespaces. Everything the run created (namespaces, veths, hugepage files) is
/// removed on normal exit, on error, on Ctrl-C and on SIGTERM.
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

/// Deletes namespaces left by runs that were killed with SIGKILL (names "rf<id>-*"). Returns how
/// many were removed.
int CleanupStaleLive();

}  // namespace rocefab

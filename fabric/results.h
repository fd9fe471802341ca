#pragma once
/// @file results.h
/// The results folder both runners write (docs/results.md): summary.json, flows.csv,
/// pings.csv, fct.txt (with an RDMA workload), and the end-of-run console table.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/time.h"
#include "fabric/rdma_traffic.h"

namespace rocefab {

/// One entry of the summary's `pings` (docs/results.md), from either runner: `sent` probes,
/// the round trips `rtts` (ps, any order) of those answered; `rtt_us[]` with at most 10,000.
nlohmann::json PingJson(const std::string& from, const std::string& to, int64_t sent,
                        std::vector<Time> rtts);

/// Writes `j` as pretty JSON with a trailing newline. Errors name the path.
Status WriteJsonFile(const std::string& path, const nlohmann::json& j);

/// flows.csv and pings.csv from a summary's `flows` and `pings`. Errors name the file.
Status WriteCsvs(const std::string& dir, const nlohmann::json& summary);

/// summary.json, flows.csv, pings.csv and, when `rdma` has a flow workload, fct.txt, into `dir`
/// (existing). Errors name the file.
Status WriteResultFiles(const std::string& dir, const nlohmann::json& summary,
                        const RdmaTraffic* rdma);

/// The time-ordered account of a run: fault-timeline events, first pause per switch, watchdog
/// storms, NIC watchdogs.
void PrintAccount(const nlohmann::json& summary);

/// Prints the RDMA tests' perftest-style lines, the workload summary and the Pingmesh table.
void PrintRdmaResults(const nlohmann::json& summary);

/// summary.json `rdma_vs_tcp` (Guo et al. SIGCOMM 2016 §5, the Pingmesh figure: RDMA p99 90 us
/// vs TCP 700 us on one fabric): probes, p50/p99/p99.9 RTT (us, nearest rank) of the RDMA
/// Pingmesh RTTs `rdma` and the TCP-side RTTs `tcp` (ps), `tcp_kind` saying what measured them,
/// and TCP / RDMA per percentile. Null when either side has no samples. Pure.
nlohmann::json RdmaVsTcp(std::vector<Time> rdma, std::vector<Time> tcp,
                         const std::string& tcp_kind);
/// Adds `rdma_verbs` to a RdmaVsTcp object `cmp` (unchanged if null): the first latency test of
/// the summary's `rdma` results (ib_send_lat / ib_write_lat, or the built-in app standing in for
/// them), as round trips: `program`, `from`, `to`, `samples`, `rtt_p50/p99/p999_us` = 2 x
/// perftest's one-way typical / 99 % / 99.9 % (perftest halves its ping-pong round trip), closed
/// loop; and `tcp_over_rdma_verbs` {rtt_p99_us}. A real verbs program between namespace hosts
/// shares the TCP probes' host path (veth), which the fabric's own NICs do not.
void AddVerbsLatency(nlohmann::json* cmp, const nlohmann::json& rdma);

/// summary.json `ecmp_model` over the bandwidth tests of a summary's `rdma` results (every QP
/// with `udp_sports` a long flow, in its data direction): measured total, the no-collision
/// bound, max-min fair on the ECMP paths and over 1,000 draws of random paths (the
/// balls-into-bins expectation), flows per egress port (fabric/paths.h). Null with fewer than
/// two flows; {"error": ...} if a flow cannot be routed.
nlohmann::json EcmpModelJson(const Scenario& scenario, const FabricPlan& plan,
                             const nlohmann::json& rdma);
/// Adds `ecmp_paths` to a summary `rdma` entry `r`: per QP, the source host then the
/// "switch/pN" egress ports its data frames take under ECMP, traced from the plan with the QP's
/// UDP source port (fabric/paths.h); a flow that cannot be routed gets the error instead.
void AddEcmpPaths(const Scenario& scenario, const FabricPlan& plan, nlohmann::json* r);

/// ConWeave's end-of-run account from a summary's `switches[].conweave` and
/// `hosts[].rnic.out_of_order` (empty when no switch ran ConWeave): one line with the reroutes,
/// the reorder-queue releases by TAIL and by deadline, and the packets out of order at the NICs;
/// and a warning when more than kConweaveTimeoutWarnPct % of the releases came by deadline (the
/// reference ns-3 run of alistorage-40 has 0.8 %; a collapse 5-20 %), naming the likely cause.
/// Pure.
inline constexpr double kConweaveTimeoutWarnPct = 2.0;
std::vector<std::string> ConweaveAccount(const nlohmann::json& summary);

/// Prints the end-of-run table (pings, flows, iperf3, per-switch counters) from a summary.
void PrintSummaryTable(const nlohmann::json& summary);

}  // namespace rocefab

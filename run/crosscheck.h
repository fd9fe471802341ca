#pragma once
/// @file crosscheck.h
/// `rocefab crosscheck SCENARIO`: the same scenario in both runners, compared figure by figure.
/// The live run goes first; each sim stand-in of a real program starts where the program did
/// (AlignedStarts).
///
/// CompareSummaries is pure: it takes the two summary.json objects and returns one row per
/// figure that matters, each with its tolerance and verdict (docs/crosscheck.md justifies them):
///  - goodput of each built-in UDP flow and each RDMA bandwidth test: within 5 %;
///  - RDMA tests' completed iterations: within 1 % (a runner that falls behind finishes fewer);
///  - latency percentiles (RDMA latency tests' median/p99/p99.9, Pingmesh per ToR pair and
///    fabric-wide, emulated hosts' ICMP pings): within max(10 %, the live run's lateness
///    tolerance per round trip);
///  - PFC XOFF frames sent per switch: within max(20 %, 10 frames);
///  - drops per switch and reason: within max(10 %, 10 frames); lossless drops must agree on
///    zero;
///  - FCT slowdown (avg, p99) per size bucket with >= 20 flows: within 10 %;
///  - each spine's share of the packets the spines forwarded (ECMP path spread): within 5
///    percentage points.
/// The run agrees when every row agrees and the live run reported itself faithful.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/result.h"
#include "topo/scenario.h"

namespace rocefab {

struct CrosscheckRow {
  std::string figure;  ///< e.g. "rdma write_bw h0->h2 Gb/s"
  double sim = 0, live = 0;
  std::string tolerance;  ///< e.g. "5 %", "max(10 %, 2.4 us)"
  bool agree = false;
};

/// Rows for every figure both summaries carry. `spines`: names of the spine switches (for the
/// path spread); `live_tolerance_us`: the live run's timing tolerance.
std::vector<CrosscheckRow> CompareSummaries(const nlohmann::json& sim, const nlohmann::json& live,
                                            const std::vector<std::string>& spines,
                                            double live_tolerance_us);

/// The `--set traffic.N.start=Tns` overrides that start each sim stand-in of a real perftest
/// program (rdma "app": "perftest") when the program's first data packet left in the live run
/// (its "first_tx_at_us"): a real program starts once its set-up is done, about 1 s into a run
/// on a 2-vCPU machine, and a fault at a fixed time meets it in a different phase otherwise.
/// Empty when the live summary has no such program.
std::vector<std::string> AlignedStarts(const Scenario& s, const nlohmann::json& live);

struct CrosscheckOptions {
  std::string out_dir;  ///< keeps DIR/sim, DIR/live and DIR/crosscheck.{txt,json}; empty: a temp
  bool quiet = false;
  std::string self;               ///< path of the rocefab binary to run both runners with
  std::string live_lcores;        ///< passed to `rocefab live --lcores` when not empty
  bool live_processes = false;    ///< the live run as one process per switch (live --processes)
  std::vector<std::string> sets;  ///< scenario overrides, passed to both runners as --set
};

/// `rocefab diff A B`: the figures CompareSummaries knows, of two results folders of one
/// scenario (two seeds, an edited key, before and after a change), with the ones that changed.
struct DiffRow {
  std::string figure;
  double a = 0, b = 0;
  double relative = 0;  ///< (b - a) / |a|; b itself when a is 0 (infinity-free)
};
/// Every figure both summaries carry, changed ones first by |relative| (largest first), then
/// the unchanged in their order; `changed` gets how many differ at all.
std::vector<DiffRow> DiffSummaries(const nlohmann::json& a, const nlohmann::json& b,
                                   size_t* changed);
/// The table `rocefab diff` prints: the changed rows, then one line with the counts.
std::string FormatDiff(const std::vector<DiffRow>& rows, size_t changed, const std::string& a_name,
                       const std::string& b_name);

/// Runs `rocefab sim` and `rocefab live` on the scenario file as child processes, prints the
/// table and returns the exit code: 0 all agree and live was faithful, 1 otherwise. Errors
/// (exit 2): not root (live needs it: the message says so), a runner that failed (its log is
/// named), a folder that cannot be written.
Result<int> RunCrosscheck(const std::string& scenario_path, const CrosscheckOptions& opt);

}  // namespace rocefab

#pragma once
/// @file switch_processes.h
/// The switch processes of `rocefab live --processes` (run/live_run.h): one `rocefab live
/// SCENARIO --node SW --run-id RUN --parent-run` per switch, each its own DPDK process (EAL
/// --file-prefix RUN-SW, no hugepages), joined by net_memif ports, its log and results in
/// OUT/nodes/SW/{live.log,summary.json}. Start-up is in two steps so that every process has the
/// same time 0: each writes OUT/nodes/SW/ready once all its memif links are up, and waits for
/// SIGUSR1 (Go) to start its poll loop, with time 0 at the instant the parent wrote in
/// OUT/nodes/SW/go. The parent polls for the ready files and for processes
/// that exit early. Stopping is in two steps too: on SIGTERM each stops its loop, reads its
/// counters and writes OUT/nodes/SW/stopped, and once all have (a memif port's counters are
/// gone once its peer closes it) a second SIGUSR1 lets them close their ports and exit; Stop
/// (also the destructor) SIGKILLs what is left after its grace. A switch process whose parent
/// dies gets SIGTERM from the kernel (PR_SET_PDEATHSIG) and lets itself go after 10 s.

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "topo/scenario.h"

namespace rocefab {

class SwitchProcesses {
 public:
  struct Options {
    std::string exe;            ///< the rocefab binary (/proc/self/exe)
    std::string scenario_path;  ///< the scenario file and its --set overrides, as given
    std::vector<std::string> sets;
    std::string run_id;  ///< "rf" + 4 hex digits
    std::string dir;     ///< OUT/nodes: one folder per switch
    /// Each process serves its metrics on a free port (--metrics-port 0) and writes it in its
    /// ready file; MetricsPorts() reads them.
    bool metrics = false;
  };
  SwitchProcesses() = default;
  ~SwitchProcesses() { Stop(); }
  SwitchProcesses(const SwitchProcesses&) = delete;
  SwitchProcesses& operator=(const SwitchProcesses&) = delete;

  /// Starts one process per switch of `t`. Errors: a folder that cannot be made, a process that
  /// cannot be started (those already started are stopped by Stop).
  Status Start(const Topology& t, const Options& opt);
  /// Polls (5 ms) until every process has written its ready file, at most `limit` or until
  /// `stop`. Errors name the process that exited or did not come up, with its log's last lines.
  Status WaitReady(std::chrono::milliseconds limit, const std::atomic<bool>& stop);
  /// Time 0 of every switch process at instant `t0` of the steady clock (CLOCK_MONOTONIC, the
  /// same in every process): OUT/nodes/SW/go {"steady_ns"} then SIGUSR1 to each, which sets
  /// its runner's time 0 there (LiveRunner::StartAt). Errors: a go file that cannot be written.
  Status Go(std::chrono::steady_clock::time_point t0);
  /// The switch process that has exited since the last call, with how ("tor0 (exit 2): <log
  /// tail>"); empty while all run.
  std::string Exited();
  /// SIGTERM to every process still running, waits up to `grace` for each to write its results
  /// and exit, SIGKILL after that; reaps all and removes the EAL runtime folders of those that
  /// could not (/var/run/dpdk/RUN-SW). Idempotent.
  void Stop(std::chrono::milliseconds grace = std::chrono::seconds(20));
  /// Each switch process's summary.json (after Stop), in topology order. Errors name the
  /// process whose file is missing or unreadable.
  Result<std::vector<std::pair<std::string, nlohmann::json>>> Summaries() const;
  std::vector<pid_t> pids() const;
  /// After WaitReady, with Options::metrics: each switch process's metrics port, in topology
  /// order. Errors: a ready file without one, naming the process.
  Result<std::vector<std::pair<std::string, uint16_t>>> MetricsPorts() const;
  size_t size() const { return procs_.size(); }

 private:
  struct Proc {
    std::string name, dir, log;
    pid_t pid = -1;
    bool exited = false, reported = false;
    int status = 0;
  };
  static std::string Tail(const std::string& path, size_t lines);
  static std::string How(const Proc& p);
  std::vector<Proc> procs_;
  std::string run_id_;
};

/// One summary from the switch processes' summaries (pure; tests): keys by switch or host
/// (switches, hosts, host_ports, pause_spread, nic_watchdogs, links) merged, lists (pings, flows,
/// rdma, events; notes without repeats) joined in the given order, counters (lost_frames,
/// mbuf_alloc_failures, mbufs_in_use_after_run, poll_iterations, idle_sleeps, ethdev_tx_dropped)
/// summed, and `timing` the block of the least faithful process (not faithful first, then the
/// largest fraction of events off schedule, then the largest deviation), its verdict naming
/// that process, `faithful` only if every process was, with
/// timing.processes = [{node, faithful, verdict}] for all. The other keys come from the first.
/// A UDP flow between two processes (or ranks) is in both summaries' `flows`: its sender's entry
/// (received null) and its receiver's (receiver_side, sent null). JoinFlows gives one entry
/// per flow, sorted by id: the sender's with the receiver's counts and `lost` from both.
nlohmann::json JoinFlows(const nlohmann::json& flows);

/// The summaries' `conservation` blocks (docs/results.md) as one: counts and nodes summed, the
/// unbalanced nodes listed together in the given order.
nlohmann::json MergeConservation(const std::vector<const nlohmann::json*>& summaries);

nlohmann::json MergeSwitchSummaries(
    const std::vector<std::pair<std::string, nlohmann::json>>& parts);

}  // namespace rocefab

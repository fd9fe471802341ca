#include "run/sim_fabric.h"

#include <sched.h>

#include <algorithm>

namespace rocefab {

Result<std::unique_ptr<SimFabric>> SimFabric::Create(const Scenario& s, rte_mempool* pool) {
  std::unique_ptr<SimFabric> f(new SimFabric());
  f->runner_ = std::make_unique<SimRunner>(pool);
  FabricOptions opt;
  opt.runner = "sim";
  opt.linux_hosts_as_nodes = true;  // no kernel in virtual time
  // In virtual time no node changes ICRC-covered bytes, so the NICs leave the ICRC to be
  // computed where a frame is captured instead of on every frame: about 12 % of a run
  // (docs/experiments.md, speed section).
  opt.defer_icrc = true;
  opt.fib = FibLayout::kTree;  // KiB per switch instead of 32 MiB: large fabrics fit
  auto fab = Fabric::Build(s, f->runner_.get(), opt);
  if (!fab.ok()) return fab.status();
  f->fabric_ = std::move(fab).value();
  return f;
}

// The fabric's nodes reference the runner's environments: the fabric goes first.
SimFabric::~SimFabric() { fabric_.reset(); }

Status SimFabric::OpenOutputs(const std::string& dir) {
  if (runner_->num_partitions() > 1 || threads_set_) {
    return Status::Error("outputs: open them before SetThreads (the capture tap depends on it)");
  }
  return fabric_->OpenOutputs(dir, /*buffer_timeseries=*/false);
}

void SimFabric::RunUntil(Time t) { runner_->Run(t); }

nlohmann::json SimFabric::Summary() const {
  nlohmann::json j = fabric_->Summary();
  j["sim_time_ps"] = runner_->now();
  j["events_executed"] = runner_->events_executed();
  j["sim_events"] = {
      {"arrive", runner_->arrive_events()},      {"tx_free", runner_->tx_free_events()},
      {"timer", runner_->timer_events()},        {"max_pending", runner_->max_pending_events()},
      {"partitions", runner_->num_partitions()}, {"windows", runner_->windows()},
      {"lookahead_ps", runner_->lookahead()}};
  j["frames_delivered"] = runner_->frames_delivered();
  // Virtual time is the exact schedule: nothing is ever late.
  j["timing"] = {{"exact", true}, {"faithful", true}, {"verdict", "exact (virtual time)"}};
  return j;
}

Result<int> SimFabric::SetThreads(int threads, std::string* note) {
  if (threads < 0 || threads > 64) {
    return Result<int>::Error("threads: must be 1..64 or 0 (auto), got " + std::to_string(threads));
  }
  note->clear();
  const bool automatic = threads == 0;
  if (automatic) threads = 64;  // then capped at the ToRs and CPUs below, without a note
  if (runner_->num_partitions() > 1 || threads_set_)
    return Result<int>::Error("threads: already set");
  threads_set_ = true;
  if (threads == 1) return 1;
  const Fabric& fab = *fabric_;
  const size_t tors = fab.num_tors();
  int parts = threads;
  if (parts > static_cast<int>(tors)) {
    parts = std::max<int>(static_cast<int>(tors), 1);
    *note = std::to_string(threads) + " threads asked for, " + std::to_string(parts) +
            " used: at most one per ToR";
  }
  // More threads than CPUs would make every window wait for a descheduled thread.
  cpu_set_t cpus;
  if (sched_getaffinity(0, sizeof cpus, &cpus) == 0 && CPU_COUNT(&cpus) > 0 &&
      parts > CPU_COUNT(&cpus)) {
    parts = CPU_COUNT(&cpus);
    *note = std::to_string(threads) + " threads asked for, " + std::to_string(parts) +
            " used: at most one per CPU this process may run on";
  }
  if (automatic) note->clear();
  if (parts == 1) {
    if (tors <= 1) *note = "runs on one thread: the fabric has one ToR";
    return 1;
  }
  // The observers (fault timeline, deadlock detector, sampler) act on or read the whole fabric:
  // they run between windows, while every partition waits (SimRunner::kObserver).
  std::vector<uint32_t> part_of_node =
      fab.PlanPartitions(parts, SimRunner::kObserver, runner_->num_nodes(), &parts);
  Status st = runner_->SetPartitions(part_of_node);
  if (!st.ok()) {
    *note = "runs on one thread: " + st.message();
    return 1;
  }
  if (fabric_->capturing()) {
    fabric_->CaptureByPartition(std::move(part_of_node), static_cast<size_t>(parts));
    runner_->SetWindowEndHook([this] { fabric_->FlushCaptures(); });
  }
  return parts;
}

}  // namespace rocefab

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
  opt.fib = FibLayout::kPrefixHash;  // KiB per switch instead of 32 MiB: large fabrics fit
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
  j["sim_events"] = {{"arrive", runner_->arrive_events()},
                     {"tx_free", runner_->tx_free_events()},
                     {"timer", runner_->timer_events()},
                     {"max_pending", runner_->max_pending_events()},
                     {"partitions", runner_->num_partitions()},
                     {"windows", runner_->windows()},
                     {"lookahead_ps", runner_->lookahead()},
                     {"cross_partition_frames", runner_->cross_partition_frames()}};
  j["frames_delivered"] = runner_->frames_delivered();
  if (runner_->ranks() != nullptr) {
    j["sim_events"]["ranks"] = runner_->ranks()->size();
    j["sim_events"]["cross_rank_frames"] = runner_->cross_rank_frames();
  }
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

namespace rocefab {

uint64_t SimFabric::Fingerprint() const {
  uint64_t h = 1469598103934665603ull;  // FNV-1a, 64 bits
  auto mix = [&h](const void* p, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      h ^= static_cast<const uint8_t*>(p)[i];
      h *= 1099511628211ull;
    }
  };
  auto mix_value = [&mix](auto v) { mix(&v, sizeof v); };
  const Scenario& s = scenario();
  mix(s.name.data(), s.name.size());
  mix_value(s.seed);
  mix_value(s.duration);
  const FabricPlan& plan = fabric_->plan();
  for (const auto& sw : plan.switches) mix(sw.name.data(), sw.name.size());
  for (const auto& host : s.topology.hosts) mix(host.name.data(), host.name.size());
  for (const auto& l : plan.links) {
    for (const auto* e : {&l.a, &l.b}) {
      mix_value(e->is_host);
      mix_value(e->index);
      mix_value(e->port);
    }
    mix_value(l.rate.bps());
    mix_value(l.delay);
  }
  mix_value(runner_->num_nodes());
  if (fabric_->rdma() != nullptr && fabric_->rdma()->workload() != nullptr) {
    for (const auto& r : fabric_->rdma()->workload()->records()) {
      mix_value(r.flow.src);
      mix_value(r.flow.dst);
      mix_value(r.flow.size);
      mix_value(r.flow.start);
    }
  }
  return h;
}

Result<int> SimFabric::SetRanks(Ranks* ranks, int threads) {
  using R = Result<int>;
  if (runner_->num_partitions() > 1 || threads_set_) return R::Error("ranks: already set");
  if (threads < 1 || threads > 64) {
    return R::Error("threads: must be 1..64 per rank in a distributed run, got " +
                    std::to_string(threads));
  }
  threads_set_ = true;
  const Scenario& s = scenario();
  const std::string not_yet =
      " is not written by a distributed (MPI) run yet: run it on one "
      "process (--threads N)";
  if (!s.output.capture.empty()) return R::Error("output.capture: a packet capture" + not_yet);
  if (s.output.sample_interval > 0 && s.output.dcqcn_trace.empty())
    return R::Error("output.sample_interval: timeseries.csv" + not_yet +
                    ", or without it: --set output.sample_interval=0");
  if (!s.output.dcqcn_trace.empty()) {
    return R::Error("output.dcqcn_trace: dcqcn.csv" + not_yet +
                    ", or without it: --set output.dcqcn_trace=[] --set output.sample_interval=0");
  }
  for (size_t i = 0; i < s.traffic.size(); ++i) {
    const auto k = s.traffic[i].kind();
    if (k == TrafficItem::Kind::kPingmesh || k == TrafficItem::Kind::kTcpPingmesh) {
      return R::Error("traffic." + std::to_string(i) +
                      ": Pingmesh results are not gathered by a distributed (MPI) run yet: run "
                      "it on one process (--threads N)");
    }
  }
  const int n = ranks->size();
  int parts = 0;
  std::vector<uint32_t> part_of_node =
      fabric_->PlanPartitions(n * threads, SimRunner::kObserver, runner_->num_nodes(), &parts);
  if (parts < n) {
    return R::Error(std::to_string(n) + " ranks need at least " + std::to_string(n) +
                    " ToRs (one partition each); the fabric has " +
                    std::to_string(fabric_->num_tors()));
  }
  Status st = runner_->SetPartitions(part_of_node);
  if (!st.ok()) return R::Error(st.message());
  std::vector<uint32_t> rank_of_part(static_cast<size_t>(parts));
  int mine = 0;
  for (int p = 0; p < parts; ++p) {
    rank_of_part[p] = static_cast<uint32_t>(p * n / parts);
    mine += static_cast<int>(rank_of_part[p]) == ranks->rank();
  }
  st = runner_->SetRanks(ranks, std::move(rank_of_part));
  if (!st.ok()) return R::Error(st.message());
  SimRunner* r = runner_.get();
  fabric_->SetOwnership([r](uint32_t node) { return r->owned(node); }, ranks);
  return mine;
}

}  // namespace rocefab

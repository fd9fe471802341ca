#include "run/sim_run.h"

#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/eal.h"
#include "common/units.h"
#include "run/mpi_ranks.h"
#include "run/sim_fabric.h"
#include "run/sim_ranks.h"

namespace rocefab {
namespace {

// This process's resident memory in MiB (/proc/self/statm), 0 if unreadable.
double ResidentMiB() {
  std::ifstream statm("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  if (!(statm >> size >> resident)) return 0;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1 << 20);
}

// The sim's frame pool starts with this many frames (about 23 MiB at MTU 1024, 37 MiB with room
// for a 1514-byte frame) and grows by at least as many at a time.
constexpr unsigned kPoolChunk = 16384;

// The most frames the sim's pool may grow to when the scenario does not say (sim.mbufs 0):
// 4,194,303 (the scenario reader's limit), or fewer where three quarters of the memory
// available at the start (/proc/meminfo MemAvailable) hold fewer frames of `room` bytes.
unsigned DefaultPoolCap(uint16_t room) {
  constexpr unsigned kMax = 4194303;
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit) {
    if (key != "MemAvailable:") continue;
    // A frame: its data room, the mbuf header (128 B), PacketMeta and the mempool's own header.
    const uint64_t frames = kib * 1024 * 3 / 4 / (room + 256u);
    return static_cast<unsigned>(std::clamp<uint64_t>(frames, kPoolChunk, kMax));
  }
  return kMax;
}

// What the progress lines report, over every rank of a distributed run: events executed and
// frames in use summed, the largest process's resident memory, each rank's events. Collective
// under MPI (every rank calls it at the same points); without ranks, this process's figures.
// The run's flow workload, or nullptr.
const FlowWorkload* WorkloadOf(SimFabric& f) {
  return f.rdma() != nullptr ? f.rdma()->workload() : nullptr;
}

// ", flows 12/34 finished" of a flow workload, or "" without one.
std::string FlowsFinished(const FlowWorkload* wl, uint64_t finished) {
  if (wl == nullptr) return "";
  return ", flows " + std::to_string(finished) + "/" + std::to_string(wl->records().size()) +
         " finished";
}

struct RunProgress {
  uint64_t events = 0;
  uint64_t flows_finished = 0;  // of a flow workload, all ranks
  uint64_t mbufs_in_use = 0;
  uint64_t pool_frames = 0;
  double rss_mib = 0;                    // the largest process's
  std::vector<uint64_t> events_by_rank;  // one entry per rank (one without MPI)
};

RunProgress GatherProgress(SimFabric& f, const rte_mempool* pool, Ranks* ranks) {
  const size_t n = ranks ? static_cast<size_t>(ranks->size()) : 1;
  const size_t me = ranks ? static_cast<size_t>(ranks->rank()) : 0;
  // By rank: events, frames in use, pool frames, RSS in KiB; summed, each rank fills its slots.
  std::vector<uint64_t> v(5 * n, 0);
  v[me] = f.runner().events_executed();
  v[n + me] = PoolInUse(pool);
  v[2 * n + me] = PoolFrames(pool);
  v[3 * n + me] = static_cast<uint64_t>(ResidentMiB() * 1024);
  // Each flow finishes on its source's rank: the ranks' counts add up.
  const FlowWorkload* wl = WorkloadOf(f);
  v[4 * n + me] = wl != nullptr ? wl->finished() : 0;
  if (ranks) ranks->Sum(&v);
  RunProgress r;
  r.events_by_rank.assign(v.begin(), v.begin() + static_cast<ptrdiff_t>(n));
  for (size_t i = 0; i < n; ++i) {
    r.events += v[i];
    r.mbufs_in_use += v[n + i];
    r.pool_frames += v[2 * n + i];
    r.rss_mib = std::max(r.rss_mib, static_cast<double>(v[3 * n + i]) / 1024);
    r.flows_finished += v[4 * n + i];
  }
  return r;
}

// ", by rank 1.21/0.95 M events/s" (up to 8 ranks; more: the slowest and the fastest), or "".
std::string RankRates(const RunProgress& p, double secs) {
  const size_t n = p.events_by_rank.size();
  if (n < 2 || secs <= 0) return "";
  auto rate = [&](size_t r) { return static_cast<double>(p.events_by_rank[r]) / secs / 1e6; };
  char b[32];
  std::string out = ", by rank ";
  if (n <= 8) {
    for (size_t r = 0; r < n; ++r) {
      std::snprintf(b, sizeof b, "%s%.2f", r ? "/" : "", rate(r));
      out += b;
    }
    return out + " M events/s";
  }
  const auto [lo, hi] = std::minmax_element(p.events_by_rank.begin(), p.events_by_rank.end());
  const size_t rl = static_cast<size_t>(lo - p.events_by_rank.begin());
  const size_t rh = static_cast<size_t>(hi - p.events_by_rank.begin());
  std::snprintf(b, sizeof b, "%.2f (rank %zu)", rate(rl), rl);
  out += b;
  std::snprintf(b, sizeof b, " to %.2f (rank %zu)", rate(rh), rh);
  return out + b + " M events/s";
}

// A wall-clock estimate for the progress line: "12 s", "3 min 20 s", "2 h 05 min".
std::string FormatSeconds(double s) {
  char b[48];
  const long long t = std::llround(std::max(s, 0.0));
  if (t < 60) {
    std::snprintf(b, sizeof b, "%lld s", t);
  } else if (t < 3600) {
    std::snprintf(b, sizeof b, "%lld min %02lld s", t / 60, t % 60);
  } else {
    std::snprintf(b, sizeof b, "%lld h %02lld min", t / 3600, t / 60 % 60);
  }
  return b;
}

// A distributed run's set-up (SimFabric::SetRanks), checked with the other ranks: that every rank
// could, and that all built the same fabric from the same arguments (SimFabric::Fingerprint and
// SimRunOptions::args_fingerprint). On any failure every rank returns an error
// (MpiRanks::AgreedToStop). Returns this rank's partitions; `note` says what differs from what
// was asked.
Result<int> SetUpRanks(SimFabric& f, MpiRanks& ranks, const SimRunOptions& opt, std::string* note) {
  cpu_set_t cpus;
  const int cpu_count =
      sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? std::max(CPU_COUNT(&cpus), 1) : 1;
  int threads = opt.threads;
  if (threads == 0) {  // auto: one per CPU this rank may use, the same number on every rank
    threads = static_cast<int>(ranks.Min(std::min(cpu_count, 64)));
  }
  auto mine = f.SetRanks(&ranks, threads);
  if (ranks.Min(mine.ok() ? 1 : 0) == 0) {
    MpiRanks::AgreedToStop();
    if (!mine.ok()) return mine;
    return Result<int>::Error("rank " + std::to_string(ranks.rank()) +
                              ": another rank could not set up its part of the run");
  }
  const auto fp =
      static_cast<int64_t>((f.Fingerprint() ^ (opt.args_fingerprint * 0x9E3779B97F4A7C15ull)) >> 1);
  if (ranks.Min(fp) != ranks.Max(fp)) {
    MpiRanks::AgreedToStop();
    return Result<int>::Error(
        "the MPI ranks were started differently: each must get the same scenario file (and the "
        "trace and CDF files it names), --set values, --threads, --seed and --duration");
  }
  const size_t asked = static_cast<size_t>(ranks.size()) * static_cast<size_t>(threads);
  if (f.runner().num_partitions() < asked) {
    *note = std::to_string(ranks.size()) + " ranks x " + std::to_string(threads) +
            " threads asked for, " + std::to_string(f.runner().num_partitions()) +
            " partitions used: at most one per ToR";
  } else if (mine.value() > cpu_count) {
    // mpirun binds each rank to one core by default (up to 2 ranks): its threads would take
    // turns on it, every window.
    *note = "rank 0 runs " + std::to_string(mine.value()) + " threads on " +
            std::to_string(cpu_count) +
            " CPU(s) mpirun bound it to: they take turns (mpirun --bind-to none, or --map-by "
            "slot:PE=" +
            std::to_string(mine.value()) + ")";
  }
  return mine;
}

// A distributed run's summary (collective): each flow finished on its source's rank, so the
// FCTs are shared first; each rank summarises its own nodes and rank 0 joins them into the
// summary one process gives (MergeRankSummaries). Other ranks get their own.
nlohmann::json GatherSummary(SimFabric& f, Ranks& ranks) {
  if (f.rdma() != nullptr && f.rdma()->workload() != nullptr) f.rdma()->workload()->ShareFct(ranks);
  nlohmann::json mine = f.Summary();
  const std::vector<uint8_t> cbor = nlohmann::json::to_cbor(mine);
  const auto all = ranks.GatherToRoot(std::string(cbor.begin(), cbor.end()));
  if (ranks.rank() != 0) return mine;
  std::vector<nlohmann::json> parts;
  for (const auto& p : all) parts.push_back(nlohmann::json::from_cbor(p));
  return MergeRankSummaries(f.fabric(), parts);
}

// The last start time of the run's flow workload (its traffic's end, as far as the run knows
// it in advance), or `duration` without one.
Time TrafficEnd(SimFabric& f, Time duration) {
  const FlowWorkload* wl = WorkloadOf(f);
  if (wl == nullptr || wl->records().empty()) return duration;
  Time last = 0;
  for (const auto& r : wl->records()) last = std::max(last, r.flow.start);
  return last;
}

// Runs the fabric to `duration` in ~20 steps, printing a progress line at most once a wall
// second unless `quiet`, then drains it for 10 ms more (sources have stopped). Collective under
// MPI: every rank runs and gathers at the same steps.
void RunWithProgress(SimFabric& f, Time duration, const rte_mempool* pool, Ranks* ranks,
                     bool quiet) {
  const auto wall0 = std::chrono::steady_clock::now();
  auto last = wall0;
  const Time step = std::max<Time>(duration / 20, kUs);
  const FlowWorkload* wl = WorkloadOf(f);
  const Time traffic_end = TrafficEnd(f, duration);
  for (Time t = step;; t += step) {
    const Time until = std::min(t, duration);
    f.RunUntil(until);
    const RunProgress pr = GatherProgress(f, pool, ranks);  // every step, printed or not
    const auto w = std::chrono::steady_clock::now();
    if (!quiet && (w - last > std::chrono::seconds(1) || until == duration)) {
      const double secs = std::chrono::duration<double>(w - wall0).count();
      // Frames in flight and the process's memory: a long run shows whether either grows.
      // Under MPI: events, flows and frames of all ranks, the largest rank's memory.
      const int64_t running = wl != nullptr ? static_cast<int64_t>(wl->records().size()) -
                                                  static_cast<int64_t>(pr.flows_finished)
                                            : -1;
      std::printf(
          "  sim time %s / %s, wall %.1f s, %s, %llu events, %.2f M events/s%s%s, %llu mbufs in "
          "use, RSS %.0f MiB%s, frame pool %llu\n",
          FormatDuration(until).c_str(), FormatDuration(duration).c_str(), secs,
          ProgressTimeLeft(until, duration, traffic_end, secs, running).c_str(),
          static_cast<unsigned long long>(pr.events),
          secs > 0 ? static_cast<double>(pr.events) / secs / 1e6 : 0.0, RankRates(pr, secs).c_str(),
          FlowsFinished(wl, pr.flows_finished).c_str(),
          static_cast<unsigned long long>(pr.mbufs_in_use), pr.rss_mib,
          ranks ? " (largest rank)" : "", static_cast<unsigned long long>(pr.pool_frames));
      std::fflush(stdout);
      last = w;
    }
    if (until == duration) break;
  }
  f.RunUntil(duration + kDrain);
  const RunProgress drained = GatherProgress(f, pool, ranks);
  if (!quiet) {
    std::printf("  drained to %s, %llu events in all%s\n",
                FormatDuration(duration + kDrain).c_str(),
                static_cast<unsigned long long>(drained.events),
                FlowsFinished(wl, drained.flows_finished).c_str());
  }
}

}  // namespace

std::string ProgressTimeLeft(Time until, Time duration, Time traffic_end, double wall_s,
                             int64_t flows_running) {
  if (until >= duration) return "done";
  const Time end = flows_running >= 0 ? std::min(traffic_end, duration) : duration;
  if (until < end) {
    const double left =
        wall_s * static_cast<double>(end - until) / static_cast<double>(std::max<Time>(until, 1));
    return "about " + FormatSeconds(left) + " left";
  }
  return "all flows started, " + std::to_string(flows_running) + " running";
}

Result<nlohmann::json> RunSim(Scenario scenario, SimRunOptions opt) {
  if (opt.seed_override >= 0) scenario.seed = static_cast<uint64_t>(opt.seed_override);
  std::unique_ptr<MpiRanks> ranks;  // outlives the fabric below (its runner calls it)
  if (opt.mpi) {
    auto r = MpiRanks::Init();
    if (!r.ok()) return r.status();
    ranks = std::move(r).value();
    if (ranks->size() == 1) ranks.reset();  // one rank (no mpirun, or -np 1): a plain run
  }
  const bool report_load = !opt.quiet;  // every rank says how its threads spent their time
  if (ranks) {
    if (ranks->rank() != 0) {  // rank 0 reports and writes the results
      opt.quiet = true;
      opt.out_dir.clear();
    }
  }
  const bool root = !ranks || ranks->rank() == 0;
  const auto setup0 = std::chrono::steady_clock::now();
  Status st = InitEal(NoHugeEalArgs(1536), EalAffinity::kKeep);
  if (!st.ok()) return st;
  static int pool_counter = 0;
  // Room for the largest frame this scenario's nodes build (a host's VLAN tag goes into the
  // headroom), in whole cache lines.
  const uint16_t room = static_cast<uint16_t>(
      RTE_ALIGN_CEIL(RTE_PKTMBUF_HEADROOM + LargestSimFrame(scenario), RTE_CACHE_LINE_SIZE));
  // The pool takes memory as the fabric holds more frames, up to its cap.
  const unsigned cap = scenario.sim.mbufs > 0 ? scenario.sim.mbufs : DefaultPoolCap(room);
  auto pool = CreateGrowablePktPool("simpool" + std::to_string(pool_counter++), cap,
                                    std::min(cap, kPoolChunk), room);
  if (!pool.ok()) return pool.status();
  // Freed on every return, after the fabric (declared in the block below) gave its frames back.
  struct PoolGuard {
    rte_mempool* p;
    ~PoolGuard() { rte_mempool_free(p); }
  } pool_guard{pool.value()};
  nlohmann::json summary;
  bool wrote_fct = false;
  {
    auto fab = SimFabric::Create(scenario, pool.value());
    if (!fab.ok()) return fab.status();
    SimFabric& f = *fab.value();
    std::string threads_note;
    Result<int> threads = 1;
    if (ranks) {
      // Before any output is opened: a refused distributed run leaves the folder alone.
      threads = SetUpRanks(f, *ranks, opt, &threads_note);
      if (!threads.ok()) return threads.status();
    }
    if (!opt.out_dir.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(opt.out_dir, ec);
      if (ec) return Status::Error(opt.out_dir + ": " + ec.message());
      // (A distributed run has no capture or sampler to open: SetRanks refuses them.)
      if (!ranks) {
        Status os = f.OpenOutputs(opt.out_dir);
        if (!os.ok()) return os;
      }
    }
    if (!ranks) {
      threads = f.SetThreads(opt.threads, &threads_note);
      if (!threads.ok()) return threads.status();
    }
    if (!opt.quiet) {
      std::printf(
          "rocefab sim: %s: %zu switches, %zu hosts, %zu links, %zu traffic items, seed %llu, "
          "until %s\n",
          scenario.name.c_str(), f.num_switches(), f.num_hosts(), scenario.topology.links.size(),
          scenario.traffic.size(), static_cast<unsigned long long>(scenario.seed),
          FormatDuration(scenario.duration).c_str());
      for (const auto& n : f.notes()) std::printf("  note: %s\n", n.c_str());
      std::printf("  set up in %.2f s\n",
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - setup0).count());
      if (!threads_note.empty()) std::printf("  note: %s\n", threads_note.c_str());
      if (ranks) {
        std::printf(
            "  %d MPI ranks, %zu partitions (rank 0 on %s runs %d; they meet every %s of virtual "
            "time)\n",
            ranks->size(), f.runner().num_partitions(), ranks->host().c_str(), threads.value(),
            FormatDuration(f.runner().lookahead()).c_str());
      } else if (threads.value() > 1) {
        std::printf("  %d threads (partitions meet every %s of virtual time)\n", threads.value(),
                    FormatDuration(f.runner().lookahead()).c_str());
      }
    }
    RunWithProgress(f, scenario.duration, pool.value(), ranks.get(), opt.quiet);
    if (report_load) {
      const auto load = f.runner().partition_load();
      const std::string who = ranks ? "rank " + std::to_string(ranks->rank()) + " " : "";
      for (size_t i = 0; i < load.size(); ++i) {
        const double s = load[i].busy_s + load[i].wait_s;
        std::printf(
            "  %sthread %zu: %llu events (%.2f M/s), %.2f s running windows, %.2f s waiting at "
            "their ends\n",
            who.c_str(), i, static_cast<unsigned long long>(load[i].events),
            s > 0 ? static_cast<double>(load[i].events) / s / 1e6 : 0.0, load[i].busy_s,
            load[i].wait_s);
      }
      std::fflush(stdout);
    }
    summary = ranks ? GatherSummary(f, *ranks) : f.Summary();
    if (!opt.quiet) PrintRdmaResults(summary);
    if (!opt.out_dir.empty()) {
      st = f.CloseOutputs();
      if (!st.ok()) return st;
      st = WriteResultFiles(opt.out_dir, summary, f.rdma());
      if (!st.ok()) return st;
      wrote_fct = f.rdma() != nullptr && f.rdma()->workload() != nullptr;
    }
  }
  std::vector<uint64_t> in_use{PoolInUse(pool.value())};
  if (ranks) ranks->Sum(&in_use);
  summary["mbufs_in_use_after_run"] = in_use[0];
  const uint64_t no_mbuf = summary["mbuf_alloc_failures"].get<uint64_t>();
  if (no_mbuf > 0 && root) {
    std::fprintf(
        stderr,
        "rocefab sim: warning: the frame pool ran out %llu time(s) at its cap of %u mbufs; "
        "those frames were not built and the results are not those of the fabric (a larger "
        "cap: --set sim.mbufs=N, up to 4194303; without it the cap is what 3/4 of the memory "
        "available at the start holds). With --threads > 1 the count can then differ between "
        "runs (each thread keeps up to 384 free frames in its own cache).\n",
        static_cast<unsigned long long>(no_mbuf), pool.value()->size);
  }
  if (!opt.quiet) PrintSummaryTable(summary);
  if (!opt.out_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(opt.out_dir, ec);
    if (ec) return Status::Error(opt.out_dir + ": " + ec.message());
    // Again, now with mbufs_in_use_after_run (known once every node is gone).
    st = WriteJsonFile(opt.out_dir + "/summary.json", summary);
    if (!st.ok()) return st;
    if (!opt.quiet) {
      // The files this run wrote (the folder may hold others).
      std::string list = "summary.json,flows.csv,pings.csv";
      if (wrote_fct) list += ",fct.txt";
      if (scenario.output.sample_interval > 0) list += ",timeseries.csv";
      list += CaptureFileList(scenario.output);
      std::printf("\nresults: %s/{%s}\n", opt.out_dir.c_str(), list.c_str());
    }
  }
  if (const std::string e = ConservationError(summary); !e.empty()) return Status::Error(e);
  return summary;
}

}  // namespace rocefab

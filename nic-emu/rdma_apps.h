#pragma once
/// @file rdma_apps.h
/// Traffic applications on the emulated RNIC (both runners):
///  - Perftest: perftest-style ib_write_bw / ib_read_bw / ib_send_bw (tx_depth outstanding work
///    requests per QP, `iterations` messages per QP; bandwidth = bytes / (last completion - first
///    post), or bytes / (test end - first post) for a test that did not finish; optional
///    per-interval bandwidth) and ib_write_lat / ib_send_lat (ping-pong; latency = round trip / 2,
///    as perftest reports it; min, typical = median, average, p99, p99.9, max in us). Being closed
///    loop, the latency tests warn when t_max exceeds 10x the median and state how many operations
///    the stall suppressed (coordinated omission; ClosedLoopStalls).
///  - FlowWorkload: one RC connection per flow with a single RDMA WRITE of the flow's size at its
///    start time (the HPCC/ConWeave simulators' model); FCT = completion - start, and slowdown =
///    FCT / ideal FCT with ideal = base RTT + wire bytes of the flow at the host rate (floored at
///    1). Flows come from a flow-size CDF with Poisson arrivals at a target load, incast, or a
///    list.
/// Connections are set up out of band (QPN/PSN exchanged as perftest does over TCP).

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/rng.h"
#include "common/runtime/ranks.h"
#include "common/time.h"
#include "nic-emu/rnic.h"

namespace rocefab {

class EmulatedHost;

struct PerftestSpec {
  enum class Test : uint8_t { kWriteBw, kReadBw, kSendBw, kWriteLat, kSendLat };
  Test test = Test::kWriteBw;
  uint64_t size = 65536;
  int iterations = 1000;
  int qps = 1;
  int tx_depth = 128;
  Time start = 0;
  /// When the test is stopped (the scenario's duration; kTimeNever: unknown): nothing is posted
  /// after it and nothing completing after it counts (the same in both runners, which drain for
  /// different times after the end). A bandwidth test that has not finished by then reports
  /// bytes / (end - first post): the time after its last completion counts, so a stall shows in
  /// the average.
  Time end = kTimeNever;
  /// > 0: bandwidth tests also report the bandwidth of every interval of this length from the
  /// start (perftest --run_infinitely prints one line per interval).
  Time report_interval = 0;
  /// Who runs the test: rocefab's app on the hosts' emulated NICs, or (live runner, Linux
  /// namespace hosts) the Debian perftest binary (ib_write_bw, ...) on librocefab-verbs.so, the
  /// same NIC model in the program's process. The sim runner runs the built-in app for both.
  enum class App : uint8_t { kBuiltin, kPerftest };
  App app = App::kBuiltin;
  /// Every QP of the test (both ends) is created with these (traffic class, UDP source port,
  /// timeout, retries, AckReq spacing), as perftest's --tclass / --sl and ibv_modify_qp set them.
  QpOptions qp;
};
const char* PerftestName(PerftestSpec::Test t);
/// Latency tests (write_lat, send_lat): one QP, closed loop.
bool PerftestIsLatency(PerftestSpec::Test t);
/// QPs a test creates at each end, in order, when it is built: 1 for a latency test, else qps
/// (at least 1). The live runner gives a real perftest run the QPNs these take in the sim.
int PerftestQps(const PerftestSpec& s);

/// Coordinated omission in a closed-loop latency test (ping-pong: the next operation is posted
/// only when the previous one returns). A stall then shows as one long sample, and the
/// operations the test would have run during it are never measured, so the percentiles hide it.
/// A sample longer than `kStallFactor` x the median counts as a stall; each stall of latency L
/// suppressed floor(L / median) - 1 operations. The corrected figures are what an open-loop
/// client posting every median round trip would have measured from its intended send times:
/// each stall also contributes L - median, L - 2 x median, ... down to the median (HdrHistogram's
/// expected-interval correction).
struct ClosedLoopStalls {
  static constexpr double kStallFactor = 10;  ///< t_max above 10 x the median: warn
  bool warning = false;                       ///< t_max > kStallFactor x median
  uint64_t stalls = 0;                        ///< samples above kStallFactor x median
  uint64_t suppressed = 0;                    ///< operations the stalls kept from being posted
  Time median = 0, max = 0;
  Time corrected_p99 = 0, corrected_p999 = 0;  ///< with the suppressed operations put back
  double corrected_avg = 0;                    ///< ps
};
/// Pure: the analysis above over one-way latencies `lat` (any order).
ClosedLoopStalls AnalyzeClosedLoop(const std::vector<Time>& lat);

class Perftest {
 public:
  /// Connects `qps` QPs between the two hosts' NICs and arms the first posts at spec.start.
  Perftest(const PerftestSpec& spec, EmulatedHost* client, EmulatedHost* server,
           std::string client_name, std::string server_name);
  bool done() const { return done_; }
  /// Results as JSON; also perftest-like text lines.
  nlohmann::json Result() const;
  std::string Text() const;  ///< PerftestText(Result())
  /// Payload Gb/s of the completions that happened in [from, to).
  double GbpsBetween(Time from, Time to) const;

 private:
  void OnClientCompletion(Time now, size_t qp_index, const WorkCompletion& wc);
  void PostNext(Time now, size_t qp_index);
  PerftestSpec spec_;
  EmulatedHost* client_;
  EmulatedHost* server_;
  std::string cname_, sname_;
  std::vector<uint32_t> cqp_, sqp_;
  std::vector<int> posted_, completed_;
  Time first_post_ = -1, last_completion_ = -1;
  uint64_t bytes_ = 0;
  int errors_ = 0;
  /// The first kMaxFailures failed work completions: time, post time, QP, wr_id, status.
  static constexpr size_t kMaxFailures = 100;
  nlohmann::json failures_ = nlohmann::json::array();
  void RecordFailure(Time now, const WorkCompletion& wc);
  std::vector<std::pair<Time, uint64_t>> done_log_;  // (completion time, bytes)
  std::vector<Time> lat_;                            // one-way latencies (RTT/2)
  Time lat_sent_ = 0;
  int lat_iter_ = 0;
  bool done_ = false;
};

/// RDMA Pingmesh (Guo et al. §5.2): every source probes every destination with `size`-byte
/// RDMA SEND probes on its own RC connection, open loop: probe k of a pair is posted at
/// start + offset + k x interval whatever happened to earlier probes, and its RTT is measured
/// from that intended time to the completion (so a stall is not hidden: no coordinated
/// omission). A probe that completes with an error counts under its completion status; one not
/// completed `timeout` after its intended time counts as "timeout".
struct PingmeshSpec {
  Time interval = 100 * kUs;
  int count = 100;
  uint64_t size = 512;
  Time start = 0;
  Time timeout = 10 * kMs;
  Time stop = kTimeNever;  ///< no probe is posted at or after this time (the scenario's duration)
};

/// A perftest result (Perftest::Result(), or summary.json's `rdma[i]`) as perftest prints it: a
/// bandwidth line ("(not finished)" when the iterations did not all complete) or a latency line
/// with its percentiles ("(not finished: N samples)"), and the coordinated-omission warning.
std::string PerftestText(const nlohmann::json& result);

class Pingmesh {
 public:
  /// `hosts[i]` null: not probed. `names` and `tors` label the results.
  /// Probes every pair (a, b), a != b, with is_src[a] and is_dst[b].
  Pingmesh(const PingmeshSpec& spec, const std::vector<EmulatedHost*>& hosts,
           std::vector<std::string> names, std::vector<std::string> tors, std::vector<int> podsets,
           const std::vector<bool>& is_src, const std::vector<bool>& is_dst);
  /// Per pair, per ToR pair, per podset pair and fabric-wide: probes, failures by code,
  /// p50/p99/p99.9 RTT (us).
  /// `now` decides which unfinished probes have timed out.
  nlohmann::json Result(Time now) const;
  /// Every completed probe's RTT, all pairs (for fabric-wide comparisons: RdmaVsTcp).
  std::vector<Time> Rtts() const;

 private:
  struct Pair {
    int src, dst;
    uint32_t qpn;
    std::vector<Time> rtt;
    std::map<std::string, int> failures;
    std::vector<Time> posted;  // intended send time per probe (wr_id = index)
    std::vector<bool> done;
  };
  PingmeshSpec spec_;
  std::vector<std::string> names_, tors_;
  std::vector<int> podsets_;
  std::vector<Pair> pairs_;
};

/// A flow-size distribution: piecewise-linear CDF, lines "<bytes> <cumulative percent>".
class FlowSizeCdf {
 public:
  /// The largest flow size a CDF may give (bytes), as flow trace files (1 PB).
  static constexpr double kMaxBytes = 1e15;
  /// Reads `path`: '#' comments and empty lines skipped; each other line exactly two numbers,
  /// bytes in [0, kMaxBytes] and percent in [0, 100], both non-decreasing; at least two points,
  /// the last at 100 %; a mean of at least 1 byte. Errors name the file, the line and the rule.
  static Result<FlowSizeCdf> Load(const std::string& path);
  uint64_t Sample(Rng& rng) const;
  double Mean() const;

 private:
  std::vector<std::pair<double, double>> points_;  // (bytes, cumulative fraction)
};

struct Flow {
  int src = 0, dst = 0;  ///< host indices
  uint64_t size = 0;
  Time start = 0;
};

/// Poisson flows per source host: mean gap = mean size x 8 / (host rate x load), destination
/// uniform over the other hosts (the reference generator's rule), starts in [start, start + span).
std::vector<Flow> PoissonFlows(const FlowSizeCdf& cdf, int hosts, BitRate host_rate, double load,
                               Time start, Time span, uint64_t seed);

/// Reads a reference-simulator flow file (HPCC/ConWeave ns-3): first line the flow count, then
/// "src dst pg size start_seconds" per flow (HPCC files have a dport column before size: both are
/// accepted). `.xz` files are read through `xz -dc`. Start times minus `time_base`; with
/// `until` > 0 only flows starting before it are kept (a slice of the trace).
/// Errors name the file, the line and the rule (host index out of range, bad number).
Result<std::vector<Flow>> ReadFlowTrace(const std::string& path, int hosts, Time time_base,
                                        Time until = 0);

class FlowWorkload {
 public:
  struct Record {
    Flow flow;
    uint32_t qpn = 0;
    Time fct = -1;  ///< -1: not finished
    Time ideal = 0;
    uint16_t sport = 0;    ///< the requester QP's UDP source port
    uint16_t dport = 100;  ///< reference_ports: the reference's destination port; else 100
  };
  /// `ideal(flow)` gives a flow's ideal completion time on an empty fabric (the slowdown's
  /// denominator; topo/compat.h CompatModel::IdealFct); `hosts[i]` the nodes.
  /// `reference_ports`: number each flow's ports as the reference ConWeave ns-3 simulator does
  /// (scratch/network-load-balance.cc ScheduleFlowInputs: sport 10000 + the flows its source
  /// started before it, dport 100 + the flows to its destination before it, in `flows` order,
  /// 16-bit counters); the requester QP sends with UDP source port sport and IPv4
  /// identification dport, the responder QP the reverse (QpOptions::ip_id, switch/ecmp.h).
  FlowWorkload(std::vector<Flow> flows, std::vector<EmulatedHost*> hosts,
               const std::function<Time(const Flow&)>& ideal, bool reference_ports = false);
  const std::vector<Record>& records() const { return records_; }
  size_t finished() const { return finished_.load(std::memory_order_relaxed); }
  /// Slowdown statistics (avg, p50, p99, p99.9) over finished flows starting at or after `from`.
  nlohmann::json Summary(Time from = 0) const;
  /// A distributed sim run: each flow finishes on the rank of its source host; after the run,
  /// every rank gets every flow's FCT (a Max over the ranks' records; collective).
  void ShareFct(Ranks& ranks);

 private:
  std::vector<Record> records_;
  // Counted by the source hosts' completions, which may run on several partition threads.
  std::atomic<size_t> finished_{0};
};

/// A slowdown size bucket: flows with lo < size <= hi bytes (the reference simulator's rule).
struct SizeBucket {
  const char* name;
  uint64_t lo, hi;  ///< bytes, interval (lo, hi]
};
/// The five size buckets of the ConWeave/HPCC analysis scripts: edges 4,000 / 16,000 / 64,000 /
/// 256,000 bytes (decimal KB), intervals (lo, hi], so a 4,000-byte flow is in le_4k and a 4,001-
/// or 4,096-byte one in 4k_16k (shared/data/anchor-ns3/README.md; docs/results.md). Keep
/// scripts/report.py and bench/ns3_ideal_rule.py in step.
inline constexpr SizeBucket kSizeBuckets[] = {{"le_4k", 0, 4000},
                                              {"4k_16k", 4000, 16000},
                                              {"16k_64k", 16000, 64000},
                                              {"64k_256k", 64000, 256000},
                                              {"gt_256k", 256000, UINT64_MAX}};
/// The index in kSizeBuckets of the bucket a flow of `size` bytes falls in (0 for size 0).
size_t SizeBucketIndex(uint64_t size);
/// The "< / >= 1 BDP" split of the same analysis: lt_bdp is size < 104,000 B (1 BDP on the 100G
/// leaf-spine), ge_bdp the rest.
inline constexpr uint64_t kBdpBytes = 104000;

/// FlowWorkload::Summary's statistics over `records` (pure): finished flows starting at or after
/// `from`, in "all", "lt_bdp", "ge_bdp" and the kSizeBuckets.
nlohmann::json SlowdownSummary(const std::vector<FlowWorkload::Record>& records, Time from);

}  // namespace rocefab

#pragma once
/// @file scenario.h
/// A scenario = topology + switch settings + traffic + duration: one experiment, one JSON file,
/// runnable by both runners. Read strictly: unknown keys, wrong types and impossible values are
/// rejected with the JSON path of the field and the rule (e.g.
/// "quickstart.json: topology.links[2].rate: rate must be > 0").
///
/// {
///   "name": "quickstart", "description": "...", "seed": 1,
///   "duration": "20ms",                 // sim runner: virtual-time limit (traffic is clipped)
///   "topology": {"clos": {...}} | {"switches": [...], "hosts": [...], "links": [...]},
///   "topology_file": "my-clos.json",    // instead of "topology" (path relative to the scenario)
///   "switch": {"mac_aging": "5min", "arp_aging": "4h"},
///   "qos": {"profile": "roce"|"sonic", "trust": "dscp"|"pcp", "lossless": [3, 4],
///           "dscp_to_tc": {"26": 3, "10": 4},  // SONiC DSCP_TO_TC_MAP entries over the profile
///           "tc_to_pg": {"3": 3}, "tc_to_queue": {"3": 3},  // TC_TO_PRIORITY_GROUP/QUEUE_MAP
///           "pcp_to_tc": {"3": 3}},  // DOT1P_TO_TC_MAP (trust "pcp"; default identity)
///   "buffer": {"mode": "shared"|"plain", "size": "12MiB", "headroom": "auto"|"100KiB",
///              "lossless_dynamic_th": 0, "lossy_dynamic_th": 0, "egress_lossy_dynamic_th": 0,
///              "xon": "auto"|"18KiB", "xon_offset": "4608B", "lossless_reserved": "0B",
///              "lossless_static_th": "0B", "shared_headroom_pool": "0B",
///              "profiles": {"pg_lossless_100000_5m_profile": {"headroom": "auto"|"72704B",
///                           "xon", "xon_offset", "reserved", "dynamic_th", "static_th"}},
///              "ports": {"tor0/p3": "pg_lossless_100000_5m_profile", "leaf0/*": "..."},
///              "switches": {"tor0": {"size": "32MiB", "shared_headroom_pool": "1.5MiB"}}},
///   (headroom "0B" is accepted: the misconfiguration `rocefab check` names; SONiC's tables map
///    onto these keys: topo/sonic.h)
///   "pfc": {"enabled": true, "pause_quanta": 65535 | "pause_time": "5us", "refresh":
///   "auto"|"100us",
///           "xoff_every_frame": false},
///   "compat": "none"|"conweave-ns3",     // model another simulator's framing, PFC rule and
///                                        // ideal-FCT yardstick (topo/compat.h)
///   "ecn": {"enabled": false, "queues": [3, 4], "kmin": "100KB", "kmax": "400KB", "pmax": 0.2,
///           "drop_non_ect": false, "mark_on": "enqueue"|"dequeue"},
///   "scheduler": {"strict": [6, 7], "weights": [1, 1, 1, 1, 1, 1, 1, 1]},
///   "output": {"capture": ["tor1/p0"], "sample_interval": "10us",
///              "dcqcn_trace": ["h0"]},   // dcqcn.csv: rate/target/alpha of h0's QPs per sample
///   "pfc_watchdog": {"enabled": false, "detection_time": "200ms", "restoration_time": "200ms",
///                    "poll_interval": "200ms", "action": "drop"|"forward"|"alert",
///                    "mode": "sonic"|"paper", "ports": "all"|"server"|["tor0/p1", ...],
///                    "poll_jitter": "0s"},   // each poll up to this late (<= poll_interval)
///                    (detection_time must be >= poll_interval: a storm is declared at a poll)
///   "load_balancing": {"scheme": "ecmp"|"letflow"|"drill"|"conga"|"conweave", "flowlet_gap":
///   "100us",
///                      "flowlet_aging": "2ms", "drill_samples": 2, "conga": {..}, "conweave":
///                      {..}},
///   "neighbors": "learned"|"static",     // static: ARP and MAC entries for every server are in
///                                        // place at t = 0 (sim runner only, the live runner says
///                                        so
///                                        // and uses ARP; as the reference simulators, which have
///                                        no
///                                        // ARP); learned: resolved by ARP as traffic starts
///   "drop_lossless_on_incomplete_arp": false,
///   "vlan_on_uplinks": false,            // server VLAN stretched over the fabric (flooding
///   domain) "faults": [ ... see topo/faults.h ... ], "nic": {"mtu": 1024, "recovery":
///   "go_back_n"|"go_back_0"|"selective_repeat", "ack_every": 1,
///           "timeout_exp": 14, "retry_cnt": 7, "window": "0B",
///           "dcqcn": {"enabled": true, "profile": "nic"|"paper"|"conweave", "cnp_interval": "4us",
///                     "min_rate": "100Mbps", "rate_ai": "40Mbps", "rate_hai": "100Mbps"},
///           "rx": {"per_packet": "0ns", "buffer": "256KiB", "xoff": "0B", "xon": "0B",
///                  "mtt_entries": 0, "page_size": "4KiB", "mtt_miss_penalty": "1us",
///                  "watchdog": "100ms", "watchdog_enabled": true}},
///   "live": {"port_driver": "af_packet" | "af_xdp", "timeout": "120s", "busy_poll": "2ms",
///            "max_sleep": "20us", "timing_tolerance": "1us" (default: one MTU frame at the
///            fastest link), "max_late_fraction": 0.001, "lcores": 1 | "auto",
///            "mbufs": 32767},
///   "sim": {"mbufs": 1048575},   // the most frames the sim's pool may grow to (default: by
///   memory) "traffic": [
///     {"kind": "ping",   "from": "h0"|"all", "to": "h3"|"all", "count": 10, "interval": "1ms",
///      "size": 56, "start": "0s"},
///     {"kind": "iperf3", "from": "h0", "to": "h3", "streams": 1, "duration": "3s", "start": "0s"},
///     {"kind": "udp",    "from": "h0"|"all", "to": "h1"|"all", "rate": "1Gbps", "size": 1000,
///      "count": 100, "duration": "1ms", "start": "0s", "dscp": 0, "ecn": false},
///     (nic also takes "data_dscp" (26) and "ack_dscp" (-1 = data DSCP))
///     {"kind": "rdma", "test": "write_bw"|"read_bw"|"send_bw"|"write_lat"|"send_lat",
///      "from": "h0", "to": "h2", "size": 65536, "iterations": 1000, "qps": 1, "tx_depth": 128,
///      ("from": "all", "to": "next_podset": one item per server, to its peer in the next podset:
///       NextPodsetPairs)
///      "report_interval": "0s",   // > 0 (bw tests): bandwidth per interval, as perftest
///                                 // --run_infinitely; an unfinished test's average counts the
///                                 // whole run (bytes / (duration - start))
///      "dscp": 26, "ack_dscp": 26, "udp_sport": 49152, "timeout_exp": 14, "retry_cnt": 7,
///      "ack_req_every": 64},      // per-QP settings (nic-emu QpOptions), both ends of every QP
///                                 // of the item; absent: the NIC's
///      (rdma "app": "builtin" (default) | "perftest": Debian's ib_write_bw, ib_read_bw,
///       ib_send_bw, ib_write_lat or ib_send_lat between Linux hosts in the live runner, on
///       librocefab-verbs.so; the sim runs the built-in app; takes size, iterations, qps,
///       tx_depth, dscp (--tclass) and timeout_exp (-u))
///     {"kind": "workload", "pattern": "poisson", "cdf": "AliStorage2019", "load": 0.5,
///      "from": "all", "to": "all", "start": "0s", "duration": "1ms"},
///     {"kind": "workload", "pattern": "incast", "from": "all", "to": "h0", "size": 500000},
///     {"kind": "workload", "pattern": "trace", "file": "flows.txt.xz", "time_base": "2s"},
///     {"kind": "pingmesh", "interval": "100us", "count": 100, "size": 512, "timeout": "10ms"},
///     {"kind": "tcp_pingmesh", "interval": "1ms", "count": 100, "size": 512}   (Linux hosts, live;
///      the sim runner substitutes ICMP echo probes between the same pairs)
///      (HPCC/ConWeave ns-3 flow file: first line the count, then "src dst pg size start_s";
///       host i of the file is the i-th host of the topology)
///   ]
/// }
/// "clos" keys: tiers (2|3), spines, tors, leaves_per_podset, podsets, hosts_per_tor,
/// link_rate, host_rate, cable (every link; per tier: host_cable, tor_cable for a ToR's uplinks,
/// leaf_cable for leaf-spine links, each defaulting to cable), host_kind ("linux"|"builtin"),
/// builtin_hosts (names that get an emulated NIC whatever host_kind says).

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "common/result.h"
#include "common/time.h"
#include "nic-emu/rdma_apps.h"
#include "nic-emu/rnic.h"
#include "switch/switch_config.h"
#include "topo/compat.h"
#include "topo/faults.h"
#include "topo/topology.h"

namespace rocefab {

/// Each traffic kind's own settings: one type per kind; a TrafficItem holds the one of its kind.
struct PingTraffic {
  int count = 10;       ///< probes (1..1,000,000)
  Time interval = kMs;  ///< between probes (>= 1 us)
  int size = 56;        ///< ICMP data bytes (8..1472)
};
struct Iperf3Traffic {       ///< a kernel TCP stream between Linux hosts (live)
  int streams = 1;           ///< iperf3 -P (1..128)
  Time duration = 3 * kSec;  ///< iperf3 -t
};
struct UdpTraffic {   ///< a constant-rate UDP flow
  BitRate rate;       ///< bits/s
  int size = 1000;    ///< UDP payload bytes (24..1472)
  int count = -1;     ///< packets; -1: until `duration`
  Time duration = 0;  ///< sending time when count is -1
  int dscp = 0;       ///< 0..63
  bool ecn = false;   ///< send ECT(0)
};
struct WorkloadTraffic {            ///< flows on the emulated NICs (fabric/workload.h)
  std::string pattern = "poisson";  ///< "poisson" | "incast" | "trace"
  std::string cdf_path;             ///< poisson: resolved flow-size CDF file
  double load = 0.5;                ///< poisson: fraction of the host link rate per source host
  /// poisson: arrivals for this long; trace: keep flows starting before this (0 = all)
  Time duration = kMs;
  Time measure_from = 0;   ///< slowdown statistics over flows starting at or after this
  uint64_t flow_size = 0;  ///< incast: bytes per sender
  std::string trace_path;  ///< trace: reference-simulator flow file (.txt or .txt.xz)
  Time time_base = 0;      ///< trace: subtracted from every start time (ns-3 traces start at 2 s)
};
struct TcpPingmeshTraffic {  ///< kernel TCP probes between Linux hosts (live; ICMP in sim)
  Time interval = kMs;
  int count = 100;
  int size = 512;  ///< bytes per probe
};

/// One item of the scenario's "traffic" list: who, when, and the settings of its kind.
struct TrafficItem {
  /// The kinds, in the order of `spec`'s alternatives (kind() is spec.index()).
  enum class Kind : uint8_t { kPing, kIperf3, kUdp, kRdma, kWorkload, kPingmesh, kTcpPingmesh };
  using Spec = std::variant<PingTraffic, Iperf3Traffic, UdpTraffic, PerftestSpec, WorkloadTraffic,
                            PingmeshSpec, TcpPingmeshTraffic>;
  std::string from = "all", to = "all";  ///< host names, or "all"
  Time start = 0;
  Spec spec;
  /// Position of the item's entry in the scenario file's "traffic" list (-1: built in code).
  /// Items expanded from one entry ("to": "next_podset") share it.
  int index = -1;

  Kind kind() const { return static_cast<Kind>(spec.index()); }
  /// The settings of the item's kind; asking for another kind's throws std::bad_variant_access
  /// (a programming error: callers switch on kind() first).
  PingTraffic& ping() { return std::get<PingTraffic>(spec); }
  const PingTraffic& ping() const { return std::get<PingTraffic>(spec); }
  Iperf3Traffic& iperf3() { return std::get<Iperf3Traffic>(spec); }
  const Iperf3Traffic& iperf3() const { return std::get<Iperf3Traffic>(spec); }
  UdpTraffic& udp() { return std::get<UdpTraffic>(spec); }
  const UdpTraffic& udp() const { return std::get<UdpTraffic>(spec); }
  PerftestSpec& perftest() { return std::get<PerftestSpec>(spec); }
  const PerftestSpec& perftest() const { return std::get<PerftestSpec>(spec); }
  WorkloadTraffic& workload() { return std::get<WorkloadTraffic>(spec); }
  const WorkloadTraffic& workload() const { return std::get<WorkloadTraffic>(spec); }
  PingmeshSpec& pingmesh() { return std::get<PingmeshSpec>(spec); }
  const PingmeshSpec& pingmesh() const { return std::get<PingmeshSpec>(spec); }
  TcpPingmeshTraffic& tcp_pingmesh() { return std::get<TcpPingmeshTraffic>(spec); }
  const TcpPingmeshTraffic& tcp_pingmesh() const { return std::get<TcpPingmeshTraffic>(spec); }
};
const char* TrafficKindName(TrafficItem::Kind k);
/// "traffic[N]" for messages about `item`, the i-th of Scenario::traffic: N is the entry's
/// position in the file (TrafficItem::index), or i for an item built in code.
std::string TrafficPath(const TrafficItem& item, size_t i);

/// "buffer.switches.<name>": one switch's buffer where it differs from the others' (SONiC: each
/// switch's own BUFFER_POOL sizes).
struct SwitchBufferOverride {
  int64_t size = 12 << 20;           ///< BufferConfig::size, bytes
  int64_t shared_headroom_pool = 0;  ///< BufferConfig::shared_headroom_pool, bytes
};

/// Settings every switch of the scenario gets.
struct SwitchDefaults {
  Time mac_aging = 300 * kSec;
  Time arp_aging = 4 * 3600 * kSec;
  QosProfile qos = QosProfile::Named("roce").value();
  BufferConfig buffer;
  /// "buffer.profiles": named lossless PG profiles (SONiC BUFFER_PROFILE), and "buffer.ports":
  /// the ports that use one ("tor0/p3" or every port of a switch, "tor0/*"; later entries win).
  std::map<std::string, LosslessPgConfig> buffer_profiles;
  std::vector<std::pair<std::string, std::string>> buffer_ports;
  std::map<std::string, SwitchBufferOverride> buffer_switches;  ///< "buffer.switches"
  PfcConfig pfc;
  std::array<WredProfile, 8> wred{};
  SchedulerConfig scheduler{0xC0, {1, 1, 1, 1, 1, 1, 1, 1}};  ///< queues 6, 7 strict; DWRR 0..5
  PfcWatchdogConfig watchdog;
  /// "pfc_watchdog.ports" as a list: only these "switch/pN" ports are watched (empty: all).
  std::vector<std::string> watchdog_ports;
  LoadBalancingConfig load_balancing;
  bool drop_incomplete_arp = false;
  bool vlan_on_uplinks = false;  ///< stretch the server VLAN over every switch-switch port (trunks)
  bool static_neighbors = false;  ///< "neighbors": "static" (sim runner only)
};

/// How `output.capture` is written (docs/results.md).
enum class CaptureFormat : uint8_t {
  kPcapng,  ///< "pcapng": capture.pcapng, one interface per captured port (the default)
  kPcap,    ///< "pcap": <switch>_p<N>.pcap per captured port (classic libpcap files)
};

/// Results the runners write besides the summary.
struct OutputOptions {
  std::vector<std::string> capture;  ///< "switch/pN" ports whose frames are captured (both ways)
  CaptureFormat capture_format = CaptureFormat::kPcapng;
  Time sample_interval = 0;  ///< > 0: timeseries.csv of queues and pause state
  /// Hosts whose emulated NICs' DCQCN QPs go to dcqcn.csv every sample_interval.
  std::vector<std::string> dcqcn_trace;
};

struct LiveOptions {
  std::string port_driver = "af_packet";
  Time timeout = 300 * kSec;
  Time busy_poll = 2 * kMs;   ///< poll loop spins this long after the last work, then backs off
  Time max_sleep = 20 * kUs;  ///< longest idle sleep of the poll loop
  /// Lateness beyond this makes a timed event late (lateness.h); 0 = one MTU-sized frame's
  /// serialization time at the fastest link (LiveTimingTolerance).
  Time timing_tolerance = 0;
  /// A live run is faithful when at most this fraction (0..1) of its timed events were late.
  double max_late_fraction = 0.001;
  /// Poll threads (1..64), the fabric split among them as the sim's --threads split it (a ToR
  /// with its hosts together, at most one per ToR); 0 = "auto": one per ToR, at most one fewer
  /// than the CPUs this process may use (one is left to the kernel and the namespace hosts'
  /// tools), at least 1.
  int lcores = 1;
  /// Frames (mbufs) in the run's pool, 1,023..4,194,303 (2^k - 1 fills DPDK's ring exactly):
  /// every frame queued in a switch, held by a NIC or in a port's ring takes one. A pool too
  /// large for the memory EAL has is an error before traffic starts; an empty pool during the
  /// run drops frames, counted in summary.json `mbuf_alloc_failures` (docs/reliability.md).
  uint32_t mbufs = 32767;
};

struct SimOptions {
  /// The most frames (mbufs) the sim's pool may hold (per process; each MPI rank has its own),
  /// 1,023..4,194,303; 0 (the default): 4,194,303, or what 3/4 of the memory available at the
  /// start holds if that is fewer. The pool starts with 16,384 frames and grows by at least as many
  /// (a quarter of its size) whenever it is empty, so a run takes memory for the most frames it
  /// held at once, not for the cap: each 160 B + LargestSimFrame + 128 B headroom, in whole cache
  /// lines (1.44 KB at MTU 1,024). Every frame queued in a switch, held
  /// by a NIC or on a wire takes one; a pool at its cap drops the frames it could not build
  /// (summary.json `mbuf_alloc_failures`, a warning).
  uint32_t mbufs = 0;
};

struct Scenario {
  std::string name;
  std::string description;
  uint64_t seed = 1;
  Time duration = 10 * kMs;
  Topology topology;
  SwitchDefaults sw;
  LiveOptions live;
  SimOptions sim;
  OutputOptions output;
  std::vector<Fault> faults;     ///< the fault timeline (topo/faults.h)
  bool detect_deadlocks = true;  ///< sim: watch the wait-for graph of paused queues
  RnicConfig nic;  ///< every host's emulated RNIC (DCQCN profile resolved per host rate)
  std::string dcqcn_profile = "nic";
  nlohmann::json dcqcn_overrides = nlohmann::json::object();
  std::vector<TrafficItem> traffic;
  /// "compat": what another simulator models differently on purpose (topo/compat.h); never null.
  const CompatModel* compat = &CompatModel::None();

  /// `base_dir` resolves "topology_file".
  static Result<Scenario> FromJson(const nlohmann::json& j, const std::string& base_dir);
  /// Reads and parses a file; errors are prefixed with the file name. `sets` are applied to
  /// its JSON first (ApplyOverrides), so the strict reader checks them as any other field.
  static Result<Scenario> Load(const std::string& path, const std::vector<std::string>& sets = {});
};

/// Applies command-line overrides `KEY=VALUE` to a scenario's JSON (`rocefab sim|live|crosscheck
/// --set`). KEY is a dotted path of object keys and array indices (`topology.clos.link_rate`,
/// `traffic.0.iterations`); VALUE is read as JSON when it is JSON (`true`, `3`, `"x"`, `{...}`)
/// and as a string otherwise (`1Gbps`, `100ms`). Objects missing on the path are created (the
/// reader then refuses keys it does not know). Errors name the override: no '=', an empty key
/// or path element, an index past the end of an array, a path through a value that is neither
/// an object nor an array.
Status ApplyOverrides(nlohmann::json* j, const std::vector<std::string>& sets);

/// The longest frame (bytes, Ethernet header to ICRC, no FCS) that a node of the sim builds for
/// `s`: a RoCEv2 data packet of nic.mtu payload bytes with a RETH and 3 bytes of pad (nic.mtu +
/// kRoceMaxOverhead + 3); 1514 if any traffic item is not RoCE (ping, udp, iperf3 and
/// tcp_pingmesh run as ICMP or UDP of up to 1,472 payload bytes) or a frame_injection fault can
/// send random frames (60..1514 B); ARP and PFC frames are shorter. The sim's frame pool sizes
/// each mbuf's data room by it (a frame that does not fit is not built, as if the pool were
/// empty), so RoCE-only scenarios at MTU 1024 take 1.4 KB a frame instead of 2.3 KB.
int64_t LargestSimFrame(const Scenario& s);

/// Ordered (from, to) host index pairs of a traffic item; "all" expands to every host, pairs
/// with from == to are skipped.
std::vector<std::pair<int, int>> ExpandPairs(const TrafficItem& t, const Topology& topo);

/// rdma "to": "next_podset": the host at position k of podset p (hosts in topology order) sends
/// to the host at position k of podset p + 1 (the last podset's to the first's): a permutation
/// in which every flow leaves its podset, as in Guo et al. §6's throughput experiment. On a fabric
/// with one podset the ToRs take the podsets' place. `from` is "all" or one host (its pair).
/// Throws ConfigError at `path` if there are fewer than two podsets (ToRs) or they hold
/// different numbers of hosts.
inline constexpr const char* kNextPodset = "next_podset";
std::vector<std::pair<int, int>> NextPodsetPairs(const Topology& topo, const std::string& from,
                                                 const std::string& path);

}  // namespace rocefab

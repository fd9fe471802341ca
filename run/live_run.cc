#include "run/live_run.h"

#include <fcntl.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "common/eal.h"
#include "common/runtime/live_runner.h"
#include "common/units.h"
#include "common/wire/roce_headers.h"
#include "fabric/fabric.h"
#include "fabric/results.h"
#include "nic-emu/emulated_host.h"
#include "run/live_telemetry.h"
#include "run/netns.h"
#include "run/prometheus.h"
#include "run/run_state.h"
#include "run/sim_fabric.h"
#include "run/sim_run.h"
#include "run/switch_processes.h"
#include "run/verbs_env.h"
#include "switch/switch_node.h"

namespace rocefab {
namespace {

// `cmd` run in network namespace `ns`, killed when rocefab dies (setpriv --pdeathsig KILL).
std::vector<std::string> InNamespace(const std::string& ns, std::vector<std::string> cmd) {
  std::vector<std::string> c = {"ip", "netns", "exec", ns, "setpriv", "--pdeathsig", "KILL"};
  c.insert(c.end(), std::make_move_iterator(cmd.begin()), std::make_move_iterator(cmd.end()));
  return c;
}

std::atomic<bool> g_interrupted{false};
// A --processes switch process: SIGUSR1s from its parent, the first time 0, the second the
// end of its stop (its link counters are read: it may close its memif ports).
std::atomic<int> g_usr1{0};

// Traffic that runs on emulated NICs (RdmaTraffic), not as tools in namespaces.
bool IsNicTraffic(TrafficItem::Kind k) {
  return k == TrafficItem::Kind::kRdma || k == TrafficItem::Kind::kWorkload ||
         k == TrafficItem::Kind::kPingmesh;
}

void OnSignal(int) { g_interrupted = true; }
void OnGo(int) { g_usr1.fetch_add(1); }

using Clock = std::chrono::steady_clock;

// The CPUs this process may run on (its affinity mask: taskset, cgroups), in order.
std::vector<int> AllowedCpus() {
  std::vector<int> cpus;
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
    }
  }
  return cpus;
}

// Whether `mem_mb` MiB of free 2 MiB hugepages (and 64 MiB to spare) are mounted for EAL.
bool HugepagesUsable(long mem_mb) {
  std::ifstream f("/proc/meminfo");
  std::string key;
  long free_pages = 0;
  while (f >> key) {
    if (key == "HugePages_Free:") f >> free_pages;
  }
  return free_pages * 2 >= mem_mb + 64 && std::filesystem::exists("/dev/hugepages") &&
         RunCommand({"mountpoint", "-q", "/dev/hugepages"}).ok();
}

// MiB of EAL memory a pool of `mbufs` takes (mbuf header, PacketMeta, 2 KiB of data room and
// the mempool's per-object header, rounded up).
long PoolMiB(uint32_t mbufs) { return static_cast<long>((uint64_t{mbufs} * 2432 >> 20) + 1); }

std::string Seconds(Time t) {
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", static_cast<double>(t) / kSec);
  return b;
}

// Everything a live run creates, removed in the destructor whatever happened.
struct LiveSession {
  std::vector<VethHost> hosts;
  std::vector<uint16_t> ethdevs;
  std::vector<pid_t> children;
  std::vector<pid_t> background;  // servers that run until the end (not waited for)
  std::atomic<bool> stop_loop{false};
  std::thread loop;
  // Declared after the fields above so that nothing here outlives the loop thread's use of it.
  std::unique_ptr<LiveRunner> runner;
  std::unique_ptr<Fabric> fabric;  // nodes on `runner` (fabric/fabric.h)
  std::vector<SwitchNode*> telemetry_switches;
  std::unique_ptr<MetricsServer> metrics;  // reads telemetry_switches, runner and the pool
  bool eal_up = false;
  std::string eal_runtime_dir;  // /var/run/dpdk/<file prefix>: removed after rte_eal_cleanup
  bool quiet = false;
  std::string run_state;  // run id of the state file written once the fabric is up (run_state.h)

  ~LiveSession() { Teardown(); }
  void StopLoop() {
    stop_loop = true;
    if (loop.joinable()) loop.join();
  }
  /// Stops traffic tools, the poll loop, the nodes and the ports (EAL and namespaces stay).
  void StopFabric() {
    metrics.reset();
    AttachLiveTelemetry(nullptr);
    for (pid_t p : background) StopChild(p);
    background.clear();
    for (pid_t p : children) StopChild(p);
    children.clear();
    StopLoop();
    fabric.reset();  // frees the nodes' queued frames, before EAL goes away
    runner.reset();  // frees frames still on delay lines
    for (uint16_t p : ethdevs) {
      rte_eth_dev_stop(p);
      rte_eth_dev_close(p);
    }
    ethdevs.clear();
  }
  void Teardown() {
    if (!run_state.empty()) RemoveRunState(run_state);
    run_state.clear();
    StopFabric();
    if (eal_up) {
      rte_eal_cleanup();
      eal_up = false;
      // EAL leaves its runtime folder (config, fbarrays, ~2 MB of tmpfs) behind on every run.
      std::error_code ec;
      if (!eal_runtime_dir.empty()) std::filesystem::remove_all(eal_runtime_dir, ec);
    }
    for (const auto& h : hosts) {
      Status st = DeleteVethHost(h);
      if (!st.ok() && !quiet)
        std::fprintf(stderr, "rocefab live: cleanup: %s\n", st.message().c_str());
    }
    hosts.clear();
  }
};

struct PingJob {
  int from, to;
  pid_t pid = -1;
  std::string log;
  int count = 0;
};
struct TcpMeshJob {
  int from;
  std::vector<int> to;
  pid_t pid = -1;
  std::string log;
};
struct IperfJob {
  int from, to;
  int streams = 1;
  bool udp = false;
  int port = 0;
  pid_t server = -1, client = -1;
  std::string server_log, client_log;
};

// One real perftest run (rdma "app": "perftest"): the server in the `to` host's namespace, the
// client in the `from` host's, both on librocefab-verbs.so.
struct PerftestJob {
  size_t item = 0;  // index into the scenario's traffic
  int from = 0, to = 0;
  std::string program;
  std::vector<std::string> args;  // the client's command after the program name
  int port = 0;
  pid_t server = -1, client = -1;
  std::string server_log, client_log, server_nic, client_nic;
};

// The Debian perftest program of a built-in test: "ib_" + its name (ib_write_bw, ...).
std::string PerftestProgram(PerftestSpec::Test t) { return std::string("ib_") + PerftestName(t); }

// perftest's command line for a test: GID 0 (the host's RoCEv2 address), no CPU-frequency
// check, Gb/s reports; the item's size, iterations, QPs, TX depth, DSCP and ACK timeout.
std::vector<std::string> PerftestArgs(const PerftestSpec& p, int port) {
  const bool bw = !PerftestIsLatency(p.test);
  std::vector<std::string> a = {"-x",
                                "0",
                                "-F",
                                "-s",
                                std::to_string(p.size),
                                "-n",
                                std::to_string(p.iterations),
                                "-p",
                                std::to_string(port)};
  if (bw) {
    a.insert(a.end(),
             {"--report_gbits", "-q", std::to_string(p.qps), "-t", std::to_string(p.tx_depth)});
  }
  if (p.qp.dscp >= 0) a.push_back("--tclass=" + std::to_string(p.qp.dscp << 2));
  if (p.qp.timeout_exp >= 0) a.push_back("--qp-timeout=" + std::to_string(p.qp.timeout_exp));
  return a;
}

// The result line under perftest's table header (the first line of numbers after "#bytes"),
// into the keys the built-in app reports (Perftest::Result), plus the NIC counters the provider
// wrote at exit.
nlohmann::json ParsePerftest(const PerftestJob& j, const PerftestSpec& spec, const Topology& t) {
  nlohmann::json o = {{"test", PerftestName(spec.test)},
                      {"from", t.hosts[j.from].name},
                      {"to", t.hosts[j.to].name},
                      {"size", spec.size},
                      {"iterations", spec.iterations},
                      {"app", "perftest"},
                      {"program", j.program},
                      {"completed", false},
                      {"errors", 0}};
  std::string cmd = j.program;
  for (const auto& a : j.args) cmd += " " + a;
  o["command"] = cmd;
  std::ifstream in(j.client_log);
  std::string line;
  bool header = false;
  std::vector<double> v;
  while (std::getline(in, line)) {
    if (line.find("#bytes") != std::string::npos) {
      header = true;
      continue;
    }
    if (!header) continue;
    std::istringstream ls(line);
    double x;
    while (ls >> x) v.push_back(x);
    if (!v.empty()) break;
  }
  for (const auto& [key, path] :
       {std::pair{"nic", j.client_nic}, std::pair{"server_nic", j.server_nic}}) {
    std::ifstream f(path);
    if (!f) continue;
    try {
      o[key] = nlohmann::json::parse(f);
    } catch (const std::exception&) {
      o[key] = "unreadable: " + path;
    }
  }
  // When its NIC's first data packet left, in fabric time (the built-in app's key).
  if (o.contains("nic") && o["nic"].is_object()) {
    const auto t =
        o["nic"].value(nlohmann::json::json_pointer("/nic/rnic/first_data_tx_ps"), int64_t{-1});
    if (t >= 0) o["first_tx_at_us"] = static_cast<double>(t) / 1e6;
  }
  const bool bw = !PerftestIsLatency(spec.test);
  if ((bw && v.size() < 5) || (!bw && v.size() < 9)) {
    o["error"] = "no result line in " + j.client_log + " (see it for perftest's message)";
    return o;
  }
  o["completed"] = true;
  if (bw) {
    o["qps"] = spec.qps;
    o["bw_peak_gbps"] = v[2];
    o["bw_avg_gbps"] = v[3];
    o["msg_rate_mpps"] = v[4];
  } else {
    o["samples"] = static_cast<int64_t>(v[1]);
    o["t_min_us"] = v[2];
    o["t_max_us"] = v[3];
    o["t_typical_us"] = v[4];
    o["t_avg_us"] = v[5];
    o["t_stdev_us"] = v[6];
    o["t_p99_us"] = v[7];
    o["t_p999_us"] = v[8];
  }
  return o;
}

// The scenario's order for the "rdma" results (built-in and perftest): the first rdma item with
// the entry's test and hosts.
void SortRdmaResults(const Scenario& s, nlohmann::json* rdma) {
  auto order = [&](const nlohmann::json& r) {
    for (size_t i = 0; i < s.traffic.size(); ++i) {
      const auto& item = s.traffic[i];
      if (item.kind() == TrafficItem::Kind::kRdma && item.from == r["from"] && item.to == r["to"] &&
          PerftestName(item.perftest().test) == r["test"])
        return i;
    }
    return s.traffic.size();
  };
  std::stable_sort(
      rdma->begin(), rdma->end(),
      [&](const nlohmann::json& x, const nlohmann::json& y) { return order(x) < order(y); });
}

Status WaitListening(const std::string& ns, int port, const std::atomic<bool>& stop) {
  Status st = WaitTcpListening(ns, port, 5000, &stop);
  if (!st.ok()) {
    return Status::Error("the server in " + ns + " did not start listening on port " +
                         std::to_string(port) + ": " + st.message());
  }
  return Status();
}

nlohmann::json ParsePing(const PingJob& j, const Topology& t) {
  std::ifstream in(j.log);
  std::string line;
  std::vector<Time> rtt;
  std::vector<bool> answered(static_cast<size_t>(j.count) + 1, false);
  int64_t highest = 0;
  while (std::getline(in, line)) {
    // "64 bytes from 10.1.0.4: icmp_seq=7 ttl=62 time=0.061 ms": the first answer to each of
    // probes 1..count (not DUP!s, not the probes -w sent past count).
    const auto seq_pos = line.find("icmp_seq=");
    const auto pos = line.find("time=");
    if (seq_pos == std::string::npos || pos == std::string::npos) continue;
    // icmp_seq is 16 bits: unwrap it against the highest seen so far (replies come about in
    // order; counts past 65,535 wrap).
    const int64_t raw = std::strtol(line.c_str() + seq_pos + 9, nullptr, 10);
    int64_t seq = (highest & ~int64_t{0xffff}) + raw;
    if (seq + 0x8000 < highest) seq += 0x10000;
    highest = std::max(highest, seq);
    if (seq < 1 || seq > j.count || answered[static_cast<size_t>(seq)]) continue;
    answered[static_cast<size_t>(seq)] = true;
    rtt.push_back(
        static_cast<Time>(std::llround(std::stod(line.substr(pos + 5)) * 1e9)));  // ms->ps
  }
  return PingJson(t.hosts[j.from].name, t.hosts[j.to].name, j.count, std::move(rtt));
}

nlohmann::json ParseIperf(const IperfJob& j, const Topology& t) {
  nlohmann::json o = {{"from", t.hosts[j.from].name},
                      {"to", t.hosts[j.to].name},
                      {"streams", j.streams},
                      {"protocol", j.udp ? "udp" : "tcp"}};
  std::ifstream in(j.client_log);
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    auto r = nlohmann::json::parse(ss.str());
    if (r.contains("error")) {
      o["error"] = r["error"];
      return o;
    }
    const auto& end = r["end"];
    if (j.udp) {
      o["gbps"] = end["sum"]["bits_per_second"].get<double>() / 1e9;
      o["lost_percent"] = end["sum"].value("lost_percent", 0.0);
    } else {
      o["gbps"] = end["sum_received"]["bits_per_second"].get<double>() / 1e9;
      o["retransmits"] = end["sum_sent"].value("retransmits", 0LL);
      o["bytes_received"] = end["sum_received"].value("bytes", 0LL);
    }
    // When the test ran (Unix time, s): concurrent iperf3 clients start a little apart, so rates
    // of overlapping tests only add up over their common window.
    if (r.contains("start") && r["start"].contains("timestamp")) {
      o["start_unix_s"] = r["start"]["timestamp"].value("timesecs", 0LL);
    }
    o["seconds"] = (j.udp ? end["sum"] : end["sum_received"]).value("seconds", 0.0);
    o["completed"] = true;
  } catch (const std::exception& e) {
    o["error"] = std::string("cannot parse iperf3 output: ") + e.what();
  }
  return o;
}

// How long a traffic item the live run waits for takes from its start: pings and TCP Pingmesh
// probes their count times their interval, iperf3 its duration, a UDP flow its packets at its
// rate (or its duration), an RDMA Pingmesh its probes plus one timeout (at most 10 ms); the
// other NIC traffic reports when it is done instead (0).
Time ExpectedLength(const TrafficItem& item) {
  switch (item.kind()) {
    case TrafficItem::Kind::kPing:
      return item.ping().count * item.ping().interval;
    case TrafficItem::Kind::kTcpPingmesh:
      return item.tcp_pingmesh().count * item.tcp_pingmesh().interval;
    case TrafficItem::Kind::kIperf3:
      return item.iperf3().duration;
    case TrafficItem::Kind::kUdp: {
      const UdpTraffic& u = item.udp();
      return u.count > 0 ? TxTime(static_cast<int64_t>(u.count) * u.size, u.rate) : u.duration;
    }
    case TrafficItem::Kind::kPingmesh: {
      const PingmeshSpec& m = item.pingmesh();
      return m.count * m.interval + std::min(m.timeout, 10 * kMs);
    }
    case TrafficItem::Kind::kRdma:
    case TrafficItem::Kind::kWorkload:
      return 0;
  }
  return 0;
}

// Before anything is measured, one ping per pair that a ping item measures between namespace
// hosts, all at once: the hosts' and switches' ARP and MAC tables are then warm, so the first
// measured probe does not wait for ARP (it would be the p99 of a short run). Their children are
// left in session->children, reaped; their output is not a result.
Status WarmUpNeighbours(const Scenario& s, const std::function<std::string(int)>& ns_of,
                        const std::string& work, LiveSession* session,
                        const std::atomic<bool>& stop) {
  std::set<std::pair<int, int>> pairs;
  for (const auto& item : s.traffic) {
    if (item.kind() != TrafficItem::Kind::kPing) continue;
    for (auto [a, b] : ExpandPairs(item, s.topology)) {
      if (s.topology.hosts[a].kind == HostKind::kLinux) pairs.insert({a, b});
    }
  }
  for (auto [a, b] : pairs) {
    auto pid = SpawnCommand(
        InNamespace(ns_of(a),
                    {"ping", "-n", "-c", "1", "-W", "1", FormatIpv4(s.topology.hosts[b].ip)}),
        work + "/warmup-" + s.topology.hosts[a].name + "-" + s.topology.hosts[b].name + ".log");
    if (!pid.ok()) return pid.status();
    session->children.push_back(pid.value());
  }
  for (pid_t& p : session->children) {
    int status;
    while (p > 0 && !stop && !ChildExited(p, &status)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));  // child-exit polling
    }
    if (p > 0) p = -p;
  }
  return Status();
}

// The NICs of real programs (librocefab-verbs) run in the programs' own processes, outside the
// poll loop whose lateness timing.verdict judges; each writes its engine's lateness to its stats
// file ("nic"/"server_nic" of an rdma result). Folds them into timing by the fabric's rules: a
// NIC is faithful when its slips moved its wire schedule by no more than the tolerance in all,
// and at most timing.max_late_fraction of its received and sent frames were handled more than
// the tolerance late (p99.9, or p99 where the fraction is 1 % or more). timing.programs lists
// every such NIC; one that was not faithful makes the run NOT FAITHFUL and says which.
void FoldProgramNicTiming(nlohmann::json* summary) {
  nlohmann::json& timing = (*summary)["timing"];
  if (!timing.is_object() || !timing.contains("tolerance_us") || !summary->contains("rdma")) return;
  const double tol_us = timing.value("tolerance_us", 0.0);
  const char* pct = timing.value("max_late_fraction", 0.001) >= 0.01 ? "p99" : "p999";
  nlohmann::json programs = nlohmann::json::array();
  std::string late;  // the first unfaithful NIC, in words
  for (const auto& r : (*summary)["rdma"]) {
    for (const char* end : {"nic", "server_nic"}) {
      if (!r.contains(end) || !r[end].is_object() || !r[end].contains("port")) continue;
      const nlohmann::json& port = r[end]["port"];
      const double slipped_us = port.value("slipped_ps", 0.0) / 1e6;
      const double rx_us = port.contains("rx_late_us") ? port["rx_late_us"].value(pct, 0.0) : 0;
      const double tx_us = port.contains("tx_late_us") ? port["tx_late_us"].value(pct, 0.0) : 0;
      const uint64_t lost = port.value("rx_kernel_drops", uint64_t{0});
      const bool ok = slipped_us <= tol_us && rx_us <= tol_us && tx_us <= tol_us && lost == 0;
      const std::string who =
          r.value("program", std::string("?")) + " on " + r[end].value("host", std::string("?"));
      programs.push_back({{"nic", who},
                          {"slips", port.value("slips", uint64_t{0})},
                          {"slipped_us", slipped_us},
                          {std::string("rx_late_") + pct + "_us", rx_us},
                          {std::string("tx_late_") + pct + "_us", tx_us},
                          {"rx_kernel_drops", lost},
                          {"faithful", ok}});
      if (ok || !late.empty()) continue;
      char b[400];
      std::snprintf(
          b, sizeof b,
          "the NIC of %s (in the program's process) %s (allowed %.2f us; rx %s %.0f us, "
          "tx %s %.0f us, slipped %.0f us in %llu slip(s), %llu frame(s) lost in the kernel)",
          who.c_str(),
          lost > 0              ? "did not run for so long that its socket buffer overflowed"
          : slipped_us > tol_us ? "fell more than its catch-up window behind"
                                : "handled frames late",
          tol_us, pct, rx_us, pct, tx_us, slipped_us,
          static_cast<unsigned long long>(port.value("slips", uint64_t{0})),
          static_cast<unsigned long long>(lost));
      late = b;
    }
  }
  if (programs.empty()) return;
  timing["programs"] = programs;
  if (late.empty()) return;
  const std::string verdict = timing.value("verdict", std::string());
  if (timing.value("faithful", false)) {
    timing["verdict"] = "NOT FAITHFUL: " + late + "; the fabric's loop: " + verdict;
  } else {
    timing["verdict"] = verdict + "; also " + late;
  }
  timing["faithful"] = false;
}

// The CPU time the hypervisor took from this machine's CPUs so far, in USER_HZ ticks: the
// eighth value of /proc/stat's "cpu" line (steal); 0 where it cannot be read.
uint64_t StealTicks() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  uint64_t v[8] = {};
  if (!(in >> cpu) || cpu != "cpu") return 0;
  for (uint64_t& x : v) {
    if (!(in >> x)) return 0;
  }
  return v[7];
}

// timing.steal_ms: the CPU time the hypervisor took from this machine (all CPUs) between the
// fabric's time 0 and now. A VM whose host caps its CPU time stops all its vCPUs for up to the
// host's quota period (100 ms on the 2-vCPU CI VM, 2026-12-07: steal 550 ms in a 12 s
// perftest-100m run, its loop 100 ms late) once the fabric's poll thread and busy-polling
// programs use every vCPU; no thread of the run sees it as a preemption. An unfaithful verdict
// names it, so the user knows the machine, not the model, fell behind.
void AddStealTime(nlohmann::json* summary, uint64_t steal0) {
  nlohmann::json& timing = (*summary)["timing"];
  if (!timing.is_object()) return;
  const uint64_t now = StealTicks();
  const double ms = now >= steal0 ? static_cast<double>(now - steal0) * 1000.0 /
                                        static_cast<double>(sysconf(_SC_CLK_TCK))
                                  : 0.0;
  timing["steal_ms"] = ms;
  if (ms > 0 && !timing.value("faithful", true)) {
    char b[200];
    std::snprintf(b, sizeof b,
                  "; the hypervisor took %.0f ms of this machine's CPU time during the run "
                  "(steal time, /proc/stat)",
                  ms);
    timing["verdict"] = timing.value("verdict", std::string()) + b;
  }
}

}  // namespace

namespace {

// Starts the DPDK port of an external host (`name`: a PCI address or a vdev's name): one queue
// pair, promiscuous, link flow control off so 802.1Qbb frames reach the switch (devices that
// have none, such as net_tap, say ENOTSUP: fine).
Result<uint16_t> StartExternalPort(const std::string& name, rte_mempool* pool) {
  uint16_t pid;
  if (rte_eth_dev_get_port_by_name(name.c_str(), &pid) != 0) {
    return Result<uint16_t>::Error("DPDK device " + name +
                                   " was not found (PCI devices need a DPDK driver bound: "
                                   "docs/real-rnics.md)");
  }
  rte_eth_conf conf{};
  if (rte_eth_dev_configure(pid, 1, 1, &conf) != 0 ||
      rte_eth_rx_queue_setup(pid, 0, 1024, rte_eth_dev_socket_id(pid), nullptr, pool) != 0 ||
      rte_eth_tx_queue_setup(pid, 0, 1024, rte_eth_dev_socket_id(pid), nullptr) != 0 ||
      rte_eth_dev_start(pid) != 0) {
    return Result<uint16_t>::Error("cannot configure/start DPDK device " + name);
  }
  rte_eth_promiscuous_enable(pid);
  rte_eth_fc_conf fc{};
  if (rte_eth_dev_flow_ctrl_get(pid, &fc) == 0) {
    fc.mode = RTE_ETH_FC_NONE;
    rte_eth_dev_flow_ctrl_set(pid, &fc);
  }
  return pid;
}

}  // namespace

namespace {

// Interface counters (`ip -s -j link show DEV`, in namespace `ns` if not empty): drops and
// errors both ways, and the drops of its qdiscs (`tc -s -j qdisc show dev DEV`). Null when
// the interface is gone or the tools fail.
nlohmann::json KernelCounters(const std::string& ns, const std::string& dev) {
  auto run = [&](std::vector<std::string> cmd) -> nlohmann::json {
    if (!ns.empty()) cmd.insert(cmd.begin() + 1, {"-n", ns});
    auto out = RunCommand(cmd);  // no shell: names come from the scenario
    if (!out.ok()) return nullptr;
    try {
      return nlohmann::json::parse(out.value());
    } catch (const std::exception&) {
      return nullptr;
    }
  };
  const auto link = run({"ip", "-s", "-j", "link", "show", dev});
  if (!link.is_array() || link.empty() || !link[0].contains("stats64")) return nullptr;
  const auto& st = link[0]["stats64"];
  nlohmann::json j = {{"rx_packets", st["rx"].value("packets", uint64_t{0})},
                      {"tx_packets", st["tx"].value("packets", uint64_t{0})},
                      {"rx_dropped", st["rx"].value("dropped", 0)},
                      {"rx_errors", st["rx"].value("errors", 0)},
                      {"tx_dropped", st["tx"].value("dropped", 0)},
                      {"tx_errors", st["tx"].value("errors", 0)}};
  uint64_t qdrops = 0;
  const auto q = run({"tc", "-s", "-j", "qdisc", "show", "dev", dev});
  if (q.is_array()) {
    for (const auto& d : q) qdrops += d.value("drops", uint64_t{0});
  }
  j["qdisc_drops"] = qdrops;
  return j;
}

// The kernel's TCP counters in a namespace (nstat, absolute, history untouched), for the
// retransmissions that no frame loss explains: tail loss probes and spurious timeouts
// (retransmitted although nothing was lost), and the duplicates the receivers reported (DSACK).
// Null if nstat failed.
nlohmann::json TcpCounters(const std::string& ns) {
  auto out = RunCommand({"ip", "netns", "exec", ns, "nstat", "-asz", "--json"});
  if (!out.ok()) return nullptr;
  try {
    const auto k = nlohmann::json::parse(out.value()).at("kernel");
    auto get = [&](const char* name) { return k.value(name, uint64_t{0}); };
    return {{"retrans_segs", get("TcpRetransSegs")},
            {"timeouts", get("TcpExtTCPTimeouts")},
            {"spurious_rtos", get("TcpExtTCPSpuriousRTOs")},
            {"loss_probes", get("TcpExtTCPLossProbes")},
            {"loss_probe_recoveries", get("TcpExtTCPLossProbeRecovery")},
            {"dsack_received", get("TcpExtTCPDSACKRecv")}};
  } catch (const std::exception&) {
    return nullptr;
  }
}

// The DPDK port's own counters (rte_eth_stats): frames the device or PMD lost before the
// switch saw them (imissed, ierrors, rx_nombuf) and after it sent them (oerrors).
nlohmann::json EthdevCounters(uint16_t pid) {
  rte_eth_stats st{};
  if (rte_eth_stats_get(pid, &st) != 0) return nullptr;
  nlohmann::json j = {{"rx_packets", st.ipackets}, {"tx_packets", st.opackets},
                      {"rx_missed", st.imissed},   {"rx_errors", st.ierrors},
                      {"rx_nombuf", st.rx_nombuf}, {"tx_errors", st.oerrors}};
  // The driver's extended counters that are not zero (per-queue, ring and PMD-specific ones).
  const int n = rte_eth_xstats_get(pid, nullptr, 0);
  if (n > 0) {
    std::vector<rte_eth_xstat> xs(static_cast<size_t>(n));
    std::vector<rte_eth_xstat_name> names(static_cast<size_t>(n));
    if (rte_eth_xstats_get(pid, xs.data(), static_cast<unsigned>(n)) == n &&
        rte_eth_xstats_get_names(pid, names.data(), static_cast<unsigned>(n)) == n) {
      nlohmann::json x = nlohmann::json::object();
      for (int i = 0; i < n; ++i) {
        if (xs[i].value != 0) x[names[xs[i].id].name] = xs[i].value;
      }
      j["xstats"] = x;
    }
  }
  return j;
}

}  // namespace

int LiveLcores(int lcores, size_t tors, int cpus, std::string* note) {
  note->clear();
  const int per_tor = std::max<int>(static_cast<int>(tors), 1);
  if (lcores == 0) return std::clamp(std::min(per_tor, cpus - 1), 1, 64);
  if (lcores > per_tor) {
    *note = std::to_string(lcores) + " lcores asked for, " + std::to_string(per_tor) +
            " used: at most one per ToR";
    return per_tor;
  }
  return lcores;
}

Time LiveTimingTolerance(const Scenario& s) {
  if (s.live.timing_tolerance > 0) return s.live.timing_tolerance;
  BitRate fastest;
  for (const auto& l : s.topology.links) fastest = std::max(fastest, l.rate);
  if (fastest.bps() <= 0) fastest = 10 * kGbps;
  const int64_t roce = static_cast<int64_t>(s.nic.mtu) + kRoceMaxOverhead;
  return TxTime(WireBytes(std::max<int64_t>(roce, 1514)), fastest);
}

namespace {
// Whether a running process holds a lock on the EAL config file at `path`.
bool ConfigLocked(const std::string& path) {
  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return false;
  struct flock lk {};
  lk.l_type = F_WRLCK;
  lk.l_whence = SEEK_SET;
  const bool locked = fcntl(fd, F_GETLK, &lk) == 0 && lk.l_type != F_UNLCK;
  close(fd);
  return locked;
}
}  // namespace

StaleLiveRemoved CleanupStaleLive() {
  // Runs still alive (their state file's process exists) keep their namespaces; stale state
  // files go too.
  std::set<std::string> alive;
  for (const auto& st : ListRunStates()) {
    const std::string id = st.value("run_id", std::string());
    if (RunAlive(st)) {
      alive.insert(id);
    } else {
      RemoveRunState(id);
    }
  }
  // A state file a killed run was writing (WriteRunState's "<id>.json.tmp", before its rename).
  std::error_code tmp_ec;
  for (const auto& e : std::filesystem::directory_iterator(RunStateDir(), tmp_ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() == 15 && name.rfind("rf", 0) == 0 && name.substr(6) == ".json.tmp" &&
        !alive.count(name.substr(0, 6))) {
      std::filesystem::remove(e.path(), tmp_ec);
    }
  }
  StaleLiveRemoved n;
  for (const auto& ns : ListNetns("rf")) {
    // rocefab names are rfXXXX-<host>.
    if (ns.size() < 7 || ns[6] != '-' || alive.count(ns.substr(0, 6))) continue;
    // Processes still in it (a tool of the killed run) would keep it, and its veth, alive.
    auto pids = RunCommand({"ip", "netns", "pids", ns});
    if (pids.ok()) {
      std::istringstream in(pids.value());
      for (pid_t pid; in >> pid;) kill(pid, SIGKILL);
    }
    if (RunCommand({"ip", "netns", "del", ns}).ok()) ++n.namespaces;
  }
  // The root-namespace ends of their veths ("rfXXXXs<N>"): a namespace whose TCP sockets are
  // still in TIME_WAIT outlives `ip netns del` by a minute, and its veth pair with it.
  auto links = RunCommand({"ip", "-o", "link", "show"});
  if (links.ok()) {
    std::istringstream in(links.value());
    std::string line;
    while (std::getline(in, line)) {
      const auto colon = line.find(": ");
      if (colon == std::string::npos) continue;
      std::string dev = line.substr(colon + 2, line.find_first_of(":@", colon + 2) - colon - 2);
      if (dev.size() < 8 || dev.rfind("rf", 0) != 0 || dev[6] != 's' ||
          dev.find_first_not_of("0123456789", 7) != std::string::npos ||
          alive.count(dev.substr(0, 6)))
        continue;
      if (RunCommand({"ip", "link", "del", dev}).ok()) ++n.veths;
    }
  }
  // EAL runtime folders of killed runs (/var/run/dpdk/rfXXXX, rfXXXX-<switch> with --node),
  // unless a live run's state claims the id or a running DPDK primary still holds the write
  // lock EAL takes on its config file (how EAL itself tells that a primary is running).
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/var/run/dpdk", ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() < 6 || name.rfind("rf", 0) != 0 || alive.count(name.substr(0, 6))) continue;
    if (name.size() > 6 && name[6] != '-') continue;
    if (ConfigLocked((e.path() / "config").string())) continue;
    if (std::filesystem::remove_all(e.path(), ec) > 0) ++n.eal_folders;
  }
  // Tool logs of killed runs started without --out (/tmp/rfXXXX-logs).
  for (const auto& e : std::filesystem::directory_iterator("/tmp", ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() != 11 || name.rfind("rf", 0) != 0 || name.substr(6) != "-logs" ||
        name.find_first_not_of("0123456789abcdef", 2) < 6 || alive.count(name.substr(0, 6)) ||
        !e.is_directory(ec) || e.is_symlink(ec))
      continue;
    if (std::filesystem::remove_all(e.path(), ec) > 0) ++n.log_folders;
  }
  return n;
}

// One `rocefab live` run, step by step; every resource it creates is in session_, removed by its
// destructor whatever happened.
class LiveRun {
 public:
  LiveRun(const Scenario& s, const LiveRunOptions& opt) : s_(s), t_(s.topology), opt_(opt) {}

  Result<nlohmann::json> Run() {
    Status st = Check();
    if (st.ok()) st = Prepare();
    if (st.ok()) st = CreateHosts();
    if (opt_.processes) {
      if (st.ok()) st = StartSwitchProcesses();
    } else {
      if (st.ok()) st = StartPorts();
      if (st.ok()) st = BuildFabric();
    }
    if (st.ok() && !opt_.child_of_processes) st = PublishRunState();
    if (st.ok()) st = StartTraffic();
    if (st.ok()) st = StartTcpPingmesh();
    if (!st.ok()) return st;
    ReportTraffic();
    WaitForTraffic();
    return Results();
  }

 private:
  template <typename... A>
  void Say(const char* fmt, A... args) const {
    if (!opt_.quiet) {
      std::printf(fmt, args...);
      std::fflush(stdout);
    }
  }
  std::string NsOf(int h) const { return prefix_ + "-" + t_.hosts[h].name; }
  // Whether host h / switch i runs in this process (LiveRunOptions::node; the parent of
  // --processes runs no switch but owns every namespace).
  bool LocalHost(size_t h) const { return opt_.node.empty() || t_.hosts[h].tor == opt_.node; }
  bool LocalSwitch(size_t i) const {
    return !opt_.processes && (opt_.node.empty() || t_.switches[i].name == opt_.node);
  }

  // Root, the tools, a fabric that plans, and traffic the hosts can run; before creating anything.
  Status Check() {
    if (geteuid() != 0) {
      return Status::Error(
          "rocefab live needs root (network namespaces, veth pairs, raw sockets); "
          "run it with sudo, or use `rocefab sim` which needs no privileges");
    }
    for (const char* tool : {"ip", "ethtool", "ping", "iperf3", "ss", "setpriv"}) {
      if (!RunCommand({"sh", "-c", std::string("command -v ") + tool}).ok()) {
        return Status::Error(std::string("rocefab live needs `") + tool +
                             "`: run scripts/setup.sh");
      }
    }
    auto planr = PlanFabric(s_);  // fail before creating anything
    if (!planr.ok()) return planr.status();
    plan_ = std::move(planr).value();
    for (size_t i = 0; i < s_.traffic.size(); ++i) {
      const auto& item = s_.traffic[i];
      for (auto [a, b] : ExpandPairs(item, t_)) {
        if (t_.hosts[a].kind == HostKind::kExternal) {
          return Status::Error(
              TrafficPath(item, i) + ": " + t_.hosts[a].name + " is an external host (" +
              t_.hosts[a].device +
              "): rocefab runs nothing on it; send from a namespace or built-in host");
        }
      }
    }
    for (const auto& item : s_.traffic) {
      if (IsNicTraffic(item.kind())) continue;
      for (auto [a, b] : ExpandPairs(item, t_)) {
        if (item.kind() == TrafficItem::Kind::kIperf3 &&
            (t_.hosts[a].kind != HostKind::kLinux || t_.hosts[b].kind != HostKind::kLinux)) {
          return Status::Error("traffic: iperf3 needs Linux hosts at both ends (" +
                               t_.hosts[a].name + " -> " + t_.hosts[b].name + ")");
        }
      }
    }
    return Status();
  }

  // The run id, the logs folder, the signal handlers.
  Status Prepare() {
    char idbuf[8];
    std::snprintf(idbuf, sizeof idbuf, "%04x", static_cast<unsigned>(getpid()) & 0xFFFF);
    prefix_ = opt_.run_id.empty() ? std::string("rf") + idbuf : opt_.run_id;
    eal_prefix_ = opt_.node.empty() ? prefix_ : prefix_ + "-" + opt_.node;
    work_ = opt_.out_dir;
    if (work_.empty()) work_ = "/tmp/" + prefix_ + "-logs";
    std::error_code ec;
    std::filesystem::create_directories(work_, ec);
    if (ec) return Status::Error(work_ + ": " + ec.message());

    g_interrupted = false;
    struct sigaction sa {};
    sa.sa_handler = OnSignal;
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    if (opt_.child_of_processes) {
      g_usr1 = 0;
      struct sigaction go {};
      go.sa_handler = OnGo;
      sigaction(SIGUSR1, &go, nullptr);
      // The parent owns the namespaces and the end of the run: if it dies, so does this one.
      prctl(PR_SET_PDEATHSIG, SIGTERM);
      parent_ = getppid();
      if (parent_ == 1) return Status::Error("the --processes parent is gone");
    }

    session_.quiet = opt_.quiet;
    Say("rocefab live: %s: %zu switches, %zu hosts (run id %s)\n", s_.name.c_str(),
        t_.switches.size(), t_.hosts.size(), prefix_.c_str());
    if (opt_.quiet) {  // what a user needs while it runs, even with -q
      std::printf("rocefab live: run id %s (namespaces %s-<host>; dpdk-telemetry.py -f %s)\n",
                  prefix_.c_str(), prefix_.c_str(), prefix_.c_str());
      std::fflush(stdout);
    }
    // Claim the run id before creating anything: a `rocefab live --cleanup` meanwhile then
    // leaves this run's namespaces, veths and EAL folders alone (it removes those of runs whose
    // state is gone or whose process is dead). PublishRunState fills the hosts in later.
    if (!opt_.child_of_processes) return WriteStartingState();
    return Status();
  }

  Status WriteStartingState() {
    Status st = WriteRunState({{"run_id", prefix_},
                               {"pid", getpid()},
                               {"scenario", s_.name},
                               {"starting", true},
                               {"telemetry_prefix", prefix_},
                               {"hosts", nlohmann::json::array()}});
    if (st.ok()) session_.run_state = prefix_;
    return st;
  }

  // Namespaces and veth pairs for Linux hosts.
  Status CreateHosts() {
    host_vdev_.assign(t_.hosts.size(), -1);
    eal_ = {"-l",
            "0",
            "--no-pci",
            "--log-level=lib.eal:error",
            "--log-level=lib.telemetry:error",
            "--file-prefix",
            eal_prefix_};
    // One process per switch: no hugepages (a fabric's worth of processes would not fit in the
    // reservation, and memif copies every frame anyway). The multi-process channel stays on:
    // the memif PMD registers its actions on it.
    // EAL's memory: the pool (live.mbufs) and 128 MiB for the rest (rings, PMD queues, the
    // switches' route tables), at least the 256 MiB (512 without hugepages) it always had.
    const long need = PoolMiB(s_.live.mbufs) + 128;
    if (HugepagesUsable(std::max(need, 256L)) && opt_.node.empty()) {
      eal_.insert(eal_.end(), {"--huge-unlink", "-m", std::to_string(std::max(need, 256L))});
    } else {
      const long dflt = opt_.node.empty() ? 512 : 256;
      eal_.insert(eal_.end(), {"--no-huge", "-m", std::to_string(std::max(need, dflt))});
    }
    for (size_t i = 0; i < t_.hosts.size(); ++i) {
      if (t_.hosts[i].kind != HostKind::kLinux || !LocalHost(i)) continue;
      const auto& h = t_.hosts[i];
      const auto& tor = t_.switches[t_.SwitchIndex(h.tor)];
      VethHost vh;
      vh.netns = prefix_ + "-" + h.name;
      vh.switch_if = prefix_ + "s" + std::to_string(i);
      vh.mac = FormatMac(h.mac);
      vh.ip_cidr = FormatIpv4(h.ip) + "/" + std::to_string(tor.prefix_len);
      vh.gateway = FormatIpv4(tor.gateway());
      if (!opt_.child_of_processes) {  // else the parent created it and removes it
        session_.hosts.push_back(vh);  // registered first: cleaned up even if creation fails
        Status st = CreateVethHost(vh);
        if (!st.ok()) return st;
      }
      if (opt_.processes) continue;  // its switch process attaches to it
      const std::string drv = s_.live.port_driver == "af_xdp" ? "net_af_xdp" : "net_af_packet";
      std::string dev = drv + std::to_string(vdevs_) + ",iface=" + vh.switch_if;
      dev += s_.live.port_driver == "af_xdp" ? ",start_queue=0,queue_count=1,busy_budget=0"
                                             : ",qpairs=1,framesz=2048,blocksz=4096,framecnt=1024";
      eal_.insert(eal_.end(), {"--vdev", dev});
      host_vdev_[i] = vdevs_++;
      if (g_interrupted) return Status::Error("interrupted");
    }
    // External hosts: their devices join the EAL arguments (a PCI address is allowed in, a
    // virtual device is created).
    host_device_.assign(t_.hosts.size(), std::string());
    for (size_t i = 0; i < t_.hosts.size(); ++i) {
      if (t_.hosts[i].kind != HostKind::kExternal || !LocalHost(i) || opt_.processes) continue;
      const std::string& d = t_.hosts[i].device;
      if (IsPciAddress(d)) {
        eal_.erase(std::remove(eal_.begin(), eal_.end(), std::string("--no-pci")), eal_.end());
        eal_.insert(eal_.end(), {"-a", d});
        host_device_[i] = d;
      } else {
        eal_.insert(eal_.end(), {"--vdev", d});
        host_device_[i] = d.substr(0, d.find(','));
      }
      Say("  external host %s on DPDK device %s\n", t_.hosts[i].name.c_str(), d.c_str());
    }
    AddMemifPorts();
    if (opt_.processes) {
      Say("  created %zu namespace host(s) with veth pairs\n", session_.hosts.size());
    } else if (vdevs_ > 0) {
      Say("  %s %d namespace host(s) with veth pairs (%s ports)\n",
          opt_.child_of_processes ? "attached to" : "created", vdevs_, s_.live.port_driver.c_str());
    } else {
      Say("  no namespace hosts: every host is built in (rocefab's emulated NICs on the poll "
          "thread)\n");
    }
    return Status();
  }

  // One switch per process: each link to a switch of another process is a net_memif port, the
  // server the end whose switch comes first, its abstract socket named by run id and plan link.
  void AddMemifPorts() {
    link_memif_.assign(plan_.links.size(), -1);
    if (opt_.node.empty()) return;
    int k = 0;
    for (size_t li = 0; li < plan_.links.size(); ++li) {
      const auto& l = plan_.links[li];
      if (l.a.is_host || l.b.is_host || LocalSwitch(l.a.index) == LocalSwitch(l.b.index)) continue;
      eal_.insert(eal_.end(),
                  {"--vdev", "net_memif" + std::to_string(k) +
                                 ",role=" + (MemifClient(li) ? "client" : "server") +
                                 ",id=0,socket-abstract=yes,socket=" + MemifSocket(li)});
      link_memif_[li] = k++;
    }
    Say("  %d memif link(s) to the other switch processes\n", k);
  }
  // Whether this process is the memif client of plan link `link` (the server is the end whose
  // switch comes first in the topology).
  bool MemifClient(size_t link) const {
    const auto& l = plan_.links[link];
    return !LocalSwitch(static_cast<size_t>(std::min(l.a.index, l.b.index)));
  }
  std::string MemifSocket(size_t link) const {
    return "/rocefab/" + prefix_ + "/link" + std::to_string(link);
  }

  // Whether a process listens on the abstract unix socket `name` (/proc/net/unix lists it as
  // "@name").
  static bool Listening(const std::string& name) {
    std::ifstream in("/proc/net/unix");
    std::string line;
    while (std::getline(in, line)) {
      const auto at = line.find('@');
      if (at != std::string::npos && line.compare(at + 1, std::string::npos, name) == 0)
        return true;
    }
    return false;
  }

  // Starts the memif ports and waits until every one is connected (at most 30 s). A client
  // connects when it starts and does not retry, so each client port is started once its
  // server listens, and restarted while its link stays down.
  Status StartMemifPorts() {
    link_ethdev_.assign(plan_.links.size(), UINT16_MAX);
    const auto deadline = Clock::now() + std::chrono::seconds(30);
    std::vector<size_t> pending;
    for (size_t li = 0; li < plan_.links.size(); ++li) {
      if (link_memif_[li] >= 0) pending.push_back(li);
    }
    auto name_of = [&](size_t li) {
      return t_.switches[plan_.links[li].a.index].name + "-" +
             t_.switches[plan_.links[li].b.index].name;
    };
    // Servers first (they listen from EAL start-up on), then each client once its server does.
    while (!pending.empty()) {
      std::vector<size_t> waiting;
      for (size_t li : pending) {
        if (MemifClient(li) && !Listening(MemifSocket(li))) {
          waiting.push_back(li);
          continue;
        }
        auto pid = StartExternalPort("net_memif" + std::to_string(link_memif_[li]), pool_);
        if (!pid.ok()) return Status::Error(name_of(li) + ": " + pid.message());
        session_.ethdevs.push_back(pid.value());
        link_ethdev_[li] = pid.value();
      }
      pending = waiting;
      if (pending.empty()) break;
      if (g_interrupted) return Status::Error("interrupted");
      if (Clock::now() > deadline) {
        std::string names;
        for (size_t li : pending) names += (names.empty() ? "" : ", ") + name_of(li);
        return Status::Error("memif link(s) " + names + ": no switch process of run " + prefix_ +
                             " listens at the other end after 30 s");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));  // polls /proc/net/unix
    }
    // A server listens from EAL start-up on but refuses clients until its port has started: a
    // client still down after 200 ms connects again.
    for (int round = 1;; ++round) {
      std::string down;
      for (size_t li = 0; li < plan_.links.size(); ++li) {
        if (link_ethdev_[li] == UINT16_MAX) continue;
        rte_eth_link link{};
        rte_eth_link_get_nowait(link_ethdev_[li], &link);
        if (link.link_status == RTE_ETH_LINK_UP) continue;
        down += (down.empty() ? "" : ", ") + name_of(li);
        if (MemifClient(li) && round % 40 == 0) {
          rte_eth_dev_stop(link_ethdev_[li]);
          if (rte_eth_dev_start(link_ethdev_[li]) != 0)
            return Status::Error(name_of(li) + ": cannot restart its memif port");
        }
      }
      if (down.empty()) return Status();
      if (g_interrupted) return Status::Error("interrupted");
      if (Clock::now() > deadline)
        return Status::Error("memif link(s) " + down + " not up after 30 s (run id " + prefix_ +
                             ")");
      std::this_thread::sleep_for(std::chrono::milliseconds(5));  // link-state polling
    }
  }

  // EAL, pool, ethdev ports. EAL pins this thread (and so every thread it starts later) to
  // lcore 0's CPU: the CPUs the process may use are taken first, for the poll threads.
  Status StartPorts() {
    cpus_ = AllowedCpus();
    Status st = InitEal(eal_);
    if (!st.ok()) return st;
    session_.eal_up = true;
    session_.eal_runtime_dir = rte_eal_get_runtime_dir();
    auto pool = CreatePktPool("livepool", s_.live.mbufs);
    if (!pool.ok()) {
      return Status::Error(pool.message() + " (live.mbufs = " + std::to_string(s_.live.mbufs) +
                           ": about " + std::to_string(PoolMiB(s_.live.mbufs)) +
                           " MiB of EAL memory; lower it or free memory/hugepages)");
    }
    pool_ = pool.value();
    host_ethdev_.assign(t_.hosts.size(), UINT16_MAX);
    for (size_t i = 0; i < t_.hosts.size(); ++i) {
      if (host_vdev_[i] < 0) continue;
      const std::string name = (s_.live.port_driver == "af_xdp" ? "net_af_xdp" : "net_af_packet") +
                               std::to_string(host_vdev_[i]);
      uint16_t pid;
      if (rte_eth_dev_get_port_by_name(name.c_str(), &pid) != 0) {
        return Status::Error("DPDK port " + name + " was not created (is the PMD installed?)");
      }
      rte_eth_conf conf{};
      if (rte_eth_dev_configure(pid, 1, 1, &conf) != 0 ||
          rte_eth_rx_queue_setup(pid, 0, 1024, rte_eth_dev_socket_id(pid), nullptr, pool_) != 0 ||
          rte_eth_tx_queue_setup(pid, 0, 1024, rte_eth_dev_socket_id(pid), nullptr) != 0 ||
          rte_eth_dev_start(pid) != 0) {
        return Status::Error("cannot configure/start DPDK port " + name);
      }
      rte_eth_promiscuous_enable(pid);
      session_.ethdevs.push_back(pid);
      host_ethdev_[i] = pid;
    }
    for (size_t i = 0; i < t_.hosts.size(); ++i) {
      if (host_device_[i].empty()) continue;
      auto pid = StartExternalPort(host_device_[i], pool_);
      if (!pid.ok()) return Status::Error(t_.hosts[i].name + ": " + pid.message());
      session_.ethdevs.push_back(pid.value());
      host_ethdev_[i] = pid.value();
    }
    return StartMemifPorts();
  }

  // --processes: one `rocefab live --node SW` per switch (switch_processes.h), started
  // together once every memif link is up; that instant is the fabric's time 0 here.
  Status StartSwitchProcesses() {
    cpus_ = AllowedCpus();
    char exe[4096];
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return Status::Error("cannot find the rocefab binary (/proc/self/exe)");
    SwitchProcesses::Options so;
    so.exe.assign(exe, static_cast<size_t>(n));
    so.scenario_path = opt_.scenario_path;
    // More switch processes than CPUs: their poll threads take turns on the CPUs, and one that
    // spins for busy_poll after each frame holds its CPU for the scheduler's whole time slice
    // while the others' frames wait (quickstart-rdma at 10 Mb/s, 4 processes on 2 CPUs: RDMA
    // latency 3.6-4.8 ms and never faithful at 2 ms, 0.73-0.86 ms and faithful at 10-50 us).
    // So they back off sooner, unless the scenario sets its own (--set wins: it comes later).
    const LiveOptions defaults;
    if (t_.switches.size() >= cpus_.size() && s_.live.busy_poll == defaults.busy_poll &&
        s_.live.max_sleep == defaults.max_sleep) {
      so.sets = {"live.busy_poll=50us", "live.max_sleep=100us"};
      Say("  %zu switch processes on %zu CPUs: they share CPUs, so they poll 50 us after the last "
          "work, not %s (live.busy_poll)\n",
          t_.switches.size(), cpus_.size(), FormatDuration(defaults.busy_poll).c_str());
    }
    so.sets.insert(so.sets.end(), opt_.sets.begin(), opt_.sets.end());
    so.run_id = prefix_;
    so.dir = work_ + "/nodes";
    so.metrics = opt_.metrics_port >= 0;
    Status st = switch_procs_.Start(t_, so);
    if (!st.ok()) return st;
    st = switch_procs_.WaitReady(std::chrono::seconds(60), g_interrupted);
    if (!st.ok()) return st;
    // Time 0 a little ahead, so that every process has started its nodes by then.
    t0_ = Clock::now() + std::chrono::milliseconds(100);
    steal0_ = StealTicks();
    st = switch_procs_.Go(t0_);
    if (!st.ok()) return st;
    Say("  fabric up: %zu switch processes (logs and results in %s/<switch>), memif links "
        "between them\n",
        switch_procs_.size(), so.dir.c_str());
    return opt_.metrics_port >= 0 ? StartMergedMetrics() : Status();
  }

  // --processes --metrics-port N: each switch process serves its own switch on a free port;
  // the parent serves them as one exposition on N, scraping them at each scrape of its own.
  Status StartMergedMetrics() {
    auto ports = switch_procs_.MetricsPorts();
    if (!ports.ok()) return ports.status();
    auto m =
        MetricsServer::Start(static_cast<uint16_t>(opt_.metrics_port), [ports = ports.value()] {
          std::vector<NodeExposition> nodes;
          for (const auto& [node, port] : ports) {
            auto text = ScrapeMetrics(port, kSec);
            nodes.push_back({node, text.ok(), text.ok() ? text.value() : std::string()});
          }
          return MergeExpositions(nodes);
        });
    if (!m.ok()) return m.status();
    session_.metrics = std::move(m).value();
    SayMetricsUrl();
    return Status();
  }

  // Printed with -q too: the endpoint is what a quiet run is watched through.
  void SayMetricsUrl() const {
    std::printf("  metrics: http://127.0.0.1:%u/metrics (Prometheus text format)\n",
                static_cast<unsigned>(session_.metrics->port()));
    std::fflush(stdout);
  }

  // Nodes and links: the same builder as the sim (fabric/fabric.h); namespace hosts are
  // bound to their ToR port through their ethdev.
  Status BuildFabric() {
    LiveRunnerOptions lo;
    lo.busy_poll = s_.live.busy_poll;
    lo.max_sleep = s_.live.max_sleep;
    lo.tolerance = LiveTimingTolerance(s_);
    lo.max_late_fraction = s_.live.max_late_fraction;
    lo.catch_up = std::max<Time>(50 * kUs, 2 * lo.tolerance);
    lo.cpus = cpus_;
    if (!opt_.node.empty() && !cpus_.empty()) {
      // One switch per process: the switches' poll threads spread over the CPUs, by switch.
      const auto k = static_cast<size_t>(t_.SwitchIndex(opt_.node)) % cpus_.size();
      std::rotate(lo.cpus.begin(), lo.cpus.begin() + static_cast<long>(k), lo.cpus.end());
    }
    session_.runner = std::make_unique<LiveRunner>(pool_, lo);
    runner_ = session_.runner.get();
    FabricOptions fo;
    fo.runner = "live";
    fo.linux_hosts_as_nodes = false;
    // Frames between the fabric's own NICs carry no ICRC until they are shown (captures) or
    // leave the process (an ethdev port: LiveRunner finalizes it there), as in the sim: a
    // receiving NIC checks every frame from a real port. About 7 % of a saturated poll
    // thread's time was the ICRC computed and checked on every data frame (perf, 2026-12-07).
    fo.defer_icrc = true;
    // This thread asks whether the traffic is done; the poll threads own it. A switch process
    // runs until it is stopped (its tests' other ends are in other processes).
    fo.publish_done = opt_.node.empty();
    fo.attach_host = [&](int host, uint32_t sw_node, uint16_t sw_port, BitRate rate) {
      return runner_->AttachEthdev(sw_node, sw_port, host_ethdev_[host], rate);
    };
    fo.only_switch = opt_.node;
    fo.attach_remote = [&](size_t link, uint32_t sw_node, uint16_t sw_port, BitRate rate) {
      // memif copies a frame across at once: the runner emulates the link's wire.
      return runner_->AttachEthdev(sw_node, sw_port, link_ethdev_[link], rate,
                                   plan_.links[link].delay);
    };
    auto fab = Fabric::Build(s_, runner_, fo);
    if (!fab.ok()) return fab.status();
    session_.fabric = std::move(fab).value();
    fabric_ = session_.fabric.get();
    if (!opt_.out_dir.empty()) {
      Status st = fabric_->OpenOutputs(opt_.out_dir, /*buffer_timeseries=*/true);
      if (!st.ok()) return st;
    }
    for (size_t i = 0; i < fabric_->num_switches(); ++i) {
      // A switch process (--node) runs only its own switch; the others' are not its to show.
      if (!opt_.node.empty() && fabric_->sw(i).name() != opt_.node) continue;
      session_.telemetry_switches.push_back(&fabric_->sw(i));
    }
    AttachLiveTelemetry(&session_.telemetry_switches, pool_);
    if (opt_.metrics_port >= 0) {
      const LiveRunner* runner = runner_;
      rte_mempool* pool = pool_;
      const std::vector<SwitchNode*>* sws = &session_.telemetry_switches;
      const std::string node = opt_.node;
      auto m = MetricsServer::Start(static_cast<uint16_t>(opt_.metrics_port), [=] {
        FabricGauges g;
        g.now = std::max<Time>(runner->ClockNow(), 0);
        g.mbufs_in_use = rte_mempool_in_use_count(pool);
        g.mbufs_size = pool->size;
        g.node = node;
        return PrometheusText(*sws, g);
      });
      if (!m.ok()) return m.status();
      session_.metrics = std::move(m).value();
      SayMetricsUrl();
    }
    std::string lcore_note;
    lcores_ = LiveLcores(opt_.lcores >= 0 ? opt_.lcores : s_.live.lcores, fabric_->num_tors(),
                         std::max<int>(static_cast<int>(cpus_.size()), 1), &lcore_note);
    if (!opt_.node.empty() && lcores_ > 1) {
      // One switch per process: its slice is one partition (PlanPartitions plans the whole
      // fabric's nodes, of which this runner has only its own).
      lcore_note = "one poll thread per switch process (--node): --lcores " +
                   std::to_string(lcores_) + " not used";
      lcores_ = 1;
    }
    if (!lcore_note.empty()) Say("  %s\n", lcore_note.c_str());
    if (lcores_ > 1) {
      // The same split as the sim's threads; the observers run while every lcore is parked.
      const auto part_of_node =
          fabric_->PlanPartitions(lcores_, LiveRunner::kObserver, runner_->num_nodes(), &lcores_);
      Status st = runner_->SetPartitions(part_of_node);
      if (!st.ok()) return st;
    }
    // A fabric of in-process nodes only ends as the sim does, at duration + 10 ms of its own
    // time, exactly (its counters then match the sim's); one with ethdev ports by the clock.
    fabric_end_ = s_.duration + kDrain;
    exact_end_ = runner_->StopAt(fabric_end_).ok();
    if (opt_.child_of_processes) {
      // Ready (every memif link up); time 0 comes from the parent, for all switches at once.
      nlohmann::json ready = {{"pid", getpid()}};
      if (session_.metrics) ready["metrics_port"] = session_.metrics->port();
      // Written whole, then renamed: the parent reads it as soon as it exists.
      Status st = WriteJsonFile(work_ + "/ready.tmp", ready);
      if (!st.ok()) return st;
      std::error_code ec;
      std::filesystem::rename(work_ + "/ready.tmp", work_ + "/ready", ec);
      if (ec) return Status::Error(work_ + "/ready: " + ec.message());
      while (g_usr1 < 1 && !g_interrupted)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));  // waits for SIGUSR1
      if (g_interrupted) return Status::Error("interrupted before the start");
      std::ifstream go(work_ + "/go");
      nlohmann::json g;
      try {
        g = nlohmann::json::parse(go);
      } catch (const std::exception& e) {
        return Status::Error(work_ + "/go: " + e.what());
      }
      runner_->StartAt(
          Clock::time_point(std::chrono::nanoseconds(g.value("steady_ns", int64_t{0}))));
    }
    session_.loop = std::thread([&] { runner_->Loop(session_.stop_loop); });
    Say("  fabric up: %zu switches polling on %d thread(s); timing tolerance %s; telemetry: "
        "dpdk-telemetry.py -f %s (/rocefab/switches, /rocefab/ports,<switch>)\n",
        fabric_->num_switches(), lcores_, FormatDuration(lo.tolerance).c_str(), prefix_.c_str());
    for (const auto& n : fabric_->notes()) Say("  note: %s\n", n.c_str());
    return Status();
  }

  // The tools run in namespaces under `setpriv --pdeathsig KILL` (util-linux): a run killed
  // with SIGKILL takes them with it instead of leaving them spinning in a removed namespace.
  // One ping pair in a's namespace towards b; its log under work_.
  Status SpawnPing(const TrafficItem& item, int a, int b, const std::string& dst) {
    const PingTraffic& g = item.ping();
    PingJob j{a, b};
    j.count = g.count;
    j.log = work_ + "/ping-" + t_.hosts[a].name + "-" + t_.hosts[b].name + ".log";
    // -w: without a deadline iputils ping stops waiting max(2 x its largest RTT, interval) after
    // its last probe, so a last reply that arrives (or that ping is scheduled to read) later
    // than that counts as lost, which a loaded 2-vCPU machine does now and then. With one, ping
    // waits for every reply, sending probes past `count` meanwhile; ParsePing counts only the
    // answers to probes 1..count. The deadline is the probes' time plus a second at least.
    const int64_t deadline_s = (static_cast<int64_t>(g.count) * g.interval + 2 * kSec - 1) / kSec;
    auto pid =
        SpawnCommand(InNamespace(NsOf(a), {"ping", "-n", "-c", std::to_string(g.count), "-i",
                                           Seconds(g.interval), "-s", std::to_string(g.size), "-W",
                                           "1", "-w", std::to_string(deadline_s), dst}),
                     j.log);
    if (!pid.ok()) return pid.status();
    j.pid = pid.value();
    session_.children.push_back(j.pid);
    pings_.push_back(j);
    return Status();
  }

  // One iperf3 run, the server in b's namespace on the next port, the client in a's.
  Status SpawnIperf(const TrafficItem& item, int a, int b, const std::string& dst, int* port) {
    IperfJob j{a, b};
    j.udp = item.kind() == TrafficItem::Kind::kUdp;
    j.streams = j.udp ? 1 : item.iperf3().streams;
    j.port = (*port)++;
    const std::string tag =
        t_.hosts[a].name + "-" + t_.hosts[b].name + "-" + std::to_string(j.port);
    j.server_log = work_ + "/iperf3-server-" + tag + ".log";
    j.client_log = work_ + "/iperf3-client-" + tag + ".json";
    auto srv = SpawnCommand(
        InNamespace(NsOf(b), {"iperf3", "-s", "-1", "-p", std::to_string(j.port)}), j.server_log);
    if (!srv.ok()) return srv.status();
    j.server = srv.value();
    session_.children.push_back(j.server);
    Status st = WaitListening(NsOf(b), j.port, g_interrupted);
    if (!st.ok()) return st;
    Time dur = j.udp ? item.udp().duration : item.iperf3().duration;
    std::vector<std::string> cmd = InNamespace(
        NsOf(a),
        {"iperf3", "-c", dst, "-p", std::to_string(j.port), "-J", "-P", std::to_string(j.streams)});
    if (j.udp) {
      const UdpTraffic& u = item.udp();
      if (u.count > 0) dur = TxTime(static_cast<int64_t>(u.count) * u.size, u.rate);
      cmd.insert(cmd.end(),
                 {"-u", "-b", std::to_string(u.rate.bps()), "-l", std::to_string(u.size)});
    }
    cmd.insert(cmd.end(), {"-t", Seconds(std::max<Time>(dur, kSec))});
    auto cli = SpawnCommand(cmd, j.client_log);
    if (!cli.ok()) return cli.status();
    j.client = cli.value();
    session_.children.push_back(j.client);
    iperfs_.push_back(j);
    return Status();
  }

  // The run's state file (run_state.h), for rocefab inspect/exec/destroy while it runs.
  Status PublishRunState() {
    nlohmann::json hosts = nlohmann::json::array();
    for (size_t i = 0; i < t_.hosts.size(); ++i) {
      const auto& h = t_.hosts[i];
      hosts.push_back({{"name", h.name},
                       {"kind", HostKindName(h.kind)},
                       {"ip", FormatIpv4(h.ip)},
                       {"mac", FormatMac(h.mac)},
                       {"tor", h.tor},
                       {"netns", h.kind == HostKind::kLinux ? NsOf(static_cast<int>(i)) : ""}});
    }
    const nlohmann::json state = {
        {"run_id", prefix_},
        {"pid", getpid()},
        {"scenario", s_.name},
        // What a verbs program started with `rocefab exec` builds its NIC from (the same
        // scenario and overrides through the same plan): verbs/provider.cc.
        {"scenario_path", opt_.scenario_path.empty()
                              ? std::string()
                              : std::filesystem::absolute(opt_.scenario_path).string()},
        {"sets", opt_.sets},
        {"started_at",
         std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
             .count()},
        {"telemetry_prefix", prefix_},
        {"hosts", hosts}};
    Status st = WriteRunState(state);
    if (!st.ok()) return st;
    session_.run_state = prefix_;
    return Status();
  }

  // Traffic from Linux hosts, each item at its start offset.
  Status StartTraffic() {
    if (!opt_.node.empty()) {  // a switch process runs no namespace tools
      t0_ = runner_->WaitEpoch();
      steal0_ = StealTicks();
      return Status();
    }
    int port = 5201;
    int perftest_port = 18515;
    auto ns_of = [this](int h) { return NsOf(h); };
    Status st = WarmUpNeighbours(s_, ns_of, work_, &session_, g_interrupted);
    if (!st.ok()) return st;
    if (!session_.children.empty())
      Say("  warmed up ARP and MAC tables: one ping per measured pair\n");
    session_.children.clear();
    // Time 0 of the fabric: start offsets and the run's end count from it, as in the sim (the
    // loop started before the warm-up, and its nodes' Start may take tens of milliseconds).
    // With --processes it is the instant the switch processes were started together.
    if (!opt_.processes) {
      t0_ = runner_->WaitEpoch();
      steal0_ = StealTicks();
    }
    std::vector<size_t> order(s_.traffic.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t x, size_t y) { return s_.traffic[x].start < s_.traffic[y].start; });
    // Items run in phases by start time: a phase begins once its start offset has passed and the
    // tools of the earlier phase have exited (tool start-up takes milliseconds, so offsets alone
    // would let a ping phase overlap the bulk phase after it).
    Time phase_start = -1;
    auto wait_children = [&] {
      for (pid_t& p : session_.children) {
        int status;
        while (p > 0 && !g_interrupted && !ChildExited(p, &status)) {
          std::this_thread::sleep_for(std::chrono::milliseconds(2));  // child-exit polling
        }
        if (p > 0 && !g_interrupted) p = -p;
      }
    };
    for (size_t oi : order) {
      const auto& item = s_.traffic[oi];
      if (item.start != phase_start) {
        wait_children();
        phase_start = item.start;
      }
      while (Clock::now() - t0_ < std::chrono::nanoseconds(item.start / kNs) && !g_interrupted) {
        std::this_thread::sleep_for(
            std::chrono::milliseconds(1));  // wall-clock schedule, not a wait
      }
      if (g_interrupted) break;
      if (item.kind() == TrafficItem::Kind::kRdma &&
          item.perftest().app == PerftestSpec::App::kPerftest) {
        Status st = SpawnPerftest(oi, &perftest_port);
        if (!st.ok()) return st;
        continue;
      }
      if (IsNicTraffic(item.kind())) continue;
      for (auto [a, b] : ExpandPairs(item, t_)) {
        if (t_.hosts[a].kind != HostKind::kLinux) continue;
        const std::string dst = FormatIpv4(t_.hosts[b].ip);
        if (item.kind() == TrafficItem::Kind::kTcpPingmesh) continue;  // spawned per source below
        const Status spawned = item.kind() == TrafficItem::Kind::kPing
                                   ? SpawnPing(item, a, b, dst)
                                   : SpawnIperf(item, a, b, dst, &port);
        if (!spawned.ok()) return spawned;
      }
    }
    return Status();
  }

  // A real perftest run between two namespace hosts on librocefab-verbs.so: the server first,
  // the client once the server listens on its port (perftest's out-of-band TCP exchange crosses
  // the fabric like any TCP).
  Status SpawnPerftest(size_t item_index, int* port) {
    const TrafficItem& item = s_.traffic[item_index];
    const PerftestSpec& spec = item.perftest();
    PerftestJob j;
    j.item = item_index;
    j.from = t_.HostIndex(item.from);
    j.to = t_.HostIndex(item.to);
    j.program = PerftestProgram(spec.test);
    j.port = (*port)++;
    const std::string lib = VerbsProviderPath();
    if (lib.empty()) {
      return Status::Error(TrafficPath(item, item_index) +
                           ": app perftest needs librocefab-verbs.so next to the rocefab "
                           "binary (built when libibverbs-dev is installed: scripts/setup.sh)");
    }
    const std::string scenario =
        opt_.scenario_path.empty() ? "" : std::filesystem::absolute(opt_.scenario_path).string();
    const std::string tag = item.from + "-" + item.to + "-" + std::to_string(j.port);
    j.server_log = work_ + "/perftest-server-" + tag + ".log";
    j.client_log = work_ + "/perftest-client-" + tag + ".log";
    j.server_nic = work_ + "/perftest-server-" + tag + ".nic.json";
    j.client_nic = work_ + "/perftest-client-" + tag + ".nic.json";
    j.args = PerftestArgs(spec, j.port);
    auto command = [&](int host, const std::string& nic, bool client) {
      std::vector<std::string> c = InNamespace(NsOf(host), {"env"});
      for (const auto& kv : VerbsEnv(lib, scenario, opt_.sets, t_.hosts[host].name)) {
        c.push_back(kv);
      }
      c.push_back("ROCEFAB_VERBS_STATS=" + nic);
      c.push_back("ROCEFAB_VERBS_QPN_BASE=" + std::to_string(QpnBase(item_index, host)));
      c.push_back(j.program);
      c.insert(c.end(), j.args.begin(), j.args.end());
      if (client) c.push_back(FormatIpv4(t_.hosts[j.to].ip));
      return c;
    };
    auto srv = SpawnCommand(command(j.to, j.server_nic, false), j.server_log);
    if (!srv.ok()) return srv.status();
    j.server = srv.value();
    session_.children.push_back(j.server);
    Status st = WaitListening(NsOf(j.to), j.port, g_interrupted);
    if (!st.ok())
      return Status::Error(j.program + ": " + st.message() + " (see " + j.server_log + ")");
    auto cli = SpawnCommand(command(j.from, j.client_nic, true), j.client_log);
    if (!cli.ok()) return cli.status();
    j.client = cli.value();
    session_.children.push_back(j.client);
    perftests_.push_back(j);
    return Status();
  }

  // The QPs host `host` had before traffic item `item` in the sim, where every rdma item's
  // built-in app creates its QPs in scenario order (one per latency test, `qps` per bandwidth
  // test, at each end): the QPNs a perftest run gets are then the sim's, and so are its UDP
  // source ports.
  uint32_t QpnBase(size_t item, int host) const {
    uint32_t n = 0;
    for (size_t i = 0; i < item; ++i) {
      const TrafficItem& x = s_.traffic[i];
      if (x.kind() != TrafficItem::Kind::kRdma) continue;
      if (t_.HostIndex(x.from) != host && t_.HostIndex(x.to) != host) continue;
      n += static_cast<uint32_t>(PerftestQps(x.perftest()));
    }
    return n;
  }

  nlohmann::json PerftestResults() const {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& j : perftests_) {
      out.push_back(ParsePerftest(j, s_.traffic[j.item].perftest(), t_));
    }
    return out;
  }

  // TCP Pingmesh: an echo server in every Linux host, then one prober per source host.
  Status StartTcpPingmesh() {
    if (!opt_.node.empty()) return Status();
    const std::string mesh_tool = std::string(ROCEFAB_SOURCE_DIR) + "/scripts/tcp_pingmesh.py";
    for (const auto& item : s_.traffic) {
      if (item.kind() != TrafficItem::Kind::kTcpPingmesh || g_interrupted) continue;
      std::map<int, std::vector<int>> by_src;
      std::set<int> servers;
      for (auto [a, b] : ExpandPairs(item, t_)) {
        if (t_.hosts[a].kind != HostKind::kLinux || t_.hosts[b].kind != HostKind::kLinux) continue;
        by_src[a].push_back(b);
        servers.insert(b);
      }
      for (int b : servers) {
        auto srv =
            SpawnCommand(InNamespace(NsOf(b), {"/usr/bin/python3", mesh_tool, "serve", "5999"}),
                         work_ + "/tcp-pingmesh-server-" + t_.hosts[b].name + ".log");
        if (!srv.ok()) return srv.status();
        session_.background.push_back(srv.value());
      }
      for (auto& [a, dsts] : by_src) {
        TcpMeshJob j{a, dsts};
        j.log = work_ + "/tcp-pingmesh-" + t_.hosts[a].name + ".json";
        std::vector<std::string> cmd = InNamespace(
            NsOf(a),
            {"/usr/bin/python3", mesh_tool, "probe", "5999", Seconds(item.tcp_pingmesh().interval),
             std::to_string(item.tcp_pingmesh().count), std::to_string(item.tcp_pingmesh().size)});
        for (int b : dsts) cmd.push_back(FormatIpv4(t_.hosts[b].ip));
        auto pid = SpawnCommand(cmd, j.log);
        if (!pid.ok()) return pid.status();
        j.pid = pid.value();
        session_.children.push_back(j.pid);
        meshes_.push_back(j);
      }
    }
    return Status();
  }

  // What runs where: tools in the namespaces, the rest on the emulated hosts of the poll thread.
  void ReportTraffic() const {
    if (fabric_ == nullptr) {  // --processes: the emulated hosts are in the switch processes
      Say("  traffic started: namespaces: %zu ping pair(s), %zu iperf3 run(s), %zu TCP pingmesh "
          "prober(s); emulated hosts' traffic in the switch processes\n",
          pings_.size(), iperfs_.size(), meshes_.size());
      return;
    }
    {
      // What runs where: tools in the namespaces, the rest on the emulated hosts of the poll
      // thread.
      size_t node_pings = 0, node_flows = fabric_->flow_info().size();
      for (size_t h = 0; h < fabric_->num_hosts(); ++h) {
        if (fabric_->host(h) != nullptr) node_pings += fabric_->host(h)->pings().size();
      }
      const RdmaTraffic& rd = *fabric_->rdma();
      Say("  traffic started: namespaces: %zu ping pair(s), %zu iperf3 run(s), %zu TCP pingmesh "
          "prober(s); emulated hosts: %zu ping(s), %zu UDP flow(s), %zu RDMA test(s)%s%s\n",
          pings_.size(), iperfs_.size(), meshes_.size(), node_pings, node_flows, rd.num_perftests(),
          rd.workload() ? ", a flow workload" : "",
          s_.traffic.end() != std::find_if(s_.traffic.begin(), s_.traffic.end(),
                                           [](const TrafficItem& i) {
                                             return i.kind() == TrafficItem::Kind::kPingmesh;
                                           })
              ? ", RDMA Pingmesh"
              : "");
    }
  }

  // Wait for the traffic (children exit) or the timeout / a signal.
  // A switch process (--node): until SIGTERM or Ctrl-C (its parent's or the user's), which ends
  // it as a hold does (its results stand).
  void WaitUntilStopped() {
    if (!opt_.child_of_processes) {
      std::printf("  switch %s of run %s up until SIGTERM or Ctrl-C\n", opt_.node.c_str(),
                  prefix_.c_str());
      std::fflush(stdout);
    }
    while (!g_interrupted) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    g_interrupted = false;
    session_.StopLoop();
  }

  // Whether emulated hosts send anything (their traffic ends at the duration plus the drain).
  bool HasEmulatedTraffic() const {
    for (const auto& item : s_.traffic) {
      if (IsNicTraffic(item.kind())) return true;
      for (auto [a, b] : ExpandPairs(item, t_)) {
        if (t_.hosts[a].kind == HostKind::kBuiltin) return true;
      }
    }
    return false;
  }

  // --hold: the fabric stays up after its traffic until the hold ends, `rocefab destroy`,
  // Ctrl-C or SIGTERM (or, with --processes, a switch process dies).
  void Hold() {
    const bool forever = opt_.hold == kTimeNever;
    // Not quiet-only: whoever holds a fabric needs to know how to reach and end it.
    std::printf(
        "  holding the fabric %s%s: rocefab inspect %s; rocefab exec %s HOST -- CMD; "
        "rocefab destroy %s (or Ctrl-C)\n",
        forever ? "until destroyed" : "for ", forever ? "" : FormatDuration(opt_.hold).c_str(),
        prefix_.c_str(), prefix_.c_str(), prefix_.c_str());
    std::fflush(stdout);
    const auto hold_end = forever ? Clock::time_point::max()
                                  : Clock::now() + std::chrono::nanoseconds(opt_.hold / kNs);
    while (Clock::now() < hold_end && !g_interrupted && switch_failure_.empty()) {
      if (opt_.processes) switch_failure_ = switch_procs_.Exited();  // one died: the end
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    // Ending a hold (rocefab destroy, Ctrl-C) is how a held run is meant to end: its
    // traffic had finished, its results stand.
    g_interrupted = false;
  }

  void WaitForTraffic() {
    if (!opt_.node.empty()) return WaitUntilStopped();
    Time builtin_end = 0;
    for (const auto& item : s_.traffic) {
      builtin_end = std::max(builtin_end, item.start + ExpectedLength(item));
    }
    const auto deadline = t0_ + std::chrono::nanoseconds(s_.live.timeout / kNs);
    auto last_progress = Clock::now();
    while (!g_interrupted) {
      bool running = false;
      for (pid_t& p : session_.children) {
        int status;
        if (p > 0 && ChildExited(p, &status)) p = -p;  // mark reaped
        if (p > 0) running = true;
      }
      // The emulated hosts' traffic follows the sim's rule: it stops at the scenario's duration,
      // and the run ends once frames in flight have drained (10 ms more, as `rocefab sim`), or
      // earlier when every test is done (published by an observer while the poll threads are
      // parked: this thread never reads the apps' state). Fault experiments run for the whole
      // duration.
      const auto since = Clock::now() - t0_;
      bool drained = false, finished = false;
      if (opt_.processes) {
        // Switch processes end by the clock: at the duration plus the drain when emulated
        // hosts send, else with the namespace tools. One that died ends the run.
        switch_failure_ = switch_procs_.Exited();
        if (!switch_failure_.empty()) break;
        drained = !HasEmulatedTraffic() ||
                  since >= std::chrono::nanoseconds((s_.duration + kDrain) / kNs);
      } else {
        // In wall time, plus the internal catch-up window: the fabric's own nodes may run that
        // far behind the clock (replayed in exact order), and their last events are part of
        // the run. With an exact end the loop returns once its last event ran (reached_end), or
        // the run stops when it lags beyond the window (reported as end_lag: not faithful).
        drained = runner_->reached_end() ||
                  since >= std::chrono::nanoseconds(
                               (fabric_end_ + runner_->options().internal_catch_up) / kNs);
        finished = !exact_end_ && s_.faults.empty() &&
                   since >= std::chrono::nanoseconds(std::min(builtin_end, s_.duration) / kNs) &&
                   fabric_->traffic_done();
      }
      if (!running && (drained || finished)) break;
      if (Clock::now() > deadline) {
        timed_out_ = true;
        break;
      }
      if (!opt_.quiet && Clock::now() - last_progress > std::chrono::seconds(2)) {
        Say("  ... %.0f s elapsed, %llu poll iterations\n",
            std::chrono::duration<double>(Clock::now() - t0_).count(),
            static_cast<unsigned long long>(runner_ ? runner_->iterations() : 0));
        last_progress = Clock::now();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));  // child-exit polling interval
    }
    std::vector<pid_t> live_children;
    for (pid_t p : session_.children) {
      if (p > 0) live_children.push_back(p);
    }
    session_.children = live_children;
    if (opt_.hold > 0 && !g_interrupted && switch_failure_.empty()) Hold();
    for (pid_t p : session_.children) StopChild(p);
    session_.children.clear();
    if (opt_.processes) {
      switch_procs_.Stop();
    } else {
      session_.StopLoop();
    }
  }

  // The kernel side of namespace host vh's veth (its eth0 and the root-namespace end the port
  // reads) into hp["kernel"], and the frames lost there into *lost: the kernel's drops and the
  // af_packet RX ring's overflows (frames the veth delivered to the PMD's packet socket that
  // the PMD never read, counted only in the socket's own statistics; needs hp["ethdev"]).
  static void AddKernelSide(const VethHost& vh, nlohmann::json* hp, uint64_t* lost) {
    nlohmann::json& h = *hp;
    h["kernel"] = {{"host_side", KernelCounters(vh.netns, "eth0")},
                   {"switch_side", KernelCounters("", vh.switch_if)},
                   {"tcp", TcpCounters(vh.netns)}};
    const auto& sw_side = h["kernel"]["switch_side"];
    if (sw_side.is_object() && h.contains("ethdev") && h["ethdev"].is_object()) {
      const auto got = h["ethdev"]["rx_packets"].get<uint64_t>();
      const auto sent = sw_side["rx_packets"].get<uint64_t>();
      h["af_packet_rx_ring_drops"] = sent > got ? sent - got : 0;
      *lost += h["af_packet_rx_ring_drops"].get<uint64_t>();
    }
    for (const char* side : {"host_side", "switch_side"}) {
      const auto& kc = h["kernel"][side];
      if (!kc.is_object()) continue;
      for (const char* k : {"rx_dropped", "tx_dropped", "qdisc_drops"})
        *lost += kc[k].get<uint64_t>();
    }
  }
  // Frames a DPDK port's device or PMD lost (hp["ethdev"], EthdevCounters).
  static uint64_t EthdevLost(const nlohmann::json& hp) {
    uint64_t lost = 0;
    if (!hp.contains("ethdev") || !hp["ethdev"].is_object()) return 0;
    for (const char* k : {"rx_missed", "rx_errors", "rx_nombuf", "tx_errors"})
      lost += hp["ethdev"][k].get<uint64_t>();
    return lost;
  }

  // Frames lost outside the switches: each namespace or external host's DPDK port and, where
  // this process created it, the kernel side of its veth.
  nlohmann::json HostPorts(uint64_t* lost_outside) const {
    nlohmann::json host_ports = nlohmann::json::object();
    *lost_outside = 0;
    size_t veth = 0;
    for (size_t i = 0; i < t_.hosts.size(); ++i) {
      if (host_ethdev_[i] == UINT16_MAX) continue;
      nlohmann::json hp = {{"ethdev", EthdevCounters(host_ethdev_[i])}};
      if (t_.hosts[i].kind == HostKind::kLinux && veth < session_.hosts.size()) {
        AddKernelSide(session_.hosts[veth++], &hp, lost_outside);
      }
      *lost_outside += EthdevLost(hp);
      host_ports[t_.hosts[i].name] = hp;
    }
    return host_ports;
  }

  // The memif ports of a switch process, by the switch port they serve ("tor0/p2"), with the
  // peer they reach.
  nlohmann::json LinkPorts() const {
    nlohmann::json links = nlohmann::json::object();
    for (size_t li = 0; li < link_ethdev_.size(); ++li) {
      if (link_ethdev_[li] == UINT16_MAX) continue;
      const auto& l = plan_.links[li];
      const bool a_mine = LocalSwitch(l.a.index);
      const auto& mine = a_mine ? l.a : l.b;
      const auto& other = a_mine ? l.b : l.a;
      links[plan_.switches[mine.index].ports[mine.port].name] = {
          {"peer", plan_.switches[other.index].ports[other.port].name},
          {"memif_socket", "@" + MemifSocket(li)},
          {"ethdev", EthdevCounters(link_ethdev_[li])}};
    }
    return links;
  }

  // The TCP Pingmesh probers' results (their JSON logs), one row per pair; every RTT into `all`
  // when given.
  nlohmann::json TcpPingmeshJson(std::vector<Time>* all = nullptr) const {
    nlohmann::json tm = nlohmann::json::array();
    for (const auto& j : meshes_) {
      std::ifstream in(j.log);
      nlohmann::json r;
      try {
        in >> r;
      } catch (const std::exception&) {
        r = nlohmann::json::object();
      }
      for (int b : j.to) {
        const std::string ip = FormatIpv4(t_.hosts[b].ip);
        std::vector<Time> rtt;
        int failures = 0;
        if (r.contains(ip)) {
          for (const auto& x : r[ip]["rtt_us"])
            rtt.push_back(static_cast<Time>(x.get<double>() * 1e6));
          failures = r[ip]["failures"].get<int>();
        } else {
          failures = -1;  // the prober produced no result
        }
        if (all != nullptr) all->insert(all->end(), rtt.begin(), rtt.end());
        tm.push_back({{"from", t_.hosts[j.from].name},
                      {"to", t_.hosts[b].name},
                      {"ok", rtt.size()},
                      {"failures", failures},
                      {"rtt_p50_us", Percentile(rtt, 0.5) / 1e6},
                      {"rtt_p99_us", Percentile(rtt, 0.99) / 1e6},
                      {"rtt_p999_us", Percentile(rtt, 0.999) / 1e6}});
      }
    }
    return tm;
  }

  // Results: the fabric's shared keys, then what only a live run has.
  Result<nlohmann::json> Results() {
    if (opt_.processes) return ProcessResults();
    uint64_t lost_outside = 0;
    const nlohmann::json host_ports = HostPorts(&lost_outside);
    const nlohmann::json link_ports = LinkPorts();
    if (opt_.child_of_processes) {
      // A memif port's counters are gone once its peer closes it: every switch process reads
      // its own before any closes (SwitchProcesses::Stop), then waits to be let go.
      Status st = WriteJsonFile(work_ + "/stopped", {{"pid", getpid()}});
      if (!st.ok()) return st;  // the parent SIGKILLs it after its grace
      const auto until = Clock::now() + std::chrono::seconds(10);
      while (g_usr1 < 2 && !g_interrupted && Clock::now() < until && getppid() == parent_)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));  // waits for SIGUSR1
    }
    nlohmann::json summary = fabric_->Summary();
    summary["port_driver"] = s_.live.port_driver;
    summary["wall_time_s"] = std::chrono::duration<double>(Clock::now() - t0_).count();
    summary["poll_iterations"] = runner_->iterations();
    summary["idle_sleeps"] = runner_->idle_sleeps();
    summary["timing"] = runner_->TimingJson();
    summary["host_ports"] = host_ports;
    summary["lost_outside_switches"] = lost_outside;
    if (!opt_.node.empty()) {
      summary["node"] = opt_.node;
      summary["links"] = link_ports;
      summary["ethdev_tx_dropped"] = runner_->ethdev_tx_dropped();
    }
    for (const auto& j : pings_) summary["pings"].push_back(ParsePing(j, t_));
    nlohmann::json ij = nlohmann::json::array();
    for (const auto& j : iperfs_) ij.push_back(ParseIperf(j, t_));
    summary["iperf3"] = ij;
    for (auto& r : PerftestResults()) summary["rdma"].push_back(r);
    SortRdmaResults(s_, &summary["rdma"]);
    FoldProgramNicTiming(&summary);
    // Once, where the verdict is final: a switch process's parent adds it after the merge.
    if (!opt_.child_of_processes) AddStealTime(&summary, steal0_);
    std::vector<Time> tcp_rtts;
    summary["tcp_pingmesh"] = TcpPingmeshJson(&tcp_rtts);
    if (!tcp_rtts.empty()) {  // the kernels' TCP, not the emulated hosts' ICMP stand-ins
      summary["rdma_vs_tcp"] = RdmaVsTcp(fabric_->rdma()->PingmeshRtts(), std::move(tcp_rtts),
                                         "kernel TCP (Linux namespace hosts)");
    }
    AddVerbsLatency(&summary["rdma_vs_tcp"], summary["rdma"]);  // with the real programs' results
    const bool fabric_had_workload = fabric_->rdma()->workload() != nullptr;
    if (!opt_.quiet) PrintRdmaResults(summary);
    summary["timed_out"] = timed_out_;
    summary["interrupted"] = g_interrupted.load();
    if (!opt_.out_dir.empty()) {
      Status st = fabric_->CloseOutputs();
      if (!st.ok()) return st;
      st = WriteResultFiles(opt_.out_dir, summary, fabric_->rdma());  // fct.txt needs the NICs
      if (!st.ok()) return st;
    }
    session_.StopFabric();
    summary["mbufs_in_use_after_run"] = rte_mempool_in_use_count(pool_);
    session_.Teardown();
    summary["leftover_namespaces"] = ListNetns(prefix_).size();
    if (!opt_.quiet) PrintSummaryTable(summary);
    if (!opt_.quiet && lost_outside > 0) {
      // Losses no switch saw: name where they happened.
      std::string where;
      for (const auto& [host, hp] : summary["host_ports"].items()) {
        const uint64_t ring = hp.value("af_packet_rx_ring_drops", uint64_t{0});
        if (ring > 0)
          where += std::string(where.empty() ? ":" : ";") + " " + host + ": " +
                   std::to_string(ring) + " in the af_packet RX ring";
      }
      Say("lost outside the switches: %llu frame(s) (host_ports in summary.json)%s\n",
          static_cast<unsigned long long>(lost_outside), where.c_str());
    }
    if (!opt_.out_dir.empty()) {
      Status st = WriteJsonFile(opt_.out_dir + "/summary.json", summary);
      if (!st.ok()) return st;
      Say("\nresults: %s/{summary.json,flows.csv,pings.csv%s%s%s} (tool logs in the same "
          "folder)\n",
          opt_.out_dir.c_str(), fabric_had_workload ? ",fct.txt" : "",
          s_.output.sample_interval > 0 ? ",timeseries.csv" : "",
          CaptureFileList(s_.output).c_str());
    } else {
      std::error_code ec;
      std::filesystem::remove_all(work_, ec);
    }
    return Finish(summary);
  }

  // --processes: the switch processes' results (stopped by WaitForTraffic) merged
  // (MergeSwitchSummaries), with what this process measured: the namespace tools and the
  // kernel side of the veths.
  Result<nlohmann::json> ProcessResults() {
    switch_procs_.Stop();
    auto parts = switch_procs_.Summaries();
    if (!parts.ok()) {
      session_.Teardown();
      return Result<nlohmann::json>::Error(
          switch_failure_.empty() ? parts.message() : "switch process " + switch_failure_);
    }
    nlohmann::json summary = MergeSwitchSummaries(parts.value());
    summary["layout"] = "processes";
    summary.erase("node");  // each process's own
    // The sim's order: pings by source host, RDMA tests as the scenario lists them.
    auto host_index = [&](const nlohmann::json& x) {
      return t_.HostIndex(x["from"].get<std::string>());
    };
    auto& pings = summary["pings"];
    std::stable_sort(pings.begin(), pings.end(),
                     [&](const nlohmann::json& x, const nlohmann::json& y) {
                       return host_index(x) < host_index(y);
                     });
    for (auto& r : PerftestResults()) summary["rdma"].push_back(r);
    SortRdmaResults(s_, &summary["rdma"]);
    FoldProgramNicTiming(&summary);
    AddStealTime(&summary, steal0_);
    // Each process modelled only its own hosts' flows: the model of all of them, here.
    if (auto plan = PlanFabric(s_); plan.ok()) {
      summary["ecmp_model"] = EcmpModelJson(s_, plan.value(), summary["rdma"]);
    }
    uint64_t lost_outside = 0;
    nlohmann::json host_ports = summary.value("host_ports", nlohmann::json::object());
    size_t veth = 0;
    for (size_t i = 0; i < t_.hosts.size(); ++i) {
      if (t_.hosts[i].kind != HostKind::kLinux || veth >= session_.hosts.size()) continue;
      nlohmann::json& hp = host_ports[t_.hosts[i].name];
      AddKernelSide(session_.hosts[veth++], &hp, &lost_outside);
      lost_outside += EthdevLost(hp);
    }
    summary["host_ports"] = host_ports;
    summary["lost_outside_switches"] = lost_outside;
    summary["wall_time_s"] = std::chrono::duration<double>(Clock::now() - t0_).count();
    for (const auto& j : pings_) summary["pings"].push_back(ParsePing(j, t_));
    nlohmann::json ij = nlohmann::json::array();
    for (const auto& j : iperfs_) ij.push_back(ParseIperf(j, t_));
    summary["iperf3"] = ij;
    summary["tcp_pingmesh"] = TcpPingmeshJson();
    summary["timed_out"] = timed_out_;
    summary["interrupted"] = g_interrupted.load();
    if (!switch_failure_.empty()) summary["switch_process_failed"] = switch_failure_;
    if (!opt_.quiet) {
      PrintRdmaResults(summary);
    }
    if (!opt_.out_dir.empty()) {
      Status st = WriteResultFiles(opt_.out_dir, summary, nullptr);
      if (!st.ok()) return st;
    }
    session_.Teardown();
    summary["leftover_namespaces"] = ListNetns(prefix_).size();
    if (!opt_.quiet) PrintSummaryTable(summary);
    if (!opt_.out_dir.empty()) {
      Status st = WriteJsonFile(opt_.out_dir + "/summary.json", summary);
      if (!st.ok()) return st;
      Say("\nresults: %s/summary.json (merged), each switch process's in %s/nodes/<switch>\n",
          opt_.out_dir.c_str(), opt_.out_dir.c_str());
    }
    if (!switch_failure_.empty()) {
      std::printf("timing: %s\n", summary["timing"]["verdict"].get<std::string>().c_str());
      return Result<nlohmann::json>::Error("switch process " + switch_failure_ +
                                           "; every other process and namespace was removed");
    }
    return Finish(summary);
  }

  // The last line of every live run (can its figures be trusted?) and its exit.
  Result<nlohmann::json> Finish(const nlohmann::json& summary) {
    const std::string verdict = summary["timing"]["verdict"].get<std::string>();
    std::printf("timing: %s\n", verdict.c_str());
    if (g_interrupted)
      return Result<nlohmann::json>::Error(
          "interrupted; the fabric and its namespaces were removed");
    if (timed_out_)
      return Result<nlohmann::json>::Error(
          "traffic did not finish within live.timeout; fabric removed");
    if (opt_.out_dir.empty()) {  // nothing asked to keep the tool logs
      std::error_code ec;
      std::filesystem::remove_all(work_, ec);
    }
    if (const std::string e = ConservationError(summary); !e.empty())
      return Result<nlohmann::json>::Error(e);
    if (opt_.strict_timing && !summary["timing"]["faithful"].get<bool>()) {
      return Result<nlohmann::json>::Error("--strict-timing: the run was not faithful (" + verdict +
                                           ")");
    }
    return summary;
  }

  const Scenario& s_;
  const Topology& t_;
  const LiveRunOptions& opt_;
  std::string prefix_, work_;  // run id ("rf" + 4 hex digits); tool logs
  LiveSession session_;
  std::vector<std::string> eal_;          // EAL arguments (CreateHosts adds the hosts' devices)
  std::vector<int> host_vdev_;            // per host: its af_packet/af_xdp vdev index, or -1
  std::vector<std::string> host_device_;  // per external host: its DPDK device name
  std::vector<uint16_t> host_ethdev_;     // per host: its ethdev port, or UINT16_MAX
  int vdevs_ = 0;
  std::vector<int> cpus_;  // CPUs the process may use (taken before EAL pins this thread)
  rte_mempool* pool_ = nullptr;
  LiveRunner* runner_ = nullptr;  // in session_
  Fabric* fabric_ = nullptr;      // in session_
  int lcores_ = 1;
  FabricPlan plan_;                    // the scenario's plan (Check)
  std::string eal_prefix_;             // EAL --file-prefix: the run id, "-<switch>" with --node
  std::vector<int> link_memif_;        // per plan link: its net_memif vdev index here, or -1
  std::vector<uint16_t> link_ethdev_;  // per plan link: its memif ethdev here, or UINT16_MAX
  SwitchProcesses switch_procs_;       // --processes
  pid_t parent_ = 0;                   // --parent-run: the --processes parent
  std::string switch_failure_;         // --processes: the switch process that died, and how
  Time fabric_end_ = 0;                // duration + 10 ms
  bool exact_end_ = false;             // StopAt(fabric_end_) took: no ethdev ports
  Clock::time_point t0_;               // the fabric's time 0 on the steady clock
  uint64_t steal0_ = 0;                // StealTicks() at t0_
  std::vector<PingJob> pings_;
  std::vector<IperfJob> iperfs_;
  std::vector<PerftestJob> perftests_;
  std::vector<TcpMeshJob> meshes_;
  bool timed_out_ = false;
};

namespace {

// What one switch per process cannot run yet, before anything is created: every observer that
// acts on the whole fabric, and traffic whose measurement spans processes.
Status CheckSwitchProcesses(const Scenario& s, const LiveRunOptions& opt) {
  const char* how = opt.processes ? "--processes" : "--node";
  if (opt.processes && !opt.node.empty())
    return Status::Error("--processes and --node: --processes starts every switch itself");
  if (opt.processes && opt.scenario_path.empty())
    return Status::Error("--processes needs the scenario's file (for the switch processes)");
  if (!opt.node.empty() && s.topology.SwitchIndex(opt.node) < 0) {
    std::string names;
    for (const auto& sw : s.topology.switches) names += (names.empty() ? "" : ", ") + sw.name;
    return Status::Error("--node " + opt.node + ": no such switch (switches: " + names + ")");
  }
  if (!s.faults.empty()) {
    return Status::Error(std::string(how) +
                         ": faults act on the whole fabric from one timeline, which needs every "
                         "switch in one process (run without " +
                         how +
                         "; --lcores N splits it "
                         "over threads)");
  }
  for (size_t i = 0; i < s.traffic.size(); ++i) {
    const auto k = s.traffic[i].kind();
    if (k == TrafficItem::Kind::kWorkload || k == TrafficItem::Kind::kPingmesh) {
      return Status::Error(TrafficPath(s.traffic[i], i) + ": " + TrafficKindName(k) +
                           " spans every host from one table, which needs the whole fabric in "
                           "one process (run without " +
                           how + ")");
    }
  }
  return Status();
}

}  // namespace

Result<nlohmann::json> RunLive(const Scenario& s, const LiveRunOptions& opt) {
  if (opt.node.empty() && !opt.processes) return LiveRun(s, opt).Run();
  Status st = CheckSwitchProcesses(s, opt);
  if (!st.ok()) return st;
  // A switch process sees one switch: no time series of the whole fabric (Fabric::Build leaves
  // the deadlock detector out).
  Scenario piece = s;
  piece.output.sample_interval = 0;
  piece.output.dcqcn_trace.clear();
  return LiveRun(piece, opt).Run();
}

}  // namespace rocefab

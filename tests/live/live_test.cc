// Live tests: the real rocefab binary builds the quickstart fabric with Linux namespace hosts,
// runs ping and iperf3 through DPDK switches, and must leave nothing behind. Needs root; skipped
// with a message otherwise. All traffic stays between namespaces the run itself creates.
#include <gtest/gtest.h>
#include <pcap/pcap.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <vector>

#include "fabric/fabric.h"
#include "run/netns.h"
#include "tests/support/icrc_reference.h"

namespace rocefab {
namespace {

std::string Bin() {
  const char* b = std::getenv("ROCEFAB_BIN");
  return b ? b : "";
}

std::string Scenario() {
  return std::string(ROCEFAB_SOURCE_DIR) + "/configs/scenarios/quickstart.json";
}

// Every live test starts with this. Live tests need root (namespaces, veths, raw sockets). As root
// it asserts the tools the run needs, so a machine meant to run them (CI runs them as root after
// scripts/setup.sh) cannot pass them by skipping. Without root they fail, unless the caller says
// it knows: scripts/test.sh sets ROCEFAB_SKIP_LIVE=1 when not root. Even then the test checks what
// can be checked without root, that `rocefab live` refuses with exit 2 and a message naming root
// (instead of half-building a fabric), and only then skips the live run, saying why.
// Why a non-root run with ROCEFAB_SKIP_LIVE=1 skips the live part (after the refusal check).
constexpr const char* kNonRootSkipReason =
    "live run skipped: not root and ROCEFAB_SKIP_LIVE=1 (scripts/test.sh sets it for non-root "
    "runs); checked only that rocefab live refuses without root (exit 2, message naming root)";

#define REQUIRE_LIVE()                                                                            \
  do {                                                                                            \
    if (geteuid() != 0) {                                                                         \
      const char* opt_out = std::getenv("ROCEFAB_SKIP_LIVE");                                     \
      ASSERT_TRUE(opt_out != nullptr && std::string(opt_out) == "1")                              \
          << "live tests need root (network namespaces, veth, raw sockets): run scripts/test.sh " \
             "as "                                                                                \
             "root, or set ROCEFAB_SKIP_LIVE=1 to skip them knowingly";                           \
      ASSERT_FALSE(Bin().empty())                                                                 \
          << "ROCEFAB_BIN is not set: run the live tests through meson test";                     \
      const auto refused = RunCommand(                                                            \
          {Bin(), "live", Scenario(), "--out", ::testing::TempDir() + "/rocefab_nonroot", "-q"}); \
      ASSERT_FALSE(refused.ok()) << "rocefab live ran without root";                              \
      EXPECT_NE(refused.message().find("(exit 2)"), std::string::npos) << refused.message();      \
      EXPECT_NE(refused.message().find("needs root"), std::string::npos) << refused.message();    \
      GTEST_SKIP() << kNonRootSkipReason;                                                         \
    }                                                                                             \
    ASSERT_TRUE(                                                                                  \
        RunCommand({"sh", "-c", "command -v iperf3 && command -v ping && command -v ip"}).ok())   \
        << "root but iperf3, ping or iproute2 is missing: scripts/setup.sh installs them";        \
    ASSERT_FALSE(Bin().empty())                                                                   \
        << "ROCEFAB_BIN is not set: run the live tests through meson test";                       \
  } while (0)

// Runs `rocefab live SCENARIO --out OUT -q` and returns its summary.json; errors carry the
// command's failure or name the missing file.
Result<nlohmann::json> RunLive(const std::string& scenario, const std::string& out) {
  auto r = RunCommand({Bin(), "live", scenario, "--out", out, "-q"});
  if (!r.ok()) return Result<nlohmann::json>::Error(r.message());
  std::ifstream in(out + "/summary.json");
  if (!in.good()) return Result<nlohmann::json>::Error(out + "/summary.json: not written");
  return nlohmann::json::parse(in);
}

// A summary.json without what only one runner has (Fabric::RunnerSpecificKeys of both, the
// `runner` name and the `timing` block): what an exact live run must share with the sim.
nlohmann::json SharedFigures(nlohmann::json s) {
  for (const char* r : {"sim", "live"}) {
    for (const auto& k : Fabric::RunnerSpecificKeys(r)) s.erase(k);
  }
  s.erase("runner");
  s.erase("timing");
  return s;
}

// Expects `n` RDMA tests in a live summary, each completed without errors.
void ExpectRdmaCompleted(const nlohmann::json& s, size_t n) {
  ASSERT_EQ(s["rdma"].size(), n) << s["rdma"].dump();
  for (const auto& t : s["rdma"]) {
    EXPECT_TRUE(t["completed"].get<bool>()) << t.dump();
    EXPECT_EQ(t["errors"], 0) << t.dump();
  }
}

// Sends SIGTERM to `pid` and polls (20 ms) until it exits, at most `limit`; false if it did not.
bool TerminateAndWait(pid_t pid, int* status,
                      std::chrono::seconds limit = std::chrono::seconds(30)) {
  kill(pid, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (ChildExited(pid, status)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // child-exit polling
  }
  return false;
}

// Polls (20 ms) a background `rocefab live` until `ready(log text)` holds, at most 60 s. False,
// with the log in *text, if it exited first or the time ran out.
bool WaitUntilUp(pid_t pid, const std::string& log,
                 const std::function<bool(const std::string&)>& ready, std::string* text) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream l(log);
    text->assign((std::istreambuf_iterator<char>(l)), std::istreambuf_iterator<char>());
    int status;
    if (ChildExited(pid, &status)) return false;
    if (ready(*text)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // polls the log and the system
  }
  return false;
}

std::vector<std::string> Veths(const std::string& prefix) {
  std::vector<std::string> out;
  auto r = RunCommand({"ip", "-o", "link", "show"});
  if (!r.ok()) return out;
  std::istringstream in(r.value());
  std::string line;
  while (std::getline(in, line)) {
    const auto pos = line.find(": " + prefix);
    if (pos != std::string::npos)
      out.push_back(line.substr(pos + 2, line.find(':', pos + 2) - pos - 2));
  }
  return out;
}

// Folders in /var/run/dpdk (EAL runtime folders, one per --file-prefix) whose names start
// with `prefix`, sorted.
std::vector<std::string> DpdkRuntimeDirs(const std::string& prefix) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/var/run/dpdk", ec)) {
    const std::string n = e.path().filename().string();
    if (n.rfind(prefix, 0) == 0) out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// What a run with id `run` may leave behind: its processes, namespaces, veths, memif sockets
// (abstract unix sockets "@/rocefab/RUN/..."), hugepage files and EAL runtime folders. Empty
// when there is nothing; else what there is.
std::string LeftoversOf(const std::string& run) {
  std::string left;
  if (RunCommand({"pgrep", "-f", "run-id " + run}).ok()) left += " processes;";
  if (!ListNetns(run).empty()) left += " namespaces;";
  if (!Veths(run).empty()) left += " veths;";
  std::ifstream unix_socks("/proc/net/unix");
  std::string line;
  while (std::getline(unix_socks, line)) {
    if (line.find("@/rocefab/" + run) != std::string::npos) {
      left += " memif socket " + line.substr(line.find('@')) + ";";
      break;
    }
  }
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/dev/hugepages", ec)) {
    if (e.path().filename().string().rfind(run, 0) == 0)
      left += " hugepage file " + e.path().string() + ";";
  }
  for (const auto& d : DpdkRuntimeDirs(run)) left += " /var/run/dpdk/" + d + ";";
  return left;
}

// A run id for a test's run (what --run-id takes), from the test process's pid and `k`.
std::string TestRunId(unsigned k) {
  char id[8];
  std::snprintf(id, sizeof id, "rf%04x", (static_cast<unsigned>(getpid()) * 7 + k) & 0xFFFF);
  return id;
}

// `rocefab crosscheck configs/scenarios/SCENARIO.json --out OUT ARGS...` (OUT emptied first):
// its exit, and *x and *table from OUT/crosscheck.{json,txt} (*x null if it wrote none).
Result<std::string> Crosscheck(const std::string& scenario, const std::string& out,
                               const std::vector<std::string>& args, nlohmann::json* x,
                               std::string* table) {
  std::filesystem::remove_all(out);
  std::vector<std::string> cmd = {
      Bin(), "crosscheck",
      std::string(ROCEFAB_SOURCE_DIR) + "/configs/scenarios/" + scenario + ".json", "--out", out};
  cmd.insert(cmd.end(), args.begin(), args.end());
  auto run = RunCommand(cmd);
  std::ifstream tin(out + "/crosscheck.txt");
  std::stringstream ts;
  ts << tin.rdbuf();
  *table = ts.str();
  std::ifstream jin(out + "/crosscheck.json");
  *x = jin.good() ? nlohmann::json::parse(jin) : nlohmann::json();
  return run;
}

// These run first, before the tests that leave kernels busy with namespaces' TCP teardown.
// `rocefab crosscheck` on a scenario scaled to a rate this machine emulates in real time: every
// figure agrees with the sim within its tolerance and the live run reports itself faithful.
// Also checks that both runners wrote the same files with the same summary keys.
void ExpectCrosscheckAgrees(const std::string& scenario, bool has_workload,
                            const std::vector<std::string>& args = {}) {
  const std::string out = ::testing::TempDir() + "/rocefab_xc_" + scenario;
  // This VM's hypervisor now and then takes the poll thread's core for milliseconds; a live run
  // that it hit says NOT FAITHFUL (and crosscheck then exits 1 whatever the figures). Such a run
  // is retried, up to eight runs in all (in CI runs here the first one or two were unfaithful now
  // and then); a faithful run must agree on every figure.
  nlohmann::json x;
  std::string table;
  for (int attempt = 1; attempt <= 8; ++attempt) {
    auto run = Crosscheck(scenario, out, args, &x, &table);
    ASSERT_FALSE(x.is_null()) << out << "/crosscheck.json not written: " << run.message();
    if (x["live_faithful"].get<bool>()) {
      EXPECT_TRUE(run.ok()) << run.message() << "\n" << table;
      break;
    }
    // Not faithful: crosscheck must not report agreement, and must say why.
    EXPECT_FALSE(run.ok()) << table;
    EXPECT_NE(table.find("the live run was not faithful"), std::string::npos) << table;
    std::fprintf(stderr, "attempt %d: the live run was not faithful, retrying:\n%s\n", attempt,
                 table.c_str());
  }
  ASSERT_TRUE(x["live_faithful"].get<bool>()) << "no faithful live run in 8: " << table;
  EXPECT_GE(x["rows"].size(), 8u) << "too few figures compared";
  for (const auto& r : x["rows"]) EXPECT_TRUE(r["agree"].get<bool>()) << r.dump() << table;
  // Same files, same keys: the runner-specific keys are null in the other runner.
  std::ifstream si(out + "/sim/summary.json"), li(out + "/live/summary.json");
  const nlohmann::json sim = nlohmann::json::parse(si), live = nlohmann::json::parse(li);
  std::vector<std::string> sk, lk;
  for (const auto& [k, v] : sim.items()) sk.push_back(k);
  for (const auto& [k, v] : live.items()) lk.push_back(k);
  EXPECT_EQ(sk, lk) << "sim and live summary.json keys differ";
  for (const char* k :
       {"wall_time_s", "poll_iterations", "iperf3", "tcp_pingmesh", "port_driver"}) {
    EXPECT_TRUE(sim[k].is_null()) << k << " is live-only";
    EXPECT_FALSE(live[k].is_null()) << k;
  }
  for (const char* k : {"sim_time_ps", "events_executed", "sim_events", "frames_delivered"}) {
    EXPECT_TRUE(live[k].is_null()) << k << " is sim-only";
    EXPECT_FALSE(sim[k].is_null()) << k;
  }
  for (const char* f : {"summary.json", "flows.csv", "pings.csv"}) {
    EXPECT_TRUE(std::filesystem::exists(out + "/sim/" + f)) << f;
    EXPECT_TRUE(std::filesystem::exists(out + "/live/" + f)) << f;
  }
  EXPECT_EQ(std::filesystem::exists(out + "/live/fct.txt"), has_workload);
  EXPECT_EQ(std::filesystem::exists(out + "/sim/fct.txt"), has_workload);
  EXPECT_EQ(live["mbufs_in_use_after_run"], 0);
}

TEST(LiveTest, CrosscheckQuickstartRdmaAt100MbpsAgrees) {
  REQUIRE_LIVE();
  ExpectCrosscheckAgrees("quickstart-rdma-100m", false);
}

// quickstart-rdma-1g with its links at 500 Mb/s: the loop runs a few % of its events later than
// one frame time (the VM's stalls), but replays them in exact time order: no frame moves, every
// figure agrees. (At 1 Gb/s, on a 2.0 GHz first-generation EPYC VM, no run of 8 was faithful
// with this build or the one before it, 2026-12-03; at 500 Mb/s 2 of 2 agreed.)
TEST(LiveTest, CrosscheckQuickstartRdmaAtHalfGigabitAgrees) {
  REQUIRE_LIVE();
  ExpectCrosscheckAgrees("quickstart-rdma-1g", false, {"--set", "topology.clos.link_rate=500Mbps"});
}

// Exactness, frame by frame: quickstart-rdma-1g with its links at 500 Mb/s (and half the
// bandwidth tests' bytes, so they finish within its 100 ms) and captures on a ToR uplink and a
// host link. A faithful live run whose events all kept their exact times (deviation 0, however
// late the loop ran them) writes the same capture.pcapng as the sim, byte for byte (tshark
// decodes both), and the same summary.json but for the runner-specific keys: every counter,
// watermark and latency sample (events of one instant run in the sim's order; the run ends at its
// end). (At 1 Gb/s one poll thread that also writes two captures falls behind its 20 ms catch-up
// window or ran events off schedule on a 2.0 GHz first-generation EPYC VM in every run, with
// this build and the one before it; at 500 Mb/s it ran up to 0.1-5 ms late there and stayed
// exact in 4 of 4 runs.)
TEST(LiveTest, HalfGigabitCapturesAreByteIdenticalInBothRunners) {
  REQUIRE_LIVE();
  std::ifstream in(std::string(ROCEFAB_SOURCE_DIR) + "/configs/scenarios/quickstart-rdma-1g.json");
  nlohmann::json sc = nlohmann::json::parse(in);
  sc["output"]["capture"] = {"tor0/p2", "tor1/p0"};
  sc["topology"]["clos"]["link_rate"] = "500Mbps";
  for (auto& t : sc["traffic"]) {
    if (t.value("test", "") == "write_bw" || t.value("test", "") == "read_bw") {
      t["iterations"] = t["iterations"].get<int>() / 2;
    }
  }
  const std::string path = ::testing::TempDir() + "/rocefab_capture_500m.json";
  std::ofstream(path) << sc.dump(2);
  const std::string out = ::testing::TempDir() + "/rocefab_xc_capture_500m";
  bool exact = false;
  for (int attempt = 1; attempt <= 8 && !exact; ++attempt) {
    std::filesystem::remove_all(out);
    auto run = RunCommand({Bin(), "crosscheck", path, "--out", out, "-q"});
    std::ifstream li(out + "/live/summary.json");
    ASSERT_TRUE(li.good()) << run.message();
    const auto t = nlohmann::json::parse(li)["timing"];
    exact = t["faithful"].get<bool>() && t["deviation"]["max_us"].get<double>() == 0.0;
    if (!exact)
      std::fprintf(stderr, "attempt %d: not exact: %s\n", attempt, t["verdict"].dump().c_str());
  }
  ASSERT_TRUE(exact) << "no live run in 8 kept every event's exact time";
  std::ifstream si(out + "/sim/summary.json"), li(out + "/live/summary.json");
  const nlohmann::json sim = SharedFigures(nlohmann::json::parse(si));
  const nlohmann::json live = SharedFigures(nlohmann::json::parse(li));
  EXPECT_GT(sim.size(), 10u);
  EXPECT_EQ(live, sim) << "the summaries differ: " << nlohmann::json::diff(sim, live).dump();
  // One capture.pcapng per run (an interface per captured port), the same bytes in both.
  const std::string a = out + "/sim/capture.pcapng", b = out + "/live/capture.pcapng";
  ASSERT_TRUE(std::filesystem::exists(a) && std::filesystem::exists(b));
  EXPECT_GT(std::filesystem::file_size(a), 200'000u);
  EXPECT_TRUE(RunCommand({"cmp", a, b}).ok()) << "the captures differ";
  for (const char* port : {"tor0/p2", "tor1/p0"}) {
    auto frames = [port](const std::string& f) {
      auto r = RunCommand({"sh", "-c",
                           "tshark -r " + f + " -Y 'infiniband && frame.interface_name == \"" +
                               port + "\"' 2>/dev/null | wc -l"});
      return r.ok() ? std::stol(r.value()) : -1L;
    };
    const long n = frames(a);
    EXPECT_GT(n, 1000) << port << ": tshark decoded too few RoCEv2 frames";
    EXPECT_EQ(frames(b), n) << port;
  }
}

// A 4-to-1 PFC incast: pause frames per switch, drops and the victim's latency agree.
TEST(LiveTest, CrosscheckPfcIncastAt100MbpsAgrees) {
  REQUIRE_LIVE();
  ExpectCrosscheckAgrees("incast-pfc-100m", true);
}

// The same fabric split over two poll threads (rocefab crosscheck --lcores 2): each partition
// has its own lcore, the spine links cross between them through rings, and a partition waits
// for the bounds the other publishes, so frames between them arrive in exact time order. On a
// 2-vCPU machine one partition shares its CPU with the control thread and the kernel, so a run
// may still fall beyond the catch-up window; up to six are tried, one must be faithful. A
// faithful run must agree on every figure; an unfaithful one must be refused by crosscheck;
// each run reports two lcores.
TEST(LiveTest, CrosscheckQuickstartRdmaOnTwoLcoresAgrees) {
  REQUIRE_LIVE();
  const std::string out = ::testing::TempDir() + "/rocefab_xc_2lcores";
  bool faithful = false;
  std::string table;
  for (int attempt = 1; attempt <= 6 && !faithful; ++attempt) {
    nlohmann::json x;
    auto run = Crosscheck("quickstart-rdma-100m", out, {"--lcores", "2"}, &x, &table);
    ASSERT_FALSE(x.is_null()) << out << "/crosscheck.json not written: " << run.message();
    std::ifstream li(out + "/live/summary.json");
    const auto live = nlohmann::json::parse(li);
    ASSERT_EQ(live["timing"]["lcores"].size(), 2u) << live["timing"].dump();
    for (const auto& lc : live["timing"]["lcores"]) EXPECT_GT(lc["nodes"].get<int>(), 0);
    EXPECT_EQ(live["mbufs_in_use_after_run"], 0);
    faithful = x["live_faithful"].get<bool>();
    if (faithful) {
      EXPECT_TRUE(run.ok()) << run.message() << "\n" << table;
      for (const auto& r : x["rows"]) EXPECT_TRUE(r["agree"].get<bool>()) << r.dump() << table;
    } else {
      // An unfaithful run stands behind no figure (a multi-ms stall moves even the bandwidth
      // rows): crosscheck must fail it and say why, whatever the rows show.
      EXPECT_FALSE(run.ok()) << table;
      EXPECT_NE(table.find("the live run was not faithful"), std::string::npos) << table;
      std::fprintf(stderr, "2 lcores, attempt %d: not faithful\n%s\n", attempt, table.c_str());
    }
  }
  EXPECT_TRUE(faithful) << "no faithful 2-lcore run in 6: " << table;
}

// The issue-22 injections (CNPs, malformed frames, host-side pauses) and the DCQCN trace give
// the same figures in both runners.
TEST(LiveTest, CrosscheckInjectionsAt100MbpsAgrees) {
  REQUIRE_LIVE();
  ExpectCrosscheckAgrees("injections-100m", false);
  const std::string out = ::testing::TempDir() + "/rocefab_xc_injections-100m";
  for (const char* runner : {"sim", "live"}) {
    std::ifstream in(out + "/" + runner + "/dcqcn.csv");
    std::string header, first;
    std::getline(in, header);
    EXPECT_EQ(header, "time_us,host,qpn,rate_gbps,target_gbps,alpha") << runner;
    EXPECT_TRUE(static_cast<bool>(std::getline(in, first))) << runner << ": no samples";
    std::ifstream si(out + "/" + runner + "/summary.json");
    const auto s = nlohmann::json::parse(si);
    EXPECT_EQ(s["hosts"]["h0"]["rnic"]["cnps_received"], 40) << runner;
    EXPECT_EQ(s["hosts"]["h2"]["rnic"]["bad_icrc"], 20) << runner;
    EXPECT_EQ(s["hosts"]["h1"]["pfc_rx_frames"], 10) << runner;
  }
}

// A live run writes the RDMA workload's fct.txt like the sim (the HPCC/ConWeave layout, one line
// per finished flow), next to flows.csv and pings.csv.
TEST(LiveTest, LiveRunsWriteTheWorkloadsFctFile) {
  REQUIRE_LIVE();
  const std::string out = ::testing::TempDir() + "/rocefab_live_fct";
  std::filesystem::remove_all(out);
  auto run =
      RunLive(std::string(ROCEFAB_SOURCE_DIR) + "/configs/scenarios/incast-pfc-100m.json", out);
  ASSERT_TRUE(run.ok()) << run.message();
  EXPECT_EQ(run.value()["workload"]["finished"], 4) << run.value()["workload"].dump();
  std::ifstream fct(out + "/fct.txt");
  ASSERT_TRUE(fct.good()) << "live wrote no fct.txt";
  int lines = 0;
  for (std::string line; std::getline(fct, line);) {
    std::istringstream f(line);
    long long src, dst, sport, dport, size, start, fct_ns, ideal;
    ASSERT_TRUE(f >> src >> dst >> sport >> dport >> size >> start >> fct_ns >> ideal) << line;
    EXPECT_EQ(dst, 0) << line;
    EXPECT_EQ(size, 500000) << line;
    EXPECT_GT(fct_ns, ideal) << line;
    ++lines;
  }
  EXPECT_EQ(lines, 4);
  for (const char* f : {"flows.csv", "pings.csv", "summary.json"}) {
    EXPECT_TRUE(std::filesystem::exists(out + "/" + f)) << f;
  }
}

// incast-pfc-100m is not here yet: in about one faithful live run in five, tor0 keeps h1's
// lossless PG in XOFF for 12+ ms where the sim cycles XOFF/XON every ~2 ms (victim p99.9 ~29 ms
// vs 0.46 ms, XOFF 7-9 vs 20), a live-runner disagreement not yet found (docs/crosscheck.md).
// The other runs agree on every figure.

// The quickstart's figures: all-pairs ping with 0 % loss, both iperf3 runs complete, both
// spines carry traffic.
void ExpectQuickstartFigures(const nlohmann::json& s) {
  // Every frame each switch received or made is accounted for (the run would have failed
  // otherwise; this checks the block is there and counts the four switches' traffic).
  EXPECT_TRUE(s["conservation"]["balanced"].get<bool>()) << s["conservation"].dump();
  EXPECT_EQ(s["conservation"]["nodes"], 4u);
  EXPECT_GT(s["conservation"]["received"].get<uint64_t>(), 1000u) << s["conservation"].dump();
  // All-pairs ping with 0 % loss.
  ASSERT_EQ(s["pings"].size(), 12u);
  for (const auto& p : s["pings"]) {
    EXPECT_EQ(p["received"], p["sent"]) << p.dump();
    EXPECT_EQ(p["loss_pct"], 0.0) << p.dump();
    EXPECT_GT(p["rtt_p50_us"].get<double>(), 0.0);
  }
  // Both iperf3 TCP runs complete between hosts on different ToRs.
  ASSERT_EQ(s["iperf3"].size(), 2u);
  for (const auto& i : s["iperf3"]) {
    EXPECT_TRUE(i.value("completed", false)) << i.dump();
    EXPECT_GT(i.value("gbps", 0.0), 0.05) << i.dump();
  }
  EXPECT_EQ(s["iperf3"][1]["streams"], 8);
  // The 8 parallel streams (and everything else) put packets on both spines.
  for (const char* spine : {"spine0", "spine1"}) {
    uint64_t rx = 0;
    for (const auto& p : s["switches"][spine]["ports"]) rx += p["rx_packets"].get<uint64_t>();
    EXPECT_GT(rx, 1000u) << spine << " carried almost nothing: " << s["switches"][spine].dump();
  }
  EXPECT_EQ(s["leftover_namespaces"], 0);
  EXPECT_EQ(s["mbufs_in_use_after_run"], 0);
}

// rocefab live waits for a server program (iperf3, perftest) to listen in its namespace before
// it starts the client: WaitTcpListening sees a real iperf3's socket in a namespace this test
// makes, times out on a port nobody listens on, and names a namespace that does not exist.
TEST(NetnsTest, WaitTcpListeningSeesARealServerInItsNamespace) {
  REQUIRE_LIVE();
  const std::string ns = "rftest-listen-" + std::to_string(getpid());
  ASSERT_TRUE(RunCommand({"ip", "netns", "add", ns}).ok());
  pid_t server = -1;
  struct Cleanup {
    const std::string& ns;
    pid_t& server;
    ~Cleanup() {
      if (server > 0) StopChild(server, 200);
      (void)RunCommand({"ip", "netns", "del", ns});
    }
  } cleanup{ns, server};
  ASSERT_TRUE(RunCommand({"ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"}).ok());
  Status none = WaitTcpListening(ns, 5399, 50, nullptr);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.message().find("port 5399"), std::string::npos) << none.message();
  auto pid = SpawnCommand({"ip", "netns", "exec", ns, "iperf3", "-s", "-1", "-p", "5399"},
                          ::testing::TempDir() + "/rftest-listen.log");
  ASSERT_TRUE(pid.ok()) << pid.message();
  server = pid.value();
  Status up = WaitTcpListening(ns, 5399, 5000, nullptr);
  EXPECT_TRUE(up.ok()) << up.message();
  // The root namespace has no such listener: the check reads the namespace's table.
  EXPECT_FALSE(RunCommand({"sh", "-c", "ss -Hln sport = :5399 | grep -q ."}).ok());
  Status missing = WaitTcpListening(ns + "-absent", 5399, 50, nullptr);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find(ns + "-absent"), std::string::npos) << missing.message();
}

TEST(LiveTest, QuickstartCarriesPingAndTcpAndCleansUp) {
  REQUIRE_LIVE();
  const auto ns_before = ListNetns("rf");
  const auto dirs_before = DpdkRuntimeDirs("rf");
  const std::string out = ::testing::TempDir() + "/rocefab_live_qs";
  auto run = RunLive(Scenario(), out);
  ASSERT_TRUE(run.ok()) << run.message();
  ExpectQuickstartFigures(run.value());
  EXPECT_EQ(ListNetns("rf"), ns_before) << "namespaces left behind";
  EXPECT_EQ(DpdkRuntimeDirs("rf"), dirs_before) << "EAL runtime folders left in /var/run/dpdk";
}

// A captured port facing a namespace host holds both directions too: what the ToR reads from
// the host's veth (inbound) and what it sends to it (outbound, stamped when its last bit left),
// in the one capture.pcapng, as tshark reads it: h0's ping requests come in, the replies to h0
// go out.
TEST(LiveTest, CaptureOfAHostPortHoldsBothDirections) {
  REQUIRE_LIVE();
  const std::string out = ::testing::TempDir() + "/rocefab_live_hostcap";
  std::filesystem::remove_all(out);
  // The quickstart's fabric with 20 pings h0 -> h2 only (its iperf3 runs would fill the
  // capture with 150-200 MB of TCP for tshark to read twice).
  auto run = RunCommand({Bin(), "live", Scenario(), "--out", out, "-q", "--set",
                         "output.capture=[\"tor0/p0\"]", "--set",
                         "traffic=[{\"kind\":\"ping\",\"from\":\"h0\",\"to\":\"h2\",\"count\":20,"
                         "\"interval\":\"1ms\"}]"});
  ASSERT_TRUE(std::filesystem::exists(out + "/capture.pcapng")) << run.message();
  auto icmp = [&](const std::string& filter) {
    auto r =
        RunCommand({"sh", "-c",
                    "tshark -r " + out +
                        "/capture.pcapng -Y 'frame.interface_name == \"tor0/p0\" && " + filter +
                        "' -T fields -e frame.packet_flags_direction 2>/dev/null "
                        "| sort | uniq -c"});
    return r.ok() ? r.value() : r.message();
  };
  const std::string req = icmp("icmp.type == 8 && ip.src == 10.1.0.2");
  const std::string rep = icmp("icmp.type == 0 && ip.dst == 10.1.0.2");
  EXPECT_NE(req.find("0x00000001"), std::string::npos) << "h0's requests, inbound: " << req;
  EXPECT_EQ(req.find("0x00000002"), std::string::npos) << "h0's requests, inbound: " << req;
  EXPECT_NE(rep.find("0x00000002"), std::string::npos) << "replies to h0, outbound: " << rep;
  EXPECT_EQ(rep.find("0x00000001"), std::string::npos) << "replies to h0, outbound: " << rep;
}

TEST(LiveTest, EightTcpStreamsUseBothSpines) {
  REQUIRE_LIVE();
  const std::string out = ::testing::TempDir() + "/rocefab_live_8";
  auto run = RunLive(std::string(ROCEFAB_SOURCE_DIR) + "/tests/live/eight_streams.json", out);
  ASSERT_TRUE(run.ok()) << run.message();
  const nlohmann::json& s = run.value();
  ASSERT_EQ(s["iperf3"].size(), 1u);
  EXPECT_TRUE(s["iperf3"][0].value("completed", false)) << s["iperf3"][0].dump();
  // Spine port 0 faces tor0: what it receives is the streams' data (h1 -> h3) and nothing else.
  for (const char* spine : {"spine0", "spine1"}) {
    const auto& p0 = s["switches"][spine]["ports"][0];
    EXPECT_EQ(p0["name"], std::string(spine) + "/p0");
    EXPECT_GT(p0["rx_packets"].get<uint64_t>(), 1000u) << spine << " got no stream: " << p0.dump();
  }
  // Nothing is lost silently: TCP retransmits only after a loss that a counter saw (a switch
  // drop, a link loss, or one of host_ports: the DPDK port, the veth's kernel side, the
  // af_packet RX ring), and every host port carries the counters.
  uint64_t counted = s["lost_frames"].get<uint64_t>() + s["lost_outside_switches"].get<uint64_t>();
  for (const auto& [name, sw] : s["switches"].items()) counted += sw["drops_total"].get<uint64_t>();
  // Or the sender's kernel retransmitted although nothing was lost: a tail loss probe or a
  // spurious timeout after a delay (a VM stall), which the receiver reports as a duplicate.
  const uint64_t retransmits = s["iperf3"][0].value("retransmits", uint64_t{0});
  const auto& tcp = s["host_ports"]["h1"]["kernel"]["tcp"];
  ASSERT_TRUE(tcp.is_object()) << "no TCP counters of h1: " << s["host_ports"]["h1"].dump();
  const uint64_t unneeded = tcp["loss_probes"].get<uint64_t>() +
                            tcp["spurious_rtos"].get<uint64_t>() +
                            tcp["dsack_received"].get<uint64_t>();
  EXPECT_GE(tcp["retrans_segs"].get<uint64_t>(), retransmits) << tcp.dump();
  if (retransmits > 0) {
    EXPECT_GT(counted + unneeded, 0u)
        << retransmits << " retransmits, no loss counted and none unneeded: " << tcp.dump();
  }
  for (const char* h : {"h1", "h3"}) {
    const auto& hp = s["host_ports"][h];
    ASSERT_TRUE(hp["ethdev"].is_object()) << hp.dump();
    ASSERT_TRUE(hp["kernel"]["switch_side"].is_object()) << hp.dump();
    EXPECT_GT(
        hp["ethdev"]["rx_packets"].get<uint64_t>() + hp["ethdev"]["tx_packets"].get<uint64_t>(),
        1000u);
    EXPECT_TRUE(hp.contains("af_packet_rx_ring_drops")) << hp.dump();
  }
  std::printf("8 streams: %llu retransmits, %llu frames lost where counted\n",
              static_cast<unsigned long long>(retransmits),
              static_cast<unsigned long long>(counted));
}

TEST(LiveTest, TwoTcpSendersIntoOneReceiverDropInTheLossyClass) {
  REQUIRE_LIVE();
  const std::string out = ::testing::TempDir() + "/rocefab_live_2to1";
  auto run = RunLive(std::string(ROCEFAB_SOURCE_DIR) + "/tests/live/two_to_one.json", out);
  ASSERT_TRUE(run.ok()) << run.message();
  const nlohmann::json& s = run.value();
  ASSERT_EQ(s["iperf3"].size(), 2u);
  double total = 0, bytes = 0;
  for (const auto& i : s["iperf3"]) {
    EXPECT_TRUE(i.value("completed", false)) << i.dump();
    EXPECT_LT(i.value("gbps", 0.0), 1.0) << i.dump();
    total += i.value("gbps", 0.0);
    bytes += i.value("bytes_received", 0.0);
  }
  // The two clients start a moment apart (process start and TCP setup on a loaded 2-core host),
  // so their rates add up only over the common window; what cannot be beaten is the receiver
  // link: everything h2 received fits in 1 Gb/s over the run's wall time.
  const double wall = s["wall_time_s"].get<double>();
  EXPECT_LE(bytes * 8, 1e9 * wall)
      << "two senders share the 1 Gb/s receiver link: " << s["iperf3"].dump();
  EXPECT_GT(total, 0.3);
  const auto& tor1 = s["switches"]["tor1"];
  const uint64_t lossy = tor1["drops"].value("egress_lossy_limit", 0ULL) +
                         tor1["drops"].value("ingress_lossy_limit", 0ULL);
  EXPECT_GT(lossy, 0u) << "TCP (best effort, DSCP 0) must overflow the lossy class: "
                       << tor1["drops"].dump();
  EXPECT_EQ(tor1["drops"].value("lossless_headroom_exhausted", 0ULL), 0u);
  EXPECT_EQ(s["mbufs_in_use_after_run"], 0);
}

// quickstart-rdma at its shipped 10 Gb/s, run for 100 ms: one poll thread runs eight nodes 2-3
// times slower than real time on this 2-core machine, so the fabric falls behind the clock by
// more than the 20 ms catch-up window, and the run must say so instead of presenting its
// figures as the fabric's: the verdict is NOT FAITHFUL, and --strict-timing exits 1.
TEST(LiveTest, QuickstartRdmaAtTenGigabitReportsItselfNotFaithful) {
  REQUIRE_LIVE();
  std::ifstream in0(std::string(ROCEFAB_SOURCE_DIR) + "/configs/scenarios/quickstart-rdma.json");
  nlohmann::json sc = nlohmann::json::parse(in0);
  sc["duration"] = "100ms";
  for (auto& item : sc["traffic"]) {
    if (item["test"] == "write_bw" || item["test"] == "read_bw") item["iterations"] = 1000;
  }
  const std::string path = ::testing::TempDir() + "/rocefab_rdma_10g_100ms.json";
  std::ofstream(path) << sc.dump(2);
  const std::string out = ::testing::TempDir() + "/rocefab_live_rdma";
  std::filesystem::remove_all(out);
  auto run = RunCommand({Bin(), "live", path, "--out", out, "-q", "--strict-timing"});
  ASSERT_FALSE(run.ok()) << "a 10 Gb/s quickstart-rdma run claimed to be faithful";
  EXPECT_NE(run.message().find("(exit 1)"), std::string::npos) << run.message();
  std::ifstream in(out + "/summary.json");
  ASSERT_TRUE(in.good()) << "--strict-timing must still write the results";
  const nlohmann::json s = nlohmann::json::parse(in);
  const auto& t = s["timing"];
  EXPECT_FALSE(t["faithful"].get<bool>()) << t.dump();
  EXPECT_EQ(t["verdict"].get<std::string>().rfind("NOT FAITHFUL", 0), 0u) << t.dump();
  EXPECT_GT(t["late_fraction"].get<double>(), t["max_late_fraction"].get<double>());
  EXPECT_GT(t["events"].get<uint64_t>(), 10000u);
  EXPECT_TRUE(t["worst"].is_object()) << t.dump();
  // The emulated NICs ran the four tests (finished or not within the duration).
  ASSERT_EQ(s["rdma"].size(), 4u);
  for (const auto& r : s["rdma"]) EXPECT_EQ(r["errors"], 0) << r.dump();
  EXPECT_EQ(s["mbufs_in_use_after_run"], 0);
}

// ConWeave in the live DPDK switches: with ECMP both flows of this seed share spine0 (checked in
// the sim test); ConWeave's reply deadlines expire on the shared uplink and it moves traffic
// to spine1, tagging every data frame at tor0 and scrubbing it at tor1.
TEST(LiveTest, ConweaveReroutesInTheDpdkSwitches) {
  REQUIRE_LIVE();
  const std::string out = ::testing::TempDir() + "/rocefab_live_conweave";
  auto run = RunLive(std::string(ROCEFAB_SOURCE_DIR) + "/tests/live/conweave_hotspot.json", out);
  ASSERT_TRUE(run.ok()) << run.message();
  const nlohmann::json& s = run.value();
  ExpectRdmaCompleted(s, 2);
  const auto& tx = s["switches"]["tor0"]["conweave"];
  const auto& rx = s["switches"]["tor1"]["conweave"];
  EXPECT_GE(tx["tagged"].get<uint64_t>(), 3840u) << tx.dump();  // 2 x 30 x 64 data frames at least
  EXPECT_EQ(rx["scrubbed"], tx["tagged"]) << rx.dump();
  EXPECT_GT(tx["tx"]["rtt_requests"].get<uint64_t>(), 0u) << tx.dump();
  EXPECT_GT(tx["tx"]["reroutes"].get<uint64_t>(), 0u) << tx.dump();
  EXPECT_GT(rx["rx"]["rtt_replies"].get<uint64_t>(), 0u) << rx.dump();
  for (const char* spine : {"spine0", "spine1"}) {
    EXPECT_GT(s["switches"][spine]["ports"][0]["rx_packets"].get<uint64_t>(), 100u)
        << spine << " carried no data: " << s["switches"][spine]["ports"][0].dump();
  }
  EXPECT_EQ(s["mbufs_in_use_after_run"], 0);
}

// ConWeave on a 3-tier Clos in both runners (configs/scenarios/conweave-3tier-100m.json): a
// faithful live run agrees with the sim on every figure; in the DPDK switches every data frame is
// tagged at a p0 ToR, carries its source route through a p0 leaf and is scrubbed at a p1 ToR
// (BTH resv7 written back), and the live NICs, which verify every frame's ICRC, accept them all.
TEST(LiveTest, CrosscheckConweaveOnAThreeTierClosAt100MbpsAgrees) {
  REQUIRE_LIVE();
  ExpectCrosscheckAgrees("conweave-3tier-100m", false);
  if (HasFatalFailure()) return;
  const std::string out = ::testing::TempDir() + "/rocefab_xc_conweave-3tier-100m";
  for (const char* runner : {"sim", "live"}) {
    std::ifstream in(out + "/" + runner + "/summary.json");
    const nlohmann::json s = nlohmann::json::parse(in);
    const auto& sw = s["switches"];
    auto sum = [&sw](const char* key, std::initializer_list<const char*> names) {
      uint64_t n = 0;
      for (const char* name : names) n += sw[name]["conweave"][key].get<uint64_t>();
      return n;
    };
    const uint64_t tagged = sum("tagged", {"p0-tor0", "p0-tor1"});
    EXPECT_EQ(tagged, 2u * 16u * 64u) << runner << ": every data frame";
    EXPECT_EQ(sum("scrubbed", {"p1-tor0", "p1-tor1"}), tagged) << runner;
    EXPECT_EQ(sum("source_routed", {"p0-leaf0", "p0-leaf1"}), tagged) << runner;
    ASSERT_EQ(s["rdma"].size(), 2u) << runner;
    for (const auto& r : s["rdma"]) {
      EXPECT_TRUE(r["completed"].get<bool>()) << runner << ": " << r.dump();
      EXPECT_EQ(r["errors"], 0) << runner << ": " << r.dump();
    }
    for (const auto& [name, h] : s["hosts"].items()) {
      if (h.contains("rnic")) {
        EXPECT_EQ(h["rnic"]["bad_icrc"], 0) << runner << " " << name;
      }
    }
  }
}

// CONGA in the live DPDK switches (the ConWeave hotspot fabric with "scheme": "conga"): every
// data frame is tagged at tor0, its CE raised by the spines' DREs and scrubbed at tor1 before
// the emulated NIC, which must still accept it (ICRC intact).
TEST(LiveTest, CongaTagsAndScrubsInTheDpdkSwitches) {
  REQUIRE_LIVE();
  std::ifstream sf(std::string(ROCEFAB_SOURCE_DIR) + "/tests/live/conweave_hotspot.json");
  auto sc = nlohmann::json::parse(sf);
  sc["load_balancing"] = {{"scheme", "conga"}};
  const std::string file = ::testing::TempDir() + "/rocefab_live_conga.json";
  std::ofstream(file) << sc.dump();
  const std::string out = ::testing::TempDir() + "/rocefab_live_conga";
  auto run = RunLive(file, out);
  ASSERT_TRUE(run.ok()) << run.message();
  const nlohmann::json& s = run.value();
  ExpectRdmaCompleted(s, 2);
  const auto& tx = s["switches"]["tor0"]["conga"];
  const auto& rx = s["switches"]["tor1"]["conga"];
  EXPECT_GE(tx["tagged"].get<uint64_t>(), 3840u) << tx.dump();
  EXPECT_EQ(rx["scrubbed"], tx["tagged"]) << rx.dump();
  EXPECT_EQ(rx["arrivals"], tx["tagged"]) << rx.dump();
  EXPECT_GT(s["switches"]["spine0"]["conga"]["ce_raised"].get<uint64_t>() +
                s["switches"]["spine1"]["conga"]["ce_raised"].get<uint64_t>(),
            0u);
  EXPECT_EQ(s["switches"]["tor0"]["load_balancing"]["scheme"], "conga");
  EXPECT_EQ(s["mbufs_in_use_after_run"], 0);
}

// What is tested depends on the kernel, and both outcomes are checked, never skipped: without
// rdma_rxe the script must refuse with exit 77 and a line naming the module (the behaviour users
// meet on such kernels); with it, SoftRoCE must attach to a namespace host of a running fabric.
TEST(LiveTest, SoftRoceAttachesOrRefusesWithAClearMessage) {
  const std::string script = std::string(ROCEFAB_SOURCE_DIR) + "/scripts/attach-softroce.sh";
  auto check = RunCommand({"sh", "-c", script + " --check 2>&1; echo \"exit=$?\""});
  ASSERT_TRUE(check.ok()) << check.message();
  const std::string answer = check.value();
  const bool have_rxe =
      RunCommand({"sh", "-c", "[ -d /sys/module/rdma_rxe ] || modinfo rdma_rxe >/dev/null 2>&1"})
          .ok();
  if (!have_rxe) {
    EXPECT_NE(answer.find("exit=77"), std::string::npos)
        << "no rdma_rxe, but the script did not refuse: " << answer;
    EXPECT_NE(answer.find("rdma_rxe"), std::string::npos)
        << "refusal without naming rdma_rxe: " << answer;
    std::printf(
        "this kernel has no rdma_rxe: checked the script's refusal; attaching is checked on "
        "kernels "
        "that have it (docs/real-rnics.md)\n");
    return;
  }
  ASSERT_NE(answer.find("exit=0"), std::string::npos)
      << "attach-softroce.sh --check failed: " << answer;
  REQUIRE_LIVE();
  // rdma_rxe exists: attach it to a namespace host while the quickstart fabric holds.
  const std::string log = ::testing::TempDir() + "/rocefab_live_rxe.log";
  auto pid = SpawnCommand({Bin(), "live", Scenario(), "--hold", "10s"}, log);
  ASSERT_TRUE(pid.ok());
  char prefix[16];
  std::snprintf(prefix, sizeof prefix, "rf%04x", static_cast<unsigned>(pid.value()) & 0xFFFF);
  bool up = false;
  for (int i = 0; i < 3000 && !up; ++i) {
    std::ifstream l(log);
    std::string text((std::istreambuf_iterator<char>(l)), std::istreambuf_iterator<char>());
    up = text.find("traffic started") != std::string::npos;
    if (!up) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(up);
  auto r = RunCommand({script, std::string(prefix) + "-h0"});
  int status;
  if (!TerminateAndWait(pid.value(), &status)) StopChild(pid.value(), 0);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r.value().rfind("rxe_", 0), 0u) << r.value();
}

// The NIC pause storm (Guo et al. section 4.3) with the NIC watchdog on, in the DPDK runner at
// the rate-scaled variant one poll thread keeps up with (nic-pause-storm-1g.json; the shipped
// 10 Gb/s file is 4-8x beyond this machine and reports itself NOT FAITHFUL). A faithful run
// must give the sim's pause spread and watchdog time to the picosecond and the same RDMA rows;
// an unfaithful one (a long stall of the VM) must say so. Up to three runs.
// Mininet-style use of a held fabric: `rocefab live --hold forever`, then inspect (hosts,
// addresses, namespaces), exec (a real ping from h0's namespace through the DPDK switches to
// h3) and destroy (the run ends with exit 0 and removes its namespaces and state).
TEST(LiveTest, AHeldRunIsInspectedExecutedInAndDestroyed) {
  REQUIRE_LIVE();
  std::ifstream in(std::string(ROCEFAB_SOURCE_DIR) + "/configs/scenarios/quickstart.json");
  nlohmann::json sc = nlohmann::json::parse(in);
  sc["traffic"] = nlohmann::json::array();
  sc["duration"] = "10ms";
  const std::string file = ::testing::TempDir() + "/rocefab_idle.json";
  std::ofstream(file) << sc.dump();
  const std::string log = ::testing::TempDir() + "/rocefab_held.log";
  auto pid = SpawnCommand({Bin(), "live", file, "-q", "--hold", "forever"}, log);
  ASSERT_TRUE(pid.ok()) << pid.message();
  char run[16];
  std::snprintf(run, sizeof run, "rf%04x", static_cast<unsigned>(pid.value()) & 0xFFFF);
  bool holding = false;
  for (int i = 0; i < 3000 && !holding; ++i) {  // until it says it holds (at most 60 s)
    std::ifstream l(log);
    const std::string text((std::istreambuf_iterator<char>(l)), std::istreambuf_iterator<char>());
    holding = text.find("holding the fabric until destroyed") != std::string::npos;
    if (!holding) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(holding) << "the held run never came up: see " << log;
  auto list = RunCommand({Bin(), "inspect"});
  ASSERT_TRUE(list.ok()) << list.message();
  EXPECT_NE(list.value().find(run), std::string::npos) << list.value();
  auto hosts = RunCommand({Bin(), "inspect", run});
  ASSERT_TRUE(hosts.ok()) << hosts.message();
  EXPECT_NE(hosts.value().find(std::string(run) + "-h3"), std::string::npos) << hosts.value();
  EXPECT_NE(hosts.value().find("10.1.1.3"), std::string::npos) << hosts.value();
  auto ping =
      RunCommand({Bin(), "exec", run, "h0", "--", "ping", "-n", "-c", "3", "-W", "2", "10.1.1.3"});
  EXPECT_TRUE(ping.ok()) << ping.message();
  EXPECT_NE(ping.ok() ? ping.value().find("3 received") : 0, std::string::npos)
      << (ping.ok() ? ping.value() : ping.message());
  auto wrong = RunCommand({Bin(), "exec", run, "h9", "--", "true"});
  EXPECT_FALSE(wrong.ok());
  EXPECT_NE(wrong.message().find("no Linux host 'h9'"), std::string::npos) << wrong.message();
  auto destroy = RunCommand({Bin(), "destroy", run});
  EXPECT_TRUE(destroy.ok()) << destroy.message();
  int status = 0;
  if (!TerminateAndWait(pid.value(), &status)) StopChild(pid.value(), 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a destroyed hold ends cleanly";
  EXPECT_TRUE(ListNetns(std::string(run) + "-").empty()) << "namespaces left behind";
  EXPECT_FALSE(std::filesystem::exists("/run/rocefab/" + std::string(run) + ".json"));
  auto gone = RunCommand({Bin(), "inspect", run});
  EXPECT_FALSE(gone.ok());
}

TEST(LiveTest, NicPauseStormSpreadsAndTheNicWatchdogContainsIt) {
  REQUIRE_LIVE();
  std::ifstream sf(std::string(ROCEFAB_SOURCE_DIR) + "/configs/scenarios/nic-pause-storm-1g.json");
  auto sc = nlohmann::json::parse(sf);
  sc["nic"]["rx"]["watchdog_enabled"] = true;
  // At 500 Mb/s: at the scenario's 1 Gb/s no run of 3 was faithful on a 2.0 GHz first-generation
  // EPYC VM (2026-12-03, this build and the one before it); at 500 Mb/s 3 of 3 were, with the
  // same spread and watchdog as the sim (spine0 paused at 25.1 ms, tor0 at 33.4 ms, h7's
  // watchdog at 46.8 ms).
  sc["topology"]["clos"]["link_rate"] = "500Mbps";
  const std::string file = ::testing::TempDir() + "/rocefab_live_storm.json";
  std::ofstream(file) << sc.dump();
  const std::string sim_out = ::testing::TempDir() + "/rocefab_sim_storm";
  std::filesystem::remove_all(sim_out);
  ASSERT_TRUE(RunCommand({Bin(), "sim", file, "--out", sim_out, "-q"}).ok());
  std::ifstream si(sim_out + "/summary.json");
  const nlohmann::json sim = nlohmann::json::parse(si);
  const double stall_us = 10000;
  const double spine = std::max(sim["pause_spread"]["spine0"]["first_paused_at_us"].get<double>(),
                                sim["pause_spread"]["spine1"]["first_paused_at_us"].get<double>());
  ASSERT_GT(spine, stall_us) << "the storm reaches the spines after the stall (sim): "
                             << sim["pause_spread"].dump();
  ASSERT_GT(sim["pause_spread"]["tor0"]["first_paused_at_us"].get<double>(), stall_us);
  ASSERT_TRUE(sim["nic_watchdogs"].contains("h7")) << "the NIC watchdog must fire (sim)";
  ASSERT_GE(sim["nic_watchdogs"]["h7"]["watchdog_fired_at_us"].get<double>(), stall_us + 20000);
  const std::string out = ::testing::TempDir() + "/rocefab_live_storm";
  bool faithful = false;
  for (int attempt = 1; attempt <= 3 && !faithful; ++attempt) {
    std::filesystem::remove_all(out);
    auto run = RunLive(file, out);
    ASSERT_TRUE(run.ok()) << run.message();
    const nlohmann::json& s = run.value();
    EXPECT_EQ(s["mbufs_in_use_after_run"], 0);
    faithful = s["timing"]["faithful"].get<bool>();
    if (!faithful) {
      EXPECT_EQ(s["timing"]["verdict"].get<std::string>().rfind("NOT FAITHFUL", 0), 0u);
      std::fprintf(stderr, "storm, attempt %d: %s\n", attempt,
                   s["timing"]["verdict"].get<std::string>().c_str());
      continue;
    }
    EXPECT_EQ(s["pause_spread"], sim["pause_spread"]);
    EXPECT_EQ(s["nic_watchdogs"], sim["nic_watchdogs"]);
    EXPECT_EQ(s["rdma"], sim["rdma"]);
    if (s["timing"]["deviation"]["max_us"].get<double>() == 0.0) {  // every event exact
      EXPECT_EQ(SharedFigures(s), SharedFigures(sim))
          << nlohmann::json::diff(SharedFigures(sim), SharedFigures(s)).dump();
    }
    EXPECT_EQ(s["timing"]["end_lag_us"], 0) << "the live run ran every event up to its end";
  }
  EXPECT_TRUE(faithful) << "no faithful run of nic-pause-storm-1g in 3";
}

// The ARP-flood deadlock (Guo et al. section 4.2) in the live DPDK switches, scaled so one poll
// thread on a small machine keeps up (tests/live/arp_flood_deadlock.json: 1 Gb/s links, 96 KiB
// headroom). h3 dies at 10 ms, tor1 ages its MAC entry after 20 ms, the flood of h0's lossless
// packets for h3 runs up the trunks and a cycle of paused queues forms through both ToRs and
// both spines: tor0 -> spine A -> tor1 -> spine B -> tor0. Victim flows that cross it (tor0 ->
// tor1 via A, tor1 -> tor0 via B) stop while their sources still send (until 201 ms); victims on
// the other spine may keep going, so the scenario has four victims each way over both spines
// and the test asks for at least one stopped victim per direction. With
// drop_lossless_on_incomplete_arp the same run has no cycle and the victims lose nothing.
TEST(LiveTest, ArpFloodDeadlockFormsAndDropOnIncompleteArpPreventsIt) {
  REQUIRE_LIVE();
  std::ifstream sf(std::string(ROCEFAB_SOURCE_DIR) + "/tests/live/arp_flood_deadlock.json");
  auto sc = nlohmann::json::parse(sf);
  for (bool cure : {false, true}) {
    SCOPED_TRACE(cure ? "drop_lossless_on_incomplete_arp" : "flooding");
    sc["drop_lossless_on_incomplete_arp"] = cure;
    const std::string file = ::testing::TempDir() + "/rocefab_live_deadlock.json";
    std::ofstream(file) << sc.dump();
    const std::string out =
        ::testing::TempDir() + "/rocefab_live_deadlock" + (cure ? "_cured" : "");
    auto run = RunLive(file, out);
    ASSERT_TRUE(run.ok()) << run.message();
    const nlohmann::json& s = run.value();
    EXPECT_EQ(s["mbufs_in_use_after_run"], 0);
    std::vector<nlohmann::json> victims;
    for (const auto& f : s["flows"]) {
      if (f["from"] != "h0") victims.push_back(f);
    }
    ASSERT_EQ(victims.size(), 8u) << s["flows"].dump();
    if (!cure) {
      // Live timing can hold a transient cycle for the detector's 1 ms and release it; the last
      // one recorded must still be there at the end of the run.
      ASSERT_GE(s["deadlocks"].size(), 1u)
          << "no cycle of paused queues: " << s["pause_spread"].dump();
      const auto& d = s["deadlocks"].back();
      EXPECT_TRUE(d["persists"].get<bool>()) << s["deadlocks"].dump();
      const std::string cycle = d["cycle"].dump();
      for (const char* sw : {"tor0/", "tor1/", "spine0/", "spine1/"}) {
        EXPECT_NE(cycle.find(sw), std::string::npos) << cycle;
      }
      const double formed = d["formed_at_us"].get<double>();
      EXPECT_GT(formed, 30000.0) << "before the MAC entry could age out";
      EXPECT_LT(formed, 190000.0) << "the sources were still sending";
      int stopped_up = 0, stopped_down = 0;  // tor0 -> tor1, tor1 -> tor0
      for (const auto& v : victims) {
        // Stopped: nothing arrives after the cycle forms (a frame may be on the last hop) and
        // packets the source sent never arrive.
        const bool stopped = v.contains("last_rx_us") &&
                             v["last_rx_us"].get<double>() < formed + 5000.0 &&
                             v["received"].get<uint64_t>() < v["sent"].get<uint64_t>();
        const bool up = v["from"] == "h1" || v["from"] == "h2";
        (up ? stopped_up : stopped_down) += stopped ? 1 : 0;
      }
      EXPECT_GE(stopped_up, 1) << "no tor0 -> tor1 victim stopped: " << s["flows"].dump();
      EXPECT_GE(stopped_down, 1) << "no tor1 -> tor0 victim stopped: " << s["flows"].dump();
    } else {
      EXPECT_TRUE(s["deadlocks"].empty()) << s["deadlocks"].dump();
      EXPECT_GT(s["switches"]["tor1"]["drops"]["lossless_incomplete_arp"].get<uint64_t>(), 0u)
          << s["switches"]["tor1"]["drops"].dump();
      for (const auto& v : victims) {
        EXPECT_EQ(v["received"], v["sent"]) << v.dump();
        EXPECT_GT(v["last_rx_us"].get<double>(), 195000.0) << v.dump();
      }
    }
  }
}

// Reads the running fabric's counters through DPDK telemetry with a direct socket client.
TEST(LiveTest, TelemetryServesPortCountersWhileRunning) {
  REQUIRE_LIVE();
  const std::string log = ::testing::TempDir() + "/rocefab_live_telemetry.log";
  auto pid = SpawnCommand({Bin(), "live", Scenario(), "--hold", "20s"}, log);
  ASSERT_TRUE(pid.ok());
  char prefix[16];
  std::snprintf(prefix, sizeof prefix, "rf%04x", static_cast<unsigned>(pid.value()) & 0xFFFF);
  const std::string sock = std::string("/var/run/dpdk/") + prefix + "/dpdk_telemetry.v2";
  bool up = false;
  for (int i = 0; i < 3000 && !up; ++i) {
    std::ifstream l(log);
    std::string text((std::istreambuf_iterator<char>(l)), std::istreambuf_iterator<char>());
    up = text.find("traffic started") != std::string::npos && std::filesystem::exists(sock);
    if (!up) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(up) << "no telemetry socket at " << sock;
  auto query = [&](const std::string& cmd) {
    const int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", sock.c_str());
    std::string reply;
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
      char buf[65536];
      const ssize_t hello = read(fd, buf, sizeof buf);  // {"version": ..., "pid": ...}
      if (hello > 0 && write(fd, cmd.data(), cmd.size()) == static_cast<ssize_t>(cmd.size())) {
        const ssize_t n = read(fd, buf, sizeof buf);
        if (n > 0) reply.assign(buf, static_cast<size_t>(n));
      }
    }
    close(fd);
    return reply;
  };
  const auto switches = nlohmann::json::parse(query("/rocefab/switches"));
  const auto ports = nlohmann::json::parse(query("/rocefab/ports,tor0"));
  // The pool's in-use count is a snapshot: between frames it can be 0 (a port driver that
  // copies on receive holds no descriptors), so ask until one shows frames out of the pool.
  nlohmann::json mbufs;
  for (int i = 0; i < 500; ++i) {
    mbufs = nlohmann::json::parse(query("/rocefab/mbufs"));
    if (mbufs["/rocefab/mbufs"].value("in_use", uint64_t{0}) > 0) break;
  }
  int status;
  if (!TerminateAndWait(pid.value(), &status)) StopChild(pid.value(), 0);
  ASSERT_EQ(switches["/rocefab/switches"].size(), 4u) << switches.dump();
  const auto& p = ports["/rocefab/ports"];
  ASSERT_TRUE(p.contains("tor0/p0/rx_packets")) << ports.dump();
  EXPECT_GT(p["tor0/p0/rx_packets"].get<uint64_t>(), 0u) << "h0's traffic reached tor0";
  EXPECT_TRUE(p.contains("tor0/p3/pfc_tx_xoff"));
  // The frame pool: its size (live.mbufs) and a snapshot of the frames out of it.
  const auto& mb = mbufs["/rocefab/mbufs"];
  EXPECT_EQ(mb["size"].get<uint64_t>(), 32767u);
  EXPECT_GT(mb["in_use"].get<uint64_t>(), 0u) << "queued frames hold some, in 500 snapshots";
  EXPECT_LT(mb["in_use"].get<uint64_t>(), 32767u);
}

TEST(LiveTest, TcpAndRdmaPingmeshOnTheSameFabric) {
  REQUIRE_LIVE();
  const std::string out = ::testing::TempDir() + "/rocefab_live_pingmesh";
  auto run = RunLive(std::string(ROCEFAB_SOURCE_DIR) + "/configs/scenarios/pingmesh.json", out);
  ASSERT_TRUE(run.ok()) << run.message();
  const nlohmann::json& s = run.value();
  ASSERT_EQ(s["tcp_pingmesh"].size(), 2u) << "h0 <-> h2 over kernel TCP";
  for (const auto& p : s["tcp_pingmesh"]) {
    EXPECT_EQ(p["failures"], 0) << p.dump();
    EXPECT_EQ(p["ok"], 100) << p.dump();
    EXPECT_GT(p["rtt_p50_us"].get<double>(), 1.0) << p.dump();
    EXPECT_GE(p["rtt_p99_us"].get<double>(), p["rtt_p50_us"].get<double>());
  }
  const auto& rdma = s["pingmesh"];
  ASSERT_EQ(rdma["pairs"].size(), 2u) << "h1 <-> h3 between emulated NICs";
  EXPECT_EQ(rdma["fabric"]["ok"], rdma["fabric"]["probes"]);
  EXPECT_EQ(rdma["fabric"]["probes"], 200);
  EXPECT_GT(rdma["fabric"]["rtt_p50_us"].get<double>(), 0.5);
  // The comparison: every probe of each kind, the kernels' TCP (not ICMP stand-ins), and the
  // real ib_send_lat between the namespace hosts.
  const auto& c = s["rdma_vs_tcp"];
  ASSERT_TRUE(c.is_object()) << c.dump();
  EXPECT_EQ(c["tcp_kind"], "kernel TCP (Linux namespace hosts)");
  EXPECT_EQ(c["rdma"]["probes"], 200);
  EXPECT_EQ(c["tcp"]["probes"], 200);
  EXPECT_DOUBLE_EQ(c["tcp_over_rdma"]["rtt_p99_us"].get<double>(),
                   c["tcp"]["rtt_p99_us"].get<double>() / c["rdma"]["rtt_p99_us"].get<double>());
  ASSERT_TRUE(c.contains("rdma_verbs")) << c.dump();
  EXPECT_EQ(c["rdma_verbs"]["program"], "ib_send_lat");
  EXPECT_EQ(c["rdma_verbs"]["samples"], 200);
  EXPECT_GT(c["rdma_verbs"]["rtt_p99_us"].get<double>(), 0.0);
}

TEST(LiveTest, GarbageFramesAreDroppedAndCountedWithoutLeaks) {
  REQUIRE_LIVE();
  const std::string out = ::testing::TempDir() + "/rocefab_live_garbage";
  const std::string log = ::testing::TempDir() + "/rocefab_live_garbage.log";
  std::filesystem::remove_all(out);
  auto pid = SpawnCommand(
      {Bin(), "live", std::string(ROCEFAB_SOURCE_DIR) + "/tests/live/eight_streams.json", "--hold",
       "4s", "--out", out},
      log);
  ASSERT_TRUE(pid.ok()) << pid.message();
  char prefix[16];
  std::snprintf(prefix, sizeof prefix, "rf%04x", static_cast<unsigned>(pid.value()) & 0xFFFF);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  bool holding = false;
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream l(log);
    std::string text((std::istreambuf_iterator<char>(l)), std::istreambuf_iterator<char>());
    if (text.find("holding the fabric") != std::string::npos) {
      holding = true;
      break;
    }
    int status;
    ASSERT_FALSE(ChildExited(pid.value(), &status)) << text;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(holding);
  constexpr int kFrames = 2000;
  auto sent = RunCommand({"ip", "netns", "exec", std::string(prefix) + "-h0", "python3",
                          std::string(ROCEFAB_SOURCE_DIR) + "/tests/live/garbage.py",
                          "02:52:53:00:00:00", std::to_string(kFrames), "7"});
  ASSERT_TRUE(sent.ok()) << sent.message();
  int status = 0;
  while (!ChildExited(pid.value(), &status))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  std::ifstream in(out + "/summary.json");
  const auto s = nlohmann::json::parse(in);
  const auto& tor0 = s["switches"]["tor0"];
  EXPECT_GE(tor0["ports"][0]["rx_packets"].get<uint64_t>(), static_cast<uint64_t>(kFrames));
  EXPECT_GE(tor0["drops_total"].get<uint64_t>(), static_cast<uint64_t>(kFrames))
      << tor0["drops"].dump();
  for (const char* reason :
       {"truncated_l3", "bad_ip_checksum", "bad_ip_header", "unknown_ethertype"}) {
    EXPECT_GT(tor0["drops"].value(reason, 0), 0) << reason << ": " << tor0["drops"].dump();
  }
  EXPECT_EQ(s["mbufs_in_use_after_run"], 0);
  EXPECT_TRUE(ListNetns(prefix).empty());
}

// External hosts on DPDK net_tap ports, the stand-in for a server with a real RNIC behind a
// physical port: rocefab creates the two taps, the test moves each into a namespace of its own
// (the "server"), gives it the topology's address and MAC, and the kernel pings and runs TCP
// through the fabric. The taps go away with the run.
TEST(LiveTest, ExternalHostsOnNetTapPortsCarryPingAndTcp) {
  REQUIRE_LIVE();
  const std::string tag = std::to_string(getpid() % 100000);
  const std::string tap[2] = {"rfx" + tag + "a", "rfx" + tag + "b"};
  const std::string ns[2] = {"rfxt" + tag + "a", "rfxt" + tag + "b"};
  std::ifstream sf(std::string(ROCEFAB_SOURCE_DIR) + "/tests/live/external_taps.json");
  auto sc = nlohmann::json::parse(sf);
  for (int i = 0; i < 2; ++i) {
    sc["topology"]["hosts"][i]["device"] = "net_tap" + std::to_string(i) + ",iface=" + tap[i];
  }
  const std::string file = ::testing::TempDir() + "/rocefab_live_taps.json";
  std::ofstream(file) << sc.dump();
  const std::string log = ::testing::TempDir() + "/rocefab_live_taps.log";
  auto pid = SpawnCommand({Bin(), "live", file, "--hold", "60s"}, log);
  ASSERT_TRUE(pid.ok()) << pid.message();
  // Whatever happens below: stop the run, remove the test's namespaces.
  struct Cleanup {
    pid_t pid;
    const std::string* ns;
    ~Cleanup() {
      int status;
      if (pid > 0 && !TerminateAndWait(pid, &status)) StopChild(pid, 0);
      for (int i = 0; i < 2; ++i) {
        // The iperf3 daemon, if the test stopped before its client ran, then the namespace.
        (void)RunCommand({"sh", "-c", "ip netns pids " + ns[i] + " 2>/dev/null | xargs -r kill"});
        (void)RunCommand({"ip", "netns", "del", ns[i]});
      }
    }
  } cleanup{pid.value(), ns};
  auto link_exists = [](const std::string& dev, const std::string& in_ns) {
    std::vector<std::string> cmd = {"ip", "link", "show", dev};
    if (!in_ns.empty()) cmd = {"ip", "-n", in_ns, "link", "show", dev};
    return RunCommand(cmd).ok();
  };
  std::string text;
  ASSERT_TRUE(WaitUntilUp(
      pid.value(), log,
      [&](const std::string& t) {
        return t.find("fabric up") != std::string::npos && link_exists(tap[0], "") &&
               link_exists(tap[1], "");
      },
      &text))
      << "the fabric or its taps did not come up: " << text;
  for (int i = 0; i < 2; ++i) {
    const auto& h = sc["topology"]["hosts"][i];
    const std::string ip = h["ip"].get<std::string>(), gw = i == 0 ? "10.61.0.1" : "10.61.1.1";
    for (const auto& cmd : std::vector<std::vector<std::string>>{
             {"ip", "netns", "add", ns[i]},
             {"ip", "link", "set", tap[i], "netns", ns[i]},
             {"ip", "-n", ns[i], "link", "set", tap[i], "address", h["mac"].get<std::string>()},
             {"ip", "-n", ns[i], "addr", "add", ip + "/24", "dev", tap[i]},
             {"ip", "-n", ns[i], "link", "set", tap[i], "up"},
             {"ip", "-n", ns[i], "route", "add", "default", "via", gw}}) {
      auto r = RunCommand(cmd);
      ASSERT_TRUE(r.ok()) << cmd[0] << " " << cmd[1] << " " << cmd[2] << ": " << r.message();
    }
  }
  auto ping = RunCommand(
      {"ip", "netns", "exec", ns[0], "ping", "-n", "-c", "5", "-i", "0.2", "-W", "2", "10.61.1.2"});
  ASSERT_TRUE(ping.ok()) << ping.message();
  EXPECT_NE(ping.value().find(" 0% packet loss"), std::string::npos) << ping.value();
  auto server = RunCommand({"ip", "netns", "exec", ns[1], "iperf3", "-s", "-1", "-D"});
  ASSERT_TRUE(server.ok()) << server.message();
  bool listening = false;
  for (int i = 0; i < 250 && !listening; ++i) {
    auto ss = RunCommand({"ip", "netns", "exec", ns[1], "ss", "-ltn"});
    listening = ss.ok() && ss.value().find(":5201") != std::string::npos;
    if (!listening) std::this_thread::sleep_for(std::chrono::milliseconds(20));  // polls ss
  }
  ASSERT_TRUE(listening) << "iperf3 server did not listen";
  auto client =
      RunCommand({"ip", "netns", "exec", ns[0], "iperf3", "-c", "10.61.1.2", "-t", "1", "-J"});
  ASSERT_TRUE(client.ok()) << client.message();
  const auto j = nlohmann::json::parse(client.value());
  const double bps = j["end"]["sum_received"]["bits_per_second"].get<double>();
  EXPECT_GT(bps, 50e6) << "TCP through the fabric between the two tap-backed hosts";
  EXPECT_LE(bps, 1.0e9) << "never faster than the 1 Gb/s links";
  std::printf("net_tap external hosts: ping 0%% loss, TCP %.0f Mb/s over 1 Gb/s links\n",
              bps / 1e6);
  // The run ends on SIGTERM; its taps go with it (a tap is removed when its DPDK port closes).
  int status = 0;
  ASSERT_TRUE(TerminateAndWait(pid.value(), &status)) << "rocefab live ignored SIGTERM";
  cleanup.pid = -1;
  for (int i = 0; i < 2; ++i) {
    EXPECT_FALSE(link_exists(tap[i], ns[i])) << tap[i] << " left in " << ns[i];
    EXPECT_FALSE(link_exists(tap[i], "")) << tap[i] << " left";
  }
}

// Reads OUT/summary.json of a finished run.
nlohmann::json ReadSummary(const std::string& out) {
  std::ifstream in(out + "/summary.json");
  EXPECT_TRUE(in.good()) << out << "/summary.json not written";
  return in.good() ? nlohmann::json::parse(in) : nlohmann::json::object();
}

// `rocefab live SCENARIO --processes --run-id RUN --out OUT -q ARGS...` (OUT emptied first):
// its summary, or the command's failure.
Result<nlohmann::json> RunProcesses(const std::string& scenario, const std::string& run,
                                    const std::string& out,
                                    const std::vector<std::string>& args = {}) {
  std::filesystem::remove_all(out);
  std::vector<std::string> cmd = {Bin(), "live",  scenario, "--processes", "--run-id",
                                  run,   "--out", out,      "-q"};
  cmd.insert(cmd.end(), args.begin(), args.end());
  auto r = RunCommand(cmd);
  if (!r.ok()) return Result<nlohmann::json>::Error(r.message());
  return ReadSummary(out);
}

// One DPDK process per switch (rocefab live --processes): the quickstart's four switches as
// four processes joined by net_memif links carry its pings and TCP as the one-process fabric
// does, every memif link carries frames both ways, and the run leaves nothing behind.
TEST(LiveTest, ProcessPerSwitchQuickstartOverMemifCarriesPingAndTcp) {
  REQUIRE_LIVE();
  const std::string run = TestRunId(1);
  const std::string out = ::testing::TempDir() + "/rocefab_live_procs";
  auto r = RunProcesses(Scenario(), run, out);
  ASSERT_TRUE(r.ok()) << r.message();
  const nlohmann::json& s = r.value();
  ExpectQuickstartFigures(s);
  EXPECT_EQ(s["layout"], "processes");
  EXPECT_EQ(s["switches"].size(), 4u);
  ASSERT_EQ(s["timing"]["processes"].size(), 4u) << s["timing"].dump();
  EXPECT_NE(s["timing"]["verdict"].get<std::string>().find("of 4)"), std::string::npos);
  ASSERT_EQ(s["links"].size(), 8u) << s["links"].dump();  // 4 switch-switch links, 2 ends each
  for (const auto& [port, l] : s["links"].items()) {
    EXPECT_GT(l["ethdev"]["rx_packets"].get<uint64_t>(), 100u) << port << ": " << l.dump();
    EXPECT_GT(l["ethdev"]["tx_packets"].get<uint64_t>(), 100u) << port << ": " << l.dump();
  }
  for (const char* sw : {"tor0", "tor1", "spine0", "spine1"}) {
    const nlohmann::json part = ReadSummary(out + "/nodes/" + sw);
    EXPECT_EQ(part["node"], sw);
    EXPECT_EQ(part["switches"].size(), 1u) << sw;
  }
  EXPECT_EQ(LeftoversOf(run), "");
}

// RDMA between emulated NICs in different processes: every test of quickstart-rdma at 100 Mb/s
// crosses the spines, so each one's frames go from its client's ToR process over memif to a
// spine process and on to its server's ToR process.
TEST(LiveTest, ProcessPerSwitchCarriesRdmaOverMemif) {
  REQUIRE_LIVE();
  const std::string run = TestRunId(2);
  const std::string out = ::testing::TempDir() + "/rocefab_live_procs_rdma";
  auto r = RunProcesses(
      std::string(ROCEFAB_SOURCE_DIR) + "/configs/scenarios/quickstart-rdma-100m.json", run, out);
  ASSERT_TRUE(r.ok()) << r.message();
  const nlohmann::json& s = r.value();
  ASSERT_EQ(s["rdma"].size(), 4u) << s["rdma"].dump();
  const char* order[] = {"write_bw", "write_lat", "send_lat", "read_bw"};  // the scenario's
  for (size_t i = 0; i < 4; ++i) {
    const auto& t = s["rdma"][i];
    EXPECT_EQ(t["test"], order[i]) << t.dump();
    EXPECT_EQ(t["errors"], 0) << t.dump();
    if (t["test"].get<std::string>().find("_bw") != std::string::npos) {
      EXPECT_GT(t["bytes"].get<uint64_t>(), 65536u) << t.dump();
    } else {
      EXPECT_GT(t["samples"].get<uint64_t>(), 0u) << t.dump();
    }
  }
  // The NICs leave the ICRC to be computed (FabricOptions::defer_icrc); a frame leaving a
  // process over memif has it computed on its way out, and the receiving NIC checks it.
  for (const auto& [name, h] : s["hosts"].items()) {
    if (h.contains("rnic")) {
      EXPECT_EQ(h["rnic"]["bad_icrc"], 0) << name;
    }
  }
  EXPECT_EQ(s["mbufs_in_use_after_run"], 0);
  EXPECT_EQ(LeftoversOf(run), "");
}

// Built-in UDP flows between hosts of different switch processes: each is one entry of the
// merged summary, its sender's count with its receiver's, and nothing is lost at a fifth of the
// links' rate.
TEST(LiveTest, ProcessPerSwitchJoinsUdpFlowsAcrossProcesses) {
  REQUIRE_LIVE();
  const std::string run = TestRunId(5);
  const std::string out = ::testing::TempDir() + "/rocefab_live_procs_udp";
  auto r = RunProcesses(
      std::string(ROCEFAB_SOURCE_DIR) + "/configs/scenarios/quickstart-rdma-100m.json", run, out,
      // Static neighbours: with ARP, tor1 drops (as arp_unresolved, counted) the frames that
      // arrive before h2's reply, and on two vCPUs shared by four processes that reply once
      // took 9.8 ms (CI); how ARP behaves is not what this test is about.
      {"--set", "neighbors=static", "--set",
       R"(traffic=[{"kind": "udp", "from": "h0", "to": "h2", "rate": "20Mbps", "size": 1000,
                    "count": 200},
                   {"kind": "udp", "from": "h3", "to": "h1", "rate": "20Mbps", "size": 1000,
                    "count": 200, "start": "1ms"}])"});
  ASSERT_TRUE(r.ok()) << r.message();
  const nlohmann::json& s = r.value();
  ASSERT_EQ(s["flows"].size(), 2u) << s["flows"].dump();
  for (size_t i = 0; i < 2; ++i) {
    const auto& f = s["flows"][i];
    EXPECT_EQ(f["id"], i);
    EXPECT_EQ(f["sent"], 200) << f.dump();
    EXPECT_EQ(f["received"], 200) << f.dump();
    EXPECT_EQ(f["lost"], 0) << f.dump();
    EXPECT_FALSE(f.contains("receiver_side")) << f.dump();
    // One-way latency compares the clocks of two processes: with their shared time 0 it is
    // positive (the sim's: 341 us, four 1,066-byte serializations at 100 Mb/s; measured here
    // 280-480 us at the least, the processes sharing two vCPUs).
    EXPECT_GT(f["latency_min_us"].get<double>(), 0.0) << f.dump();
  }
  EXPECT_EQ(LeftoversOf(run), "");
}

// A switch process killed with SIGKILL ends the whole run at once, naming it, and the other
// processes, the namespaces and the memif sockets go; the parent killed with SIGKILL takes its
// switch processes with it (PR_SET_PDEATHSIG), and `rocefab live --cleanup` removes the
// namespaces it could not.
TEST(LiveTest, ProcessPerSwitchCleansUpAfterASigkill) {
  REQUIRE_LIVE();
  for (const bool kill_parent : {false, true}) {
    SCOPED_TRACE(kill_parent ? "parent killed" : "tor0's process killed");
    const std::string run = TestRunId(kill_parent ? 4 : 3);
    const std::string out = ::testing::TempDir() + "/rocefab_live_procs_kill";
    std::filesystem::remove_all(out);
    const std::string log = ::testing::TempDir() + "/rocefab_live_procs_kill.log";
    auto pid = SpawnCommand(
        {Bin(), "live", Scenario(), "--processes", "--run-id", run, "--out", out, "--hold", "120s"},
        log);
    ASSERT_TRUE(pid.ok()) << pid.message();
    std::string text;
    ASSERT_TRUE(WaitUntilUp(
        pid.value(), log,
        [&](const std::string& t) { return t.find("traffic started") != std::string::npos; },
        &text))
        << "fabric did not come up: " << text;
    std::ifstream ready(out + "/nodes/tor0/ready");
    ASSERT_TRUE(ready.good());
    const pid_t tor0 = nlohmann::json::parse(ready)["pid"].get<pid_t>();
    // The tools running in the run's namespaces now ("traffic started" is printed once the
    // iperf3 runs, 3 s long, are spawned).
    std::vector<pid_t> tools;
    for (const auto& ns : ListNetns(run)) {
      auto pids = RunCommand({"ip", "netns", "pids", ns});
      std::istringstream in(pids.ok() ? pids.value() : "");
      for (pid_t p; in >> p;) tools.push_back(p);
    }
    kill(kill_parent ? pid.value() : tor0, SIGKILL);
    int status = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    bool exited = false;
    while (!(exited = ChildExited(pid.value(), &status)) &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // child-exit polling
    }
    if (!exited) StopChild(pid.value(), 0);
    ASSERT_TRUE(exited) << "rocefab live --processes did not end after the SIGKILL";
    if (!kill_parent) {
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << status;
      std::ifstream l(log);
      text.assign((std::istreambuf_iterator<char>(l)), std::istreambuf_iterator<char>());
      EXPECT_NE(text.find("switch process tor0 (killed by signal 9)"), std::string::npos) << text;
    } else {
      // The switch processes follow their parent (polls: they exit within their SIGTERM grace).
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      while (RunCommand({"pgrep", "-f", "run-id " + run}).ok() &&
             std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      EXPECT_FALSE(ListNetns(run).empty()) << "the parent was killed: its namespaces remain";
      // Its tools die with it (setpriv --pdeathsig), not running on in a namespace about to be
      // removed (a zombie does not count: this VM's init reaps late).
      ASSERT_FALSE(tools.empty()) << "no tool was running in the run's namespaces";
      auto running = [](pid_t p) {
        std::ifstream st("/proc/" + std::to_string(p) + "/stat");
        std::string pid, comm, state;
        return st >> pid >> comm >> state && state != "Z" && state != "X";
      };
      // Within 2 s: the iperf3 runs alone would go on for 3 s (or, once their namespace is
      // gone, spin for minutes, as they did before).
      const auto tools_until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
      auto any_running = [&] { return std::any_of(tools.begin(), tools.end(), running); };
      while (any_running() && std::chrono::steady_clock::now() < tools_until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));  // process-exit polling
      }
      EXPECT_FALSE(any_running()) << "a tool of the run outlived it";
      auto cleanup = RunCommand({Bin(), "live", "--cleanup"});
      EXPECT_TRUE(cleanup.ok()) << cleanup.message();
    }
    EXPECT_EQ(LeftoversOf(run), "");
  }
}

// `rocefab live` (one process) killed with SIGKILL at each stage of its life, the moment that
// stage's line appears: run id claimed and namespaces being made, namespaces and veths made,
// EAL and DPDK ports up (hugepage files, af_packet sockets), traffic running. Nothing of its own
// teardown runs; `rocefab live --cleanup` must then leave no process, namespace, veth, hugepage
// file, EAL folder or run file of it.
TEST(LiveTest, ASigkillAtAnyStageLeavesNothingAfterCleanup) {
  REQUIRE_LIVE();
  const std::vector<std::string> stages = {"switches,", "namespace host(s) with veth",
                                           "fabric up:", "traffic started"};
  for (size_t k = 0; k < stages.size(); ++k) {
    SCOPED_TRACE("killed at \"" + stages[k] + "\"");
    const std::string run = TestRunId(10 + static_cast<unsigned>(k));
    const std::string out = ::testing::TempDir() + "/rocefab_live_sigkill";
    std::filesystem::remove_all(out);
    const std::string log = ::testing::TempDir() + "/rocefab_live_sigkill.log";
    auto pid = SpawnCommand(
        {Bin(), "live", Scenario(), "--run-id", run, "--out", out, "--hold", "120s"}, log);
    ASSERT_TRUE(pid.ok()) << pid.message();
    std::string text;
    const bool up = WaitUntilUp(
        pid.value(), log,
        [&](const std::string& t) { return t.find(stages[k]) != std::string::npos; }, &text);
    kill(pid.value(), SIGKILL);
    int status = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!ChildExited(pid.value(), &status) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));  // child-exit polling
    }
    ASSERT_TRUE(up) << "the run never reached the stage: " << text;
    auto cleanup = RunCommand({Bin(), "live", "--cleanup"});
    EXPECT_TRUE(cleanup.ok()) << cleanup.message();
    EXPECT_EQ(LeftoversOf(run), "");
    EXPECT_FALSE(std::filesystem::exists("/run/rocefab/" + run + ".json"))
        << "the killed run's state file is still there";
    EXPECT_FALSE(std::filesystem::exists("/run/rocefab/" + run + ".json.tmp"));
  }
}

TEST(LiveTest, SigtermTearsEverythingDown) {
  REQUIRE_LIVE();
  const std::string log = ::testing::TempDir() + "/rocefab_live_sigterm.log";
  auto pid = SpawnCommand({Bin(), "live", Scenario(), "--hold", "120s"}, log);
  ASSERT_TRUE(pid.ok()) << pid.message();
  char prefix[16];
  std::snprintf(prefix, sizeof prefix, "rf%04x", static_cast<unsigned>(pid.value()) & 0xFFFF);
  // Wait (observably) until the run has built its four hosts and the fabric carries traffic:
  // "traffic started" is printed once the DPDK loop runs and ping/iperf3 are spawned.
  std::string text;
  ASSERT_TRUE(WaitUntilUp(
      pid.value(), log,
      [&](const std::string& t) {
        return t.find("traffic started") != std::string::npos && ListNetns(prefix).size() == 4 &&
               !Veths(std::string(prefix) + "s").empty();
      },
      &text))
      << "fabric did not come up: " << text;
  int status = 0;
  const bool exited = TerminateAndWait(pid.value(), &status);
  if (!exited) StopChild(pid.value(), 0);
  ASSERT_TRUE(exited) << "rocefab live ignored SIGTERM";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0)
      << "interrupted run must exit non-zero";
  EXPECT_TRUE(ListNetns(prefix).empty()) << "namespaces left after SIGTERM";
  EXPECT_TRUE(Veths(prefix).empty()) << "veths left after SIGTERM";
  EXPECT_TRUE(std::ifstream("/dev/hugepages/" + std::string(prefix) + "map_0").fail())
      << "hugepage files left after SIGTERM";
}

// --- Real RDMA programs (librocefab-verbs.so, #16) ---

std::string NsOfRun(const std::string& run, const std::string& host) { return run + "-" + host; }

// Waits (5 ms polls, at most 10 s) until something in namespace `ns` listens on TCP `port`.
bool WaitTcpListen(const std::string& ns, int port) {
  for (int i = 0; i < 2000; ++i) {
    auto r = RunCommand(
        {"ip", "netns", "exec", ns, "ss", "-Hltn", "sport", "=", ":" + std::to_string(port)});
    if (r.ok() && !r.value().empty()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // polling a listening socket
  }
  return false;
}

// Every RoCEv2 frame of a pcap: tshark decodes it as InfiniBand (BTH), and its ICRC field is the
// plain CRC-32 of its masked pseudo-packet. Returns the number of RoCEv2 frames.
long CheckRoceFramesOfCapture(const std::string& pcap) {
  auto decoded = RunCommand(
      {"sh", "-c", "tshark -r " + pcap + " -Y infiniband.bth.opcode 2>/dev/null | wc -l"});
  EXPECT_TRUE(decoded.ok()) << decoded.message();
  char err[PCAP_ERRBUF_SIZE];
  pcap_t* p = pcap_open_offline(pcap.c_str(), err);
  EXPECT_NE(p, nullptr) << err;
  if (p == nullptr) return 0;
  long roce = 0, bad = 0;
  pcap_pkthdr* h;
  const u_char* d;
  while (pcap_next_ex(p, &h, &d) == 1) {
    const uint32_t n = h->caplen;
    if (n < 14 + 20 + 8 + 12 + 4 || d[12] != 0x08 || d[13] != 0x00 || d[23] != 17) continue;
    if ((d[36] << 8 | d[37]) != 4791) continue;
    ++roce;
    const uint32_t wire =
        d[n - 4] | d[n - 3] << 8 | d[n - 2] << 16 | static_cast<uint32_t>(d[n - 1]) << 24;
    if (wire != testing::ReferenceIcrc(d, n)) ++bad;
  }
  pcap_close(p);
  EXPECT_EQ(bad, 0) << bad << " of " << roce << " RoCEv2 frames in " << pcap << " carry a bad ICRC";
  EXPECT_EQ(decoded.ok() ? std::stol(decoded.value()) : -1L, roce)
      << "tshark decodes every RoCEv2 frame of " << pcap << " as InfiniBand";
  return roce;
}

// A held live run of perftest-100m without its traffic (rocefab live --hold forever), with
// captures on `capture` ports; stopped and checked by Stop().
struct HeldVerbsFabric {
  std::string run, out;
  pid_t pid = -1;
  static HeldVerbsFabric Start(const std::string& tag, const std::vector<std::string>& capture) {
    HeldVerbsFabric h;
    std::ifstream in(std::string(ROCEFAB_SOURCE_DIR) + "/configs/scenarios/perftest-100m.json");
    nlohmann::json sc = nlohmann::json::parse(in);
    sc["traffic"] = nlohmann::json::array();
    sc["duration"] = "10ms";
    if (!capture.empty()) sc["output"]["capture"] = capture;
    const std::string file = ::testing::TempDir() + "/rocefab_" + tag + ".json";
    std::ofstream(file) << sc.dump();
    h.out = ::testing::TempDir() + "/rocefab_" + tag + "_out";
    std::filesystem::remove_all(h.out);
    const std::string log = ::testing::TempDir() + "/rocefab_" + tag + ".log";
    auto pid = SpawnCommand({Bin(), "live", file, "-q", "--hold", "forever", "--out", h.out}, log);
    EXPECT_TRUE(pid.ok()) << pid.message();
    if (!pid.ok()) return h;
    h.pid = pid.value();
    char run[16];
    std::snprintf(run, sizeof run, "rf%04x", static_cast<unsigned>(h.pid) & 0xFFFF);
    h.run = run;
    for (int i = 0; i < 3000; ++i) {  // until it says it holds (at most 60 s)
      std::ifstream l(log);
      const std::string text((std::istreambuf_iterator<char>(l)), std::istreambuf_iterator<char>());
      if (text.find("holding the fabric until destroyed") != std::string::npos) return h;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ADD_FAILURE() << "the held run never came up: see " << log;
    return h;
  }
  void Stop() {
    auto destroy = RunCommand({Bin(), "destroy", run});
    EXPECT_TRUE(destroy.ok()) << destroy.message();
    int status = 0;
    if (!TerminateAndWait(pid, &status)) StopChild(pid, 0);
    EXPECT_TRUE(ListNetns(run + "-").empty()) << "namespaces left behind";
  }
};

// ibv_rc_pingpong between h0 and h2 of a held fabric (server first, client once it listens);
// returns the Mbit/s the client printed, or -1.
double RcPingpong(const std::string& run, const std::string& iters, const std::string& size) {
  const std::string slog = ::testing::TempDir() + "/rocefab_pingpong_server.log";
  auto server = SpawnCommand(
      {Bin(), "exec", run, "h2", "--", "ibv_rc_pingpong", "-g", "0", "-n", iters, "-s", size, "-e"},
      slog);
  EXPECT_TRUE(server.ok()) << server.message();
  if (!server.ok() || !WaitTcpListen(NsOfRun(run, "h2"), 18515)) {
    ADD_FAILURE() << "ibv_rc_pingpong server: " << slog;
    return -1;
  }
  auto client = RunCommand({Bin(), "exec", run, "h0", "--", "ibv_rc_pingpong", "-g", "0", "-n",
                            iters, "-s", size, "-e", "10.1.1.2"});
  int status = 0;
  for (int i = 0; i < 500 && !ChildExited(server.value(), &status); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // child-exit polling
  }
  EXPECT_TRUE(client.ok()) << client.message();
  if (!client.ok()) return -1;
  const auto pos = client.value().find(" seconds = ");
  EXPECT_NE(pos, std::string::npos) << client.value();
  return pos == std::string::npos ? -1 : std::stod(client.value().substr(pos + 11));
}

// Unmodified programs from Debian's ibverbs-utils on a held 100 Mb/s Clos (perftest-100m without
// its traffic), through rocefab exec: ibv_devinfo lists the host's device and RoCEv2 GID;
// ibv_rc_pingpong runs h0 <-> h2 across the spines at what the links allow (10 %); our own
// verbs program gets the error codes and completion statuses the man pages give for bad input.
// A second held run captures h0's ToR port (a capture costs the poll thread time, so not while
// measuring): the provider's frames decode in tshark as RoCEv2 with correct ICRCs.
TEST(LiveTest, RealVerbsProgramsRunOnTheEmulatedNics) {
  REQUIRE_LIVE();
  const char* errors_bin = std::getenv("ROCEFAB_VERBS_ERRORS");
  ASSERT_TRUE(errors_bin != nullptr && std::filesystem::exists(errors_bin))
      << "tests/verbs_errors was not built (libibverbs-dev: scripts/setup.sh installs it)";
  ASSERT_TRUE(RunCommand({"sh", "-c", "command -v ibv_rc_pingpong && command -v ibv_devinfo"}).ok())
      << "ibverbs-utils is missing: scripts/setup.sh installs it";
  HeldVerbsFabric f = HeldVerbsFabric::Start("verbs", {});
  ASSERT_FALSE(f.run.empty());
  auto info = RunCommand({Bin(), "exec", f.run, "h0", "--", "ibv_devinfo", "-v"});
  EXPECT_TRUE(info.ok()) << info.message();
  for (const char* want : {"hca_id:\trocefab_h0", "PORT_ACTIVE", "Ethernet",
                           "::ffff:10.1.0.2, RoCE v2", "active_mtu:\t\t1024"}) {
    EXPECT_NE(info.ok() ? info.value().find(want) : 0, std::string::npos) << want;
  }
  // ibv_rc_pingpong, 64 KiB messages: each way 64 packets of a 1024-byte MTU store-and-forward
  // over 4 links, (4 + 63) x the frame time (1082 B + 24 B of preamble, IFG and FCS at 100 Mb/s);
  // it reports 2 x size x iterations over the time. (At 4 KiB the NICs' own path, about 35 us
  // each way on this VM, is 6 % of the round trip, and the shared machine's noise as much again.)
  // Best of three runs.
  const double frame_s = (1024 + 58 + 24) * 8 / 100e6;
  const double ideal_mbps = 2 * 65536 * 8 / (2 * (4 + 63) * frame_s) / 1e6;
  double best = 0;
  for (int attempt = 0; attempt < 3 && best < 0.9 * ideal_mbps; ++attempt) {
    const double mbps = RcPingpong(f.run, "50", "65536");
    std::printf("ibv_rc_pingpong 64 KiB: %.2f Mbit/s (the links allow %.2f)\n", mbps, ideal_mbps);
    best = std::max(best, mbps);
  }
  EXPECT_GT(best, 0.9 * ideal_mbps) << "ibv_rc_pingpong is more than 10 % below the link's figure";
  EXPECT_LT(best, 1.1 * ideal_mbps) << "faster than the links allow";
  auto errors = RunCommand({Bin(), "exec", f.run, "h0", "--", errors_bin, "10.1.1.2"});
  EXPECT_TRUE(errors.ok()) << errors.message();
  EXPECT_NE(errors.ok() ? errors.value().find("0 failure(s)") : 0, std::string::npos)
      << (errors.ok() ? errors.value() : errors.message());
  f.Stop();

  HeldVerbsFabric c = HeldVerbsFabric::Start("verbs_capture", {"tor0/p0"});
  ASSERT_FALSE(c.run.empty());
  EXPECT_GT(RcPingpong(c.run, "20", "4096"), 0);
  c.Stop();
  // The port facing a namespace host captures both directions (docs/results.md): what the
  // provider's NIC put on the wire, 20 pings of 4 packets and an ACK for each packet of the
  // pongs, and the same towards it (libpcap reads the pcapng).
  const long frames = CheckRoceFramesOfCapture(c.out + "/capture.pcapng");
  EXPECT_GE(frames, 320) << "80 data packets and 80 ACKs from h0, as many to it";
}

// Runs `rocefab live SCENARIO --out OUT -q --set ...` and returns its summary.json whatever the
// exit status (a run that timed out still writes it); errors only when there is none.
Result<nlohmann::json> RunLiveSummary(const std::string& scenario, const std::string& out,
                                      const std::vector<std::string>& sets) {
  std::vector<std::string> cmd = {Bin(), "live", scenario, "--out", out, "-q"};
  for (const auto& kv : sets) cmd.insert(cmd.end(), {"--set", kv});
  auto r = RunCommand(cmd);
  std::ifstream in(out + "/summary.json");
  if (!in.good()) {
    return Result<nlohmann::json>::Error(out + "/summary.json: not written (" +
                                         (r.ok() ? std::string("exit 0") : r.message()) + ")");
  }
  return nlohmann::json::parse(in);
}

// RunLiveSummary until the live run reports itself faithful (timing.faithful), at most
// `attempts` runs: a run the machine could not keep up with says so in its verdict, and its
// figures are not exactly the model's (docs/crosscheck.md). When none was faithful (on a 2-vCPU
// VM the real programs' busy polling takes a CPU from the fabric: the pause-storm scenario is
// rarely faithful there), the last run is returned and its figures are checked against the
// tests' wider tolerances, as before; the verdicts go to stderr.
Result<nlohmann::json> RunFaithfulLiveSummary(const std::string& scenario, const std::string& out,
                                              const std::vector<std::string>& sets,
                                              int attempts = 3) {
  Result<nlohmann::json> r = Result<nlohmann::json>::Error("no run");
  for (int attempt = 1; attempt <= attempts; ++attempt) {
    std::filesystem::remove_all(out);
    r = RunLiveSummary(scenario, out, sets);
    if (!r.ok()) return r;
    const auto& t = r.value()["timing"];
    if (t.is_object() && t.value("faithful", false)) return r;
    std::fprintf(stderr, "%s, attempt %d of %d: not faithful: %s\n", scenario.c_str(), attempt,
                 attempts,
                 t.is_object() ? t.value("verdict", std::string("?")).c_str() : "no timing");
  }
  return r;
}

// configs/scenarios/perftest-100m.json in rocefab live: Debian's ib_write_bw, ib_read_bw and
// ib_send_lat, unmodified, between h0 and h2 on different ToRs; their figures land in
// summary.json next to the sim's built-in app's for the same items (rocefab crosscheck compares
// them: bandwidth within 5 %). Each program's NIC balances its frames and loses none.
TEST(LiveTest, RealPerftestRunsFromAScenarioAndAgreesWithTheSim) {
  REQUIRE_LIVE();
  ASSERT_TRUE(RunCommand({"sh", "-c", "command -v ib_write_bw"}).ok())
      << "perftest is missing: scripts/setup.sh installs it";
  const std::string scenario =
      std::string(ROCEFAB_SOURCE_DIR) + "/configs/scenarios/perftest-100m.json";
  const std::string out = ::testing::TempDir() + "/rocefab_perftest";
  std::filesystem::remove_all(out);
  auto sim = RunCommand({Bin(), "sim", scenario, "--out", out + "/sim", "-q"});
  ASSERT_TRUE(sim.ok()) << sim.message();
  auto live = RunFaithfulLiveSummary(scenario, out + "/live", {});
  ASSERT_TRUE(live.ok()) << live.message();
  std::ifstream si(out + "/sim/summary.json");
  const nlohmann::json s = nlohmann::json::parse(si);
  const nlohmann::json& l = live.value();
  const bool run_faithful = l["timing"]["faithful"].get<bool>();
  // A faithful run completes every test. On one the machine could not keep up with (CI
  // 2026-12-07: 100 ms stalls), a requester whose fabric stalled past its local ACK timeout 8
  // times fails its QP at the retry limit and perftest exits without a result; that test's
  // figures are then not compared.
  ASSERT_EQ(l["rdma"].size(), 3u) << l["rdma"].dump();
  std::vector<bool> done(3, true);
  for (size_t i = 0; i < 3; ++i) {
    const auto& t = l["rdma"][i];
    done[i] = t["completed"].get<bool>();
    EXPECT_EQ(t["errors"], 0) << t.dump();
    if (run_faithful || done[i]) {
      EXPECT_TRUE(done[i]) << t.dump();
    } else {
      EXPECT_GE(t["nic"]["nic"]["rnic"]["timeouts"].get<uint64_t>(), 8u)
          << "an unfinished test ended only by its NIC's retry limit: " << t.dump();
    }
  }
  ASSERT_EQ(s["rdma"].size(), 3u);
  // The programs' NICs run in the programs' processes, outside the fabric's poll loop; the
  // verdict judges them by the fabric's rules (timing.programs): each of the six is faithful
  // when its slips moved its wire by at most the tolerance and its p99.9 receive and send
  // lateness are within it, and one that is not makes the run NOT FAITHFUL, by name.
  const auto& timing = l["timing"];
  ASSERT_EQ(timing["programs"].size(), 6u) << timing.dump();
  const double tol = timing["tolerance_us"].get<double>();
  bool every_nic = true;
  for (const auto& p : timing["programs"]) {
    const bool kept_up =
        p["slipped_us"].get<double>() <= tol && p["rx_late_p999_us"].get<double>() <= tol &&
        p["tx_late_p999_us"].get<double>() <= tol && p["rx_kernel_drops"].get<uint64_t>() == 0;
    EXPECT_EQ(p["faithful"].get<bool>(), kept_up) << p.dump();
    every_nic = every_nic && kept_up;
  }
  // Figures are held to the sim's only when the run stands behind them (timing.faithful). A
  // run that fell behind says so and may lose time to its NICs' recovery: a fabric stalled
  // longer than the local ACK timeout (4.096 us x 2^14 = 67 ms, perftest's default) makes a
  // requester time out and go back N, as a real NIC behind a stalled switch would.
  const bool faithful = timing["faithful"].get<bool>();
  if (!faithful) {
    EXPECT_NE(timing["verdict"].get<std::string>().find("NOT FAITHFUL"), std::string::npos)
        << timing["verdict"];
  }
  if (!every_nic) {
    EXPECT_FALSE(faithful) << timing.dump();
    EXPECT_NE(timing["verdict"].get<std::string>().find("the NIC of "), std::string::npos)
        << timing["verdict"];
  }
  const char* programs[] = {"ib_write_bw", "ib_read_bw", "ib_send_lat"};
  for (size_t i = 0; i < 3; ++i) {
    const auto& r = l["rdma"][i];
    EXPECT_EQ(r["app"], "perftest");
    EXPECT_EQ(r["program"], programs[i]);
    EXPECT_EQ(r["test"], s["rdma"][i]["test"]);
    for (const char* end : {"nic", "server_nic"}) {
      ASSERT_TRUE(r.contains(end)) << programs[i] << ": no NIC counters for the " << end;
      const auto& b = r[end]["frame_balance"];
      EXPECT_EQ(b["received"].get<uint64_t>() + b["created"].get<uint64_t>(),
                b["transmitted"].get<uint64_t>() + b["dropped"].get<uint64_t>() +
                    b["consumed"].get<uint64_t>() + b["held"].get<uint64_t>())
          << programs[i] << " " << end << ": " << b.dump();
      // Retransmission needs a cause the counters show: this requester's timeout or its
      // out-of-order READ responses, or a NAK or RNR NAK from the other end.
      const auto& rnic = r[end]["nic"]["rnic"];
      const auto& peer = r[end == std::string("nic") ? "server_nic" : "nic"]["nic"]["rnic"];
      if (faithful) {
        EXPECT_EQ(rnic["retransmitted"], 0) << programs[i] << " " << end;
      } else if (rnic["retransmitted"].get<uint64_t>() > 0) {
        EXPECT_GT(rnic["timeouts"].get<uint64_t>() + rnic["out_of_order"].get<uint64_t>() +
                      peer["naks_sent"].get<uint64_t>() + peer["rnr_naks_sent"].get<uint64_t>(),
                  0u)
            << programs[i] << " " << end << " retransmitted without a cause: " << rnic.dump();
      }
      // The NIC's own lateness, measured frame by frame (docs/verbs.md, Fidelity).
      const auto& rx = r[end]["port"]["rx_late_us"];
      EXPECT_EQ(rx["frames"], r[end]["port"]["rx_frames"]) << programs[i] << " " << end;
      EXPECT_LE(rx["p50"].get<double>(), rx["p99"].get<double>());
      EXPECT_GT(r[end]["port"]["tx_late_us"]["frames"].get<uint64_t>(), 0u);
    }
  }
  for (size_t i = 0; i < 2; ++i) {
    if (!done[i]) continue;  // ended by the retry limit on an unfaithful run (above)
    const double a = s["rdma"][i]["bw_avg_gbps"].get<double>();
    const double b = l["rdma"][i]["bw_avg_gbps"].get<double>();
    std::printf("%s: sim %.4f Gb/s, live %.4f Gb/s%s\n", programs[i], a, b,
                faithful ? "" : " (not faithful)");
    if (faithful) {
      EXPECT_NEAR(b, a, 0.05 * a) << programs[i] << " vs the sim's built-in app";
    } else {
      // Time lost to the machine only slows the program; nothing runs faster than the wire.
      EXPECT_LE(b, 1.05 * a) << programs[i] << " vs the sim's built-in app";
      EXPECT_GT(b, 0.5 * a) << programs[i] << " vs the sim's built-in app";
    }
  }
  if (!done[2]) return;
  const double lat = l["rdma"][2]["t_typical_us"].get<double>();
  std::printf("ib_send_lat 64 B: typical %.1f us live, %.1f us sim\n", lat,
              s["rdma"][2]["t_typical_us"].get<double>());
  EXPECT_GT(lat, s["rdma"][2]["t_min_us"].get<double>()) << "faster than the wire allows";
}

// Guo et al. section 4.3 with a real victim (configs/scenarios/perftest-pause-storm-100m.json):
// h7's NIC stalls at 1.5 s and keeps pausing; the pause spreads to tor0 and Debian's ib_write_bw
// h0->h5, which never touches h7, stalls: its NIC is paused. With tor1's PFC watchdog on h7's
// port the storm is declared there and ib_write_bw finishes at about the sim's figure; without
// it, it is stalled until the run's timeout kills it.
TEST(LiveTest, ARealIbWriteBwStalledByAPauseStormRecoversWithThePfcWatchdog) {
  REQUIRE_LIVE();
  const std::string scenario =
      std::string(ROCEFAB_SOURCE_DIR) + "/configs/scenarios/perftest-pause-storm-100m.json";
  const std::string out = ::testing::TempDir() + "/rocefab_perftest_storm";
  std::filesystem::remove_all(out);
  auto with = RunFaithfulLiveSummary(scenario, out + "/watchdog", {});
  ASSERT_TRUE(with.ok()) << with.message();
  auto without = RunLiveSummary(scenario, out + "/no-watchdog",
                                {"pfc_watchdog.enabled=false", "live.timeout=8s"});
  ASSERT_TRUE(without.ok()) << without.message();
  const auto& w = with.value()["rdma"][2];
  const auto& n = without.value()["rdma"][2];
  ASSERT_EQ(w["program"], "ib_write_bw") << w.dump();
  ASSERT_TRUE(w.contains("first_tx_at_us")) << w.dump();
  // The real program starts when its set-up is done (hundreds of ms here, a different time on
  // every run), and what it measures depends on how much of its transfer falls before the storm
  // at 1.5 s. The sim's stand-in starts at that same moment, so both face the same schedule.
  const double started_us = w["first_tx_at_us"].get<double>();
  EXPECT_LT(started_us, 1.5e6) << "the program started before the storm";
  const std::string start =
      "traffic.2.start=" + std::to_string(static_cast<int64_t>(started_us * 1000)) + "ns";
  ASSERT_TRUE(
      RunCommand({Bin(), "sim", scenario, "--out", out + "/sim", "-q", "--set", start}).ok());
  std::ifstream si(out + "/sim/summary.json");
  const nlohmann::json sim = nlohmann::json::parse(si);
  const auto& s = sim["rdma"][2];
  ASSERT_TRUE(s["completed"].get<bool>()) << s.dump();
  const double sim_bw = s["bw_avg_gbps"].get<double>();
  // The stand-in posts at `start`; its first packet left 13.5 us later in the runs measured.
  EXPECT_NEAR(s["first_tx_at_us"].get<double>(), started_us, 100) << "the same start";
  EXPECT_GT(with.value()["pause_spread"]["tor0"]["first_paused_at_us"].get<double>(), 1.5e6)
      << "the pause reaches the victim's ToR after the stall";
  EXPECT_GT(with.value()["pause_spread"]["tor1"]["first_storm_at_us"].get<double>(), 1.5e6)
      << "tor1's watchdog declares the storm";
  for (const auto* r : {&w, &n}) {
    ASSERT_TRUE(r->contains("nic")) << r->dump();
    EXPECT_GT((*r)["nic"]["nic"]["paused_time_ps"].get<double>(), 100e9)
        << "the victim's NIC was paused by the storm for more than 100 ms: " << (*r)["nic"].dump();
  }
  const bool faithful = with.value()["timing"].value("faithful", false);
  EXPECT_FALSE(n.value("completed", false)) << "without the watchdog the victim stays stalled";
  EXPECT_TRUE(without.value()["timed_out"].get<bool>());
  if (!faithful && !w["completed"].get<bool>()) {
    // A run the machine could not keep up with (CI 2026-12-07: 10-320 ms of steal in each of
    // three attempts) paused the victim longer than the model does (910 ms against 593-650 in
    // faithful runs): its requester's local ACK timeout (4.096 us x 2^14 = 67 ms) then expires
    // 8 times, and at the retry limit (7 retries) the NIC fails the QP (IBV_WC_RETRY_EXC_ERR)
    // and perftest exits without a result, as over a real switch that stalled that long. The
    // test then checks that the run said it was not faithful and that the retry limit ended it.
    EXPECT_NE(with.value()["timing"].value("verdict", std::string()).find("NOT FAITHFUL"),
              std::string::npos)
        << "an unfaithful run says so";
    EXPECT_GE(w["nic"]["nic"]["rnic"]["timeouts"].get<uint64_t>(), 8u)
        << "the victim ended only by its NIC's retry limit: " << w.dump();
    return;
  }
  ASSERT_TRUE(w["completed"].get<bool>()) << w.dump();
  const double wbw = w["bw_avg_gbps"].get<double>();
  const double sim_paused_ms = sim["hosts"]["h0"]["paused_time_ps"].get<double>() / 1e9;
  std::printf(
      "ib_write_bw victim started at %.0f ms: %.4f Gb/s with the watchdog (sim from the same "
      "start %.4f), paused %.0f ms (sim %.0f), %s; without: %s, paused %.0f ms\n",
      started_us / 1e3, wbw, sim_bw, w["nic"]["nic"]["paused_time_ps"].get<double>() / 1e9,
      sim_paused_ms, faithful ? "faithful" : "NOT faithful",
      n.value("completed", false) ? "finished" : "stalled until the timeout",
      n["nic"]["nic"]["paused_time_ps"].get<double>() / 1e9);
  // After the storm the victim shares tor0's uplink with h2 and h3 in a PFC game whose outcome
  // depends on when each NIC sees its XOFF/XON; the victim's NIC runs in the real program's
  // process. Faithful runs on the 2-vCPU VM (2026-12-05, from about 1.01 s): live 0.077 Gb/s,
  // paused 593-650 ms; sim 0.0694, 1074 ms. A run the machine could not keep up with (the real
  // programs' busy polling takes a vCPU from the fabric) says so in its verdict and its figure
  // is not the model's: with a CPU hog live gave 0.065 Gb/s (paused 1.3 s), in CI once 0.084
  // (285 ms; the CI's other perftest runs were unfaithful then). There the test checks that the
  // victim recovered and the run said it could not keep up, not the figure.
  if (faithful) {
    EXPECT_NEAR(wbw, sim_bw, 0.2 * sim_bw) << "with the watchdog: the sim's figure from that start";
  } else {
    EXPECT_NE(with.value()["timing"].value("verdict", std::string()).find("NOT FAITHFUL"),
              std::string::npos)
        << "an unfaithful run says so";
    EXPECT_GT(wbw, 0.6 * sim_bw) << "with the watchdog the victim recovers";
    EXPECT_LT(wbw, 1.4 * sim_bw) << "and shares tor0's uplink with h2 and h3 as in the sim";
  }
}

// Guo et al. section 4.1 with a real program (configs/scenarios/perftest-livelock-100m.json):
// Debian's ib_write_bw writes 1 MiB messages while tor0 loses one frame in 256 on both uplinks.
// Go-back-N keeps goodput near the line rate; go-back-0 completes nothing while the NIC
// retransmits all the time.
TEST(LiveTest, ARealIbWriteBwLivelocksUnderGoBack0AndNotUnderGoBackN) {
  REQUIRE_LIVE();
  const std::string scenario =
      std::string(ROCEFAB_SOURCE_DIR) + "/configs/scenarios/perftest-livelock-100m.json";
  const std::string out = ::testing::TempDir() + "/rocefab_perftest_livelock";
  std::filesystem::remove_all(out);
  auto gbn = RunFaithfulLiveSummary(scenario, out + "/gbn", {});
  ASSERT_TRUE(gbn.ok()) << gbn.message();
  auto gb0 = RunLiveSummary(scenario, out + "/gb0", {"nic.recovery=go_back_0", "live.timeout=8s"});
  ASSERT_TRUE(gb0.ok()) << gb0.message();
  const auto& a = gbn.value()["rdma"][0];
  const auto& b = gb0.value()["rdma"][0];
  ASSERT_TRUE(a["completed"].get<bool>()) << a.dump();
  const double line = 100e6 * 1024 / (1024 + 58 + 24) / 1e9;  // payload Gb/s at MTU 1024
  std::printf("ib_write_bw 1 MiB under 1/256 loss: go-back-N %.4f Gb/s (line %.4f), go-back-0 %s\n",
              a["bw_avg_gbps"].get<double>(), line,
              b.value("completed", false) ? "completed" : "no message completed");
  // Faithful runs here give 0.0876 Gb/s (docs/verbs.md). When all three tries were not faithful
  // (the program's NIC, in its own process on a 2-vCPU VM, fell behind its catch-up window: CI
  // 2026-12-07 gave 0.0737, 80 % of the line less 0.4 %), the figure is not the model's and the
  // run says so; go-back-N still delivers most of the line, far from the livelock below.
  const auto& timing = gbn.value()["timing"];
  if (timing.value("faithful", false)) {
    EXPECT_GT(a["bw_avg_gbps"].get<double>(), 0.8 * line) << "go-back-N delivers";
  } else {
    EXPECT_NE(timing.value("verdict", std::string()).find("NOT FAITHFUL"), std::string::npos)
        << "an unfaithful run says so";
    EXPECT_GT(a["bw_avg_gbps"].get<double>(), 0.5 * line) << "go-back-N delivers";
  }
  EXPECT_FALSE(b.value("completed", false)) << "go-back-0 livelocks: " << b.dump();
  ASSERT_TRUE(b.contains("nic")) << "the killed program's NIC left its counters: " << b.dump();
  EXPECT_GT(b["nic"]["nic"]["rnic"]["retransmitted"].get<uint64_t>(), 1000u)
      << "while retransmitting all the time";
  // The program never completes a message: the run's timeout kills it, or its NIC fails the QP
  // with IBV_WC_RETRY_EXC_ERR (the local ACK timer fired more than retry_cnt, 7, times in a
  // row: a lost last frame no later frame reveals, or the machine stalled past 67 ms; CI
  // 2026-12-07, with 200-510 ms of steal a run) and perftest exits before the timeout.
  if (!gb0.value()["timed_out"].get<bool>()) {
    EXPECT_GE(b["nic"]["nic"]["rnic"]["timeouts"].get<uint64_t>(), 8u)
        << "go-back-0 ended before the timeout only by the NIC's retry limit: " << b.dump();
  }
}

}  // namespace
}  // namespace rocefab

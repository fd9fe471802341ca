#include "run/crosscheck.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "fabric/results.h"
#include "run/live_run.h"
#include "run/netns.h"

namespace rocefab {

namespace {

// One comparison rule: |sim - live| <= max(rel * |sim|, abs).
struct Tolerance {
  double rel;
  double abs;
  std::string text;
};

void Add(std::vector<CrosscheckRow>* rows, const std::string& figure, double sim, double live,
         const Tolerance& t) {
  const double allowed = std::max(t.rel * std::fabs(sim), t.abs);
  rows->push_back(CrosscheckRow{figure, sim, live, t.text, std::fabs(sim - live) <= allowed});
}

std::string Pair(const nlohmann::json& o) {
  return o.value("from", std::string("?")) + "->" + o.value("to", std::string("?"));
}

double Num(const nlohmann::json& o, const char* key) {
  return o.contains(key) && o[key].is_number() ? o[key].get<double>() : 0.0;
}

// Latency: within max(10 %, the live tolerance per round trip).
Tolerance LatencyTolerance(double live_tol_us) {
  char b[64];
  std::snprintf(b, sizeof b, "max(10 %%, %.2f us)", live_tol_us);
  return Tolerance{0.10, live_tol_us, b};
}

void CompareRdma(const nlohmann::json& sim, const nlohmann::json& live, double tol_us,
                 std::vector<CrosscheckRow>* rows) {
  if (!sim["rdma"].is_array() || !live["rdma"].is_array()) return;
  const size_t n = std::min(sim["rdma"].size(), live["rdma"].size());
  for (size_t i = 0; i < n; ++i) {
    const auto& a = sim["rdma"][i];
    const auto& b = live["rdma"][i];
    const std::string name = "rdma " + a["test"].get<std::string>() + " " + Pair(a);
    if (a.contains("bw_avg_gbps")) {
      Add(rows, name + " Gb/s", Num(a, "bw_avg_gbps"), Num(b, "bw_avg_gbps"), {0.05, 0, "5 %"});
    } else {
      Add(rows, name + " samples", Num(a, "samples"), Num(b, "samples"), {0.01, 0, "1 %"});
      for (const char* k : {"t_typical_us", "t_p99_us", "t_p999_us"}) {
        Add(rows, name + " " + k, Num(a, k), Num(b, k), LatencyTolerance(2 * tol_us));
      }
    }
  }
}

void ComparePingmesh(const nlohmann::json& sim, const nlohmann::json& live, double tol_us,
                     std::vector<CrosscheckRow>* rows) {
  if (!sim["pingmesh"].is_object() || !live["pingmesh"].is_object()) return;
  auto one = [&](const std::string& scope, const nlohmann::json& a, const nlohmann::json& b) {
    for (const char* k : {"rtt_p50_us", "rtt_p99_us", "rtt_p999_us"}) {
      Add(rows, "pingmesh " + scope + " " + k, Num(a, k), Num(b, k), LatencyTolerance(2 * tol_us));
    }
  };
  one("fabric", sim["pingmesh"]["fabric"], live["pingmesh"]["fabric"]);
  for (const auto& [k, v] : sim["pingmesh"]["tor_pairs"].items()) {
    if (live["pingmesh"]["tor_pairs"].contains(k)) one(k, v, live["pingmesh"]["tor_pairs"][k]);
  }
}

void ComparePingsAndFlows(const nlohmann::json& sim, const nlohmann::json& live, double tol_us,
                          std::vector<CrosscheckRow>* rows) {
  // Only probes between emulated hosts exist in both runners the same way (the sim has no
  // kernel; a live namespace host's ping is the kernel's).
  const auto& live_hosts = live["hosts"];
  std::map<std::string, const nlohmann::json*> live_pings;
  for (const auto& p : live["pings"]) live_pings[Pair(p)] = &p;
  for (const auto& p : sim["pings"]) {
    if (!live_hosts.contains(p["from"].get<std::string>())) continue;
    auto it = live_pings.find(Pair(p));
    if (it == live_pings.end()) continue;
    for (const char* k : {"rtt_p50_us", "rtt_p99_us"}) {
      Add(rows, "ping " + Pair(p) + " " + k, Num(p, k), Num(*it->second, k),
          LatencyTolerance(2 * tol_us));
    }
  }
  const size_t n = std::min(sim["flows"].size(), live["flows"].size());
  for (size_t i = 0; i < n; ++i) {
    const auto& a = sim["flows"][i];
    const auto& b = live["flows"][i];
    if (!a.contains("goodput_gbps") || !b.contains("goodput_gbps")) continue;
    Add(rows, "flow " + std::to_string(i) + " " + Pair(a) + " Gb/s", Num(a, "goodput_gbps"),
        Num(b, "goodput_gbps"), {0.05, 0, "5 %"});
  }
}

void CompareSwitches(const nlohmann::json& sim, const nlohmann::json& live,
                     const std::vector<std::string>& spines, std::vector<CrosscheckRow>* rows) {
  auto xoff = [](const nlohmann::json& sw) {
    double n = 0;
    for (const auto& p : sw["ports"]) {
      for (const auto& [prio, c] : p["pfc"].items()) n += c.value("tx_xoff", 0.0);
    }
    return n;
  };
  for (const auto& [name, a] : sim["switches"].items()) {
    if (!live["switches"].contains(name)) continue;
    const auto& b = live["switches"][name];
    Add(rows, name + " PFC XOFF sent", xoff(a), xoff(b), {0.20, 10, "max(20 %, 10)"});
    if (a.contains("conweave") && a["conweave"].contains("tx") && b.contains("conweave")) {
      // ConWeave's decisions follow the timing of replies and queues: reroutes and held frames.
      const auto &ca = a["conweave"], &cb = b["conweave"];
      Add(rows, name + " ConWeave reroutes", Num(ca["tx"], "reroutes"), Num(cb["tx"], "reroutes"),
          {0.25, 5, "max(25 %, 5)"});
      Add(rows, name + " ConWeave frames held", Num(ca["rx"], "held"), Num(cb["rx"], "held"),
          {0.25, 50, "max(25 %, 50)"});
    }
    std::map<std::string, std::pair<double, double>> drops;
    for (const auto& [r, c] : a["drops"].items()) drops[r].first = c.get<double>();
    for (const auto& [r, c] : b["drops"].items()) drops[r].second = c.get<double>();
    for (const auto& [r, d] : drops) {
      const bool lossless = r.find("lossless") != std::string::npos;
      Add(rows, name + " drops " + r, d.first, d.second,
          lossless ? Tolerance{0, 0.5, "both zero"} : Tolerance{0.10, 10, "max(10 %, 10)"});
    }
  }
  // ECMP spread: each spine's share of the packets all spines received.
  double sim_total = 0, live_total = 0;
  std::vector<std::pair<double, double>> per;
  auto rx = [](const nlohmann::json& sw) {
    double n = 0;
    for (const auto& p : sw["ports"]) n += p.value("rx_packets", 0.0);
    return n;
  };
  for (const auto& sp : spines) {
    if (!sim["switches"].contains(sp) || !live["switches"].contains(sp)) continue;
    per.emplace_back(rx(sim["switches"][sp]), rx(live["switches"][sp]));
    sim_total += per.back().first;
    live_total += per.back().second;
  }
  if (per.size() > 1 && sim_total > 0 && live_total > 0) {
    for (size_t i = 0; i < per.size(); ++i) {
      Add(rows, spines[i] + " share of spine packets %", 100 * per[i].first / sim_total,
          100 * per[i].second / live_total, {0, 5, "5 points"});
    }
  }
}

void CompareWorkload(const nlohmann::json& sim, const nlohmann::json& live,
                     std::vector<CrosscheckRow>* rows) {
  if (!sim["workload"].is_object() || !live["workload"].is_object()) return;
  Add(rows, "workload flows finished", Num(sim["workload"], "finished"),
      Num(live["workload"], "finished"), {0.01, 0, "1 %"});
  Add(rows, "FCT slowdown avg (all flows)", Num(sim["workload"], "slowdown_avg"),
      Num(live["workload"], "slowdown_avg"), {0.10, 0, "10 %"});
  for (const auto& [bucket, a] : sim["workload"]["buckets"].items()) {
    const auto& b = live["workload"]["buckets"][bucket];
    if (a.value("count", 0) < 20 || !b.is_object()) continue;
    Add(rows, "FCT slowdown " + bucket + " avg", Num(a, "avg"), Num(b, "avg"), {0.10, 0, "10 %"});
    Add(rows, "FCT slowdown " + bucket + " p99", Num(a, "p99"), Num(b, "p99"), {0.10, 0, "10 %"});
  }
}

// Runs `argv` with its output in `log`; returns its exit status (-1: could not start).
int RunChild(const std::vector<std::string>& argv, const std::string& log) {
  auto pid = SpawnCommand(argv, log);
  if (!pid.ok()) return -1;
  int status = 0;
  while (!ChildExited(pid.value(), &status)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // child-exit polling
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

Result<nlohmann::json> ReadSummary(const std::string& dir) {
  std::ifstream in(dir + "/summary.json");
  if (!in) return Result<nlohmann::json>::Error(dir + "/summary.json: not written");
  try {
    return nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    return Result<nlohmann::json>::Error(dir + "/summary.json: " + e.what());
  }
}

// The printed table: one row per figure, the live timing verdict, the overall verdict.
std::string FormatTable(const std::vector<CrosscheckRow>& rows, const nlohmann::json& timing,
                        bool faithful, bool agree) {
  std::string table;
  char line[256];
  std::snprintf(line, sizeof line, "%-44s %12s %12s  %-20s %s\n", "figure", "sim", "live",
                "tolerance", "verdict");
  table += line;
  for (const auto& r : rows) {
    std::snprintf(line, sizeof line, "%-44s %12.3f %12.3f  %-20s %s\n", r.figure.c_str(), r.sim,
                  r.live, r.tolerance.c_str(), r.agree ? "agree" : "DISAGREE");
    table += line;
  }
  const auto bad = static_cast<size_t>(
      std::count_if(rows.begin(), rows.end(), [](const CrosscheckRow& r) { return !r.agree; }));
  table += "\nlive timing: " +
           (timing.is_object() ? timing.value("verdict", std::string("?")) : std::string("?")) +
           "\n";
  std::snprintf(line, sizeof line, "crosscheck: %s (%zu figures, %zu disagree%s)\n",
                agree ? "AGREE" : "DISAGREE", rows.size(), bad,
                faithful ? "" : "; the live run was not faithful");
  return table + line;
}

nlohmann::json RowsJson(const std::vector<CrosscheckRow>& rows) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& r : rows) {
    j.push_back({{"figure", r.figure},
                 {"sim", r.sim},
                 {"live", r.live},
                 {"tolerance", r.tolerance},
                 {"agree", r.agree}});
  }
  return j;
}

}  // namespace

std::vector<CrosscheckRow> CompareSummaries(const nlohmann::json& sim, const nlohmann::json& live,
                                            const std::vector<std::string>& spines,
                                            double live_tolerance_us) {
  std::vector<CrosscheckRow> rows;
  CompareRdma(sim, live, live_tolerance_us, &rows);
  ComparePingmesh(sim, live, live_tolerance_us, &rows);
  ComparePingsAndFlows(sim, live, live_tolerance_us, &rows);
  CompareWorkload(sim, live, &rows);
  CompareSwitches(sim, live, spines, &rows);
  return rows;
}

std::vector<DiffRow> DiffSummaries(const nlohmann::json& a, const nlohmann::json& b,
                                   size_t* changed) {
  // Spines by name, as the Clos generator and the importers name them.
  std::vector<std::string> spines;
  if (a.contains("switches") && a["switches"].is_object()) {
    for (const auto& [name, sw] : a["switches"].items()) {
      if (name.rfind("spine", 0) == 0) spines.push_back(name);
    }
  }
  std::vector<DiffRow> rows;
  for (const CrosscheckRow& r : CompareSummaries(a, b, spines, 0.0)) {
    DiffRow d{r.figure, r.sim, r.live, 0.0};
    if (r.sim != r.live) d.relative = r.sim != 0 ? (r.live - r.sim) / std::abs(r.sim) : r.live;
    rows.push_back(d);
  }
  std::stable_sort(rows.begin(), rows.end(), [](const DiffRow& x, const DiffRow& y) {
    const bool cx = x.a != x.b, cy = y.a != y.b;
    if (cx != cy) return cx;
    return cx && std::abs(x.relative) > std::abs(y.relative);
  });
  *changed = static_cast<size_t>(
      std::count_if(rows.begin(), rows.end(), [](const DiffRow& r) { return r.a != r.b; }));
  return rows;
}

std::string FormatDiff(const std::vector<DiffRow>& rows, size_t changed, const std::string& a_name,
                       const std::string& b_name) {
  std::string out;
  char line[512];
  if (changed > 0) {
    std::snprintf(line, sizeof line, "%-44s %12s %12s %9s\n", "figure", "A", "B", "change");
    out += line;
  }
  for (size_t i = 0; i < changed; ++i) {
    const DiffRow& r = rows[i];
    if (r.a != 0) {
      std::snprintf(line, sizeof line, "%-44s %12.3f %12.3f %+8.1f%%\n", r.figure.c_str(), r.a, r.b,
                    100 * r.relative);
    } else {
      std::snprintf(line, sizeof line, "%-44s %12.3f %12.3f %9s\n", r.figure.c_str(), r.a, r.b,
                    "(from 0)");
    }
    out += line;
  }
  std::snprintf(line, sizeof line, "%s%zu of %zu figures differ (A = %s, B = %s)\n",
                changed > 0 ? "\n" : "", changed, rows.size(), a_name.c_str(), b_name.c_str());
  out += line;
  return out;
}

std::vector<std::string> AlignedStarts(const Scenario& s, const nlohmann::json& live) {
  std::vector<std::string> sets;
  if (!live.contains("rdma") || !live["rdma"].is_array()) return sets;
  for (const auto& r : live["rdma"]) {
    if (r.value("app", std::string()) != "perftest" || !r.contains("first_tx_at_us")) continue;
    for (size_t i = 0; i < s.traffic.size(); ++i) {
      const auto& item = s.traffic[i];
      if (item.kind() != TrafficItem::Kind::kRdma ||
          item.perftest().app != PerftestSpec::App::kPerftest || item.from != r["from"] ||
          item.to != r["to"] || PerftestName(item.perftest().test) != r["test"]) {
        continue;
      }
      const auto ns = static_cast<int64_t>(std::llround(r["first_tx_at_us"].get<double>() * 1e3));
      sets.push_back("traffic." + std::to_string(i) + ".start=" + std::to_string(ns) + "ns");
      break;
    }
  }
  return sets;
}

Result<int> RunCrosscheck(const std::string& scenario_path, const CrosscheckOptions& opt) {
  using R = Result<int>;
  if (geteuid() != 0) {
    return R::Error(
        "rocefab crosscheck runs the scenario live too, which needs root (network "
        "namespaces, DPDK); run it with sudo");
  }
  auto sc = Scenario::Load(scenario_path, opt.sets);
  if (!sc.ok()) return sc.status();
  const Scenario& s = sc.value();
  std::string dir = opt.out_dir;
  const bool keep = !dir.empty();
  if (!keep) dir = "/tmp/rocefab-crosscheck-" + std::to_string(getpid());
  std::error_code ec;
  std::filesystem::create_directories(dir + "/sim", ec);
  std::filesystem::create_directories(dir + "/live", ec);
  if (ec) return R::Error(dir + ": " + ec.message());
  auto say = [&](const std::string& line) {
    if (!opt.quiet) std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  };
  say("rocefab crosscheck: " + s.name + ": live, then sim (logs in " + dir + "/{live,sim}.log)");
  std::vector<std::string> live_cmd = {opt.self, "live",        scenario_path,
                                       "--out",  dir + "/live", "-q"};
  if (!opt.live_lcores.empty()) live_cmd.insert(live_cmd.end(), {"--lcores", opt.live_lcores});
  if (opt.live_processes) live_cmd.push_back("--processes");
  for (const std::string& set : opt.sets) live_cmd.insert(live_cmd.end(), {"--set", set});
  const int live_rc = RunChild(live_cmd, dir + "/live.log");
  if (live_rc != 0) {
    return R::Error("the live run failed (exit " + std::to_string(live_rc) + "): see " + dir +
                    "/live.log");
  }
  auto live = ReadSummary(dir + "/live");
  if (!live.ok()) return live.status();
  std::vector<std::string> sim_cmd = {opt.self, "sim", scenario_path, "--out", dir + "/sim", "-q"};
  for (const std::string& set : opt.sets) sim_cmd.insert(sim_cmd.end(), {"--set", set});
  for (const std::string& set : AlignedStarts(s, live.value())) {
    say("  the sim's stand-in starts where the real program did: --set " + set);
    sim_cmd.insert(sim_cmd.end(), {"--set", set});
  }
  const int sim_rc = RunChild(sim_cmd, dir + "/sim.log");
  if (sim_rc != 0) {
    return R::Error("the sim run failed (exit " + std::to_string(sim_rc) + "): see " + dir +
                    "/sim.log");
  }
  auto sim = ReadSummary(dir + "/sim");
  if (!sim.ok()) return sim.status();
  std::vector<std::string> spines;
  for (const auto& sw : s.topology.switches) {
    if (sw.role == SwitchRole::kSpine) spines.push_back(sw.name);
  }
  const double tol_us = LiveTimingTolerance(s) / 1e6;
  const auto rows = CompareSummaries(sim.value(), live.value(), spines, tol_us);
  const auto& timing = live.value()["timing"];
  const bool faithful = timing.is_object() && timing.value("faithful", false);
  const bool agree = faithful && std::all_of(rows.begin(), rows.end(),
                                             [](const CrosscheckRow& r) { return r.agree; });
  const std::string table = FormatTable(rows, timing, faithful, agree);
  if (!opt.quiet) std::fputs(table.c_str(), stdout);
  if (keep) {
    std::ofstream(dir + "/crosscheck.txt") << table;
    Status st = WriteJsonFile(dir + "/crosscheck.json", {{"scenario", s.name},
                                                         {"agree", agree},
                                                         {"live_faithful", faithful},
                                                         {"live_tolerance_us", tol_us},
                                                         {"rows", RowsJson(rows)}});
    if (!st.ok()) return st;
  } else {
    std::filesystem::remove_all(dir, ec);
  }
  return agree ? 0 : 1;
}

}  // namespace rocefab

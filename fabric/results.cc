#include "fabric/results.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "common/files.h"
#include "common/wire/headers.h"
#include "common/wire/roce_headers.h"
#include "fabric/paths.h"
#include "fabric/plan.h"

namespace rocefab {

nlohmann::json PingJson(const std::string& from, const std::string& to, int64_t sent,
                        std::vector<Time> rtts) {
  const auto received = static_cast<int64_t>(rtts.size());
  const double loss =
      sent == 0 ? 0.0 : 100.0 * static_cast<double>(sent - received) / static_cast<double>(sent);
  nlohmann::json j = {
      {"from", from}, {"to", to}, {"sent", sent}, {"received", received}, {"loss_pct", loss}};
  if (rtts.size() <= 10000) {  // samples for latency CDFs (rocefab report), in probe order
    nlohmann::json samples = nlohmann::json::array();
    for (Time x : rtts) samples.push_back(x / 1e6);
    j["rtt_us"] = samples;
  }
  j["rtt_min_us"] = Percentile(rtts, 1e-9) / 1e6;  // sorts rtts
  j["rtt_p50_us"] = Percentile(rtts, 0.5) / 1e6;
  j["rtt_p99_us"] = Percentile(rtts, 0.99) / 1e6;
  j["rtt_max_us"] = Percentile(rtts, 1.0) / 1e6;
  return j;
}

Status WriteJsonFile(const std::string& path, const nlohmann::json& j) {
  if (Status st = RefuseSymlink(path); !st.ok()) return st;
  std::ofstream out(path);
  if (!out) return Status::Error(path + ": cannot write");
  out << j.dump(2) << "\n";
  return out ? Status() : Status::Error(path + ": write failed");
}

Status WriteCsvs(const std::string& dir, const nlohmann::json& s) {
  for (const char* name : {"/flows.csv", "/pings.csv"}) {
    if (Status st = RefuseSymlink(dir + name); !st.ok()) return st;
  }
  {
    std::ofstream f(dir + "/flows.csv");
    if (!f) return Status::Error(dir + "/flows.csv: cannot write");
    f << "id,kind,from,to,sport,sent,received,lost,out_of_order,goodput_gbps,latency_min_us,"
         "latency_avg_us,latency_max_us\n";
    for (const auto& fl : s["flows"]) {
      f << fl["id"] << "," << fl["kind"].get<std::string>() << "," << fl["from"].get<std::string>()
        << "," << fl["to"].get<std::string>() << "," << fl["sport"] << "," << fl["sent"] << ","
        << fl["received"] << "," << fl["lost"] << "," << fl.value("out_of_order", 0) << ","
        << fl.value("goodput_gbps", 0.0) << "," << fl.value("latency_min_us", 0.0) << ","
        << fl.value("latency_avg_us", 0.0) << "," << fl.value("latency_max_us", 0.0) << "\n";
    }
  }
  std::ofstream f(dir + "/pings.csv");
  if (!f) return Status::Error(dir + "/pings.csv: cannot write");
  f << "from,to,sent,received,loss_pct,rtt_min_us,rtt_p50_us,rtt_p99_us,rtt_max_us\n";
  for (const auto& p : s["pings"]) {
    f << p["from"].get<std::string>() << "," << p["to"].get<std::string>() << "," << p["sent"]
      << "," << p["received"] << "," << p["loss_pct"] << "," << p["rtt_min_us"] << ","
      << p["rtt_p50_us"] << "," << p["rtt_p99_us"] << "," << p["rtt_max_us"] << "\n";
  }
  return Status();
}

void PrintAccount(const nlohmann::json& s) {
  // One time-ordered list: fault-timeline events ("<t> us  text"), first pause per switch, storms
  // declared by switch watchdogs, NIC watchdogs.
  std::vector<std::pair<double, std::string>> lines;
  if (s.contains("events") && s["events"].is_array()) {
    for (const auto& e : s["events"]) {
      const std::string text = e.get<std::string>();
      char* end = nullptr;
      const double at = std::strtod(text.c_str(), &end);
      const size_t us = text.find(" us  ");
      if (end != text.c_str() && us != std::string::npos) {
        lines.emplace_back(at, text.substr(us + 5));
      } else {
        lines.emplace_back(-1, text);
      }
    }
  }
  if (s.contains("pause_spread")) {
    for (auto it = s["pause_spread"].begin(); it != s["pause_spread"].end(); ++it) {
      const double at = it.value()["first_paused_at_us"].get<double>();
      if (at >= 0) lines.emplace_back(at, "pause first reached " + it.key());
      const double storm = it.value()["first_storm_at_us"].get<double>();
      if (storm >= 0) lines.emplace_back(storm, it.key() + ": PFC watchdog declared a storm");
    }
  }
  if (s.contains("nic_watchdogs")) {
    for (auto it = s["nic_watchdogs"].begin(); it != s["nic_watchdogs"].end(); ++it) {
      lines.emplace_back(it.value()["watchdog_fired_at_us"].get<double>(),
                         "NIC watchdog of " + it.key() + " stopped its pause frames");
    }
  }
  if (lines.empty()) return;
  std::stable_sort(lines.begin(), lines.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  std::printf("\naccount:\n");
  for (const auto& [at, what] : lines) {
    if (at >= 0) {
      std::printf("  %12.3f us  %s\n", at, what.c_str());
    } else {
      std::printf("  %s\n", what.c_str());
    }
  }
}

std::vector<std::string> ConweaveAccount(const nlohmann::json& s) {
  uint64_t reroutes = 0, by_tail = 0, by_timeout = 0, ooo = 0;
  bool any = false;
  auto num = [](const nlohmann::json& o, const char* k) {
    return o.contains(k) && o[k].is_number_integer() ? o[k].get<uint64_t>() : uint64_t{0};
  };
  if (s.contains("switches")) {
    for (const auto& sw : s["switches"]) {
      if (!sw.contains("conweave")) continue;
      any = true;
      const auto& c = sw["conweave"];
      if (c.contains("tx")) reroutes += num(c["tx"], "reroutes");
      if (c.contains("rx")) {
        by_tail += num(c["rx"], "releases_by_tail");
        by_timeout += num(c["rx"], "releases_by_timeout");
      }
    }
  }
  if (!any) return {};
  if (s.contains("hosts")) {
    for (const auto& h : s["hosts"]) {
      if (h.contains("rnic")) ooo += num(h["rnic"], "out_of_order");
    }
  }
  std::vector<std::string> lines;
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "conweave: %llu reroutes; reorder queues released %llu by TAIL, %llu by deadline; "
                "%llu packets out of order at the NICs",
                static_cast<unsigned long long>(reroutes), static_cast<unsigned long long>(by_tail),
                static_cast<unsigned long long>(by_timeout), static_cast<unsigned long long>(ooo));
  lines.emplace_back(buf);
  const uint64_t releases = by_tail + by_timeout;
  const double pct =
      releases == 0 ? 0.0 : 100.0 * static_cast<double>(by_timeout) / static_cast<double>(releases);
  if (pct > kConweaveTimeoutWarnPct) {
    std::snprintf(buf, sizeof buf,
                  "warning: %.1f %% of the reorder queues were released by their deadline, not "
                  "by a TAIL (above %.0f %%): the old path's packets reached the NICs out of "
                  "order, each a go-back-N retransmission.",
                  pct, kConweaveTimeoutWarnPct);
    lines.emplace_back(buf);
    lines.emplace_back(
        "  Under PFC a TAIL can wait behind a pause its flow's held frames cause (they count in "
        "their ingress PG: load_balancing.conweave.charge_held_to_buffer); docs/experiments.md, "
        "\"The default model's ConWeave collapse\".");
  }
  return lines;
}

void PrintSummaryTable(const nlohmann::json& s) {
  PrintAccount(s);
  if (!s["pings"].empty()) {
    // A nearest-rank p99 of fewer than 100 samples is the maximum: printed as "-".
    std::printf("\n%-8s %-8s %6s %6s %7s %10s %10s %10s\n", "from", "to", "sent", "recv", "loss%",
                "rtt_p50us", "rtt_p99us", "rtt_maxus");
    for (const auto& p : s["pings"]) {
      char p99[32] = "-";
      if (p["received"].get<int>() >= 100) {
        std::snprintf(p99, sizeof p99, "%.2f", p["rtt_p99_us"].get<double>());
      }
      std::printf("%-8s %-8s %6d %6d %7.2f %10.2f %10s %10.2f\n",
                  p["from"].get<std::string>().c_str(), p["to"].get<std::string>().c_str(),
                  p["sent"].get<int>(), p["received"].get<int>(), p["loss_pct"].get<double>(),
                  p["rtt_p50_us"].get<double>(), p99, p["rtt_max_us"].get<double>());
    }
  }
  if (s.contains("flows") && !s["flows"].empty()) {
    std::printf("\n%-4s %-7s %-8s %-8s %9s %9s %7s %10s %10s\n", "id", "kind", "from", "to", "sent",
                "recv", "lost", "Gb/s", "lat_avgus");
    for (const auto& f : s["flows"]) {
      // received/lost are null for a namespace host (its kernel does not count for us).
      auto num = [](const nlohmann::json& v) {
        return v.is_null() ? std::string("-") : std::to_string(v.get<long long>());
      };
      std::printf("%-4d %-7s %-8s %-8s %9lld %9s %7s %10.3f %10.2f\n", f["id"].get<int>(),
                  f["kind"].get<std::string>().c_str(), f["from"].get<std::string>().c_str(),
                  f["to"].get<std::string>().c_str(), f["sent"].get<long long>(),
                  num(f["received"]).c_str(), num(f["lost"]).c_str(), f.value("goodput_gbps", 0.0),
                  f.value("latency_avg_us", 0.0));
    }
  }
  if (s.contains("iperf3") && !s["iperf3"].empty()) {
    std::printf("\n%-8s %-8s %8s %12s %12s\n", "from", "to", "streams", "Gb/s", "retransmits");
    for (const auto& f : s["iperf3"]) {
      std::printf("%-8s %-8s %8d %12.3f %12lld\n", f["from"].get<std::string>().c_str(),
                  f["to"].get<std::string>().c_str(), f["streams"].get<int>(), f.value("gbps", 0.0),
                  f.value("retransmits", 0LL));
    }
  }
  std::printf("\n%-12s %12s %12s %10s %s\n", "switch", "rx_pkts", "tx_pkts", "drops",
              "drop reasons / floods");
  for (auto it = s["switches"].begin(); it != s["switches"].end(); ++it) {
    uint64_t rx = 0, tx = 0;
    for (const auto& p : it.value()["ports"]) {
      rx += p["rx_packets"].get<uint64_t>();
      tx += p["tx_packets"].get<uint64_t>();
    }
    std::string why;
    for (auto d = it.value()["drops"].begin(); d != it.value()["drops"].end(); ++d) {
      why += d.key() + "=" + std::to_string(d.value().get<uint64_t>()) + " ";
    }
    const uint64_t floods = it.value()["unknown_unicast_floods"].get<uint64_t>();
    if (floods) why += "unknown_unicast_floods=" + std::to_string(floods);
    std::printf("%-12s %12llu %12llu %10llu %s\n", it.key().c_str(),
                static_cast<unsigned long long>(rx), static_cast<unsigned long long>(tx),
                static_cast<unsigned long long>(it.value()["drops_total"].get<uint64_t>()),
                why.c_str());
  }
  const std::vector<std::string> cw = ConweaveAccount(s);
  if (!cw.empty()) std::printf("\n");
  for (const auto& line : cw) std::printf("%s\n", line.c_str());
}

namespace {

// The workload's FCT slowdown by size bucket, in size order (the reference's buckets), as
// `rocefab report` prints it; an empty bucket prints '-'.
void PrintWorkload(const nlohmann::json& w) {
  std::printf(
      "\nworkload: %llu flows, %llu finished; FCT slowdown over %llu flows (from %.0f us):\n",
      static_cast<unsigned long long>(w.value("flows", uint64_t{0})),
      static_cast<unsigned long long>(w.value("finished", uint64_t{0})),
      static_cast<unsigned long long>(w.value("counted", uint64_t{0})),
      w.value("measured_from_us", 0.0));
  std::printf(" %-10s %7s %7s %7s %7s %7s\n", "bucket", "count", "avg", "p50", "p99", "p99.9");
  const auto& buckets = w["buckets"];
  for (const char* k :
       {"le_4k", "4k_16k", "16k_64k", "64k_256k", "gt_256k", "lt_bdp", "ge_bdp", "all"}) {
    if (!buckets.contains(k)) continue;
    const auto& b = buckets[k];
    const auto n = b["count"].get<uint64_t>();
    if (n == 0) {
      std::printf(" %-10s %7d %7s %7s %7s %7s\n", k, 0, "-", "-", "-", "-");
    } else {
      std::printf(" %-10s %7llu %7.3f %7.3f %7.3f %7.3f\n", k, static_cast<unsigned long long>(n),
                  b["avg"].get<double>(), b["p50"].get<double>(), b["p99"].get<double>(),
                  b["p999"].get<double>());
    }
  }
  if (w.value("flows_after_duration", uint64_t{0}) > 0) {
    std::printf(" (%llu flows would start at or after the duration, so were not started)\n",
                static_cast<unsigned long long>(w["flows_after_duration"].get<uint64_t>()));
  }
}

}  // namespace

nlohmann::json RdmaVsTcp(std::vector<Time> rdma, std::vector<Time> tcp,
                         const std::string& tcp_kind) {
  if (rdma.empty() || tcp.empty()) return nullptr;
  auto side = [](std::vector<Time>& v) {
    return nlohmann::json{{"probes", v.size()},
                          {"rtt_p50_us", Percentile(v, 0.5) / 1e6},
                          {"rtt_p99_us", Percentile(v, 0.99) / 1e6},
                          {"rtt_p999_us", Percentile(v, 0.999) / 1e6}};
  };
  nlohmann::json j = {{"rdma", side(rdma)}, {"tcp", side(tcp)}, {"tcp_kind", tcp_kind}};
  nlohmann::json ratio = nlohmann::json::object();
  for (const char* k : {"rtt_p50_us", "rtt_p99_us", "rtt_p999_us"}) {
    const double r = j["rdma"][k].get<double>();
    ratio[k] = r > 0 ? j["tcp"][k].get<double>() / r : 0.0;
  }
  j["tcp_over_rdma"] = ratio;
  return j;
}

void AddVerbsLatency(nlohmann::json* cmp, const nlohmann::json& rdma) {
  if (!cmp->is_object() || !rdma.is_array()) return;
  for (const auto& r : rdma) {
    if (!r.contains("t_p99_us") || r.value("samples", int64_t{0}) <= 0) continue;
    const std::string test = r["test"].get<std::string>();
    nlohmann::json v = {{"program", r.value("program", "built-in " + test)},
                        {"from", r["from"]},
                        {"to", r["to"]},
                        {"samples", r["samples"]},
                        {"rtt_p50_us", 2 * r["t_typical_us"].get<double>()},
                        {"rtt_p99_us", 2 * r["t_p99_us"].get<double>()},
                        {"rtt_p999_us", 2 * r["t_p999_us"].get<double>()}};
    const double p99 = v["rtt_p99_us"].get<double>();
    (*cmp)["tcp_over_rdma_verbs"] = {
        {"rtt_p99_us", p99 > 0 ? (*cmp)["tcp"]["rtt_p99_us"].get<double>() / p99 : 0.0}};
    (*cmp)["rdma_verbs"] = std::move(v);
    return;
  }
}

namespace {

// One flow per QP of a summary `rdma` entry, in its data direction (READ responses flow from
// the server's QPs to the client). None without `udp_sports` (a real perftest program's entry).
std::vector<LongFlow> QpFlows(const Topology& t, const nlohmann::json& r) {
  std::vector<LongFlow> flows;
  if (!r.contains("udp_sports")) return flows;
  const bool read = r["test"] == "read_bw";
  const int c = t.HostIndex(r["from"].get<std::string>()), s = t.HostIndex(r["to"]);
  if (c < 0 || s < 0) return flows;
  const int src = read ? s : c, dst = read ? c : s;
  for (const auto& sport : r[read ? "server_udp_sports" : "udp_sports"]) {
    flows.push_back(LongFlow{
        src, dst,
        FiveTuple{t.hosts[static_cast<size_t>(src)].ip, t.hosts[static_cast<size_t>(dst)].ip,
                  kIpProtoUdp, sport.get<uint16_t>(), kRoceUdpPort}});
  }
  return flows;
}

bool HasLinkFaults(const Scenario& s) {
  return std::any_of(s.faults.begin(), s.faults.end(),
                     [](const Fault& f) { return f.kind == Fault::Kind::kLinkDown; });
}

}  // namespace

void AddEcmpPaths(const Scenario& scenario, const FabricPlan& plan, nlohmann::json* r) {
  const std::vector<LongFlow> flows = QpFlows(scenario.topology, *r);
  if (flows.empty()) return;
  const PathTracer tracer(plan, scenario.topology);
  nlohmann::json paths = nlohmann::json::array();
  for (const LongFlow& f : flows) {
    auto p = tracer.Ecmp(f.src, f.dst, f.tuple);
    paths.push_back(p.ok() ? nlohmann::json(PathPortNames(plan, p.value(), f.src))
                           : nlohmann::json(p.message()));
  }
  (*r)["ecmp_paths"] = paths;
  if (HasLinkFaults(scenario))
    (*r)["ecmp_paths_note"] = "routes at t = 0 (link_down faults reroute)";
}

nlohmann::json EcmpModelJson(const Scenario& scenario, const FabricPlan& plan,
                             const nlohmann::json& rdma) {
  // Every QP of a bandwidth test is a long flow; the model is the fabric's, whatever the scheme.
  const Topology& t = scenario.topology;
  std::vector<LongFlow> flows;
  double measured = 0;
  for (const auto& r : rdma) {
    if (!r.contains("bw_avg_gbps") || !r.contains("udp_sports")) continue;
    for (const LongFlow& f : QpFlows(t, r)) flows.push_back(f);
    measured += r["bw_avg_gbps"].get<double>();
  }
  if (flows.size() < 2) return nullptr;
  constexpr int kTrials = 1000;
  auto m = ModelEcmp(plan, t, flows, kTrials, scenario.seed);
  if (!m.ok()) return {{"error", m.message()}};
  const auto& rg = m.value().random_gbps;
  auto pct = [&rg](double p) { return rg[static_cast<size_t>(p * (rg.size() - 1))]; };
  double mean = 0;
  for (double g : rg) mean += g / rg.size();
  nlohmann::json per_port = nlohmann::json::object();
  for (const auto& [port, n] : m.value().flows_per_port) per_port[port] = n;
  nlohmann::json j = {{"flows", flows.size()},
                      {"measured_gbps", measured},
                      {"unconstrained_gbps", m.value().unconstrained_gbps},
                      {"ecmp_max_min_gbps", m.value().ecmp_gbps},
                      {"random_hash_gbps",
                       {{"trials", kTrials},
                        {"mean", mean},
                        {"p1", pct(0.01)},
                        {"p5", pct(0.05)},
                        {"p50", pct(0.5)},
                        {"p95", pct(0.95)},
                        {"p99", pct(0.99)}}},
                      {"ecmp_flows_per_port", per_port}};
  if (HasLinkFaults(scenario)) {
    j["note"] =
        "traced on the routes at t = 0; the scenario's link_down faults change them "
        "during the run";
  }
  return j;
}

namespace {

// The comparison beside the run's timing verdict: a live figure stands only if the run kept up.
void PrintRdmaVsTcp(const nlohmann::json& summary) {
  const auto& c = summary["rdma_vs_tcp"];
  const std::string verdict = summary.contains("timing") && summary["timing"].is_object()
                                  ? summary["timing"].value("verdict", "")
                                  : "";
  std::printf("\nRDMA vs TCP Pingmesh on the same fabric (timing: %s):\n %-34s %8s %9s %9s %9s\n",
              verdict.c_str(), "", "probes", "p50_us", "p99_us", "p999_us");
  auto row = [](const std::string& what, const nlohmann::json& r) {
    std::printf(" %-34s %8llu %9.2f %9.2f %9.2f\n", what.c_str(),
                static_cast<unsigned long long>(r["probes"].get<uint64_t>()),
                r["rtt_p50_us"].get<double>(), r["rtt_p99_us"].get<double>(),
                r["rtt_p999_us"].get<double>());
  };
  row("RDMA (SEND probes, lossless class)", c["rdma"]);
  if (c.contains("rdma_verbs")) {
    const auto& v = c["rdma_verbs"];
    std::printf(" %-34s %8lld %9.2f %9.2f %9.2f\n",
                ("RDMA verbs: " + v["program"].get<std::string>() + " *").c_str(),
                static_cast<long long>(v["samples"].get<int64_t>()), v["rtt_p50_us"].get<double>(),
                v["rtt_p99_us"].get<double>(), v["rtt_p999_us"].get<double>());
  }
  row("TCP (see below)", c["tcp"]);
  const auto& q = c["tcp_over_rdma"];
  std::printf(" %-34s %8s %8.1fx %8.1fx %8.1fx\n", "TCP / RDMA", "", q["rtt_p50_us"].get<double>(),
              q["rtt_p99_us"].get<double>(), q["rtt_p999_us"].get<double>());
  std::printf(" TCP side: %s\n", c["tcp_kind"].get<std::string>().c_str());
  if (c.contains("rdma_verbs")) {
    std::printf(" * %s -> %s, 2 x perftest's one-way latency (a closed-loop ping-pong)\n",
                c["rdma_verbs"]["from"].get<std::string>().c_str(),
                c["rdma_verbs"]["to"].get<std::string>().c_str());
  }
}

}  // namespace

void PrintRdmaResults(const nlohmann::json& summary) {
  if (summary.contains("rdma") && summary["rdma"].is_array() && !summary["rdma"].empty()) {
    std::printf("\nrdma:\n");
    for (const auto& r : summary["rdma"]) std::printf("%s\n", PerftestText(r).c_str());
  }
  if (summary.contains("workload") && summary["workload"].is_object())
    PrintWorkload(summary["workload"]);
  if (summary.contains("pingmesh") && summary["pingmesh"].is_object()) {
    // Fabric-wide and per ToR pair; per host pair and per podset pair are in summary.json.
    std::printf("\npingmesh (RDMA SEND probes):\n %-22s %8s %8s %9s %9s %9s %9s\n", "scope",
                "probes", "ok", "fail%", "p50_us", "p99_us", "p999_us");
    auto row = [](const std::string& scope, const nlohmann::json& r) {
      std::printf(" %-22s %8d %8d %9.3f %9.2f %9.2f %9.2f\n", scope.c_str(), r["probes"].get<int>(),
                  r["ok"].get<int>(), 100.0 * r["failure_rate"].get<double>(),
                  r["rtt_p50_us"].get<double>(), r["rtt_p99_us"].get<double>(),
                  r["rtt_p999_us"].get<double>());
    };
    const auto& pm = summary["pingmesh"];
    row("fabric", pm["fabric"]);
    for (const auto& [k, v] : pm["tor_pairs"].items()) row(k, v);
  }
  if (summary.contains("rdma_vs_tcp") && summary["rdma_vs_tcp"].is_object())
    PrintRdmaVsTcp(summary);
}

Status WriteResultFiles(const std::string& dir, const nlohmann::json& summary,
                        const RdmaTraffic* rdma) {
  Status st = WriteJsonFile(dir + "/summary.json", summary);
  if (!st.ok()) return st;
  st = WriteCsvs(dir, summary);
  if (!st.ok()) return st;
  if (rdma != nullptr && rdma->workload() != nullptr) return rdma->WriteFct(dir + "/fct.txt");
  return Status();
}

}  // namespace rocefab

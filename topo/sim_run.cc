#include "topo/sim_run.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "common/eal.h"
#include "common/units.h"
#include "topo/fabric.h"

namespace rocefab {

Status WriteJsonFile(const std::string& path, const nlohmann::json& j) {
  std::ofstream out(path);
  if (!out) return Status::Error(path + ": cannot write");
  out << j.dump(2) << "\n";
  return out ? Status() : Status::Error(path + ": write failed");
}

static Status WriteCsvs(const std::string& dir, const nlohmann::json& s) {
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

static void PrintAccount(const nlohmann::json& s) {
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

void PrintSummaryTable(const nlohmann::json& s) {
  PrintAccount(s);
  if (!s["pings"].empty()) {
    std::printf("\n%-8s %-8s %6s %6s %7s %10s %10s %10s\n", "from", "to", "sent", "recv", "loss%",
                "rtt_p50us", "rtt_p99us", "rtt_maxus");
    for (const auto& p : s["pings"]) {
      std::printf("%-8s %-8s %6d %6d %7.2f %10.2f %10.2f %10.2f\n",
                  p["from"].get<std::string>().c_str(), p["to"].get<std::string>().c_str(),
                  p["sent"].get<int>(), p["received"].get<int>(), p["loss_pct"].get<double>(),
                  p["rtt_p50_us"].get<double>(), p["rtt_p99_us"].get<double>(),
                  p["rtt_max_us"].get<double>());
    }
  }
  if (s.contains("flows") && !s["flows"].empty()) {
    std::printf("\n%-4s %-7s %-8s %-8s %9s %9s %7s %10s %10s\n", "id", "kind", "from", "to", "sent",
                "recv", "lost", "Gb/s", "lat_avgus");
    for (const auto& f : s["flows"]) {
      std::printf("%-4d %-7s %-8s %-8s %9lld %9lld %7lld %10.3f %10.2f\n", f["id"].get<int>(),
                  f["kind"].get<std::string>().c_str(), f["from"].get<std::string>().c_str(),
                  f["to"].get<std::string>().c_str(), f["sent"].get<long long>(),
                  f["received"].get<long long>(), f["lost"].get<long long>(),
                  f.value("goodput_gbps", 0.0), f.value("latency_avg_us", 0.0));
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
}

Result<nlohmann::json> RunSim(Scenario scenario, const SimRunOptions& opt) {
  if (opt.seed_override >= 0) scenario.seed = static_cast<uint64_t>(opt.seed_override);
  const auto setup0 = std::chrono::steady_clock::now();
  Status st = InitEal(NoHugeEalArgs(1536), EalAffinity::kKeep);
  if (!st.ok()) return st;
  static int pool_counter = 0;
  // Room for the largest frame: RoCE path MTU + headers, at least a 1500-byte Ethernet frame.
  const uint16_t room = static_cast<uint16_t>(
      std::max<uint32_t>(RTE_MBUF_DEFAULT_BUF_SIZE, scenario.nic.mtu + RTE_PKTMBUF_HEADROOM + 256));
  auto pool = CreateHostOnlyPktPool("simpool" + std::to_string(pool_counter++),
                                    room > RTE_MBUF_DEFAULT_BUF_SIZE ? 65535 : 131071, room);
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
    if (!opt.out_dir.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(opt.out_dir, ec);
      if (ec) return Status::Error(opt.out_dir + ": " + ec.message());
      Status os = f.OpenOutputs(opt.out_dir);
      if (!os.ok()) return os;
    }
    std::string threads_note;
    auto threads = f.SetThreads(opt.threads, &threads_note);
    if (!threads.ok()) return threads.status();
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
      if (threads.value() > 1) {
        std::printf("  %d threads (partitions meet every %s of virtual time)\n", threads.value(),
                    FormatDuration(f.runner().lookahead()).c_str());
      }
    }
    const auto wall0 = std::chrono::steady_clock::now();
    auto last = wall0;
    const Time step = std::max<Time>(scenario.duration / 20, kUs);
    for (Time t = step;; t += step) {
      const Time until = std::min(t, scenario.duration);
      f.RunUntil(until);
      const auto w = std::chrono::steady_clock::now();
      if (!opt.quiet && (w - last > std::chrono::seconds(1) || until == scenario.duration)) {
        const double secs = std::chrono::duration<double>(w - wall0).count();
        std::printf("  sim time %s / %s, %llu events, %.2f M events/s\n",
                    FormatDuration(until).c_str(), FormatDuration(scenario.duration).c_str(),
                    static_cast<unsigned long long>(f.runner().events_executed()),
                    secs > 0 ? f.runner().events_executed() / secs / 1e6 : 0.0);
        last = w;
      }
      if (until == scenario.duration) break;
    }
    f.RunUntil(scenario.duration + 10 * kMs);  // drain frames in flight; sources have stopped
    if (!opt.quiet) {
      std::printf("  drained to %s, %llu events in all\n",
                  FormatDuration(scenario.duration + 10 * kMs).c_str(),
                  static_cast<unsigned long long>(f.runner().events_executed()));
    }
    if (!opt.quiet) {
      const auto load = f.runner().partition_load();
      for (size_t i = 0; i < load.size(); ++i) {
        std::printf(
            "  thread %zu: %llu events, %.2f s running windows, %.2f s waiting at their ends\n", i,
            static_cast<unsigned long long>(load[i].events), load[i].busy_s, load[i].wait_s);
      }
    }
    summary = f.Summary();
    if (f.rdma() != nullptr && !f.rdma()->empty()) {
      const auto lines = f.rdma()->Text();
      if (!opt.quiet && !lines.empty()) {
        std::printf("\nrdma:\n");
        for (const auto& line : lines) std::printf("%s\n", line.c_str());
        if (summary.contains("workload"))
          std::printf(" workload: %s\n", summary["workload"].dump().c_str());
      }
      if (!opt.quiet && summary.contains("pingmesh")) {
        // Fabric-wide and per ToR pair; per host pair and per podset pair are in summary.json.
        std::printf("\npingmesh (RDMA SEND probes):\n %-22s %8s %8s %9s %9s %9s %9s\n", "scope",
                    "probes", "ok", "fail%", "p50_us", "p99_us", "p999_us");
        auto row = [](const std::string& scope, const nlohmann::json& r) {
          std::printf(" %-22s %8d %8d %9.3f %9.2f %9.2f %9.2f\n", scope.c_str(),
                      r["probes"].get<int>(), r["ok"].get<int>(),
                      100.0 * r["failure_rate"].get<double>(), r["rtt_p50_us"].get<double>(),
                      r["rtt_p99_us"].get<double>(), r["rtt_p999_us"].get<double>());
        };
        const auto& pm = summary["pingmesh"];
        row("fabric", pm["fabric"]);
        for (const auto& [k, v] : pm["tor_pairs"].items()) row(k, v);
      }
      if (!opt.out_dir.empty()) {
        st = f.rdma()->WriteFct(opt.out_dir + "/fct.txt");
        if (!st.ok()) return st;
        wrote_fct = f.rdma()->workload() != nullptr;
      }
    }
  }
  const unsigned in_use = rte_mempool_in_use_count(pool.value());
  summary["mbufs_in_use_after_run"] = in_use;
  // Frames not built because the pool was empty (NICs' no_mbuf, switches' no_buffer drops).
  uint64_t no_mbuf = 0;
  for (const auto& [name, h] : summary["hosts"].items()) {
    no_mbuf += h.value("no_mbuf", uint64_t{0});  // UDP, ping, ARP frames
    if (h.contains("rnic")) no_mbuf += h["rnic"].value("no_mbuf", uint64_t{0});
  }
  for (const auto& [name, sw] : summary["switches"].items()) {
    no_mbuf += sw["drops"].value("no_buffer", uint64_t{0});
  }
  summary["mbuf_alloc_failures"] = no_mbuf;
  if (no_mbuf > 0) {
    std::fprintf(
        stderr,
        "rocefab sim: warning: the frame pool (%u mbufs) ran out %llu time(s); those frames "
        "were not built. With --threads > 1 the count can then differ between runs (each "
        "thread keeps up to 384 free frames in its own cache).\n",
        rte_mempool_avail_count(pool.value()) + in_use, static_cast<unsigned long long>(no_mbuf));
  }
  if (!opt.quiet) PrintSummaryTable(summary);
  if (!opt.out_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(opt.out_dir, ec);
    if (ec) return Status::Error(opt.out_dir + ": " + ec.message());
    st = WriteJsonFile(opt.out_dir + "/summary.json", summary);
    if (!st.ok()) return st;
    st = WriteCsvs(opt.out_dir, summary);
    if (!st.ok()) return st;
    if (!opt.quiet) {
      // The files this run wrote (the folder may hold others).
      std::string list = "summary.json,flows.csv,pings.csv";
      if (wrote_fct) list += ",fct.txt";
      if (scenario.output.sample_interval > 0) list += ",timeseries.csv";
      for (std::string cap : scenario.output.capture) {
        cap[cap.find("/p")] = '_';
        list += "," + cap + ".pcap";
      }
      std::printf("\nresults: %s/{%s}\n", opt.out_dir.c_str(), list.c_str());
    }
  }
  return summary;
}

}  // namespace rocefab

#include "run/switch_processes.h"

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>
#include <tuple>

#include "common/node.h"
#include "run/netns.h"

namespace rocefab {

Status SwitchProcesses::Start(const Topology& t, const Options& opt) {
  run_id_ = opt.run_id;
  for (const auto& sw : t.switches) {
    Proc p;
    p.name = sw.name;
    p.dir = opt.dir + "/" + sw.name;
    p.log = p.dir + "/live.log";
    std::error_code ec;
    std::filesystem::remove(p.dir + "/ready", ec);
    std::filesystem::remove(p.dir + "/stopped", ec);
    std::filesystem::remove(p.dir + "/go", ec);
    std::filesystem::create_directories(p.dir, ec);
    if (ec) return Status::Error(p.dir + ": " + ec.message());
    std::vector<std::string> argv = {opt.exe, "live", opt.scenario_path};
    for (const auto& s : opt.sets) argv.insert(argv.end(), {"--set", s});
    argv.insert(argv.end(),
                {"--node", sw.name, "--run-id", opt.run_id, "--parent-run", "--out", p.dir, "-q"});
    if (opt.metrics) argv.insert(argv.end(), {"--metrics-port", "0"});
    auto pid = SpawnCommand(argv, p.log);
    if (!pid.ok()) return Status::Error("switch process " + sw.name + ": " + pid.message());
    p.pid = pid.value();
    procs_.push_back(p);
  }
  return Status();
}

std::string SwitchProcesses::Tail(const std::string& path, size_t lines) {
  std::ifstream in(path);
  std::deque<std::string> last;
  std::string line;
  while (std::getline(in, line)) {
    last.push_back(line);
    if (last.size() > lines) last.pop_front();
  }
  std::string out;
  for (const auto& l : last) out += (out.empty() ? "" : " | ") + l;
  return out.empty() ? "(its log " + path + " is empty)" : out;
}

std::string SwitchProcesses::How(const Proc& p) {
  const std::string how = WIFEXITED(p.status) ? "exit " + std::to_string(WEXITSTATUS(p.status))
                          : WIFSIGNALED(p.status)
                              ? "killed by signal " + std::to_string(WTERMSIG(p.status))
                              : "gone";
  return p.name + " (" + how + "): " + Tail(p.log, 4);
}

Status SwitchProcesses::WaitReady(std::chrono::milliseconds limit, const std::atomic<bool>& stop) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!stop) {
    size_t ready = 0;
    for (auto& p : procs_) {
      if (!p.exited && ChildExited(p.pid, &p.status)) p.exited = true;
      if (p.exited) {
        p.reported = true;
        return Status::Error("switch process " + How(p));
      }
      if (std::filesystem::exists(p.dir + "/ready")) ++ready;
    }
    if (ready == procs_.size()) return Status();
    if (std::chrono::steady_clock::now() > deadline) {
      std::string missing;
      for (const auto& p : procs_) {
        if (!std::filesystem::exists(p.dir + "/ready"))
          missing += (missing.empty() ? "" : "; ") + p.name + ": " + Tail(p.log, 2);
      }
      return Status::Error("switch processes not up (their memif links) after " +
                           std::to_string(limit.count()) + " ms: " + missing);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // polls files and children
  }
  return Status::Error("interrupted");
}

Result<std::vector<std::pair<std::string, uint16_t>>> SwitchProcesses::MetricsPorts() const {
  using R = Result<std::vector<std::pair<std::string, uint16_t>>>;
  std::vector<std::pair<std::string, uint16_t>> out;
  for (const auto& p : procs_) {
    std::ifstream in(p.dir + "/ready");
    const auto j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("metrics_port") || !j["metrics_port"].is_number_unsigned() ||
        j["metrics_port"].get<uint64_t>() == 0 || j["metrics_port"].get<uint64_t>() > 65535) {
      return R::Error("switch process " + p.name + ": no metrics_port in " + p.dir + "/ready");
    }
    out.emplace_back(p.name, static_cast<uint16_t>(j["metrics_port"].get<uint64_t>()));
  }
  return out;
}

Status SwitchProcesses::Go(std::chrono::steady_clock::time_point t0) {
  const auto ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(t0.time_since_epoch()).count();
  for (const auto& p : procs_) {
    std::ofstream f(p.dir + "/go");
    f << nlohmann::json{{"steady_ns", ns}}.dump() << "\n";
    if (!f) return Status::Error(p.dir + "/go: cannot write");
  }
  for (const auto& p : procs_) {
    if (!p.exited) kill(p.pid, SIGUSR1);
  }
  return Status();
}

std::string SwitchProcesses::Exited() {
  for (auto& p : procs_) {
    if (!p.exited && ChildExited(p.pid, &p.status)) p.exited = true;
    if (p.exited && !p.reported) {
      p.reported = true;
      return How(p);
    }
  }
  return "";
}

void SwitchProcesses::Stop(std::chrono::milliseconds grace) {
  for (auto& p : procs_) {
    if (!p.exited) kill(p.pid, SIGTERM);
  }
  const auto deadline = std::chrono::steady_clock::now() + grace;
  // Two steps: each stops its loop and reads its counters (then writes `stopped`), and only
  // when all have does any close its memif ports (which empties its peers' port counters).
  for (auto& p : procs_) {
    while (!p.exited && !std::filesystem::exists(p.dir + "/stopped") &&
           std::chrono::steady_clock::now() < deadline) {
      if (ChildExited(p.pid, &p.status)) p.exited = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));  // polls files and children
    }
  }
  for (auto& p : procs_) {
    if (!p.exited) kill(p.pid, SIGUSR1);
  }
  for (auto& p : procs_) {
    while (!p.exited && std::chrono::steady_clock::now() < deadline) {
      if (ChildExited(p.pid, &p.status)) {
        p.exited = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));  // child-exit polling
    }
    if (!p.exited) {
      kill(p.pid, SIGKILL);
      waitpid(p.pid, &p.status, 0);
      p.exited = true;
    }
    // A process that was killed could not remove its EAL runtime folder.
    std::error_code ec;
    std::filesystem::remove_all("/var/run/dpdk/" + run_id_ + "-" + p.name, ec);
  }
}

std::vector<pid_t> SwitchProcesses::pids() const {
  std::vector<pid_t> out;
  for (const auto& p : procs_) out.push_back(p.pid);
  return out;
}

Result<std::vector<std::pair<std::string, nlohmann::json>>> SwitchProcesses::Summaries() const {
  using R = Result<std::vector<std::pair<std::string, nlohmann::json>>>;
  std::vector<std::pair<std::string, nlohmann::json>> out;
  for (const auto& p : procs_) {
    std::ifstream in(p.dir + "/summary.json");
    if (!in) return R::Error("switch process " + How(p) + ": no " + p.dir + "/summary.json");
    try {
      out.emplace_back(p.name, nlohmann::json::parse(in));
    } catch (const std::exception& e) {
      return R::Error(p.dir + "/summary.json: " + e.what());
    }
  }
  return out;
}

// A UDP flow between two processes is in both: its sender's entry (received null) and its
// receiver's (receiver_side: sent null). One entry per flow, by id: the sender's with the
// receiver's counts and `lost` from both.
nlohmann::json JoinFlows(const nlohmann::json& flows) {
  std::map<uint64_t, nlohmann::json> rx;
  nlohmann::json out = nlohmann::json::array();
  for (const auto& f : flows) {
    if (f.value("receiver_side", false)) {
      rx[f["id"].get<uint64_t>()] = f;
    } else {
      out.push_back(f);
    }
  }
  for (auto& f : out) {
    auto it = rx.find(f["id"].get<uint64_t>());
    if (it == rx.end()) continue;
    for (const auto& [k, v] : it->second.items()) {
      if (k != "sent" && k != "lost" && k != "receiver_side") f[k] = v;
    }
    f["lost"] = f["sent"].get<int64_t>() - f["received"].get<int64_t>();
    rx.erase(it);
  }
  for (auto& [id, f] : rx) out.push_back(f);  // its sender's process reported nothing
  std::stable_sort(out.begin(), out.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
    return a["id"].get<uint64_t>() < b["id"].get<uint64_t>();
  });
  return out;
}

namespace {}  // namespace

nlohmann::json MergeConservation(const std::vector<const nlohmann::json*>& summaries) {
  FrameBalance sum;
  uint64_t nodes = 0;
  nlohmann::json unbalanced = nlohmann::json::array();
  for (const nlohmann::json* s : summaries) {
    const auto it = s->find("conservation");
    if (it == s->end() || !it->is_object()) continue;
    sum += it->get<FrameBalance>();
    nodes += it->value("nodes", uint64_t{0});
    for (const auto& u : it->value("unbalanced", nlohmann::json::array())) unbalanced.push_back(u);
  }
  nlohmann::json c = sum;
  c["nodes"] = nodes;
  c["balanced"] = unbalanced.empty();
  c["unbalanced"] = std::move(unbalanced);
  return c;
}

nlohmann::json MergeSwitchSummaries(
    const std::vector<std::pair<std::string, nlohmann::json>>& parts) {
  if (parts.empty()) return nlohmann::json::object();
  nlohmann::json m = parts.front().second;
  for (const char* k :
       {"switches", "hosts", "host_ports", "pause_spread", "nic_watchdogs", "links"}) {
    m[k] = nlohmann::json::object();
  }
  for (const char* k : {"pings", "flows", "rdma", "events", "notes"})
    m[k] = nlohmann::json::array();
  const char* kSums[] = {"lost_frames",     "mbuf_alloc_failures", "mbufs_in_use_after_run",
                         "poll_iterations", "idle_sleeps",         "ethdev_tx_dropped"};
  for (const char* k : kSums) m[k] = 0;
  std::set<std::string> notes;
  // The least faithful process: not faithful before faithful, then the largest fraction of
  // events off schedule, then the largest deviation; the first of equals.
  size_t worst = 0;
  auto rank = [](const nlohmann::json& timing) {
    if (!timing.is_object() || !timing.contains("deviation"))
      return std::make_tuple(false, 0.0, 0.0);
    const auto& d = timing["deviation"];
    return std::make_tuple(!timing.value("faithful", true), d.value("late_fraction", 0.0),
                           d.value("max_us", 0.0));
  };
  nlohmann::json procs = nlohmann::json::array();
  for (size_t i = 0; i < parts.size(); ++i) {
    const nlohmann::json& s = parts[i].second;
    for (const char* k :
         {"switches", "hosts", "host_ports", "pause_spread", "nic_watchdogs", "links"}) {
      if (s.contains(k) && s[k].is_object()) m[k].update(s[k]);
    }
    for (const char* k : {"pings", "flows", "rdma", "events"}) {
      if (s.contains(k) && s[k].is_array()) {
        for (const auto& x : s[k]) m[k].push_back(x);
      }
    }
    if (s.contains("notes") && s["notes"].is_array()) {
      for (const auto& n : s["notes"]) {
        if (notes.insert(n.get<std::string>()).second) m["notes"].push_back(n);
      }
    }
    for (const char* k : kSums) {
      if (s.contains(k) && s[k].is_number()) m[k] = m[k].get<uint64_t>() + s[k].get<uint64_t>();
    }
    const nlohmann::json timing = s.value("timing", nlohmann::json());
    if (rank(timing) > rank(parts[worst].second.value("timing", nlohmann::json()))) worst = i;
    procs.push_back({{"node", parts[i].first},
                     {"faithful", timing.is_object() ? timing.value("faithful", false) : false},
                     {"verdict", timing.is_object() ? timing.value("verdict", "") : ""}});
  }
  m["flows"] = JoinFlows(m["flows"]);
  std::vector<const nlohmann::json*> summaries;
  for (const auto& p : parts) summaries.push_back(&p.second);
  m["conservation"] = MergeConservation(summaries);
  nlohmann::json timing = parts[worst].second.value("timing", nlohmann::json::object());
  if (!timing.is_object()) timing = nlohmann::json::object();
  timing["faithful"] = true;
  for (const auto& p : procs)
    timing["faithful"] = timing["faithful"].get<bool>() && p["faithful"].get<bool>();
  timing["verdict"] = timing.value("verdict", std::string("no timing")) + " (switch process " +
                      parts[worst].first + ", the least faithful of " +
                      std::to_string(parts.size()) + ")";
  timing["processes"] = procs;
  m["timing"] = timing;
  return m;
}

}  // namespace rocefab

#include "run/run_state.h"

#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>

namespace rocefab {

std::string RunStateDir() { return "/run/rocefab"; }

std::string RunStatePath(const std::string& run_id) {
  return RunStateDir() + "/" + run_id + ".json";
}

Status WriteRunState(const nlohmann::json& state) {
  std::error_code ec;
  std::filesystem::create_directories(RunStateDir(), ec);
  if (ec) return Status::Error(RunStateDir() + ": " + ec.message());
  const std::string path = RunStatePath(state.at("run_id").get<std::string>());
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    if (!out) return Status::Error(tmp + ": cannot write");
    out << state.dump(2) << "\n";
    if (!out) return Status::Error(tmp + ": write failed");
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) return Status::Error(path + ": " + ec.message());
  return Status();
}

void RemoveRunState(const std::string& run_id) {
  std::error_code ec;
  std::filesystem::remove(RunStatePath(run_id), ec);
}

std::vector<nlohmann::json> ListRunStates() {
  std::vector<nlohmann::json> states;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(RunStateDir(), ec)) {
    if (e.path().extension() != ".json") continue;
    std::ifstream in(e.path());
    try {
      states.push_back(nlohmann::json::parse(in));
    } catch (const nlohmann::json::exception&) {
      continue;  // being written or not ours
    }
  }
  std::sort(states.begin(), states.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
    return a.value("started_at", 0.0) < b.value("started_at", 0.0);
  });
  return states;
}

Result<nlohmann::json> ReadRunState(const std::string& run_id) {
  std::ifstream in(RunStatePath(run_id));
  if (in) {
    try {
      return nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
      return Result<nlohmann::json>::Error(RunStatePath(run_id) + ": " + e.what());
    }
  }
  std::string known;
  for (const auto& s : ListRunStates()) known += " " + s.value("run_id", std::string("?"));
  return Result<nlohmann::json>::Error(
      "no live run '" + run_id + "' (" + RunStateDir() + "); " +
      (known.empty()
           ? std::string("none is running: start one with rocefab live SCENARIO --hold forever")
           : "running:" + known));
}

bool ProcessRunning(pid_t pid) {
  if (pid <= 0 || (kill(pid, 0) != 0 && errno != EPERM)) return false;
  // An exited process its parent has not reaped yet (a zombie) still answers kill(pid, 0).
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  std::getline(stat, text);
  const auto paren = text.rfind(')');
  if (paren == std::string::npos || paren + 2 >= text.size()) return true;
  const char state = text[paren + 2];
  return state != 'Z' && state != 'X';
}

bool RunAlive(const nlohmann::json& state) { return ProcessRunning(state.value("pid", 0)); }

}  // namespace rocefab

#pragma once
/// @file run_state.h
/// Where a running `rocefab live` is found by `rocefab inspect`, `exec` and `destroy`: one JSON
/// file per run, `<RunStateDir()>/<run id>.json`, written once the fabric is up and removed when
/// the run tears down (a run killed with SIGKILL leaves it; its pid is then gone and the file is
/// reported as stale). Fields: `run_id` ("rf" + 4 hex digits, the namespaces' prefix), `pid`,
/// `scenario`, `started_at` (Unix seconds), `telemetry_prefix` (dpdk-telemetry.py -f), `hosts`
/// [{`name`, `kind` ("linux", "builtin", "external"), `ip`, `mac`, `tor`, `netns` (Linux hosts,
/// else "")}].

#include <sys/types.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/result.h"

namespace rocefab {

/// /run/rocefab (tmpfs, root's), created on first use.
std::string RunStateDir();
std::string RunStatePath(const std::string& run_id);
/// Writes the state atomically (a temporary file renamed over it).
Status WriteRunState(const nlohmann::json& state);
void RemoveRunState(const std::string& run_id);
/// The state of run `run_id`; an error naming the runs there are when it has none.
Result<nlohmann::json> ReadRunState(const std::string& run_id);
/// Every state file's contents, oldest first.
std::vector<nlohmann::json> ListRunStates();
/// Whether process `pid` exists and has not exited (a zombie has).
bool ProcessRunning(pid_t pid);
/// Whether the run's process is still running.
bool RunAlive(const nlohmann::json& state);

}  // namespace rocefab

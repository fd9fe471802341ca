#pragma once
/// @file verbs_env.h
/// How a program started in a live run's namespace host reaches that host's emulated RoCEv2 NIC:
/// librocefab-verbs.so (verbs/provider.cc) preloaded, told the run's scenario file, its --set
/// overrides and the host, from which it builds the NIC through the same plan as the fabric.
/// Used by `rocefab exec` and by the live runner's perftest traffic (rdma "app": "perftest").

#include <string>
#include <vector>

namespace rocefab {

/// The provider next to the running rocefab binary (the build folder), or in ../lib or
/// ../lib/x86_64-linux-gnu when installed; "" if there is none.
std::string VerbsProviderPath();

/// The environment entries ("KEY=VALUE") that put `host`'s NIC under a verbs program:
/// LD_PRELOAD=`lib` (before `old_preload`, if any) and ROCEFAB_VERBS={"scenario", "sets",
/// "host", "interface": "eth0"}. `scenario_path` should be absolute (the program's working
/// folder may differ).
std::vector<std::string> VerbsEnv(const std::string& lib, const std::string& scenario_path,
                                  const std::vector<std::string>& sets, const std::string& host,
                                  const std::string& old_preload = "");

}  // namespace rocefab

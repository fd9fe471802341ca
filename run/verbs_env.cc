#include "run/verbs_env.h"

#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

namespace rocefab {

std::string VerbsProviderPath() {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return "";
  self[n] = '\0';
  const std::filesystem::path dir = std::filesystem::path(self).parent_path();
  for (const auto& p : {dir / "librocefab-verbs.so", dir / "../lib/librocefab-verbs.so",
                        dir / "../lib/x86_64-linux-gnu/librocefab-verbs.so"}) {
    std::error_code ec;
    if (std::filesystem::exists(p, ec)) return std::filesystem::canonical(p, ec).string();
  }
  return "";
}

std::vector<std::string> VerbsEnv(const std::string& lib, const std::string& scenario_path,
                                  const std::vector<std::string>& sets, const std::string& host,
                                  const std::string& old_preload) {
  const nlohmann::json cfg = {
      {"scenario", scenario_path}, {"sets", sets}, {"host", host}, {"interface", "eth0"}};
  return {"LD_PRELOAD=" + lib + (old_preload.empty() ? "" : ":" + old_preload),
          "ROCEFAB_VERBS=" + cfg.dump()};
}

}  // namespace rocefab

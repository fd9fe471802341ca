// Fuzz target: the scenario reader (Scenario::FromJson) on arbitrary JSON. Any input must give
// a Scenario or an error naming the field; an escaping exception or a crash is a finding.
// Seeds: configs/scenarios/*.json.
#include <nlohmann/json.hpp>
#include <string>

#include "topo/scenario.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto j = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  // base_dir "/nonexistent": workload CDF and trace files resolve to nothing (an error), so the
  // target never reads files outside the input.
  auto s = rocefab::Scenario::FromJson(j, "/nonexistent");
  if (!s.ok() && s.message().empty()) __builtin_trap();  // an error must say what is wrong
  return 0;
}

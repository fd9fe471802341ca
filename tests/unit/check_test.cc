#include "fabric/check.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace rocefab {
namespace {

nlohmann::json Base() {
  return nlohmann::json::parse(R"({
    "name": "c", "duration": "1ms",
    "topology": {"clos": {"spines": 2, "tors": 2, "hosts_per_tor": 2, "link_rate": "100Gbps",
                          "cable": "5m", "host_kind": "builtin"}},
    "ecn": {"kmin": "100KB", "kmax": "400KB", "pmax": 0.2},
    "traffic": [{"kind": "rdma", "from": "h0", "to": "h2", "size": 4096, "iterations": 10}]
  })");
}

std::vector<CheckFinding> Check(const nlohmann::json& j) {
  auto s = Scenario::FromJson(j, ".");
  EXPECT_TRUE(s.ok()) << s.message();
  return s.ok() ? CheckScenario(s.value()) : std::vector<CheckFinding>{};
}

bool Has(const std::vector<CheckFinding>& f, const std::string& check, const std::string& field) {
  for (const auto& x : f) {
    if (x.check == check && x.field == field && !x.where.empty() && !x.message.empty()) return true;
  }
  return false;
}

TEST(CheckTest, CleanConfigPasses) { EXPECT_TRUE(Check(Base()).empty()); }

TEST(CheckTest, FindsEachBrokenConfig) {
  auto j = Base();
  j["nic"] = {{"data_dscp", 10}};  // maps to TC0: not lossless
  EXPECT_TRUE(Has(Check(j), "nic-dscp-lossless", "nic.data_dscp"));

  j = Base();
  j["pfc"] = {{"enabled", false}};
  EXPECT_TRUE(Has(Check(j), "pfc-generation", "pfc.enabled"));

  j = Base();
  j["topology"]["clos"]["cable"] = "300m";
  j["buffer"] = {{"headroom", "20KiB"}};
  const auto h = Check(j);
  EXPECT_TRUE(Has(h, "headroom", "buffer.headroom"));
  EXPECT_NE(h[0].where.find("/p"), std::string::npos) << "names the switch port";

  j = Base();
  j["nic"] = {{"mtu", 1500}};
  EXPECT_TRUE(Has(Check(j), "mtu", "nic.mtu"));

  j = Base();
  j["ecn"] = {{"kmin", "1MB"}, {"kmax", "8MB"}, {"pmax", 0.2}};
  EXPECT_TRUE(Has(Check(j), "ecn-below-pfc", "ecn.kmax"));

  j = Base();
  j["buffer"] = {{"size", "256KiB"}};
  EXPECT_TRUE(Has(Check(j), "buffer", "buffer.size"));

  j = Base();
  j["scheduler"] = {{"strict", nlohmann::json::array({7})}};  // CNP (TC6) no longer strict
  EXPECT_TRUE(Has(Check(j), "cnp-priority", "nic.cnp_dscp / scheduler.strict"));

  j = Base();
  j["pfc_watchdog"] = {{"poll_interval", "10us"}, {"detection_time", "1ms"}};
  EXPECT_TRUE(Has(Check(j), "watchdog-poll", "pfc_watchdog.poll_interval"));
}

TEST(CheckTest, ShippedScenariosPass) {
  int checked = 0;
  for (const auto& e : std::filesystem::directory_iterator(std::string(ROCEFAB_SOURCE_DIR) + "/configs/scenarios")) {
    if (e.path().extension() != ".json") continue;  // README.md
    ++checked;
    auto s = Scenario::Load(e.path().string());
    if (!s.ok() && s.message().find("cannot open") != std::string::npos) continue;  // anchor trace absent
    ASSERT_TRUE(s.ok()) << s.message();
    const auto f = CheckScenario(s.value());
    EXPECT_TRUE(f.empty()) << e.path() << ": " << (f.empty() ? "" : f[0].message);
  }
  EXPECT_GE(checked, 12);
}

}  // namespace
}  // namespace rocefab

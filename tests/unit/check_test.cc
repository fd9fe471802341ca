#include "fabric/check.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

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
  j["traffic"][0]["dscp"] = 0;  // one application's QPs in the lossy class
  EXPECT_TRUE(Has(Check(j), "nic-dscp-lossless", "traffic[0].dscp"));
  j["traffic"][0]["dscp"] = 26;
  EXPECT_TRUE(Check(j).empty()) << "DSCP 26 is lossless";
  j["qos"] = {{"dscp_to_tc", {{"26", 1}}}};  // a DSCP_TO_TC_MAP sending it to a lossy TC
  EXPECT_TRUE(Has(Check(j), "nic-dscp-lossless", "traffic[0].dscp"));

  j = Base();
  j["pfc"] = {{"enabled", false}};
  EXPECT_TRUE(Has(Check(j), "pfc-generation", "pfc.enabled"));

  j = Base();
  j["topology"]["clos"]["cable"] = "300m";
  j["buffer"] = {{"headroom", "20KiB"}};
  const auto h = Check(j);
  EXPECT_TRUE(Has(h, "headroom", "buffer.headroom"));
  EXPECT_NE(h[0].where.find("/p"), std::string::npos) << "names the switch port";

  // Field case (SONiC issue #480): a lossless profile with no headroom at all.
  j = Base();
  j["buffer"] = {{"profiles", {{"bad", {{"headroom", "0B"}}}}}, {"ports", {{"tor1/p0", "bad"}}}};
  const auto zero = Check(j);
  ASSERT_EQ(zero.size(), 1u);
  EXPECT_EQ(zero[0].check, "headroom");
  EXPECT_EQ(zero[0].where, "tor1/p0") << "only the port that has the profile";
  EXPECT_EQ(zero[0].field, "buffer.profiles.bad.headroom");
  EXPECT_NE(zero[0].message.find("lossless headroom is 0 B"), std::string::npos) << zero[0].message;
  // A shared headroom pool smaller than one port's round trip.
  j = Base();
  j["buffer"] = {{"shared_headroom_pool", "4KiB"}};  // one 100G 5 m port needs 5179 B
  EXPECT_TRUE(Has(Check(j), "headroom", "buffer.shared_headroom_pool"));

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

// Issue 22 defect 6: each rule fires on its incident's configuration and not on the cured one.
TEST(CheckTest, PcpTrustAcrossRoutedHopsIsFlagged) {
  auto j = Base();
  j["qos"] = {{"trust", "pcp"}};
  EXPECT_TRUE(Has(Check(j), "pcp-across-routers", "qos.trust"));
  j["qos"] = {{"trust", "dscp"}};  // the paper's cure
  EXPECT_TRUE(Check(j).empty());
  j = Base();
  j["topology"] = nlohmann::json::parse(R"({
    "switches": [{"name": "tor0", "role": "tor", "subnet": "10.1.0.0/24"}],
    "hosts": [{"name": "h0", "tor": "tor0", "ip": "10.1.0.2", "kind": "builtin"},
              {"name": "h1", "tor": "tor0", "ip": "10.1.0.3", "kind": "builtin"}],
    "links": [{"a": "tor0", "b": "h0", "rate": "100Gbps"}, {"a": "tor0", "b": "h1", "rate": "100Gbps"}]})");
  j["traffic"][0]["to"] = "h1";
  j["qos"] = {{"trust", "pcp"}};  // one switch: no routed hop, the tag survives
  EXPECT_FALSE(Has(Check(j), "pcp-across-routers", "qos.trust"));
}

TEST(CheckTest, LosslessTrafficWithBothWatchdogsOffIsFlagged) {
  auto j = Base();
  j["nic"] = {{"rx", {{"watchdog_enabled", false}}}};
  EXPECT_TRUE(
      Has(Check(j), "pause-storm-watchdog", "pfc_watchdog.enabled / nic.rx.watchdog_enabled"));
  j["pfc_watchdog"] = {{"enabled", true}};  // the switch watchdog alone is enough
  EXPECT_TRUE(Check(j).empty());
  j = Base();
  j["nic"] = {{"rx", {{"watchdog_enabled", false}}}, {"data_dscp", 0}};  // lossy traffic only
  EXPECT_FALSE(
      Has(Check(j), "pause-storm-watchdog", "pfc_watchdog.enabled / nic.rx.watchdog_enabled"));
}

TEST(CheckTest, ArpFloodConfigurationIsFlagged) {
  auto j = Base();
  j["vlan_on_uplinks"] = true;  // the switch defaults: MAC ageing 5 min, ARP ageing 4 h
  const auto f = Check(j);
  ASSERT_TRUE(Has(f, "arp-flood-deadlock", "switch.mac_aging / drop_lossless_on_incomplete_arp"));
  EXPECT_NE(f[0].message.find("MAC ageing (300s) is shorter than ARP ageing (14400s)"),
            std::string::npos)
      << f[0].message;
  j["drop_lossless_on_incomplete_arp"] = true;  // the paper's fix
  EXPECT_TRUE(Check(j).empty());
  j["drop_lossless_on_incomplete_arp"] = false;
  j["switch"] = {{"mac_aging", "5h"}};  // MAC entries outlive ARP entries: no flooding
  EXPECT_TRUE(Check(j).empty());
  j["faults"] = {{{"kind", "mac_aging"}, {"switch", "tor1"}, {"aging", "2ms"}, {"at", "0s"}}};
  EXPECT_TRUE(
      Has(Check(j), "arp-flood-deadlock", "switch.mac_aging / drop_lossless_on_incomplete_arp"))
      << "a mac_aging fault shortens it";
}

TEST(CheckTest, OneBadHeadroomIsOneFindingNamingEveryPort) {
  auto j = Base();
  j["topology"]["clos"]["cable"] = "300m";
  j["buffer"] = {{"headroom", "20KiB"}};
  const auto f = Check(j);
  ASSERT_EQ(f.size(), 1u) << "12 ports, same rate and cable: one message";
  EXPECT_EQ(f[0].check, "headroom");
  EXPECT_EQ(f[0].where.rfind("12 places: ", 0), 0u) << f[0].where;
  EXPECT_NE(f[0].where.find("tor0/p0"), std::string::npos) << f[0].where;
}

// The shipped scenarios are clean, except the incident reproductions, which get exactly the rule
// that names their incident.
TEST(CheckTest, ShippedScenariosPass) {
  const std::map<std::string, std::string> incident = {
      {"nic-pause-storm.json", "pause-storm-watchdog"},
      {"nic-pause-storm-1g.json", "pause-storm-watchdog"},
      {"arp-flood-deadlock.json", "arp-flood-deadlock"}};
  int checked = 0;
  for (const auto& e : std::filesystem::directory_iterator(std::string(ROCEFAB_SOURCE_DIR) +
                                                           "/configs/scenarios")) {
    if (e.path().extension() != ".json") continue;  // README.md
    ++checked;
    auto s = Scenario::Load(e.path().string());
    if (!s.ok() && s.message().find("cannot open") != std::string::npos)
      continue;  // anchor trace absent
    ASSERT_TRUE(s.ok()) << s.message();
    const auto f = CheckScenario(s.value());
    const auto it = incident.find(e.path().filename().string());
    if (it != incident.end()) {
      ASSERT_EQ(f.size(), 1u) << e.path();
      EXPECT_EQ(f[0].check, it->second) << e.path();
      continue;
    }
    EXPECT_TRUE(f.empty()) << e.path() << ": " << (f.empty() ? "" : f[0].message);
  }
  EXPECT_GE(checked, 12);
}

}  // namespace
}  // namespace rocefab

// SONiC config_db.json in and out (fabric/sonic.h): a config_db written from SONiC's documented
// examples imports into the settings it states, every shipped scenario survives export followed
// by import with the same switch configurations, and bad files are refused naming the field.
#include "fabric/sonic.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "common/json_reader.h"
#include "fabric/check.h"
#include "fabric/plan.h"

namespace rocefab {
namespace {

const std::string kSrc = ROCEFAB_SOURCE_DIR;

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  return ParseJsonStrict(in);
}

// A 1-ToR fabric with 4 ports at 100 Gb/s on 5 m cables: the shape of the example config_db.
nlohmann::json Base() {
  return nlohmann::json::parse(R"({
    "name": "sonic", "duration": "1ms",
    "topology": {"clos": {"spines": 1, "tors": 1, "hosts_per_tor": 3, "link_rate": "100Gbps",
                          "cable": "5m", "host_kind": "builtin"}},
    "traffic": [{"kind": "rdma", "from": "h1", "to": "h0", "size": 4096, "iterations": 10}]
  })");
}

Scenario Load(const nlohmann::json& j) {
  auto s = Scenario::FromJson(j, kSrc + "/configs/scenarios");
  EXPECT_TRUE(s.ok()) << s.message();
  return s.ok() ? s.value() : Scenario{};
}

Result<SonicImport> Import(const nlohmann::json& base, const nlohmann::json& db,
                           const std::string& sw = "") {
  const Scenario s = Load(base);
  return ImportSonic(base, s.topology, {SonicConfigDb{"tor0.json", db, sw}});
}

bool NoteHas(const std::vector<std::string>& notes, const std::string& part) {
  for (const auto& n : notes) {
    if (n.find(part) != std::string::npos) return true;
  }
  return false;
}

TEST(SonicTest, ImportsTheDocumentedExample) {
  const auto db = ReadJson(kSrc + "/configs/sonic/arista-7050cx3-tor.json");
  auto imp = Import(Base(), db);
  ASSERT_TRUE(imp.ok()) << imp.message();
  const Scenario s = Load(imp.value().scenario);
  // BUFFER_POOL: size + shared headroom pool (xoff), for tor0 only (the file's hostname).
  auto plan = PlanFabric(s);
  ASSERT_TRUE(plan.ok()) << plan.message();
  const SwitchConfig& tor = plan.value().switches[0];
  ASSERT_EQ(tor.name, "tor0");
  EXPECT_EQ(tor.buffer.size, 32712448 + 1622016);
  EXPECT_EQ(tor.buffer.shared_headroom_pool, 1622016);
  ASSERT_EQ(plan.value().switches[1].name, "spine0");
  EXPECT_EQ(plan.value().switches[1].buffer.size, 12 << 20) << "no file: the base's buffer";
  EXPECT_FALSE(plan.value().switches[1].ports[0].lossless.has_value());
  // all=FILE: every switch.
  {
    auto all = Import(Base(), db, "all");
    ASSERT_TRUE(all.ok()) << all.message();
    const Scenario sa = Load(all.value().scenario);
    EXPECT_EQ(sa.sw.buffer.size, 32712448 + 1622016);
    EXPECT_EQ(all.value().scenario["buffer"]["ports"]["spine0/*"], "pg_lossless_100000_5m_profile");
  }
  // The lossless profile on every port of tor0, numbers as pg_profile_lookup.ini states them.
  for (const auto& port : tor.ports) {
    EXPECT_EQ(port.buffer_profile, "pg_lossless_100000_5m_profile") << port.name;
    const PgProfile pg = ResolveLosslessPg(tor.buffer, port);
    EXPECT_EQ(pg.xoff, 160000);
    EXPECT_EQ(pg.xon, 4608);
    EXPECT_EQ(pg.xon_offset, 4608);
    EXPECT_EQ(pg.reserved, 4608) << "size with a shared headroom pool is the reserved part";
    EXPECT_EQ(pg.dynamic_th, 0);
  }
  // AZURE maps: DSCP 3/4 lossless in their own PGs, 48 -> TC 6, the rest -> TC 1.
  EXPECT_EQ(s.sw.qos.dscp_to_tc[3], 3);
  EXPECT_EQ(s.sw.qos.dscp_to_tc[48], 6);
  EXPECT_EQ(s.sw.qos.dscp_to_tc[26], 1);
  EXPECT_EQ(s.sw.qos.tc_to_pg[7], 7);
  EXPECT_EQ(s.sw.qos.lossless_mask, (1 << 3) | (1 << 4));
  EXPECT_TRUE(s.sw.pfc.enabled);
  // Lossy profiles' dynamic_th.
  EXPECT_EQ(s.sw.buffer.lossy_pg.dynamic_th, 3);
  EXPECT_EQ(s.sw.buffer.lossy_queue.dynamic_th, 3);
  // WRED AZURE_LOSSLESS on queues 3 and 4.
  for (int q = 0; q < 8; ++q) {
    EXPECT_EQ(s.sw.wred[q].enabled, q == 3 || q == 4) << q;
  }
  EXPECT_EQ(s.sw.wred[3].kmin, 1048576);
  EXPECT_EQ(s.sw.wred[3].kmax, 2097152);
  EXPECT_DOUBLE_EQ(s.sw.wred[3].pmax, 0.05);
  EXPECT_TRUE(s.sw.wred[3].drop_non_ect);
  // DWRR 14/15, no strict queue.
  EXPECT_EQ(s.sw.scheduler.strict_mask, 0);
  EXPECT_EQ(s.sw.scheduler.weights[3], 15);
  EXPECT_EQ(s.sw.scheduler.weights[0], 14);
  // PFC watchdog on every port, 200 ms.
  EXPECT_TRUE(s.sw.watchdog.enabled);
  EXPECT_EQ(s.sw.watchdog.detection_time, 200 * kMs);
  EXPECT_EQ(s.sw.watchdog.poll_interval, 200 * kMs);
  // Everything not carried over is listed.
  const auto& notes = imp.value().notes;
  EXPECT_TRUE(NoteHas(notes, "VLAN: not modelled")) << "tables rocefab has no use for";
  EXPECT_TRUE(NoteHas(notes, "LOOPBACK_INTERFACE: not modelled"));
  EXPECT_TRUE(NoteHas(notes, "PORT|*.lanes"));
  EXPECT_TRUE(NoteHas(notes, "DEVICE_METADATA|*.hwsku"));
  EXPECT_TRUE(NoteHas(notes, "BUFFER_POOL|egress_lossy_pool"));
  EXPECT_TRUE(NoteHas(notes, "wred_yellow_enable"));
  EXPECT_TRUE(NoteHas(notes, "egress_lossy_profile: size/static_th"));
  EXPECT_FALSE(NoteHas(notes, "PORT|Ethernet0.speed")) << "speeds match the topology";
  // A port speed or cable that differs from the topology is named.
  auto j = Base();
  j["topology"]["clos"]["link_rate"] = "25Gbps";
  j["topology"]["clos"]["cable"] = "40m";
  auto other = Import(j, db);
  ASSERT_TRUE(other.ok()) << other.message();
  EXPECT_TRUE(
      NoteHas(other.value().notes, "PORT|Ethernet0.speed: 100Gbps, but tor0/p0's link is 25Gbps"))
      << other.value().notes[0];
  EXPECT_TRUE(NoteHas(other.value().notes, "CABLE_LENGTH|AZURE.Ethernet0: 5m"));
}

TEST(SonicTest, DynamicModelNullProfileIsTheFormula) {
  auto db = ReadJson(kSrc + "/configs/sonic/arista-7050cx3-tor.json");
  db["DEVICE_METADATA"]["localhost"]["buffer_model"] = "dynamic";
  for (auto& [k, v] : db["BUFFER_PG"].items()) {
    if (k.ends_with("|3-4")) v["profile"] = "NULL";
  }
  auto imp = Import(Base(), db);
  ASSERT_TRUE(imp.ok()) << imp.message();
  const Scenario s = Load(imp.value().scenario);
  auto plan = PlanFabric(s);
  ASSERT_TRUE(plan.ok());
  const auto& port = plan.value().switches[0].ports[0];
  EXPECT_FALSE(port.lossless.has_value());
  HeadroomParams hp;
  hp.speed = port.rate;
  hp.cable_m = port.cable_m;
  hp.port_mtu = hp.lossless_mtu = 1518;
  EXPECT_EQ(ResolveLosslessPg(plan.value().switches[0].buffer, port).xoff,
            ComputeHeadroom(hp).xoff);
}

TEST(SonicTest, RefusesBadFilesNamingTheField) {
  const auto good = ReadJson(kSrc + "/configs/sonic/arista-7050cx3-tor.json");
  struct Case {
    const char* what;
    std::function<void(nlohmann::json&)> edit;
    const char* expect;
  };
  const Case cases[] = {
      {"a size that is not a number",
       [](auto& d) { d["BUFFER_PROFILE"]["pg_lossless_100000_5m_profile"]["xoff"] = "160k"; },
       "tor0.json: BUFFER_PROFILE|pg_lossless_100000_5m_profile.xoff: \"160k\" must be an integer"},
      {"a dynamic_th out of SAI's range",
       [](auto& d) { d["BUFFER_PROFILE"]["pg_lossless_100000_5m_profile"]["dynamic_th"] = "9"; },
       "pg_lossless_100000_5m_profile.dynamic_th: \"9\" must be an integer in [-8, 8]"},
      {"a dangling profile",
       [](auto& d) { d["BUFFER_PG"]["Ethernet4|3-4"]["profile"] = "[BUFFER_PROFILE|nope]"; },
       "BUFFER_PG|Ethernet4|3-4.profile: names BUFFER_PROFILE|nope"},
      {"a hostname that is no switch",
       [](auto& d) { d["DEVICE_METADATA"]["localhost"]["hostname"] = "sonic"; },
       "\"sonic\" is not a switch of the scenario"},
      {"ports with different maps",
       [](auto& d) { d["PORT_QOS_MAP"]["Ethernet8"]["pfc_enable"] = "3"; },
       "PORT_QOS_MAP|Ethernet8: its maps or pfc_enable differ"},
      {"a PFC priority pausing another queue",
       [](auto& d) { d["PFC_PRIORITY_TO_QUEUE_MAP"]["AZURE"]["3"] = "5"; },
       "PFC_PRIORITY_TO_QUEUE_MAP|AZURE.3: priority 3 pauses queue 5"},
      {"WRED drop only", [](auto& d) { d["WRED_PROFILE"]["AZURE_LOSSLESS"]["ecn"] = "ecn_none"; },
       "WRED_PROFILE|AZURE_LOSSLESS.ecn: \"ecn_none\""},
      {"a PG list that is not one",
       [](auto& d) {
         d["BUFFER_PG"]["Ethernet0|3-x"] = {{"profile", "ingress_lossy_profile"}};
       },
       "BUFFER_PG|Ethernet0|3-x: \"3-x\" is not a list of indices"},
      {"no ingress pool", [](auto& d) { d["BUFFER_POOL"].erase("ingress_lossless_pool"); },
       "BUFFER_POOL has no pool of type \"ingress\""},
      // Found by a session that set out to break the importer:
      {"a port number past any integer",
       [](auto& d) {
         d["PORT"]["Ethernet99999999999999999999"] = {{"speed", "100000"}};
       },
       ""},  // imported (it sorts after the others and is noted as unmapped): no exception
      {"two lossless profiles on one port",
       [](auto& d) {
         d["BUFFER_PROFILE"]["other"] = d["BUFFER_PROFILE"]["pg_lossless_100000_5m_profile"];
         d["BUFFER_PG"].erase("Ethernet0|3-4");
         d["BUFFER_PG"]["Ethernet0|3"]["profile"] = "pg_lossless_100000_5m_profile";
         d["BUFFER_PG"]["Ethernet0|4"]["profile"] = "other";
       },
       "Ethernet0's lossless PGs have two profiles"},
      {"static_th and dynamic_th",
       [](auto& d) {
         d["BUFFER_PROFILE"]["pg_lossless_100000_5m_profile"]["static_th"] = "100000";
       },
       "pg_lossless_100000_5m_profile: give dynamic_th or static_th, not both"},
      {"a boolean that is not one",
       [](auto& d) { d["WRED_PROFILE"]["AZURE_LOSSLESS"]["wred_green_enable"] = "yes"; },
       "WRED_PROFILE|AZURE_LOSSLESS.wred_green_enable: \"yes\" must be true or false"},
      {"an unknown buffer model",
       [](auto& d) { d["DEVICE_METADATA"]["localhost"]["buffer_model"] = "bogus"; },
       "DEVICE_METADATA|localhost.buffer_model: \"bogus\" must be traditional or dynamic"},
      {"a queue naming a missing WRED profile",
       [](auto& d) { d["QUEUE"]["Ethernet0|3"]["wred_profile"] = "NOPE"; },
       "QUEUE|Ethernet0|3.wred_profile: names WRED_PROFILE|NOPE, which the file does not have"},
      {"a map that is not an object", [](auto& d) { d["DSCP_TO_TC_MAP"]["AZURE"] = "x"; },
       "DSCP_TO_TC_MAP|AZURE: must be an object"},
  };
  for (const auto& c : cases) {
    auto db = good;
    c.edit(db);
    auto imp = Import(Base(), db);
    if (std::string(c.expect).empty()) {
      EXPECT_TRUE(imp.ok()) << c.what << ": " << imp.message();
      continue;
    }
    ASSERT_FALSE(imp.ok()) << c.what;
    EXPECT_NE(imp.message().find(c.expect), std::string::npos) << c.what << ": " << imp.message();
  }
  // A profile whose size cannot hold its xoff is imported with reserved 0, and said so.
  auto small = good;
  small["BUFFER_POOL"]["ingress_lossless_pool"].erase("xoff");
  small["BUFFER_PROFILE"]["pg_lossless_100000_5m_profile"]["size"] = "1000";
  auto sm = Import(Base(), small);
  ASSERT_TRUE(sm.ok()) << sm.message();
  EXPECT_TRUE(
      NoteHas(sm.value().notes, "pg_lossless_100000_5m_profile.size: 1000 is smaller than xoff"));
  // No DEVICE_METADATA at all: the file names no switch, SWITCH= does (valgrind once found a
  // read of a missing entry here).
  auto anon = good;
  anon.erase("DEVICE_METADATA");
  EXPECT_TRUE(Import(Base(), anon, "tor0").ok());
  EXPECT_FALSE(Import(Base(), anon).ok()) << "nothing names the switch";
  // all= comes alone.
  const Scenario sc = Load(Base());
  for (const auto& order :
       {std::pair<std::string, std::string>{"tor0", "all"}, {"all", "tor0"}, {"all", "all"}}) {
    auto r = ImportSonic(
        Base(), sc.topology,
        {SonicConfigDb{"a.json", good, order.first}, SonicConfigDb{"b.json", good, order.second}});
    ASSERT_FALSE(r.ok()) << order.first << " then " << order.second;
    EXPECT_NE(r.message().find("must be the only file"), std::string::npos) << r.message();
  }
  // Two files that disagree on a fabric-wide setting.
  auto leaf = good;
  leaf["DEVICE_METADATA"]["localhost"]["hostname"] = "spine0";
  leaf["WRED_PROFILE"]["AZURE_LOSSLESS"]["green_min_threshold"] = "500000";
  const Scenario s = Load(Base());
  auto two =
      ImportSonic(Base(), s.topology,
                  {SonicConfigDb{"tor0.json", good, ""}, SonicConfigDb{"spine0.json", leaf, ""}});
  ASSERT_FALSE(two.ok());
  EXPECT_NE(two.message().find("spine0.json and tor0.json disagree on ECN"), std::string::npos)
      << two.message();
}

// Per switch and per port, what the MMU, classifier, scheduler and watchdog will use.
void ExpectSameSwitches(const Scenario& a, const Scenario& b, const std::string& what) {
  auto pa = PlanFabric(a), pb = PlanFabric(b);
  ASSERT_TRUE(pa.ok() && pb.ok()) << what;
  ASSERT_EQ(pa.value().switches.size(), pb.value().switches.size());
  for (size_t i = 0; i < pa.value().switches.size(); ++i) {
    const SwitchConfig& x = pa.value().switches[i];
    const SwitchConfig& y = pb.value().switches[i];
    const std::string at = what + " " + x.name;
    EXPECT_EQ(x.buffer.size, y.buffer.size) << at;
    EXPECT_EQ(x.buffer.shared_headroom_pool, y.buffer.shared_headroom_pool) << at;
    EXPECT_EQ(x.buffer.lossy_pg.dynamic_th, y.buffer.lossy_pg.dynamic_th) << at;
    EXPECT_EQ(x.buffer.lossy_queue.dynamic_th, y.buffer.lossy_queue.dynamic_th) << at;
    for (size_t p = 0; p < x.ports.size(); ++p) {
      const PgProfile u = ResolveLosslessPg(x.buffer, x.ports[p]);
      const PgProfile v = ResolveLosslessPg(y.buffer, y.ports[p]);
      EXPECT_EQ(u.xoff, v.xoff) << at << " p" << p;
      EXPECT_EQ(u.xon, v.xon) << at << " p" << p;
      EXPECT_EQ(u.xon_offset, v.xon_offset) << at << " p" << p;
      EXPECT_EQ(u.reserved, v.reserved) << at << " p" << p;
      EXPECT_EQ(u.dynamic_th, v.dynamic_th) << at << " p" << p;
      EXPECT_EQ(u.static_th, v.static_th) << at << " p" << p;
      EXPECT_EQ(x.ports[p].pfc_watchdog && x.watchdog.enabled,
                y.ports[p].pfc_watchdog && y.watchdog.enabled)
          << at << " p" << p;
    }
    EXPECT_EQ(x.qos.trust, y.qos.trust) << at;
    EXPECT_EQ(x.qos.dscp_to_tc, y.qos.dscp_to_tc) << at;
    if (x.qos.trust == QosTrust::kPcp) {
      EXPECT_EQ(x.qos.pcp_to_tc, y.qos.pcp_to_tc) << at;
    }
    EXPECT_EQ(x.qos.tc_to_pg, y.qos.tc_to_pg) << at;
    EXPECT_EQ(x.qos.tc_to_queue, y.qos.tc_to_queue) << at;
    EXPECT_EQ(x.qos.lossless_mask, y.qos.lossless_mask) << at;
    EXPECT_EQ(x.pfc.enabled, y.pfc.enabled) << at;
    for (int q = 0; q < 8; ++q) {
      EXPECT_EQ(x.wred[q].enabled, y.wred[q].enabled) << at << " queue " << q;
      if (!x.wred[q].enabled) continue;
      EXPECT_EQ(x.wred[q].kmin, y.wred[q].kmin) << at;
      EXPECT_EQ(x.wred[q].kmax, y.wred[q].kmax) << at;
      EXPECT_DOUBLE_EQ(x.wred[q].pmax, y.wred[q].pmax) << at;
      EXPECT_EQ(x.wred[q].drop_non_ect, y.wred[q].drop_non_ect) << at;
    }
    EXPECT_EQ(x.scheduler.strict_mask, y.scheduler.strict_mask) << at;
    EXPECT_EQ(x.scheduler.weights, y.scheduler.weights) << at;
    EXPECT_EQ(x.watchdog.enabled, y.watchdog.enabled) << at;
    if (x.watchdog.enabled) {
      EXPECT_EQ(x.watchdog.detection_time, y.watchdog.detection_time) << at;
      EXPECT_EQ(x.watchdog.restoration_time, y.watchdog.restoration_time) << at;
      EXPECT_EQ(x.watchdog.poll_interval, y.watchdog.poll_interval) << at;
      EXPECT_EQ(x.watchdog.action, y.watchdog.action) << at;
    }
  }
}

// Export every switch of a shipped scenario, import the files back onto it: the switches are
// configured exactly as before (a tuned configuration survives the trip to a real switch).
TEST(SonicTest, EveryShippedScenarioSurvivesExportAndImport) {
  int checked = 0;
  for (const char* name :
       {"quickstart-rdma.json", "incast-dcqcn.json", "nic-pause-storm.json",
        "arp-flood-deadlock.json", "field/pfcwd-late-polls.json", "field/dscp-to-tc-map-wrong.json",
        "field/headroom-zero-incast.json", "field/pcp-lost-at-routed-hop.json"}) {
    const std::string path = kSrc + "/configs/scenarios/" + name;
    auto s = Scenario::Load(path);
    ASSERT_TRUE(s.ok()) << s.message();
    std::vector<SonicConfigDb> dbs;
    for (const auto& sw : s.value().topology.switches) {
      auto ex = ExportSonic(s.value(), sw.name);
      ASSERT_TRUE(ex.ok()) << name << ": " << ex.message();
      dbs.push_back({sw.name + ".json", ex.value().db, ""});
    }
    const auto base = ReadJson(path);
    auto imp = ImportSonic(base, s.value().topology, dbs);
    ASSERT_TRUE(imp.ok()) << name << ": " << imp.message();
    auto back = Scenario::FromJson(imp.value().scenario,
                                   std::filesystem::path(path).parent_path().string());
    ASSERT_TRUE(back.ok()) << name << ": " << back.message();
    ExpectSameSwitches(s.value(), back.value(), name);
    ++checked;
  }
  EXPECT_EQ(checked, 8);
}

// VLAN-based PFC: a port with a DOT1P map and no DSCP map classifies by PCP; export writes the
// DOT1P map for a scenario with qos.trust "pcp".
TEST(SonicTest, Dot1pMapMeansPcpTrust) {
  auto db = ReadJson(kSrc + "/configs/sonic/arista-7050cx3-tor.json");
  for (auto& [port, e] : db["PORT_QOS_MAP"].items()) {
    e.erase("dscp_to_tc_map");
    e["dot1p_to_tc_map"] = "AZURE";
  }
  db["DOT1P_TO_TC_MAP"]["AZURE"] = {{"0", "0"}, {"1", "1"}, {"2", "2"}, {"3", "3"},
                                    {"4", "4"}, {"5", "5"}, {"6", "6"}, {"7", "1"}};
  auto imp = Import(Base(), db);
  ASSERT_TRUE(imp.ok()) << imp.message();
  const Scenario s = Load(imp.value().scenario);
  EXPECT_EQ(s.sw.qos.trust, QosTrust::kPcp);
  EXPECT_EQ(s.sw.qos.pcp_to_tc[7], 1);
  EXPECT_EQ(s.sw.qos.pcp_to_tc[3], 3);
  auto ex = ExportSonic(s, "tor0");
  ASSERT_TRUE(ex.ok()) << ex.message();
  EXPECT_EQ(ex.value().db["PORT_QOS_MAP"]["Ethernet0"]["dot1p_to_tc_map"], "ROCEFAB");
  EXPECT_FALSE(ex.value().db["PORT_QOS_MAP"]["Ethernet0"].contains("dscp_to_tc_map"));
  EXPECT_EQ(ex.value().db["DOT1P_TO_TC_MAP"]["ROCEFAB"]["7"], "1");
  // Both maps on a port: DSCP classifies, and the note says so.
  for (auto& [port, e] : db["PORT_QOS_MAP"].items()) e["dscp_to_tc_map"] = "AZURE";
  auto both = Import(Base(), db);
  ASSERT_TRUE(both.ok()) << both.message();
  EXPECT_EQ(Load(both.value().scenario).sw.qos.trust, QosTrust::kDscp);
  EXPECT_TRUE(NoteHas(both.value().notes, "dot1p_to_tc_map: the port has a dscp_to_tc_map too"));
  // A DOT1P map entry out of range names the table, key and field.
  db["DOT1P_TO_TC_MAP"]["AZURE"]["7"] = "9";
  auto bad = Import(Base(), db);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("DOT1P_TO_TC_MAP|AZURE.7"), std::string::npos) << bad.message();
}

// What the base scenario says of switches no file configures stays; fabric-wide blocks the
// files remove are named in notes.
TEST(SonicTest, KeepsTheBaseForSwitchesNoFileNames) {
  auto base = Base();
  base["topology"]["clos"]["tors"] = 2;
  base["buffer"] = {{"profiles", {{"tight", {{"headroom", "40KiB"}}}}},
                    {"ports", {{"tor1/*", "tight"}}},
                    {"switches", {{"spine0", {{"size", "64MiB"}}}}}};
  base["ecn"] = {{"kmin", "100KB"}, {"kmax", "400KB"}, {"pmax", 0.2}};
  auto db = ReadJson(kSrc + "/configs/sonic/arista-7050cx3-tor.json");
  db.erase("WRED_PROFILE");
  for (auto& [k, e] : db["QUEUE"].items()) e.erase("wred_profile");
  auto imp = Import(base, db);
  ASSERT_TRUE(imp.ok()) << imp.message();
  const auto& b = imp.value().scenario["buffer"];
  EXPECT_EQ(b["ports"]["tor1/*"], "tight") << b.dump();
  EXPECT_EQ(b["profiles"]["tight"]["headroom"], "40KiB") << b.dump();
  EXPECT_EQ(b["switches"]["spine0"]["size"], "64MiB") << b.dump();
  EXPECT_TRUE(b["switches"].contains("tor0")) << b.dump();
  EXPECT_FALSE(imp.value().scenario.contains("ecn"));
  EXPECT_TRUE(NoteHas(imp.value().notes, "ecn: no file marks ECN")) << imp.value().notes.size();
  const Scenario s = Load(imp.value().scenario);
  EXPECT_EQ(s.sw.buffer_ports.size(), 2u);
}

// A lossless class on PG 0 (lossy traffic shares it): export writes one profile per PG, and the
// file imports back.
TEST(SonicTest, ExportWithALosslessPgZero) {
  auto j = Base();
  j["qos"] = {{"tc_to_pg", {{"3", 0}, {"4", 0}}}};
  const Scenario s = Load(j);
  auto ex = ExportSonic(s, "tor0");
  ASSERT_TRUE(ex.ok()) << ex.message();
  const auto& pg = ex.value().db["BUFFER_PG"];
  EXPECT_EQ(pg["Ethernet0|0"]["profile"], "pg_lossless_100000_5m_profile") << pg.dump();
  EXPECT_EQ(pg.size(), 4u) << pg.dump();
  auto imp = Import(j, ex.value().db);
  EXPECT_TRUE(imp.ok()) << imp.message();
  j["qos"] = {{"lossless", {0, 1, 2, 3, 4, 5, 6, 7}}};
  auto all = ExportSonic(Load(j), "tor0");
  ASSERT_TRUE(all.ok()) << all.message();
  for (const auto& [k, v] : all.value().db["BUFFER_QUEUE"].items()) {
    EXPECT_NE(k.back(), '|') << "a queue list is never empty: " << k;
  }
}

TEST(SonicTest, ExportWritesSonicTables) {
  const Scenario s = Load(Base());
  auto ex = ExportSonic(s, "tor0");
  ASSERT_TRUE(ex.ok()) << ex.message();
  const auto& db = ex.value().db;
  for (const char* t :
       {"DEVICE_METADATA", "PORT", "CABLE_LENGTH", "BUFFER_POOL", "BUFFER_PROFILE", "BUFFER_PG",
        "BUFFER_QUEUE", "PORT_QOS_MAP", "DSCP_TO_TC_MAP", "TC_TO_PRIORITY_GROUP_MAP",
        "TC_TO_QUEUE_MAP", "PFC_PRIORITY_TO_QUEUE_MAP", "QUEUE", "SCHEDULER"}) {
    EXPECT_TRUE(db.contains(t)) << t;
  }
  EXPECT_EQ(db["DEVICE_METADATA"]["localhost"]["type"], "ToRRouter");
  EXPECT_EQ(db["PORT"]["Ethernet4"]["speed"], "100000");
  EXPECT_EQ(db["CABLE_LENGTH"]["AZURE"]["Ethernet4"], "5m");
  // The headroom of a 100G 5 m port from SONiC's formula, under SONiC's profile name.
  HeadroomParams hp;
  hp.speed = 100 * kGbps;
  hp.cable_m = 5;
  hp.port_mtu = hp.lossless_mtu = 1518;
  const auto& prof = db["BUFFER_PROFILE"]["pg_lossless_100000_5m_profile"];
  EXPECT_EQ(prof["xoff"], std::to_string(ComputeHeadroom(hp).xoff));
  EXPECT_EQ(db["BUFFER_PG"]["Ethernet4|3-4"]["profile"], "pg_lossless_100000_5m_profile");
  EXPECT_EQ(db["PORT_QOS_MAP"]["Ethernet0"]["pfc_enable"], "3,4");
  EXPECT_EQ(db["DSCP_TO_TC_MAP"]["ROCEFAB"]["26"], "3");
  EXPECT_EQ(db["SCHEDULER"]["scheduler.strict"]["type"], "STRICT");
  EXPECT_EQ(db["QUEUE"]["Ethernet0|6"]["scheduler"], "scheduler.strict");
  EXPECT_FALSE(ExportSonic(s, "tor9").ok());
}

}  // namespace
}  // namespace rocefab

// The scenario knobs field reports need (issue #22), each used from a scenario file as a user
// writes it and checked against the behaviour it must produce in the sim runner: per-QP traffic
// class, UDP source port, timeout/retries and AckReq spacing; a DSCP->TC map; PFC, CNP and
// malformed-frame injection; loss by frame number, type and IP-ID; the watchdog's port list,
// poll jitter and event log; and the measurements added with them.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "run/sim_run.h"
#include "topo/scenario.h"

namespace rocefab {
namespace {

// Two ToRs of two hosts, two spines, 10 Gb/s, static neighbours; `extra` is merged over it.
nlohmann::json Base(const nlohmann::json& extra) {
  nlohmann::json j = {
      {"name", "knobs"},
      {"duration", "5ms"},
      {"topology",
       {{"clos",
         {{"spines", 2}, {"tors", 2}, {"hosts_per_tor", 2}, {"link_rate", "10Gbps"},
          {"host_kind", "builtin"}}}}},
      {"neighbors", "static"}};
  j.merge_patch(extra);
  return j;
}

nlohmann::json Rdma(const std::string& from, const std::string& to, int iterations,
                    const nlohmann::json& extra = nlohmann::json::object()) {
  nlohmann::json t = {{"kind", "rdma"}, {"test", "write_bw"}, {"from", from}, {"to", to},
                      {"size", 65536}, {"iterations", iterations}};
  t.merge_patch(extra);
  return t;
}

struct Run {
  nlohmann::json summary;
  std::string dir;
};

// Reads `j` with the strict reader (as `rocefab sim` does) and runs it with outputs in a
// directory named after `tag`.
Run RunJson(const nlohmann::json& j, const std::string& tag) {
  auto s = Scenario::FromJson(j, ".");
  EXPECT_TRUE(s.ok()) << s.message();
  if (!s.ok()) return {};
  SimRunOptions o;
  o.out_dir = ::testing::TempDir() + "/rocefab_knobs_" + tag;
  std::filesystem::remove_all(o.out_dir);
  o.quiet = true;
  auto r = RunSim(s.value(), o);
  EXPECT_TRUE(r.ok()) << r.message();
  if (!r.ok()) return {};
  EXPECT_EQ(r.value()["mbufs_in_use_after_run"], 0) << tag;
  return {r.value(), o.out_dir};
}

uint64_t QueueTx(const nlohmann::json& s, const char* sw, int port, int q) {
  const auto& qs = s["switches"][sw]["ports"][port]["queues"];
  const std::string k = std::to_string(q);
  return qs.contains(k) ? qs[k]["tx_packets"].get<uint64_t>() : 0;
}

uint64_t SpineRx(const nlohmann::json& s, const char* spine) {
  uint64_t n = 0;
  for (const auto& p : s["switches"][spine]["ports"]) n += p["rx_packets"].get<uint64_t>();
  return n;
}

const nlohmann::json& Rnic(const nlohmann::json& s, const char* host) {
  return s["hosts"][host]["rnic"];
}

std::vector<std::vector<std::string>> ReadCsv(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::vector<std::string>> rows;
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> row;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ',')) row.push_back(cell);
    rows.push_back(row);
  }
  return rows;
}

// tor0's ports: p0, p1 face h0, h1; p2, p3 the spines (links in Clos order).
TEST(ScenarioKnobsTest, PerQpDscpAndADscpMapPutOneApplicationInAnotherClass) {
  const auto j = Base({{"qos", {{"dscp_to_tc", {{"10", 4}}}, {"lossless", {3, 4}}}},
                       {"traffic",
                        {Rdma("h0", "h2", 20, {{"dscp", 10}}), Rdma("h1", "h3", 20),
                         Rdma("h1", "h2", 20, {{"dscp", 0}})}}});
  const auto s = RunJson(j, "dscp").summary;
  uint64_t tc[8] = {};
  for (int p : {2, 3}) {
    for (int q = 0; q < 8; ++q) tc[q] += QueueTx(s, "tor0", p, q);
  }
  // 20 x 64 data frames per test at least, each in its class's queue on the uplinks.
  EXPECT_GE(tc[4], 1280u) << "dscp 10 mapped to TC 4";
  EXPECT_GE(tc[3], 1280u) << "the NIC's default DSCP 26 stays in TC 3";
  EXPECT_GE(tc[0], 1280u) << "dscp 0: the misconfigured application in the lossy class";
  for (const auto& t : s["rdma"]) EXPECT_TRUE(t["completed"].get<bool>()) << t.dump();
}

TEST(ScenarioKnobsTest, AFixedUdpSourcePortPinsEveryQpToOneSpine) {
  auto run = [](const nlohmann::json& extra, const std::string& tag) {
    return RunJson(Base({{"traffic", {Rdma("h0", "h2", 16, extra.is_null() ? nlohmann::json::object()
                                                                           : extra)}}}),
                   tag)
        .summary;
  };
  const auto spread = run(nlohmann::json{{"qps", 8}}, "sport_hashed");
  EXPECT_GT(SpineRx(spread, "spine0"), 200u);
  EXPECT_GT(SpineRx(spread, "spine1"), 200u) << "8 QPs with hashed ports use both spines";
  const auto pinned = run(nlohmann::json{{"qps", 8}, {"udp_sport", 49200}}, "sport_fixed");
  EXPECT_EQ(std::min(SpineRx(pinned, "spine0"), SpineRx(pinned, "spine1")), 0u)
      << "one source port: one ECMP member for every QP";
  EXPECT_GT(std::max(SpineRx(pinned, "spine0"), SpineRx(pinned, "spine1")), 1000u);
}

TEST(ScenarioKnobsTest, PerQpTimeoutAndRetryCountSetWhenAWorkRequestFails) {
  // From 1 ms every data frame h0 sends is lost: the QP with timeout 4.096 us x 2^8 = 1.05 ms
  // and one retry fails about two timeouts later; the recorded failure says when and why.
  const nlohmann::json loss = {{"kind", "link_loss"}, {"from", "h0"}, {"to", "tor0"},
                               {"rate", 1.0}, {"frame_type", "data"}, {"at", "1ms"}};
  const auto s = RunJson(
      Base({{"duration", "10ms"},
            {"faults", {loss}},
            {"traffic", {Rdma("h0", "h2", 1000, {{"timeout_exp", 8}, {"retry_cnt", 1}})}}}),
      "timeout")
                     .summary;
  const auto& r = s["rdma"][0];
  ASSERT_TRUE(r.contains("failed_wrs")) << r.dump();
  const auto& f = r["failed_wrs"][0];
  EXPECT_EQ(f["status"], "IBV_WC_RETRY_EXC_ERR");
  EXPECT_GE(f["t_us"].get<double>(), 1000 + 2 * 1048.0) << f.dump();
  EXPECT_LE(f["t_us"].get<double>(), 1000 + 3 * 1048.0 + 100) << f.dump();
  EXPECT_GT(r["errors"].get<int>(), 0);
  // The NIC's default timeout (2^14 x 4.096 us = 67 ms) has not expired by 10 ms.
  const auto d = RunJson(Base({{"duration", "10ms"}, {"faults", {loss}},
                               {"traffic", {Rdma("h0", "h2", 1000)}}}),
                         "timeout_default")
                     .summary;
  EXPECT_FALSE(d["rdma"][0].contains("failed_wrs")) << d["rdma"][0].dump();
  EXPECT_EQ(d["rdma"][0]["errors"], 0);
}

TEST(ScenarioKnobsTest, AckReqEverySetsHowOftenTheResponderAcks) {
  // The responder coalesces ACKs (ack_every 1024, above the 640 packets of the test), so it ACKs on AckReq only:
  // once per 64-packet message with ack_req_every 0, eight times with 8.
  auto acks = [](int every, const std::string& tag) {
    const auto s = RunJson(Base({{"nic", {{"ack_every", 1024}}},
                                 {"traffic", {Rdma("h0", "h2", 10, {{"ack_req_every", every}})}}}),
                           tag)
                       .summary;
    EXPECT_TRUE(s["rdma"][0]["completed"].get<bool>()) << s["rdma"][0].dump();
    return Rnic(s, "h2")["acks_sent"].get<uint64_t>();
  };
  EXPECT_EQ(acks(0, "ackreq0"), 10u);
  EXPECT_EQ(acks(8, "ackreq8"), 80u);
}

TEST(ScenarioKnobsTest, PauseInjectedAtAHostNicStopsOnlyTheNamedPriorities) {
  auto bytes = [](const nlohmann::json& inj, const std::string& tag) {
    nlohmann::json extra = {{"traffic", {Rdma("h0", "h2", 1000)}}};
    if (!inj.is_null()) extra["faults"] = nlohmann::json::array({inj});
    const auto s = RunJson(Base(extra), tag).summary;
    return std::make_pair(s["rdma"][0]["bytes"].get<uint64_t>(),
                          s["hosts"]["h0"]["pfc_rx_frames"].get<uint64_t>());
  };
  nlohmann::json storm = {{"kind", "pause_injection"}, {"host", "h0"}, {"priorities", {3, 4}},
                          {"rate", 2000}, {"at", "1ms"}, {"duration", "3ms"}};
  const auto clean = bytes(nullptr, "pause_none");
  const auto stormed = bytes(storm, "pause_34");
  EXPECT_GT(stormed.second, 0u);
  EXPECT_LT(stormed.first, clean.first / 2) << "XOFF on TC 3 for 3 of 5 ms";
  storm["priorities"] = {4};
  const auto other = bytes(storm, "pause_4");
  EXPECT_GT(other.second, 0u);
  EXPECT_EQ(other.first, clean.first) << "a pause of priority 4 leaves TC 3 alone";
  storm["priorities"] = {3};
  storm["quanta"] = 10;  // 5.12 ns per quantum at 10 Gb/s: 51 ns per 500 us
  const auto short_pause = bytes(storm, "pause_short");
  EXPECT_GT(short_pause.first, clean.first * 95 / 100) << "10 quanta barely pause";
}

TEST(ScenarioKnobsTest, HostPfcCountersFollowTheLosslessPriorities) {
  // Lossless priority 5 only (the data DSCP mapped there): the NIC's counters report the PFC
  // it honoured on 5, whatever priorities 3 and 4 do.
  const auto s = RunJson(
      Base({{"qos", {{"lossless", {5}}, {"dscp_to_tc", {{"26", 5}}}}},
            {"faults",
             {{{"kind", "pause_injection"}, {"host", "h0"}, {"priorities", {3, 5}},
               {"count", 10}, {"rate", 2000}, {"at", "1ms"}}}},
            {"traffic", {Rdma("h0", "h2", 1000)}}}),
      "pfc_counters")
                     .summary;
  const auto& h0 = s["hosts"]["h0"];
  EXPECT_EQ(h0["pfc_rx_frames"], 10) << h0.dump();
  ASSERT_TRUE(h0["pfc"].contains("5")) << h0["pfc"].dump();
  EXPECT_EQ(h0["pfc"]["5"]["rx_frames"], 10);
  EXPECT_FALSE(h0["pfc"].contains("3")) << "priority 3 is lossy here: not honoured";
  EXPECT_GT(h0["paused_time_ps"].get<Time>(), 0);
  EXPECT_EQ(h0["paused_time_ps"], h0["pfc"]["5"]["paused_time_ps"]);
}

TEST(ScenarioKnobsTest, LinkLossByFrameNumberTypeAndIpId) {
  // The 1st, 2nd and 5th ACK from h2 are lost, nothing else.
  const auto acks = RunJson(
      Base({{"faults",
             {{{"kind", "link_loss"}, {"from", "h2"}, {"to", "tor1"}, {"frames", {1, 2, 5}},
               {"frame_type", "ack"}, {"at", "0s"}}}},
            {"traffic", {Rdma("h0", "h2", 50)}}}),
      "loss_acks")
                        .summary;
  EXPECT_EQ(acks["lost_frames"], 3);
  EXPECT_TRUE(acks["rdma"][0]["completed"].get<bool>());
  // The frame with IPv4 Identification 100 from h0 (its 100th frame) is lost and resent.
  const auto ipid = RunJson(
      Base({{"faults",
             {{{"kind", "link_loss"}, {"from", "h0"}, {"to", "tor0"}, {"frames", {1}},
               {"ip_id", 100}, {"at", "0s"}}}},
            {"traffic", {Rdma("h0", "h2", 50)}}}),
      "loss_ipid")
                        .summary;
  EXPECT_EQ(ipid["lost_frames"], 1);
  EXPECT_GE(Rnic(ipid, "h0")["retransmitted"].get<uint64_t>(), 1u);
  EXPECT_TRUE(ipid["rdma"][0]["completed"].get<bool>());
  // The reader names the bad frame type and lists the good ones.
  auto bad = Scenario::FromJson(
      Base({{"faults",
             {{{"kind", "link_loss"}, {"from", "h2"}, {"to", "tor1"}, {"frames", {1}},
               {"frame_type", "acks"}, {"at", "0s"}}}}}),
      ".");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("faults[0].frame_type"), std::string::npos) << bad.message();
  EXPECT_NE(bad.message().find("cnp"), std::string::npos) << bad.message();
}

TEST(ScenarioKnobsTest, InjectedCnpsCutTheQpRateAndTheTraceShowsIt) {
  auto run = [](bool inject, const std::string& tag) {
    nlohmann::json extra = {{"output", {{"sample_interval", "100us"}, {"dcqcn_trace", {"h0"}}}},
                            {"traffic", {Rdma("h0", "h2", 1000)}}};
    if (inject) {
      extra["faults"] = {{{"kind", "cnp_injection"}, {"host", "h0"}, {"qpn", 1},
                          {"rate", 100000}, {"at", "1ms"}, {"duration", "2ms"}}};
    }
    return RunJson(Base(extra), tag);
  };
  const auto clean = run(false, "cnp_none");
  const auto hit = run(true, "cnp_injected");
  EXPECT_GE(Rnic(hit.summary, "h0")["cnps_received"].get<uint64_t>(), 190u);
  EXPECT_LT(hit.summary["rdma"][0]["bytes"].get<uint64_t>(),
            clean.summary["rdma"][0]["bytes"].get<uint64_t>() * 8 / 10);
  // dcqcn.csv: h0's QP 1 below 5 Gb/s at 2.5 ms with alpha above its floor; at line rate and
  // alpha 1 (never started) without the CNPs.
  auto rate_at = [](const std::string& dir, const std::string& t) {
    for (const auto& row : ReadCsv(dir + "/dcqcn.csv")) {
      if (row.size() == 6 && row[0] == t && row[1] == "h0" && row[2] == "1") {
        return std::make_pair(std::stod(row[3]), std::stod(row[5]));
      }
    }
    return std::make_pair(-1.0, -1.0);
  };
  const auto [r_hit, a_hit] = rate_at(hit.dir, "2500.000");
  EXPECT_GE(r_hit, 0);
  EXPECT_LT(r_hit, 5.0);
  EXPECT_GT(a_hit, 0.0);
  EXPECT_EQ(rate_at(clean.dir, "2500.000").first, 10.0);
}

TEST(ScenarioKnobsTest, MalformedFramesAreDroppedUnderNamedReasonsAndDisturbNothing) {
  std::vector<nlohmann::json> faults;
  for (const char* g : {"truncated", "bad_ip_checksum", "runt", "random"}) {
    faults.push_back({{"kind", "frame_injection"}, {"switch", "tor0"}, {"port", 0},
                      {"frame", g}, {"count", 25}, {"rate", 10000}, {"at", "0s"}});
  }
  for (const char* g : {"bad_icrc", "bad_opcode"}) {
    faults.push_back({{"kind", "frame_injection"}, {"host", "h2"}, {"frame", g},
                      {"count", 25}, {"rate", 10000}, {"at", "0s"}});
  }
  const auto s =
      RunJson(Base({{"faults", faults}, {"traffic", {Rdma("h0", "h2", 20)}}}), "garbage").summary;
  const auto& d = s["switches"]["tor0"]["drops"];
  EXPECT_EQ(d.value("truncated_l3", 0), 50) << d.dump();  // the truncated frames and the runts
  EXPECT_EQ(d.value("bad_ip_checksum", 0), 25) << d.dump();
  uint64_t tor0 = 0;
  for (const auto& [k, v] : d.items()) tor0 += v.get<uint64_t>();
  EXPECT_GE(tor0, 100u) << "every malformed frame at tor0 is dropped and counted";
  // Unparsable frames count in TC 0 of the per-class drops.
  EXPECT_EQ(s["switches"]["tor0"]["drops_by_tc"]["0"].value("truncated_l3", 0), 50);
  EXPECT_EQ(Rnic(s, "h2")["bad_icrc"], 25);
  EXPECT_TRUE(s["rdma"][0]["completed"].get<bool>());
  EXPECT_EQ(s["rdma"][0]["errors"], 0);
}

TEST(ScenarioKnobsTest, TheWatchdogWatchesOnlyListedPortsAndLogsItsEvents) {
  auto run = [](const nlohmann::json& ports, Time jitter, const std::string& tag) {
    nlohmann::json wd = {{"enabled", true}, {"detection_time", "2ms"},
                         {"restoration_time", "2ms"}, {"poll_interval", "1ms"},
                         {"ports", ports}};
    if (jitter > 0) wd["poll_jitter"] = std::to_string(jitter / kUs) + "us";
    return RunJson(
               Base({{"duration", "20ms"},
                     {"pfc_watchdog", wd},
                     {"faults",
                      {{{"kind", "pause_injection"}, {"switch", "tor0"}, {"port", 1},
                        {"rate", 2000}, {"at", "2ms"}, {"duration", "8ms"}}}},
                     {"traffic",
                      {{{"kind", "udp"}, {"from", "h0"}, {"to", "h1"}, {"rate", "1Gbps"},
                        {"duration", "15ms"}, {"dscp", 26}}}}}),
               tag)
        .summary;
  };
  const auto elsewhere = run(nlohmann::json::array({"tor0/p0"}), 0, "wd_p0");
  EXPECT_FALSE(elsewhere["switches"]["tor0"]["ports"][1].contains("pfc_watchdog"))
      << "p1 is not watched";
  const auto watched = run(nlohmann::json::array({"tor0/p1"}), 0, "wd_p1");
  const auto& wd = watched["switches"]["tor0"]["ports"][1]["pfc_watchdog"];
  ASSERT_FALSE(wd.is_null());
  EXPECT_EQ(wd["per_priority"]["3"]["storms_detected"], 1) << wd.dump();
  ASSERT_EQ(wd["events"].size(), 2u) << wd.dump();
  EXPECT_EQ(wd["events"][0]["event"], "storm");
  const double storm_us = wd["events"][0]["t_us"].get<double>();
  EXPECT_GE(storm_us, 2000 + 2000);         // detection time after the storm began
  EXPECT_LE(storm_us, 2000 + 2000 + 1000);  // plus at most one poll interval
  EXPECT_EQ(wd["events"][1]["event"], "restore");
  EXPECT_GE(wd["events"][1]["t_us"].get<double>(), 10000 + 2000);
  // With jitter every poll is up to 1 ms late: the storm is still declared, within the
  // detection time plus two polls of up to poll interval + jitter (pfc_watchdog.h).
  const auto jittered = run(nlohmann::json::array({"tor0/p1"}), kMs, "wd_jitter");
  const auto& wj = jittered["switches"]["tor0"]["ports"][1]["pfc_watchdog"];
  ASSERT_FALSE(wj.is_null());
  const double j_us = wj["events"][0]["t_us"].get<double>();
  EXPECT_GE(j_us, 4000);
  EXPECT_LE(j_us, 2000 + 2000 + 2 * (1000 + 1000));
  EXPECT_NE(j_us, storm_us) << "jittered polls land off the 1 ms grid";
}

TEST(ScenarioKnobsTest, MeasurementsForFieldReports) {
  // Pingmesh p95 and max, the ECN marking point, and the buffer occupancy by kind in
  // timeseries.csv under a 3-to-1 incast.
  const auto r = RunJson(
      Base({{"duration", "4ms"},
            {"ecn", {{"enabled", true}, {"mark_on", "dequeue"}}},
            {"output", {{"sample_interval", "50us"}}},
            {"traffic",
             {Rdma("h1", "h0", 1000), Rdma("h2", "h0", 1000), Rdma("h3", "h0", 1000),
              {{"kind", "pingmesh"}, {"interval", "50us"}, {"count", 50}}}}}),
      "measure");
  const auto& pm = r.summary["pingmesh"]["fabric"];
  ASSERT_TRUE(pm.contains("rtt_p95_us")) << r.summary["pingmesh"].dump().substr(0, 400);
  EXPECT_LE(pm["rtt_p50_us"].get<double>(), pm["rtt_p95_us"].get<double>());
  EXPECT_LE(pm["rtt_p95_us"].get<double>(), pm["rtt_p99_us"].get<double>());
  EXPECT_LE(pm["rtt_p99_us"].get<double>(), pm["rtt_max_us"].get<double>());
  EXPECT_EQ(r.summary["switches"]["tor0"]["ecn"]["3"]["mark_on"], "dequeue");
  const auto rows = ReadCsv(r.dir + "/timeseries.csv");
  ASSERT_GT(rows.size(), 2u);
  const auto& h = rows[0];
  const auto col = [&](const std::string& name) {
    return static_cast<size_t>(std::find(h.begin(), h.end(), name) - h.begin());
  };
  const size_t shared = col("ingress_shared_bytes"), headroom = col("ingress_headroom_bytes");
  ASSERT_LT(headroom, h.size());
  long long max_shared = 0;
  for (size_t i = 1; i < rows.size(); ++i) {
    if (rows[i].size() != h.size()) continue;
    max_shared = std::max(max_shared, std::stoll(rows[i][shared]));
    EXPECT_GE(std::stoll(rows[i][headroom]), 0);
  }
  EXPECT_GT(max_shared, 0) << "the incast fills the shared pool somewhere";
}

TEST(ScenarioKnobsTest, ConweaveReportsItsLongestReorderHold) {
  std::ifstream f(std::string(ROCEFAB_SOURCE_DIR) + "/tests/live/conweave_hotspot.json");
  const auto r = RunJson(nlohmann::json::parse(f), "conweave_hold");
  const auto& cw = r.summary["switches"]["tor1"]["conweave"];
  ASSERT_GT(cw["reorder_holds"].get<uint64_t>(), 0u) << cw.dump();
  EXPECT_GT(cw["max_hold_us"].get<double>(), 0.0);
  EXPECT_LE(cw["mean_hold_us"].get<double>(), cw["max_hold_us"].get<double>());
  // A queue is flushed by its TAIL or at the latest at its deadline (reorder wait + slack).
  EXPECT_LE(cw["max_hold_us"].get<double>(), 1000.0) << cw.dump();
}

}  // namespace
}  // namespace rocefab

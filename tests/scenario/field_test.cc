// Reproductions of public field reports (configs/scenarios/field/, docs/field.md) in the sim
// runner: each test runs its scenario, and where the report names a cure or a misconfiguration,
// the other variant too, and asserts the figures that would change if the defect came back.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "common/json_reader.h"
#include "common/units.h"
#include "common/wire/pfc_frame.h"
#include "fabric/check.h"
#include "fabric/sonic.h"
#include "run/sim_fabric.h"
#include "tests/support/test_pool.h"

namespace rocefab {
namespace {

std::string FieldPath(const std::string& name) {
  return std::string(ROCEFAB_SOURCE_DIR) + "/configs/scenarios/field/" + name;
}

// The rule names `rocefab check` reports for `s`.
std::vector<std::string> CheckRules(const Scenario& s) {
  std::vector<std::string> rules;
  for (const CheckFinding& f : CheckScenario(s)) rules.push_back(f.check);
  return rules;
}

// XOFF frames a switch sent on priority 3 over all its ports.
uint64_t XoffSent(SwitchNode& sw) {
  uint64_t n = 0;
  for (uint16_t p = 0; p < sw.num_ports(); ++p) n += sw.pfc_tx_xoff(p, 3);
  return n;
}

class FieldTest : public testing::PoolTest {
 protected:
  static Scenario Load(const std::string& name) {
    auto s = Scenario::Load(FieldPath(name));
    EXPECT_TRUE(s.ok()) << s.message();
    return s.ok() ? s.value() : Scenario{};
  }
  std::unique_ptr<SimFabric> Build(const Scenario& s) {
    auto fr = SimFabric::Create(s, pool_);
    EXPECT_TRUE(fr.ok()) << fr.message();
    return fr.ok() ? std::move(fr.value()) : nullptr;
  }
};

// Every file in configs/scenarios/field/ cites its report and checks as docs/field.md says:
// clean, or (the two misconfiguration reproductions) exactly the rule naming the incident.
TEST_F(FieldTest, EveryFieldScenarioCitesItsReportAndPassesCheckAsDocumented) {
  const std::map<std::string, std::string> incident = {
      {"arp-flood-small.json", "arp-flood-deadlock"},
      {"pcp-lost-at-routed-hop.json", "pcp-across-routers"},
      {"rdma-tc-ignored-lossy.json", "nic-dscp-lossless"},
      {"dscp-to-tc-map-wrong.json", "nic-dscp-lossless"},
      {"headroom-zero-incast.json", "headroom"}};
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(FieldPath(""))) {
    if (e.path().extension() != ".json") continue;
    ++files;
    const Scenario s = Load(e.path().filename().string());
    const std::string& d = s.description;
    EXPECT_TRUE(d.find("issue #") != std::string::npos ||
                d.find("pull request #") != std::string::npos ||
                d.find("SIGCOMM 2016, Section") != std::string::npos)
        << e.path() << ": the description cites no report";
    const auto rules = CheckRules(s);
    const auto it = incident.find(e.path().filename().string());
    if (it == incident.end()) {
      EXPECT_TRUE(rules.empty()) << e.path() << ": " << (rules.empty() ? "" : rules[0]);
    } else {
      EXPECT_EQ(rules, std::vector<std::string>{it->second}) << e.path();
    }
  }
  EXPECT_GE(files, 18);
}

// bobzhuyb/ns3-rdma #7: CE-marked READ responses get no ACK, so a notification point in the ACK
// path never sends a CNP. The requester must CNP the responders (issue 22 defect 1).
TEST_F(FieldTest, ReadIncastCeMarkedResponsesGetCnpsAndFewerPauses) {
  struct Out {
    uint64_t cnps_sent = 0, cnps_received = 0, xoff = 0, drops = 0;
    double gbps = 0;
  };
  auto run = [&](bool dcqcn) {
    Scenario s = Load("read-incast-dcqcn-cnp.json");
    s.nic.dcqcn = dcqcn;
    auto f = Build(s);
    Out o;
    if (!f) return o;
    f->RunUntil(s.duration);
    o.cnps_sent = f->host("h3")->rnic().cnps_sent();
    for (const char* h : {"h0", "h1", "h2"}) o.cnps_received += f->host(h)->rnic().cnps_received();
    o.xoff = XoffSent(*f->sw("tor0"));
    o.drops = f->sw("tor0")->total_drops();
    for (int i = 0; i < 3; ++i) o.gbps += f->rdma()->perftest(i).GbpsBetween(5 * kMs, 10 * kMs);
    return o;
  };
  const Out on = run(true), off = run(false);
  std::printf(
      "3-to-1 READ incast: DCQCN on: %llu CNPs sent by h3, %llu received by responders, %llu XOFF, "
      "%.2f Gb/s; off: %llu CNPs, %llu XOFF, %.2f Gb/s\n",
      static_cast<unsigned long long>(on.cnps_sent),
      static_cast<unsigned long long>(on.cnps_received), static_cast<unsigned long long>(on.xoff),
      on.gbps, static_cast<unsigned long long>(off.cnps_sent),
      static_cast<unsigned long long>(off.xoff), off.gbps);
  EXPECT_GT(on.cnps_sent, 50u) << "CE-marked READ responses must produce CNPs";
  EXPECT_EQ(on.cnps_received, on.cnps_sent) << "every CNP reaches a responder";
  EXPECT_EQ(off.cnps_sent, 0u);
  EXPECT_GT(off.xoff, 0u) << "without DCQCN the incast is held by PFC";
  EXPECT_LT(on.xoff, off.xoff) << "DCQCN slows the responders before PFC has to";
  EXPECT_GT(on.gbps, 6.5) << "the requester's link stays busy";
  EXPECT_EQ(on.drops, 0u);
  EXPECT_EQ(off.drops, 0u);
}

// sonic-net/sonic-buildimage #5898: after a PFC storm is restored, lossless traffic must be
// lossless again. A PG still over its threshold at the restore must be paused again at once
// (issue 22 defect 2: XOFF was never re-sent and 21,094 frames were dropped from the headroom).
TEST_F(FieldTest, PfcWatchdogRestoreReassertsXoffAndDropsNothingFromTheHeadroom) {
  const Scenario s = Load("pfcwd-restore-reasserts-xoff.json");
  auto f = Build(s);
  ASSERT_TRUE(f);
  SwitchNode& tor = *f->sw("tor0");
  f->RunUntil(40 * kMs);
  ASSERT_EQ(tor.watchdog_storms(), 1u) << "h0's XOFF storm (14-44 ms) detected";
  EXPECT_LE(tor.first_storm_at() - 14 * kMs,
            s.sw.watchdog.detection_time + s.sw.watchdog.poll_interval);
  EXPECT_GE(tor.pfc_tx_xon(0, 3), 1u) << "XON towards h0 at detection";
  const uint64_t xoff_in_storm = tor.pfc_tx_xoff(0, 3);
  f->RunUntil(70 * kMs);
  ASSERT_EQ(tor.watchdog_restores(), 1u) << "restored 20 ms after the storm's last XOFF";
  ASSERT_TRUE(tor.xoff_mask(0) & (1 << 3)) << "the PG is still over its threshold";
  const uint64_t xoff_at_70 = tor.pfc_tx_xoff(0, 3);
  f->RunUntil(s.duration);
  const auto sum = f->Summary();
  const auto& drops = sum["switches"]["tor0"]["drops"];
  std::printf("XOFF towards h0: %llu in the storm, %llu by 70 ms, %llu by 100 ms; tor0 drops %s\n",
              static_cast<unsigned long long>(xoff_in_storm),
              static_cast<unsigned long long>(xoff_at_70),
              static_cast<unsigned long long>(tor.pfc_tx_xoff(0, 3)), drops.dump().c_str());
  EXPECT_GT(xoff_at_70, xoff_in_storm) << "XOFF re-asserted at the restore";
  EXPECT_GE(tor.pfc_tx_xoff(0, 3) - xoff_at_70, 10u) << "and refreshed while over the threshold";
  EXPECT_EQ(drops.value("lossless_headroom_exhausted", 0), 0);
  EXPECT_GT(drops.value("pfc_watchdog", 0), 0) << "the drop action acted during the storm";
}

// Guo et al. §4.2 on the smallest Clos that shows it: the incident configuration deadlocks,
// drop_lossless_on_incomplete_arp prevents it.
TEST_F(FieldTest, ArpFloodDeadlocksTheSmallClosAndDropOnIncompleteArpPreventsIt) {
  for (bool cure : {false, true}) {
    Scenario s = Load("arp-flood-small.json");
    s.sw.drop_incomplete_arp = cure;
    EXPECT_EQ(CheckRules(s),
              cure ? std::vector<std::string>{} : std::vector<std::string>{"arp-flood-deadlock"});
    auto f = Build(s);
    ASSERT_TRUE(f);
    auto victims = [&] {  // packets h1 and h2 received from each other
      uint64_t n = 0;
      for (const char* h : {"h1", "h2"}) {
        for (const auto& [id, rx] : f->host(h)->rx_flows()) n += rx.packets;
      }
      return n;
    };
    f->RunUntil(13 * kMs);  // the sources stop at 12.1 ms
    const uint64_t received = victims();
    f->RunUntil(s.duration);
    const auto sum = f->Summary();
    uint64_t sent = 0;
    for (const auto& fl : sum["flows"]) {
      if (fl["from"] != "h0") sent += fl["sent"].get<uint64_t>();  // h0 sends to the dead host
    }
    SwitchNode& tor1 = *f->sw("tor1");
    std::printf(
        "%s: deadlocks %zu (formed at %.3f ms), victims %llu of %llu delivered, tor1 "
        "floods %llu, incomplete_arp drops %llu\n",
        cure ? "cure" : "incident", f->deadlocks(), f->deadlock_formed_at() / 1e9,
        static_cast<unsigned long long>(received), static_cast<unsigned long long>(sent),
        static_cast<unsigned long long>(tor1.unknown_unicast_floods()),
        static_cast<unsigned long long>(tor1.drops(DropReason::kIncompleteArp)));
    if (!cure) {
      ASSERT_GE(f->deadlocks(), 1u) << "the detector must name the cycle";
      EXPECT_GT(f->deadlock_formed_at(), 3 * kMs) << "after h3 died and its MAC entry aged out";
      EXPECT_EQ(victims(), received) << "nothing moves after the sources stop: the cycle holds";
      EXPECT_LT(received, sent) << "victim packets are stuck in the cycle";
      EXPECT_GT(tor1.unknown_unicast_floods(), 0u);
      EXPECT_EQ(tor1.drops(DropReason::kLosslessHeadroom), 0u) << "paused, never dropped";
    } else {
      EXPECT_EQ(f->deadlocks(), 0u);
      EXPECT_EQ(victims(), sent) << "every victim packet delivered";
      EXPECT_GT(tor1.drops(DropReason::kIncompleteArp), 0u);
      EXPECT_EQ(tor1.unknown_unicast_floods(), 0u);
    }
  }
}

// Guo et al. §4.3: a stalled NIC's endless XOFF pauses a victim that shares only the spine
// link with the faulty server; the NIC watchdog stops it 20 ms into the stall, after which the
// fabric is as well off as with the server simply dead (whose senders still waste the shared
// link on writes that are never acknowledged, so the victim gets part of it, not all).
TEST_F(FieldTest, NicPauseStormStopsAVictimUntilTheNicWatchdogFires) {
  enum class Variant { kWatchdog, kNoWatchdog, kDeadHost };
  struct Out {
    double before = 0, during = 0, after = 0;
    Time fired = -1, spine_paused = -1, tor0_paused = -1;
    std::vector<std::string> rules;
  };
  auto run = [&](Variant v) {
    Scenario s = Load("nic-storm-nic-watchdog.json");
    if (v == Variant::kNoWatchdog) s.nic.watchdog_enabled = false;
    if (v == Variant::kDeadHost) s.faults[0].kind = Fault::Kind::kDeadHost;
    Out o;
    o.rules = CheckRules(s);
    auto f = Build(s);
    if (!f) return o;
    f->RunUntil(s.duration);
    const Perftest& victim = f->rdma()->perftest(0);  // h1 -> h2
    o.before = victim.GbpsBetween(1 * kMs, 5 * kMs);
    o.during = victim.GbpsBetween(15 * kMs, 25 * kMs);
    // From 5 ms after the watchdog fires to the end. The storm's senders resend into the
    // stalled (or dead) h3 in bursts every timeout, so 10 ms windows swing between 2.5 and
    // 9 Gb/s: average over 120 ms.
    o.after = victim.GbpsBetween(30 * kMs, 150 * kMs);
    o.fired = f->host("h3")->rnic().watchdog_fired_at();
    o.spine_paused = f->sw("spine0")->first_paused_at();
    o.tor0_paused = f->sw("tor0")->first_paused_at();
    return o;
  };
  const Out on = run(Variant::kWatchdog), off = run(Variant::kNoWatchdog),
            dead = run(Variant::kDeadHost);
  std::printf(
      "NIC storm, victim Gb/s before/during/after: NIC watchdog %.2f/%.2f/%.2f (fired at %.3f ms); "
      "none %.2f/%.2f/%.2f (spine0 paused at %.3f ms, tor0 at %.3f ms); h3 dead instead "
      "%.2f/%.2f/%.2f\n",
      on.before, on.during, on.after, on.fired / 1e9, off.before, off.during, off.after,
      off.spine_paused / 1e9, off.tor0_paused / 1e9, dead.before, dead.during, dead.after);
  EXPECT_TRUE(on.rules.empty()) << on.rules[0];
  EXPECT_EQ(off.rules, std::vector<std::string>{"pause-storm-watchdog"});
  EXPECT_GT(off.before, 3.0);
  EXPECT_GT(off.spine_paused, 5 * kMs) << "the pause reaches the spine";
  EXPECT_GT(off.tor0_paused, off.spine_paused) << "and then the other ToR";
  EXPECT_LT(off.during, 0.05 * off.before);
  EXPECT_LT(off.after, 0.05 * off.before) << "without a watchdog the victim stays down";
  EXPECT_EQ(off.fired, -1);
  // The NIC evaluates its watchdog when it refreshes XOFF (every half pause time, 1.7 ms).
  EXPECT_GE(on.fired, 25 * kMs);
  EXPECT_LE(on.fired, 25 * kMs + 2 * kMs);
  EXPECT_LT(on.during, 0.05 * on.before) << "the storm stops the victim until the watchdog fires";
  EXPECT_GT(on.after, 0.5 * on.before) << "then it runs again";
  // What the storm left queued towards h3 drains first, so a little less than with the
  // server dead from the start.
  EXPECT_GE(on.after, 0.75 * dead.after) << "about as well as with the server dead";
  EXPECT_GT(dead.during, 0.5 * dead.before) << "a dead server never pauses the victim";
}

// Guo et al. §4.1: 1 MB WRITEs (1024 packets) over a link that drops one frame in 256 never
// complete with go-back-0; go-back-N delivers them.
TEST_F(FieldTest, GoBack0NeverCompletesAMegabyteWriteGoBackNDelivers) {
  std::map<LossRecovery, std::pair<uint64_t, double>> out;  // messages completed, Gb/s
  for (LossRecovery r : {LossRecovery::kGoBack0, LossRecovery::kGoBackN}) {
    Scenario s = Load("go-back-0-livelock-1mb.json");
    s.nic.recovery = r;
    auto f = Build(s);
    ASSERT_TRUE(f);
    f->RunUntil(s.duration);
    const auto res = f->rdma()->PerftestResults()[0];
    out[r] = {res["bytes"].get<uint64_t>() / s.traffic[0].perftest().size,
              f->rdma()->perftest(0).GbpsBetween(0, s.duration)};
    EXPECT_GT(f->runner().lost_frames(), 50u);
  }
  const auto [gb0_msgs, gb0_gbps] = out[LossRecovery::kGoBack0];
  const auto [gbn_msgs, gbn_gbps] = out[LossRecovery::kGoBackN];
  std::printf(
      "1 MB WRITEs, 1/256 loss, 50 ms: go-back-0 %llu messages (%.3f Gb/s), go-back-N %llu "
      "(%.3f Gb/s)\n",
      static_cast<unsigned long long>(gb0_msgs), gb0_gbps,
      static_cast<unsigned long long>(gbn_msgs), gbn_gbps);
  EXPECT_EQ(gb0_msgs, 0u) << "livelock: no message ever completes";
  EXPECT_EQ(gb0_gbps, 0.0);
  EXPECT_GT(gbn_msgs, 40u);
  EXPECT_GT(gbn_gbps, 5.0);
}

// Guo et al. §3: with PCP-based PFC the flow that crossed a routed hop arrives untagged and is
// dropped as lossy at the receiver's ToR; the flow from the same ToR is paused, not dropped.
TEST_F(FieldTest, PcpPfcDropsOnlyTheRoutedFlowDscpPfcDropsNothing) {
  for (QosTrust trust : {QosTrust::kPcp, QosTrust::kDscp}) {
    Scenario s = Load("pcp-lost-at-routed-hop.json");
    s.sw.qos.trust = trust;
    const bool pcp = trust == QosTrust::kPcp;
    EXPECT_EQ(CheckRules(s),
              pcp ? std::vector<std::string>{"pcp-across-routers"} : std::vector<std::string>{});
    auto f = Build(s);
    ASSERT_TRUE(f);
    f->Run();
    const auto sum = f->Summary();
    std::map<std::string, int64_t> lost;
    for (const auto& fl : sum["flows"]) lost[fl["from"].get<std::string>()] = fl["lost"];
    SwitchNode& tor1 = *f->sw("tor1");
    std::printf("%s: lost h0 (routed) %lld, h3 (local) %lld; tor1 drops %llu, XOFF to h3 %llu\n",
                pcp ? "pcp" : "dscp", static_cast<long long>(lost["h0"]),
                static_cast<long long>(lost["h3"]),
                static_cast<unsigned long long>(tor1.total_drops()),
                static_cast<unsigned long long>(XoffSent(tor1)));
    EXPECT_EQ(f->sw("tor0")->total_drops(), 0u);
    EXPECT_EQ(f->sw("spine0")->total_drops(), 0u);
    EXPECT_EQ(lost["h3"], 0) << "the local flow keeps its tag: paused, never dropped";
    if (pcp) {
      EXPECT_GT(lost["h0"], 100) << "the routed flow lost its priority and is dropped as lossy";
      EXPECT_EQ(tor1.drops(DropReason::kLosslessHeadroom), 0u);
      EXPECT_EQ(static_cast<uint64_t>(lost["h0"]), tor1.total_drops());
    } else {
      EXPECT_EQ(lost["h0"], 0);
      EXPECT_EQ(tor1.total_drops(), 0u);
      EXPECT_GT(XoffSent(tor1), 0u) << "both flows held by PFC instead";
    }
  }
}

// A 20 ms responder stall: the closed-loop latency test warns and counts what it did not
// measure (issue 22 defect 4); the bandwidth test's intervals show the collapse (defect 5).
TEST_F(FieldTest, ResponderStallShowsAsAWarningAndAsZeroBandwidthIntervals) {
  for (bool stalled : {true, false}) {
    Scenario s = Load("responder-stall-perftest.json");
    if (!stalled) s.faults.clear();
    auto f = Build(s);
    ASSERT_TRUE(f);
    f->RunUntil(s.duration);
    const auto r = f->rdma()->PerftestResults();
    const auto text = f->rdma()->Text();
    const auto& lat = r[0];
    const auto& co = lat["coordinated_omission"];
    const auto& bw = r[1];
    ASSERT_TRUE(lat["completed"].get<bool>()) << lat.dump();
    ASSERT_EQ(bw["intervals"].size(), 10u) << "a line every 5 ms over the 50 ms";
    if (!stalled) {
      EXPECT_FALSE(co["warning"].get<bool>()) << lat.dump();
      EXPECT_EQ(co["suppressed_operations"].get<uint64_t>(), 0u);
      for (const auto& iv : bw["intervals"]) EXPECT_GT(iv["gbps"].get<double>(), 3.0) << iv;
      continue;
    }
    std::printf("%s\n%s\n", text[0].c_str(), text[1].c_str());
    // send_lat reports half the round trip: the 20 ms stall is one sample of ~10 ms.
    EXPECT_GT(lat["t_max_us"].get<double>(), 9e3) << "the stall is one sample";
    EXPECT_LT(lat["t_p99_us"].get<double>(), 1e3) << "the closed-loop p99 hides it";
    EXPECT_TRUE(co["warning"].get<bool>()) << lat.dump();
    EXPECT_GE(co["stalls"].get<uint64_t>(), 1u);
    EXPECT_GT(co["suppressed_operations"].get<uint64_t>(), 100u);
    EXPECT_GT(co["corrected_p99_us"].get<double>(), 1e3) << "the open-loop estimate shows it";
    EXPECT_NE(text[0].find("WARNING"), std::string::npos) << text[0];
    // Intervals 5-10, 10-15 and 15-20 ms lie wholly inside the 5-25 ms stall.
    for (size_t k = 1; k <= 3; ++k) {
      EXPECT_LT(bw["intervals"][k]["gbps"].get<double>(), 0.1) << bw["intervals"][k];
    }
    EXPECT_GT(bw["intervals"][0]["gbps"].get<double>(), 3.0) << "before the stall";
    EXPECT_GT(bw["intervals"][9]["gbps"].get<double>(), 3.0) << "after it";
  }
}

// Guo et al. §4.4 / sgl-project/sglang #32777: one sender, one receiver whose MTT cache misses:
// the receiver pauses its ToR and the pause reaches the spine; 2 MB pages: no pause.
TEST_F(FieldTest, SlowReceiverPausesTwoHopsBackAndHugePagesCureIt) {
  struct Out {
    uint64_t nic_xoff = 0, tor1_xoff = 0, drops = 0, rx_drops = 0;
    double gbps = 0;
  };
  auto run = [&](int64_t page) {
    Scenario s = Load("slow-receiver-two-hops.json");
    s.nic.page_size = page;
    auto f = Build(s);
    Out o;
    if (!f) return o;
    f->RunUntil(500 * kUs);
    SwitchNode& tor1 = *f->sw("tor1");
    const uint64_t warm = f->host("h1")->rnic().pfc_xoff_sent();
    const uint64_t warm_tor1 = XoffSent(tor1);
    const uint64_t warm_bytes = tor1.tx_bytes(0);  // tor1/p0 faces h1
    f->RunUntil(s.duration);
    o.nic_xoff = f->host("h1")->rnic().pfc_xoff_sent() - warm;
    o.tor1_xoff = XoffSent(tor1) - warm_tor1;
    for (size_t i = 0; i < f->num_switches(); ++i) o.drops += f->sw(i).total_drops();
    o.rx_drops = f->host("h1")->rnic().rx_buffer_drops();
    o.gbps = (tor1.tx_bytes(0) - warm_bytes) * 8.0 / ((s.duration - 500 * kUs) / 1e12) / 1e9;
    return o;
  };
  const Out small = run(4096), huge = run(int64_t{2} << 20);
  std::printf(
      "slow receiver 0.5-2 ms: 4 KB pages: NIC XOFF %llu, tor1 XOFF %llu, %.1f Gb/s; "
      "2 MB pages: NIC XOFF %llu, tor1 XOFF %llu, %.1f Gb/s\n",
      static_cast<unsigned long long>(small.nic_xoff),
      static_cast<unsigned long long>(small.tor1_xoff), small.gbps,
      static_cast<unsigned long long>(huge.nic_xoff),
      static_cast<unsigned long long>(huge.tor1_xoff), huge.gbps);
  EXPECT_GT(small.nic_xoff, 0u) << "4 KB pages: the receiver NIC pauses";
  EXPECT_GT(small.tor1_xoff, 0u) << "and its ToR pauses the spine";
  EXPECT_EQ(huge.nic_xoff, 0u) << "2 MB pages: no pause";
  EXPECT_EQ(huge.tor1_xoff, 0u);
  EXPECT_LT(small.gbps, 0.5 * huge.gbps) << "the MTT misses cost most of the link";
  EXPECT_EQ(small.drops + huge.drops, 0u);
  EXPECT_EQ(small.rx_drops + huge.rx_drops, 0u);
}

// NVIDIA/nvshmem #27: one fixed UDP source port for every QP puts all of them on one ECMP
// member; QPN-hashed ports spread them (udp_sport, issue 22).
TEST_F(FieldTest, FixedUdpSourcePortPutsEveryQpOnOneSpine) {
  auto run = [&](bool fixed, uint64_t* spine_rx, double* gbps) {
    Scenario s = Load("fixed-udp-sport-ecmp.json");
    if (!fixed) s.traffic[0].perftest().qp.udp_sport = 0;
    auto f = Build(s);
    ASSERT_NE(f, nullptr);
    f->Run();
    for (int k = 0; k < 2; ++k) {
      SwitchNode& sp = *f->sw("spine" + std::to_string(k));
      spine_rx[k] = 0;
      for (uint16_t p = 0; p < sp.num_ports(); ++p) spine_rx[k] += sp.rx_packets(p);
    }
    *gbps = f->rdma()->PerftestResults()[0]["bw_avg_gbps"].get<double>();
  };
  uint64_t fixed_rx[2], hashed_rx[2];
  double fixed_bw = 0, hashed_bw = 0;
  run(true, fixed_rx, &fixed_bw);
  run(false, hashed_rx, &hashed_bw);
  std::printf("fixed sport: spines %llu/%llu frames, %.2f Gb/s; hashed: %llu/%llu, %.2f Gb/s\n",
              static_cast<unsigned long long>(fixed_rx[0]),
              static_cast<unsigned long long>(fixed_rx[1]), fixed_bw,
              static_cast<unsigned long long>(hashed_rx[0]),
              static_cast<unsigned long long>(hashed_rx[1]), hashed_bw);
  EXPECT_EQ(std::min(fixed_rx[0], fixed_rx[1]), 0u) << "one source port: one spine";
  EXPECT_LE(fixed_bw, 10.0) << "at most one 10 Gb/s uplink";
  EXPECT_GT(std::min(hashed_rx[0], hashed_rx[1]), 1000u) << "hashed ports: both spines";
  EXPECT_GT(hashed_bw, fixed_bw * 1.3);
}

// ROCm/mori #362: a QP whose traffic class is ignored lands in DSCP 0, a lossy class: under
// incast only that application is dropped (per-QP dscp, drops per traffic class, issue 22).
TEST_F(FieldTest, AnApplicationWhoseTrafficClassIsIgnoredIsDroppedInTheLossyClass) {
  auto run = [&](bool broken) {
    Scenario s = Load("rdma-tc-ignored-lossy.json");
    if (!broken) s.traffic[2].perftest().qp.dscp = -1;  // the NIC's DSCP 26 like the others
    auto f = Build(s);
    EXPECT_NE(f, nullptr);
    if (f == nullptr) return nlohmann::json();
    f->Run();
    return f->Summary();
  };
  const auto broken = run(true);
  const auto& by_tc = broken["switches"]["tor0"]["drops_by_tc"];
  EXPECT_GT(by_tc["0"].value("ingress_lossy_limit", 0), 100) << by_tc.dump();
  EXPECT_FALSE(by_tc.contains("3")) << "the lossless applications lose nothing: " << by_tc.dump();
  EXPECT_GT(broken["hosts"]["h3"]["rnic"]["retransmitted"].get<uint64_t>(), 0u);
  EXPECT_EQ(broken["hosts"]["h1"]["rnic"]["retransmitted"], 0);
  EXPECT_EQ(broken["hosts"]["h2"]["rnic"]["retransmitted"], 0);
  const double lossy = broken["rdma"][2]["bw_avg_gbps"].get<double>();
  const double lossless = broken["rdma"][0]["bw_avg_gbps"].get<double>();
  EXPECT_LT(lossy, lossless / 2) << "the dropped application falls behind";
  const auto fixed = run(false);
  EXPECT_EQ(fixed["switches"]["tor0"]["drops_total"], 0)
      << fixed["switches"]["tor0"]["drops"].dump();
  std::printf("TC ignored: %.2f Gb/s (dscp 0) vs %.2f Gb/s, %llu drops in TC 0; fixed: 0 drops\n",
              lossy, lossless,
              static_cast<unsigned long long>(by_tc["0"].value("ingress_lossy_limit", 0)));
}

// The watchdog events of tor0's port `port`, as (t_us, storm?) pairs.
std::vector<std::pair<double, bool>> WatchdogEvents(const nlohmann::json& summary, int port) {
  std::vector<std::pair<double, bool>> ev;
  const auto& p = summary["switches"]["tor0"]["ports"][port];
  if (!p.contains("pfc_watchdog")) return ev;
  for (const auto& e : p["pfc_watchdog"]["events"]) {
    ev.emplace_back(e["t_us"].get<double>(), e["event"] == "storm");
  }
  return ev;
}

// linux-rdma/perftest #251: a requester whose responder died fails after retry_cnt + 1 local
// ACK timeouts of 4.096 us x 2^timeout_exp each, counted from its last ACK (per-QP timeout_exp
// and retry_cnt, failed_wrs with time and status).
TEST_F(FieldTest, ARequesterFailsRetryCountPlusOneTimeoutsAfterItsResponderDied) {
  const Scenario s = Load("retry-exceeded-dead-responder.json");
  auto f = Build(s);
  ASSERT_TRUE(f);
  f->RunUntil(s.duration);
  const auto sum = f->Summary();
  const Time died = s.faults[0].at;
  for (int i : {0, 1}) {  // h0 (timeout_exp 10, 7 retries), h2 (timeout_exp 8, 1 retry)
    const QpOptions& qp = s.traffic[i].perftest().qp;
    const auto& r = sum["rdma"][i];
    ASSERT_TRUE(r.contains("failed_wrs")) << r.dump();
    const auto& wrs = r["failed_wrs"];
    ASSERT_EQ(wrs.size(), static_cast<size_t>(s.traffic[i].perftest().tx_depth))
        << "the whole queue";
    EXPECT_EQ(wrs[0]["status"], "IBV_WC_RETRY_EXC_ERR");
    for (size_t k = 1; k < wrs.size(); ++k) EXPECT_EQ(wrs[k]["status"], "IBV_WC_WR_FLUSH_ERR");
    const double tries_us = (qp.retry_cnt + 1) * RnicConfig::Timeout(qp.timeout_exp) / 1e6;
    const double t = wrs[0]["t_us"].get<double>();
    std::printf("%s: timeout %.2f ms x %d tries: failed at %.3f ms (%.3f ms after h1 died)\n",
                s.traffic[i].from.c_str(), RnicConfig::Timeout(qp.timeout_exp) / 1e9,
                qp.retry_cnt + 1, t / 1e3, (t - died / 1e6) / 1e3);
    // The last ACK came just before h1 died (one frame time at most before).
    EXPECT_GE(t, died / 1e6 - 10 + tries_us) << wrs[0].dump();
    EXPECT_LE(t, died / 1e6 + tries_us) << wrs[0].dump();
    EXPECT_EQ(sum["hosts"][s.traffic[i].from]["rnic"]["timeouts"], qp.retry_cnt + 1);
  }
  // The NIC's defaults (67.1 ms, 7 retries) would fail only after 8 x 67.1 ms = 537 ms.
  const auto& d = sum["rdma"][2];
  EXPECT_FALSE(d.contains("failed_wrs")) << d.dump();
  EXPECT_EQ(d["errors"], 0);
  EXPECT_EQ(sum["hosts"]["h3"]["rnic"]["timeouts"], 0);
}

// alibaba-edu/High-Precision-Congestion-Control #28: a lost LAST packet of a message has no
// later packet to reveal it, so no NAK: only the local ACK timeout recovers it (link_loss by
// frame number and type, per-QP timeout_exp).
TEST_F(FieldTest, ALostLastPacketWaitsForTheTimeoutALostMiddlePacketIsNaked) {
  struct Out {
    double t_max_us = 0, t_typical_us = 0;
    uint64_t timeouts = 0, naks = 0;
  };
  auto run = [&](uint64_t lost_frame, int timeout_exp) {
    Scenario s = Load("lost-last-packet-timeout.json");
    s.faults[0].frames = {lost_frame};
    s.traffic[0].perftest().qp.timeout_exp = timeout_exp;
    auto f = Build(s);
    Out o;
    if (!f) return o;
    f->RunUntil(s.duration);
    const auto r = f->rdma()->PerftestResults()[0];
    EXPECT_TRUE(r["completed"].get<bool>()) << r.dump();
    EXPECT_EQ(f->runner().lost_frames(), 1u);
    o.t_max_us = r["t_max_us"].get<double>();
    o.t_typical_us = r["t_typical_us"].get<double>();
    o.timeouts = f->host("h0")->rnic().timeouts();
    o.naks = f->Summary()["hosts"]["h1"]["rnic"]["naks_sent"].get<uint64_t>();
    return o;
  };
  const Out last = run(3, -1), middle = run(1, -1), short_timeout = run(3, 8);  // 0-based
  std::printf(
      "write_lat 4 KB: last packet lost: t_max %.1f us (%llu timeout, %llu NAK); middle packet "
      "lost: %.2f us (%llu NAK); last lost, timeout_exp 8: %.1f us; typical %.2f us\n",
      last.t_max_us, static_cast<unsigned long long>(last.timeouts),
      static_cast<unsigned long long>(last.naks), middle.t_max_us,
      static_cast<unsigned long long>(middle.naks), short_timeout.t_max_us, last.t_typical_us);
  // write_lat reports half the round trip; the stalled one lasts one timeout.
  const double half_default_us = RnicConfig::Timeout(14) / 2e6;
  EXPECT_EQ(last.timeouts, 1u);
  EXPECT_EQ(last.naks, 0u) << "nothing after the last packet reveals the gap";
  EXPECT_GE(last.t_max_us, half_default_us);
  EXPECT_LE(last.t_max_us, half_default_us + 20);
  EXPECT_EQ(middle.timeouts, 0u);
  EXPECT_EQ(middle.naks, 1u) << "the 3rd packet reveals the lost 2nd";
  EXPECT_LT(middle.t_max_us, 3 * middle.t_typical_us);
  EXPECT_GE(short_timeout.t_max_us, RnicConfig::Timeout(8) / 2e6);
  EXPECT_LE(short_timeout.t_max_us, RnicConfig::Timeout(8) / 2e6 + 20);
  EXPECT_EQ(last.t_typical_us, middle.t_typical_us) << "one stalled sample, the rest unchanged";
}

// sonic-net/sonic-buildimage #27310: the ASIC resolved DSCP 4 to TC 0 although the map says
// TC 4; the application on DSCP 4 is dropped as lossy under incast (qos.dscp_to_tc).
TEST_F(FieldTest, ADscpResolvedToALossyClassIsDroppedTheConfiguredMapIsLossless) {
  auto run = [&](uint8_t tc_of_dscp4, uint64_t* q0, uint64_t* q4) {
    Scenario s = Load("dscp-to-tc-map-wrong.json");
    s.sw.qos.dscp_to_tc[4] = tc_of_dscp4;
    // check flags the wrong map (h3's QPs land in the lossy TC 0) and passes the right one.
    EXPECT_EQ(CheckRules(s), tc_of_dscp4 == 0 ? std::vector<std::string>{"nic-dscp-lossless"}
                                              : std::vector<std::string>{});
    auto f = Build(s);
    if (f == nullptr) return nlohmann::json();
    f->RunUntil(s.duration);
    *q0 = f->sw("tor0")->tx_queue_packets(0, 0);  // tor0/p0 faces h0, the incast's receiver
    *q4 = f->sw("tor0")->tx_queue_packets(0, 4);
    return f->Summary();
  };
  uint64_t bq0 = 0, bq4 = 0, fq0 = 0, fq4 = 0;
  const auto broken = run(0, &bq0, &bq4);
  const auto fixed = run(4, &fq0, &fq4);
  ASSERT_FALSE(broken.is_null());
  ASSERT_FALSE(fixed.is_null());
  const auto& by_tc = broken["switches"]["tor0"]["drops_by_tc"];
  std::printf(
      "DSCP 4 -> TC 0: h3 %.2f Gb/s, %llu retransmitted, drops by TC %s, tor0->h0 queue 0/4 "
      "%llu/%llu frames; DSCP 4 -> TC 4: drops %s, queue 0/4 %llu/%llu, h3 %.2f Gb/s\n",
      broken["rdma"][2]["bw_avg_gbps"].get<double>(),
      static_cast<unsigned long long>(
          broken["hosts"]["h3"]["rnic"]["retransmitted"].get<uint64_t>()),
      by_tc.dump().c_str(), static_cast<unsigned long long>(bq0),
      static_cast<unsigned long long>(bq4), fixed["switches"]["tor0"]["drops"].dump().c_str(),
      static_cast<unsigned long long>(fq0), static_cast<unsigned long long>(fq4),
      fixed["rdma"][2]["bw_avg_gbps"].get<double>());
  EXPECT_GT(by_tc["0"].value("ingress_lossy_limit", 0), 1000) << by_tc.dump();
  EXPECT_EQ(by_tc.size(), 1u) << "only TC 0 drops: " << by_tc.dump();
  EXPECT_GT(bq0, 1000u) << "h3's WRITEs leave in queue 0";
  EXPECT_EQ(bq4, 0u);
  EXPECT_GT(broken["hosts"]["h3"]["rnic"]["retransmitted"].get<uint64_t>(), 0u);
  EXPECT_EQ(broken["hosts"]["h1"]["rnic"]["retransmitted"], 0);
  EXPECT_EQ(broken["hosts"]["h2"]["rnic"]["retransmitted"], 0);
  EXPECT_LT(broken["rdma"][2]["bw_avg_gbps"].get<double>(),
            broken["rdma"][0]["bw_avg_gbps"].get<double>() / 2);
  EXPECT_EQ(fixed["switches"]["tor0"]["drops_total"], 0);
  EXPECT_GT(fq4, 1000u) << "with the configured map h3's WRITEs use the lossless queue 4";
  EXPECT_EQ(fixed["hosts"]["h3"]["rnic"]["retransmitted"], 0);
}

// sonic-net/sonic-buildimage #29705: with late polls the watchdog still charges the real time,
// so every storm is detected and restored, each within two late polls of its bound; the port
// list leaves the other stormed port unwatched (poll_jitter, ports list, events).
TEST_F(FieldTest, LatePollsDelayTheWatchdogByAtMostTwoPollsAndMissNoStorm) {
  auto run = [&](Time jitter) {
    Scenario s = Load("pfcwd-late-polls.json");
    s.sw.watchdog.poll_jitter = jitter;
    auto f = Build(s);
    if (f == nullptr) return nlohmann::json();
    f->RunUntil(s.duration);
    return f->Summary();
  };
  const Scenario s = Load("pfcwd-late-polls.json");
  const PfcWatchdogConfig& wd = s.sw.watchdog;
  ASSERT_EQ(wd.poll_jitter, 2 * kMs);
  for (Time jitter : {wd.poll_jitter, Time{0}}) {
    const auto sum = run(jitter);
    ASSERT_FALSE(sum.is_null());
    EXPECT_FALSE(sum["switches"]["tor0"]["ports"][2].contains("pfc_watchdog"))
        << "tor0/p2 is not in the list: its endless storm is never acted on";
    EXPECT_FALSE(sum["switches"]["tor0"]["ports"][0].contains("pfc_watchdog"));
    const auto ev = WatchdogEvents(sum, 1);
    ASSERT_EQ(ev.size(), 8u) << "four storms, each detected and restored";
    // Per poll: its interval plus its lateness. The first poll of a storm sees it start (no
    // charge) and the last one overshoots the detection (restoration) time.
    const double slack_us = 2.0 * (wd.poll_interval + jitter) / 1e6;
    std::string line;
    for (int k = 0; k < 4; ++k) {
      const double start_us = s.faults[k].at / 1e6;
      const double last_xoff_us = (s.faults[k].at + s.faults[k].duration) / 1e6 - 500;
      const double detect = ev[2 * k].first - start_us,
                   restore = ev[2 * k + 1].first - last_xoff_us;
      EXPECT_TRUE(ev[2 * k].second && !ev[2 * k + 1].second) << k;
      EXPECT_GT(detect, wd.detection_time / 1e6) << k;
      EXPECT_LE(detect, wd.detection_time / 1e6 + slack_us) << k;
      EXPECT_GT(restore, wd.restoration_time / 1e6) << k;
      EXPECT_LE(restore, wd.restoration_time / 1e6 + slack_us) << k;
      if (jitter == 0) {
        EXPECT_LE(detect, (wd.detection_time + wd.poll_interval) / 1e6) << "one poll";
      }
      char buf[64];
      std::snprintf(buf, sizeof buf, " %.2f/%.2f", detect / 1e3, restore / 1e3);
      line += buf;
    }
    std::printf("jitter %s: detection/restore delays (ms):%s\n",
                jitter > 0 ? FormatDuration(jitter).c_str() : "none", line.c_str());
  }
}

// sonic-net/sonic-buildimage #8077: malformed frames must be dropped and counted, not
// forwarded or flooded, and disturb nothing else (frame_injection).
TEST_F(FieldTest, MalformedFramesAreDroppedUnderTheirReasonsAndChangeNothingElse) {
  auto run = [&](bool inject) {
    Scenario s = Load("malformed-frames-dropped.json");
    if (!inject) s.faults.clear();
    auto f = Build(s);
    if (f == nullptr) return nlohmann::json();
    f->RunUntil(s.duration);
    EXPECT_EQ(f->sw("tor0")->unknown_unicast_floods(), 0u);
    return f->Summary();
  };
  const auto hit = run(true), clean = run(false);
  ASSERT_FALSE(hit.is_null());
  ASSERT_FALSE(clean.is_null());
  const auto& d = hit["switches"]["tor0"]["drops"];
  std::printf("tor0 drops %s; RDMA bytes %llu/%llu (clean %llu/%llu)\n", d.dump().c_str(),
              static_cast<unsigned long long>(hit["rdma"][0]["bytes"].get<uint64_t>()),
              static_cast<unsigned long long>(hit["rdma"][1]["bytes"].get<uint64_t>()),
              static_cast<unsigned long long>(clean["rdma"][0]["bytes"].get<uint64_t>()),
              static_cast<unsigned long long>(clean["rdma"][1]["bytes"].get<uint64_t>()));
  EXPECT_EQ(d.value("truncated_l3", 0), 400) << "200 truncated frames and 200 runts";
  EXPECT_EQ(d.value("bad_ip_checksum", 0), 200);
  EXPECT_EQ(d.value("unknown_ethertype", 0), 200) << "the random frames (seed 1)";
  EXPECT_EQ(hit["switches"]["tor0"]["drops_total"], 800) << "every injected frame, nothing else";
  EXPECT_EQ(clean["switches"]["tor0"]["drops_total"], 0);
  for (int i : {0, 1}) {
    EXPECT_EQ(hit["rdma"][i]["bytes"], clean["rdma"][i]["bytes"]) << "the tests are undisturbed";
    EXPECT_EQ(hit["rdma"][i]["errors"], 0);
  }
  for (const char* h : {"h0", "h1", "h2"}) {
    EXPECT_EQ(hit["hosts"][h]["rx_packets"], clean["hosts"][h]["rx_packets"])
        << h << ": nothing forwarded or flooded to the hosts";
  }
}

// sonic-net/sonic-buildimage #23441 and sonic-net/sonic-mgmt #9843 at a NIC: a PFC frame for
// every priority pauses only the lossless ones, each for exactly its quanta; the lossy stream
// is never held (pause_injection at a host with priorities, quanta and count).
TEST_F(FieldTest, ANicHonoursPfcOnlyForItsLosslessPrioritiesForExactlyTheQuanta) {
  struct Out {
    uint64_t rdma_bytes = 0, pfc_rx = 0, frames_rx = 0, udp_sent = 0, udp_received = 0;
    Time paused = 0;
    double udp_lat_max = 0;
  };
  enum class Variant { kAllPriorities, kLossyOnly, kNone };
  auto run = [&](Variant v) {
    Scenario s = Load("pause-lossy-priorities-at-nic.json");
    if (v == Variant::kLossyOnly) s.faults[0].priorities = 0xE7;  // 0, 1, 2, 5, 6, 7
    if (v == Variant::kNone) s.faults.clear();
    auto f = Build(s);
    Out o;
    if (f == nullptr) return o;
    f->RunUntil(s.duration);
    const auto sum = f->Summary();
    o.rdma_bytes = sum["rdma"][0]["bytes"].get<uint64_t>();
    const auto& pfc = sum["hosts"]["h0"]["pfc"];
    for (const char* prio : {"3", "4"}) {
      if (pfc.contains(prio)) o.pfc_rx += pfc[prio]["rx_frames"].get<uint64_t>();
    }
    o.frames_rx = sum["hosts"]["h0"]["pfc_rx_frames"].get<uint64_t>();
    o.paused = sum["hosts"]["h0"]["paused_time_ps"].get<Time>();
    const auto& fl = sum["flows"][0];
    o.udp_sent = fl["sent"].get<uint64_t>();
    o.udp_received = fl["received"].get<uint64_t>();
    o.udp_lat_max = fl["latency_max_us"].get<double>();
    return o;
  };
  const Out all = run(Variant::kAllPriorities), lossy = run(Variant::kLossyOnly),
            none = run(Variant::kNone);
  const Scenario s = Load("pause-lossy-priorities-at-nic.json");
  const Time per_frame = PauseQuantaTime(static_cast<uint32_t>(s.faults[0].quanta), 10 * kGbps);
  std::printf(
      "PFC for all 8 priorities x10: h0 honoured %llu (priority, frame) pairs, paused %.4f ms "
      "(3 and 4 together), WRITE %llu bytes vs %llu without; UDP %llu/%llu, max latency %.3f us "
      "vs %.3f; lossy priorities only: WRITE %llu bytes\n",
      static_cast<unsigned long long>(all.pfc_rx), all.paused / 1e9,
      static_cast<unsigned long long>(all.rdma_bytes),
      static_cast<unsigned long long>(none.rdma_bytes),
      static_cast<unsigned long long>(all.udp_received),
      static_cast<unsigned long long>(all.udp_sent), all.udp_lat_max, none.udp_lat_max,
      static_cast<unsigned long long>(lossy.rdma_bytes));
  EXPECT_EQ(all.pfc_rx, 2 * s.faults[0].count) << "priorities 3 and 4 of each frame";
  EXPECT_EQ(all.frames_rx, s.faults[0].count) << "pfc_rx_frames counts frames";
  EXPECT_EQ(all.paused, static_cast<Time>(2 * s.faults[0].count) * per_frame)
      << "each priority paused for exactly its quanta, ten times";
  // About 5 ms of the WRITE's share of the link is lost.
  const double lost_ms =
      (none.rdma_bytes - all.rdma_bytes) * 8.0 / (none.rdma_bytes * 8.0 / (s.duration / 1e9));
  EXPECT_GT(lost_ms, 4.5);
  EXPECT_LT(lost_ms, 5.5);
  EXPECT_EQ(all.udp_received, all.udp_sent) << "the lossy stream is never held";
  EXPECT_EQ(all.udp_sent, none.udp_sent);
  EXPECT_LE(all.udp_lat_max, none.udp_lat_max);
  EXPECT_EQ(lossy.pfc_rx, 0u);
  EXPECT_EQ(lossy.paused, 0);
  EXPECT_EQ(lossy.rdma_bytes, none.rdma_bytes) << "lossy-priority PFC changes nothing";
}

// sonic-net/sonic-swss #4581: an XOFF storm that turns into an XON storm must be restored;
// only XOFF frames keep a storm going (pause_injection with xoff false, watchdog events).
TEST_F(FieldTest, AnXonStormAfterAnXoffStormLetsTheWatchdogRestore) {
  for (bool xon : {true, false}) {
    Scenario s = Load("pfcwd-xon-storm-restores.json");
    s.faults[1].xoff = xon ? false : true;  // the contrast keeps sending XOFF
    auto f = Build(s);
    ASSERT_TRUE(f);
    auto received = [&] {
      uint64_t n = 0;
      for (const auto& [id, rx] : f->host("h1")->rx_flows()) n += rx.packets;
      return n;
    };
    SwitchNode& tor = *f->sw("tor0");
    f->RunUntil(20 * kMs);
    const uint64_t rx20 = received(), drops20 = tor.drops(DropReason::kPfcWatchdog);
    f->RunUntil(s.duration);
    const auto ev = WatchdogEvents(f->Summary(), 1);
    const uint64_t rx_after = received() - rx20;
    const uint64_t drops_after = tor.drops(DropReason::kPfcWatchdog) - drops20;
    std::printf("%s after the XOFF: events", xon ? "XON" : "XOFF");
    for (const auto& [t, storm] : ev)
      std::printf(" %s at %.3f ms", storm ? "storm" : "restore", t / 1e3);
    std::printf("; 20-40 ms: h1 received %llu, watchdog dropped %llu\n",
                static_cast<unsigned long long>(rx_after),
                static_cast<unsigned long long>(drops_after));
    ASSERT_GE(ev.size(), 1u);
    EXPECT_TRUE(ev[0].second);
    EXPECT_LE(ev[0].first,
              (s.faults[0].at + s.sw.watchdog.detection_time + s.sw.watchdog.poll_interval) / 1e6);
    if (xon) {
      ASSERT_EQ(ev.size(), 2u) << "restored while the XON frames go on";
      const double last_xoff_us = (s.faults[0].at + s.faults[0].duration) / 1e6 - 500;
      EXPECT_GT(ev[1].first - last_xoff_us, s.sw.watchdog.restoration_time / 1e6);
      EXPECT_LE(ev[1].first - last_xoff_us,
                (s.sw.watchdog.restoration_time + s.sw.watchdog.poll_interval) / 1e6);
      EXPECT_LT(ev[1].first, 20e3);
      EXPECT_GT(rx_after, 2000u) << "1 Gb/s of 1000-byte frames for 20 ms, delivered";
      EXPECT_EQ(drops_after, 0u);
    } else {
      EXPECT_EQ(ev.size(), 1u) << "an XOFF storm that goes on is never restored";
      EXPECT_EQ(rx_after, 0u);
      EXPECT_GT(drops_after, 2000u);
    }
  }
}

// sonic-net/SONiC #480: two 100G ports send lossless traffic into one; PFC is on and honoured,
// yet the ingress ports drop, because their lossless PGs had no headroom. The scenario's switch
// settings are import-sonic's output for the config_db with xoff 0.
TEST_F(FieldTest, SonicIssue480ZeroHeadroomDropsAnIncastAtIngress) {
  const std::string db_path =
      std::string(ROCEFAB_SOURCE_DIR) + "/configs/sonic/sonic-issue-480-tor0.json";
  std::ifstream fin(FieldPath("headroom-zero-incast.json")), dbin(db_path);
  const nlohmann::json file = ParseJsonStrict(fin), db = ParseJsonStrict(dbin);
  // The shipped scenario is exactly what import-sonic makes of the config_db.
  auto imp = ImportSonic(file, Load("headroom-zero-incast.json").topology,
                         {SonicConfigDb{db_path, db, "tor0"}});
  ASSERT_TRUE(imp.ok()) << imp.message();
  EXPECT_EQ(imp.value().scenario, file) << "re-importing the config_db changes the scenario";
  auto run = [&](bool fixed) {
    Scenario s = Load("headroom-zero-incast.json");
    if (fixed) s.sw.buffer_profiles.at("pg_lossless_100000_5m_profile").auto_xoff = true;
    EXPECT_EQ(CheckRules(s),
              fixed ? std::vector<std::string>{} : std::vector<std::string>{"headroom"});
    auto f = Build(s);
    if (f == nullptr) return std::pair<nlohmann::json, uint64_t>{};
    f->RunUntil(s.duration);
    return std::pair{f->Summary(), XoffSent(*f->sw("tor0"))};
  };
  const auto [broken, broken_xoff] = run(false);
  const auto [fixed, fixed_xoff] = run(true);
  ASSERT_FALSE(broken.is_null());
  ASSERT_FALSE(fixed.is_null());
  const uint64_t drops =
      broken["switches"]["tor0"]["drops"].value("lossless_headroom_exhausted", 0);
  const uint64_t rtx = broken["hosts"]["h1"]["rnic"]["retransmitted"].get<uint64_t>() +
                       broken["hosts"]["h2"]["rnic"]["retransmitted"].get<uint64_t>();
  std::printf(
      "headroom 0: %llu lossless drops at tor0, %llu XOFF, %llu retransmitted, "
      "%.1f+%.1f Gb/s; headroom from the formula: drops %s, %llu XOFF, %.1f+%.1f Gb/s\n",
      static_cast<unsigned long long>(drops), static_cast<unsigned long long>(broken_xoff),
      static_cast<unsigned long long>(rtx), broken["rdma"][0]["bw_avg_gbps"].get<double>(),
      broken["rdma"][1]["bw_avg_gbps"].get<double>(),
      fixed["switches"]["tor0"]["drops"].dump().c_str(),
      static_cast<unsigned long long>(fixed_xoff), fixed["rdma"][0]["bw_avg_gbps"].get<double>(),
      fixed["rdma"][1]["bw_avg_gbps"].get<double>());
  EXPECT_GT(broken_xoff, 0u) << "PFC is on: tor0 sends XOFF";
  EXPECT_GT(drops, 0u) << "frames on the cable after the XOFF have no headroom";
  EXPECT_GT(rtx, 0u) << "the QPs recover the drops by retransmission";
  EXPECT_GT(fixed_xoff, 0u);
  EXPECT_EQ(fixed["switches"]["tor0"].value("drops_total", 0), 0)
      << fixed["switches"]["tor0"]["drops"].dump();
  EXPECT_EQ(fixed["hosts"]["h1"]["rnic"]["retransmitted"].get<uint64_t>(), 0u);
}

}  // namespace
}  // namespace rocefab

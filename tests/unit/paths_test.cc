// Path tracing over a plan, max-min fair rates and the next_podset permutation (fabric/paths.h,
// topo/scenario.h). Pure: no frames, no clock.
#include "fabric/paths.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "common/json_reader.h"
#include "switch/route_table.h"
#include "tests/support/clos_scenario.h"

namespace rocefab {
namespace {

TEST(MaxMinFairRatesTest, ProgressiveFillingFreezesFlowsAtTheirBottleneck) {
  // Links 0 (10) and 1 (4): A crosses both, B only 0, C only 1. Link 1 fills first at 2 each
  // (A, C), then B takes what is left of link 0: 8.
  const auto r = MaxMinFairRates({10, 4}, {{0, 1}, {0}, {1}});
  ASSERT_EQ(r.size(), 3u);
  EXPECT_DOUBLE_EQ(r[0], 2);
  EXPECT_DOUBLE_EQ(r[1], 8);
  EXPECT_DOUBLE_EQ(r[2], 2);
  // Two flows on one link share it; a third alone gets its own link.
  const auto s = MaxMinFairRates({40, 40}, {{0}, {0}, {1}});
  EXPECT_DOUBLE_EQ(s[0], 20);
  EXPECT_DOUBLE_EQ(s[1], 20);
  EXPECT_DOUBLE_EQ(s[2], 40);
  // No links: unconstrained.
  EXPECT_TRUE(std::isinf(MaxMinFairRates({1}, {{}})[0]));
  EXPECT_TRUE(MaxMinFairRates({1}, {}).empty());
}

class PathTracerTest : public ::testing::Test {
 protected:
  static FabricPlan Plan(const Scenario& s) {
    auto p = PlanFabric(s);
    EXPECT_TRUE(p.ok()) << p.message();
    return p.ok() ? p.value() : FabricPlan{};
  }
};

TEST_F(PathTracerTest, EcmpPathsMatchTheHashAndRandomPathsCoverEveryMember) {
  // 3-tier: 2 podsets x 2 ToRs x 2 leaves, 4 spines (2 per plane), 1 host per ToR.
  Scenario s = testing::ClosScenario("paths",
                                     {.tiers = 3,
                                      .spines = 4,
                                      .tors = 2,
                                      .leaves_per_podset = 2,
                                      .podsets = 2,
                                      .hosts_per_tor = 1,
                                      .link_rate = 10 * kGbps},
                                     kMs);
  const FabricPlan plan = Plan(s);
  const PathTracer tracer(plan, s.topology);
  const int h0 = s.topology.HostIndex("h0"), h2 = s.topology.HostIndex("h2");
  const FiveTuple f{s.topology.hosts[h0].ip, s.topology.hosts[h2].ip, 17, 49152, 4791};
  auto p = tracer.Ecmp(h0, h2, f);
  ASSERT_TRUE(p.ok()) << p.message();
  // host - ToR - leaf - spine - leaf - ToR - host: 6 links.
  ASSERT_EQ(p.value().size(), 6u);
  const auto names = PathPortNames(plan, p.value(), h0);
  ASSERT_EQ(names.size(), 6u);
  EXPECT_EQ(names[0], "h0");
  EXPECT_EQ(names[1].rfind("p0-tor0/", 0), 0u) << names[1];
  EXPECT_EQ(names[2].rfind("p0-leaf", 0), 0u) << names[2];
  EXPECT_EQ(names[3].rfind("spine", 0), 0u) << names[3];
  EXPECT_EQ(names[4].rfind("p1-leaf", 0), 0u) << names[4];
  EXPECT_EQ(names[5].rfind("p1-tor0/", 0), 0u) << names[5];
  // The ToR's choice is the data path's: EcmpPick of the hash with the ToR's seed.
  const int tor0 = s.topology.SwitchIndex(names[1].substr(0, names[1].find('/')));
  const SwitchConfig& c = plan.switches[static_cast<size_t>(tor0)];
  const RouteConfig* route = nullptr;
  for (const auto& r : c.routes) {
    if (r.len == 24 && (f.dst & 0xFFFFFF00u) == r.prefix) route = &r;
  }
  ASSERT_NE(route, nullptr);
  const uint32_t pick = EcmpPick(EcmpHash(f.src, f.dst, 17, 49152, 4791, c.ecmp_seed),
                                 static_cast<uint32_t>(route->group.members.size()));
  EXPECT_EQ(names[1], c.ports[route->group.members[pick].port].name);
  // Same flow, same path; random draws reach both leaves and all four spines.
  EXPECT_EQ(tracer.Ecmp(h0, h2, f).value(), p.value());
  Rng rng(7);
  std::set<std::string> leaves, spines;
  for (int i = 0; i < 200; ++i) {
    auto r = tracer.Random(h0, h2, rng);
    ASSERT_TRUE(r.ok());
    const auto n = PathPortNames(plan, r.value(), h0);
    leaves.insert(n[2].substr(0, n[2].find('/')));
    spines.insert(n[3].substr(0, n[3].find('/')));
  }
  EXPECT_EQ(leaves.size(), 2u);
  EXPECT_EQ(spines.size(), 4u);
  // Two hosts on one ToR: host link, ToR egress, host link.
  Scenario t = testing::ClosScenario("paths", {.spines = 2, .tors = 1, .hosts_per_tor = 2}, kMs);
  const FabricPlan tp = Plan(t);
  auto local = PathTracer(tp, t.topology).Random(0, 1, rng);
  ASSERT_TRUE(local.ok()) << local.message();
  EXPECT_EQ(PathPortNames(tp, local.value(), 0), (std::vector<std::string>{"h0", "tor0/p1"}));
}

// ConWeave's source route (RouteGroup::second_hops): a ToR's route to a ToR of another
// podset has 2 leaves x 2 spines = 4 paths; inside a podset the leaf is the whole path; nothing
// else gets a fanout. The reply deadline's base RTT covers the 4-link path.
TEST_F(PathTracerTest, ConweaveSourceRoutesTheSecondHopBetweenPodsetsOnly) {
  const ClosSpec three{.tiers = 3,
                       .spines = 4,
                       .tors = 2,
                       .leaves_per_podset = 2,
                       .podsets = 2,
                       .hosts_per_tor = 1,
                       .link_rate = 10 * kGbps};
  Scenario s = testing::ClosScenario("cw3", three, kMs);
  s.sw.load_balancing.scheme = LoadBalancingConfig::Scheme::kConweave;
  const FabricPlan plan = Plan(s);
  auto fanout = [&](const char* from, const char* to) {
    const TopoSwitch& dst = s.topology.switches[s.topology.SwitchIndex(to)];
    for (const RouteConfig& r : plan.switches[s.topology.SwitchIndex(from)].routes) {
      if (r.prefix == dst.subnet && r.len == dst.prefix_len) {
        EXPECT_EQ(r.group.members.size(), 2u) << from << " -> " << to;
        return static_cast<int>(r.group.second_hops);
      }
    }
    ADD_FAILURE() << "no route from " << from << " to " << to;
    return 0;
  };
  EXPECT_EQ(fanout("p0-tor0", "p1-tor1"), 2);
  EXPECT_EQ(fanout("p1-tor1", "p0-tor0"), 2);
  EXPECT_EQ(fanout("p0-tor0", "p0-tor1"), 1);   // inside the podset: the leaf is the path
  EXPECT_EQ(fanout("p0-leaf0", "p1-tor0"), 1);  // only ToRs source-route
  for (const auto& c : plan.switches) {
    for (const RouteConfig& r : c.routes) {
      if (r.len == 32) {
        EXPECT_EQ(r.group.second_hops, 1) << c.name << ": a loopback route";
      }
    }
  }
  // The leaves follow the path index; spines and ToRs route transit frames by ECMP.
  for (const auto& c : plan.switches) {
    EXPECT_EQ(c.load_balancing.follow_source_routes, c.name.find("leaf") != std::string::npos)
        << c.name;
  }
  // ECMP plans no source route.
  Scenario e = s;
  e.sw.load_balancing.scheme = LoadBalancingConfig::Scheme::kEcmp;
  for (const auto& c : Plan(e).switches) {
    for (const RouteConfig& r : c.routes) EXPECT_EQ(r.group.second_hops, 1) << c.name;
  }
  // The base RTT: ToR-leaf-spine-leaf-ToR and back is twice a leaf-spine's ToR-spine-ToR.
  Scenario two = testing::ClosScenario(
      "cw2", {.spines = 2, .tors = 2, .hosts_per_tor = 1, .link_rate = 10 * kGbps}, kMs);
  two.sw.load_balancing.scheme = LoadBalancingConfig::Scheme::kConweave;
  const Time rtt3 = plan.switches[0].load_balancing.conweave_base_rtt;
  EXPECT_GT(rtt3, 0);
  EXPECT_EQ(rtt3, 2 * Plan(two).switches[0].load_balancing.conweave_base_rtt);
}

// Parallel links to the destination ToR leave nothing to choose at the second hop: a leaf-spine
// with a doubled spine-ToR link, or a podset with a doubled ToR-leaf link, keeps second_hops 1
// there (no source route), and between podsets the leaves' spines still count.
TEST_F(PathTracerTest, ParallelLinksToTheDestinationToRAreNotASecondHop) {
  auto second_hops = [](const Scenario& s, const FabricPlan& plan, const char* from,
                        const char* to) {
    const TopoSwitch& dst = s.topology.switches[s.topology.SwitchIndex(to)];
    for (const RouteConfig& r : plan.switches[s.topology.SwitchIndex(from)].routes) {
      if (r.prefix == dst.subnet && r.len == dst.prefix_len) return int{r.group.second_hops};
    }
    return 0;
  };
  for (auto scheme :
       {LoadBalancingConfig::Scheme::kConweave, LoadBalancingConfig::Scheme::kConga}) {
    Scenario two = testing::ClosScenario(
        "par2", {.spines = 2, .tors = 2, .hosts_per_tor = 1, .link_rate = 10 * kGbps}, kMs);
    two.sw.load_balancing.scheme = scheme;
    two.topology.links.push_back(TopoLink{"tor1", "spine0", 10 * kGbps, 5});
    const FabricPlan p2 = Plan(two);
    EXPECT_EQ(second_hops(two, p2, "tor0", "tor1"), 1);
    EXPECT_EQ(second_hops(two, p2, "tor1", "tor0"), 1);
    for (const auto& c : p2.switches) EXPECT_FALSE(c.load_balancing.follow_source_routes) << c.name;
    Scenario three = testing::ClosScenario("par3",
                                           {.tiers = 3,
                                            .spines = 4,
                                            .tors = 2,
                                            .leaves_per_podset = 2,
                                            .podsets = 2,
                                            .hosts_per_tor = 1,
                                            .link_rate = 10 * kGbps},
                                           kMs);
    three.sw.load_balancing.scheme = scheme;
    three.topology.links.push_back(TopoLink{"p0-tor0", "p0-leaf0", 10 * kGbps, 5});
    const FabricPlan p3 = Plan(three);
    EXPECT_EQ(second_hops(three, p3, "p0-tor1", "p0-tor0"), 1);
    EXPECT_EQ(second_hops(three, p3, "p1-tor0", "p0-tor0"), 2);
    EXPECT_EQ(second_hops(three, p3, "p0-tor0", "p1-tor0"), 2);  // 3 members (2 links to leaf0)
  }
}

// A podset whose leaves reach different numbers of spines cannot carry one source route: the
// planner refuses it for ConWeave and CONGA, naming the ToRs and the leaf; and CONGA's 4-bit path
// id takes at most 16 paths between two ToRs.
TEST_F(PathTracerTest, SourceRoutingRefusesLeavesWithUnequalUplinks) {
  for (auto [scheme, name] : {std::pair{LoadBalancingConfig::Scheme::kConweave, "conweave"},
                              std::pair{LoadBalancingConfig::Scheme::kConga, "conga"}}) {
    Scenario s = testing::ClosScenario("sr3",
                                       {.tiers = 3,
                                        .spines = 4,
                                        .tors = 1,
                                        .leaves_per_podset = 2,
                                        .podsets = 2,
                                        .hosts_per_tor = 1,
                                        .link_rate = 10 * kGbps},
                                       kMs);
    s.sw.load_balancing.scheme = scheme;
    ASSERT_TRUE(PlanFabric(s).ok()) << name;
    auto& links = s.topology.links;
    const auto gone = std::find_if(links.begin(), links.end(), [](const TopoLink& l) {
      return l.a == "p0-leaf1" && l.b == "spine3";
    });
    ASSERT_NE(gone, links.end());
    links.erase(gone);
    auto p = PlanFabric(s);
    ASSERT_FALSE(p.ok()) << name;
    // The first destination planned is p0-tor0: p1-tor0's leaves reach it over 2 and 1 spines.
    EXPECT_EQ(p.message(), std::string("load_balancing.scheme: ") + name +
                               " source-routes the second hop, so every next hop of p1-tor0 "
                               "towards p0-tor0 must have as many next hops towards it as the "
                               "others; p1-leaf0 has 2, p1-leaf1 has 1");
  }
  // CONGA: 4 leaves x 8 spines per plane = 32 paths > 16.
  Scenario big = testing::ClosScenario("sr3",
                                       {.tiers = 3,
                                        .spines = 32,
                                        .tors = 1,
                                        .leaves_per_podset = 4,
                                        .podsets = 2,
                                        .hosts_per_tor = 1,
                                        .link_rate = 10 * kGbps},
                                       kMs);
  big.sw.load_balancing.scheme = LoadBalancingConfig::Scheme::kConga;
  auto p = PlanFabric(big);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.message(),
            "load_balancing.scheme: conga carries a 4-bit path id: p1-tor0 has 4 x 8 paths to "
            "p0-tor0 (at most 16)");
  big.sw.load_balancing.scheme = LoadBalancingConfig::Scheme::kConweave;  // 32 <= 511
  EXPECT_TRUE(PlanFabric(big).ok());
}

TEST_F(PathTracerTest, ARouteMissingOnTheWayIsAnErrorNamingTheSwitch) {
  Scenario s = testing::ClosScenario("paths", {.spines = 2, .tors = 2, .hosts_per_tor = 1}, kMs);
  FabricPlan plan = Plan(s);
  plan.switches[static_cast<size_t>(s.topology.SwitchIndex("tor0"))].routes.clear();
  Rng rng(1);
  auto p = PathTracer(plan, s.topology).Random(0, 1, rng);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.message().find("tor0: no route to h1"), std::string::npos) << p.message();
}

TEST_F(PathTracerTest, TheModelBoundsEcmpBetweenCollisionsAndNone) {
  // 2 ToRs x 4 hosts, 4 spines: four flows tor0 -> tor1 at 10G. Without collisions 40G; ECMP
  // and random paths lose what collisions cost, never more than 3/4 of it.
  Scenario s = testing::ClosScenario(
      "paths", {.spines = 4, .tors = 2, .hosts_per_tor = 4, .link_rate = 10 * kGbps}, kMs);
  const FabricPlan plan = Plan(s);
  std::vector<LongFlow> flows;
  for (int k = 0; k < 4; ++k) {
    flows.push_back({k, 4 + k,
                     FiveTuple{s.topology.hosts[k].ip, s.topology.hosts[4 + k].ip, 17,
                               static_cast<uint16_t>(49152 + k), 4791}});
  }
  auto m = ModelEcmp(plan, s.topology, flows, 500, 3);
  ASSERT_TRUE(m.ok()) << m.message();
  EXPECT_DOUBLE_EQ(m.value().unconstrained_gbps, 40);
  EXPECT_LE(m.value().ecmp_gbps, 40 + 1e-9);
  EXPECT_GE(m.value().ecmp_gbps, 10 - 1e-9);
  ASSERT_EQ(m.value().random_gbps.size(), 500u);
  EXPECT_GE(m.value().random_gbps.front(), 10 - 1e-9);
  // P(no collision) = 4!/4^4 = 9.4 %: most draws lose something, some none.
  EXPECT_LT(m.value().random_gbps[250], 40 - 1e-9);
  EXPECT_DOUBLE_EQ(m.value().random_gbps.back(), 40);
  // Opposite directions on one cable do not share it: h0 -> h4 and h4 -> h0 over one spine.
  Scenario one = testing::ClosScenario(
      "paths", {.spines = 1, .tors = 2, .hosts_per_tor = 4, .link_rate = 10 * kGbps}, kMs);
  const FabricPlan op = Plan(one);
  const auto ip = [&](int h) { return one.topology.hosts[h].ip; };
  auto both = ModelEcmp(op, one.topology,
                        {{0, 4, FiveTuple{ip(0), ip(4), 17, 1, 4791}},
                         {4, 0, FiveTuple{ip(4), ip(0), 17, 1, 4791}},
                         {1, 5, FiveTuple{ip(1), ip(5), 17, 2, 4791}}},
                        10, 1);
  ASSERT_TRUE(both.ok()) << both.message();
  EXPECT_DOUBLE_EQ(both.value().ecmp_gbps, 10 + 5 + 5) << "h0->h4 and h1->h5 share the uplink";
  int ports = 0;
  for (const auto& [port, n] : m.value().flows_per_port)
    ports += port.rfind("tor0/", 0) == 0 ? n : 0;
  EXPECT_EQ(ports, 4) << "each flow leaves tor0 through one uplink";
}

TEST(NextPodsetTest, EveryHostSendsToItsPeerInTheNextPodset) {
  Scenario s = testing::ClosScenario("pairs",
                                     {.tiers = 3,
                                      .spines = 2,
                                      .tors = 2,
                                      .leaves_per_podset = 2,
                                      .podsets = 3,
                                      .hosts_per_tor = 2},
                                     kMs);
  const auto pairs = NextPodsetPairs(s.topology, "all", "traffic[0].to");
  ASSERT_EQ(pairs.size(), 12u);
  std::set<int> dsts;
  for (auto [a, b] : pairs) {
    const auto pod = [&](int h) {
      return s.topology.switches[s.topology.SwitchIndex(s.topology.hosts[h].tor)].podset;
    };
    EXPECT_EQ(pod(b), (pod(a) + 1) % 3);
    dsts.insert(b);
  }
  EXPECT_EQ(dsts.size(), 12u) << "a permutation: every host receives one flow";
  EXPECT_EQ(NextPodsetPairs(s.topology, "h1", "x").size(), 1u);
  // One podset: the ToRs take its place; one ToR: an error naming the field.
  Scenario two = testing::ClosScenario("pairs", {.spines = 1, .tors = 2, .hosts_per_tor = 2}, kMs);
  const auto tp = NextPodsetPairs(two.topology, "all", "x");
  ASSERT_EQ(tp.size(), 4u);
  EXPECT_EQ(two.topology.hosts[tp[0].second].tor, "tor1");
  // Unequal ToRs: the message says which has how many.
  Scenario uneven = two;
  uneven.topology.hosts.pop_back();
  try {
    NextPodsetPairs(uneven.topology, "all", "traffic[0].to");
    ADD_FAILURE() << "unequal ToRs accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("tor0 has 2, tor1 has 1"), std::string::npos) << e.what();
  }
  Scenario one = testing::ClosScenario("pairs", {.spines = 1, .tors = 1, .hosts_per_tor = 2}, kMs);
  try {
    NextPodsetPairs(one.topology, "all", "traffic[3].to");
    ADD_FAILURE() << "one ToR accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("traffic[3].to"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace rocefab

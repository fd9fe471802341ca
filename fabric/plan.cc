#include "fabric/plan.h"

#include <rte_jhash.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <memory>

#include "common/units.h"

namespace rocefab {
namespace {

using Adjacency = std::vector<std::vector<std::pair<int, uint16_t>>>;  // (neighbour, local port)

// The second hop of ConWeave's and CONGA's source routes (RouteGroup::second_hops): how many
// next hops towards ToR `d` each of ToR `u`'s next hops has (`dist`: hops to `d`). It must be
// the same for all of them (every leaf of a podset reaches the same number of spines), and the
// paths (members x second hops) must fit the frame's path field: `max_paths`, named `field`.
Result<uint16_t> SecondHops(const Topology& t, const Adjacency& adj, const std::vector<int>& dist,
                            int u, int d, const char* scheme, uint32_t max_paths,
                            const char* field) {
  using R = Result<uint16_t>;
  uint32_t members = 0, fanout = 0;
  int first = -1;  // the next hop whose count the others must match
  for (auto [v, port] : adj[u]) {
    if (dist[v] != dist[u] - 1) continue;
    ++members;
    // A next hop next to d (a leaf-spine's spine, a leaf inside the podset) has nothing left to
    // choose, whatever number of parallel links it has to d; else each of its links to a switch
    // one hop nearer is a second hop the path index picks.
    uint32_t next = 1;
    if (dist[v] > 1) {
      next = 0;
      for (auto [w, wport] : adj[v]) next += dist[w] == dist[v] - 1 ? 1 : 0;
    }
    if (fanout != 0 && next != fanout) {
      return R::Error(std::string("load_balancing.scheme: ") + scheme +
                      " source-routes the second hop, so every next hop of " + t.switches[u].name +
                      " towards " + t.switches[d].name +
                      " must have as many next hops towards it as the others; " +
                      t.switches[first].name + " has " + std::to_string(fanout) + ", " +
                      t.switches[v].name + " has " + std::to_string(next));
    }
    if (first < 0) first = v;
    fanout = next;
  }
  if (members * fanout > max_paths) {
    return R::Error(std::string("load_balancing.scheme: ") + scheme + " carries " + field + ": " +
                    t.switches[u].name + " has " + std::to_string(members) + " x " +
                    std::to_string(fanout) + " paths to " + t.switches[d].name + " (at most " +
                    std::to_string(max_paths) + ")");
  }
  return static_cast<uint16_t>(std::max(fanout, 1u));
}

// Switch-to-switch links on the longest shortest path between two ToRs (at least 2): ConWeave's
// reply deadline covers the longest path (2 in a leaf-spine, 4 in a 3-tier Clos).
int ConweaveLinks(const Topology& t) {
  const int ns = static_cast<int>(t.switches.size());
  std::vector<std::vector<int>> adj(ns);
  for (const auto& l : t.links) {
    const int a = t.SwitchIndex(l.a), b = t.SwitchIndex(l.b);
    if (a < 0 || b < 0) continue;
    adj[a].push_back(b);
    adj[b].push_back(a);
  }
  int longest = 2;
  std::vector<int> dist(ns);
  for (int s = 0; s < ns; ++s) {
    if (t.switches[s].role != SwitchRole::kTor) continue;
    std::fill(dist.begin(), dist.end(), -1);
    std::deque<int> q{s};
    dist[s] = 0;
    while (!q.empty()) {
      const int x = q.front();
      q.pop_front();
      if (t.switches[x].role == SwitchRole::kTor) longest = std::max(longest, dist[x]);
      for (int y : adj[x]) {
        if (dist[y] < 0) {
          dist[y] = dist[x] + 1;
          q.push_back(y);
        }
      }
    }
  }
  return longest;
}

}  // namespace

Result<std::vector<std::vector<RouteConfig>>> ShortestPathRoutes(
    const Topology& t, const FabricPlan& plan, const std::vector<bool>& link_down,
    bool all_reachable, std::vector<bool>* second_hop_switches) {
  using R = Result<std::vector<std::vector<RouteConfig>>>;
  const int ns = static_cast<int>(t.switches.size());
  // Adjacency over the switch-to-switch links that are up, in link order (the order of ECMP
  // group members, which the hash picks from).
  Adjacency adj(ns);
  for (size_t k = 0; k < plan.links.size(); ++k) {
    const FabricPlan::Link& l = plan.links[k];
    if (l.a.is_host || l.b.is_host || (k < link_down.size() && link_down[k])) continue;
    adj[l.a.index].emplace_back(l.b.index, l.a.port);
    adj[l.b.index].emplace_back(l.a.index, l.b.port);
  }
  std::vector<std::vector<RouteConfig>> routes(ns);
  for (int d = 0; d < ns; ++d) {
    std::vector<int> dist(ns, -1);
    std::deque<int> q{d};
    dist[d] = 0;
    while (!q.empty()) {
      const int u = q.front();
      q.pop_front();
      for (auto [v, port] : adj[u]) {
        if (dist[v] < 0) {
          dist[v] = dist[u] + 1;
          q.push_back(v);
        }
      }
    }
    const TopoSwitch& dst = t.switches[d];
    for (int u = 0; u < ns; ++u) {
      if (u == d) continue;
      if (dist[u] < 0) {
        if (all_reachable) {
          return R::Error("topology: " + t.switches[u].name + " cannot reach " + dst.name);
        }
        continue;  // withdrawn
      }
      RouteGroup g;
      g.kind = RouteGroup::Kind::kEcmp;
      std::vector<std::pair<int, uint16_t>> next;  // (neighbour, port) in link order
      for (auto [v, port] : adj[u]) {
        if (dist[v] == dist[u] - 1) next.emplace_back(v, port);
      }
      if (plan.switches[u].ecmp.function == EcmpConfig::Function::kNs3Murmur3) {
        // The reference's next-hop order: ascending node id (switch/ecmp.h).
        std::stable_sort(next.begin(), next.end(),
                         [](const auto& x, const auto& y) { return x.first < y.first; });
      }
      for (auto [v, port] : next) g.members.push_back(NextHop{port, t.switches[v].mac});
      if (dst.role == SwitchRole::kTor) {
        RouteGroup subnet = g;
        const auto scheme = plan.switches[u].load_balancing.scheme;
        if (t.switches[u].role == SwitchRole::kTor &&
            (scheme == LoadBalancingConfig::Scheme::kConweave ||
             scheme == LoadBalancingConfig::Scheme::kConga)) {
          const bool cw = scheme == LoadBalancingConfig::Scheme::kConweave;
          auto hops =
              cw ? SecondHops(t, adj, dist, u, d, "conweave", kConweaveMaxRoutedPaths,
                              "a path index of 9 bits")
                 : SecondHops(t, adj, dist, u, d, "conga", kCongaMaxPaths, "a 4-bit path id");
          if (!hops.ok()) return hops.status();
          subnet.second_hops = hops.value();
          if (subnet.second_hops > 1 && second_hop_switches != nullptr) {
            second_hop_switches->resize(ns);
            for (auto [v, port] : adj[u]) {
              if (dist[v] == dist[u] - 1) (*second_hop_switches)[v] = true;
            }
          }
        }
        routes[u].push_back(RouteConfig{dst.subnet, dst.prefix_len, std::move(subnet)});
      }
      routes[u].push_back(RouteConfig{dst.loopback, 32, g});
    }
  }
  return routes;
}

Result<FabricPlan> PlanFabric(const Scenario& s) {
  const Topology& t = s.topology;
  FabricPlan plan;
  const int ns = static_cast<int>(t.switches.size());
  plan.switches.resize(ns);
  // Leaf ids (ToRs in topology order): CONGA's leaves, ConWeave's destination ToRs.
  std::vector<std::pair<Ipv4, int>> leaf_subnets;
  if (s.sw.load_balancing.scheme == LoadBalancingConfig::Scheme::kConga ||
      s.sw.load_balancing.scheme == LoadBalancingConfig::Scheme::kConweave) {
    for (const TopoSwitch& ts : t.switches) {
      if (ts.role == SwitchRole::kTor) leaf_subnets.emplace_back(ts.subnet, ts.prefix_len);
    }
  }
  int conweave_links = 0;  // ConweaveLinks(t), once it is needed
  // The reference simulator's ECMP (compat): its address of every host (switch/ecmp.h).
  std::shared_ptr<const FlatMap<Ipv4, Ipv4>> reference_addresses;
  if (s.compat->ReferenceEcmp()) {
    auto m = std::make_shared<FlatMap<Ipv4, Ipv4>>();
    for (size_t h = 0; h < t.hosts.size(); ++h) {
      (*m)[t.hosts[h].ip] = Ns3NodeAddress(static_cast<uint32_t>(h));
    }
    reference_addresses = std::move(m);
  }
  for (int i = 0; i < ns; ++i) {
    const TopoSwitch& ts = t.switches[i];
    SwitchConfig& c = plan.switches[i];
    c.name = ts.name;
    c.router_mac = ts.mac;
    c.loopback = ts.loopback;
    c.mac_aging = s.sw.mac_aging;
    c.arp_aging = s.sw.arp_aging;
    c.qos = s.sw.qos;
    c.buffer = s.sw.buffer;
    if (auto it = s.sw.buffer_switches.find(ts.name); it != s.sw.buffer_switches.end()) {
      c.buffer.size = it->second.size;
      c.buffer.shared_headroom_pool = it->second.shared_headroom_pool;
    }
    c.pfc = s.sw.pfc;
    c.wred = s.sw.wred;
    c.scheduler = s.sw.scheduler;
    c.watchdog = s.sw.watchdog;
    c.load_balancing = s.sw.load_balancing;
    c.load_balancing.leaf_subnets = leaf_subnets;
    if (c.load_balancing.scheme == LoadBalancingConfig::Scheme::kConweave &&
        c.load_balancing.conweave_base_rtt == 0) {
      // ToR -> spine -> ToR (or ToR -> leaf -> spine -> leaf -> ToR) and back over each uplink,
      // under the compat model's rule (CompatModel::ConweaveBaseRtt; the slowest uplink counts).
      Time worst = 0;
      for (const auto& l : t.links) {
        const std::string& other = l.a == ts.name ? l.b : l.b == ts.name ? l.a : std::string();
        const int o = other.empty() ? -1 : t.SwitchIndex(other);
        if (o < 0) continue;
        if (conweave_links == 0) conweave_links = ConweaveLinks(t);
        worst = std::max(worst,
                         s.compat->ConweaveBaseRtt(l.delay(), l.rate, s.nic.mtu, conweave_links));
      }
      c.load_balancing.conweave_base_rtt = worst > 0 ? worst : 4 * kUs;
    }
    c.drop_lossless_on_incomplete_arp = s.sw.drop_incomplete_arp;
    c.rng_seed = s.seed * 1000003u + static_cast<uint64_t>(i);
    c.ecmp_seed = rte_jhash_1word(static_cast<uint32_t>(i), static_cast<uint32_t>(s.seed));
    if (reference_addresses != nullptr) {
      c.ecmp.function = EcmpConfig::Function::kNs3Murmur3;
      c.ecmp.node_id = static_cast<uint32_t>(t.hosts.size() + static_cast<size_t>(i));
      c.ecmp.reference_addresses = reference_addresses;
    }
    if (ts.role == SwitchRole::kTor)
      c.svis.push_back(SviConfig{ts.vlan, ts.gateway(), ts.prefix_len});
  }
  const NodeIndex index(t);
  for (const auto& h : t.hosts) {
    const TopoSwitch& tor = t.switches[static_cast<size_t>(index.Switch(h.tor))];
    EmulatedHostConfig hc;
    hc.name = h.name;
    hc.ip = h.ip;
    hc.prefix_len = tor.prefix_len;
    hc.gateway = tor.gateway();
    hc.mac = h.mac;
    hc.qos = s.sw.qos;
    hc.rnic = s.nic;
    hc.rnic.ip_id_per_qp = s.compat->ReferenceEcmp();
    plan.hosts.push_back(hc);  // link rate and DCQCN profile are filled once links are known
  }
  // Ports in link order.
  for (const auto& l : t.links) {
    FabricPlan::Link pl;
    pl.rate = l.rate;
    pl.delay = l.delay();
    FabricPlan::Endpoint* ends[2] = {&pl.a, &pl.b};
    const std::string* names[2] = {&l.a, &l.b};
    for (int e = 0; e < 2; ++e) {
      const int si = index.Switch(*names[e]);
      if (si >= 0) {
        SwitchConfig& c = plan.switches[si];
        const auto port = static_cast<uint16_t>(c.ports.size());
        SwitchPortConfig pc;
        pc.name = c.name + "/p" + std::to_string(port);
        pc.rate = l.rate;
        pc.cable_m = l.cable_m;
        pc.pfc_watchdog = s.sw.watchdog_ports.empty() ||
                          std::find(s.sw.watchdog_ports.begin(), s.sw.watchdog_ports.end(),
                                    pc.name) != s.sw.watchdog_ports.end();
        for (const auto& [where, profile] : s.sw.buffer_ports) {  // later entries win
          if (where == pc.name || where == c.name + "/*") {
            pc.lossless = s.sw.buffer_profiles.at(profile);
            pc.buffer_profile = profile;
          }
        }
        const std::string& other = *names[1 - e];
        if (index.Host(other) >= 0) {
          pc.vlan = t.switches[si].vlan;
        } else if (s.sw.vlan_on_uplinks) {
          pc.vlan = 100;  // the Clos generator's server VLAN on every ToR
          pc.trunk = true;
        }
        c.ports.push_back(pc);
        *ends[e] = FabricPlan::Endpoint{false, si, port};
      } else {
        const int hi = index.Host(*names[e]);
        plan.hosts[hi].rate = l.rate;
        *ends[e] = FabricPlan::Endpoint{true, hi, 0};
      }
    }
    plan.links.push_back(pl);
  }
  for (auto& hc : plan.hosts) {
    auto prof = DcqcnConfig::Profile(s.dcqcn_profile, hc.rate);
    if (!prof.ok()) return prof.status();
    DcqcnConfig d = prof.value();
    const auto& o = s.dcqcn_overrides;
    if (o.contains("cnp_interval")) d.cnp_interval = o["cnp_interval"].get<Time>();
    if (o.contains("increase_interval")) d.increase_interval = o["increase_interval"].get<Time>();
    if (o.contains("min_rate")) d.min_rate = BitRate::Bps(o["min_rate"].get<int64_t>());
    if (o.contains("rate_ai")) d.rate_ai = BitRate::Bps(o["rate_ai"].get<int64_t>());
    if (o.contains("rate_hai")) d.rate_hai = BitRate::Bps(o["rate_hai"].get<int64_t>());
    s.compat->DcqcnRules(&d);
    hc.rnic.dcqcn_cfg = d;
  }
  std::vector<bool> second_hop(ns, false);
  auto routes =
      ShortestPathRoutes(t, plan, std::vector<bool>(plan.links.size(), false), true, &second_hop);
  if (!routes.ok()) return routes.status();
  for (int u = 0; u < ns; ++u) plan.switches[u].load_balancing.follow_source_routes = second_hop[u];
  for (int u = 0; u < ns; ++u) plan.switches[u].routes = std::move(routes.value()[u]);
  return plan;
}

Time BaseRtt(const FabricPlan& plan, const Topology& topo, int src, int dst, uint32_t mtu,
             const CompatModel& compat) {
  return BaseRttTable(plan, topo).Rtt(src, dst, mtu, compat);
}

BaseRttTable::BaseRttTable(const FabricPlan& plan, const Topology& topo)
    : plan_(plan), adj_(topo.switches.size()), hops_from_(topo.switches.size()) {
  // Hops: host-ToR, then ToR-to-ToR switch hops by BFS over the switch graph, then ToR-host.
  const NodeIndex index(topo);
  for (const auto& h : topo.hosts) tor_of_.push_back(index.Switch(h.tor));
  for (const auto& l : plan.links) {
    if (!l.a.is_host && !l.b.is_host) {
      adj_[l.a.index].push_back(l.b.index);
      adj_[l.b.index].push_back(l.a.index);
    }
  }
  for (const auto& l : plan.links) {
    if (l.a.is_host || l.b.is_host) {
      prop_ = l.delay;
      break;
    }
  }
}

Time BaseRttTable::Rtt(int src, int dst, uint32_t mtu, const CompatModel& compat) {
  const int ta = tor_of_[static_cast<size_t>(src)], tb = tor_of_[static_cast<size_t>(dst)];
  std::vector<int>& dist = hops_from_[static_cast<size_t>(ta)];
  if (dist.empty()) {
    dist.assign(adj_.size(), -1);
    std::deque<int> q{ta};
    dist[ta] = 0;
    while (!q.empty()) {
      const int u = q.front();
      q.pop_front();
      for (int v : adj_[u]) {
        if (dist[v] < 0) {
          dist[v] = dist[u] + 1;
          q.push_back(v);
        }
      }
    }
  }
  const int links = 2 + std::max(0, dist[tb]);
  return compat.BaseRtt(PathShape{links, prop_, plan_.hosts[src].rate}, mtu);
}

Time Percentile(std::vector<Time>& v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t rank = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size())));
  if (rank < 1) rank = 1;
  return v[std::min(rank, v.size()) - 1];
}

}  // namespace rocefab

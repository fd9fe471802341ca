#include "fabric/paths.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "switch/route_table.h"

namespace rocefab {
namespace {

bool InSubnet(Ipv4 ip, Ipv4 prefix, int len) {
  const Ipv4 mask = len == 0 ? 0 : static_cast<Ipv4>(~((1ull << (32 - len)) - 1));
  return (ip & mask) == (prefix & mask);
}

const FabricPlan::Endpoint& FarEnd(const FabricPlan::Link& l, int sw, uint16_t port) {
  return (!l.a.is_host && l.a.index == sw && l.a.port == port) ? l.b : l.a;
}

}  // namespace

PathTracer::PathTracer(const FabricPlan& plan, const Topology& topo) : plan_(plan), topo_(topo) {
  host_link_.assign(plan.hosts.size(), -1);
  for (size_t k = 0; k < plan.links.size(); ++k) {
    for (const FabricPlan::Endpoint* e : {&plan.links[k].a, &plan.links[k].b}) {
      if (e->is_host) {
        host_link_[static_cast<size_t>(e->index)] = static_cast<int>(k);
      } else {
        by_switch_port_[{e->index, e->port}] = static_cast<int>(k);
      }
    }
  }
  for (const auto& h : topo.hosts) tor_of_.push_back(topo.SwitchIndex(h.tor));
}

Result<std::vector<int>> PathTracer::Trace(int src, int dst, const MemberChoice& choose) const {
  using R = Result<std::vector<int>>;
  const std::string& dst_name = topo_.hosts[static_cast<size_t>(dst)].name;
  const Ipv4 dip = topo_.hosts[static_cast<size_t>(dst)].ip;
  const int first = host_link_[static_cast<size_t>(src)];
  const int last = host_link_[static_cast<size_t>(dst)];
  if (first < 0 || last < 0) return R::Error("a host without a link");
  std::vector<int> path{first};
  const FabricPlan::Link& hl = plan_.links[static_cast<size_t>(first)];
  int sw = hl.a.is_host ? hl.b.index : hl.a.index;
  for (int hops = 0; hops < 64; ++hops) {
    if (sw == tor_of_[static_cast<size_t>(dst)]) {
      path.push_back(last);
      return path;
    }
    const SwitchConfig& c = plan_.switches[static_cast<size_t>(sw)];
    const RouteConfig* best = nullptr;
    for (const RouteConfig& r : c.routes) {  // longest prefix match
      if (InSubnet(dip, r.prefix, r.len) && (best == nullptr || r.len > best->len)) best = &r;
    }
    if (best == nullptr || best->group.members.empty()) {
      return R::Error(c.name + ": no route to " + dst_name);
    }
    const auto& members = best->group.members;
    const uint32_t n = static_cast<uint32_t>(members.size());
    const uint16_t port = members[n > 1 ? choose(sw, n) : 0].port;
    auto it = by_switch_port_.find({sw, port});
    if (it == by_switch_port_.end()) return R::Error(c.name + ": route via a port without a link");
    path.push_back(it->second);
    const FabricPlan::Endpoint& far =
        FarEnd(plan_.links[static_cast<size_t>(it->second)], sw, port);
    if (far.is_host) return R::Error(c.name + ": route to " + dst_name + " via a host port");
    sw = far.index;
  }
  return R::Error("routing loop towards " + dst_name);
}

Result<std::vector<int>> PathTracer::Ecmp(int src, int dst, const FiveTuple& f) const {
  return Trace(src, dst, [&](int sw, uint32_t n) {
    const SwitchConfig& c = plan_.switches[static_cast<size_t>(sw)];
    if (c.ecmp.function == EcmpConfig::Function::kNs3Murmur3) {
      return Ns3EcmpMember(c.ecmp, f.src, f.dst, f.sport,
                           Ns3ReferenceDport(f.proto, f.dport, f.ip_id), n);
    }
    return EcmpPick(EcmpHash(f.src, f.dst, f.proto, f.sport, f.dport, c.ecmp_seed), n);
  });
}

Result<std::vector<int>> PathTracer::Random(int src, int dst, Rng& rng) const {
  return Trace(src, dst, [&rng](int, uint32_t n) { return static_cast<uint32_t>(rng.Below(n)); });
}

std::vector<std::string> PathPortNames(const FabricPlan& plan, const std::vector<int>& path,
                                       int src) {
  std::vector<std::string> out;
  int sw = -1;  // the switch the frame is at; -1: still at the source host
  for (int k : path) {
    const FabricPlan::Link& l = plan.links[static_cast<size_t>(k)];
    // The end the frame enters the link from: the source host, or switch `sw` (a link has a
    // different node at each end).
    const bool a_here = sw < 0 ? l.a.is_host : (!l.a.is_host && l.a.index == sw);
    const FabricPlan::Endpoint& here = a_here ? l.a : l.b;
    const FabricPlan::Endpoint& far = a_here ? l.b : l.a;
    out.push_back(sw < 0 ? plan.hosts[static_cast<size_t>(src)].name
                         : plan.switches[static_cast<size_t>(sw)].ports[here.port].name);
    if (far.is_host) break;
    sw = far.index;
  }
  return out;
}

std::vector<double> MaxMinFairRates(const std::vector<double>& capacity,
                                    const std::vector<std::vector<int>>& paths) {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> rate(paths.size(), 0.0);
  std::vector<bool> frozen(paths.size(), false);
  std::vector<double> left = capacity;
  size_t active = 0;
  for (size_t f = 0; f < paths.size(); ++f) {
    if (paths[f].empty()) {
      rate[f] = inf, frozen[f] = true;
    } else {
      ++active;
    }
  }
  while (active > 0) {
    // The smallest equal increment that fills some link: its spare capacity / its active flows.
    std::vector<int> users(capacity.size(), 0);
    for (size_t f = 0; f < paths.size(); ++f) {
      if (!frozen[f]) {
        for (int l : paths[f]) ++users[static_cast<size_t>(l)];
      }
    }
    double inc = inf;
    for (size_t l = 0; l < capacity.size(); ++l) {
      if (users[l] > 0) inc = std::min(inc, left[l] / users[l]);
    }
    for (size_t l = 0; l < capacity.size(); ++l) left[l] -= inc * users[l];
    for (size_t f = 0; f < paths.size(); ++f) {
      if (frozen[f]) continue;
      rate[f] += inc;
      for (int l : paths[f]) {
        if (left[static_cast<size_t>(l)] <= 1e-9 * capacity[static_cast<size_t>(l)]) {
          frozen[f] = true;
        }
      }
      if (frozen[f]) --active;
    }
  }
  return rate;
}

namespace {

// Capacity per direction of every link: 2k for frames entering link k at its end a, 2k + 1 at b.
std::vector<double> LinkCapacities(const FabricPlan& plan) {
  std::vector<double> c;
  for (const auto& l : plan.links) c.insert(c.end(), 2, static_cast<double>(l.rate.bps()));
  return c;
}

// `path` as directed links (LinkCapacities' numbering): flows in opposite directions on one
// cable do not share its capacity.
std::vector<int> Directed(const FabricPlan& plan, const std::vector<int>& path) {
  std::vector<int> out;
  int sw = -1;  // the switch the frame is at; -1: the source host
  for (int k : path) {
    const FabricPlan::Link& l = plan.links[static_cast<size_t>(k)];
    const bool a_here = sw < 0 ? l.a.is_host : (!l.a.is_host && l.a.index == sw);
    out.push_back(2 * k + (a_here ? 0 : 1));
    const FabricPlan::Endpoint& far = a_here ? l.b : l.a;
    sw = far.is_host ? -1 : far.index;
  }
  return out;
}

double TotalGbps(const std::vector<double>& capacity, const std::vector<std::vector<int>>& paths) {
  double sum = 0;
  for (double r : MaxMinFairRates(capacity, paths)) sum += r;
  return std::round(sum / 1e3) / 1e6;  // to the kb/s: no float noise above the capacity
}

}  // namespace

Result<EcmpModel> ModelEcmp(const FabricPlan& plan, const Topology& topo,
                            const std::vector<LongFlow>& flows, int trials, uint64_t seed) {
  EcmpModel m;
  const std::vector<double> cap = LinkCapacities(plan);
  std::vector<std::vector<int>> ecmp, hosts_only;
  const PathTracer tracer(plan, topo);
  for (const LongFlow& f : flows) {
    auto p = tracer.Ecmp(f.src, f.dst, f.tuple);
    if (!p.ok()) return p.status();
    for (const std::string& port : PathPortNames(plan, p.value(), f.src)) {
      if (port.find('/') != std::string::npos) ++m.flows_per_port[port];
    }
    const std::vector<int> d = Directed(plan, p.value());
    hosts_only.push_back({d.front(), d.back()});
    ecmp.push_back(d);
  }
  m.ecmp_gbps = TotalGbps(cap, ecmp);
  m.unconstrained_gbps = TotalGbps(cap, hosts_only);
  Rng rng(seed);
  std::vector<std::vector<int>> random(flows.size());
  for (int t = 0; t < trials; ++t) {
    for (size_t i = 0; i < flows.size(); ++i) {
      auto p = tracer.Random(flows[i].src, flows[i].dst, rng);
      if (!p.ok()) return p.status();
      random[i] = Directed(plan, p.value());
    }
    m.random_gbps.push_back(TotalGbps(cap, random));
  }
  std::sort(m.random_gbps.begin(), m.random_gbps.end());
  return m;
}

}  // namespace rocefab

#include "topo/fabric.h"

#include <rte_jhash.h>
#include <sched.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <tuple>

#include "common/pfc_frame.h"
#include "common/units.h"
#include "nic-emu/roce_headers.h"
#include "topo/fault_nodes.h"

namespace rocefab {

Result<std::vector<std::vector<RouteConfig>>> ShortestPathRoutes(const Topology& t,
                                                                 const FabricPlan& plan,
                                                                 const std::vector<bool>& link_down,
                                                                 bool all_reachable) {
  using R = Result<std::vector<std::vector<RouteConfig>>>;
  const int ns = static_cast<int>(t.switches.size());
  // Adjacency over the switch-to-switch links that are up, in link order (the order of ECMP
  // group members, which the hash picks from).
  std::vector<std::vector<std::pair<int, uint16_t>>> adj(ns);  // (neighbour switch, local port)
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
      for (auto [v, port] : adj[u]) {
        if (dist[v] == dist[u] - 1) g.members.push_back(NextHop{port, t.switches[v].mac});
      }
      if (dst.role == SwitchRole::kTor) {
        routes[u].push_back(RouteConfig{dst.subnet, dst.prefix_len, g});
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
  // CONGA leaf ids: ToRs in topology order.
  std::vector<std::pair<Ipv4, int>> leaf_subnets;
  if (s.sw.load_balancing.scheme == LoadBalancingConfig::Scheme::kConga) {
    for (const TopoSwitch& ts : t.switches) {
      if (ts.role == SwitchRole::kTor) leaf_subnets.emplace_back(ts.subnet, ts.prefix_len);
    }
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
    c.pfc = s.sw.pfc;
    c.wred = s.sw.wred;
    c.scheduler = s.sw.scheduler;
    c.watchdog = s.sw.watchdog;
    c.load_balancing = s.sw.load_balancing;
    c.load_balancing.leaf_subnets = leaf_subnets;
    if (c.load_balancing.scheme == LoadBalancingConfig::Scheme::kConweave &&
        c.load_balancing.conweave_base_rtt == 0) {
      // ToR -> spine -> ToR and back: four cable delays, the data frame serialized on the two
      // forward hops and the 64-byte reply on the two return hops (the slowest uplink counts).
      Time worst = 0;
      for (const auto& l : t.links) {
        const std::string& other = l.a == ts.name ? l.b : l.b == ts.name ? l.a : std::string();
        const int o = other.empty() ? -1 : t.SwitchIndex(other);
        if (o < 0) continue;
        const int64_t frame =
            static_cast<int64_t>(s.nic.mtu) + 78;  // MTU + RoCEv2 headers + ICRC + FCS
        worst = std::max(
            worst, 4 * l.delay() + 2 * TxTime(frame + 20, l.rate) + 2 * TxTime(64 + 20, l.rate));
      }
      c.load_balancing.conweave_base_rtt = worst > 0 ? worst : 4 * kUs;
    }
    c.drop_lossless_on_incomplete_arp = s.sw.drop_incomplete_arp;
    c.rng_seed = s.seed * 1000003u + static_cast<uint64_t>(i);
    c.ecmp_seed = rte_jhash_1word(static_cast<uint32_t>(i), static_cast<uint32_t>(s.seed));
    if (ts.role == SwitchRole::kTor)
      c.svis.push_back(SviConfig{ts.vlan, ts.gateway(), ts.prefix_len});
  }
  for (const auto& h : t.hosts) {
    const TopoSwitch& tor = t.switches[t.SwitchIndex(h.tor)];
    SimHostConfig hc;
    hc.name = h.name;
    hc.ip = h.ip;
    hc.prefix_len = tor.prefix_len;
    hc.gateway = tor.gateway();
    hc.mac = h.mac;
    hc.qos = s.sw.qos;
    hc.rnic = s.nic;
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
      const int si = t.SwitchIndex(*names[e]);
      if (si >= 0) {
        SwitchConfig& c = plan.switches[si];
        const auto port = static_cast<uint16_t>(c.ports.size());
        SwitchPortConfig pc;
        pc.name = c.name + "/p" + std::to_string(port);
        pc.rate = l.rate;
        pc.cable_m = l.cable_m;
        const std::string& other = *names[1 - e];
        if (t.HostIndex(other) >= 0) {
          pc.vlan = t.switches[si].vlan;
        } else if (s.sw.vlan_on_uplinks) {
          pc.vlan = 100;  // the Clos generator's server VLAN on every ToR
          pc.trunk = true;
        }
        c.ports.push_back(pc);
        *ends[e] = FabricPlan::Endpoint{false, si, port};
      } else {
        const int hi = t.HostIndex(*names[e]);
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
    if (o.contains("min_rate")) d.min_rate = o["min_rate"].get<BitRate>();
    if (o.contains("rate_ai")) d.rate_ai = o["rate_ai"].get<BitRate>();
    if (o.contains("rate_hai")) d.rate_hai = o["rate_hai"].get<BitRate>();
    hc.rnic.dcqcn_cfg = d;
  }
  auto routes = ShortestPathRoutes(t, plan, std::vector<bool>(plan.links.size(), false), true);
  if (!routes.ok()) return routes.status();
  for (int u = 0; u < ns; ++u) plan.switches[u].routes = std::move(routes.value()[u]);
  return plan;
}

Time BaseRtt(const FabricPlan& plan, const Topology& topo, int src, int dst, uint32_t mtu) {
  // Hops: host-ToR, then ToR-to-ToR switch hops by BFS over the switch graph, then ToR-host.
  const int ta = topo.SwitchIndex(topo.hosts[src].tor), tb = topo.SwitchIndex(topo.hosts[dst].tor);
  std::vector<std::vector<int>> adj(topo.switches.size());
  for (const auto& l : plan.links) {
    if (!l.a.is_host && !l.b.is_host) {
      adj[l.a.index].push_back(l.b.index);
      adj[l.b.index].push_back(l.a.index);
    }
  }
  std::vector<int> dist(topo.switches.size(), -1);
  std::deque<int> q{ta};
  dist[ta] = 0;
  while (!q.empty()) {
    const int u = q.front();
    q.pop_front();
    for (int v : adj[u]) {
      if (dist[v] < 0) {
        dist[v] = dist[u] + 1;
        q.push_back(v);
      }
    }
  }
  const int links = 2 + std::max(0, dist[tb]);
  BitRate rate = plan.hosts[src].rate;
  Time prop = 0;
  for (const auto& l : plan.links) {
    if (l.a.is_host || l.b.is_host) {
      prop = l.delay;
      break;
    }
  }
  const Time data = TxTime(WireBytes(mtu + 14 + 20 + 8 + 12 + 4), rate);
  const Time ack = TxTime(WireBytes(14 + 20 + 8 + 12 + 4 + 4), rate);
  // The first link's data serialization is part of the flow's byte term (IdealFct), so only the
  // store-and-forward of the remaining hops is added here.
  return 2 * links * prop + (links - 1) * data + links * ack;
}

Result<std::unique_ptr<RdmaTraffic>> RdmaTraffic::Build(const Scenario& s, const FabricPlan& plan,
                                                        const std::vector<SimHost*>& hosts) {
  using R = Result<std::unique_ptr<RdmaTraffic>>;
  auto t = std::make_unique<RdmaTraffic>();
  std::vector<Flow> flows;
  uint64_t seed = s.seed;
  for (size_t i = 0; i < s.traffic.size(); ++i) {
    const TrafficItem& item = s.traffic[i];
    if (item.kind == TrafficItem::Kind::kRdma) {
      const int a = s.topology.HostIndex(item.from), b = s.topology.HostIndex(item.to);
      if (hosts[a] == nullptr || hosts[b] == nullptr) {
        return R::Error("traffic[" + std::to_string(i) +
                        "]: rdma needs hosts with an emulated NIC ("
                        "kind \"builtin\" in the live runner)");
      }
      t->perftests_.push_back(
          std::make_unique<Perftest>(item.perftest, hosts[a], hosts[b], item.from, item.to));
    } else if (item.kind == TrafficItem::Kind::kPingmesh) {
      std::vector<std::string> names, tors;
      std::vector<int> pods;
      std::vector<bool> src, dst;
      for (const auto& h : s.topology.hosts) {
        names.push_back(h.name);
        tors.push_back(h.tor);
        pods.push_back(
            s.topology.switches[static_cast<size_t>(s.topology.SwitchIndex(h.tor))].podset);
        src.push_back(item.from == "all" || item.from == h.name);
        dst.push_back(item.to == "all" || item.to == h.name);
      }
      PingmeshSpec spec = item.pingmesh;
      spec.stop = s.duration;  // no probe starts after the scenario's duration
      t->pingmesh_ = std::make_unique<Pingmesh>(spec, hosts, names, tors, pods, src, dst);
    } else if (item.kind == TrafficItem::Kind::kWorkload) {
      t->measure_from_ = std::max(t->measure_from_, item.measure_from);
      std::vector<int> src, dst;
      for (size_t h = 0; h < s.topology.hosts.size(); ++h) {
        if (item.from == "all" || s.topology.hosts[h].name == item.from)
          src.push_back(static_cast<int>(h));
        if (item.to == "all" || s.topology.hosts[h].name == item.to)
          dst.push_back(static_cast<int>(h));
      }
      for (int h : src) {
        if (hosts[h] == nullptr)
          return R::Error("traffic[" + std::to_string(i) +
                          "]: workload hosts need an emulated NIC");
      }
      if (item.pattern == "trace") {
        auto tr = ReadFlowTrace(item.trace_path, static_cast<int>(s.topology.hosts.size()),
                                item.time_base, item.duration);
        if (!tr.ok()) return tr.status();
        for (const Flow& f : tr.value()) {
          if (hosts[f.src] == nullptr || hosts[f.dst] == nullptr) {
            return R::Error("traffic[" + std::to_string(i) + "]: trace hosts need an emulated NIC");
          }
          flows.push_back(f);
        }
      } else if (item.pattern == "incast") {
        for (int h : src) {
          if (h != dst.front()) flows.push_back(Flow{h, dst.front(), item.flow_size, item.start});
        }
      } else {
        auto cdf = FlowSizeCdf::Load(item.cdf_path);
        if (!cdf.ok()) return cdf.status();
        // Generate over all hosts, keep flows whose ends are in the from/to sets.
        const int n = static_cast<int>(s.topology.hosts.size());
        for (const Flow& f : PoissonFlows(cdf.value(), n, plan.hosts[0].rate, item.load, item.start,
                                          item.duration, seed++)) {
          if (std::find(src.begin(), src.end(), f.src) != src.end() &&
              std::find(dst.begin(), dst.end(), f.dst) != dst.end()) {
            flows.push_back(f);
          }
        }
      }
    }
  }
  if (!flows.empty()) {
    std::stable_sort(flows.begin(), flows.end(),
                     [](const Flow& x, const Flow& y) { return x.start < y.start; });
    const uint32_t mtu = s.nic.mtu;
    // One BFS per host pair, not per flow (the anchor trace has 97,984 flows on 128 hosts).
    const size_t n = s.topology.hosts.size();
    std::vector<Time> rtt(n * n, -1);
    t->workload_ = std::make_unique<FlowWorkload>(
        std::move(flows), hosts, mtu,
        [&plan, &s, mtu, &rtt, n](int a, int b) {
          Time& r = rtt[static_cast<size_t>(a) * n + static_cast<size_t>(b)];
          if (r < 0) r = BaseRtt(plan, s.topology, a, b, mtu);
          return r;
        },
        plan.hosts[0].rate);
  }
  return t;
}

bool RdmaTraffic::done() const {
  for (const auto& p : perftests_) {
    if (!p->done()) return false;
  }
  return !workload_ || workload_->finished() == workload_->records().size();
}

nlohmann::json RdmaTraffic::PerftestResults() const {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& p : perftests_) j.push_back(p->Result());
  return j;
}

nlohmann::json RdmaTraffic::WorkloadSummary() const {
  return workload_ ? workload_->Summary(measure_from_) : nlohmann::json();
}

std::vector<std::string> RdmaTraffic::Text() const {
  std::vector<std::string> out;
  for (const auto& p : perftests_) out.push_back(p->Text());
  return out;
}

Status RdmaTraffic::WriteFct(const std::string& path) const {
  if (!workload_) return Status();
  std::ofstream f(path);
  if (!f) return Status::Error(path + ": cannot write");
  for (const auto& r : workload_->records()) {
    if (r.fct < 0) continue;
    f << r.flow.src << " " << r.flow.dst << " " << r.sport << " " << 100 << " " << r.flow.size
      << " " << r.flow.start / kNs << " " << r.fct / kNs << " " << r.ideal / kNs << "\n";
  }
  return Status();
}

Time Percentile(std::vector<Time>& v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t rank = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size())));
  if (rank < 1) rank = 1;
  return v[std::min(rank, v.size()) - 1];
}

SwitchNode* SimFabric::sw(const std::string& name) {
  for (auto& s : switches_) {
    if (s->name() == name) return s.get();
  }
  return nullptr;
}

Result<std::unique_ptr<SimFabric>> SimFabric::Create(const Scenario& s, rte_mempool* pool) {
  using R = Result<std::unique_ptr<SimFabric>>;
  auto plan = PlanFabric(s);
  if (!plan.ok()) return plan.status();
  std::unique_ptr<SimFabric> f(new SimFabric());
  f->scenario_ = s;
  f->runner_ = std::make_unique<SimRunner>(pool);
  std::vector<uint32_t> sw_idx, host_idx;
  for (auto& sc : plan.value().switches) {
    sc.fib = FibLayout::kTree;  // KiB per switch instead of 32 MiB: large fabrics fit
    auto sw = SwitchNode::Create(sc);
    if (!sw.ok()) return sw.status();
    f->switches_.push_back(std::move(sw).value());
    sw_idx.push_back(f->runner_->AddNode(f->switches_.back().get()));
    f->switch_node_.push_back(sw_idx.back());
  }
  for (auto& hc : plan.value().hosts) {
    // In virtual time no node changes ICRC-covered bytes, so the NICs leave the ICRC to be
    // computed where a frame is captured (the pcap tap below) instead of on every frame: about
    // 12 % of a run (docs/experiments.md, speed section).
    hc.rnic.defer_icrc = true;
    f->hosts_.push_back(std::make_unique<SimHost>(hc));
    host_idx.push_back(f->runner_->AddNode(f->hosts_.back().get()));
    f->host_node_.push_back(host_idx.back());
  }
  f->plan_ = plan.value();
  for (const auto& l : plan.value().links) {
    auto node = [&](const FabricPlan::Endpoint& e) {
      return e.is_host ? host_idx[e.index] : sw_idx[e.index];
    };
    Status st = f->runner_->Connect(node(l.a), l.a.port, node(l.b), l.b.port, l.rate, l.delay);
    if (!st.ok()) return st;
  }
  if (s.sw.static_neighbors) {
    for (const auto& l : plan.value().links) {
      if (l.a.is_host == l.b.is_host) continue;
      const FabricPlan::Endpoint& h = l.a.is_host ? l.a : l.b;
      const FabricPlan::Endpoint& sw = l.a.is_host ? l.b : l.a;
      const auto& th = s.topology.hosts[h.index];
      const auto& ts = s.topology.switches[sw.index];
      f->switches_[sw.index]->AddStaticNeighbor(0, th.ip, th.mac, sw.port);
      f->hosts_[h.index]->AddStaticNeighbor(ts.gateway(), ts.mac);
    }
  }
  // Traffic.
  std::vector<uint16_t> next_ping_id(f->hosts_.size(), 1);
  uint32_t flow_id = 0;
  for (const auto& item : s.traffic) {
    if (item.kind == TrafficItem::Kind::kRdma || item.kind == TrafficItem::Kind::kWorkload ||
        item.kind == TrafficItem::Kind::kPingmesh) {
      continue;
    }
    const auto pairs = ExpandPairs(item, s.topology);
    for (auto [a, b] : pairs) {
      SimHost& src = *f->hosts_[a];
      const Ipv4 dst = s.topology.hosts[b].ip;
      switch (item.kind) {
        case TrafficItem::Kind::kTcpPingmesh:  // no kernel TCP in virtual time: ICMP probes
        case TrafficItem::Kind::kPing: {
          PingSpec p;
          p.id = next_ping_id[a]++;
          p.dst = dst;
          p.count = item.count;
          p.interval = item.interval;
          p.size = static_cast<uint16_t>(item.size);
          p.start = item.start;
          p.stop = s.duration;
          src.AddPing(p);
          break;
        }
        case TrafficItem::Kind::kRdma:
        case TrafficItem::Kind::kWorkload:
        case TrafficItem::Kind::kPingmesh:
          break;  // RdmaTraffic below
        case TrafficItem::Kind::kUdp:
        case TrafficItem::Kind::kIperf3: {
          const bool bulk = item.kind == TrafficItem::Kind::kIperf3;
          const int streams = bulk ? item.streams : 1;
          for (int k = 0; k < streams; ++k) {
            UdpFlowSpec u;
            u.flow_id = flow_id++;
            u.dst = dst;
            u.sport = static_cast<uint16_t>(49152 + (u.flow_id * 7919u) % 16384);
            u.dport = 5201;
            u.payload = static_cast<uint16_t>(bulk ? 1472 : item.size);
            u.rate =
                bulk ? static_cast<BitRate>(0.9 * static_cast<double>(src.config().rate) / streams)
                     : item.rate;
            u.start = item.start;
            u.count = bulk ? -1 : item.count;
            if (bulk || item.duration > 0) u.stop = item.start + item.duration;
            u.stop = std::min(u.stop, s.duration);  // sources stop at the scenario's end
            u.dscp = static_cast<uint8_t>(bulk ? 0 : item.dscp);
            u.ecn = !bulk && item.ecn;
            src.AddFlow(u);
            f->flow_info_.push_back(FlowInfo{a, b, item.kind});
          }
          if (bulk) {
            f->notes_.push_back("sim: iperf3 " + s.topology.hosts[a].name + "->" +
                                s.topology.hosts[b].name + " runs as " + std::to_string(streams) +
                                " built-in UDP bulk stream(s) of " +
                                FormatRate(static_cast<BitRate>(
                                    0.9 * static_cast<double>(src.config().rate) / streams)) +
                                " each (no kernel TCP in virtual time)");
          }
          break;
        }
      }
    }
  }
  {
    auto v = std::make_unique<FabricView>();
    SimFabric* fp = f.get();
    v->scenario = &fp->scenario_;
    v->plan = &fp->plan_;
    for (auto& sw : fp->switches_) v->switches.push_back(sw.get());
    for (auto& h : fp->hosts_) v->hosts.push_back(h.get());
    v->switch_node = fp->switch_node_;
    v->host_node = fp->host_node_;
    v->set_loss = [fp](uint32_t n, uint16_t p, const LossModel& l) {
      return fp->runner_->SetLoss(n, p, l);
    };
    v->peer = [fp](uint32_t n, uint16_t p, uint32_t* pn, uint16_t* pp) {
      return fp->runner_->Peer(n, p, pn, pp);
    };
    v->log = [fp](Time t, const std::string& what) { fp->Log(t, what); };
    fp->view_ = std::move(v);
    if (!s.faults.empty()) {
      fp->injector_ = std::make_unique<FaultInjector>(fp->view_.get());
      fp->runner_->AddNode(fp->injector_.get());
    }
    if (s.detect_deadlocks) {
      // Polls on a fixed grid (no wake-up from the switches' threads): SetThreads can run it
      // between windows.
      fp->detector_ = std::make_unique<DeadlockDetector>(fp->view_.get(), 100 * kUs, kMs,
                                                         /*sleep_when_clear=*/false);
      fp->runner_->AddNode(fp->detector_.get());
    }
  }
  {
    std::vector<SimHost*> hp;
    for (auto& h : f->hosts_) hp.push_back(h.get());
    auto rdma = RdmaTraffic::Build(s, plan.value(), hp);
    if (!rdma.ok()) return rdma.status();
    f->rdma_ = std::move(rdma).value();
  }
  for (size_t i = 0; i < s.topology.hosts.size(); ++i) {
    if (s.topology.hosts[i].kind == HostKind::kLinux && i == 0) {
      f->notes_.insert(f->notes_.begin(),
                       "sim: Linux namespace hosts run as built-in hosts (ICMP echo, UDP probes)");
    }
  }
  return f;
}

SimFabric::~SimFabric() = default;

SimHost* SimFabric::host(const std::string& name) {
  for (auto& h : hosts_) {
    if (h->name() == name) return h.get();
  }
  return nullptr;
}

void SimFabric::Log(Time t, const std::string& what) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%10.3f us  ", t / 1e6);
  fault_log_.push_back(buf + what);
}

Status SimFabric::OpenOutputs(const std::string& dir) {
  if (runner_->num_partitions() > 1) {
    return Status::Error("outputs: open them before SetThreads (the capture tap depends on it)");
  }
  for (const auto& cap : scenario_.output.capture) {
    const auto slash = cap.find("/p");
    SwitchNode* sw = this->sw(cap.substr(0, slash));
    if (sw == nullptr) return Status::Error("capture: no switch " + cap.substr(0, slash));
    const int port = std::atoi(cap.c_str() + slash + 2);
    if (port < 0 || port >= sw->num_ports())
      return Status::Error("capture: " + cap + ": no such port");
    uint32_t node = 0;
    for (size_t i = 0; i < switches_.size(); ++i) {
      if (switches_[i].get() == sw) node = switch_node_[i];
    }
    uint32_t pn = 0;
    uint16_t pp = 0;
    const bool linked = runner_->Peer(node, static_cast<uint16_t>(port), &pn, &pp);
    if (capture_.count({node, static_cast<uint16_t>(port)}) ||
        (linked && capture_.count({pn, pp}))) {
      return Status::Error("output.capture: " + cap +
                           " is already captured (a pcap holds both directions of a link: "
                           "capture one end)");
    }
    std::string file = cap;
    file[slash] = '_';
    auto w = PcapWriter::Open(dir + "/" + file + ".pcap");
    if (!w.ok()) return w.status();
    pcaps_.emplace_back(w.value());
    capture_[{node, static_cast<uint16_t>(port)}] = pcaps_.size() - 1;
    if (linked) capture_[{pn, pp}] = pcaps_.size() - 1;
  }
  if (!capture_.empty()) {
    runner_->SetArriveTap([this](Time now, uint32_t node, uint16_t port, const rte_mbuf* m) {
      auto it = capture_.find({node, port});
      if (it != capture_.end()) {
        // Captured bytes are real bytes: compute a deferred ICRC first (this also makes the
        // receiving NIC check it).
        FinalizeIcrc(const_cast<rte_mbuf*>(m));
        pcaps_[it->second]->Write(now, m);
      }
    });
  }
  if (scenario_.output.sample_interval > 0) {
    timeseries_ = std::make_unique<std::ofstream>(dir + "/timeseries.csv");
    if (!*timeseries_) return Status::Error(dir + "/timeseries.csv: cannot write");
    *timeseries_ << "time_us,switch,port,queue_bytes,lossless_queue_bytes,rx_paused_mask,"
                    "xoff_pg_mask,tx_bytes,pfc_xoff_sent,pfc_rx,ecn_marked,switch_drops,"
                    "reorder_queues_in_use,reorder_held_frames\n";
    next_sample_ = 0;
  }
  return Status();
}

void SimFabric::Sample(Time t) {
  char line[256];
  for (const auto& sw : switches_) {
    for (uint16_t p = 0; p < sw->num_ports(); ++p) {
      int64_t total = 0, lossless = 0;
      for (uint8_t q = 0; q < 8; ++q) {
        const int64_t b = sw->queue_bytes(p, q);
        total += b;
        if (sw->config().qos.lossless(q)) lossless += b;
      }
      uint64_t xoff = 0, rx = 0, ecn = 0;
      for (uint8_t k = 0; k < 8; ++k) {
        xoff += sw->pfc_tx_xoff(p, k);
        rx += sw->rx_pause(p).rx_frames(k);
        ecn += sw->ecn_marked(p, k);
      }
      std::snprintf(
          line, sizeof line, "%.3f,%s,%u,%lld,%lld,%u,%u,%llu,%llu,%llu,%llu,%llu,%u,%llu\n",
          t / 1e6, sw->name().c_str(), p, static_cast<long long>(total),
          static_cast<long long>(lossless), sw->paused_mask(p, t), sw->xoff_mask(p),
          static_cast<unsigned long long>(sw->tx_bytes(p)), static_cast<unsigned long long>(xoff),
          static_cast<unsigned long long>(rx), static_cast<unsigned long long>(ecn),
          static_cast<unsigned long long>(sw->total_drops()), sw->reorder_queues_in_use(p),
          static_cast<unsigned long long>(sw->reorder_held_frames(p)));
      *timeseries_ << line;
    }
  }
}

void SimFabric::RunUntil(Time t) {
  if (timeseries_) {
    while (next_sample_ <= t) {
      runner_->Run(next_sample_);
      Sample(next_sample_);
      next_sample_ += scenario_.output.sample_interval;
    }
  }
  runner_->Run(t);
}

Result<int> SimFabric::SetThreads(int threads, std::string* note) {
  if (threads < 0 || threads > 64) {
    return Result<int>::Error("threads: must be 1..64 or 0 (auto), got " + std::to_string(threads));
  }
  note->clear();
  const bool automatic = threads == 0;
  if (automatic) threads = 64;  // then capped at the ToRs and CPUs below, without a note
  if (runner_->num_partitions() > 1) return Result<int>::Error("threads: already set");
  if (threads == 1) return 1;
  // The switch each host hangs off (its ToR), from the plan's host links.
  std::vector<int> tor_of_host(hosts_.size(), -1);
  std::vector<bool> is_tor(switches_.size(), false);
  for (const auto& l : plan_.links) {
    if (l.a.is_host == l.b.is_host) continue;
    const FabricPlan::Endpoint& h = l.a.is_host ? l.a : l.b;
    const FabricPlan::Endpoint& sw = l.a.is_host ? l.b : l.a;
    tor_of_host[h.index] = sw.index;
    is_tor[sw.index] = true;
  }
  std::vector<int> tors, others;
  for (size_t i = 0; i < switches_.size(); ++i)
    (is_tor[i] ? tors : others).push_back(static_cast<int>(i));
  int parts = threads;
  if (parts > static_cast<int>(tors.size())) {
    parts = std::max<int>(static_cast<int>(tors.size()), 1);
    *note = std::to_string(threads) + " threads asked for, " + std::to_string(parts) +
            " used: at most one per ToR";
  }
  // More threads than CPUs would make every window wait for a descheduled thread.
  cpu_set_t cpus;
  if (sched_getaffinity(0, sizeof cpus, &cpus) == 0 && CPU_COUNT(&cpus) > 0 &&
      parts > CPU_COUNT(&cpus)) {
    parts = CPU_COUNT(&cpus);
    *note = std::to_string(threads) + " threads asked for, " + std::to_string(parts) +
            " used: at most one per CPU this process may run on";
  }
  if (automatic) note->clear();
  if (parts == 1) {
    if (tors.size() <= 1) *note = "runs on one thread: the fabric has one ToR";
    return 1;
  }
  // The fault timeline and the deadlock detector act on or read the whole fabric: they run
  // between windows, while every partition waits (SimRunner::kObserver).
  std::vector<uint32_t> part_of_node(
      switch_node_.size() + host_node_.size() + (injector_ ? 1 : 0) + (detector_ ? 1 : 0),
      SimRunner::kObserver);
  std::vector<uint32_t> part_of_switch(switches_.size(), 0);
  for (size_t k = 0; k < tors.size(); ++k)
    part_of_switch[tors[k]] = static_cast<uint32_t>(k * parts / tors.size());
  for (size_t k = 0; k < others.size(); ++k)
    part_of_switch[others[k]] = static_cast<uint32_t>(k * parts / others.size());
  for (size_t i = 0; i < switches_.size(); ++i) part_of_node[switch_node_[i]] = part_of_switch[i];
  for (size_t h = 0; h < hosts_.size(); ++h) {
    part_of_node[host_node_[h]] = tor_of_host[h] < 0 ? 0 : part_of_switch[tor_of_host[h]];
  }
  Status st = runner_->SetPartitions(part_of_node);
  if (!st.ok()) {
    *note = "runs on one thread: " + st.message();
    return 1;
  }
  if (!capture_.empty()) {
    // The tap runs on the receiving partition's thread: it copies the captured frames into that
    // partition's list, and the window-end hook (every partition waiting) writes them in the
    // order one thread would have: (time, node, port), the order of frame arrivals.
    capture_parts_.assign(parts, {});
    runner_->SetArriveTap([this, part_of = std::move(part_of_node)](
                              Time now, uint32_t node, uint16_t port, const rte_mbuf* m) {
      auto it = capture_.find({node, port});
      if (it == capture_.end()) return;
      FinalizeIcrc(const_cast<rte_mbuf*>(m));
      const auto* d = rte_pktmbuf_mtod(m, const uint8_t*);
      capture_parts_[part_of[node]].push_back(
          CapturedFrame{now, node, port, it->second, rte_pktmbuf_pkt_len(m),
                        std::vector<uint8_t>(d, d + rte_pktmbuf_data_len(m))});
    });
    runner_->SetWindowEndHook([this] { FlushCaptures(); });
  }
  return parts;
}

void SimFabric::FlushCaptures() {
  std::vector<CapturedFrame> all;
  for (auto& part : capture_parts_) {
    for (auto& c : part) all.push_back(std::move(c));
    part.clear();
  }
  std::sort(all.begin(), all.end(), [](const CapturedFrame& a, const CapturedFrame& b) {
    return std::tie(a.t, a.node, a.port) < std::tie(b.t, b.node, b.port);
  });
  for (const CapturedFrame& c : all) {
    pcaps_[c.pcap]->Write(c.t, c.bytes.data(), static_cast<uint32_t>(c.bytes.size()), c.len);
  }
}

size_t SimFabric::deadlocks() const { return detector_ ? detector_->deadlocks().size() : 0; }

Time SimFabric::deadlock_formed_at() const {
  return detector_ && !detector_->deadlocks().empty() ? detector_->deadlocks()[0].formed : -1;
}

nlohmann::json UdpFlowSummary(uint32_t id, const char* kind, const std::string& from,
                              const std::string& to, const SimHost& src, const SimHost& dst) {
  const SimHost::FlowState* fs = nullptr;
  for (const auto& f : src.flows()) {
    if (f.spec.flow_id == id) fs = &f;
  }
  auto it = dst.rx_flows().find(id);
  const uint64_t rx = it == dst.rx_flows().end() ? 0 : it->second.packets;
  nlohmann::json o = {{"id", id},
                      {"kind", kind},
                      {"from", from},
                      {"to", to},
                      {"sport", fs ? fs->spec.sport : 0},
                      {"sent", fs ? fs->sent : 0},
                      {"received", rx},
                      {"lost", (fs ? fs->sent : 0) - static_cast<int64_t>(rx)}};
  if (it != dst.rx_flows().end() && rx > 0) {
    const auto& r = it->second;
    const double span = static_cast<double>(r.last_rx - r.first_rx);
    o["out_of_order"] = r.out_of_order;
    o["goodput_gbps"] = span > 0 ? r.bytes * 8.0 / (span / 1e12) / 1e9 : 0.0;
    o["first_rx_us"] = r.first_rx / 1e6;
    o["last_rx_us"] = r.last_rx / 1e6;
    o["latency_min_us"] = r.lat_min / 1e6;
    o["latency_avg_us"] = r.lat_sum / rx / 1e6;
    o["latency_max_us"] = r.lat_max / 1e6;
  }
  return o;
}

nlohmann::json SimFabric::Summary() const {
  nlohmann::json j;
  j["scenario"] = scenario_.name;
  j["runner"] = "sim";
  j["seed"] = scenario_.seed;
  j["sim_time_ps"] = runner_->now();
  j["events_executed"] = runner_->events_executed();
  j["sim_events"] = {
      {"arrive", runner_->arrive_events()},      {"tx_free", runner_->tx_free_events()},
      {"timer", runner_->timer_events()},        {"max_pending", runner_->max_pending_events()},
      {"partitions", runner_->num_partitions()}, {"windows", runner_->windows()},
      {"lookahead_ps", runner_->lookahead()}};
  j["frames_delivered"] = runner_->frames_delivered();
  const Topology& t = scenario_.topology;
  nlohmann::json pings = nlohmann::json::array();
  for (size_t h = 0; h < hosts_.size(); ++h) {
    for (const auto& p : hosts_[h]->pings()) {
      std::vector<Time> rtt = p.rtts;
      std::string to;
      for (const auto& th : t.hosts) {
        if (th.ip == p.spec.dst) to = th.name;
      }
      const double loss =
          p.sent == 0 ? 0 : 100.0 * (p.sent - static_cast<double>(rtt.size())) / p.sent;
      pings.push_back({{"from", t.hosts[h].name},
                       {"to", to},
                       {"sent", p.sent},
                       {"received", rtt.size()},
                       {"loss_pct", loss},
                       {"rtt_min_us", Percentile(rtt, 1e-9) / 1e6},
                       {"rtt_p50_us", Percentile(rtt, 0.5) / 1e6},
                       {"rtt_p99_us", Percentile(rtt, 0.99) / 1e6},
                       {"rtt_max_us", Percentile(rtt, 1.0) / 1e6}});
      if (p.rtts.size() <= 10000) {  // samples for latency CDFs (rocefab report)
        nlohmann::json samples = nlohmann::json::array();
        for (Time x : p.rtts) samples.push_back(x / 1e6);
        pings.back()["rtt_us"] = samples;
      }
    }
  }
  j["pings"] = pings;
  nlohmann::json flows = nlohmann::json::array();
  uint32_t id = 0;
  for (const auto& fi : flow_info_) {
    flows.push_back(UdpFlowSummary(id, TrafficKindName(fi.kind), t.hosts[fi.from].name,
                                   t.hosts[fi.to].name, *hosts_[fi.from], *hosts_[fi.to]));
    ++id;
  }
  j["flows"] = flows;
  nlohmann::json sws = nlohmann::json::object();
  for (const auto& s : switches_) sws[s->name()] = s->Stats();
  j["switches"] = sws;
  nlohmann::json hs = nlohmann::json::object();
  for (const auto& h : hosts_) hs[h->name()] = h->Stats();
  j["hosts"] = hs;
  j["notes"] = notes_;
  if (!fault_log_.empty()) j["events"] = fault_log_;
  j["deadlocks"] = detector_ ? detector_->Stats() : nlohmann::json::array();
  nlohmann::json spread = nlohmann::json::object();
  for (const auto& sw : switches_) {
    spread[sw->name()] = {{"first_paused_at_us", sw->first_paused_at() / 1e6},
                          {"first_storm_at_us", sw->first_storm_at() / 1e6}};
  }
  j["pause_spread"] = spread;
  nlohmann::json nics = nlohmann::json::object();
  for (const auto& h : hosts_) {
    if (h->rnic().watchdog_fired_at() >= 0) {
      nics[h->name()] = {{"watchdog_fired_at_us", h->rnic().watchdog_fired_at() / 1e6}};
    }
  }
  j["nic_watchdogs"] = nics;
  if (rdma_ && !rdma_->empty()) {
    j["rdma"] = rdma_->PerftestResults();
    const auto w = rdma_->WorkloadSummary();
    if (!w.is_null()) j["workload"] = w;
    const auto pm = rdma_->PingmeshSummary(runner_->now());
    if (!pm.is_null()) j["pingmesh"] = pm;
  }
  return j;
}

}  // namespace rocefab

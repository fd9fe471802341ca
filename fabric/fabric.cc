#include "fabric/fabric.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <tuple>

#include "common/files.h"
#include "common/units.h"
#include "common/wire/pcap_writer.h"
#include "common/wire/pcapng_writer.h"
#include "common/wire/roce_headers.h"
#include "fabric/observers.h"
#include "fabric/results.h"

namespace rocefab {

namespace {

// Built-in UDP flows' ports: the source port spreads flows over ECMP paths the same way in both
// runners (a multiplicative hash of the flow id into the ephemeral range 49152..65535).
uint16_t UdpSourcePort(uint32_t flow_id) {
  return static_cast<uint16_t>(49152 + (flow_id * 7919u) % 16384);
}
constexpr uint16_t kUdpDestPort = 5201;

bool IsNicTraffic(TrafficItem::Kind k) {
  return k == TrafficItem::Kind::kRdma || k == TrafficItem::Kind::kWorkload ||
         k == TrafficItem::Kind::kPingmesh;
}

// What a switch or host of another process (FabricOptions::only_switch) is attached to: it is
// built so that the traffic set up on it matches its own process's, and never runs, so what
// it asks for (the timers the RDMA tests arm at construction) goes nowhere. No frames: nothing
// calls a node that is not on the runner.
class RemoteNodeEnv final : public NodeEnv {
 public:
  void WakeTx(uint16_t) override {}
  void ScheduleTimer(Time, uint64_t) override {}
  rte_mempool* pool() override { return nullptr; }
};

}  // namespace

Result<std::unique_ptr<Fabric>> Fabric::Build(const Scenario& s, Runner* runner,
                                              FabricOptions opt) {
  auto plan = PlanFabric(s);
  if (!plan.ok()) return plan.status();
  if (!opt.only_switch.empty() && s.topology.SwitchIndex(opt.only_switch) < 0) {
    return Status::Error("fabric: no switch " + opt.only_switch + " to run in this process");
  }
  if (!opt.only_switch.empty() && !s.faults.empty()) {
    return Status::Error(
        "fabric: faults act on the whole fabric from one timeline; a fabric "
        "of one switch (" +
        opt.only_switch + ") cannot run them");
  }
  std::unique_ptr<Fabric> f(new Fabric());
  f->scenario_ = s;
  f->opt_ = std::move(opt);
  f->runner_ = runner;
  f->plan_ = std::move(plan).value();
  Status st = f->BuildNodes();
  if (!st.ok()) return st;
  st = f->PlanBuiltinTraffic();
  if (!st.ok()) return st;
  std::vector<EmulatedHost*> hp;
  for (auto& h : f->hosts_) hp.push_back(h.get());
  auto rdma = RdmaTraffic::Build(s, f->plan_, hp);
  if (!rdma.ok()) return rdma.status();
  f->rdma_ = std::move(rdma).value();
  st = f->AddObservers();
  if (!st.ok()) return st;
  return f;
}

Fabric::~Fabric() = default;

bool Fabric::local_switch(size_t i) const {
  if (!opt_.only_switch.empty()) return plan_.switches[i].name == opt_.only_switch;
  return !owned_ || owned_(switch_node_[i]);
}

bool Fabric::local_host(size_t i) const {
  if (!opt_.only_switch.empty()) return scenario_.topology.hosts[i].tor == opt_.only_switch;
  return !owned_ || host_node_[i] == UINT32_MAX || owned_(host_node_[i]);
}

void Fabric::SetOwnership(std::function<bool(uint32_t)> owned, Ranks* ranks) {
  owned_ = owned;
  view_->owned = std::move(owned);
  view_->ranks = ranks;
}

Status Fabric::BuildNodes() {
  const Topology& t = scenario_.topology;
  if (!opt_.only_switch.empty()) remote_env_ = std::make_unique<RemoteNodeEnv>();
  for (size_t i = 0; i < plan_.switches.size(); ++i) {
    SwitchConfig sc = plan_.switches[i];
    sc.fib =
        local_switch(i) ? opt_.fib : FibLayout::kPrefixHash;  // another process's: never looked up
    auto sw = SwitchNode::Create(sc);
    if (!sw.ok()) return sw.status();
    switches_.push_back(std::move(sw).value());
    switch_node_.push_back(local_switch(i) ? runner_->AddNode(switches_.back().get()) : UINT32_MAX);
    if (!local_switch(i)) switches_.back()->Attach(remote_env_.get());
  }
  for (size_t i = 0; i < plan_.hosts.size(); ++i) {
    if (t.hosts[i].kind != HostKind::kBuiltin && !opt_.linux_hosts_as_nodes) {
      hosts_.push_back(nullptr);
      host_node_.push_back(UINT32_MAX);
      continue;
    }
    EmulatedHostConfig hc = plan_.hosts[i];
    hc.rnic.defer_icrc = opt_.defer_icrc;
    hosts_.push_back(std::make_unique<EmulatedHost>(hc));
    host_node_.push_back(local_host(i) ? runner_->AddNode(hosts_.back().get()) : UINT32_MAX);
    if (!local_host(i)) hosts_.back()->Attach(remote_env_.get());
  }
  if (opt_.linux_hosts_as_nodes) {
    for (const auto& h : t.hosts) {
      if (h.kind == HostKind::kLinux) {
        notes_.push_back(opt_.runner +
                         ": Linux namespace hosts run as built-in hosts (ICMP echo, UDP probes)");
        break;
      }
    }
    for (const auto& h : t.hosts) {
      if (h.kind == HostKind::kExternal) {
        notes_.push_back(opt_.runner + ": external host " + h.name + " (" + h.device +
                         ") is a built-in host here (it answers ARP and ping)");
      }
    }
  }
  runner_->SetWireModel(scenario_.compat->wire());
  Status st = BindLinks();
  if (!st.ok()) return st;
  if (scenario_.sw.static_neighbors) {
    for (const auto& l : plan_.links) {
      if (l.a.is_host == l.b.is_host) continue;
      const FabricPlan::Endpoint& h = l.a.is_host ? l.a : l.b;
      const FabricPlan::Endpoint& sw = l.a.is_host ? l.b : l.a;
      const auto& th = t.hosts[h.index];
      const auto& ts = t.switches[sw.index];
      switches_[sw.index]->AddStaticNeighbor(0, th.ip, th.mac, sw.port);
      if (hosts_[h.index]) hosts_[h.index]->AddStaticNeighbor(ts.gateway(), ts.mac);
    }
    // Hosts under one ToR share its subnet and talk directly: each knows the others' MACs too
    // (without them the first frame to a neighbour waited for an ARP round trip).
    for (size_t a = 0; a < t.hosts.size(); ++a) {
      if (!hosts_[a]) continue;
      for (size_t b = 0; b < t.hosts.size(); ++b) {
        if (a != b && t.hosts[b].tor == t.hosts[a].tor)
          hosts_[a]->AddStaticNeighbor(t.hosts[b].ip, t.hosts[b].mac);
      }
    }
    if (!opt_.linux_hosts_as_nodes) {
      for (const auto& h : t.hosts) {
        if (h.kind == HostKind::kLinux) {
          notes_.push_back(opt_.runner +
                           ": \"neighbors\": \"static\" fills the switches' tables; namespace "
                           "hosts resolve their gateway by ARP");
          break;
        }
      }
    }
  }
  return Status();
}

// Every plan link with an end in this process: in-process links on the runner, a namespace
// host's through attach_host, one to another process's switch through attach_remote.
Status Fabric::BindLinks() {
  const Topology& t = scenario_.topology;
  auto local = [&](const FabricPlan::Endpoint& e) {
    return e.is_host ? local_host(e.index) : local_switch(e.index);
  };
  for (size_t li = 0; li < plan_.links.size(); ++li) {
    const auto& l = plan_.links[li];
    auto node = [&](const FabricPlan::Endpoint& e) {
      return e.is_host ? host_node_[e.index] : switch_node_[e.index];
    };
    const FabricPlan::Endpoint* sw_end = l.a.is_host ? &l.b : &l.a;
    const FabricPlan::Endpoint* other = l.a.is_host ? &l.a : &l.b;
    Status st;
    if (!local(l.a) && !local(l.b)) continue;  // both ends in other processes
    if (local(l.a) != local(l.b)) {            // a host is with its ToR: a switch-switch link
      const FabricPlan::Endpoint& mine = local(l.a) ? l.a : l.b;
      if (!opt_.attach_remote) {
        return Status::Error("fabric: link " + plan_.switches[l.a.index].name + "-" +
                             plan_.switches[l.b.index].name +
                             " leaves this process and the runner binds no remote ports");
      }
      st = opt_.attach_remote(li, switch_node_[mine.index], mine.port, l.rate);
    } else if (other->is_host && host_node_[other->index] == UINT32_MAX) {
      if (!opt_.attach_host) {
        return Status::Error("fabric: host " + t.hosts[other->index].name +
                             " is not a node and the runner binds no external ports");
      }
      st = opt_.attach_host(other->index, switch_node_[sw_end->index], sw_end->port, l.rate);
    } else {
      st = runner_->Connect(node(l.a), l.a.port, node(l.b), l.b.port, l.rate, l.delay);
    }
    if (!st.ok()) return st;
  }
  return Status();
}

Status Fabric::PlanBuiltinTraffic() {
  const Scenario& s = scenario_;
  const Topology& t = s.topology;
  std::vector<uint16_t> next_ping_id(hosts_.size(), 1);
  uint32_t flow_id = 0;
  for (const auto& item : s.traffic) {
    if (IsNicTraffic(item.kind())) continue;  // RdmaTraffic
    bool noted = false;
    for (auto [a, b] : ExpandPairs(item, t)) {
      EmulatedHost* src = hosts_[a].get();
      if (src == nullptr) continue;  // a namespace host: its tools run it (live)
      const Ipv4 dst = t.hosts[b].ip;
      switch (item.kind()) {
        case TrafficItem::Kind::kTcpPingmesh:  // no kernel TCP on an emulated host
        case TrafficItem::Kind::kPing: {
          PingSpec p;
          p.id = next_ping_id[a]++;
          p.dst = dst;
          if (item.kind() == TrafficItem::Kind::kPing) {
            p.count = item.ping().count;
            p.interval = item.ping().interval;
            p.size = static_cast<uint16_t>(item.ping().size);
          } else {  // TCP Pingmesh probes, as ICMP echoes
            p.count = item.tcp_pingmesh().count;
            p.interval = item.tcp_pingmesh().interval;
            p.size = static_cast<uint16_t>(item.tcp_pingmesh().size);
          }
          p.start = item.start;
          p.stop = s.duration;  // no probe starts after the scenario's duration
          src->AddPing(p);
          if (item.kind() == TrafficItem::Kind::kTcpPingmesh)
            tcp_pingmesh_pings_.insert({static_cast<size_t>(a), p.id});
          if (item.kind() == TrafficItem::Kind::kTcpPingmesh && !noted) {
            notes_.push_back(opt_.runner + ": tcp_pingmesh from emulated hosts runs as ICMP " +
                             "echo probes (no kernel TCP)");
            noted = true;
          }
          break;
        }
        case TrafficItem::Kind::kUdp:
        case TrafficItem::Kind::kIperf3: {
          const bool bulk = item.kind() == TrafficItem::Kind::kIperf3;
          // iperf3 runs as UDP bulk streams at 90 % of the link; a udp item as configured.
          const UdpTraffic udp = bulk ? UdpTraffic{} : item.udp();
          const int streams = bulk ? item.iperf3().streams : 1;
          const Time duration = bulk ? item.iperf3().duration : udp.duration;
          const BitRate bulk_rate = src->config().rate.Scaled(0.9 / streams);
          for (int k = 0; k < streams; ++k) {
            UdpFlowSpec u;
            u.flow_id = flow_id++;
            u.dst = dst;
            u.sport = UdpSourcePort(u.flow_id);
            u.dport = kUdpDestPort;
            u.payload = static_cast<uint16_t>(bulk ? 1472 : udp.size);
            u.rate = bulk ? bulk_rate : udp.rate;
            u.start = item.start;
            u.count = bulk ? -1 : udp.count;
            if (bulk || duration > 0) u.stop = item.start + duration;
            u.stop = std::min(u.stop, s.duration);  // sources stop at the scenario's end
            u.dscp = static_cast<uint8_t>(bulk ? 0 : udp.dscp);
            u.ecn = !bulk && udp.ecn;
            src->AddFlow(u);
            flow_info_.push_back(FlowInfo{a, b, item.kind()});
          }
          if (bulk) {
            notes_.push_back(opt_.runner + ": iperf3 " + t.hosts[a].name + "->" + t.hosts[b].name +
                             " runs as " + std::to_string(streams) +
                             " built-in UDP bulk stream(s) of " + FormatRate(bulk_rate) +
                             " each (no kernel TCP on an emulated host)");
          }
          break;
        }
        case TrafficItem::Kind::kRdma:
        case TrafficItem::Kind::kWorkload:
        case TrafficItem::Kind::kPingmesh:
          break;
      }
    }
  }
  return Status();
}

Status Fabric::AddObservers() {
  auto v = std::make_unique<FabricView>();
  v->scenario = &scenario_;
  v->plan = &plan_;
  for (auto& sw : switches_) v->switches.push_back(sw.get());
  for (auto& h : hosts_) v->hosts.push_back(h.get());
  v->switch_node = switch_node_;
  v->host_node = host_node_;
  Runner* r = runner_;
  v->set_loss = [r](uint32_t n, uint16_t p, const LossModel& l) { return r->SetLoss(n, p, l); };
  v->peer = [r](uint32_t n, uint16_t p, uint32_t* pn, uint16_t* pp) {
    return r->Peer(n, p, pn, pp);
  };
  v->log = [this](Time t, const std::string& what) { Log(t, what); };
  view_ = std::move(v);
  for (const auto& f : scenario_.faults) {
    if ((f.kind == Fault::Kind::kNicStall || f.kind == Fault::Kind::kDeadHost) &&
        view_->host(f.host) == nullptr && scenario_.topology.HostIndex(f.host) >= 0) {
      return Status::Error("faults: " + f.host +
                           " is a Linux namespace or external host; nic_stall and dead_host need "
                           "an emulated NIC (host kind \"builtin\")");
    }
  }
  NoteLateFaults();
  if (!scenario_.faults.empty()) {
    injector_ = std::make_unique<FaultInjector>(view_.get());
    observer_nodes_.push_back(runner_->AddNode(injector_.get()));
  }
  if (scenario_.detect_deadlocks && opt_.only_switch.empty()) {  // needs every switch's queues
    // Polls on a fixed grid in both runners: its times are known in advance, so a partitioned
    // sim runs it between windows, and the two runners detect on the same schedule.
    detector_ = std::make_unique<DeadlockDetector>(view_.get(), 100 * kUs, kMs,
                                                   /*sleep_when_clear=*/false);
    observer_nodes_.push_back(runner_->AddNode(detector_.get()));
  }
  if (opt_.publish_done) {
    done_watcher_ = std::make_unique<DoneWatcher>([this] { return rdma_->done(); }, kMs);
    observer_nodes_.push_back(runner_->AddNode(done_watcher_.get()));
  }
  return Status();
}

void Fabric::NoteLateFaults() {
  // Both runners stop the fabric's own traffic at the duration and end kDrain later.
  const Time end = scenario_.duration + kDrain;
  for (size_t i = 0; i < scenario_.faults.size(); ++i) {
    const Time at = scenario_.faults[i].at;
    if (at < scenario_.duration) continue;
    const std::string what = "faults[" + std::to_string(i) + "] at " + FormatDuration(at);
    if (at >= end) {
      notes_.push_back(what + " never happens: the run ends at " + FormatDuration(end) +
                       " (the duration " + FormatDuration(scenario_.duration) + " plus " +
                       FormatDuration(kDrain) + " of drain); raise \"duration\" or --duration");
    } else {
      notes_.push_back(what + " comes after the duration (" + FormatDuration(scenario_.duration) +
                       "), when the emulated hosts have stopped sending: it meets only the drain");
    }
  }
}

bool Fabric::traffic_done() const { return done_watcher_ ? done_watcher_->done() : rdma_->done(); }

SwitchNode* Fabric::sw(const std::string& name) {
  for (auto& s : switches_) {
    if (s->name() == name) return s.get();
  }
  return nullptr;
}

EmulatedHost* Fabric::host(const std::string& name) {
  const int i = scenario_.topology.HostIndex(name);
  return i < 0 ? nullptr : hosts_[i].get();
}

void Fabric::Log(Time t, const std::string& what) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%10.3f us  ", t / 1e6);
  fault_log_.push_back(buf + what);
}

size_t Fabric::num_tors() const {
  std::vector<bool> is_tor(num_switches(), false);
  for (const auto& l : plan_.links) {
    if (l.a.is_host != l.b.is_host) is_tor[(l.a.is_host ? l.b : l.a).index] = true;
  }
  return static_cast<size_t>(std::count(is_tor.begin(), is_tor.end(), true));
}

std::vector<uint32_t> Fabric::PlanPartitions(int parts, uint32_t observer, size_t num_nodes,
                                             int* used) const {
  // The switch each host hangs off (its ToR), and each switch's switch neighbours (one entry
  // per link), from the plan.
  std::vector<int> tor_of_host(num_hosts(), -1);
  std::vector<bool> is_tor(num_switches(), false);
  std::vector<std::vector<int>> peers(num_switches());
  for (const auto& l : plan_.links) {
    if (l.a.is_host && l.b.is_host) continue;
    if (l.a.is_host != l.b.is_host) {
      const FabricPlan::Endpoint& h = l.a.is_host ? l.a : l.b;
      const FabricPlan::Endpoint& sw = l.a.is_host ? l.b : l.a;
      tor_of_host[h.index] = sw.index;
      is_tor[sw.index] = true;
      continue;
    }
    peers[l.a.index].push_back(l.b.index);
    peers[l.b.index].push_back(l.a.index);
  }
  std::vector<int> tors;
  for (size_t i = 0; i < num_switches(); ++i)
    if (is_tor[i]) tors.push_back(static_cast<int>(i));
  parts = std::clamp(parts, 1, std::max<int>(static_cast<int>(tors.size()), 1));
  *used = parts;
  std::vector<uint32_t> part_of_switch(num_switches(), 0);
  for (size_t k = 0; k < tors.size(); ++k)
    part_of_switch[tors[k]] = static_cast<uint32_t>(k * parts / tors.size());
  PlaceUpperTiers(parts, tors, peers, &part_of_switch);
  std::vector<uint32_t> part_of_node(num_nodes, observer);
  for (size_t i = 0; i < num_switches(); ++i) part_of_node[switch_node_[i]] = part_of_switch[i];
  for (size_t h = 0; h < num_hosts(); ++h) {
    if (host_node_[h] == UINT32_MAX) continue;  // a namespace host: not a node
    part_of_node[host_node_[h]] = tor_of_host[h] < 0 ? 0 : part_of_switch[tor_of_host[h]];
  }
  return part_of_node;
}

void Fabric::PlaceUpperTiers(int parts, const std::vector<int>& tors,
                             const std::vector<std::vector<int>>& peers,
                             std::vector<uint32_t>* part_of_switch) const {
  // Tier = hops from the nearest ToR (breadth-first over switch links): leaves 1, spines 2 in
  // a 3-tier Clos. Switches no ToR reaches come last, dealt out in order.
  constexpr int kUnreached = std::numeric_limits<int>::max();
  std::vector<int> tier(num_switches(), kUnreached);
  std::vector<int> frontier = tors;
  for (int t : tors) tier[t] = 0;
  std::vector<std::vector<int>> by_tier;
  while (!frontier.empty()) {
    std::vector<int> next;
    for (int s : frontier) {
      for (int q : peers[s]) {
        if (tier[q] != kUnreached) continue;
        tier[q] = tier[s] + 1;
        next.push_back(q);
      }
    }
    std::sort(next.begin(), next.end());
    if (!next.empty()) by_tier.push_back(next);
    frontier = std::move(next);
  }
  std::vector<int> unreached;
  for (size_t i = 0; i < num_switches(); ++i)
    if (tier[i] == kUnreached) unreached.push_back(static_cast<int>(i));
  if (!unreached.empty()) by_tier.push_back(unreached);
  // Each switch of a tier goes where most of its links to the tier below go (a leaf to its
  // podset's ToRs), so those links stay inside a partition; a partition takes at most its
  // share of the tier, and a switch with no majority (a 2-tier spine sees every ToR) goes to
  // the partition with the fewest of its tier so far, the lowest first.
  for (const std::vector<int>& level : by_tier) {
    const size_t cap = (level.size() + parts - 1) / parts;
    std::vector<size_t> placed(parts, 0);
    std::vector<size_t> votes(parts);
    for (int s : level) {
      std::fill(votes.begin(), votes.end(), 0);
      for (int q : peers[s]) {
        if (tier[s] != kUnreached && tier[q] < tier[s]) ++votes[(*part_of_switch)[q]];
      }
      int best = -1;
      for (int p = 0; p < parts; ++p) {
        if (placed[p] >= cap) continue;
        if (best < 0 || votes[p] > votes[best] ||
            (votes[p] == votes[best] && placed[p] < placed[best])) {
          best = p;
        }
      }
      (*part_of_switch)[s] = static_cast<uint32_t>(best);
      ++placed[best];
    }
  }
}

size_t Fabric::deadlocks() const { return detector_ ? detector_->deadlocks().size() : 0; }

Time Fabric::deadlock_formed_at() const {
  return detector_ && !detector_->deadlocks().empty() ? detector_->deadlocks()[0].formed : -1;
}

namespace {
// A CSV output: kept in memory until CloseOutput when `buffered` (no file I/O on a live poll
// thread), else the file itself.
Status OpenOutput(const std::string& path, bool buffered, std::unique_ptr<std::ostream>* out) {
  if (buffered) {
    *out = std::make_unique<std::ostringstream>();
    return Status();
  }
  if (Status st = RefuseSymlink(path); !st.ok()) return st;
  auto f = std::make_unique<std::ofstream>(path);
  if (!*f) return Status::Error(path + ": cannot write");
  *out = std::move(f);
  return Status();
}
}  // namespace

Status Fabric::OpenCaptures(const std::string& dir) {
  const bool pcapng = scenario_.output.capture_format == CaptureFormat::kPcapng;
  for (const auto& cap : scenario_.output.capture) {
    const auto slash = cap.find("/p");
    SwitchNode* sw = this->sw(cap.substr(0, slash));
    if (sw == nullptr) return Status::Error("capture: no switch " + cap.substr(0, slash));
    const int port = std::atoi(cap.c_str() + slash + 2);
    if (port < 0 || port >= sw->num_ports())
      return Status::Error("capture: " + cap + ": no such port");
    uint32_t node = 0;
    size_t sw_index = 0;
    for (size_t i = 0; i < switches_.size(); ++i) {
      if (switches_[i].get() == sw) node = switch_node_[i], sw_index = i;
    }
    if (node == UINT32_MAX) continue;  // a switch of another process: that one captures it
    uint32_t pn = 0;
    uint16_t pp = 0;
    const bool linked = runner_->Peer(node, static_cast<uint16_t>(port), &pn, &pp);
    if (capture_.count({node, static_cast<uint16_t>(port)}) ||
        (linked && capture_.count({pn, pp}))) {
      return Status::Error("output.capture: " + cap +
                           " is already captured (a capture holds both directions of a link: "
                           "capture one end)");
    }
    CaptureTarget in{0, 0, CaptureDirection::kInbound};
    if (pcapng) {
      if (capture_files_.empty()) {
        auto w = PcapngWriter::Open(dir + "/capture.pcapng", "rocefab");
        if (!w.ok()) return w.status();
        capture_files_.emplace_back(w.value());
      }
      // The peer's name from the plan's link at this port.
      std::string peer = "nothing";
      for (const auto& l : plan_.links) {
        for (const auto* e : {&l.a, &l.b}) {
          if (!e->is_host && static_cast<size_t>(e->index) == sw_index && e->port == port) {
            const auto& o = e == &l.a ? l.b : l.a;
            const auto& t = scenario_.topology;
            peer = o.is_host ? t.hosts[static_cast<size_t>(o.index)].name
                             : t.switches[static_cast<size_t>(o.index)].name + "/p" +
                                   std::to_string(o.port);
          }
        }
      }
      auto* w = static_cast<PcapngWriter*>(capture_files_[0].get());
      in.interface = w->AddInterface(
          cap,
          "link " + cap + " <-> " + peer + ": both directions, inbound = received by " + sw->name(),
          sw->config().ports[static_cast<size_t>(port)].rate.bps());
    } else {
      std::string file = cap;
      file[slash] = '_';
      auto w = PcapWriter::Open(dir + "/" + file + ".pcap");
      if (!w.ok()) return w.status();
      capture_files_.emplace_back(w.value());
      in.file = static_cast<uint32_t>(capture_files_.size() - 1);
    }
    capture_[{node, static_cast<uint16_t>(port)}] = in;
    // What the switch sends: arrivals at its peer, or, when the peer is not a node of this
    // runner (live: a namespace host, an external device, another process), departures.
    const CaptureTarget out{in.file, in.interface, CaptureDirection::kOutbound};
    if (linked) {
      capture_[{pn, pp}] = out;
    } else {
      capture_depart_[{node, static_cast<uint16_t>(port)}] = out;
    }
  }
  // Writes the frames of (node, port) in `targets`. Captured bytes are real bytes: a deferred
  // ICRC is computed first (which also makes a receiving NIC check it).
  auto tap = [this](const std::map<std::pair<uint32_t, uint16_t>, CaptureTarget>* targets) {
    return [this, targets](Time t, uint32_t node, uint16_t port, const rte_mbuf* m) {
      auto it = targets->find({node, port});
      if (it == targets->end()) return;
      FinalizeIcrc(const_cast<rte_mbuf*>(m));
      WriteCaptured(it->second, t, rte_pktmbuf_mtod(m, const uint8_t*), rte_pktmbuf_data_len(m),
                    rte_pktmbuf_pkt_len(m));
    };
  };
  if (!capture_.empty()) runner_->SetArriveTap(tap(&capture_));
  if (!capture_depart_.empty()) runner_->SetDepartTap(tap(&capture_depart_));
  return Status();
}

std::string CaptureFileList(const OutputOptions& o) {
  if (o.capture.empty()) return "";
  if (o.capture_format == CaptureFormat::kPcapng) return ",capture.pcapng";
  std::string list;
  for (std::string cap : o.capture) {
    cap[cap.find("/p")] = '_';
    list += "," + cap + ".pcap";
  }
  return list;
}

Status Fabric::OpenOutputs(const std::string& dir, bool buffer_timeseries) {
  if (Status st = OpenCaptures(dir); !st.ok()) return st;
  if (scenario_.output.sample_interval > 0) {
    timeseries_path_ = dir + "/timeseries.csv";
    Status st = OpenOutput(timeseries_path_, buffer_timeseries, &timeseries_);
    if (!st.ok()) return st;
    *timeseries_ << TimeSeriesSampler::kHeader;
    sampler_ = std::make_unique<TimeSeriesSampler>(view_.get(), scenario_.output.sample_interval,
                                                   timeseries_.get());
    observer_nodes_.push_back(runner_->AddNode(sampler_.get()));
  }
  if (!scenario_.output.dcqcn_trace.empty()) {
    dcqcn_path_ = dir + "/dcqcn.csv";
    Status st = OpenOutput(dcqcn_path_, buffer_timeseries, &dcqcn_out_);
    if (!st.ok()) return st;
    *dcqcn_out_ << DcqcnSampler::kHeader;
    std::vector<int> hosts;
    for (const auto& h : scenario_.output.dcqcn_trace) {
      hosts.push_back(scenario_.topology.HostIndex(h));
    }
    dcqcn_sampler_ = std::make_unique<DcqcnSampler>(
        view_.get(), std::move(hosts), scenario_.output.sample_interval, dcqcn_out_.get());
    observer_nodes_.push_back(runner_->AddNode(dcqcn_sampler_.get()));
  }
  return Status();
}

namespace {
// Writes a buffered output stream to its file, or flushes a file stream.
Status CloseOutput(std::ostream* out, const std::string& path) {
  if (out == nullptr) return Status();
  if (auto* buf = dynamic_cast<std::ostringstream*>(out)) {
    if (Status st = RefuseSymlink(path); !st.ok()) return st;
    std::ofstream f(path);
    f << buf->str();
    if (!f) return Status::Error(path + ": cannot write");
  } else {
    out->flush();
    if (!*out) return Status::Error(path + ": write failed");
  }
  return Status();
}
}  // namespace

Status Fabric::CloseOutputs() {
  for (auto& f : capture_files_) {
    if (Status st = f->Flush(); !st.ok()) return st;
  }
  Status st = CloseOutput(timeseries_.get(), timeseries_path_);
  if (!st.ok()) return st;
  return CloseOutput(dcqcn_out_.get(), dcqcn_path_);
}

void Fabric::CaptureByPartition(std::vector<uint32_t> part_of_node, size_t parts) {
  if (capture_.empty()) return;
  // The tap runs on the receiving partition's thread: it copies the captured frames into that
  // partition's list, and FlushCaptures (every partition waiting) writes them in the order one
  // thread would have: (time, node, port), the order of frame arrivals.
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
}

void Fabric::FlushCaptures() {
  std::vector<CapturedFrame> all;
  for (auto& part : capture_parts_) {
    for (auto& c : part) all.push_back(std::move(c));
    part.clear();
  }
  std::sort(all.begin(), all.end(), [](const CapturedFrame& a, const CapturedFrame& b) {
    return std::tie(a.t, a.node, a.port) < std::tie(b.t, b.node, b.port);
  });
  for (const CapturedFrame& c : all) {
    WriteCaptured(c.to, c.t, c.bytes.data(), static_cast<uint32_t>(c.bytes.size()), c.len);
  }
}

nlohmann::json UdpFlowSummary(uint32_t id, const char* kind, const std::string& from,
                              const std::string& to, const EmulatedHost& src,
                              const EmulatedHost* dst) {
  const EmulatedHost::FlowState* fs = nullptr;
  for (const auto& f : src.flows()) {
    if (f.spec.flow_id == id) fs = &f;
  }
  const int64_t sent = fs ? fs->sent : 0;
  nlohmann::json o = {{"id", id},
                      {"kind", kind},
                      {"from", from},
                      {"to", to},
                      {"sport", fs ? fs->spec.sport : 0},
                      {"sent", sent},
                      {"received", nullptr},
                      {"lost", nullptr}};
  if (dst == nullptr) return o;  // a namespace host: its kernel does not count for us
  auto it = dst->rx_flows().find(id);
  const uint64_t rx = it == dst->rx_flows().end() ? 0 : it->second.packets;
  o["received"] = rx;
  o["lost"] = sent - static_cast<int64_t>(rx);
  if (it != dst->rx_flows().end() && rx > 0) {
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

const std::vector<std::string>& Fabric::RunnerSpecificKeys(const std::string& runner) {
  static const std::vector<std::string> kSim = {"sim_time_ps", "events_executed", "sim_events",
                                                "frames_delivered"};
  static const std::vector<std::string> kLive = {
      "wall_time_s",  "poll_iterations", "idle_sleeps",          "port_driver",
      "timed_out",    "interrupted",     "leftover_namespaces",  "iperf3",
      "tcp_pingmesh", "host_ports",      "lost_outside_switches"};
  static const std::vector<std::string> kNone;
  return runner == "sim" ? kSim : runner == "live" ? kLive : kNone;
}

// The built-in UDP flows with an end in this process (summary `flows`): a flow whose sender is
// in another process (only_switch) is reported with its receiver's counts, marked
// receiver_side, for MergeSwitchSummaries to join.
nlohmann::json Fabric::FlowsJson() const {
  const Topology& t = scenario_.topology;
  nlohmann::json flows = nlohmann::json::array();
  for (uint32_t id = 0; id < flow_info_.size(); ++id) {
    const FlowInfo& fi = flow_info_[id];
    const bool from_local = local_host(static_cast<size_t>(fi.from));
    const EmulatedHost* dst =
        local_host(static_cast<size_t>(fi.to)) ? hosts_[fi.to].get() : nullptr;
    if (!from_local && dst == nullptr) continue;
    nlohmann::json f = UdpFlowSummary(id, TrafficKindName(fi.kind), t.hosts[fi.from].name,
                                      t.hosts[fi.to].name, *hosts_[fi.from], dst);
    if (!from_local) {
      // Its sender is in another process (only_switch): what this one received, for the merge
      // (MergeSwitchSummaries) to join to the sender's entry.
      f["sent"] = nullptr;
      f["lost"] = nullptr;
      f["receiver_side"] = true;
    }
    flows.push_back(std::move(f));
  }
  return flows;
}

nlohmann::json ConservationBlock(const std::vector<std::pair<std::string, FrameBalance>>& nodes) {
  FrameBalance sum;
  nlohmann::json unbalanced = nlohmann::json::array();
  for (const auto& [name, b] : nodes) {
    sum += b;
    if (b.imbalance() != 0) {
      nlohmann::json u = b;
      u["node"] = name;
      u["imbalance"] = b.imbalance();
      unbalanced.push_back(std::move(u));
    }
  }
  nlohmann::json j = sum;
  j["nodes"] = nodes.size();
  j["balanced"] = unbalanced.empty();
  j["unbalanced"] = std::move(unbalanced);
  return j;
}

std::string ConservationError(const nlohmann::json& summary) {
  const auto c = summary.find("conservation");
  if (c == summary.end() || !c->is_object() || c->value("balanced", true)) return "";
  std::string out;
  for (const auto& u : (*c)["unbalanced"]) {
    const int64_t n = u["imbalance"].get<int64_t>();
    const auto v = [&u](const char* k) { return std::to_string(u[k].get<uint64_t>()); };
    out += (out.empty() ? "" : "; ") + u["node"].get<std::string>() + " " +
           (n > 0 ? "lost " : "duplicated ") + std::to_string(n > 0 ? n : -n) +
           " frame(s) without a counter (received " + v("received") + " + created " + v("created") +
           " != transmitted " + v("transmitted") + " + dropped " + v("dropped") + " + consumed " +
           v("consumed") + " + held " + v("held") + ")";
  }
  return "frame conservation violated: " + out;
}

nlohmann::json Fabric::ConservationJson() const {
  std::vector<std::pair<std::string, FrameBalance>> nodes;
  for (size_t i = 0; i < switches_.size(); ++i) {
    if (!local_switch(i)) continue;
    if (auto b = switches_[i]->frame_balance()) nodes.emplace_back(switches_[i]->name(), *b);
  }
  for (size_t i = 0; i < hosts_.size(); ++i) {
    if (!hosts_[i] || !local_host(i)) continue;
    if (auto b = hosts_[i]->frame_balance()) nodes.emplace_back(hosts_[i]->name(), *b);
  }
  return ConservationBlock(nodes);
}

nlohmann::json Fabric::Summary() const {
  nlohmann::json j;
  j["scenario"] = scenario_.name;
  j["runner"] = opt_.runner;
  j["seed"] = scenario_.seed;
  for (const char* r : {"sim", "live"}) {
    for (const auto& k : RunnerSpecificKeys(r)) j[k] = nullptr;
  }
  j["timing"] = nullptr;
  const Topology& t = scenario_.topology;
  nlohmann::json pings = nlohmann::json::array();
  for (size_t h = 0; h < hosts_.size(); ++h) {
    if (!hosts_[h] || !local_host(h)) continue;
    for (const auto& p : hosts_[h]->pings()) {
      std::string to;
      for (const auto& th : t.hosts) {
        if (th.ip == p.spec.dst) to = th.name;
      }
      pings.push_back(PingJson(t.hosts[h].name, to, p.sent, p.rtts));
    }
  }
  j["pings"] = pings;
  j["flows"] = FlowsJson();
  nlohmann::json sws = nlohmann::json::object();
  for (size_t i = 0; i < switches_.size(); ++i) {
    if (local_switch(i)) sws[switches_[i]->name()] = switches_[i]->Stats();
  }
  // What each switch port faces: a host's name or the peer switch's port ("spine0/p1").
  auto name_of = [&](const FabricPlan::Endpoint& e) {
    return e.is_host ? plan_.hosts[e.index].name : plan_.switches[e.index].ports[e.port].name;
  };
  for (const auto& l : plan_.links) {
    for (const auto* e : {&l.a, &l.b}) {
      if (e->is_host || !local_switch(static_cast<size_t>(e->index))) continue;
      auto& ports = sws[plan_.switches[e->index].name]["ports"];
      if (e->port < ports.size()) ports[e->port]["peer"] = name_of(e == &l.a ? l.b : l.a);
    }
  }
  j["switches"] = sws;
  nlohmann::json hs = nlohmann::json::object();
  for (size_t i = 0; i < hosts_.size(); ++i) {
    if (hosts_[i] && local_host(i)) hs[hosts_[i]->name()] = hosts_[i]->Stats();
  }
  j["hosts"] = hs;
  j["notes"] = notes_;
  j["events"] = fault_log_;
  j["deadlocks"] = detector_ ? detector_->Stats() : nlohmann::json::array();
  nlohmann::json spread = nlohmann::json::object();
  for (size_t i = 0; i < switches_.size(); ++i) {
    if (!local_switch(i)) continue;
    const SwitchNode& sw = *switches_[i];
    spread[sw.name()] = {{"first_paused_at_us", sw.first_paused_at() / 1e6},
                         {"first_storm_at_us", sw.first_storm_at() / 1e6}};
  }
  j["pause_spread"] = spread;
  nlohmann::json nics = nlohmann::json::object();
  for (size_t i = 0; i < hosts_.size(); ++i) {
    const EmulatedHost* h = hosts_[i].get();
    if (h && local_host(i) && h->rnic().watchdog_fired_at() >= 0) {
      nics[h->name()] = {{"watchdog_fired_at_us", h->rnic().watchdog_fired_at() / 1e6}};
    }
  }
  j["nic_watchdogs"] = nics;
  // RDMA tests: reported by the process of their client, which measures them.
  nlohmann::json rdma = nlohmann::json::array();
  if (rdma_) {
    for (auto& r : rdma_->PerftestResults()) {
      if (local_host(static_cast<size_t>(t.HostIndex(r["from"].get<std::string>()))))
        rdma.push_back(std::move(r));
    }
  }
  if (scenario_.sw.load_balancing.scheme == LoadBalancingConfig::Scheme::kEcmp) {
    for (auto& r : rdma) AddEcmpPaths(scenario_, plan_, &r);
  }
  j["ecmp_model"] = EcmpModelJson(scenario_, plan_, rdma);
  j["rdma"] = rdma;
  j["workload"] = rdma_ ? rdma_->WorkloadSummary() : nlohmann::json();
  j["pingmesh"] = rdma_ ? rdma_->PingmeshSummary(runner_->now()) : nlohmann::json();
  // TCP Pingmesh from emulated hosts ran as ICMP echoes (no kernel): the sim's TCP side. The
  // live runner replaces it with the kernels' TCP probes where namespace hosts ran them.
  std::vector<Time> icmp;
  for (size_t h = 0; h < hosts_.size(); ++h) {
    if (!hosts_[h] || !local_host(h)) continue;
    for (const auto& p : hosts_[h]->pings()) {
      if (tcp_pingmesh_pings_.count({h, p.spec.id}))
        icmp.insert(icmp.end(), p.rtts.begin(), p.rtts.end());
    }
  }
  j["rdma_vs_tcp"] = RdmaVsTcp(rdma_ ? rdma_->PingmeshRtts() : std::vector<Time>(), icmp,
                               "ICMP echo, lossy class (no kernel TCP on an emulated host)");
  AddVerbsLatency(&j["rdma_vs_tcp"], j["rdma"]);
  j["lost_frames"] = runner_->lost_frames();
  // Frames not built because the pool was empty (NICs' no_mbuf, switches' no_buffer drops).
  uint64_t no_mbuf = 0;
  for (const auto& [name, h] : j["hosts"].items()) {
    no_mbuf += h.value("no_mbuf", uint64_t{0});  // UDP, ping, ARP frames
    if (h.contains("rnic")) no_mbuf += h["rnic"].value("no_mbuf", uint64_t{0});
  }
  for (const auto& [name, sw] : j["switches"].items()) {
    no_mbuf += sw["drops"].value("no_buffer", uint64_t{0});
  }
  j["mbuf_alloc_failures"] = no_mbuf;
  j["mbufs_in_use_after_run"] = nullptr;  // the driver fills it once every node is gone
  j["conservation"] = ConservationJson();
  return j;
}

}  // namespace rocefab

#include "fabric/rdma_traffic.h"

#include <algorithm>
#include <fstream>

#include "common/files.h"

namespace rocefab {

Result<std::unique_ptr<RdmaTraffic>> RdmaTraffic::Build(const Scenario& s, const FabricPlan& plan,
                                                        const std::vector<EmulatedHost*>& hosts) {
  using R = Result<std::unique_ptr<RdmaTraffic>>;
  auto t = std::make_unique<RdmaTraffic>();
  std::vector<Flow> flows;
  uint64_t seed = s.seed;
  for (size_t i = 0; i < s.traffic.size(); ++i) {
    const TrafficItem& item = s.traffic[i];
    if (item.kind() == TrafficItem::Kind::kRdma) {
      const int a = s.topology.HostIndex(item.from), b = s.topology.HostIndex(item.to);
      if (item.perftest().app == PerftestSpec::App::kPerftest &&
          (hosts[a] == nullptr || hosts[b] == nullptr)) {
        continue;  // the live runner runs the perftest binary in the namespaces (live_run.cc)
      }
      if (hosts[a] == nullptr || hosts[b] == nullptr) {
        return R::Error(TrafficPath(item, i) +
                        ": rdma needs hosts with an emulated NIC ("
                        "kind \"builtin\" in the live runner)");
      }
      t->perftests_.push_back(
          std::make_unique<Perftest>(item.perftest(), hosts[a], hosts[b], item.from, item.to));
    } else if (item.kind() == TrafficItem::Kind::kPingmesh) {
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
      PingmeshSpec spec = item.pingmesh();
      spec.stop = s.duration;  // no probe starts after the scenario's duration
      t->pingmesh_ = std::make_unique<Pingmesh>(spec, hosts, names, tors, pods, src, dst);
    } else if (item.kind() == TrafficItem::Kind::kWorkload) {
      const WorkloadTraffic& w = item.workload();
      t->measure_from_ = std::max(t->measure_from_, w.measure_from);
      std::vector<int> src, dst;
      for (size_t h = 0; h < s.topology.hosts.size(); ++h) {
        if (item.from == "all" || s.topology.hosts[h].name == item.from)
          src.push_back(static_cast<int>(h));
        if (item.to == "all" || s.topology.hosts[h].name == item.to)
          dst.push_back(static_cast<int>(h));
      }
      for (int h : src) {
        if (hosts[h] == nullptr)
          return R::Error(TrafficPath(item, i) + ": workload hosts need an emulated NIC");
      }
      if (w.pattern == "trace") {
        auto tr = ReadFlowTrace(w.trace_path, static_cast<int>(s.topology.hosts.size()),
                                w.time_base, w.duration);
        if (!tr.ok()) return tr.status();
        for (const Flow& f : tr.value()) {
          if (hosts[f.src] == nullptr || hosts[f.dst] == nullptr) {
            return R::Error(TrafficPath(item, i) + ": trace hosts need an emulated NIC");
          }
          flows.push_back(f);
        }
      } else if (w.pattern == "incast") {
        for (int h : src) {
          if (h != dst.front()) flows.push_back(Flow{h, dst.front(), w.flow_size, item.start});
        }
      } else {
        auto cdf = FlowSizeCdf::Load(w.cdf_path);
        if (!cdf.ok()) return cdf.status();
        // Generate over all hosts, keep flows whose ends are in the from/to sets.
        const int n = static_cast<int>(s.topology.hosts.size());
        for (const Flow& f : PoissonFlows(cdf.value(), n, plan.hosts[0].rate, w.load, item.start,
                                          w.duration, seed++)) {
          if (std::find(src.begin(), src.end(), f.src) != src.end() &&
              std::find(dst.begin(), dst.end(), f.dst) != dst.end()) {
            flows.push_back(f);
          }
        }
      }
    }
  }
  // A source stops at the scenario's duration (the runners then drain for 10 ms): a trace or
  // Poisson flow that would start at or after it is not started, and counted.
  const auto past_end = std::remove_if(flows.begin(), flows.end(),
                                       [&s](const Flow& f) { return f.start >= s.duration; });
  t->flows_after_end_ = static_cast<uint64_t>(flows.end() - past_end);
  flows.erase(past_end, flows.end());
  if (!flows.empty()) {
    std::stable_sort(flows.begin(), flows.end(),
                     [](const Flow& x, const Flow& y) { return x.start < y.start; });
    const uint32_t mtu = s.nic.mtu;
    // One BFS per source ToR, not per flow (the anchor trace has 97,984 flows on 128 hosts), and
    // no n x n table (it was 2 GiB at 16k hosts).
    BaseRttTable rtt(plan, s.topology);
    const BitRate host_rate = plan.hosts[0].rate;
    t->workload_ = std::make_unique<FlowWorkload>(
        std::move(flows), hosts,
        [&s, mtu, &rtt, host_rate](const Flow& f) {
          const Time r = rtt.Rtt(f.src, f.dst, mtu, *s.compat);
          return s.compat->IdealFct(f.size, mtu, host_rate, r);
        },
        s.compat->ReferenceEcmp());
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
  if (!workload_) return nlohmann::json();
  nlohmann::json j = workload_->Summary(measure_from_);
  j["flows_after_duration"] = flows_after_end_;
  return j;
}

std::vector<std::string> RdmaTraffic::Text() const {
  std::vector<std::string> out;
  for (const auto& p : perftests_) out.push_back(p->Text());
  return out;
}

Status RdmaTraffic::WriteFct(const std::string& path) const {
  if (!workload_) return Status();
  if (Status st = RefuseSymlink(path); !st.ok()) return st;
  std::ofstream f(path);
  if (!f) return Status::Error(path + ": cannot write");
  for (const auto& r : workload_->records()) {
    if (r.fct < 0) continue;
    f << r.flow.src << " " << r.flow.dst << " " << r.sport << " " << r.dport << " " << r.flow.size
      << " " << r.flow.start / kNs << " " << r.fct / kNs << " " << r.ideal / kNs << "\n";
  }
  return Status();
}

}  // namespace rocefab

#include "run/sim_ranks.h"

#include <algorithm>
#include <deque>
#include <map>
#include <string>

#include "fabric/results.h"
#include "run/switch_processes.h"

namespace rocefab {
namespace {

// The RDMA tests of every rank in the scenario's order: each rank lists the tests of its own
// clients in that order, so the n-th test from host H is the n-th entry from H of H's rank.
nlohmann::json MergeRdma(const Fabric& fab, const std::vector<nlohmann::json>& parts) {
  std::map<std::string, std::deque<nlohmann::json>> by_client;
  for (const auto& s : parts) {
    for (const auto& r : s.value("rdma", nlohmann::json::array()))
      by_client[r["from"].get<std::string>()].push_back(r);
  }
  nlohmann::json out = nlohmann::json::array();
  if (fab.rdma() == nullptr) return out;
  for (const auto& t : fab.rdma()->PerftestResults()) {
    auto& q = by_client[t["from"].get<std::string>()];
    if (q.empty()) continue;
    out.push_back(std::move(q.front()));
    q.pop_front();
  }
  return out;
}

// The ranks' conservation blocks as one, the unbalanced nodes in the order one process lists
// them (switches, then hosts).
nlohmann::json MergeConservationBlocks(const Fabric& fab,
                                       const std::vector<nlohmann::json>& parts) {
  std::map<std::string, size_t> order;
  for (size_t i = 0; i < fab.plan().switches.size(); ++i) order[fab.plan().switches[i].name] = i;
  const auto& hosts = fab.scenario().topology.hosts;
  for (size_t i = 0; i < hosts.size(); ++i) order[hosts[i].name] = fab.plan().switches.size() + i;
  std::vector<const nlohmann::json*> summaries;
  for (const auto& p : parts) summaries.push_back(&p);
  nlohmann::json c = MergeConservation(summaries);
  auto& u = c["unbalanced"];
  std::stable_sort(u.begin(), u.end(), [&](const nlohmann::json& x, const nlohmann::json& y) {
    return order[x["node"].get<std::string>()] < order[y["node"].get<std::string>()];
  });
  return c;
}

void SumKey(nlohmann::json* m, const nlohmann::json& s, const char* k) {
  if (s.contains(k) && s[k].is_number_unsigned() && (*m)[k].is_number_unsigned())
    (*m)[k] = (*m)[k].get<uint64_t>() + s[k].get<uint64_t>();
}

}  // namespace

nlohmann::json MergeRankSummaries(const Fabric& fab, const std::vector<nlohmann::json>& parts) {
  if (parts.empty()) return nlohmann::json::object();
  nlohmann::json m = parts.front();
  const Topology& t = fab.scenario().topology;
  for (const char* k : {"switches", "hosts", "pause_spread", "nic_watchdogs"}) {
    m[k] = nlohmann::json::object();
    for (const auto& s : parts) {
      if (s.contains(k) && s[k].is_object()) m[k].update(s[k]);
    }
  }
  std::vector<nlohmann::json> pings;
  nlohmann::json flows = nlohmann::json::array();
  for (const auto& s : parts) {
    for (const auto& p : s.value("pings", nlohmann::json::array())) pings.push_back(p);
    for (const auto& f : s.value("flows", nlohmann::json::array())) flows.push_back(f);
  }
  std::stable_sort(pings.begin(), pings.end(),
                   [&t](const nlohmann::json& a, const nlohmann::json& b) {
                     return t.HostIndex(a["from"].get<std::string>()) <
                            t.HostIndex(b["from"].get<std::string>());
                   });
  m["pings"] = pings;
  m["flows"] = JoinFlows(flows);
  m["rdma"] = MergeRdma(fab, parts);
  m["ecmp_model"] = EcmpModelJson(fab.scenario(), fab.plan(), m["rdma"]);
  for (size_t i = 1; i < parts.size(); ++i) {
    const nlohmann::json& s = parts[i];
    for (const char* k : {"lost_frames", "mbuf_alloc_failures", "events_executed",
                          "frames_delivered", "mbufs_in_use_after_run"}) {
      SumKey(&m, s, k);
    }
    if (s.contains("sim_events") && m.contains("sim_events")) {
      for (const char* k :
           {"arrive", "tx_free", "timer", "cross_rank_frames", "cross_partition_frames"})
        SumKey(&m["sim_events"], s["sim_events"], k);
      m["sim_events"]["max_pending"] = std::max(m["sim_events"].value("max_pending", uint64_t{0}),
                                                s["sim_events"].value("max_pending", uint64_t{0}));
    }
  }
  m["conservation"] = MergeConservationBlocks(fab, parts);
  return m;
}

}  // namespace rocefab

#include "switch/load_balancer.h"

#include <algorithm>

namespace rocefab {

const char* LoadBalancingSchemeName(LoadBalancingConfig::Scheme s) {
  switch (s) {
    case LoadBalancingConfig::Scheme::kEcmp:
      return "ecmp";
    case LoadBalancingConfig::Scheme::kLetFlow:
      return "letflow";
    case LoadBalancingConfig::Scheme::kDrill:
      return "drill";
    case LoadBalancingConfig::Scheme::kConweave:
      return "conweave";
    case LoadBalancingConfig::Scheme::kConga:
      return "conga";
  }
  return "?";
}

uint32_t LetFlowBalancer::Pick(uint32_t flow_hash, Ipv4 dst, std::span<const NextHop> members,
                               Time now) {
  const uint32_t n = static_cast<uint32_t>(members.size());
  if (++picks_since_sweep_ >= 4096) {
    picks_since_sweep_ = 0;
    EraseIf(table_, [&](const auto& kv) { return kv.second.last + c_.flowlet_aging < now; });
  }
  const uint64_t key = (static_cast<uint64_t>(dst) << 32) | flow_hash;
  auto [it, is_new] = table_.try_emplace(key);
  Entry& e = it->second;
  if (is_new || e.last + c_.flowlet_gap < now || e.member >= n) {
    const uint32_t m = static_cast<uint32_t>(rng_.Below(n));
    if (!is_new && m != e.member) ++path_changes_;
    e.member = m;
  }
  e.last = now;
  return e.member;
}

uint32_t DrillBalancer::Pick(uint32_t, Ipv4 dst, std::span<const NextHop> members, Time) {
  const uint32_t n = static_cast<uint32_t>(members.size());
  if (n == 1) return 0;
  auto [it, is_new] = memory_.try_emplace(dst, static_cast<uint32_t>(rng_.Below(n)));
  uint32_t best = it->second < n ? it->second : 0;
  int64_t best_load = load_(members[best].port);
  for (uint32_t i = 0; i < c_.drill_samples; ++i) {
    const uint32_t m = static_cast<uint32_t>(rng_.Below(n));
    const int64_t l = load_(members[m].port);
    if (l < best_load) {
      best = m;
      best_load = l;
    }
  }
  if (!is_new && best != it->second) ++path_changes_;
  it->second = best;
  return best;
}

std::unique_ptr<LoadBalancer> MakeLoadBalancer(const LoadBalancingConfig& c, uint64_t seed,
                                               PortLoadFn load) {
  switch (c.scheme) {
    case LoadBalancingConfig::Scheme::kEcmp:
      return std::make_unique<EcmpBalancer>();
    case LoadBalancingConfig::Scheme::kLetFlow:
      return std::make_unique<LetFlowBalancer>(c, seed);
    case LoadBalancingConfig::Scheme::kDrill:
      return std::make_unique<DrillBalancer>(c, seed, std::move(load));
    case LoadBalancingConfig::Scheme::kConweave:  // the ToRs run ConWeave themselves
    case LoadBalancingConfig::Scheme::kConga:     // the ToRs run CONGA themselves
      return std::make_unique<EcmpBalancer>();
  }
  return std::make_unique<EcmpBalancer>();
}

}  // namespace rocefab

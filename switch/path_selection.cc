#include "switch/path_selection.h"

#include <cstring>

#include "switch/switch_node.h"

namespace rocefab {

uint32_t EcmpPaths::Pick(Time, rte_mbuf* m, const ParsedFrame& p, const RouteGroup& g,
                         uint32_t hash) {
  return sw_.EcmpMember(m, p, hash, static_cast<uint32_t>(g.members.size()));
}

uint32_t BalancerPaths::Pick(Time now, rte_mbuf*, const ParsedFrame& p, const RouteGroup& g,
                             uint32_t hash) {
  ++decisions_;
  return lb_->Pick(hash, p.dst_ip, g.members, now);
}

int CongaLeafOf(const LoadBalancingConfig& lb, Ipv4 ip) {
  const auto& subnets = lb.leaf_subnets;
  for (size_t i = 0; i < subnets.size(); ++i) {
    const auto [net, len] = subnets[i];
    const Ipv4 mask = len == 0 ? 0 : static_cast<Ipv4>(~((1ull << (32 - len)) - 1));
    if ((ip & mask) == net) return static_cast<int>(i);
  }
  return -1;
}

uint32_t ConweavePathId(const Mac& mac) {
  uint32_t v;
  std::memcpy(&v, &mac.addr_bytes[2], 4);
  return v;
}

std::unique_ptr<PathSelection> MakePathSelection(SwitchNode& sw, const SwitchConfig& cfg,
                                                 PortLoadFn port_load) {
  const LoadBalancingConfig& lb = cfg.load_balancing;
  const auto ports = static_cast<uint32_t>(cfg.ports.size());
  switch (lb.scheme) {
    case LoadBalancingConfig::Scheme::kEcmp:
      return std::make_unique<EcmpPaths>(sw);
    case LoadBalancingConfig::Scheme::kLetFlow:
    case LoadBalancingConfig::Scheme::kDrill:
      return std::make_unique<BalancerPaths>(
          sw, MakeLoadBalancer(lb, cfg.rng_seed ^ 0x4c42ull, std::move(port_load)));
    case LoadBalancingConfig::Scheme::kConweave:
      // The ToRs (switches with a server subnet) run ConWeave; the others follow the source
      // routes the ToRs write (3-tier) and route the rest by ECMP.
      if (cfg.svis.empty()) return std::make_unique<ConweaveTransitPaths>(sw);
      return std::make_unique<ConweavePaths>(sw, lb.conweave, ports);
    case LoadBalancingConfig::Scheme::kConga: {
      const int leaf = cfg.svis.empty() ? -1 : CongaLeafOf(lb, cfg.svis.front().ip);
      return std::make_unique<CongaPaths>(sw, lb.conga, ports, leaf,
                                          static_cast<uint32_t>(lb.leaf_subnets.size()));
    }
  }
  return std::make_unique<EcmpPaths>(sw);
}

}  // namespace rocefab

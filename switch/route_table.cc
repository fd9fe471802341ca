#include "switch/route_table.h"

#include <rte_errno.h>
#include <rte_jhash.h>

namespace rocefab {

uint32_t EcmpHash(Ipv4 src, Ipv4 dst, uint8_t proto, uint16_t sport, uint16_t dport,
                  uint32_t seed) {
  const uint32_t ports = static_cast<uint32_t>(sport) << 16 | dport;
  return rte_jhash_3words(src, dst, ports, seed ^ (static_cast<uint32_t>(proto) * 0x9E3779B1u));
}

Result<RouteTable*> RouteTable::Create(const std::string& name, uint32_t max_routes) {
  rte_lpm_config cfg{};
  cfg.max_rules = max_routes < 16 ? 16 : max_routes;
  cfg.number_tbl8s = 256;
  rte_lpm* lpm = rte_lpm_create(name.c_str(), SOCKET_ID_ANY, &cfg);
  if (lpm == nullptr) {
    return Result<RouteTable*>::Error("rte_lpm_create(" + name + "): " + rte_strerror(rte_errno));
  }
  return new RouteTable(lpm);
}

RouteTable::~RouteTable() { rte_lpm_free(lpm_); }

Status RouteTable::Add(Ipv4 prefix, int len, RouteGroup group) {
  if (len < 0 || len > 32) return Status::Error("route prefix length must be 0..32");
  if (group.kind == RouteGroup::Kind::kEcmp && group.members.empty()) {
    return Status::Error("route " + FormatIpv4(prefix) + "/" + std::to_string(len) +
                         " has no next hop");
  }
  const auto idx = static_cast<uint32_t>(groups_.size());
  if (idx >= (1u << 24)) return Status::Error("too many route groups (rte_lpm limit 2^24)");
  const Ipv4 masked = len == 0 ? 0 : prefix & ~((1ull << (32 - len)) - 1);
  if (rte_lpm_add(lpm_, masked, static_cast<uint8_t>(len), idx) != 0) {
    return Status::Error("rte_lpm_add failed for " + FormatIpv4(prefix) + "/" + std::to_string(len));
  }
  groups_.push_back(std::move(group));
  return Status();
}

}  // namespace rocefab

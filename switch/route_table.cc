#include "switch/route_table.h"

#include <rte_errno.h>
#include <rte_jhash.h>

namespace rocefab {

uint32_t EcmpHash(Ipv4 src, Ipv4 dst, uint8_t proto, uint16_t sport, uint16_t dport,
                  uint32_t seed) {
  const uint32_t ports = static_cast<uint32_t>(sport) << 16 | dport;
  return rte_jhash_3words(src, dst, ports, seed ^ (static_cast<uint32_t>(proto) * 0x9E3779B1u));
}

Result<RouteTable*> RouteTable::Create(const std::string& name, uint32_t max_routes,
                                       FibLayout layout) {
  rte_fib_conf cfg{};
  cfg.type = layout == FibLayout::kDir24_8 ? RTE_FIB_DIR24_8 : RTE_FIB_DUMMY;
  cfg.default_nh = kNoRoute;
  cfg.max_routes = static_cast<int>(max_routes < 16 ? 16 : max_routes);
  cfg.dir24_8.nh_sz = RTE_FIB_DIR24_8_2B;
  cfg.dir24_8.num_tbl8 = 256;
  rte_fib* fib = rte_fib_create(name.c_str(), SOCKET_ID_ANY, &cfg);
  if (fib == nullptr) {
    return Result<RouteTable*>::Error("rte_fib_create(" + name + "): " + rte_strerror(rte_errno));
  }
  return new RouteTable(fib, layout == FibLayout::kTree);
}

RouteTable::~RouteTable() { rte_fib_free(fib_); }

Status RouteTable::Add(Ipv4 prefix, int len, RouteGroup group) {
  if (len < 0 || len > 32) return Status::Error("route prefix length must be 0..32");
  if (group.kind == RouteGroup::Kind::kEcmp && group.members.empty()) {
    return Status::Error("route " + FormatIpv4(prefix) + "/" + std::to_string(len) +
                         " has no next hop");
  }
  const Ipv4 masked = len == 0 ? 0 : prefix & ~((1ull << (32 - len)) - 1);
  const uint64_t key = static_cast<uint64_t>(masked) << 8 | static_cast<uint64_t>(len);
  if (auto it = slot_of_.find(key); it != slot_of_.end()) {
    // A replaced route keeps its slot: the FIB entry stays, only the group changes.
    groups_[it->second] = std::move(group);
    for (CacheSlot& c : cache_) c.valid = false;
    return Status();
  }
  uint32_t idx;
  if (!free_slots_.empty()) {
    idx = free_slots_.back();
  } else {
    idx = static_cast<uint32_t>(groups_.size());
    if (idx >= kNoRoute) return Status::Error("too many route groups (limit 32766)");
  }
  if (rte_fib_add(fib_, masked, static_cast<uint8_t>(len), idx) != 0) {
    return Status::Error("rte_fib_add failed for " + FormatIpv4(prefix) + "/" +
                         std::to_string(len));
  }
  if (!free_slots_.empty()) {
    free_slots_.pop_back();
    groups_[idx] = std::move(group);
  } else {
    groups_.push_back(std::move(group));
  }
  slot_of_[key] = idx;
  for (CacheSlot& c : cache_) c.valid = false;
  return Status();
}

void RouteTable::Remove(Ipv4 prefix, int len) {
  if (len < 0 || len > 32) return;
  const Ipv4 masked = len == 0 ? 0 : prefix & ~((1ull << (32 - len)) - 1);
  const uint64_t key = static_cast<uint64_t>(masked) << 8 | static_cast<uint64_t>(len);
  auto it = slot_of_.find(key);
  if (it == slot_of_.end()) return;
  rte_fib_delete(fib_, masked, static_cast<uint8_t>(len));
  groups_[it->second] = RouteGroup{};
  free_slots_.push_back(it->second);
  slot_of_.erase(it);
  for (CacheSlot& c : cache_) c.valid = false;
}

}  // namespace rocefab

#include "switch/route_table.h"

#include <rte_errno.h>
#include <rte_jhash.h>

#include <algorithm>
#include <cstring>
#include <functional>

namespace rocefab {

uint32_t EcmpHash(Ipv4 src, Ipv4 dst, uint8_t proto, uint16_t sport, uint16_t dport,
                  uint32_t seed) {
  const uint32_t ports = static_cast<uint32_t>(sport) << 16 | dport;
  return rte_jhash_3words(src, dst, ports, seed ^ (static_cast<uint32_t>(proto) * 0x9E3779B1u));
}

Result<RouteTable*> RouteTable::Create(const std::string& name, uint32_t max_routes,
                                       FibLayout layout) {
  if (layout == FibLayout::kPrefixHash) return new RouteTable(nullptr);
  rte_fib_conf cfg{};
  cfg.type = RTE_FIB_DIR24_8;
  cfg.default_nh = kNoRoute;
  cfg.max_routes = static_cast<int>(max_routes < 16 ? 16 : max_routes);
  cfg.dir24_8.nh_sz = RTE_FIB_DIR24_8_2B;
  cfg.dir24_8.num_tbl8 = 256;
  rte_fib* fib = rte_fib_create(name.c_str(), SOCKET_ID_ANY, &cfg);
  if (fib == nullptr) {
    return Result<RouteTable*>::Error("rte_fib_create(" + name + "): " + rte_strerror(rte_errno));
  }
  return new RouteTable(fib);
}

RouteTable::~RouteTable() {
  if (fib_ != nullptr) rte_fib_free(fib_);
}

uint64_t RouteTable::HashLookup(Ipv4 dst) const {
  for (const auto& [len, routes] : lengths_) {
    if (auto it = slot_of_.find(Key(Mask(dst, len), len)); it != slot_of_.end()) return it->second;
  }
  return kNoRoute;
}

void RouteTable::CountLength(int len, int delta) {
  auto it = std::find_if(lengths_.begin(), lengths_.end(), [&](auto& l) { return l.first == len; });
  if (it == lengths_.end()) {
    lengths_.emplace_back(len, 0);
    std::sort(lengths_.begin(), lengths_.end(), std::greater<>());
    it = std::find_if(lengths_.begin(), lengths_.end(), [&](auto& l) { return l.first == len; });
  }
  it->second += delta;
  if (it->second == 0) lengths_.erase(it);
}

namespace {

bool SameGroup(const RouteGroup& a, const RouteGroup& b) {
  if (a.kind != b.kind || a.svi != b.svi || a.conga_leaf != b.conga_leaf ||
      a.second_hops != b.second_hops || a.members.size() != b.members.size() ||
      a.conweave_paths != b.conweave_paths) {
    return false;
  }
  for (size_t k = 0; k < a.members.size(); ++k) {
    if (a.members[k].port != b.members[k].port ||
        !rte_is_same_ether_addr(&a.members[k].mac, &b.members[k].mac)) {
      return false;
    }
  }
  return true;
}

}  // namespace

uint64_t RouteTable::GroupHash(const RouteGroup& g) {
  uint32_t h = rte_jhash_3words(static_cast<uint32_t>(g.kind), g.svi,
                                static_cast<uint32_t>(static_cast<uint16_t>(g.conga_leaf)), 0);
  for (const NextHop& nh : g.members) {
    uint64_t mac = 0;  // a copy: the MAC sits at offset 2 of NextHop, rte_jhash reads 4-byte words
    std::memcpy(&mac, nh.mac.addr_bytes, sizeof(nh.mac.addr_bytes));
    h = rte_jhash_3words(static_cast<uint32_t>(mac), static_cast<uint32_t>(mac >> 32), nh.port, h);
  }
  return h;
}

Result<uint32_t> RouteTable::Intern(RouteGroup g) {
  const uint64_t h = GroupHash(g);
  for (auto [it, end] = group_of_hash_.equal_range(h); it != end; ++it) {
    if (SameGroup(groups_[it->second], g)) {
      ++users_[it->second];
      return it->second;
    }
  }
  uint32_t idx;
  if (!free_groups_.empty()) {
    idx = free_groups_.back();
    free_groups_.pop_back();
    groups_[idx] = std::move(g);
  } else {
    idx = static_cast<uint32_t>(groups_.size());
    if (idx >= kNoRoute) return Result<uint32_t>::Error("too many route groups (limit 32766)");
    groups_.push_back(std::move(g));
    users_.push_back(0);
  }
  users_[idx] = 1;
  group_of_hash_.emplace(h, idx);
  return idx;
}

void RouteTable::Release(uint32_t idx) {
  if (--users_[idx] != 0) return;
  for (auto [it, end] = group_of_hash_.equal_range(GroupHash(groups_[idx])); it != end; ++it) {
    if (it->second == idx) {
      group_of_hash_.erase(it);
      break;
    }
  }
  groups_[idx] = RouteGroup{};
  free_groups_.push_back(idx);
}

Status RouteTable::Add(Ipv4 prefix, int len, RouteGroup group) {
  if (len < 0 || len > 32) return Status::Error("route prefix length must be 0..32");
  if (group.kind == RouteGroup::Kind::kEcmp && group.members.empty()) {
    return Status::Error("route " + FormatIpv4(prefix) + "/" + std::to_string(len) +
                         " has no next hop");
  }
  const Ipv4 masked = Mask(prefix, len);
  auto idx = Intern(std::move(group));
  if (!idx.ok()) return idx.status();
  const uint32_t g = idx.value();
  auto it = slot_of_.find(Key(masked, len));
  if (it != slot_of_.end() && it->second == g) {
    Release(g);  // the same group again: nothing changes
    return Status();
  }
  // rte_fib_add of an existing prefix changes its next hop in place.
  if (fib_ != nullptr && rte_fib_add(fib_, masked, static_cast<uint8_t>(len), g) != 0) {
    Release(g);
    return Status::Error("rte_fib_add failed for " + FormatIpv4(prefix) + "/" +
                         std::to_string(len));
  }
  if (it != slot_of_.end()) {
    Release(it->second);
    it->second = g;
  } else {
    slot_of_.emplace(Key(masked, len), g);
    if (fib_ == nullptr) CountLength(len, +1);
  }
  ForgetCache();
  return Status();
}

void RouteTable::Remove(Ipv4 prefix, int len) {
  if (len < 0 || len > 32) return;
  const Ipv4 masked = Mask(prefix, len);
  auto it = slot_of_.find(Key(masked, len));
  if (it == slot_of_.end()) return;
  if (fib_ != nullptr) {
    rte_fib_delete(fib_, masked, static_cast<uint8_t>(len));
  } else {
    CountLength(len, -1);
  }
  Release(it->second);
  slot_of_.erase(it);
  ForgetCache();
}

const RouteGroup* RouteTable::Find(Ipv4 prefix, int len) const {
  if (len < 0 || len > 32) return nullptr;
  auto it = slot_of_.find(Key(Mask(prefix, len), len));
  return it == slot_of_.end() ? nullptr : &groups_[it->second];
}

}  // namespace rocefab

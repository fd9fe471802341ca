#include "switch/mac_table.h"

namespace rocefab {

bool MacTable::Learn(Time now, uint16_t vlan, const Mac& mac, uint16_t port) {
  auto [it, inserted] = table_.try_emplace(Key(vlan, mac), Entry{port, now});
  if (inserted) return true;
  Entry& e = it->second;
  const bool expired = now - e.last_seen > aging_;
  const bool moved = e.port != port;
  if (moved && !expired) ++moves_;
  if (expired) ++aged_out_;
  e.port = port;
  e.last_seen = now;
  return moved || expired;
}

std::optional<uint16_t> MacTable::Lookup(Time now, uint16_t vlan, const Mac& mac) {
  auto it = table_.find(Key(vlan, mac));
  if (it == table_.end()) return std::nullopt;
  if (now - it->second.last_seen > aging_) {
    table_.erase(it);
    ++aged_out_;
    return std::nullopt;
  }
  return it->second.port;
}

bool MacTable::Flush(uint16_t vlan, const Mac& mac) { return table_.erase(Key(vlan, mac)) > 0; }

void ArpTable::Update(Time now, Ipv4 ip, const Mac& mac) { table_[ip] = Entry{mac, now}; }

std::optional<Mac> ArpTable::Lookup(Time now, Ipv4 ip) {
  auto it = table_.find(ip);
  if (it == table_.end()) return std::nullopt;
  if (now - it->second.updated > aging_) {
    table_.erase(it);
    ++aged_out_;
    return std::nullopt;
  }
  return it->second.mac;
}

}  // namespace rocefab

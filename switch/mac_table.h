#pragma once
/// @file mac_table.h
/// MAC learning table (IEEE 802.1Q filtering database): (VLAN, MAC) -> port, with ageing.
/// Entries age out when not refreshed by a frame from that MAC for `aging` (IEEE 802.1Q default
/// 300 s; SONiC uses 600 s). Expiry is evaluated at lookup time against the `now` passed in, so
/// the table needs no timer and behaves the same in both runners. Pure: no clock, no I/O.

#include <cstdint>
#include <optional>

#include "common/flat_map.h"
#include "common/wire/headers.h"
#include "common/time.h"

namespace rocefab {

class MacTable {
 public:
  /// `aging` > 0, in ps.
  explicit MacTable(Time aging) : aging_(aging) {}

  /// Learns or refreshes (vlan, mac) on `port`. Returns true if the entry is new or moved.
  bool Learn(Time now, uint16_t vlan, const Mac& mac, uint16_t port);
  /// Port for (vlan, mac), or nullopt if unknown or aged out (aged entries are removed).
  std::optional<uint16_t> Lookup(Time now, uint16_t vlan, const Mac& mac);
  /// Removes one entry (fault injection: MAC-table flush). Returns true if it existed.
  bool Flush(uint16_t vlan, const Mac& mac);
  void FlushAll() { table_.clear(); }
  void set_aging(Time aging) { aging_ = aging; }
  Time aging() const { return aging_; }
  size_t size() const { return table_.size(); }
  uint64_t aged_out() const { return aged_out_; }
  uint64_t moves() const { return moves_; }

 private:
  struct Entry {
    uint16_t port;
    Time last_seen;
  };
  static uint64_t Key(uint16_t vlan, const Mac& mac) {
    return static_cast<uint64_t>(vlan) << 48 | MacKey(mac);
  }
  Time aging_;
  FlatMap<uint64_t, Entry> table_;
  uint64_t aged_out_ = 0;
  uint64_t moves_ = 0;
};

/// ARP cache (RFC 826): IPv4 -> MAC with ageing (default 4 h, the paper's ToR setting). Same
/// lazy-expiry rule as MacTable.
class ArpTable {
 public:
  explicit ArpTable(Time aging) : aging_(aging) {}
  void Update(Time now, Ipv4 ip, const Mac& mac);
  std::optional<Mac> Lookup(Time now, Ipv4 ip);
  bool Flush(Ipv4 ip) { return table_.erase(ip) > 0; }
  void set_aging(Time aging) { aging_ = aging; }
  size_t size() const { return table_.size(); }
  uint64_t aged_out() const { return aged_out_; }

 private:
  struct Entry {
    Mac mac;
    Time updated;
  };
  Time aging_;
  FlatMap<Ipv4, Entry> table_;
  uint64_t aged_out_ = 0;
};

}  // namespace rocefab

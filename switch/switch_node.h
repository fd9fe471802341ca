#pragma once
/// @file switch_node.h
/// SwitchNode: an L2/L3 data-center switch (ToR, leaf or spine).
///
/// Ingress (Receive): parse -> [802.1Q tag check] -> learn source MAC (VLAN ports) ->
///   to router MAC: IPv4 routing (LPM, ECMP, TTL, MAC rewrite) or ICMP echo reply for our
///   addresses; broadcast: ARP processing + flooding within the VLAN; other unicast: bridging by
///   the MAC table, flooding unknown unicast within the VLAN (counted).
/// Egress (Dequeue): per-port EgressPort (8 queues, strict priority), pulled by the runner.
/// Delivery to a connected host: ARP table (IP -> MAC), then the MAC table (MAC -> port); an ARP
/// hit with a MAC-table miss floods the frame in the VLAN, as a real ToR does (the "incomplete
/// ARP" state of Guo et al., SIGCOMM 2016, §4.2). Unresolved next hops get ARP requests (every
/// arp_retry, arp_retries times) while up to arp_queue_len frames wait.
///
/// Counters: per-port rx/tx packets and bytes; drops by DropReason; flood, learning, ARP and ICMP
/// counters (see Stats()). Runs on one thread; never reads a clock.

#include <array>
#include <map>
#include <memory>
#include <vector>

#include "common/headers.h"
#include "common/mbuf_fifo.h"
#include "common/node.h"
#include "common/packet.h"
#include "common/result.h"
#include "switch/drop_reason.h"
#include "switch/egress_port.h"
#include "switch/mac_table.h"
#include "switch/route_table.h"
#include "switch/switch_config.h"

namespace rocefab {

class SwitchNode final : public Node {
 public:
  /// Validates `cfg` and builds the tables. Errors name the field (e.g. "ports[2].vlan").
  static Result<std::unique_ptr<SwitchNode>> Create(SwitchConfig cfg);
  ~SwitchNode() override;

  uint16_t num_ports() const override { return static_cast<uint16_t>(ports_.size()); }
  void Receive(Time now, uint16_t port, rte_mbuf* m) override;
  rte_mbuf* Dequeue(Time now, uint16_t port) override;
  void OnTimer(Time now, uint64_t cookie) override;
  nlohmann::json Stats() const override;

  const SwitchConfig& config() const { return cfg_; }
  MacTable& mac_table() { return mac_table_; }
  ArpTable& arp_table() { return arp_table_; }
  uint64_t drops(DropReason r) const { return drops_[static_cast<size_t>(r)]; }
  uint64_t total_drops() const;
  uint64_t rx_packets(uint16_t port) const { return ports_[port].rx_packets; }
  uint64_t tx_packets(uint16_t port) const { return ports_[port].tx_packets; }
  uint64_t unknown_unicast_floods() const { return unknown_unicast_floods_; }

 private:
  struct PortState {
    EgressPort egress;
    uint64_t rx_packets = 0, rx_bytes = 0, tx_packets = 0, tx_bytes = 0;
    explicit PortState(int64_t limit) : egress(limit) {}
  };
  struct PendingArp {
    MbufFifo frames;
    uint16_t svi = 0;
    int requests_sent = 0;
  };

  explicit SwitchNode(SwitchConfig cfg);
  void Drop(rte_mbuf* m, DropReason r);
  void Output(Time now, uint16_t port, rte_mbuf* m, uint8_t tc);
  /// Sends a copy of `m` to every port of `vlan` except `except`; consumes `m`.
  void Flood(Time now, uint16_t vlan, uint16_t except, rte_mbuf* m);
  void HandleArp(Time now, uint16_t port, rte_mbuf* m, const ParsedFrame& p);
  void RouteIpv4(Time now, rte_mbuf* m, const ParsedFrame& p);
  void DeliverConnected(Time now, uint16_t svi, Ipv4 dst, rte_mbuf* m);
  void SendToHost(Time now, uint16_t vlan, const Mac& mac, rte_mbuf* m);
  void RequestArp(Time now, uint16_t svi, Ipv4 ip);
  void ReplyEcho(Time now, rte_mbuf* m, const ParsedFrame& p);
  bool IsOwnIp(Ipv4 ip) const;

  SwitchConfig cfg_;
  std::vector<PortState> ports_;
  std::unique_ptr<RouteTable> routes_;
  MacTable mac_table_;
  ArpTable arp_table_;
  std::map<uint16_t, std::vector<uint16_t>> vlan_ports_;  ///< VLAN -> member ports (sorted)
  std::map<Ipv4, PendingArp> pending_arp_;                 ///< ordered: deterministic timers
  std::array<uint64_t, static_cast<size_t>(DropReason::kCount)> drops_{};
  uint64_t routed_ = 0, bridged_ = 0, unknown_unicast_floods_ = 0, broadcast_floods_ = 0;
  uint64_t mac_learned_ = 0, arp_requests_sent_ = 0, arp_replies_sent_ = 0;
  uint64_t icmp_echo_replies_ = 0;
};

}  // namespace rocefab

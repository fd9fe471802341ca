#pragma once
/// @file ecmp.h
/// Which member of an ECMP group a frame takes: one class per hash function, chosen when the
/// switch is built (SwitchConfig::ecmp).
///
///   EcmpConfig::Function::kRteJhash     (default) rocefab's own: the switch's 5-tuple hash
///       (EcmpHash in route_table.h: rte_jhash over the addresses, ports and protocol, seeded per
///       switch), member = multiply-shift of the hash onto the group (EcmpPick).
///   EcmpConfig::Function::kNs3Murmur3   the reference ConWeave ns-3 simulator's flow ECMP, so a
///       comparison under "compat": "conweave-ns3" draws the same path for every flow as the
///       reference does (conweave-ns3 236a801, src/point-to-point/model/switch-node.cc
///       DoLbFlowECMP and EcmpHash): MurmurHash3_x86_32 (Debian libmurmurhash) over 12 bytes,
///       source IPv4, destination IPv4 (host byte order, as little-endian words) and
///       sport | dport << 16, seeded by the switch's node id (m_ecmpSeed = m_id), member = hash
///       % group size. Addresses and ports are the reference's, not rocefab's:
///         - addresses: the reference numbers hosts 0..H-1 and gives host i the address
///           0x0b000001 + (i / 256) << 16 + (i % 256) << 8 (settings.cc node_id_to_ip); the
///           planner hands every switch the map of rocefab host addresses to these
///           (EcmpConfig::reference_addresses); an address not in it is hashed as it is;
///         - ports: the reference's UDP ports are per-flow counters (sport 10000 + the source's
///           earlier flows, dport 100 + the destination's; scratch/network-load-balance.cc
///           ScheduleFlowInputs). RoCEv2 fixes the destination port at 4791, so under this model
///           each QP writes its own port in the UDP source port and its peer's in the IPv4
///           identification (RnicConfig::ip_id_per_qp, QpOptions::ip_id): for a RoCEv2 frame
///           the hash takes (UDP source port, IPv4 identification) as (sport, dport). An ACK
///           thereby hashes (its own sport, its peer's) as the reference's ACK does
///           (rdma-hw.cc: an ACK's sport is the data's dport). A ConWeave control packet
///           (UDP port kConweaveControlPort) carries the ports the same way: the reference
///           sends its RTT_REPLY, CLEAR and NOTIFY with the data's ports swapped, along the
///           flow's ACKs (conweave-routing.cc SendReply). Other frames hash their own ports.
///       The group's members must be in the reference's next-hop order: ascending node id on the
///       reference's topologies (its BFS in CalculateRoute visits neighbours by Ptr<Node>, which
///       follows creation order); the planner sorts them so (fabric/plan.cc).

#include <rte_mbuf.h>

#include <cstdint>
#include <memory>

#include "common/flat_map.h"
#include "common/wire/headers.h"
#include "switch/route_table.h"

namespace rocefab {

struct EcmpConfig {
  enum class Function : uint8_t { kRteJhash, kNs3Murmur3 };
  Function function = Function::kRteJhash;
  /// kNs3Murmur3: the switch's node id in the reference (the hash seed).
  uint32_t node_id = 0;
  /// kNs3Murmur3: rocefab host address -> the reference's address of that host. Shared by all
  /// switches of a fabric (read-only once built).
  std::shared_ptr<const FlatMap<Ipv4, Ipv4>> reference_addresses;
};

/// The reference's address of its node `id` (settings.cc node_id_to_ip), host byte order.
constexpr Ipv4 Ns3NodeAddress(uint32_t id) {
  return 0x0b000001u + (id / 256) * 0x00010000u + (id % 256) * 0x00000100u;
}

/// MurmurHash3_x86_32 of (src, dst, ports) as the reference lays them out: three little-endian
/// 32-bit words, ports = sport | dport << 16.
uint32_t Ns3EcmpHash(Ipv4 src, Ipv4 dst, uint16_t sport, uint16_t dport, uint32_t seed);

/// The reference's destination port of a frame with IPv4 protocol `proto`, UDP destination port
/// `udp_dport` and IPv4 identification `ip_id`: the identification for RoCEv2 (4791) and
/// ConWeave control (kConweaveControlPort) frames, which carry it there, else `udp_dport`.
uint16_t Ns3ReferenceDport(uint8_t proto, uint16_t udp_dport, uint16_t ip_id);

/// The member in [0, n), n >= 1, the reference draws at the switch of `c` (kNs3Murmur3) for a
/// frame of rocefab addresses src -> dst whose (reference) ports are sport, dport.
uint32_t Ns3EcmpMember(const EcmpConfig& c, Ipv4 src, Ipv4 dst, uint16_t sport, uint16_t dport,
                       uint32_t n);

class EcmpFunction {
 public:
  virtual ~EcmpFunction() = default;
  /// Index in [0, n) of the member for frame `m` (parsed as `p`, IPv4) in a group of `n` >= 1
  /// members; `flow_hash` is the switch's EcmpHash of the frame.
  virtual uint32_t Member(const rte_mbuf* m, const ParsedFrame& p, uint32_t flow_hash,
                          uint32_t n) const = 0;
  /// The UDP source port and IPv4 identification of a packet a switch sends back for data
  /// frame `data` (parsed as `p`; ConWeave's RTT_REPLY, CLEAR, NOTIFY), which arrive holding the
  /// packet's own choice. Default: left as they are.
  virtual void StampReply(const rte_mbuf* /*data*/, const ParsedFrame& /*p*/, uint16_t* /*sport*/,
                          uint16_t* /*ip_id*/) const {}
};

class JhashEcmp final : public EcmpFunction {
 public:
  uint32_t Member(const rte_mbuf*, const ParsedFrame&, uint32_t flow_hash,
                  uint32_t n) const override {
    return EcmpPick(flow_hash, n);
  }
};

class Ns3Murmur3Ecmp final : public EcmpFunction {
 public:
  explicit Ns3Murmur3Ecmp(const EcmpConfig& c) : c_(c) {}
  uint32_t Member(const rte_mbuf* m, const ParsedFrame& p, uint32_t flow_hash,
                  uint32_t n) const override;
  /// The reference's reply goes along the flow's ACKs (conweave-routing.cc SendReply: the data's
  /// ports swapped): its sport (the data's destination port, the data's IPv4 identification) in
  /// the UDP source port, its dport (the data's UDP source port) in the IPv4 identification.
  void StampReply(const rte_mbuf* data, const ParsedFrame& p, uint16_t* sport,
                  uint16_t* ip_id) const override;

 private:
  EcmpConfig c_;
};

std::unique_ptr<EcmpFunction> MakeEcmpFunction(const EcmpConfig& c);

}  // namespace rocefab

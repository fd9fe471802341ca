#pragma once
/// @file drop_reason.h
/// Every frame a switch discards is counted under exactly one of these reasons.

#include <array>
#include <cstdint>

namespace rocefab {

enum class DropReason : uint8_t {
  kTruncatedL2,        ///< shorter than an Ethernet (+802.1Q) header
  kTruncatedL3,        ///< ARP/IPv4 header cut short or IPv4 total length beyond the frame
  kTruncatedL4,        ///< UDP/TCP/ICMP header cut short
  kBadIpHeader,        ///< IPv4 version != 4 or IHL < 5
  kBadIpChecksum,      ///< IPv4 header checksum does not verify (RFC 1071)
  kUnknownEtherType,   ///< neither IPv4, ARP, 802.1Q nor MAC control
  kMacControl,         ///< 802.3 MAC control (0x8808) not consumed by a PFC stage
  kVlanMismatch,       ///< tagged with a VLAN the port is not in
  kNotForUs,           ///< unicast to another MAC on a routed (non-VLAN) port
  kSameSegment,        ///< L2 destination learned on the ingress port (filtered, IEEE 802.1Q 8.7)
  kNoRoute,            ///< no LPM route for the destination IP
  kTtlExpired,         ///< IPv4 TTL <= 1 on a routed hop
  kArpUnresolved,      ///< next-hop host did not answer ARP, or its pending queue was full
  kUnhandledForUs,     ///< addressed to the switch but not ICMP echo / ARP
  kEgressBufferFull,   ///< egress queue over its byte limit
  kBadSourceMac,       ///< multicast/broadcast or zero source MAC
  kNoBuffer,           ///< mbuf pool empty when copying for a flood or building a reply
  kLosslessHeadroom,   ///< lossless PG with its headroom exhausted (zero when headroom is right)
  kIngressLimit,       ///< lossy PG over its ingress shared-buffer limit
  kEgressLimit,        ///< lossy queue over its egress shared-buffer limit
  kWredDrop,           ///< non-ECT frame above Kmax with WRED drop enabled
  kPfcWatchdog,        ///< dropped by the PFC watchdog's drop action on a stormed queue/PG
  kIncompleteArp,      ///< lossless frame to an ARP entry without MAC entry (the paper's fix)
  kCount
};

inline constexpr std::array<const char*, static_cast<size_t>(DropReason::kCount)> kDropReasonNames = {
    "truncated_l2",  "truncated_l3", "truncated_l4",     "bad_ip_header",
    "bad_ip_checksum", "unknown_ethertype", "mac_control", "vlan_mismatch",
    "not_for_us",    "same_segment", "no_route",         "ttl_expired",
    "arp_unresolved", "unhandled_for_us", "egress_buffer_full", "bad_source_mac",
    "no_buffer", "lossless_headroom_exhausted", "ingress_lossy_limit", "egress_lossy_limit",
    "wred_drop", "pfc_watchdog", "lossless_incomplete_arp"};

inline const char* DropReasonName(DropReason r) { return kDropReasonNames[static_cast<size_t>(r)]; }

}  // namespace rocefab

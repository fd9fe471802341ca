#pragma once
/// @file faults.h
/// The fault timeline of a scenario ("faults": [...]), each event at `at` and, where it lasts,
/// for `duration`:
///   {"kind": "nic_stall", "host": "h3", "at": "5ms", "duration": "100ms"}    receive pipeline stalls
///   {"kind": "dead_host", "host": "h3", "at": "5ms", "duration": "1s"}        neither rx nor tx; link up
///   {"kind": "link_loss", "from": "h0", "to": "tor0", "every": 256 | "rate": 0.001, "at", "duration"}
///   {"kind": "link_down", "a": "tor0", "b": "spine0", "at", "duration", "reroute_after": "1ms"}
///                                   every frame lost both ways (overlapping faults on one link: down
///                                   while any is active); with reroute_after, routing learns of this
///                                   fault's failure and recovery that long after each happens (its
///                                   own delay, not another fault's) and every switch's routes are
///                                   recomputed, as BGP with multipath would converge; without it,
///                                   no reroute
///   {"kind": "mac_flush", "switch": "tor0", "host": "h3", "at"}              drop one MAC entry
///   {"kind": "mac_aging", "switch": "tor0", "aging": "1ms", "at"}           change the ageing time
///   {"kind": "pause_injection", "switch": "tor1", "port": 2 | "host": "h3",
///    "priority": 3 | "priorities": [3, 4], "xoff": true, "quanta": 65535,
///    "rate": 10000, "count": 0, "at", "duration"}
///                                   PFC frames (802.1Qbb: one class-enable vector, a quanta per
///                                   enabled priority) arriving on a switch port, or at a host's
///                                   emulated NIC, at `rate` per second; quanta defaults to 65535
///                                   with "xoff": true and 0 (XON) with false; count > 0 stops
///                                   after that many frames
///   {"kind": "link_loss", ..., "frames": [3, 7], "frame_type": "cnp", "ip_id": 77}
///                                   lose the 3rd and 7th frame counted from the fault's start;
///                                   with frame_type (any, data, read_request, read_response, ack,
///                                   nak, cnp, pfc, arp, ip) and/or ip_id only matching frames
///                                   count and are lost ("every", "rate" and "frames" combine)
///   {"kind": "cnp_injection", "host": "h0", "qpn": 1, "rate": 100000, "count": 0, "at",
///    "duration"}                    RoCEv2 CNPs (BTH opcode 0x81, BECN) for QP `qpn` of the
///                                   host's emulated NIC: its DCQCN reaction point cuts the rate
///   {"kind": "frame_injection", "switch": "tor0", "port": 1 | "host": "h2",
///    "frame": "truncated"|"bad_ip_checksum"|"bad_icrc"|"bad_opcode"|"runt"|"random",
///    "rate": 1000, "count": 0, "at", "duration"}
///                                   malformed frames arriving at a port: each must be dropped
///                                   and counted under a named reason, nothing else disturbed
///   {"kind": "config", "switch": "all"|"tor0", "pfc_watchdog": true,
///    "drop_lossless_on_incomplete_arp": true, "at"}       turn protections on or off
/// Links are named by their two ends; when several links join the same two nodes the first is used.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/time.h"
#include "common/wire/frame_class.h"
#include "topo/topology.h"

namespace rocefab {

struct Fault {
  enum class Kind : uint8_t {
    kNicStall, kDeadHost, kLinkLoss, kLinkDown, kMacFlush, kMacAging, kPauseInjection, kConfig,
    kCnpInjection, kFrameInjection
  };
  /// frame_injection's malformed frames (each breaks one rule a receiver checks).
  enum class Garbage : uint8_t {
    kTruncated,      ///< a RoCEv2 frame cut inside its BTH
    kBadIpChecksum,  ///< IPv4 header checksum off by one
    kBadIcrc,        ///< RoCEv2 ICRC bits flipped
    kBadOpcode,      ///< BTH opcode 0x1F (reserved in RC)
    kRunt,           ///< 14 bytes: an Ethernet header (EtherType IPv4) and nothing more
    kRandom,         ///< 60..1514 random bytes (seeded), unicast to the port's peer
  };
  Kind kind = Kind::kNicStall;
  Time at = 0;
  Time duration = 0;  ///< 0 = for the rest of the run
  std::string host, sw, from, to;
  int port = 0;               ///< pause/frame_injection on a switch port; -1: at `host`
  int priority = 3;
  uint8_t priorities = 0;       ///< pause_injection: class-enable vector; 0: just `priority`
  bool xoff = true;
  int quanta = -1;  ///< pause_injection: quanta per enabled priority; -1: 65535 if xoff, else 0
  double rate = 0;        ///< link_loss probability, or injected frames per second
  uint64_t count = 0;     ///< injections: stop after this many frames (0: until the end)
  uint64_t every = 0;     ///< link_loss: every Nth frame
  std::vector<uint64_t> frames;  ///< link_loss: 1-based indices (of matching frames) to lose
  FrameFilter filter;            ///< link_loss: which frames count
  uint32_t qpn = 0;              ///< cnp_injection: destination QP
  Garbage garbage = Garbage::kTruncated;
  Time aging = 0;
  int pfc_watchdog = -1;  ///< config: -1 unchanged, 0 off, 1 on
  int drop_incomplete_arp = -1;
  Time reroute_after = -1;  ///< link_down: routing converges this long after a change; -1 never
};

/// Strict read of the "faults" array; `path` is the JSON path prefix. Throws ConfigError.
std::vector<Fault> ReadFaults(const nlohmann::json& j, const std::string& path, const Topology& t);

}  // namespace rocefab

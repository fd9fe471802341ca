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
///   {"kind": "pause_injection", "switch": "tor1", "port": 2, "priority": 3, "xoff": true,
///    "rate": 10000, "at", "duration"}                     PFC frames arriving on a switch port at a rate
///   {"kind": "config", "switch": "all"|"tor0", "pfc_watchdog": true,
///    "drop_lossless_on_incomplete_arp": true, "at"}       turn protections on or off
/// Links are named by their two ends; when several links join the same two nodes the first is used.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/time.h"
#include "topo/topology.h"

namespace rocefab {

struct Fault {
  enum class Kind : uint8_t {
    kNicStall, kDeadHost, kLinkLoss, kLinkDown, kMacFlush, kMacAging, kPauseInjection, kConfig
  };
  Kind kind = Kind::kNicStall;
  Time at = 0;
  Time duration = 0;  ///< 0 = for the rest of the run
  std::string host, sw, from, to;
  int port = 0;
  int priority = 3;
  bool xoff = true;
  double rate = 0;        ///< link_loss probability, or pause_injection frames per second
  uint64_t every = 0;     ///< link_loss: every Nth frame
  Time aging = 0;
  int pfc_watchdog = -1;  ///< config: -1 unchanged, 0 off, 1 on
  int drop_incomplete_arp = -1;
  Time reroute_after = -1;  ///< link_down: routing converges this long after a change; -1 never
};

/// Strict read of the "faults" array; `path` is the JSON path prefix. Throws ConfigError.
std::vector<Fault> ReadFaults(const nlohmann::json& j, const std::string& path, const Topology& t);

}  // namespace rocefab

#pragma once
/// @file live_telemetry.h
/// Counters of a running `rocefab live` fabric through DPDK telemetry (the EAL's
/// /var/run/dpdk/<file-prefix>/dpdk_telemetry.v2 socket; `dpdk-telemetry.py -f <run id>`):
///   /rocefab/switches              array of switch names
///   /rocefab/ports,<switch>        per port: rx_packets, tx_packets, pfc_tx_xoff, pfc_rx, paused
///                                  (as "<port>/<counter>"), plus drops_total
///   /rocefab/mbufs                 the frame pool: size, in_use (mbufs out of it: queued in
///                                  switches, held by NICs, in rings and port descriptors; read
///                                  while the poll threads run, so a snapshot)
/// Counters are read from the telemetry thread while the poll thread updates them: each value is
/// a single aligned 64-bit load, so a reply may mix counters from a few microseconds apart.

#include <vector>

struct rte_mempool;

namespace rocefab {

class SwitchNode;

/// Registers the commands (once per process) and points them at `switches` and the frame `pool`
/// (nullptr detaches: call before the switches or the pool are destroyed).
void AttachLiveTelemetry(const std::vector<SwitchNode*>* switches, rte_mempool* pool = nullptr);

}  // namespace rocefab

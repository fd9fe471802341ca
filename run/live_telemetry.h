#pragma once
/// @file live_telemetry.h
/// Counters of a running `rocefab live` fabric through DPDK telemetry (the EAL's
/// /var/run/dpdk/<file-prefix>/dpdk_telemetry.v2 socket; `dpdk-telemetry.py -f <run id>`):
///   /rocefab/switches              array of switch names
///   /rocefab/ports,<switch>        per port: rx_packets, tx_packets, pfc_tx_xoff, pfc_rx, paused
///                                  (as "<port>/<counter>"), plus drops_total
/// Counters are read from the telemetry thread while the poll thread updates them: each value is
/// a single aligned 64-bit load, so a reply may mix counters from a few microseconds apart.

#include <vector>

namespace rocefab {

class SwitchNode;

/// Registers the commands (once per process) and points them at `switches` (nullptr detaches:
/// call before the switches are destroyed).
void AttachLiveTelemetry(const std::vector<SwitchNode*>* switches);

}  // namespace rocefab

#include "run/live_telemetry.h"

#include <rte_mempool.h>
#include <rte_telemetry.h>

#include <mutex>
#include <string>

#include "switch/switch_node.h"

namespace rocefab {
namespace {

std::mutex g_mu;
const std::vector<SwitchNode*>* g_switches = nullptr;
rte_mempool* g_pool = nullptr;

// The frame pool: its size and the mbufs out of it (in queues, rings, NICs, port descriptors).
int Mbufs(const char*, const char*, rte_tel_data* d) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_pool == nullptr) return -1;
  rte_tel_data_start_dict(d);
  rte_tel_data_add_dict_u64(d, "size", g_pool->size);
  rte_tel_data_add_dict_u64(d, "in_use", rte_mempool_in_use_count(g_pool));
  return 0;
}

int ListSwitches(const char*, const char*, rte_tel_data* d) {
  std::lock_guard<std::mutex> lock(g_mu);
  rte_tel_data_start_array(d, RTE_TEL_STRING_VAL);
  if (g_switches == nullptr) return 0;
  for (const SwitchNode* s : *g_switches) rte_tel_data_add_array_string(d, s->name().c_str());
  return 0;
}

int Ports(const char*, const char* params, rte_tel_data* d) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_switches == nullptr || params == nullptr) return -1;
  const SwitchNode* sw = nullptr;
  for (const SwitchNode* s : *g_switches) {
    if (s->name() == params) sw = s;
  }
  if (sw == nullptr) return -1;
  rte_tel_data_start_dict(d);
  rte_tel_data_add_dict_u64(d, "drops_total", sw->total_drops());
  // A dict holds at most RTE_TEL_MAX_DICT_ENTRIES (256) entries: 5 per port, 50 ports.
  for (uint16_t p = 0; p < sw->num_ports() && p < 50; ++p) {
    const std::string base = sw->config().ports[p].name;
    uint64_t xoff = 0, rx = 0;
    for (uint8_t prio = 0; prio < 8; ++prio) {
      xoff += sw->pfc_tx_xoff(p, prio);
      rx += sw->rx_pause(p).rx_frames(prio);
    }
    rte_tel_data_add_dict_u64(d, (base + "/rx_packets").c_str(), sw->rx_packets(p));
    rte_tel_data_add_dict_u64(d, (base + "/tx_packets").c_str(), sw->tx_packets(p));
    rte_tel_data_add_dict_u64(d, (base + "/pfc_tx_xoff").c_str(), xoff);
    rte_tel_data_add_dict_u64(d, (base + "/pfc_rx").c_str(), rx);
    rte_tel_data_add_dict_u64(d, (base + "/tx_bytes").c_str(), sw->tx_bytes(p));
  }
  return 0;
}

}  // namespace

void AttachLiveTelemetry(const std::vector<SwitchNode*>* switches, rte_mempool* pool) {
  static std::once_flag once;
  std::call_once(once, [] {
    rte_telemetry_register_cmd("/rocefab/switches", ListSwitches, "Lists the fabric's switches.");
    rte_telemetry_register_cmd("/rocefab/ports", Ports,
                               "Per-port counters of a switch. Parameters: switch name");
    rte_telemetry_register_cmd("/rocefab/mbufs", Mbufs,
                               "The frame pool's size and mbufs in use (a snapshot).");
  });
  std::lock_guard<std::mutex> lock(g_mu);
  g_switches = switches;
  g_pool = pool;
}

}  // namespace rocefab

#pragma once
/// @file sonic.h
/// SONiC config_db.json in and out: the tables that decide a switch's lossless behaviour, mapped
/// onto a scenario's keys (`rocefab topo import-sonic`) and written from a scenario's switch
/// (`rocefab export-sonic`). Table and field names are SONiC's (sonic-utilities
/// doc/Configuration.md, SONiC doc/qos/*.md); what rocefab does not model is listed in notes,
/// never dropped silently. docs/sonic.md gives the mapping field by field.
///
/// Ports: SONiC names ports `Ethernet<N>`; the i-th entry of PORT in the numeric order of N is
/// rocefab's `<switch>/p<i>` (export writes p<i> as `Ethernet<4 i>`, the usual 4-lane numbering).
///
/// Mapping (import; export writes the inverse):
///   BUFFER_POOL|ingress_lossless_pool  size + xoff -> buffer.size; xoff ->
///   buffer.shared_headroom_pool
///                                      (per switch: buffer.switches.<name>)
///   BUFFER_PROFILE (lossless, by BUFFER_PG|port|3-4)  -> buffer.profiles.<name>:
///       xoff -> headroom, xon, xon_offset, dynamic_th | static_th,
///       size -> reserved (size - xoff with dedicated headroom, size with a shared headroom pool)
///     and buffer.ports."<switch>/p<i>" (or "<switch>/*") -> the profile's name;
///     profile "NULL" (dynamic buffer model) -> "auto" headroom from SONiC's formula
///   BUFFER_PROFILE of PG 0 / lossy queues  dynamic_th -> buffer.lossy_dynamic_th /
///                                          buffer.egress_lossy_dynamic_th
///   PORT_QOS_MAP + DSCP_TO_TC_MAP, TC_TO_PRIORITY_GROUP_MAP, TC_TO_QUEUE_MAP
///                                      -> qos.dscp_to_tc, qos.tc_to_pg, qos.tc_to_queue;
///                                         pfc_enable -> qos.lossless, pfc.enabled
///   PORT_QOS_MAP.dot1p_to_tc_map + DOT1P_TO_TC_MAP -> qos.pcp_to_tc; without a dscp_to_tc_map
///                                         the ports classify by PCP (qos.trust "pcp")
///   PFC_PRIORITY_TO_QUEUE_MAP          must map each lossless priority to its TC's queue
///   WRED_PROFILE + QUEUE.wred_profile  -> ecn (green thresholds, drop probability %, queues)
///   SCHEDULER + QUEUE.scheduler        -> scheduler.strict, scheduler.weights
///   PFC_WD (+ GLOBAL POLL_INTERVAL)    -> pfc_watchdog (times in ms, action, ports)
///   PORT.speed/mtu, CABLE_LENGTH       compared with the topology's links (the topology decides
///                                      rate and cable: they also set the propagation delay)
///   DEVICE_METADATA|localhost          hostname picks the switch; buffer_model dynamic allows
///                                      NULL profiles

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/result.h"
#include "topo/scenario.h"

namespace rocefab {

/// One config_db.json and the switches it configures.
struct SonicConfigDb {
  std::string path;   ///< for messages
  nlohmann::json db;  ///< the parsed file (an object of tables)
  std::string
      switch_name;  ///< a switch of the topology, "all", or "" = its DEVICE_METADATA hostname
};

struct SonicImport {
  nlohmann::json scenario;         ///< the base scenario with the imported keys set
  std::vector<std::string> notes;  ///< "file: TABLE|key.field: what rocefab does with it"
};

/// Applies the config_db files to `base` (a scenario's JSON; `topo` its topology). Errors name
/// the file, table, key and field and the rule: a value that is not a number of the right range,
/// a reference to a profile or map that does not exist, a hostname that is not a switch, files or
/// ports that disagree on a setting rocefab holds once for the whole fabric (QoS maps, WRED,
/// scheduler, watchdog times), a PFC_PRIORITY_TO_QUEUE_MAP rocefab cannot follow, two lossless
/// profiles on one port, an `all` file given with others. Units are config_db's: buffer sizes and
/// thresholds in bytes, PORT.speed in Mb/s, PFC_WD times in ms, drop probability in %. Switches
/// no file names keep the base's buffer entries; a fabric-wide block (ecn, pfc_watchdog) that the
/// files turn off is removed with a note.
Result<SonicImport> ImportSonic(const nlohmann::json& base, const Topology& topo,
                                const std::vector<SonicConfigDb>& dbs);

struct SonicExport {
  nlohmann::json db;               ///< config_db tables of the switch
  std::vector<std::string> notes;  ///< settings SONiC has no field for (e.g. ECN at dequeue)
};

/// The config_db tables of switch `name` of `s`, with every "auto" value resolved (the headroom
/// the formula gives each port). Errors: no such switch, a plan that cannot be built.
Result<SonicExport> ExportSonic(const Scenario& s, const std::string& name);

}  // namespace rocefab

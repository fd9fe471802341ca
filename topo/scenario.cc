#include "topo/scenario.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "common/json_reader.h"
#include "common/units.h"
#include "common/wire/roce_headers.h"
#include "topo/clos.h"

namespace rocefab {

const char* TrafficKindName(TrafficItem::Kind k) {
  switch (k) {
    case TrafficItem::Kind::kPing:
      return "ping";
    case TrafficItem::Kind::kIperf3:
      return "iperf3";
    case TrafficItem::Kind::kUdp:
      return "udp";
    case TrafficItem::Kind::kRdma:
      return "rdma";
    case TrafficItem::Kind::kWorkload:
      return "workload";
    case TrafficItem::Kind::kPingmesh:
      return "pingmesh";
    case TrafficItem::Kind::kTcpPingmesh:
      return "tcp_pingmesh";
  }
  return "?";
}

namespace {

bool HasLeafTier(const Topology& t) {
  return std::any_of(t.switches.begin(), t.switches.end(),
                     [](const TopoSwitch& sw) { return sw.role == SwitchRole::kLeaf; });
}

Topology ReadTopology(const nlohmann::json& j, const std::string& path) {
  JsonReader r(j, path);
  if (r.Has("clos")) {
    JsonReader c(r.Require("clos"), r.PathOf("clos"));
    ClosSpec s;
    s.tiers = static_cast<int>(c.Int("tiers", 2, 2, 3));
    s.spines = static_cast<int>(c.Int("spines", 2, 1, 256));
    s.tors = static_cast<int>(c.Int("tors", 2, 1, 256));
    s.leaves_per_podset = static_cast<int>(c.Int("leaves_per_podset", 2, 1, 64));
    s.podsets = static_cast<int>(c.Int("podsets", 1, 1, 64));
    s.hosts_per_tor = static_cast<int>(c.Int("hosts_per_tor", 2, 0, 253));
    s.link_rate = c.Rate("link_rate", 100 * kGbps);
    s.host_rate = c.Rate("host_rate", BitRate());
    s.cable_m = c.Length("cable", 5);
    // Per tier, each defaulting to `cable` (BuildClos: host, ToR uplink, leaf uplink).
    s.host_cable_m = c.Length("host_cable", -1, "`cable`");
    s.tor_cable_m = c.Length("tor_cable", -1, "`cable`");
    s.leaf_cable_m = c.Length("leaf_cable", -1, "`cable` (3-tier only)");
    const std::string kind = c.String("host_kind", "linux");
    if (kind == "linux") {
      s.host_kind = HostKind::kLinux;
    } else if (kind == "builtin") {
      s.host_kind = HostKind::kBuiltin;
    } else {
      ThrowConfigError(c.PathOf("host_kind"), "must be \"linux\" or \"builtin\"");
    }
    std::vector<std::string> builtin;
    if (const auto* b = c.Get("builtin_hosts")) {
      if (!b->is_array())
        ThrowConfigError(c.PathOf("builtin_hosts"), "must be an array of host names");
      for (const auto& x : *b) {
        if (!x.is_string())
          ThrowConfigError(c.PathOf("builtin_hosts"), "must be an array of host names");
        builtin.push_back(x.get<std::string>());
      }
    }
    c.Finish();
    r.Finish();
    auto t = BuildClos(s);
    if (!t.ok()) ThrowConfigError(r.PathOf("clos"), t.message());
    Topology topo = t.value();
    for (const auto& name : builtin) {
      const int i = topo.HostIndex(name);
      if (i < 0) ThrowConfigError(c.PathOf("builtin_hosts"), "no host named \"" + name + "\"");
      topo.hosts[static_cast<size_t>(i)].kind = HostKind::kBuiltin;
    }
    return topo;
  }
  auto t = Topology::FromJson(j, path);
  if (!t.ok()) throw ConfigError(t.message());
  return t.value();
}

std::vector<int> IntList(JsonReader& r, const std::string& key, int lo, int hi,
                         std::vector<int> def) {
  const auto* v = r.Get(key);
  if (!v) return def;
  if (!v->is_array()) ThrowConfigError(r.PathOf(key), "must be an array of integers");
  std::vector<int> out;
  for (size_t i = 0; i < v->size(); ++i) {
    const auto& e = (*v)[i];
    if (!e.is_number_integer() || e.get<int>() < lo || e.get<int>() > hi) {
      ThrowConfigError(ArrayPath(r.PathOf(key), i), "must be an integer in [" + std::to_string(lo) +
                                                        ", " + std::to_string(hi) + "]");
    }
    out.push_back(e.get<int>());
  }
  return out;
}

void ReadQos(JsonReader& r, SwitchDefaults* sw) {
  if (const auto* q = r.Get("qos")) {
    JsonReader w(*q, "qos");
    auto prof = QosProfile::Named(w.String("profile", "roce"));
    if (!prof.ok()) ThrowConfigError(w.PathOf("profile"), prof.message());
    sw->qos = prof.value();
    const std::string trust = w.String("trust", "dscp");
    if (trust == "dscp") {
      sw->qos.trust = QosTrust::kDscp;
    } else if (trust == "pcp") {
      sw->qos.trust = QosTrust::kPcp;
    } else {
      ThrowConfigError(w.PathOf("trust"), "must be \"dscp\" or \"pcp\"");
    }
    if (const auto* m = w.Get("dscp_to_tc")) {
      // SONiC's DSCP_TO_TC_MAP: {"26": 3, "48": 6}; DSCPs not named keep the profile's TC.
      const std::string mp = w.PathOf("dscp_to_tc");
      if (!m->is_object()) ThrowConfigError(mp, "must be an object of \"DSCP\": TC");
      for (const auto& [k, v] : m->items()) {
        int d = -1;
        const auto [ptr, ec] = std::from_chars(k.data(), k.data() + k.size(), d);
        if (ec != std::errc() || ptr != k.data() + k.size() || d < 0 || d > 63) {
          ThrowConfigError(mp + "." + k, "key must be a DSCP 0..63");
        }
        if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > 7) {
          ThrowConfigError(mp + "." + k, "must be a traffic class 0..7");
        }
        sw->qos.dscp_to_tc[static_cast<size_t>(d)] = static_cast<uint8_t>(v.get<int>());
      }
    }
    if (w.Has("lossless")) {
      sw->qos.lossless_mask = 0;
      for (int p : IntList(w, "lossless", 0, 7, {})) {
        sw->qos.lossless_mask |= static_cast<uint8_t>(1 << p);
        sw->qos.tc_to_pg[p] = static_cast<uint8_t>(p);  // each lossless priority its own PG
      }
    }
    // SONiC's TC_TO_PRIORITY_GROUP_MAP, TC_TO_QUEUE_MAP and DOT1P_TO_TC_MAP: {"3": 3}; after
    // "lossless", which gives each lossless TC its own PG. pcp_to_tc applies with trust "pcp".
    for (const char* key : {"tc_to_pg", "tc_to_queue", "pcp_to_tc"}) {
      const auto* m = w.Get(key);
      if (!m) continue;
      const std::string mp = w.PathOf(key);
      const bool pcp = std::string(key) == "pcp_to_tc";
      if (!m->is_object()) {
        ThrowConfigError(
            mp, pcp ? "must be an object of \"PCP\": TC" : "must be an object of \"TC\": index");
      }
      auto& out = std::string(key) == "tc_to_pg"      ? sw->qos.tc_to_pg
                  : std::string(key) == "tc_to_queue" ? sw->qos.tc_to_queue
                                                      : sw->qos.pcp_to_tc;
      for (const auto& [k, v] : m->items()) {
        int tc = -1;
        const auto [ptr, ec] = std::from_chars(k.data(), k.data() + k.size(), tc);
        if (ec != std::errc() || ptr != k.data() + k.size() || tc < 0 || tc > 7) {
          ThrowConfigError(mp + "." + k,
                           pcp ? "key must be a PCP 0..7" : "key must be a traffic class 0..7");
        }
        if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > 7) {
          ThrowConfigError(mp + "." + k, "must be 0..7");
        }
        out[static_cast<size_t>(tc)] = static_cast<uint8_t>(v.get<int>());
      }
    }
    w.Finish();
  }
  if (const auto* p = r.Get("pfc")) {
    JsonReader w(*p, "pfc");
    sw->pfc.enabled = w.Bool("enabled", true);
    sw->pfc.pause_quanta =
        static_cast<uint16_t>(w.Int("pause_quanta", sw->pfc.pause_quanta, 1, 0xFFFF));
    if (w.Has("pause_time")) {
      if (w.Has("pause_quanta"))
        ThrowConfigError(w.PathOf("pause_time"), "give pause_time or pause_quanta, not both");
      sw->pfc.pause_time = w.Duration("pause_time", kNs);
    } else if (w.Has("pause_quanta")) {
      sw->pfc.pause_time = 0;  // the quanta given win over a compat model's pause time
    }
    sw->pfc.xoff_every_frame = w.Bool("xoff_every_frame", sw->pfc.xoff_every_frame);
    const std::string refresh = w.String("refresh", "auto");
    if (refresh != "auto") {
      auto v = ParseDuration(refresh);
      if (!v.ok() || v.value() <= 0)
        ThrowConfigError(w.PathOf("refresh"), "must be \"auto\" or a duration > 0");
      sw->pfc.refresh = v.value();
    }
    w.Finish();
  }
  if (const auto* e = r.Get("ecn")) {
    JsonReader w(*e, "ecn");
    WredProfile wp;
    wp.enabled = w.Bool("enabled", true);
    wp.kmin = w.Bytes("kmin", wp.kmin, 0);
    wp.kmax = w.Bytes("kmax", wp.kmax, 1);
    wp.pmax = w.Double("pmax", wp.pmax, 0, 1);
    wp.drop_non_ect = w.Bool("drop_non_ect", false);
    const std::string on = w.String("mark_on", "enqueue");
    if (on != "enqueue" && on != "dequeue")
      ThrowConfigError(w.PathOf("mark_on"), "must be \"enqueue\" or \"dequeue\"");
    wp.mark_on_dequeue = on == "dequeue";
    if (wp.kmax <= wp.kmin) ThrowConfigError(w.PathOf("kmax"), "must be larger than kmin");
    std::vector<int> def;
    for (int q = 0; q < 8; ++q) {
      if (sw->qos.lossless(static_cast<uint8_t>(q))) def.push_back(q);
    }
    for (int q : IntList(w, "queues", 0, 7, def)) sw->wred[q] = wp;
    w.Finish();
  }
  if (const auto* sc = r.Get("scheduler")) {
    JsonReader w(*sc, "scheduler");
    sw->scheduler.strict_mask = 0;
    for (int q : IntList(w, "strict", 0, 7, {6, 7}))
      sw->scheduler.strict_mask |= static_cast<uint8_t>(1 << q);
    const auto weights = IntList(w, "weights", 1, 255, {1, 1, 1, 1, 1, 1, 1, 1});
    if (weights.size() != 8)
      ThrowConfigError(w.PathOf("weights"), "needs 8 weights, one per queue");
    for (int q = 0; q < 8; ++q) sw->scheduler.weights[q] = static_cast<uint16_t>(weights[q]);
    w.Finish();
  }
}

void CheckHost(const std::string& name, const Topology& topo, const std::string& path,
               bool allow_all) {
  if (allow_all && name == "all") return;
  if (name == kNextPodset) {
    ThrowConfigError(path,
                     "\"next_podset\" is for rdma items only (\"from\": \"all\" or a host, "
                     "\"to\": \"next_podset\")");
  }
  if (!allow_all && name == "all") {
    ThrowConfigError(path,
                     "must name one host (\"all\" is not allowed here; rdma takes \"from\": "
                     "\"all\" with \"to\": \"next_podset\")");
  }
  if (topo.HostIndex(name) < 0) {
    ThrowConfigError(path, "no host named \"" + name + "\"" + (allow_all ? " (or \"all\")" : ""));
  }
}

// app perftest runs the binary in both hosts' namespaces: both must be Linux hosts.
void CheckPerftestHosts(const TrafficItem& it, const Topology& topo, const JsonReader& t) {
  if (it.perftest().app != PerftestSpec::App::kPerftest) return;
  for (const auto& [key, name] : {std::pair{"from", it.from}, std::pair{"to", it.to}}) {
    const auto& h = topo.hosts[static_cast<size_t>(topo.HostIndex(name))];
    if (h.kind != HostKind::kLinux) {
      ThrowConfigError(t.PathOf(key), name +
                                          " must be a Linux namespace host: app "
                                          "perftest runs the binary in its namespace");
    }
  }
}

// Throws at `path` unless `port` names a port of the topology ("<switch>/p<N>").
void CheckSwitchPort(const std::string& path, const std::string& port, const Topology& t) {
  const auto slash = port.find("/p");
  if (slash == std::string::npos || t.SwitchIndex(port.substr(0, slash)) < 0) {
    ThrowConfigError(path, "no switch port \"" + port + "\" (form: \"<switch>/p<N>\")");
  }
  const std::string sw = port.substr(0, slash), num = port.substr(slash + 2);
  const int ports = t.PortCount(sw);
  if (num.empty() || num.size() > 4 || num.find_first_not_of("0123456789") != std::string::npos ||
      std::stoi(num) >= ports) {
    ThrowConfigError(path, "no switch port \"" + port + "\" (" + sw + " has p0..p" +
                               std::to_string(ports - 1) + ")");
  }
}

// A list of "switch/pN" port names, each checked against the topology.
std::vector<std::string> SwitchPortList(JsonReader& w, const std::string& key, const Topology& t) {
  const nlohmann::json& c = w.Require(key);
  if (!c.is_array()) ThrowConfigError(w.PathOf(key), "must be an array of \"switch/pN\"");
  std::vector<std::string> out;
  for (size_t i = 0; i < c.size(); ++i) {
    const std::string path = ArrayPath(w.PathOf(key), i);
    if (!c[i].is_string()) ThrowConfigError(path, "must be a string like \"tor0/p1\"");
    const std::string port = c[i].get<std::string>();
    CheckSwitchPort(path, port, t);
    out.push_back(port);
  }
  return out;
}

// "auto" or a size in bytes (>= 0): *is_auto, or *bytes.
void AutoBytes(JsonReader& w, const std::string& key, bool* is_auto, int64_t* bytes) {
  const bool given = w.Has(key);
  const std::string v = w.String(key, "auto");  // read even when absent: the key list has it
  if (!given) return;
  if (v == "auto") {
    *is_auto = true;
    return;
  }
  auto b = ParseBytes(v);
  if (!b.ok() || b.value() < 0)
    ThrowConfigError(w.PathOf(key), "must be \"auto\" or a size >= 0 like \"100KiB\"");
  *is_auto = false;
  *bytes = b.value();
}

// A lossless PG profile's keys ("buffer" itself or one of "buffer.profiles"), over `base`.
LosslessPgConfig ReadLosslessProfile(JsonReader& w, LosslessPgConfig base, const char* dyn_key,
                                     const char* static_key, const char* reserved_key) {
  AutoBytes(w, "headroom", &base.auto_xoff, &base.pg.xoff);
  AutoBytes(w, "xon", &base.auto_xon, &base.pg.xon);
  base.pg.xon_offset = w.Bytes("xon_offset", base.pg.xon_offset, 0);
  base.pg.reserved = w.Bytes(reserved_key, base.pg.reserved, 0);
  base.pg.dynamic_th = static_cast<int>(w.Int(dyn_key, base.pg.dynamic_th, -8, 8));
  base.pg.static_th = w.Bytes(static_key, base.pg.static_th, 0);
  return base;
}

// A lossless PG resumes (XON) once its occupancy is at most max(xon, its XOFF point -
// xon_offset) (switch/mmu.h); an xon or xon_offset at or above the buffer's size makes every pause
// end as soon as its headroom drains, or never: refused, naming `path`.
void CheckXonFits(const std::string& path, const LosslessPgConfig& p, int64_t size,
                  const std::string& size_path) {
  const auto check = [&](const char* key, int64_t v) {
    if (v >= size) {
      ThrowConfigError(path + "." + key, FormatBytes(v) + " must be smaller than the buffer (" +
                                             size_path + " " + FormatBytes(size) + ")");
    }
  };
  if (!p.auto_xon) check("xon", p.pg.xon);
  check("xon_offset", p.pg.xon_offset);
}

void ReadBuffer(JsonReader& r, SwitchDefaults* sw, const Topology& topo) {
  const auto* b = r.Get("buffer");
  if (!b) return;
  JsonReader w(*b, "buffer");
  const std::string mode = w.String("mode", "shared");
  if (mode != "shared" && mode != "plain")
    ThrowConfigError(w.PathOf("mode"), "must be \"shared\" or \"plain\"");
  BufferConfig& buf = sw->buffer;
  buf.shared = mode == "shared";
  buf.size = w.Bytes("size", buf.size, 2048);
  buf.lossless = ReadLosslessProfile(w, buf.lossless, "lossless_dynamic_th", "lossless_static_th",
                                     "lossless_reserved");
  buf.lossy_pg.dynamic_th = static_cast<int>(w.Int("lossy_dynamic_th", 0, -8, 8));
  buf.lossy_queue.dynamic_th = static_cast<int>(w.Int("egress_lossy_dynamic_th", 0, -8, 8));
  buf.shared_headroom_pool = w.Bytes("shared_headroom_pool", 0, 0);
  // Where a lossless PG over its dynamic threshold puts what still arrives (MmuConfig::
  // lossless_shared_beyond_limit); default: the compat model's.
  const std::string over =
      w.String("lossless_over_limit", buf.lossless_shared_beyond_limit ? "shared" : "headroom");
  if (over != "headroom" && over != "shared")
    ThrowConfigError(w.PathOf("lossless_over_limit"), "must be \"headroom\" or \"shared\"");
  buf.lossless_shared_beyond_limit = over == "shared";
  // Named lossless profiles (SONiC BUFFER_PROFILE) and the ports that use them (BUFFER_PG).
  if (const auto* pj = w.Get("profiles")) {
    if (!pj->is_object()) ThrowConfigError(w.PathOf("profiles"), "must be an object of profiles");
    for (const auto& [name, body] : pj->items()) {
      JsonReader pr(body, w.PathOf("profiles") + "." + name);
      pr.RecordAs(w.PathOf("profiles") + ".<name>");
      sw->buffer_profiles[name] =
          ReadLosslessProfile(pr, buf.lossless, "dynamic_th", "static_th", "reserved");
      pr.Finish();
    }
  }
  CheckXonFits("buffer", buf.lossless, buf.size, "buffer.size");
  for (const auto& [pname, prof] : sw->buffer_profiles)
    CheckXonFits("buffer.profiles." + pname, prof, buf.size, "buffer.size");
  if (const auto* pj = w.Get("ports")) {
    const std::string path = w.PathOf("ports");
    if (!pj->is_object()) ThrowConfigError(path, "must be an object of \"switch/pN\": profile");
    for (const auto& [port, prof] : pj->items()) {
      const std::string at = path + "." + port;
      if (port.ends_with("/*")) {
        if (topo.SwitchIndex(port.substr(0, port.size() - 2)) < 0)
          ThrowConfigError(at, "no switch \"" + port.substr(0, port.size() - 2) + "\"");
      } else {
        CheckSwitchPort(at, port, topo);
      }
      if (!prof.is_string() || !sw->buffer_profiles.contains(prof.get<std::string>()))
        ThrowConfigError(at, "must name one of buffer.profiles");
      sw->buffer_ports.emplace_back(port, prof.get<std::string>());
    }
  }
  if (const auto* sj = w.Get("switches")) {
    const std::string path = w.PathOf("switches");
    if (!sj->is_object()) ThrowConfigError(path, "must be an object of switch: {size, ...}");
    for (const auto& [name, body] : sj->items()) {
      if (topo.SwitchIndex(name) < 0)
        ThrowConfigError(path + "." + name, "no switch \"" + name + "\"");
      JsonReader sr(body, path + "." + name);
      sr.RecordAs(path + ".<switch>");
      SwitchBufferOverride o;
      o.size = sr.Bytes("size", buf.size, 2048);
      o.shared_headroom_pool = sr.Bytes("shared_headroom_pool", buf.shared_headroom_pool, 0);
      sr.Finish();
      CheckXonFits("buffer", buf.lossless, o.size, path + "." + name + ".size");
      for (const auto& [pname, prof] : sw->buffer_profiles)
        CheckXonFits("buffer.profiles." + pname, prof, o.size, path + "." + name + ".size");
      sw->buffer_switches[name] = o;
    }
  }
  w.Finish();
}

// An rdma item's per-QP settings (QpOptions): absent keys keep the NIC's values.
void ReadQpOptions(JsonReader& t, QpOptions* q) {
  q->dscp = static_cast<int>(t.Int("dscp", -1, 0, 63));
  q->ack_dscp = static_cast<int>(t.Int("ack_dscp", -1, 0, 63));
  q->udp_sport = static_cast<uint16_t>(t.Int("udp_sport", 0, 1, 65535));
  q->timeout_exp = static_cast<int>(t.Int("timeout_exp", -1, 1, 31));
  q->retry_cnt = static_cast<int>(t.Int("retry_cnt", -1, 0, 7));
  q->ack_req_every = static_cast<int>(t.Int("ack_req_every", -1, 0, 1 << 24));
}

// A Poisson workload's flows are generated before the run, all of them: refuses one that would
// make more than kMaxFlows (every host at the fastest link's rate x load, for `duration`, at the
// CDF's mean size), naming the figures, instead of filling the memory (a 1-byte mean at 100
// Gb/s is 3 billion flows a host a second).
void CheckPoissonFlowCount(const FlowSizeCdf& cdf, const WorkloadTraffic& g, const Topology& topo,
                           const std::string& path) {
  constexpr double kMaxFlows = 50e6;
  int64_t fastest = 0;
  for (const auto& l : topo.links) fastest = std::max(fastest, l.rate.bps());
  const double per_host_s = static_cast<double>(fastest) * g.load / (8.0 * cdf.Mean());
  const double flows = per_host_s * static_cast<double>(topo.hosts.size()) *
                       (static_cast<double>(g.duration) / kSec);
  if (flows > kMaxFlows) {
    char b[300];
    std::snprintf(b, sizeof b,
                  "would start about %.3g flows (%zu hosts x %.3g flows/s at load %.3g of %s and "
                  "a mean flow of %.4g bytes, for the duration): at most %.0f; shorten the "
                  "duration, lower the load or use a CDF of larger flows",
                  flows, topo.hosts.size(), per_host_s, g.load,
                  FormatRate(BitRate::Bps(fastest)).c_str(), cdf.Mean(), kMaxFlows);
    ThrowConfigError(path, b);
  }
}

}  // namespace

Result<Scenario> Scenario::FromJson(const nlohmann::json& j, const std::string& base_dir) {
  try {
    Scenario s;
    JsonReader r(j, "");
    s.name = r.String("name");
    s.description = r.String("description", "");
    s.seed = static_cast<uint64_t>(r.Int("seed", 1, 0, INT64_MAX));
    s.duration = r.Duration("duration", 10 * kMs, kNs);
    if (r.Has("topology") == r.Has("topology_file")) {
      ThrowConfigError("topology", "give exactly one of \"topology\" and \"topology_file\"");
    }
    if (r.Has("topology")) {
      s.topology = ReadTopology(r.Require("topology"), "topology");
    } else {
      const std::string f = r.String("topology_file");
      const std::string path = f.starts_with("/") ? f : base_dir + "/" + f;
      std::ifstream in(path);
      if (!in) ThrowConfigError("topology_file", "cannot open \"" + path + "\"");
      nlohmann::json tj;
      try {
        tj = ParseJsonStrict(in);
      } catch (const nlohmann::json::parse_error& e) {
        ThrowConfigError("topology_file", std::string("invalid JSON: ") + e.what());
      }
      // A file written by `rocefab topo` is a whole scenario; take its topology.
      if (tj.is_object() && tj.contains("topology")) tj = tj["topology"];
      s.topology = ReadTopology(tj, "topology_file");
    }
    if (const auto* sw = r.Get("switch")) {
      JsonReader w(*sw, "switch");
      s.sw.mac_aging = w.Duration("mac_aging", s.sw.mac_aging, kNs);
      s.sw.arp_aging = w.Duration("arp_aging", s.sw.arp_aging, kNs);
      w.Finish();
    }
    {
      auto m = CompatModel::Named(r.String("compat", "none"));
      if (!m.ok()) ThrowConfigError(r.PathOf("compat"), m.message());
      s.compat = m.value();
    }
    s.compat->LosslessDefaults(&s.sw.pfc, &s.sw.buffer);
    s.compat->ConweaveDefaults(&s.sw.load_balancing.conweave);
    ReadQos(r, &s.sw);
    ReadBuffer(r, &s.sw, s.topology);
    if (const auto* w = r.Get("pfc_watchdog")) {
      JsonReader wd(*w, "pfc_watchdog");
      PfcWatchdogConfig& c = s.sw.watchdog;
      c.enabled = wd.Bool("enabled", true);
      c.detection_time = wd.Duration("detection_time", c.detection_time, kUs);
      c.restoration_time = wd.Duration("restoration_time", c.restoration_time, kUs);
      c.poll_interval = wd.Duration("poll_interval", c.poll_interval, kUs);
      const std::string action = wd.String("action", "drop");
      if (action == "drop") {
        c.action = WatchdogAction::kDrop;
      } else if (action == "forward") {
        c.action = WatchdogAction::kForward;
      } else if (action == "alert") {
        c.action = WatchdogAction::kAlert;
      } else {
        ThrowConfigError(wd.PathOf("action"), "must be \"drop\", \"forward\" or \"alert\"");
      }
      const std::string mode = wd.String("mode", "sonic");
      if (mode != "sonic" && mode != "paper")
        ThrowConfigError(wd.PathOf("mode"), "must be \"sonic\" or \"paper\"");
      c.restore_after = mode == "paper";
      if (wd.Has("ports") && wd.Require("ports").is_array()) {
        s.sw.watchdog_ports = SwitchPortList(wd, "ports", s.topology);  // only these ports
      } else {
        const std::string ports = wd.String("ports", "all");
        if (ports != "all" && ports != "server") {
          ThrowConfigError(wd.PathOf("ports"),
                           "must be \"all\", \"server\" or a list of \"switch/pN\"");
        }
        c.server_ports_only = ports == "server";
      }
      c.poll_jitter = wd.Duration("poll_jitter", 0, 0);
      wd.Finish();
      if (c.poll_jitter > c.poll_interval) {
        ThrowConfigError(wd.PathOf("poll_jitter"),
                         "must be at most poll_interval (" + FormatDuration(c.poll_interval) + ")");
      }
      if (c.detection_time < c.poll_interval) {
        ThrowConfigError(wd.PathOf("detection_time"),
                         FormatDuration(c.detection_time) + " is shorter than " +
                             wd.PathOf("poll_interval") + " " + FormatDuration(c.poll_interval) +
                             "; a storm is declared only at a poll, so it must be at least the "
                             "poll interval (SONiC's pfcwd refuses it too)");
      }
    }
    if (const auto* lj = r.Get("load_balancing")) {
      JsonReader lb(*lj, "load_balancing");
      LoadBalancingConfig& c = s.sw.load_balancing;
      const std::string scheme = lb.String("scheme", "ecmp");
      if (scheme == "ecmp") {
        c.scheme = LoadBalancingConfig::Scheme::kEcmp;
      } else if (scheme == "letflow") {
        c.scheme = LoadBalancingConfig::Scheme::kLetFlow;
      } else if (scheme == "drill") {
        c.scheme = LoadBalancingConfig::Scheme::kDrill;
      } else if (scheme == "conweave") {
        c.scheme = LoadBalancingConfig::Scheme::kConweave;
        // Any Clos: the planner checks that the source route fits (fabric/plan.cc). With a leaf
        // tier, the reference's 3-tier fat-tree defaults (run.py, lossless): theta_inactive
        // 1 ms, default reorder wait 600 us, extra flush slack 64 us.
        if (HasLeafTier(s.topology)) {
          c.conweave.inactive = kMs;
          c.conweave.default_wait = 600 * kUs;
          c.conweave.extra_flush = 64 * kUs;
        }
      } else if (scheme == "conga") {
        c.scheme = LoadBalancingConfig::Scheme::kConga;
        // Any Clos: the planner checks that the paths fit the 4-bit path id (fabric/plan.cc).
        size_t tors = 0;
        for (const auto& sw : s.topology.switches) {
          if (sw.role != SwitchRole::kTor) continue;
          ++tors;
          size_t uplinks = 0;
          for (const auto& l : s.topology.links) {
            const std::string& other = l.a == sw.name ? l.b : l.b == sw.name ? l.a : std::string();
            if (!other.empty() && s.topology.SwitchIndex(other) >= 0) ++uplinks;
          }
          if (uplinks > kCongaMaxPaths) {
            ThrowConfigError(lb.PathOf("scheme"), "conga carries a 4-bit path id: " + sw.name +
                                                      " has " + std::to_string(uplinks) +
                                                      " uplinks (at most 16)");
          }
        }
        if (tors > kCongaMaxLeaves) {
          ThrowConfigError(lb.PathOf("scheme"), "conga carries an 8-bit leaf id: " +
                                                    std::to_string(tors) + " ToRs (at most 256)");
        }
      } else {
        ThrowConfigError(lb.PathOf("scheme"),
                         "must be \"ecmp\", \"letflow\", \"drill\", \"conga\" or \"conweave\"");
      }
      if (const auto* gj = lb.Get("conga")) {
        JsonReader cg(*gj, lb.PathOf("conga"));
        CongaParams& q = c.conga;
        q.flowlet_gap = cg.Duration("flowlet_gap", q.flowlet_gap, 1);
        q.dre_period = cg.Duration("dre_period", q.dre_period, kNs);
        q.dre_alpha = cg.Double("dre_alpha", q.dre_alpha, 0.001, 0.999);
        q.quant_bits = static_cast<uint32_t>(cg.Int("quant_bits", q.quant_bits, 1, 3));
        q.metric_aging = cg.Duration("metric_aging", q.metric_aging, kNs);
        q.candidates = static_cast<uint32_t>(cg.Int("candidates", q.candidates, 1, kCongaMaxPaths));
        q.flow_aging = cg.Duration("flow_aging", q.flow_aging, kUs);
        cg.Finish();
      }
      if (const auto* cj = lb.Get("conweave")) {
        JsonReader cw(*cj, lb.PathOf("conweave"));
        ConweaveParams& q = c.conweave;
        q.reply_extra = cw.Duration("reply_extra", q.reply_extra, 0);
        q.path_busy = cw.Duration("path_busy", q.path_busy, 0);
        q.inactive = cw.Duration("inactive", q.inactive, kNs);
        q.default_wait = cw.Duration("default_wait", q.default_wait, 0);
        q.extra_flush = cw.Duration("extra_flush", q.extra_flush, 0);
        q.state_aging = cw.Duration("state_aging", q.state_aging, kUs);
        q.reorder_queues_per_port = static_cast<uint32_t>(
            cw.Int("reorder_queues_per_port", q.reorder_queues_per_port, 1, 1024));
        q.charge_held_to_buffer = cw.Bool("charge_held_to_buffer", q.charge_held_to_buffer);
        if (cw.Has("base_rtt") && cw.Get("base_rtt")->is_string() &&
            cw.Get("base_rtt")->get<std::string>() == "auto") {
          cw.String("base_rtt");
        } else if (cw.Has("base_rtt")) {
          c.conweave_base_rtt = cw.Duration("base_rtt", kNs);
        }
        cw.Finish();
      }
      c.flowlet_gap = lb.Duration("flowlet_gap", c.flowlet_gap, 1);
      c.flowlet_aging = lb.Duration("flowlet_aging", c.flowlet_aging, 1);
      c.drill_samples = static_cast<uint32_t>(lb.Int("drill_samples", c.drill_samples, 1, 8));
      lb.Finish();
    }
    s.sw.drop_incomplete_arp = r.Bool("drop_lossless_on_incomplete_arp", false);
    s.sw.vlan_on_uplinks = r.Bool("vlan_on_uplinks", false);
    const std::string neighbors = r.String("neighbors", "learned");
    if (neighbors != "learned" && neighbors != "static") {
      ThrowConfigError(r.PathOf("neighbors"), "must be \"learned\" or \"static\"");
    }
    s.sw.static_neighbors = neighbors == "static";
    s.detect_deadlocks = r.Bool("detect_deadlocks", true);
    if (const auto* fj = r.Get("faults")) s.faults = ReadFaults(*fj, "faults", s.topology);
    for (size_t i = 0; i < s.faults.size(); ++i) {
      const auto scheme = s.sw.load_balancing.scheme;
      if (s.faults[i].reroute_after >= 0 && (scheme == LoadBalancingConfig::Scheme::kConweave ||
                                             scheme == LoadBalancingConfig::Scheme::kConga)) {
        ThrowConfigError("faults[" + std::to_string(i) + "].reroute_after",
                         "rerouting is not supported with load_balancing conweave or conga (their "
                         "per-path state follows the original routes)");
      }
    }
    if (const auto* n = r.Get("nic")) {
      JsonReader w(*n, "nic");
      s.nic.mtu = static_cast<uint32_t>(w.Int("mtu", 1024, 256, 4096));
      const std::string rec = w.String("recovery", "go_back_n");
      if (rec == "go_back_n") {
        s.nic.recovery = LossRecovery::kGoBackN;
      } else if (rec == "go_back_0") {
        s.nic.recovery = LossRecovery::kGoBack0;
      } else if (rec == "selective_repeat") {
        s.nic.recovery = LossRecovery::kSelectiveRepeat;
      } else {
        ThrowConfigError(w.PathOf("recovery"), "must be go_back_0, go_back_n or selective_repeat");
      }
      s.nic.ack_every = static_cast<int>(w.Int("ack_every", 1, 1, 1024));
      s.nic.data_dscp = static_cast<uint8_t>(w.Int("data_dscp", 26, 0, 63));
      s.nic.ack_dscp = static_cast<int>(w.Int("ack_dscp", -1, -1, 63));
      s.nic.timeout_exp = static_cast<int>(w.Int("timeout_exp", 14, 1, 31));
      s.nic.retry_cnt = static_cast<int>(w.Int("retry_cnt", 7, 0, 7));
      s.nic.max_inflight_bytes = w.Bytes("window", 0, 0);
      if (const auto* d = w.Get("dcqcn")) {
        JsonReader dc(*d, "nic.dcqcn");
        s.nic.dcqcn = dc.Bool("enabled", true);
        s.dcqcn_profile = dc.String("profile", "nic");
        if (!DcqcnConfig::Profile(s.dcqcn_profile, 100 * kGbps).ok()) {
          ThrowConfigError(dc.PathOf("profile"), "must be \"paper\", \"nic\" or \"conweave\"");
        }
        for (const char* k : {"cnp_interval", "increase_interval"}) {
          if (dc.Has(k)) s.dcqcn_overrides[k] = dc.Duration(k, kNs);
        }
        for (const char* k : {"min_rate", "rate_ai", "rate_hai"}) {
          if (dc.Has(k)) s.dcqcn_overrides[k] = dc.Rate(k).bps();
        }
        dc.Finish();
      }
      if (const auto* x = w.Get("rx")) {
        JsonReader rx(*x, "nic.rx");
        s.nic.rx_per_packet = rx.Duration("per_packet", 0, 0);
        s.nic.rx_buffer = rx.Bytes("buffer", s.nic.rx_buffer, 4096);
        s.nic.rx_xoff = rx.Bytes("xoff", 0, 0);
        s.nic.rx_xon = rx.Bytes("xon", 0, 0);
        if (s.nic.rx_xoff > 0 &&
            (s.nic.rx_xon >= s.nic.rx_xoff || s.nic.rx_xoff >= s.nic.rx_buffer)) {
          ThrowConfigError(rx.PathOf("xoff"), "need xon < xoff < buffer");
        }
        s.nic.mtt_entries = static_cast<int>(rx.Int("mtt_entries", 0, 0, 1 << 24));
        s.nic.page_size = rx.Bytes("page_size", 4096, 512);
        s.nic.mtt_miss_penalty = rx.Duration("mtt_miss_penalty", kUs, 0);
        s.nic.watchdog = rx.Duration("watchdog", 100 * kMs, kUs);
        s.nic.watchdog_enabled = rx.Bool("watchdog_enabled", true);
        rx.Finish();
      }
      w.Finish();
    }
    if (const auto* o = r.Get("output")) {
      JsonReader w(*o, "output");
      if (w.Has("capture")) s.output.capture = SwitchPortList(w, "capture", s.topology);
      const std::string format = w.String("capture_format", "pcapng");
      if (format == "pcapng") {
        s.output.capture_format = CaptureFormat::kPcapng;
      } else if (format == "pcap") {
        s.output.capture_format = CaptureFormat::kPcap;
      } else {
        ThrowConfigError(w.PathOf("capture_format"), "must be \"pcapng\" or \"pcap\"");
      }
      s.output.sample_interval = w.Duration("sample_interval", 0, 0);
      if (s.output.sample_interval != 0 && s.output.sample_interval < 100 * kNs) {
        ThrowConfigError(w.PathOf("sample_interval"), "must be 0 (off) or at least 100ns");
      }
      if (s.output.sample_interval != 0 && s.duration / s.output.sample_interval > 10'000'000) {
        ThrowConfigError(
            w.PathOf("sample_interval"),
            "gives more than 10 million samples over the duration; use a longer interval");
      }
      if (const auto* dt = w.Get("dcqcn_trace")) {
        if (!dt->is_array())
          ThrowConfigError(w.PathOf("dcqcn_trace"), "must be an array of host names");
        for (size_t k = 0; k < dt->size(); ++k) {
          const std::string path = ArrayPath(w.PathOf("dcqcn_trace"), k);
          if (!(*dt)[k].is_string()) ThrowConfigError(path, "must be a host name");
          CheckHost((*dt)[k].get<std::string>(), s.topology, path, false);
          s.output.dcqcn_trace.push_back((*dt)[k].get<std::string>());
        }
        if (!s.output.dcqcn_trace.empty() && s.output.sample_interval == 0) {
          ThrowConfigError(w.PathOf("dcqcn_trace"),
                           "needs output.sample_interval > 0 (the trace's period)");
        }
      }
      w.Finish();
    }
    if (const auto* lv = r.Get("live")) {
      JsonReader w(*lv, "live");
      s.live.port_driver = w.String("port_driver", s.live.port_driver);
      if (s.live.port_driver != "af_packet" && s.live.port_driver != "af_xdp") {
        ThrowConfigError(w.PathOf("port_driver"), "must be \"af_packet\" or \"af_xdp\"");
      }
      s.live.timeout = w.Duration("timeout", s.live.timeout, kSec);
      s.live.busy_poll = w.Duration("busy_poll", s.live.busy_poll, 0);
      s.live.max_sleep = w.Duration("max_sleep", s.live.max_sleep, kUs);
      s.live.timing_tolerance = w.Duration("timing_tolerance", s.live.timing_tolerance, kNs);
      s.live.max_late_fraction = w.Double("max_late_fraction", s.live.max_late_fraction, 0.0, 1.0);
      if (w.Has("lcores") && w.Require("lcores").is_string()) {
        if (w.String("lcores") != "auto") {
          ThrowConfigError(w.PathOf("lcores"), "must be 1..64 or \"auto\"");
        }
        s.live.lcores = 0;
      } else {
        s.live.lcores = static_cast<int>(w.Int("lcores", s.live.lcores, 1, 64));
      }
      s.live.mbufs = static_cast<uint32_t>(w.Int("mbufs", s.live.mbufs, 1023, 4194303));
      w.Finish();
    }
    if (const auto* sv = r.Get("sim")) {
      JsonReader w(*sv, "sim");
      s.sim.mbufs = static_cast<uint32_t>(w.Int("mbufs", 0, 0, 4194303));
      if (s.sim.mbufs > 0 && s.sim.mbufs < 1023) {
        ThrowConfigError(w.PathOf("mbufs"),
                         "must be 0 (a cap by the memory available) or "
                         "1023..4194303, got " +
                             std::to_string(s.sim.mbufs));
      }
      w.Finish();
    }
    if (const auto* tr = r.Get("traffic")) {
      if (!tr->is_array()) ThrowConfigError("traffic", "must be an array");
      for (size_t i = 0; i < tr->size(); ++i) {
        const std::string p = ArrayPath("traffic", i);
        JsonReader t((*tr)[i], p);
        TrafficItem it;
        it.index = static_cast<int>(i);
        const std::string kind = t.String("kind");
        it.from = t.String("from", "all");
        it.to = t.String("to", "all");
        it.start = t.Duration("start", 0, 0);
        if (kind == "ping") {
          PingTraffic& g = it.spec.emplace<PingTraffic>();
          g.count = static_cast<int>(t.Int("count", 10, 1, 1000000));
          g.interval = t.Duration("interval", kMs, kUs);
          g.size = static_cast<int>(t.Int("size", 56, 8, 1472));
          CheckHost(it.from, s.topology, t.PathOf("from"), true);
          CheckHost(it.to, s.topology, t.PathOf("to"), true);
          if (it.from == it.to && s.topology.HostIndex(it.from) >= 0)
            ThrowConfigError(p,
                             "ping needs two different hosts (a host's pings to itself never "
                             "reach the fabric)");
        } else if (kind == "iperf3") {
          Iperf3Traffic& g = it.spec.emplace<Iperf3Traffic>();
          g.streams = static_cast<int>(t.Int("streams", 1, 1, 128));
          g.duration = t.Duration("duration", 3 * kSec, kMs);
          CheckHost(it.from, s.topology, t.PathOf("from"), false);
          CheckHost(it.to, s.topology, t.PathOf("to"), false);
          if (it.from == it.to) ThrowConfigError(p, "iperf3 needs two different hosts");
        } else if (kind == "udp") {
          UdpTraffic& g = it.spec.emplace<UdpTraffic>();
          g.rate = t.Rate("rate");
          g.size = static_cast<int>(t.Int("size", 1000, 24, 1472));
          g.count = static_cast<int>(t.Int("count", -1, -1, INT32_MAX));
          g.duration = t.Duration("duration", 0, 0);
          g.dscp = static_cast<int>(t.Int("dscp", 0, 0, 63));
          g.ecn = t.Bool("ecn", false);
          if (g.count == -1 && g.duration == 0) {
            ThrowConfigError(p, "udp needs \"count\" or \"duration\"");
          }
          CheckHost(it.from, s.topology, t.PathOf("from"), true);
          CheckHost(it.to, s.topology, t.PathOf("to"), true);
          if (it.from == it.to && s.topology.HostIndex(it.from) >= 0)
            ThrowConfigError(p,
                             "udp needs two different hosts (a host's datagrams to itself "
                             "never reach the fabric)");
        } else if (kind == "rdma") {
          PerftestSpec& pt = it.spec.emplace<PerftestSpec>();
          const std::string test = t.String("test", "write_bw");
          using T = PerftestSpec::Test;
          const std::map<std::string, T> tests = {{"write_bw", T::kWriteBw},
                                                  {"read_bw", T::kReadBw},
                                                  {"send_bw", T::kSendBw},
                                                  {"write_lat", T::kWriteLat},
                                                  {"send_lat", T::kSendLat}};
          if (!tests.count(test)) {
            ThrowConfigError(t.PathOf("test"),
                             "must be write_bw, read_bw, send_bw, write_lat or send_lat");
          }
          pt.test = tests.at(test);
          pt.size = static_cast<uint64_t>(t.Int("size", 65536, 1, 1 << 30));
          pt.iterations = static_cast<int>(t.Int("iterations", 1000, 1, 100'000'000));
          pt.qps = static_cast<int>(t.Int("qps", 1, 1, 4096));
          pt.tx_depth = static_cast<int>(t.Int("tx_depth", 128, 1, 8192));
          pt.start = it.start;
          pt.end = s.duration;
          pt.report_interval = t.Duration("report_interval", 0, 0);
          if (pt.report_interval > 0 && pt.report_interval < kUs) {
            ThrowConfigError(t.PathOf("report_interval"), "must be 0 (off) or at least 1us");
          }
          if (pt.report_interval > 0 && (pt.test == T::kWriteLat || pt.test == T::kSendLat)) {
            ThrowConfigError(t.PathOf("report_interval"), "only for bandwidth tests (*_bw)");
          }
          const std::string app = t.String("app", "builtin");
          if (app != "builtin" && app != "perftest") {
            ThrowConfigError(t.PathOf("app"),
                             "must be builtin (rocefab's perftest-style app) or perftest (Debian's "
                             "perftest binary on librocefab-verbs.so, Linux hosts)");
          }
          pt.app = app == "perftest" ? PerftestSpec::App::kPerftest : PerftestSpec::App::kBuiltin;
          if (pt.app == PerftestSpec::App::kPerftest) {
            for (const char* k :
                 {"report_interval", "ack_dscp", "udp_sport", "retry_cnt", "ack_req_every"}) {
              if (t.Has(k)) {
                ThrowConfigError(t.PathOf(k),
                                 "is not settable on perftest's command line (app "
                                 "perftest takes size, iterations, qps, tx_depth, "
                                 "dscp and timeout_exp)");
              }
            }
          }
          ReadQpOptions(t, &pt.qp);
          if (it.to == kNextPodset) {  // one item per source host (NextPodsetPairs)
            CheckHost(it.from, s.topology, t.PathOf("from"), true);
            t.Finish();
            for (auto [a, b] : NextPodsetPairs(s.topology, it.from, t.PathOf("to"))) {
              TrafficItem one = it;
              one.from = s.topology.hosts[static_cast<size_t>(a)].name;
              one.to = s.topology.hosts[static_cast<size_t>(b)].name;
              CheckPerftestHosts(one, s.topology, t);
              s.traffic.push_back(one);
            }
            continue;
          }
          CheckHost(it.from, s.topology, t.PathOf("from"), false);
          CheckHost(it.to, s.topology, t.PathOf("to"), false);
          if (it.from == it.to) ThrowConfigError(p, "rdma needs two different hosts");
          CheckPerftestHosts(it, s.topology, t);
        } else if (kind == "workload") {
          WorkloadTraffic& g = it.spec.emplace<WorkloadTraffic>();
          g.pattern = t.String("pattern", "poisson");
          if (g.pattern == "poisson") {
            const std::string cdf = t.String("cdf");
            std::vector<std::string> tried;
            // A path (absolute, or relative to the scenario file) or a name of configs/workloads.
            const bool is_path = cdf.find('/') != std::string::npos;
            const std::string file = cdf.ends_with(".txt") ? cdf : cdf + ".txt";
            std::vector<std::string> candidates;
            if (cdf.starts_with("/")) {
              candidates = {cdf};
            } else if (is_path) {
              candidates = {base_dir + "/" + cdf};
            } else {
              candidates = {base_dir + "/../workloads/" + file, "configs/workloads/" + file,
                            std::string(ROCEFAB_SOURCE_DIR) + "/configs/workloads/" + file};
            }
            for (const std::string& c : candidates) {
              if (c.empty()) continue;
              tried.push_back(c);
              if (std::ifstream(c).good()) {
                g.cdf_path = c;
                break;
              }
            }
            if (g.cdf_path.empty()) {
              std::string list;
              for (const auto& x : tried) list += (list.empty() ? "" : ", ") + x;
              ThrowConfigError(t.PathOf("cdf"),
                               "no flow-size CDF \"" + cdf + "\" (tried " + list + ")");
            }
            auto loaded = FlowSizeCdf::Load(g.cdf_path);
            if (!loaded.ok()) ThrowConfigError(t.PathOf("cdf"), loaded.message());
            g.load = t.Double("load", 0.5, 0.001, 1.0);
            g.measure_from = t.Duration("measure_from", 0, 0);
            g.duration = t.Duration("duration", kMs, kNs);
            CheckPoissonFlowCount(loaded.value(), g, s.topology, t.PathOf("duration"));
          } else if (g.pattern == "incast") {
            g.flow_size = static_cast<uint64_t>(t.Int("size", 500000, 1, 1LL << 40));
            g.duration = 0;
          } else if (g.pattern == "trace") {
            const std::string f = t.String("file");
            g.trace_path = f.starts_with("/") ? f : base_dir + "/" + f;
            if (!std::ifstream(g.trace_path).good()) {
              ThrowConfigError(t.PathOf("file"), "cannot open \"" + g.trace_path + "\"");
            }
            g.time_base = t.Duration("time_base", 0, 0);
            g.measure_from = t.Duration("measure_from", 0, 0);
            g.duration = t.Duration("until", 0, 0);  // keep flows starting before this (0 = all)
          } else {
            ThrowConfigError(t.PathOf("pattern"), "must be \"poisson\", \"incast\" or \"trace\"");
          }
          CheckHost(it.from, s.topology, t.PathOf("from"), true);
          CheckHost(it.to, s.topology, t.PathOf("to"), true);
        } else if (kind == "pingmesh") {
          PingmeshSpec& g = it.spec.emplace<PingmeshSpec>();
          g.interval = t.Duration("interval", 100 * kUs, kUs);
          g.count = static_cast<int>(t.Int("count", 100, 1, 10'000'000));
          g.size = static_cast<uint64_t>(t.Int("size", 512, 1, 1 << 20));
          g.timeout = t.Duration("timeout", 10 * kMs, kUs);
          g.start = it.start;
        } else if (kind == "tcp_pingmesh") {
          TcpPingmeshTraffic& g = it.spec.emplace<TcpPingmeshTraffic>();
          g.interval = t.Duration("interval", kMs, kUs);
          g.count = static_cast<int>(t.Int("count", 100, 1, 1'000'000));
          g.size = static_cast<int>(t.Int("size", 512, 1, 65536));
        } else {
          ThrowConfigError(t.PathOf("kind"),
                           "must be \"ping\", \"iperf3\", \"udp\", \"rdma\", "
                           "\"workload\", \"pingmesh\" or \"tcp_pingmesh\", got \"" +
                               kind + "\"");
        }
        t.Finish();
        s.traffic.push_back(it);
      }
    }
    r.Finish();
    return s;
  } catch (const ConfigError& e) {
    return Result<Scenario>::Error(e.what());
  }
}

Status ApplyOverrides(nlohmann::json* j, const std::vector<std::string>& sets) {
  for (const std::string& set : sets) {
    const auto eq = set.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status::Error("--set " + set +
                           ": expected KEY=VALUE (e.g. topology.clos.link_rate=1Gbps)");
    }
    const std::string key = set.substr(0, eq), text = set.substr(eq + 1);
    nlohmann::json value;
    try {
      value = nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error&) {
      value = text;  // not JSON: a string such as 1Gbps or 100ms
    }
    nlohmann::json* at = j;
    size_t start = 0;
    for (;;) {
      const auto dot = key.find('.', start);
      const std::string part = key.substr(start, dot == std::string::npos ? dot : dot - start);
      if (part.empty()) return Status::Error("--set " + set + ": empty element in '" + key + "'");
      if (at->is_array()) {
        size_t idx = 0;
        const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), idx);
        if (ec != std::errc() || end != part.data() + part.size()) {
          return Status::Error("--set " + set + ": '" + part + "' must be an index into an array");
        }
        if (idx >= at->size()) {
          return Status::Error("--set " + set + ": index " + part + " past the end (" +
                               std::to_string(at->size()) + " item(s))");
        }
        at = &(*at)[idx];
      } else if (at->is_object() || at->is_null()) {
        at = &(*at)[part];
      } else {
        return Status::Error("--set " + set + ": '" + key.substr(0, start > 0 ? start - 1 : 0) +
                             "' is a " + at->type_name() + ", not an object or array");
      }
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    *at = value;
  }
  return Status();
}

Result<Scenario> Scenario::Load(const std::string& path, const std::vector<std::string>& sets) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return Result<Scenario>::Error(path + ": is a directory, not a scenario file");
  std::ifstream in(path);
  if (!in) return Result<Scenario>::Error(path + ": cannot open file");
  nlohmann::json j;
  try {
    j = ParseJsonStrict(in);
  } catch (const nlohmann::json::parse_error& e) {
    return Result<Scenario>::Error(path + ": invalid JSON: " + e.what());
  } catch (const ConfigError& e) {
    return Result<Scenario>::Error(path + ": " + e.what());
  }
  Status st = ApplyOverrides(&j, sets);
  if (!st.ok()) return st;
  const auto slash = path.find_last_of('/');
  auto s = FromJson(j, slash == std::string::npos ? "." : path.substr(0, slash));
  if (!s.ok()) return Result<Scenario>::Error(path + ": " + s.message());
  return s;
}

std::vector<std::pair<int, int>> ExpandPairs(const TrafficItem& t, const Topology& topo) {
  std::vector<int> from, to;
  const int n = static_cast<int>(topo.hosts.size());
  for (int i = 0; i < n; ++i) {
    if (t.from == "all" || topo.hosts[i].name == t.from) from.push_back(i);
    if (t.to == "all" || topo.hosts[i].name == t.to) to.push_back(i);
  }
  std::vector<std::pair<int, int>> pairs;
  for (int a : from) {
    for (int b : to) {
      if (a != b) pairs.emplace_back(a, b);
    }
  }
  return pairs;
}

int64_t LargestSimFrame(const Scenario& s) {
  constexpr int64_t kEthernetMax = 1514;  // 1500-byte IPv4 packet + Ethernet header
  int64_t largest = static_cast<int64_t>(s.nic.mtu) + kRoceMaxOverhead + 3;
  for (const TrafficItem& t : s.traffic) {
    switch (t.kind()) {
      case TrafficItem::Kind::kRdma:
      case TrafficItem::Kind::kWorkload:
      case TrafficItem::Kind::kPingmesh:
        break;  // RoCEv2 at the path MTU
      case TrafficItem::Kind::kPing:
      case TrafficItem::Kind::kIperf3:
      case TrafficItem::Kind::kUdp:
      case TrafficItem::Kind::kTcpPingmesh:
        largest = std::max(largest, kEthernetMax);
        break;
    }
  }
  for (const Fault& f : s.faults) {
    if (f.kind == Fault::Kind::kFrameInjection) largest = std::max(largest, kEthernetMax);
  }
  return largest;
}

std::string TrafficPath(const TrafficItem& item, size_t i) {
  return "traffic[" + std::to_string(item.index >= 0 ? static_cast<size_t>(item.index) : i) + "]";
}

std::vector<std::pair<int, int>> NextPodsetPairs(const Topology& topo, const std::string& from,
                                                 const std::string& path) {
  // Hosts by podset, in topology order; by ToR where there is one podset.
  std::map<int, std::vector<int>> by_podset;
  std::map<std::string, std::vector<int>> by_tor;
  std::vector<std::string> tor_order;
  for (size_t h = 0; h < topo.hosts.size(); ++h) {
    const std::string& tor = topo.hosts[h].tor;
    by_podset[topo.switches[static_cast<size_t>(topo.SwitchIndex(tor))].podset].push_back(
        static_cast<int>(h));
    if (!by_tor.count(tor)) tor_order.push_back(tor);
    by_tor[tor].push_back(static_cast<int>(h));
  }
  std::vector<std::vector<int>> groups;
  if (by_podset.size() > 1) {
    for (auto& [p, hs] : by_podset) groups.push_back(hs);
  } else {
    for (const auto& t : tor_order) groups.push_back(by_tor[t]);
  }
  if (groups.size() < 2) {
    ThrowConfigError(path, "next_podset needs at least two podsets (or ToRs) with hosts");
  }
  for (const auto& g : groups) {
    if (g.size() != groups[0].size()) {
      const auto where = [&](const std::vector<int>& hs) {
        const std::string& tor = topo.hosts[static_cast<size_t>(hs[0])].tor;
        return by_podset.size() > 1
                   ? "podset " +
                         std::to_string(
                             topo.switches[static_cast<size_t>(topo.SwitchIndex(tor))].podset)
                   : tor;
      };
      ThrowConfigError(path, "next_podset needs the same number of hosts in every podset (ToR): " +
                                 where(groups[0]) + " has " + std::to_string(groups[0].size()) +
                                 ", " + where(g) + " has " + std::to_string(g.size()));
    }
  }
  std::vector<std::pair<int, int>> pairs;
  for (size_t g = 0; g < groups.size(); ++g) {
    for (size_t k = 0; k < groups[g].size(); ++k) {
      const int a = groups[g][k], b = groups[(g + 1) % groups.size()][k];
      if (from == "all" || topo.hosts[static_cast<size_t>(a)].name == from)
        pairs.emplace_back(a, b);
    }
  }
  return pairs;
}

}  // namespace rocefab
